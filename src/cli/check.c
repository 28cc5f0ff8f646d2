/* `devtrace check`: its argv and usage, and the findings the reader's check
   returns (src/reader/check.c), printed grouped by kind. */
#include "cli/commands.h"

#include <inttypes.h>
#include <string.h>

/* Each kind of finding: a header with its count where there is more than
   one or it is a known property of the writer, then its first lines
   (every line with verbose), each as "invariant N: ...". */
static void print_findings(const dt_check_result *r, FILE *out)
{
    for (int k = 0; k < DT_CHECK_KINDS; k++) {
        const dt_check_kind *kd = &r->kinds[k];
        uint64_t n = kd->count;
        int inv = kd->invariant;
        if (n == 0)
            continue;
        if (kd->known)
            fprintf(out, "invariant %d, %s: %" PRIu64 ", a known property of torch.profiler's traces, not a "
                         "defect: %s\n", inv, kd->title, n, kd->known);
        else if (n > 1)
            fprintf(out, "invariant %d, %s: %" PRIu64 "\n", inv, kd->title, n);
        for (uint64_t i = 0; i < kd->shown; i++) {
            /* a name in a finding is the trace's bytes: one finding stays one line */
            fprintf(out, "invariant %d: ", inv);
            dt__rd_put_safe(out, kd->lines[i] ? kd->lines[i] : "(out of memory)");
            fputc('\n', out);
        }
        if (kd->shown < n)
            fprintf(out, "invariant %d: ... %" PRIu64 " more of these not shown (--verbose shows every one)\n",
                    inv, n - kd->shown);
    }
}

int dt__check_source_ex(dt_rd_source *src, const char *label, unsigned flags, FILE *out, FILE *err)
{
    dt_check_result r;
    dt__rd_check(src, label, flags, &r);
    if (r.oom) {
        fprintf(err, "check: %s: out of memory\n", label);
        dt__rd_check_free(&r);
        return 1;
    }
    print_findings(&r, out);
    if (r.scope)
        fprintf(out, "check: %s\n", r.scope);
    char also[160] = "";
    if (r.known)
        snprintf(also, sizeof also, "; %" PRIu64 " finding%s that %s known properties of torch.profiler's traces, "
                 "not defects", r.known, r.known == 1 ? "" : "s", r.known == 1 ? "is one of the" : "are");
    if (r.defects == 0)
        fprintf(out, "check: OK (%" PRIu64 " events, %zu flows)%s\n", r.events, r.flows, also);
    else
        fprintf(out, "check: FAILED: %" PRIu64 " violation%s%s\n", r.defects, r.defects == 1 ? "" : "s", also);
    int rc = r.defects == 0 ? 0 : 1;
    dt__rd_check_free(&r);
    return rc;
}

int dt__check_source(dt_rd_source *src, const char *label, FILE *out, FILE *err)
{
    return dt__check_source_ex(src, label, 0, out, err);
}

static void check_usage(FILE *f)
{
    fprintf(f, "usage: devtrace check [--verbose] FILE\n"
               "\n"
               "Verifies that a trace (JSON or gzip JSON; - reads standard input)\n"
               "satisfies the devtrace trace invariants (docs/trace-format.md):\n"
               "  1 valid UTF-8 JSON in the Kineto object shape\n"
               "  2 every ac2g flow has one start and one finish (bp \"e\")\n"
               "  3 devtrace.attribution matches the device event durations\n"
               "  4 kernel names that demangle are demangled, at most 5%% generic API names\n"
               "  5 events inside the capture window\n"
               "  6 every pid and tid named, device rows sorted after host rows\n"
               "  7 devtrace.loss lists every reason and a correct total\n"
               "  8 torch's [memory] events carry their args and consistent totals\n"
               "  9 the events of a row nest: no partial overlap\n"
               "Who wrote the trace decides what applies: devtrace's own traces get\n"
               "every invariant; torch.profiler's (with or without devtrace.torch)\n"
               "those every trace must satisfy, and findings that are known properties\n"
               "of torch.profiler's traces (flows with one side cut or several\n"
               "finishes, the overlaps Kineto writes on its rows) are reported but do\n"
               "not fail the check.\n"
               "Findings are grouped by kind, each with its count and first %d lines.\n"
               "  --verbose, -v  every line of every kind\n"
               "Exit status: 0 no defect, 1 defects or unreadable file, 2 usage.\n",
            DT_CHECK_EXAMPLES);
}

int dt__check_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            check_usage(out);
            return 0;
        }
        if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
            flags |= DT_CHECK_VERBOSE;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "check: unknown option %s\n", argv[i]);
            check_usage(err);
            return 2;
        }
        if (path) {
            fprintf(err, "check: one FILE only\n");
            check_usage(err);
            return 2;
        }
        path = argv[i];
    }
    if (!path) {
        check_usage(err);
        return 2;
    }
    char msg[512];
    dt_rd_source *src = dt__rd_open_file(path, msg, sizeof msg);
    if (!src) {
        fprintf(err, "check: %s\n", msg);
        return 1;
    }
    int rc = dt__check_source_ex(src, path, flags, out, err);
    dt__rd_close(src);
    return rc;
}

int dt__cli_check(int argc, char **argv)
{
    return dt__check_main(argc, argv, stdout, stderr);
}
