/*
 * `devtrace stats`: summary tables in the manner of `nsys stats`, from one
 * streaming pass. The median needs every duration of a group, so each group
 * keeps its durations (memory grows with the events of the reported
 * categories only); everything else is keyed by distinct names and ids.
 */
#include "base/vec.h"
#include "reader/dt_reader.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { REP_KERNELS, REP_MEMCPY, REP_MEMSET, REP_API, REP_RANGES, REP_COLLECTIVES, REP_MEMORY, REP_COUNT };

static const char *const rep_names[REP_COUNT] = {"kernels", "memcpy", "memset", "api", "ranges", "collectives",
                                                 "memory"};
static const char *const rep_titles[REP_COUNT] = {
    "Device kernels, by name",
    "Memory copies, by kind",
    "Memory sets, by kind",
    "Runtime and driver API calls, by name",
    "User ranges, by name (Device Time: device activity attributed to the range or ranges nested in it)",
    "Collective communication on the devices, by name",
    "Memory allocated and freed, by device (Peak: the most allocated at once)",
};

/* One device's memory, from torch's [memory] instants. */
typedef struct st_memory {
    int64_t type, device;          /* "Device Type", "Device Id" */
    uint64_t allocations, frees, allocated, freed;
    int64_t total, peak;           /* "Total Allocated" as written (else summed) */
} st_memory;
#define ST_MEMORY_MAX 256

typedef struct st_group {
    int64_t *durs;
    size_t n, cap;
    int64_t total;
    uint64_t bytes;
    int64_t device_ns;
    uint64_t stamp;
    bool sorted;
} st_group;

typedef struct st_report {
    dt_strtab names;
    st_group *groups;
    size_t cap;
} st_report;

typedef struct st_range {
    uint32_t group;
    bool has_parent;
    uint64_t parent;
    uint64_t stamp;
} st_range;

typedef struct st {
    unsigned reports; /* bit per REP_* */
    st_report rep[REP_COUNT];
    dt_strtab range_ids;
    st_range *ranges;
    size_t range_cap;
    dt_u64map ext_sum; /* device ns per External id */
    st_memory memory[ST_MEMORY_MAX];
    size_t memory_n;
    bool oom;
} st;

static void memory_event(st *s, const dt_rd_event *e)
{
    int64_t type = e->has & DT_RD_HAS_MEM_TYPE ? e->mem_type : 0;
    int64_t device = e->has & DT_RD_HAS_MEM_DEVICE ? e->mem_device : -1;
    st_memory *m = NULL;
    for (size_t i = 0; i < s->memory_n && !m; i++)
        if (s->memory[i].type == type && s->memory[i].device == device) m = &s->memory[i];
    if (!m) {
        if (s->memory_n == ST_MEMORY_MAX) return; /* more devices than any machine has */
        m = &s->memory[s->memory_n++];
        *m = (st_memory){.type = type, .device = device};
    }
    int64_t b = e->mem_bytes;
    if (b >= 0) {
        m->allocations++;
        m->allocated += (uint64_t)b;
    } else {
        m->frees++;
        m->freed += b == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-b;
    }
    m->total = e->has & DT_RD_HAS_MEM_TOTAL ? e->mem_total : dt_rd_add_sat(m->total, b);
    if (m->total > m->peak) m->peak = m->total;
}

static int64_t group_id(st_report *r, const char *name, size_t len)
{
    int64_t id = dt_strtab_intern(&r->names, name, len, NULL);
    if (id < 0 || dt_vec_reserve_zeroed((void **)&r->groups, &r->cap, (size_t)id + 1, sizeof *r->groups) != 0)
        return -1;
    return id;
}

static int add_duration(st_report *r, int64_t g, int64_t dur)
{
    st_group *gr = &r->groups[g];
    if (dt_vec_reserve_zeroed((void **)&gr->durs, &gr->cap, gr->n + 1, sizeof *gr->durs) != 0)
        return -1;
    gr->durs[gr->n++] = dur;
    gr->total = dt_rd_add_sat(gr->total, dur);
    return 0;
}

static int visit(void *user, const dt_rd_event *e)
{
    st *s = user;
    if (e->ph[0] == 'i' && !e->ph[1] && e->name_len == 8 && memcmp(e->name, "[memory]", 8) == 0 &&
        (e->has & DT_RD_HAS_MEM_BYTES)) {
        if (s->reports & (1u << REP_MEMORY)) memory_event(s, e);
        return 0;
    }
    if (strcmp(e->ph, "X") != 0 || (e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) != (DT_RD_HAS_TS | DT_RD_HAS_DUR))
        return 0;
    int rep = -1;
    bool device = false;
    switch (e->cat_kind) {
    /* collectives run as kernels, told apart by their args */
    case DT_RD_CAT_KERNEL: rep = e->has & DT_RD_HAS_COLLECTIVE ? REP_COLLECTIVES : REP_KERNELS; device = true; break;
    case DT_RD_CAT_MEMCPY: rep = REP_MEMCPY; device = true; break;
    case DT_RD_CAT_MEMSET: rep = REP_MEMSET; device = true; break;
    case DT_RD_CAT_RUNTIME:
    case DT_RD_CAT_DRIVER: rep = REP_API; break;
    case DT_RD_CAT_USER_ANNOTATION: rep = REP_RANGES; break;
    default: break;
    }
    if (rep < 0)
        return 0;
    if (device && (s->reports & (1u << REP_RANGES)) && (e->has & DT_RD_HAS_EXTERNAL_ID)) {
        uint64_t *sum = dt_u64map_slot(&s->ext_sum, e->external_id, NULL);
        if (!sum)
            goto oom;
        *sum = (uint64_t)dt_rd_add_sat((int64_t)*sum, e->dur_ns);
    }
    if (!(s->reports & (1u << rep)))
        return 0;
    st_report *r = &s->rep[rep];
    int64_t g = group_id(r, e->name, e->name_len);
    if (g < 0 || add_duration(r, g, e->dur_ns) != 0)
        goto oom;
    if (e->has & DT_RD_HAS_BYTES)
        r->groups[g].bytes += e->bytes;
    if (rep == REP_RANGES && (e->has & DT_RD_HAS_EXTERNAL_ID)) {
        char key[32];
        int n = snprintf(key, sizeof key, "%" PRIu64, e->external_id);
        bool added;
        int64_t id = dt_strtab_intern(&s->range_ids, key, (size_t)n, &added);
        if (id < 0 || dt_vec_reserve_zeroed((void **)&s->ranges, &s->range_cap, (size_t)id + 1, sizeof *s->ranges) != 0)
            goto oom;
        if (added) {
            s->ranges[id].group = (uint32_t)g;
            s->ranges[id].has_parent = (e->has & DT_RD_HAS_PARENT) != 0;
            s->ranges[id].parent = e->parent;
        }
    }
    return 0;
oom:
    s->oom = true;
    return 1;
}

/* The range an External id or range parent belongs to: itself when it is a
   range; else, through devtrace.externalParents, the range the operation
   was pushed in. -1: none. */
static int64_t range_of(const st *s, const dt_strtab *parents, const int64_t *parent_range,
                        const char *key)
{
    int64_t id = dt_strtab_find(&s->range_ids, key, strlen(key));
    if (id >= 0 || !parents)
        return id;
    int64_t p = dt_strtab_find(parents, key, strlen(key));
    if (p < 0)
        return -1;
    char rkey[32];
    int n = snprintf(rkey, sizeof rkey, "%" PRId64, parent_range[p]);
    return dt_strtab_find(&s->range_ids, rkey, (size_t)n);
}

/* Device time of each range group: every External id's device time goes to
   its range and each enclosing range, once per group even when a name
   repeats along the chain. Returns -1 when out of memory. */
static int attribute_ranges(st *s, const dt_rd_summary *sum)
{
    st_report *r = &s->rep[REP_RANGES];
    dt_strtab parents;
    dt_strtab_init(&parents);
    int64_t *parent_range = NULL;
    size_t np = sum->external_parents.count;
    if (np) {
        parent_range = malloc(np * sizeof *parent_range);
        if (!parent_range)
            return -1;
        for (size_t i = 0; i < np; i++) {
            const dt_rd_kv *kv = &sum->external_parents.items[i];
            int64_t id = dt_strtab_intern(&parents, kv->key, strlen(kv->key), NULL);
            if (id < 0) {
                free(parent_range);
                dt_strtab_free(&parents);
                return -1;
            }
            parent_range[id] = kv->value;
        }
    }
    const dt_strtab *pt = np ? &parents : NULL;
    uint64_t walk = 0;
    size_t cursor = 0;
    uint64_t ext, ext_ns;
    while (dt_u64map_next(&s->ext_sum, &cursor, &ext, &ext_ns)) {
        char key[32];
        snprintf(key, sizeof key, "%" PRIu64, ext);
        int64_t id = range_of(s, pt, parent_range, key);
        walk++;
        while (id >= 0) {
            st_range *rg = &s->ranges[id];
            if (rg->stamp == walk) /* a cycle in hostile parent links */
                break;
            rg->stamp = walk;
            st_group *g = &r->groups[rg->group];
            if (g->stamp != walk) {
                g->stamp = walk;
                g->device_ns = dt_rd_add_sat(g->device_ns, (int64_t)ext_ns);
            }
            if (!rg->has_parent)
                break;
            char pkey[32];
            snprintf(pkey, sizeof pkey, "%" PRIu64, rg->parent);
            id = range_of(s, pt, parent_range, pkey);
        }
    }
    free(parent_range);
    dt_strtab_free(&parents);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct st_row {
    size_t group;
    int64_t total;
    const char *name;
} st_row;

static int cmp_row(const void *a, const void *b)
{
    const st_row *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

enum { COL_PCT, COL_TOTAL, COL_N, COL_AVG, COL_MED, COL_MIN, COL_MAX, COL_SD, COL_BYTES, COL_BW, COL_DEV, COL_NAME,
       COL_COUNT };

static const char *const col_names[COL_COUNT] = {
    "Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)",
    "Total Bytes", "Avg Bandwidth (GB/s)", "Device Time (ns)", "Name"};

static bool col_used(int rep, int col)
{
    if (col == COL_BYTES || col == COL_BW)
        return rep == REP_MEMCPY || rep == REP_MEMSET || rep == REP_COLLECTIVES;
    if (col == COL_DEV)
        return rep == REP_RANGES;
    return true;
}

/* Cells of one row as text, so that table widths can be measured. */
static void row_cells(const st_report *r, const st_row *row, int64_t all_total, char cells[][48])
{
    st_group *g = &r->groups[row->group];
    if (!g->sorted) {
        qsort(g->durs, g->n, sizeof *g->durs, cmp_i64);
        g->sorted = true;
    }
    double n = (double)g->n;
    double avg = (double)g->total / n;
    double med = g->n % 2 ? (double)g->durs[g->n / 2]
                          : ((double)g->durs[g->n / 2 - 1] + (double)g->durs[g->n / 2]) / 2.0;
    double ss = 0;
    for (size_t i = 0; i < g->n; i++) {
        double d = (double)g->durs[i] - avg;
        ss += d * d;
    }
    double sd = g->n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    snprintf(cells[COL_PCT], 48, "%.1f", all_total > 0 ? 100.0 * (double)g->total / (double)all_total : 0.0);
    snprintf(cells[COL_TOTAL], 48, "%" PRId64, g->total);
    snprintf(cells[COL_N], 48, "%zu", g->n);
    snprintf(cells[COL_AVG], 48, "%.1f", avg);
    snprintf(cells[COL_MED], 48, "%.1f", med);
    snprintf(cells[COL_MIN], 48, "%" PRId64, g->durs[0]);
    snprintf(cells[COL_MAX], 48, "%" PRId64, g->durs[g->n - 1]);
    snprintf(cells[COL_SD], 48, "%.1f", sd);
    snprintf(cells[COL_BYTES], 48, "%" PRIu64, g->bytes);
    /* bytes per ns is GB/s */
    snprintf(cells[COL_BW], 48, "%.3f", g->total > 0 ? (double)g->bytes / (double)g->total : 0.0);
    snprintf(cells[COL_DEV], 48, "%" PRId64, g->device_ns);
    cells[COL_NAME][0] = '\0';
}

static int print_report(st *s, int rep, bool csv, FILE *out)
{
    st_report *r = &s->rep[rep];
    size_t n = r->names.count;
    st_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return -1;
    int64_t all_total = 0;
    for (size_t i = 0; i < n; i++) {
        rows[i] = (st_row){i, r->groups[i].total, dt_strtab_key(&r->names, i)};
        all_total = dt_rd_add_sat(all_total, r->groups[i].total);
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    /* Cells are formatted twice (widths, then output) rather than kept:
       a trace may hold very many distinct names. */
    char cells[COL_COUNT][48];
    if (csv) {
        fputs("Report", out);
        for (int c = 0; c < COL_COUNT; c++)
            if (col_used(rep, c))
                fprintf(out, ",%s", col_names[c]);
        fputc('\n', out);
        for (size_t i = 0; i < n; i++) {
            row_cells(r, &rows[i], all_total, cells);
            fputs(rep_names[rep], out);
            for (int c = 0; c < COL_NAME; c++)
                if (col_used(rep, c))
                    fprintf(out, ",%s", cells[c]);
            fputc(',', out);
            dt_rd_put_csv(out, rows[i].name);
            fputc('\n', out);
        }
        free(rows);
        return 0;
    }
    size_t w[COL_COUNT];
    for (int c = 0; c < COL_COUNT; c++)
        w[c] = strlen(col_names[c]);
    for (size_t i = 0; i < n; i++) {
        row_cells(r, &rows[i], all_total, cells);
        for (int c = 0; c < COL_NAME; c++)
            if (strlen(cells[c]) > w[c])
                w[c] = strlen(cells[c]);
    }
    fprintf(out, "\n** %s (%s):\n\n", rep_titles[rep], rep_names[rep]);
    if (n == 0) {
        fprintf(out, " (no events)\n");
        free(rows);
        return 0;
    }
    for (int c = 0; c < COL_COUNT; c++)
        if (col_used(rep, c))
            fprintf(out, " %*s%s", c == COL_NAME ? 0 : (int)w[c], col_names[c], c == COL_NAME ? "" : " ");
    fputc('\n', out);
    for (int c = 0; c < COL_COUNT; c++) {
        if (!col_used(rep, c))
            continue;
        size_t len = c == COL_NAME ? strlen(col_names[c]) : w[c];
        fputc(' ', out);
        for (size_t k = 0; k < len; k++)
            fputc('-', out);
        if (c != COL_NAME)
            fputc(' ', out);
    }
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        row_cells(r, &rows[i], all_total, cells);
        for (int c = 0; c < COL_NAME; c++)
            if (col_used(rep, c))
                fprintf(out, " %*s ", (int)w[c], cells[c]);
        fputc(' ', out);
        dt_rd_put_safe(out, rows[i].name);
        fputc('\n', out);
    }
    free(rows);
    return 0;
}

static void print_loss(const dt_rd_summary *sum, bool csv, FILE *out)
{
    if (csv) {
        fputs("Report,Reason,Count\n", out);
        for (size_t i = 0; i < sum->loss.count; i++) {
            fputs("loss,", out);
            dt_rd_put_csv(out, sum->loss.items[i].key);
            fprintf(out, ",%" PRId64 "\n", sum->loss.items[i].value);
        }
        return;
    }
    fprintf(out, "\n** Records lost while recording (devtrace.loss):\n\n");
    if (!sum->loss.present) {
        fprintf(out, " not recorded in this trace\n");
        return;
    }
    size_t w = strlen("Reason");
    for (size_t i = 0; i < sum->loss.count; i++)
        if (dt_rd_safe_len(sum->loss.items[i].key) > w)
            w = dt_rd_safe_len(sum->loss.items[i].key);
    fprintf(out, " %-*s  Count\n", (int)w, "Reason");
    for (size_t i = 0; i < sum->loss.count; i++) {
        fputc(' ', out);
        dt_rd_put_safe(out, sum->loss.items[i].key);
        fprintf(out, "%*s  %" PRId64 "\n", (int)(w - dt_rd_safe_len(sum->loss.items[i].key)), "",
                sum->loss.items[i].value);
    }
}

/* The categories the reader has no kind for: their events are in no report. */
static void print_unclassified(const dt_rd_summary *sum, bool csv, FILE *out)
{
    const dt_rd_kvlist *l = &sum->unclassified;
    if (!l->count)
        return;
    if (csv) {
        fputs("Report,Category,Events\n", out);
        for (size_t i = 0; i < l->count; i++) {
            fputs("unclassified,", out);
            dt_rd_put_csv(out, l->items[i].key);
            fprintf(out, ",%" PRId64 "\n", l->items[i].value);
        }
        if (sum->unclassified_more)
            fprintf(out, "unclassified,(%d categories and more),%" PRIu64 "\n", DT_RD_UNCLASSIFIED_MAX,
                    sum->unclassified_more);
        return;
    }
    fprintf(out, "\n** Categories devtrace does not classify (their events are in no report above):\n\n");
    size_t w = strlen("Category");
    for (size_t i = 0; i < l->count; i++)
        if (dt_rd_safe_len(l->items[i].key) > w)
            w = dt_rd_safe_len(l->items[i].key);
    fprintf(out, " %-*s  Events\n", (int)w, "Category");
    for (size_t i = 0; i < l->count; i++) {
        fputc(' ', out);
        dt_rd_put_safe(out, l->items[i].key);
        fprintf(out, "%*s  %" PRId64 "\n", (int)(w - dt_rd_safe_len(l->items[i].key)), "", l->items[i].value);
    }
    if (sum->unclassified_more)
        fprintf(out, " (beyond these %d categories, more)%*s  %" PRIu64 "\n", DT_RD_UNCLASSIFIED_MAX, 0, "",
                sum->unclassified_more);
}

/* torch's name of a c10::DeviceType, where devtrace writes it. */
static const char *device_type_name(int64_t type)
{
    return type == 0 ? "cpu" : type == 1 ? "cuda" : type == 20 ? "privateuse1" : NULL;
}

static void print_memory(const st *s, bool csv, FILE *out)
{
    static const char *const cols[] = {"Allocations", "Frees", "Bytes Allocated", "Bytes Freed",
                                       "Peak Allocated (bytes)", "Final Allocated (bytes)"};
    if (csv)
        fputs("Report,Device,Allocations,Frees,Bytes Allocated,Bytes Freed,Peak Allocated (bytes),"
              "Final Allocated (bytes)\n", out);
    else
        fprintf(out, "\n** %s (%s):\n\n", rep_titles[REP_MEMORY], rep_names[REP_MEMORY]);
    if (!csv && s->memory_n == 0) {
        fprintf(out, " (no events)\n");
        return;
    }
    if (!csv) {
        fprintf(out, " %-18s", "Device");
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
            fprintf(out, " %22s", cols[c]);
        fputc('\n', out);
    }
    for (size_t i = 0; i < s->memory_n; i++) {
        const st_memory *m = &s->memory[i];
        char dev[64];
        const char *tn = device_type_name(m->type);
        if (m->device < 0)
            snprintf(dev, sizeof dev, "%s", tn ? tn : "?");
        else if (tn)
            snprintf(dev, sizeof dev, "%s:%" PRId64, tn, m->device);
        else
            snprintf(dev, sizeof dev, "type %" PRId64 ":%" PRId64, m->type, m->device);
        if (csv)
            fprintf(out, "memory,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 "\n", dev,
                    m->allocations, m->frees, m->allocated, m->freed, m->peak, m->total);
        else
            fprintf(out, " %-18s %22" PRIu64 " %22" PRIu64 " %22" PRIu64 " %22" PRIu64 " %22" PRId64 " %22" PRId64 "\n",
                    dev, m->allocations, m->frees, m->allocated, m->freed, m->peak, m->total);
    }
}

static void stats_free(st *s)
{
    for (int r = 0; r < REP_COUNT; r++) {
        for (size_t i = 0; i < s->rep[r].names.count; i++)
            free(s->rep[r].groups[i].durs);
        free(s->rep[r].groups);
        dt_strtab_free(&s->rep[r].names);
    }
    dt_strtab_free(&s->range_ids);
    dt_u64map_free(&s->ext_sum);
    free(s->ranges);
}

/* reports: bit per report in the order kernels, memcpy, memset, api, ranges, collectives, memory. */
static int run_stats(dt_rd_source *src, const char *label, unsigned reports, bool csv, FILE *out, FILE *err)
{
    st s;
    memset(&s, 0, sizeof s);
    s.reports = reports;
    for (int r = 0; r < REP_COUNT; r++)
        dt_strtab_init(&s.rep[r].names);
    dt_strtab_init(&s.range_ids);
    dt_rd_summary sum;
    char msg[512];
    int rc = dt_rd_read(src, visit, &s, &sum, msg, sizeof msg);
    if (rc != 0 || s.oom) {
        fprintf(err, "stats: %s: %s\n", label, s.oom ? "out of memory" : msg);
        dt_rd_summary_free(&sum);
        stats_free(&s);
        return 1;
    }
    if (attribute_ranges(&s, &sum) != 0) {
        fprintf(err, "stats: out of memory\n");
        dt_rd_summary_free(&sum);
        stats_free(&s);
        return 1;
    }
    if (!csv)
    {
        fprintf(out, "trace: %s (%" PRIu64 " events%s", label, sum.event_count, sum.backend ? ", backend " : "");
        dt_rd_put_safe(out, sum.backend ? sum.backend : "");
        fputs(")\n", out);
    }
    int status = 0;
    for (int r = 0; r < REP_COUNT; r++)
        if (r == REP_MEMORY && (reports & (1u << r)))
            print_memory(&s, csv, out);
        else if ((reports & (1u << r)) && print_report(&s, r, csv, out) != 0) {
            fprintf(err, "stats: out of memory\n");
            status = 1;
            break;
        }
    if (status == 0) {
        print_unclassified(&sum, csv, out);
        print_loss(&sum, csv, out);
    }
    dt_rd_summary_free(&sum);
    stats_free(&s);
    return status;
}

/* 0 with *mask set, or 2 (usage) after naming the unknown report. */
static int parse_reports(const char *reports, unsigned *mask, FILE *err)
{
    *mask = 0;
    if (!reports || !*reports) {
        *mask = (1u << REP_COUNT) - 1;
        return 0;
    }
    for (const char *p = reports; *p;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int r = 0; r < REP_COUNT; r++)
            if (strlen(rep_names[r]) == len && strncmp(p, rep_names[r], len) == 0)
                found = r;
        if (found < 0) {
            fprintf(err, "stats: unknown report \"%.*s\" (known: kernels, memcpy, memset, api, ranges, collectives, "
                    "memory)\n",
                    (int)len, p);
            return 2;
        }
        *mask |= 1u << found;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int dt_stats_source(dt_rd_source *src, const char *label, const char *reports, bool csv, FILE *out, FILE *err)
{
    unsigned mask;
    if (parse_reports(reports, &mask, err) != 0)
        return 2;
    return run_stats(src, label, mask, csv, out, err);
}

static void stats_usage(FILE *f)
{
    fprintf(f, "usage: devtrace stats FILE [--format table|csv] [--report LIST]\n"
               "\n"
               "Summarises a trace (JSON or gzip JSON; - reads standard input) like\n"
               "`nsys stats`: total, count, average, median, minimum, maximum and\n"
               "standard deviation of durations per name, sorted by total time, then\n"
               "the records lost while recording (devtrace.loss). User ranges also\n"
               "show the device time attributed to them and to the ranges they enclose.\n"
               "\n"
               "  --format table|csv  table (default) or CSV: per report one header line,\n"
               "                      then rows whose first column is the report name\n"
               "  --report LIST       comma-separated subset of\n"
               "                      kernels, memcpy, memset, api, ranges, collectives, memory\n"
               "                      (default: all)\n"
               "\n"
               "Exit status: 0 ok, 1 unreadable or invalid trace, 2 usage.\n");
}

int dt_stats_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL, *format = "table", *reports = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            stats_usage(out);
            return 0;
        }
        const char **dst = NULL;
        const char *opt = NULL;
        if (strncmp(a, "--format", 8) == 0 && (a[8] == '\0' || a[8] == '=')) {
            dst = &format;
            opt = "--format";
        } else if (strncmp(a, "--report", 8) == 0 && (a[8] == '\0' || a[8] == '=')) {
            dst = &reports;
            opt = "--report";
        }
        if (dst) {
            if (a[8] == '=') {
                *dst = a + 9;
            } else if (i + 1 < argc) {
                *dst = argv[++i];
            } else {
                fprintf(err, "stats: %s needs a value\n", opt);
                stats_usage(err);
                return 2;
            }
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') {
            fprintf(err, "stats: unknown option %s\n", a);
            stats_usage(err);
            return 2;
        }
        if (path) {
            fprintf(err, "stats: one FILE only\n");
            stats_usage(err);
            return 2;
        }
        path = a;
    }
    if (!path) {
        stats_usage(err);
        return 2;
    }
    bool csv;
    if (strcmp(format, "table") == 0) {
        csv = false;
    } else if (strcmp(format, "csv") == 0) {
        csv = true;
    } else {
        fprintf(err, "stats: unknown format \"%s\" (table or csv)\n", format);
        return 2;
    }
    unsigned mask;
    if (reports && !*reports) {
        fprintf(err, "stats: --report needs at least one report\n");
        return 2;
    }
    if (parse_reports(reports, &mask, err) != 0)
        return 2;
    char msg[512];
    dt_rd_source *src = dt_rd_open_file(path, msg, sizeof msg);
    if (!src) {
        fprintf(err, "stats: %s\n", msg);
        return 1;
    }
    int rc = dt_stats_source(src, path, reports, csv, out, err);
    dt_rd_close(src);
    return rc;
}
