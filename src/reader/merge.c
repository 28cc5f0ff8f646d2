/*
 * `devtrace merge`: the command (merge.h says how it merges).
 */
#include "reader/merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/gzip.h"
#include "format/formats.h"
#include "reader/pf_convert.h"

typedef struct merge_job {
    merger *m;
    const char *out_path;
    char agreement[1024];
    dt_rd_pf_stats pf; /* with --format perfetto */
} merge_job;

/* The capture window, once, on the first rank's process. */
static void write_capture(merger *m, dt_out *o)
{
    int64_t pid = m->in[m->groups[0].first_input].has_main_pid ? m->in[m->groups[0].first_input].main_pid : 0;
    out_text(o, m->first_event ? "\n" : ",\n");
    out_text(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
    out_i64(o, pid);
    out_text(o, ",\"tid\":0,\"ts\":");
    dt_rd_merge_out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"args\":{\"name\":\"devtrace capture\"}},\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace "
                "capture\",\"pid\":");
    out_i64(o, pid);
    out_text(o, ",\"tid\":0,\"ts\":");
    dt_rd_merge_out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"dur\":");
    dt_rd_merge_out_us3(o, m->window_end - m->window_start);
    out_text(o, ",\"args\":{}}");
}

/* The merged trace as Perfetto packets: each group (a rank's process) is
   written as JSON to a temporary file, then converted row by row
   (pf_convert.c), so that memory follows the largest group. */
static int write_merged_perfetto(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    pf_trace *t = dt_pf_trace_open(o, (uint64_t)(m->window_start < 0 ? 0 : m->window_start));
    if (!t)
        return ENOMEM;
    const char *dir = getenv("TMPDIR");
    int err = 0;
    for (int gi = 0; gi < m->ngroups && !err; gi++) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s/devtrace-merge-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = mkstemp(tmp);
        if (fd < 0) {
            err = errno;
            break;
        }
        unlink(tmp); /* nothing is left behind, however merge ends: read back through the descriptor */
        snprintf(tmp, sizeof tmp, "/proc/self/fd/%d", fd);
        dt_out go;
        if (dt_out_init(&go, fd, 0, 1, 1u << 20) != 0) {
            err = ENOMEM;
        } else {
            out_text(&go, "{\"baseTimeNanoseconds\": ");
            out_i64(&go, m->base_ns);
            out_text(&go, ",\n\"traceEvents\": [");
            m->first_event = true;
            if (dt_rd_merge_write_group(m, &go, gi) != 0)
                err = m->oom ? ENOMEM : (go.err ? go.err : EIO);
            if (gi == 0)
                write_capture(m, &go);
            out_text(&go, "\n]}\n");
            int fin = dt_out_finish(&go);
            dt_out_free(&go);
            if (!err)
                err = fin;
        }
        char msg[512];
        if (!err && (err = dt_rd_pf_convert(t, tmp, &j->pf, msg, sizeof msg)) != 0)
            fprintf(m->err, "merge: converting to Perfetto: %s\n", msg);
        close(fd);
    }
    int close_err = dt_pf_trace_close(t);
    return err ? err : close_err;
}

static int write_merged(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    out_text(o, "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [");
    dt_rd_merge_write_devices(m, o);
    out_text(o, "],\n");
    if (dt_rd_merge_common_host(m)) {
        out_text(o, "\"host_name\": ");
        out_str(o, dt_rd_merge_common_host(m));
        out_text(o, ",\n");
    }
    out_text(o, "\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ");
    out_i64(o, m->base_ns);
    out_text(o, ",\n\"traceEvents\": [");
    m->first_event = true;
    for (int gi = 0; gi < m->ngroups; gi++)
        if (dt_rd_merge_write_group(m, o, gi) != 0)
            return m->oom ? ENOMEM : (o->err ? o->err : EIO);
    write_capture(m, o);
    out_text(o, "\n],\n");
    dt_rd_merge_write_devtrace_key(m, o, j->agreement);
    out_text(o, ",\n\"traceName\": ");
    out_str(o, j->out_path);
    out_text(o, "\n}\n");
    return o->err;
}

/* What merge accepts but a user should hear of: the same file given twice,
   two traces claiming one rank, a negative rank, and what an input holds
   that breaks the trace format (carried over as written). Each is said;
   the number said is returned (--strict then writes nothing). */
static int review_inputs(const merger *m)
{
    int problems = 0;
    for (int i = 0; i < m->nin; i++) {
        const input *a = &m->in[i];
        bool twice = false;
        for (int j = 0; j < i && !twice; j++) {
            const input *b = &m->in[j];
            if (a->ino && a->dev == b->dev && a->ino == b->ino) {
                if (strcmp(a->path, b->path) == 0)
                    fprintf(m->err, "merge: warning: %s is given twice: its events are written twice\n", a->path);
                else
                    fprintf(m->err, "merge: warning: %s is the same file as %s: its events are written twice\n",
                            a->path, b->path);
                problems++;
                twice = true;
            } else if (a->sum.has_rank && b->sum.has_rank && a->sum.rank == b->sum.rank && !dt_rd_merge_same_process(a, b)) {
                fprintf(m->err, "merge: warning: %s and %s both claim rank %" PRId64 " (distributedInfo)\n", b->path,
                        a->path, a->sum.rank);
                problems++;
            }
        }
        if (a->sum.unusable_rank) {
            fprintf(m->err, "merge: warning: %s claims rank %s (distributedInfo): a rank is a whole number, 0 or "
                            "more; merged as a trace without a rank\n", a->path, a->sum.unusable_rank);
            problems++;
        }
        if (a->sum.has_rank && a->sum.rank < 0) {
            fprintf(m->err, "merge: warning: %s claims rank %" PRId64 " (distributedInfo): a rank is 0 or more\n",
                    a->path, a->sum.rank);
            problems++;
        }
        /* a flow with one side only is a known property of torch.profiler's
           traces (Kineto cuts flows at the capture window's edge), as check
           says: said, not a warning; in devtrace's own traces it is one */
        uint64_t broken = a->broken_flows + (a->devtrace ? a->cut_flows : 0);
        if (a->negative_durations || broken) {
            fprintf(m->err, "merge: warning: %s: carried over as written:", a->path);
            if (a->negative_durations)
                fprintf(m->err, " %" PRIu64 " complete event%s with a negative duration%s", a->negative_durations,
                        a->negative_durations == 1 ? "" : "s", broken ? "," : "");
            if (broken)
                fprintf(m->err, " %" PRIu64 " flow id%s without exactly one start and one finish", broken,
                        broken == 1 ? "" : "s");
            fputc('\n', m->err);
            problems++;
        }
        if (!a->devtrace && a->cut_flows)
            fprintf(m->err,
                    "merge: %s: %" PRIu64 " flow id%s with one side only, carried over as written (a known property "
                    "of torch.profiler's traces: Kineto cuts flows at the capture window's edge)\n",
                    a->path, a->cut_flows, a->cut_flows == 1 ? "" : "s");
    }
    return problems;
}

static void merge_usage(FILE *f)
{
    fprintf(f, "usage: devtrace merge -o OUT [--format json|json.gz|perfetto|perfetto.gz] [--strict] IN...\n"
               "\n"
               "Brings traces of one job together into one trace: per-rank devtrace traces\n"
               "(each rank's processes and devices named \"rank N ...\"), and a torch.profiler\n"
               "trace with the devtrace trace of the same process (each runtime call and its\n"
               "device work take the External id of the cpu_op that launched it). Inputs are\n"
               "JSON or gzip JSON files, read twice each (a FIFO, a pipe or \"-\" for standard\n"
               "input is copied once to a temporary file); OUT is written atomically, in the\n"
               "format its name asks for (.json, .json.gz, .pftrace, .pftrace.gz) unless\n"
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
               "(--strict) a warning, 2 usage (OUT is an input).\n");
}

/* OUT's format, from its name or --format: the one place merge chooses
   among the output formats (JSON or Perfetto, gzip or not). 0, or 2
   (usage) said on err. */
static int output_format(const char *out_path, const char *format, bool *gzip, bool *perfetto, FILE *err)
{
    const dt_fmt *w = format ? dt_fmt_by_name(format) : dt_fmt_of((int)dt_format_of_path(out_path, DT_FORMAT_JSON));
    if (!w) {
        fprintf(err, "merge: --format must be json, json.gz, perfetto or perfetto.gz, not %s\n", format);
        return 2;
    }
    *gzip = w->gzip;
    *perfetto = w->plain == DT_FORMAT_PERFETTO;
    if (!dt_fmt_available(w)) {
        fprintf(err, "merge: %s is gzip, but %s\n", out_path, DT_NO_GZIP_MESSAGE);
        return 2;
    }
    return 0;
}

int dt_merge_main(int argc, char **argv, FILE *out, FILE *err)
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
    if (!out_path || n == 0 || n > MAX_INPUTS) {
        if (n > MAX_INPUTS)
            fprintf(err, "merge: at most %d inputs\n", MAX_INPUTS);
        else
            fprintf(err, "merge: %s\n", !out_path ? "-o OUT is required" : "no input trace given");
        merge_usage(err);
        free(paths);
        return 2;
    }
    bool gzip, perfetto;
    if (output_format(out_path, format, &gzip, &perfetto, err) != 0) {
        free(paths);
        return 2;
    }
    const char *why;
    if (dt_output_kind_of(out_path, &why) == DT_OUTPUT_REFUSED) {
        fprintf(err, "merge: cannot write %s: %s\n", out_path, why);
        free(paths);
        return 1;
    }
    struct stat out_st;
    bool out_exists = stat(out_path, &out_st) == 0;
    merger m;
    memset(&m, 0, sizeof m);
    m.err = err;
    m.nin = n;
    m.in = calloc((size_t)(unsigned)n, sizeof *m.in);
    int rc = 1;
    merge_job job = {&m, out_path, "", {0, 0, 0}};
    if (!m.in)
        goto done;
    for (int i = 0; i < n; i++) {
        struct stat st;
        m.in[i].path = paths[i];
        if (strcmp(paths[i], "-") == 0) {
            if (dt_rd_merge_spool_input(&m, &m.in[i]) != 0)
                goto done;
            continue;
        }
        if (stat(paths[i], &st) != 0)
            continue; /* said when it is read */
        m.in[i].dev = st.st_dev;
        m.in[i].ino = st.st_ino;
        if (out_exists && S_ISREG(out_st.st_mode) && st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino) {
            fprintf(err, "merge: %s is also an input%s%s: it would be replaced while being read; name another "
                         "output\n", out_path, strcmp(out_path, paths[i]) ? " as " : "",
                    strcmp(out_path, paths[i]) ? paths[i] : "");
            rc = 2;
            goto done;
        }
        /* a FIFO, a pipe or a terminal gives its bytes once: both passes read a copy */
        if ((S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)) &&
            dt_rd_merge_spool_input(&m, &m.in[i]) != 0)
            goto done;
    }
    if (dt_rd_merge_index_inputs(&m) != 0)
        goto done;
    int problems = review_inputs(&m);
    if (problems && strict) {
        fprintf(err, "merge: --strict: %d warning%s: nothing written\n", problems, problems == 1 ? "" : "s");
        goto done;
    }
    if (dt_rd_merge_make_groups(&m) != 0) {
        fprintf(err, "merge: out of memory\n");
        goto done;
    }
    dt_rd_merge_plan_ids(&m);
    dt_rd_merge_clock_agreement(&m, job.agreement, sizeof job.agreement);
    m.spill_attr = tmpfile();
    m.spill_parents = tmpfile();
    if (!m.spill_attr || !m.spill_parents) {
        fprintf(err, "merge: cannot create a temporary file: %s\n", strerror(errno));
        goto done;
    }
    int werr = dt_write_file_atomic(out_path, gzip, perfetto ? write_merged_perfetto : write_merged, &job);
    if (werr != 0) {
        fprintf(err, "merge: cannot write %s: %s\n", out_path, werr == ENOMEM ? "out of memory" : strerror(werr));
        goto done;
    }
    fprintf(err, "merge: wrote %s: %d trace%s of %d process%s, %" PRIu64 " events\n", out_path, n, n == 1 ? "" : "s",
            m.ngroups, m.ngroups == 1 ? "" : "es", m.events_written);
    if (perfetto && (job.pf.left_out || job.pf.flows_left_out))
        fprintf(err, "merge: Perfetto output: %" PRIu64 " slices; left out %" PRIu64 " events that are not complete "
                     "events or metadata (instant, counter, async) and %" PRIu64 " flow ends at no slice's start\n",
                job.pf.slices, job.pf.left_out, job.pf.flows_left_out);
    fprintf(err, "merge: clocks: %s\n", job.agreement);
    rc = 0;
done:
    for (int i = 0; m.in && i < n; i++) {
        if (m.in[i].spool_path[0])
            close(m.in[i].spool_fd);
        dt_rd_summary_free(&m.in[i].sum);
        for (size_t k = 0; k < m.in[i].ndevices; k++)
            free(m.in[i].devices[k]);
        free(m.in[i].devices);
        free(m.in[i].device_ids);
    }
    if (m.spill_attr)
        fclose(m.spill_attr);
    if (m.spill_parents)
        fclose(m.spill_parents);
    dt_u64map_free(&m.corr_ext);
    dt_u64map_free(&m.attr);
    dt_rd_merge_reset_rows(&m);
    free(m.ops);
    free(m.in);
    free(m.groups);
    free(paths);
    return rc;
}
