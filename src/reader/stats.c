/*
 * `devtrace stats`: summary tables in the manner of `nsys stats`, from one
 * streaming pass, returned for the command to print (src/cli/stats.c). The
 * median needs every duration of a group, so each group keeps its
 * durations (memory grows with the events of the reported categories
 * only); everything else is keyed by distinct names and ids.
 */
#include "base/vec.h"
#include "reader/dt_reader.h"
#include "reader/results.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { REP_KERNELS = DT_STATS_KERNELS, REP_MEMCPY = DT_STATS_MEMCPY, REP_MEMSET = DT_STATS_MEMSET,
       REP_API = DT_STATS_API, REP_RANGES = DT_STATS_RANGES, REP_COLLECTIVES = DT_STATS_COLLECTIVES,
       REP_MEMORY = DT_STATS_MEMORY, REP_COUNT = DT_STATS_REPORTS };

static const char *const rep_names[REP_COUNT] = {"kernels", "memcpy", "memset", "api", "ranges", "collectives",
                                                 "memory"};

const char *dt__rd_stats_report_name(int report)
{
    return report >= 0 && report < REP_COUNT ? rep_names[report] : NULL;
}

int dt__rd_stats_report_by_name(const char *name, size_t len)
{
    for (int r = 0; r < REP_COUNT; r++)
        if (strlen(rep_names[r]) == len && strncmp(name, rep_names[r], len) == 0)
            return r;
    return -1;
}

typedef dt_stats_memory st_memory;
#define ST_MEMORY_MAX 256

typedef struct st_group {
    int64_t *durs;
    size_t n, cap;
    int64_t total;
    uint64_t bytes;
    int64_t device_ns;
    uint64_t stamp;
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
    m->total = e->has & DT_RD_HAS_MEM_TOTAL ? e->mem_total : dt__rd_add_sat(m->total, b);
    if (m->total > m->peak) m->peak = m->total;
}

static int64_t group_id(st_report *r, const char *name, size_t len)
{
    int64_t id = dt__strtab_intern(&r->names, name, len, NULL);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&r->groups, &r->cap, (size_t)id + 1, sizeof *r->groups) != 0)
        return -1;
    return id;
}

static int add_duration(st_report *r, int64_t g, int64_t dur)
{
    st_group *gr = &r->groups[g];
    if (dt__vec_reserve_zeroed((void **)&gr->durs, &gr->cap, gr->n + 1, sizeof *gr->durs) != 0)
        return -1;
    gr->durs[gr->n++] = dur;
    gr->total = dt__rd_add_sat(gr->total, dur);
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
        uint64_t *sum = dt__u64map_slot(&s->ext_sum, e->external_id, NULL);
        if (!sum)
            goto oom;
        *sum = (uint64_t)dt__rd_add_sat((int64_t)*sum, e->dur_ns);
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
        int64_t id = dt__strtab_intern(&s->range_ids, key, (size_t)n, &added);
        if (id < 0 || dt__vec_reserve_zeroed((void **)&s->ranges, &s->range_cap, (size_t)id + 1, sizeof *s->ranges) != 0)
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
    int64_t id = dt__strtab_find(&s->range_ids, key, strlen(key));
    if (id >= 0 || !parents)
        return id;
    int64_t p = dt__strtab_find(parents, key, strlen(key));
    if (p < 0)
        return -1;
    char rkey[32];
    int n = snprintf(rkey, sizeof rkey, "%" PRId64, parent_range[p]);
    return dt__strtab_find(&s->range_ids, rkey, (size_t)n);
}

/* Device time of each range group: every External id's device time goes to
   its range and each enclosing range, once per group even when a name
   repeats along the chain. Returns -1 when out of memory. */
static int attribute_ranges(st *s, const dt_rd_summary *sum)
{
    st_report *r = &s->rep[REP_RANGES];
    dt_strtab parents;
    dt__strtab_init(&parents);
    int64_t *parent_range = NULL;
    size_t np = sum->external_parents.count;
    if (np) {
        parent_range = malloc(np * sizeof *parent_range);
        if (!parent_range)
            return -1;
        for (size_t i = 0; i < np; i++) {
            const dt_rd_kv *kv = &sum->external_parents.items[i];
            int64_t id = dt__strtab_intern(&parents, kv->key, strlen(kv->key), NULL);
            if (id < 0) {
                free(parent_range);
                dt__strtab_free(&parents);
                return -1;
            }
            parent_range[id] = kv->value;
        }
    }
    const dt_strtab *pt = np ? &parents : NULL;
    uint64_t walk = 0;
    size_t cursor = 0;
    uint64_t ext, ext_ns;
    while (dt__u64map_next(&s->ext_sum, &cursor, &ext, &ext_ns)) {
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
                g->device_ns = dt__rd_add_sat(g->device_ns, (int64_t)ext_ns);
            }
            if (!rg->has_parent)
                break;
            char pkey[32];
            snprintf(pkey, sizeof pkey, "%" PRIu64, rg->parent);
            id = range_of(s, pt, parent_range, pkey);
        }
    }
    free(parent_range);
    dt__strtab_free(&parents);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_row(const void *a, const void *b)
{
    const dt_stats_row *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A group's figures, from its durations (sorted here). */
static void row_of(st_group *g, const char *name, dt_stats_row *row)
{
    qsort(g->durs, g->n, sizeof *g->durs, cmp_i64);
    double n = (double)g->n;
    double avg = (double)g->total / n;
    double med = g->n % 2 ? (double)g->durs[g->n / 2]
                          : ((double)g->durs[g->n / 2 - 1] + (double)g->durs[g->n / 2]) / 2.0;
    double ss = 0;
    for (size_t i = 0; i < g->n; i++) {
        double d = (double)g->durs[i] - avg;
        ss += d * d;
    }
    *row = (dt_stats_row){.name = name, .count = g->n, .total = g->total, .min = g->durs[0],
                          .max = g->durs[g->n - 1], .avg = avg, .median = med,
                          .stddev = g->n > 1 ? sqrt(ss / (n - 1)) : 0.0, .bytes = g->bytes,
                          .device_ns = g->device_ns};
}

/* A report's rows, by total time; -1 when out of memory. */
static int table_of(st_report *r, dt_stats_table *t)
{
    size_t n = r->names.count;
    t->rows = calloc(n ? n : 1, sizeof *t->rows);
    if (!t->rows)
        return -1;
    t->count = n;
    t->total = 0;
    for (size_t i = 0; i < n; i++) {
        row_of(&r->groups[i], dt__strtab_key(&r->names, i), &t->rows[i]);
        t->total = dt__rd_add_sat(t->total, r->groups[i].total);
        /* the durations are in the row's figures now */
        free(r->groups[i].durs);
        r->groups[i].durs = NULL;
    }
    qsort(t->rows, n, sizeof *t->rows, cmp_row);
    return 0;
}

static void stats_free(st *s)
{
    for (int r = 0; r < REP_COUNT; r++) {
        for (size_t i = 0; i < s->rep[r].names.count; i++)
            free(s->rep[r].groups[i].durs);
        free(s->rep[r].groups);
        dt__strtab_free(&s->rep[r].names);
    }
    dt__strtab_free(&s->range_ids);
    dt__u64map_free(&s->ext_sum);
    free(s->ranges);
}

int dt__rd_stats(dt_rd_source *src, unsigned reports, dt_stats_result *result, char *err, size_t errlen)
{
    memset(result, 0, sizeof *result);
    result->reports = reports;
    st *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    result->state = s;
    s->reports = reports;
    for (int r = 0; r < REP_COUNT; r++)
        dt__strtab_init(&s->rep[r].names);
    dt__strtab_init(&s->range_ids);
    char msg[512];
    int rc = dt__rd_read(src, visit, s, &result->summary, msg, sizeof msg);
    if (rc != 0 || s->oom) {
        snprintf(err, errlen, "%s", s->oom ? "out of memory" : msg);
        return -1;
    }
    if (attribute_ranges(s, &result->summary) != 0) {
        snprintf(err, errlen, "out of memory");
        return -2;
    }
    for (int r = 0; r < REP_COUNT; r++) {
        if (r == REP_MEMORY || !(reports & (1u << r)))
            continue;
        if (table_of(&s->rep[r], &result->tables[r]) != 0) {
            snprintf(err, errlen, "out of memory");
            return -2;
        }
    }
    result->memory = s->memory;
    result->memory_count = s->memory_n;
    return 0;
}

void dt__rd_stats_free(dt_stats_result *result)
{
    for (int r = 0; r < REP_COUNT; r++)
        free(result->tables[r].rows);
    dt__rd_summary_free(&result->summary);
    if (result->state) {
        stats_free(result->state);
        free(result->state);
    }
    memset(result, 0, sizeof *result);
}
