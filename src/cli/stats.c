/* `devtrace stats`: its argv and usage, and the reports the reader's stats
   returns (src/reader/stats.c), printed as tables or CSV. */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const rep_titles[DT_STATS_REPORTS] = {
    "Device kernels, by name",
    "Memory copies, by kind",
    "Memory sets, by kind",
    "Runtime and driver API calls, by name",
    "User ranges, by name (Device Time: device activity attributed to the range or ranges nested in it)",
    "Collective communication on the devices, by name",
    "Memory allocated and freed, by device (Peak: the most allocated at once)",
};

enum { COL_PCT, COL_TOTAL, COL_N, COL_AVG, COL_MED, COL_MIN, COL_MAX, COL_SD, COL_BYTES, COL_BW, COL_DEV, COL_NAME,
       COL_COUNT };

static const char *const col_names[COL_COUNT] = {
    "Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)",
    "Total Bytes", "Avg Bandwidth (GB/s)", "Device Time (ns)", "Name"};

static bool col_used(int rep, int col)
{
    if (col == COL_BYTES || col == COL_BW)
        return rep == DT_STATS_MEMCPY || rep == DT_STATS_MEMSET || rep == DT_STATS_COLLECTIVES;
    if (col == COL_DEV)
        return rep == DT_STATS_RANGES;
    return true;
}

/* Cells of one row as text, so that table widths can be measured. */
static void row_cells(const dt_stats_row *row, int64_t all_total, char cells[][48])
{
    snprintf(cells[COL_PCT], 48, "%.1f", all_total > 0 ? 100.0 * (double)row->total / (double)all_total : 0.0);
    snprintf(cells[COL_TOTAL], 48, "%" PRId64, row->total);
    snprintf(cells[COL_N], 48, "%" PRIu64, row->count);
    snprintf(cells[COL_AVG], 48, "%.1f", row->avg);
    snprintf(cells[COL_MED], 48, "%.1f", row->median);
    snprintf(cells[COL_MIN], 48, "%" PRId64, row->min);
    snprintf(cells[COL_MAX], 48, "%" PRId64, row->max);
    snprintf(cells[COL_SD], 48, "%.1f", row->stddev);
    snprintf(cells[COL_BYTES], 48, "%" PRIu64, row->bytes);
    /* bytes per ns is GB/s */
    snprintf(cells[COL_BW], 48, "%.3f", row->total > 0 ? (double)row->bytes / (double)row->total : 0.0);
    snprintf(cells[COL_DEV], 48, "%" PRId64, row->device_ns);
    cells[COL_NAME][0] = '\0';
}

static void print_report(const dt_stats_table *t, int rep, bool csv, FILE *out)
{
    const char *name = dt__rd_stats_report_name(rep);
    /* Cells are formatted twice (widths, then output) rather than kept:
       a trace may hold very many distinct names. */
    char cells[COL_COUNT][48];
    if (csv) {
        fputs("Report", out);
        for (int c = 0; c < COL_COUNT; c++)
            if (col_used(rep, c))
                fprintf(out, ",%s", col_names[c]);
        fputc('\n', out);
        for (size_t i = 0; i < t->count; i++) {
            row_cells(&t->rows[i], t->total, cells);
            fputs(name, out);
            for (int c = 0; c < COL_NAME; c++)
                if (col_used(rep, c))
                    fprintf(out, ",%s", cells[c]);
            fputc(',', out);
            dt__rd_put_csv(out, t->rows[i].name);
            fputc('\n', out);
        }
        return;
    }
    size_t w[COL_COUNT];
    for (int c = 0; c < COL_COUNT; c++)
        w[c] = strlen(col_names[c]);
    for (size_t i = 0; i < t->count; i++) {
        row_cells(&t->rows[i], t->total, cells);
        for (int c = 0; c < COL_NAME; c++)
            if (strlen(cells[c]) > w[c])
                w[c] = strlen(cells[c]);
    }
    fprintf(out, "\n** %s (%s):\n\n", rep_titles[rep], name);
    if (t->count == 0) {
        fprintf(out, " (no events)\n");
        return;
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
    for (size_t i = 0; i < t->count; i++) {
        row_cells(&t->rows[i], t->total, cells);
        for (int c = 0; c < COL_NAME; c++)
            if (col_used(rep, c))
                fprintf(out, " %*s ", (int)w[c], cells[c]);
        fputc(' ', out);
        dt__rd_put_safe(out, t->rows[i].name);
        fputc('\n', out);
    }
}

static void print_loss(const dt_rd_summary *sum, bool csv, FILE *out)
{
    if (csv) {
        fputs("Report,Reason,Count\n", out);
        for (size_t i = 0; i < sum->loss.count; i++) {
            fputs("loss,", out);
            dt__rd_put_csv(out, sum->loss.items[i].key);
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
        if (dt__rd_safe_len(sum->loss.items[i].key) > w)
            w = dt__rd_safe_len(sum->loss.items[i].key);
    fprintf(out, " %-*s  Count\n", (int)w, "Reason");
    for (size_t i = 0; i < sum->loss.count; i++) {
        fputc(' ', out);
        dt__rd_put_safe(out, sum->loss.items[i].key);
        fprintf(out, "%*s  %" PRId64 "\n", (int)(w - dt__rd_safe_len(sum->loss.items[i].key)), "",
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
            dt__rd_put_csv(out, l->items[i].key);
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
        if (dt__rd_safe_len(l->items[i].key) > w)
            w = dt__rd_safe_len(l->items[i].key);
    fprintf(out, " %-*s  Events\n", (int)w, "Category");
    for (size_t i = 0; i < l->count; i++) {
        fputc(' ', out);
        dt__rd_put_safe(out, l->items[i].key);
        fprintf(out, "%*s  %" PRId64 "\n", (int)(w - dt__rd_safe_len(l->items[i].key)), "", l->items[i].value);
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

static void print_memory(const dt_stats_result *s, bool csv, FILE *out)
{
    static const char *const cols[] = {"Allocations", "Frees", "Bytes Allocated", "Bytes Freed",
                                       "Peak Allocated (bytes)", "Final Allocated (bytes)"};
    if (csv)
        fputs("Report,Device,Allocations,Frees,Bytes Allocated,Bytes Freed,Peak Allocated (bytes),"
              "Final Allocated (bytes)\n", out);
    else
        fprintf(out, "\n** %s (%s):\n\n", rep_titles[DT_STATS_MEMORY], dt__rd_stats_report_name(DT_STATS_MEMORY));
    if (!csv && s->memory_count == 0) {
        fprintf(out, " (no events)\n");
        return;
    }
    if (!csv) {
        fprintf(out, " %-18s", "Device");
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
            fprintf(out, " %22s", cols[c]);
        fputc('\n', out);
    }
    for (size_t i = 0; i < s->memory_count; i++) {
        const dt_stats_memory *m = &s->memory[i];
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

/* reports: bit per report (DT_STATS_*). */
static int run_stats(dt_rd_source *src, const char *label, unsigned reports, bool csv, FILE *out, FILE *err)
{
    dt_stats_result s;
    char msg[512];
    int rc = dt__rd_stats(src, reports, &s, msg, sizeof msg);
    if (rc != 0) {
        if (rc == -1)
            fprintf(err, "stats: %s: %s\n", label, msg);
        else
            fprintf(err, "stats: %s\n", msg);
        dt__rd_stats_free(&s);
        return 1;
    }
    if (!csv) {
        fprintf(out, "trace: %s (%" PRIu64 " events%s", label, s.summary.event_count,
                s.summary.backend ? ", backend " : "");
        dt__rd_put_safe(out, s.summary.backend ? s.summary.backend : "");
        fputs(")\n", out);
    }
    for (int r = 0; r < DT_STATS_REPORTS; r++) {
        if (!(reports & (1u << r)))
            continue;
        if (r == DT_STATS_MEMORY)
            print_memory(&s, csv, out);
        else
            print_report(&s.tables[r], r, csv, out);
    }
    print_unclassified(&s.summary, csv, out);
    print_loss(&s.summary, csv, out);
    dt__rd_stats_free(&s);
    return 0;
}

/* The reports' names: "kernels, memcpy, ..., memory". */
static const char *report_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int r = 0; r < DT_STATS_REPORTS && used < n; r++) {
        int k = snprintf(buf + used, n - used, "%s%s", r ? ", " : "", dt__rd_stats_report_name(r));
        if (k < 0)
            break;
        used += (size_t)k;
    }
    return buf;
}

/* 0 with *mask set, or 2 (usage) after naming the unknown report. */
static int parse_reports(const char *reports, unsigned *mask, FILE *err)
{
    *mask = 0;
    if (!reports || !*reports) {
        *mask = (1u << DT_STATS_REPORTS) - 1;
        return 0;
    }
    for (const char *p = reports; *p;) {
        size_t len = strcspn(p, ",");
        int found = dt__rd_stats_report_by_name(p, len);
        if (found < 0) {
            char known[128];
            fprintf(err, "stats: unknown report \"%.*s\" (known: %s)\n", (int)len, p, report_names(known, sizeof known));
            return 2;
        }
        *mask |= 1u << found;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int dt__stats_source(dt_rd_source *src, const char *label, const char *reports, bool csv, FILE *out, FILE *err)
{
    unsigned mask;
    if (parse_reports(reports, &mask, err) != 0)
        return 2;
    return run_stats(src, label, mask, csv, out, err);
}

static void stats_usage(FILE *f)
{
    char known[128];
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
               "                      %s\n"
               "                      (default: all)\n"
               "\n"
               "Exit status: 0 ok, 1 unreadable or invalid trace, 2 usage.\n",
            report_names(known, sizeof known));
}

int dt__stats_main(int argc, char **argv, FILE *out, FILE *err)
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
    dt_rd_source *src = dt__rd_open_file(path, msg, sizeof msg);
    if (!src) {
        fprintf(err, "stats: %s\n", msg);
        return 1;
    }
    int rc = dt__stats_source(src, path, reports, csv, out, err);
    dt__rd_close(src);
    return rc;
}

int dt__cli_stats(int argc, char **argv)
{
    return dt__stats_main(argc, argv, stdout, stderr);
}
