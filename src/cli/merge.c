/* `devtrace merge`: its argv, usage and output format (the format table's),
   and what the reader's merge says and returns (src/reader/merge.c),
   printed. A signal that ends merge (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
   leaves no partial output behind: the temporary file is removed and merge
   exits 128+signal. */
#include "cli/commands.h"

#include "base/atomic_file.h"
#include "format/formats.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void merge_usage(FILE *f)
{
    char names[128], suffixes[128];
    fprintf(f, "usage: devtrace merge -o OUT [--format %s] [--strict] IN...\n"
               "\n"
               "Brings traces of one job together into one trace: per-rank devtrace traces\n"
               "(each rank's processes and devices named \"rank N ...\"), and a torch.profiler\n"
               "trace with the devtrace trace of the same process (each runtime call and its\n"
               "device work take the External id of the cpu_op that launched it). Inputs are\n"
               "JSON or gzip JSON files, read twice each (a FIFO, a pipe or \"-\" for standard\n"
               "input is copied once to a temporary file); OUT is written atomically, in the\n"
               "format its name asks for (%s) unless\n"
               "--format says otherwise. Perfetto output carries the events, rows, args and\n"
               "flows; the devtrace key (loss counts, notes, ranks) is JSON's alone.\n"
               "A character device or a FIFO named as OUT is written in place; OUT may not be\n"
               "one of the inputs, a directory or any other kind of file.\n"
               "\n"
               "merge warns of the same file given twice, two traces claiming one rank, a\n"
               "negative rank, and events it carries over as written that break the trace\n"
               "format (counted by kind: complete events with a negative duration, flow ids\n"
               "without exactly one start and one finish); with --strict any of these is an\n"
               "error and nothing is written. A flow with one side only in a torch.profiler\n"
               "trace (Kineto cuts flows at the capture window's edge) is said, not warned of.\n"
               "\n"
               "Clocks are not aligned: merge says what the inputs tell about how far their\n"
               "clocks may be apart (devtrace.notes.clockAgreement, also printed).\n"
               "\n"
               "Exit status: 0 written, 1 an input could not be read, OUT not written, or\n"
               "(--strict) a warning, 2 usage (OUT is an input).\n",
            dt__fmt_list(names, sizeof names, DT_FMT_NAME, -1, "|", "|"),
            dt__fmt_list(suffixes, sizeof suffixes, DT_FMT_SUFFIX, -1, ", ", ", "));
}

/* OUT's format, from its name or --format: the one place merge chooses
   among the output formats (JSON or Perfetto, gzip or not). 0, or 2
   (usage) said on err. */
static int output_format(const char *out_path, const char *format, bool *gzip, bool *perfetto, FILE *err)
{
    const dt_fmt *f = format ? dt__fmt_by_name(format) : dt__fmt_of((int)dt_format_of_path(out_path, DT_FORMAT_JSON));
    if (!f) {
        char names[128];
        fprintf(err, "merge: --format must be %s, not %s\n",
                dt__fmt_list(names, sizeof names, DT_FMT_NAME, -1, ", ", " or "), format);
        return 2;
    }
    *gzip = f->gzip;
    *perfetto = f->plain == DT_FORMAT_PERFETTO;
    if (!dt__fmt_available(f)) {
        fprintf(err, "merge: %s is gzip, but %s\n", out_path, DT_NO_GZIP_MESSAGE);
        return 2;
    }
    return 0;
}

/* The lines merge said since *said, each as "merge: ..."; "merge: out of
   memory" for a failure it could not say. */
static void print_said(const dt_merge_result *r, size_t *said, int failed, FILE *err)
{
    if (failed && *said == r->nlines)
        fprintf(err, "merge: out of memory\n");
    for (; *said < r->nlines; (*said)++)
        fprintf(err, "merge: %s\n", r->lines[*said]);
}

/* Reads, reviews (--strict: any warning writes nothing) and writes. */
static int run_merge(const dt_merge_request *req, bool strict, FILE *err)
{
    dt_merge_result r;
    dt_merge *m;
    size_t said = 0;
    int rc = dt__rd_merge_open(req, &m, &r);
    print_said(&r, &said, rc, err);
    if (rc == 0 && r.warnings && strict) {
        fprintf(err, "merge: --strict: %d warning%s: nothing written\n", r.warnings, r.warnings == 1 ? "" : "s");
        rc = 1;
    } else if (rc == 0) {
        rc = dt__rd_merge_write(m, &r);
        print_said(&r, &said, rc, err);
    }
    if (rc == 0) {
        fprintf(err, "merge: wrote %s: %d trace%s of %d process%s, %" PRIu64 " events\n", req->out_path, r.traces,
                r.traces == 1 ? "" : "s", r.processes, r.processes == 1 ? "" : "es", r.events);
        if (req->perfetto && (r.pf_left_out || r.pf_flows_left_out))
            fprintf(err, "merge: Perfetto output: %" PRIu64 " slices; left out %" PRIu64 " events that are not "
                         "complete events or metadata (instant, counter, async) and %" PRIu64 " flow ends at no "
                         "slice's start\n", r.pf_slices, r.pf_left_out, r.pf_flows_left_out);
        fprintf(err, "merge: clocks: %s\n", r.agreement);
    }
    dt__rd_merge_close(m);
    dt__rd_merge_result_free(&r);
    return rc;
}

int dt__merge_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *out_path = NULL, *format = NULL;
    bool strict = false;
    const char **paths = calloc((size_t)(unsigned)(argc > 0 ? argc : 0) + 1, sizeof *paths);
    int n = 0;
    if (!paths) {
        fprintf(err, "merge: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            merge_usage(out);
            free(paths);
            return 0;
        }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            out_path = argv[++i];
        } else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
            format = argv[++i];
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(err, "merge: unknown option %s\n", a);
            merge_usage(err);
            free(paths);
            return 2;
        } else {
            paths[n++] = a;
        }
    }
    if (!out_path || n == 0 || n > DT_MERGE_MAX_INPUTS) {
        if (n > DT_MERGE_MAX_INPUTS)
            fprintf(err, "merge: at most %d inputs\n", DT_MERGE_MAX_INPUTS);
        else
            fprintf(err, "merge: %s\n", !out_path ? "-o OUT is required" : "no input trace given");
        merge_usage(err);
        free(paths);
        return 2;
    }
    dt_merge_request req = {.out_path = out_path, .inputs = paths, .ninputs = n};
    if (output_format(out_path, format, &req.gzip, &req.perfetto, err) != 0) {
        free(paths);
        return 2;
    }
    int rc = run_merge(&req, strict, err);
    free(paths);
    return rc;
}

static void on_signal(int sig)
{
    dt__atomic_file_abandon();
    _exit(128 + sig);
}

int dt__cli_merge(int argc, char **argv)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[k], &sa, NULL);
    }
    return dt__merge_main(argc, argv, stdout, stderr);
}
