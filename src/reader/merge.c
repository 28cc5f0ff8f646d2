/*
 * `devtrace merge` (merge.h says how it merges): the inputs read and
 * reviewed, the merged trace written, and what merge says on the way, as
 * the result the command prints (src/cli/merge.c).
 */
#include "reader/merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/pf_convert.h"
#include "reader/rd_internal.h"

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
    dt__rd_merge_out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"args\":{\"name\":\"devtrace capture\"}},\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace "
                "capture\",\"pid\":");
    out_i64(o, pid);
    out_text(o, ",\"tid\":0,\"ts\":");
    dt__rd_merge_out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"dur\":");
    dt__rd_merge_out_us3(o, m->window_end - m->window_start);
    out_text(o, ",\"args\":{}}");
}

/* The merged trace as Perfetto packets: each group (a rank's process) is
   written as JSON to a temporary file, then converted row by row
   (pf_convert.c), so that memory follows the largest group. */
static int write_merged_perfetto(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    pf_trace *t = dt__pf_trace_open(o, (uint64_t)(m->window_start < 0 ? 0 : m->window_start));
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
        if (dt__out_init(&go, fd, 0, 1, 1u << 20) != 0) {
            err = ENOMEM;
        } else {
            out_text(&go, "{\"baseTimeNanoseconds\": ");
            out_i64(&go, m->base_ns);
            out_text(&go, ",\n\"traceEvents\": [");
            m->first_event = true;
            if (dt__rd_merge_write_group(m, &go, gi) != 0)
                err = m->oom ? ENOMEM : (go.err ? go.err : EIO);
            if (gi == 0)
                write_capture(m, &go);
            out_text(&go, "\n]}\n");
            int fin = dt__out_finish(&go);
            dt__out_free(&go);
            if (!err)
                err = fin;
        }
        char msg[512];
        if (!err && (err = dt__rd_pf_convert(t, tmp, &j->pf, msg, sizeof msg)) != 0)
            dt__rd_merge_say(m, "converting to Perfetto: %s", msg);
        close(fd);
    }
    int close_err = dt__pf_trace_close(t);
    return err ? err : close_err;
}

static int write_merged(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    out_text(o, "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [");
    dt__rd_merge_write_devices(m, o);
    out_text(o, "],\n");
    if (dt__rd_merge_common_host(m)) {
        out_text(o, "\"host_name\": ");
        out_str(o, dt__rd_merge_common_host(m));
        out_text(o, ",\n");
    }
    out_text(o, "\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ");
    out_i64(o, m->base_ns);
    out_text(o, ",\n\"traceEvents\": [");
    m->first_event = true;
    for (int gi = 0; gi < m->ngroups; gi++)
        if (dt__rd_merge_write_group(m, o, gi) != 0)
            return m->oom ? ENOMEM : (o->err ? o->err : EIO);
    write_capture(m, o);
    out_text(o, "\n],\n");
    dt__rd_merge_write_devtrace_key(m, o, j->agreement);
    out_text(o, ",\n\"traceName\": ");
    out_str(o, j->out_path);
    out_text(o, "\n}\n");
    return o->err;
}

void dt__rd_merge_say(merger *m, const char *fmt, ...)
{
    dt_merge_result *r = m->said;
    va_list ap;
    va_start(ap, fmt);
    if (dt__rd_line_at(&r->lines, &r->lines_cap, r->nlines, fmt, ap) == 0 && r->lines[r->nlines])
        r->nlines++;
    va_end(ap);
}

/* What merge accepts but a user should hear of: the same file given twice,
   two traces claiming one rank, a negative rank, and what an input holds
   that breaks the trace format (carried over as written). Each is said;
   the number of warnings is returned. */
static int review_inputs(merger *m)
{
    int problems = 0;
    for (int i = 0; i < m->nin; i++) {
        const input *a = &m->in[i];
        bool twice = false;
        for (int j = 0; j < i && !twice; j++) {
            const input *b = &m->in[j];
            if (a->ino && a->dev == b->dev && a->ino == b->ino) {
                if (strcmp(a->path, b->path) == 0)
                    dt__rd_merge_say(m, "warning: %s is given twice: its events are written twice", a->path);
                else
                    dt__rd_merge_say(m, "warning: %s is the same file as %s: its events are written twice", a->path,
                                    b->path);
                problems++;
                twice = true;
            } else if (a->sum.has_rank && b->sum.has_rank && a->sum.rank == b->sum.rank && !dt__rd_merge_same_process(a, b)) {
                dt__rd_merge_say(m, "warning: %s and %s both claim rank %" PRId64 " (distributedInfo)", b->path, a->path,
                                a->sum.rank);
                problems++;
            }
        }
        if (a->sum.unusable_rank) {
            dt__rd_merge_say(m, "warning: %s claims rank %s (distributedInfo): a rank is a whole number, 0 or more; "
                               "merged as a trace without a rank", a->path, a->sum.unusable_rank);
            problems++;
        }
        if (a->sum.has_rank && a->sum.rank < 0) {
            dt__rd_merge_say(m, "warning: %s claims rank %" PRId64 " (distributedInfo): a rank is 0 or more", a->path,
                            a->sum.rank);
            problems++;
        }
        /* a flow with one side only is a known property of torch.profiler's
           traces (Kineto cuts flows at the capture window's edge), as check
           says: said, not a warning; in devtrace's own traces it is one */
        uint64_t broken = a->broken_flows + (a->devtrace ? a->cut_flows : 0);
        if (a->negative_durations || broken) {
            char durations[128] = "", flows[128] = "";
            if (a->negative_durations)
                snprintf(durations, sizeof durations, " %" PRIu64 " complete event%s with a negative duration%s",
                         a->negative_durations, a->negative_durations == 1 ? "" : "s", broken ? "," : "");
            if (broken)
                snprintf(flows, sizeof flows, " %" PRIu64 " flow id%s without exactly one start and one finish",
                         broken, broken == 1 ? "" : "s");
            dt__rd_merge_say(m, "warning: %s: carried over as written:%s%s", a->path, durations, flows);
            problems++;
        }
        if (!a->devtrace && a->cut_flows)
            dt__rd_merge_say(m, "%s: %" PRIu64 " flow id%s with one side only, carried over as written (a known "
                               "property of torch.profiler's traces: Kineto cuts flows at the capture window's edge)",
                            a->path, a->cut_flows, a->cut_flows == 1 ? "" : "s");
    }
    return problems;
}

struct dt_merge {
    merger m;
    merge_job job;
    bool gzip, perfetto;
};

int dt__rd_merge_open(const dt_merge_request *req, dt_merge **out, dt_merge_result *result)
{
    memset(result, 0, sizeof *result);
    dt_merge *d = calloc(1, sizeof *d);
    *out = d;
    if (!d)
        return 1;
    merger *mm = &d->m;
    mm->said = result;
    d->gzip = req->gzip;
    d->perfetto = req->perfetto;
    const char *out_path = req->out_path;
    int n = req->ninputs;
    const char *why;
    if (dt__output_kind_of(out_path, &why) == DT_OUTPUT_REFUSED) {
        dt__rd_merge_say(mm, "cannot write %s: %s", out_path, why);
        return 1;
    }
    struct stat out_st;
    bool out_exists = stat(out_path, &out_st) == 0;
    mm->nin = n;
    mm->in = calloc((size_t)(unsigned)(n > 0 ? n : 0) + 1, sizeof *mm->in);
    d->job = (merge_job){mm, out_path, "", {0, 0, 0}};
    if (!mm->in) {
        mm->nin = 0;
        return 1;
    }
    for (int i = 0; i < n; i++) {
        struct stat st;
        mm->in[i].path = req->inputs[i];
        if (strcmp(req->inputs[i], "-") == 0) {
            if (dt__rd_merge_spool_input(mm, &mm->in[i]) != 0)
                return 1;
            continue;
        }
        if (stat(req->inputs[i], &st) != 0)
            continue; /* said when it is read */
        mm->in[i].dev = st.st_dev;
        mm->in[i].ino = st.st_ino;
        if (out_exists && S_ISREG(out_st.st_mode) && st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino) {
            dt__rd_merge_say(mm, "%s is also an input%s%s: it would be replaced while being read; name another "
                                "output", out_path, strcmp(out_path, req->inputs[i]) ? " as " : "",
                            strcmp(out_path, req->inputs[i]) ? req->inputs[i] : "");
            return 2;
        }
        /* a FIFO, a pipe or a terminal gives its bytes once: both passes read a copy */
        if ((S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)) &&
            dt__rd_merge_spool_input(mm, &mm->in[i]) != 0)
            return 1;
    }
    if (dt__rd_merge_index_inputs(mm) != 0)
        return 1;
    result->warnings = review_inputs(mm);
    return 0;
}

int dt__rd_merge_write(dt_merge *d, dt_merge_result *result)
{
    merger *m = &d->m;
    m->said = result;
    if (dt__rd_merge_make_groups(m) != 0) {
        dt__rd_merge_say(m, "out of memory");
        return 1;
    }
    dt__rd_merge_plan_ids(m);
    dt__rd_merge_clock_agreement(m, d->job.agreement, sizeof d->job.agreement);
    m->spill_attr = tmpfile();
    m->spill_parents = tmpfile();
    if (!m->spill_attr || !m->spill_parents) {
        dt__rd_merge_say(m, "cannot create a temporary file: %s", strerror(errno));
        return 1;
    }
    const char *out_path = d->job.out_path;
    int werr = dt__write_file_atomic(out_path, d->gzip, d->perfetto ? write_merged_perfetto : write_merged, &d->job);
    if (werr != 0) {
        dt__rd_merge_say(m, "cannot write %s: %s", out_path, werr == ENOMEM ? "out of memory" : strerror(werr));
        return 1;
    }
    result->traces = m->nin;
    result->processes = m->ngroups;
    result->events = m->events_written;
    snprintf(result->agreement, sizeof result->agreement, "%s", d->job.agreement);
    result->pf_slices = d->job.pf.slices;
    result->pf_left_out = d->job.pf.left_out;
    result->pf_flows_left_out = d->job.pf.flows_left_out;
    return 0;
}

void dt__rd_merge_close(dt_merge *d)
{
    if (!d)
        return;
    merger *m = &d->m;
    for (int i = 0; m->in && i < m->nin; i++) {
        if (m->in[i].spool_path[0])
            close(m->in[i].spool_fd);
        dt__rd_summary_free(&m->in[i].sum);
        for (size_t k = 0; k < m->in[i].ndevices; k++)
            free(m->in[i].devices[k]);
        free(m->in[i].devices);
        free(m->in[i].device_ids);
    }
    if (m->spill_attr)
        fclose(m->spill_attr);
    if (m->spill_parents)
        fclose(m->spill_parents);
    dt__u64map_free(&m->corr_ext);
    dt__u64map_free(&m->attr);
    dt__rd_merge_reset_rows(m);
    free(m->ops);
    free(m->in);
    free(m->groups);
    free(d);
}

void dt__rd_merge_result_free(dt_merge_result *result)
{
    for (size_t i = 0; i < result->nlines; i++)
        free(result->lines[i]);
    free(result->lines);
    result->lines = NULL;
    result->nlines = result->lines_cap = 0;
}
