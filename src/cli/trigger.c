/* devtrace trigger: asks processes that listen for devtrace requests (over
   the control channel, src/protocol/control_client.h) to capture a window or dump
   their flight recorder into a trace this command opens and names; --list
   shows the listeners. No signal is ever sent. */
#include "cli/trigger.h"

#include "base/alloc.h"
#include "base/atomic_file.h"
#include "base/log.h"
#include "base/os.h"
#include "cli/output.h"
#include "devtrace/devtrace.h"
#include "protocol/control_client.h"
#include "protocol/record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_TIMEOUT_MS 2000
#define DEFAULT_DURATION_S 1.0
#define DEFAULT_TIMEOUT_S 60.0
/* the capture's own time beyond its window and timeout: arming, flushing,
   writing the trace */
#define REPLY_MARGIN_MS 2000
#define USAGE_STATUS 2
/* a trace written, its window cut short: the lowest failure, so that the
   highest status of several processes is still the worst outcome */
#define PARTIAL_STATUS 1

static void trigger_usage(FILE *f)
{
    fprintf(f,
            "usage: devtrace trigger PID|--all|--job [JOB] [--duration SECONDS | --steps N]\n"
            "                        [--step-multiple M] [--timeout SECONDS] [-o FILE] [--format FORMAT]\n"
            "       devtrace trigger PID|--all|--job [JOB] --dump [-o FILE] [--format FORMAT]\n"
            "       devtrace trigger --list\n"
            "\n"
            "Asks a process that listens for devtrace requests (started by 'devtrace record\n"
            "--on-demand', DEVTRACE_ON_DEMAND=1, dt_control_listen(), devtrace.listen(),\n"
            "devtrace.torch.listen(), or a flight recorder: 'devtrace record --flight-recorder',\n"
            "DEVTRACE_FLIGHT_RECORDER, devtrace.profile(flight_recorder=...)) to\n"
            "capture what its accelerators do for a window and write it as a trace, then says\n"
            "where the trace went and what was lost, as 'record' does. This command opens the\n"
            "trace file and passes its descriptor: the traced process never opens a path. The\n"
            "trace is written to a temporary file beside FILE and renamed to FILE only when the\n"
            "process says it was written whole; a capture that fails, or a trigger interrupted\n"
            "by SIGINT or SIGTERM, leaves no file.\n"
            "\n"
            "  PID                 the listening process (see --list)\n"
            "  --all               every listening process of this user\n"
            "  --job [JOB]         every listening process of one job on this machine: JOB as\n"
            "                      --list shows it (slurm:ID.STEP, torchelastic:RUN@ADDR:PORT,\n"
            "                      master:ADDR:PORT), the part after its source, a Slurm job\n"
            "                      (all its steps) or a torchelastic run id; without JOB, the\n"
            "                      job of this shell (SLURM_JOB_ID, or TORCHELASTIC_RUN_ID and\n"
            "                      MASTER_ADDR:MASTER_PORT), else the one job the listeners\n"
            "                      announce; JOB that names several jobs is an error (two\n"
            "                      jobs are never asked, nor merged, together). On many\n"
            "                      machines, run it on each (srun, pdsh): see --steps\n"
            "  --duration SECONDS  capture a window of this length (default 1)\n"
            "  --steps N           capture N steps, from a step boundary (a dt_step() call,\n"
            "                      devtrace.step() or a ProfilerStep#N range); N at most\n"
            "                      1000000000\n"
            "  --step-multiple M   start at the next step that is a multiple of M; with --all\n"
            "                      or --job it defaults to N, so that every rank captures the\n"
            "                      same steps, on every machine where a trigger asks between\n"
            "                      the same two multiples (a larger M leaves more time)\n"
            "  --timeout SECONDS   how long the process waits for the steps, or for the\n"
            "                      vendor's last records (default 60); this command waits for\n"
            "                      the window, the timeout and a margin\n"
            "  --dump              write the flight recorder's window (record --flight-recorder)\n"
            "  -o, --output FILE   the trace (default devtrace.rank<R>.json, or devtrace.<PID>.json\n"
            "                      when the process has no rank); with --all or --job each\n"
            "                      trace is FILE with rank<R> (or the pid) before its suffix\n");
    dt__cli_print_format_option(f);
    fprintf(f,
            "  --list              list the listening processes of this user (pid, program,\n"
            "                      rank, world size, backend, state: idle, armed or capturing,\n"
            "                      and job); a socket left by a process that is gone is removed\n"
            "\n"
            "The listeners are found by their sockets in the control directory\n"
            "($XDG_RUNTIME_DIR/devtrace, else /run/user/<uid>/devtrace, else /tmp/devtrace-<uid>);\n"
            "a socket of a process that is gone is removed, never trusted. Several processes\n"
            "are asked at once; each gets a line, and 'devtrace merge' takes their traces.\n"
            "\n"
            "Exit status (with several processes, the highest of theirs):\n"
            "  0   every trace was written\n"
            "  1   partial: a trace was written and kept, but its window was cut short (the\n"
            "      steps did not come within --timeout, or the process stopped listening or\n"
            "      ended during the window); its line says why\n"
            "  2   usage error, or FILE cannot be written (nothing is asked)\n"
            "  3   no such listener: no process of this user listens with that pid (or, with\n"
            "      --all or --job, none matches)\n"
            "  4   busy: the process is already capturing or dumping\n"
            "  5   cannot arm: the vendor cannot be armed now (for example, another profiler\n"
            "      holds it)\n"
            "  6   timeout: the window's first step did not come in time, or no reply came\n"
            "  7   bad request: the process refused the request as malformed\n"
            "  8   version: the process speaks another version of the protocol\n"
            "  9   untrusted: the socket's process runs as another user\n"
            "  10  I/O: the connection broke (the process crashed), or no trace was written\n"
            "      (the process stopped listening or ended before the window began)\n");
}

/* ------------------------------------------------------------------ */
/* --list                                                               */
/* ------------------------------------------------------------------ */
static void print_count(int64_t v)
{
    if (v < 0) printf(" %-6s", "-");
    else printf(" %-6lld", (long long)v);
}

static int list_listeners(void)
{
    dt_ctl_msg *list = NULL;
    size_t count = 0;
    if (dt__ctl_list(LIST_TIMEOUT_MS, &list, &count) != DT_OK) {
        fprintf(stderr, "devtrace trigger: %s\n", dt_last_error());
        return 1;
    }
    char dir[DT_CTL_DIR_CAP] = "";
    dt__ctl_dir(dir, sizeof dir);
    if (count == 0) {
        fprintf(stderr, "devtrace trigger: no process of this user listens for requests (in %s)\n", dir);
        dt__free(list);
        return 0;
    }
    printf("%-8s %-16s %-6s %-6s %-10s %-9s %s\n", "PID", "PROGRAM", "RANK", "WORLD", "BACKEND", "STATE", "JOB");
    for (size_t i = 0; i < count; i++) {
        const dt_ctl_msg *m = &list[i];
        printf("%-8lld %-16s", (long long)m->pid, m->program[0] ? m->program : "-");
        print_count(m->rank);
        print_count(m->world_size);
        printf(" %-10s %-9s %s\n", m->backend[0] ? m->backend : "-", dt__ctl_state_name(m->state),
               m->job[0] ? m->job : "-");
    }
    dt__free(list);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Outcomes                                                             */
/* ------------------------------------------------------------------ */
/* The exit status and the headline of each outcome (the table of the
   usage text and docs/on-demand.md). */
static const struct outcome {
    int status;
    const char *headline;
} outcomes[] = {
    [DT_CTL_SUCCESS] = {0, "ok"},
    [DT_CTL_NO_SUCH_LISTENER] = {3, "no such listener"},
    [DT_CTL_BUSY] = {4, "busy: a capture or dump is already running there"},
    [DT_CTL_CANNOT_ARM] = {5, "cannot arm the vendor now"},
    [DT_CTL_TIMEOUT] = {6, "timed out"},
    [DT_CTL_BAD_REQUEST] = {7, "the request was refused as malformed"},
    [DT_CTL_VERSION_MISMATCH] = {8, "it speaks another version of the control protocol"},
    [DT_CTL_UNTRUSTED] = {9, "not trusted: it runs as another user"},
    [DT_CTL_IO] = {10, "no trace"},
};

static const struct outcome *outcome_of(dt_ctl_code code)
{
    return (unsigned)code < sizeof outcomes / sizeof *outcomes ? &outcomes[code] : &outcomes[DT_CTL_IO];
}

/* ------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------ */
typedef struct options {
    long pid;                  /* > 0: one process */
    int all, job, dump, list;
    const char *job_name;      /* --job JOB */
    double duration_s, timeout_s;
    uint64_t steps, step_multiple;
    int have_duration, have_timeout;
    const char *output, *format;
} options;

static int parse_seconds(const char *opt, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v <= 0 || v > DT_CTL_MAX_WINDOW_NS / 1e9) {
        fprintf(stderr, "devtrace trigger: %s takes a number of seconds above 0 and at most %.0f, not %s\n", opt,
                DT_CTL_MAX_WINDOW_NS / 1e9, text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_count(const char *opt, const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || v == 0 || v > DT_CTL_MAX_STEPS) {
        fprintf(stderr, "devtrace trigger: %s takes a whole number from 1 to %llu, not %s\n", opt,
                (unsigned long long)DT_CTL_MAX_STEPS, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* 0, 1 after --help, or -1 after a usage error was said. */
static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->duration_s = DEFAULT_DURATION_S;
    o->timeout_s = DEFAULT_TIMEOUT_S;
    int targets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            trigger_usage(stdout);
            return 1;
        }
        if (strcmp(a, "--list") == 0) o->list = 1;
        else if (strcmp(a, "--all") == 0) o->all = 1, targets++;
        else if (strcmp(a, "--dump") == 0) o->dump = 1;
        else if (strcmp(a, "--job") == 0) {
            o->job = 1, targets++;
            if (v && v[0] != '-') o->job_name = argv[++i];
        } else if (strncmp(a, "--job=", 6) == 0) o->job = 1, targets++, o->job_name = a + 6;
        else if (!v && (strcmp(a, "--duration") == 0 || strcmp(a, "--steps") == 0 ||
                        strcmp(a, "--step-multiple") == 0 || strcmp(a, "--timeout") == 0 || strcmp(a, "-o") == 0 ||
                        strcmp(a, "--output") == 0 || strcmp(a, "--format") == 0)) {
            fprintf(stderr, "devtrace trigger: %s needs a value\n", a);
            return -1;
        } else if (strcmp(a, "--duration") == 0) {
            if (parse_seconds(a, argv[++i], &o->duration_s) != 0) return -1;
            o->have_duration = 1;
        } else if (strcmp(a, "--timeout") == 0) {
            if (parse_seconds(a, argv[++i], &o->timeout_s) != 0) return -1;
            o->have_timeout = 1;
        } else if (strcmp(a, "--steps") == 0) {
            if (parse_count(a, argv[++i], &o->steps) != 0) return -1;
        } else if (strcmp(a, "--step-multiple") == 0) {
            if (parse_count(a, argv[++i], &o->step_multiple) != 0) return -1;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) o->output = argv[++i];
        else if (strcmp(a, "--format") == 0) o->format = argv[++i];
        else if (a[0] != '-' && !o->pid) {
            char *end = NULL;
            long pid = strtol(a, &end, 10);
            if (*end || pid <= 0 || pid > INT_MAX) {
                fprintf(stderr, "devtrace trigger: %s is no process id\n", a);
                return -1;
            }
            o->pid = pid;
            targets++;
        } else {
            fprintf(stderr, "devtrace trigger: unexpected argument %s\n", a);
            return -1;
        }
    }
    const char *conflict = NULL;
    if (o->list && (targets || o->dump || o->output || o->steps || o->have_duration))
        conflict = "--list takes no other option";
    else if (!o->list && targets != 1) conflict = "name one target: a PID, --all or --job";
    else if (o->have_duration && o->steps) conflict = "--duration and --steps exclude each other";
    else if (o->step_multiple && !o->steps) conflict = "--step-multiple goes with --steps";
    else if (o->dump && (o->have_duration || o->steps)) conflict = "--dump writes the flight recorder's window: "
                                                                   "no --duration or --steps";
    if (conflict) {
        fprintf(stderr, "devtrace trigger: %s\n", conflict);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Targets                                                              */
/* ------------------------------------------------------------------ */
typedef struct target {
    dt_ctl_msg info; /* its INFO reply: pid, rank, backend, job */
    char path[4096]; /* the trace's final name */
    char tmp[4160];  /* the temporary file beside it; "" when written in place */
    int fd;
    /* the exchange, on its own thread */
    const dt_ctl_msg *request;
    int wait_ms;
    dt_ctl_code rc;
    dt_ctl_msg reply;
    uint64_t waited_ns;
    pthread_t thread;
    int threaded;
} target;

/* The job --job without JOB means: this shell's (its Slurm job, whatever
   the step: a trigger run with srun in the job's allocation is a step of
   its own), else the one the listeners announce. 0, or the exit status
   after saying why. */
static int default_job(const dt_ctl_msg *list, size_t count, char *job, size_t n)
{
    const char *slurm = dt__env("SLURM_JOB_ID");
    if (slurm) snprintf(job, n, "slurm:%s", slurm);
    else dt__ctl_job_id(job, n);
    if (job[0]) return 0;
    for (size_t i = 0; i < count; i++) {
        if (!list[i].job[0]) continue;
        if (!job[0]) snprintf(job, n, "%s", list[i].job);
        else if (strcmp(job, list[i].job) != 0) {
            fprintf(stderr, "devtrace trigger: this shell belongs to no job and the listeners belong to several "
                            "(%s, %s, ...): name one with --job JOB (see --list)\n", job, list[i].job);
            return USAGE_STATUS;
        }
    }
    if (!job[0]) {
        fprintf(stderr, "devtrace trigger: this shell belongs to no job (no SLURM_JOB_ID, TORCHELASTIC_RUN_ID or "
                        "MASTER_ADDR and MASTER_PORT) and no listener announces one\n");
        return outcomes[DT_CTL_NO_SUCH_LISTENER].status;
    }
    return 0;
}

static void say_failure(const target *t, dt_ctl_code rc, const char *text)
{
    char rank[32] = "";
    if (t->info.rank >= 0) snprintf(rank, sizeof rank, " (rank %lld)", (long long)t->info.rank);
    fprintf(stderr, "devtrace trigger: process %lld%s: %s%s%s\n", (long long)t->info.pid, rank,
            outcome_of(rc)->headline, text[0] ? ": " : "", text);
}

/* By rank, those without one last, then by pid: lines and names in order. */
static int by_rank(const void *a, const void *b)
{
    const dt_ctl_msg *x = &((const target *)a)->info, *y = &((const target *)b)->info;
    uint64_t rx = (uint64_t)x->rank, ry = (uint64_t)y->rank; /* -1: last */
    if (rx != ry) return rx < ry ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The targets the options name, each with its INFO; 0, or the exit status
   after saying why. */
static int find_targets(const options *o, target **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    dt_ctl_msg *list = NULL;
    size_t n = 0;
    if (o->pid) {
        list = dt__calloc(1, sizeof *list);
        if (!list) {
            fprintf(stderr, "devtrace trigger: out of memory\n");
            return outcomes[DT_CTL_IO].status;
        }
        dt_ctl_msg info;
        dt__ctl_msg_init(&info, DT_CTL_INFO);
        dt_ctl_code rc = dt__ctl_send((pid_t)o->pid, &info, -1, LIST_TIMEOUT_MS, &list[0]);
        if (rc != DT_CTL_SUCCESS || list[0].type != DT_CTL_INFO) {
            target t = {.info = list[0]};
            t.info.pid = o->pid;
            t.info.rank = -1;
            if (rc == DT_CTL_SUCCESS) rc = DT_CTL_IO;
            say_failure(&t, rc, list[0].text);
            dt__free(list);
            return outcome_of(rc)->status;
        }
        n = 1;
    } else if (dt__ctl_list(LIST_TIMEOUT_MS, &list, &n) != DT_OK) {
        fprintf(stderr, "devtrace trigger: %s\n", dt_last_error());
        return outcomes[DT_CTL_IO].status;
    }
    char job[sizeof list->job] = "";
    if (o->job) {
        if (o->job_name) snprintf(job, sizeof job, "%s", o->job_name);
        else {
            int st = default_job(list, n, job, sizeof job);
            if (st) {
                dt__free(list);
                return st;
            }
        }
    }
    target *t = dt__calloc(n ? n : 1, sizeof *t);
    if (!t) {
        dt__free(list);
        fprintf(stderr, "devtrace trigger: out of memory\n");
        return outcomes[DT_CTL_IO].status;
    }
    size_t k = 0;
    const char *first = NULL, *second = NULL; /* the jobs matched, the first two by name */
    for (size_t i = 0; i < n; i++) {
        if (o->job && !dt__ctl_job_matches(list[i].job, job)) continue;
        t[k++].info = list[i];
        const char *j = list[i].job;
        if (!first || strcmp(j, first) < 0) {
            if (first) second = first;
            first = j;
        } else if (strcmp(j, first) != 0 && (!second || strcmp(j, second) < 0)) {
            second = j;
        }
    }
    if (o->job && second) { /* two jobs are never asked, nor merged, together */
        fprintf(stderr, "devtrace trigger: --job %s names several jobs (%s, %s, ...): name one as --list shows "
                        "it\n", job, first, second);
        dt__free(list);
        dt__free(t);
        return USAGE_STATUS;
    }
    dt__free(list);
    if (k == 0) {
        char dir[DT_CTL_DIR_CAP] = "";
        dt__ctl_dir(dir, sizeof dir);
        if (o->job) fprintf(stderr, "devtrace trigger: no such listener: no process of this user listens in job %s "
                                    "(see --list)\n", job);
        else fprintf(stderr, "devtrace trigger: no such listener: no process of this user listens for requests "
                             "(in %s)\n", dir);
        dt__free(t);
        return outcomes[DT_CTL_NO_SUCH_LISTENER].status;
    }
    qsort(t, k, sizeof *t, by_rank);
    *out = t;
    *count = k;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Output files                                                         */
/* ------------------------------------------------------------------ */
/* Each target's trace name: FILE itself for one process named by its pid
   with -o, else FILE (default devtrace.<suffix>) with rank<R> or the pid before its
   suffix; a name another target has already gets the pid too. */
static void name_outputs(target *t, size_t n, const char *base, int exact)
{
    for (size_t i = 0; i < n; i++) {
        char tag[48];
        if (exact) {
            snprintf(t[i].path, sizeof t[i].path, "%s", base);
            continue;
        }
        if (t[i].info.rank >= 0) snprintf(tag, sizeof tag, "rank%lld", (long long)t[i].info.rank);
        else snprintf(tag, sizeof tag, "%lld", (long long)t[i].info.pid);
        dt__record_tag_path(t[i].path, sizeof t[i].path, base, tag);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(t[j].path, t[i].path) != 0) continue;
            char taken[sizeof t[i].path];
            snprintf(taken, sizeof taken, "%s", t[i].path);
            snprintf(tag, sizeof tag, "%lld", (long long)t[i].info.pid);
            dt__record_tag_path(t[i].path, sizeof t[i].path, taken, tag);
            break;
        }
    }
}

/* Opens where the listener writes: a new temporary file beside the name
   (renamed into place once written), or a device or a FIFO in place.
   0, or -1 after saying why. */
static int open_output(target *t)
{
    const char *why = NULL;
    t->tmp[0] = 0;
    dt_output_kind kind = dt__output_kind_of(t->path, &why);
    if (kind == DT_OUTPUT_REFUSED) {
        fprintf(stderr, "devtrace trigger: cannot write the trace %s: %s\n", t->path, why);
        return -1;
    }
    t->fd = kind == DT_OUTPUT_IN_PLACE ? open(t->path, O_WRONLY | O_NOCTTY | O_CLOEXEC)
                                       : dt__open_beside(t->path, t->tmp, sizeof t->tmp);
    if (t->fd < 0) {
        fprintf(stderr, "devtrace trigger: cannot write the trace %s: %s\n", t->path, strerror(errno));
        t->tmp[0] = 0;
        return -1;
    }
    return 0;
}

static void discard_output(target *t)
{
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    if (t->tmp[0]) unlink(t->tmp);
    t->tmp[0] = 0;
}

/* The written trace into place; DT_CTL_SUCCESS, or DT_CTL_IO with why. */
static dt_ctl_code keep_output(target *t, char *why, size_t n)
{
    int fd = t->fd;
    t->fd = -1;
    if (close(fd) != 0) {
        snprintf(why, n, "closing %s: %s", t->tmp[0] ? t->tmp : t->path, strerror(errno));
        return DT_CTL_IO;
    }
    if (!t->tmp[0]) return DT_CTL_SUCCESS;
    /* the name may have become a device, a FIFO or a folder meanwhile:
       never renamed over */
    if (dt__output_kind_of(t->path, NULL) != DT_OUTPUT_FILE) {
        snprintf(why, n, "%s is no longer a regular file or absent: the trace is not put there", t->path);
        return DT_CTL_IO;
    }
    if (rename(t->tmp, t->path) != 0) {
        snprintf(why, n, "renaming %s to %s: %s", t->tmp, t->path, strerror(errno));
        return DT_CTL_IO;
    }
    t->tmp[0] = 0;
    return DT_CTL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* The requests                                                         */
/* ------------------------------------------------------------------ */
static void *exchange(void *arg)
{
    target *t = arg;
    uint64_t began = dt__monotonic_ns();
    t->rc = dt__ctl_send((pid_t)t->info.pid, t->request, t->fd, t->wait_ms, &t->reply);
    t->waited_ns = dt__monotonic_ns() - began;
    return NULL;
}

/* The request the options make; the milliseconds to wait for its reply. */
static int make_request(const options *o, dt_format fmt, dt_ctl_msg *req)
{
    dt__ctl_msg_init(req, o->dump ? DT_CTL_DUMP : DT_CTL_CAPTURE);
    snprintf(req->format, sizeof req->format, "%s", dt_format_name(fmt));
    double window_s = 0;
    if (!o->dump) {
        req->timeout_ns = (uint64_t)llround(o->timeout_s * 1e9);
        if (o->steps) {
            req->steps = o->steps;
            /* the ranks of a job start at the same step */
            req->step_multiple = o->step_multiple ? o->step_multiple : o->pid ? 0 : o->steps;
        } else {
            req->duration_ns = (uint64_t)llround(o->duration_s * 1e9);
            if (req->duration_ns == 0) req->duration_ns = 1;
            window_s = o->duration_s;
        }
    }
    double wait_ms = (window_s + o->timeout_s) * 1.1e3 + REPLY_MARGIN_MS;
    return wait_ms >= INT_MAX ? INT_MAX : (int)wait_ms;
}

/* One target's outcome into place and said; its exit status. */
static int finish(target *t)
{
    dt_ctl_code rc = t->rc;
    char why[1200] = "";
    const char *text = t->reply.text;
    if (rc == DT_CTL_SUCCESS && !t->reply.written) {
        rc = DT_CTL_IO;
        snprintf(why, sizeof why, "the process wrote no trace%s%s", text[0] ? ": " : "", text);
        text = why;
    } else if (rc == DT_CTL_SUCCESS) {
        rc = keep_output(t, why, sizeof why);
        if (rc != DT_CTL_SUCCESS) text = why;
    } else if (rc == DT_CTL_TIMEOUT && t->waited_ns >= (uint64_t)t->wait_ms * 1000000u) {
        snprintf(why, sizeof why, "no reply within %.1f s (%s)", t->wait_ms / 1e3, text);
        text = why;
    } else if (rc == DT_CTL_IO) {
        snprintf(why, sizeof why, "the connection broke before the reply: the process exited or crashed (%s)", text);
        text = why;
    }
    discard_output(t);
    if (rc != DT_CTL_SUCCESS) {
        say_failure(t, rc, text);
        return outcome_of(rc)->status;
    }
    /* the backend that recorded, as the reply names it; a listener of an
       older devtrace names none: then the one it lists, or auto */
    const char *backend = t->reply.backend[0] ? t->reply.backend : t->info.backend[0] ? t->info.backend : "auto";
    char who[96], said[1100];
    if (t->info.rank >= 0) snprintf(who, sizeof who, "rank %lld, %s", (long long)t->info.rank, backend);
    else snprintf(who, sizeof who, "%s", backend);
    snprintf(said, sizeof said, "%s%s", t->reply.partial ? "partial: " : "", t->reply.text);
    dt__cli_print_wrote((int)t->info.pid, who, t->path, &t->reply.records, said, "");
    return t->reply.partial ? PARTIAL_STATUS : 0;
}

/* The traces of one job (or of the processes in none) written here: the
   command that merges them; and when the job's ranks are not all on this
   machine, how to merge those of every machine. */
static void say_merge(const target *t, size_t n, const char *job, const char *base, int by_rank)
{
    int written = 0;
    int64_t world = -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].info.job, job) != 0) continue;
        if (t[i].rc == DT_CTL_SUCCESS && t[i].reply.written && access(t[i].path, F_OK) == 0) written++;
        if (t[i].info.world_size > world) world = t[i].info.world_size;
    }
    int here = 0;
    for (size_t i = 0; i < n; i++) here += strcmp(t[i].info.job, job) == 0;
    if (written > 1) {
        fprintf(stderr, "devtrace trigger: bring %s together with: devtrace merge -o MERGED",
                job[0] ? "the traces of this job" : "them");
        for (size_t i = 0; i < n; i++)
            if (strcmp(t[i].info.job, job) == 0 && t[i].rc == DT_CTL_SUCCESS && t[i].reply.written &&
                access(t[i].path, F_OK) == 0)
                fprintf(stderr, " %s", t[i].path);
        fputc('\n', stderr);
    }
    if (by_rank && job[0] && written && world > here) {
        /* FILE.rank*<suffix>: every rank's trace, wherever it was written */
        size_t suffix = dt_format_suffix_length(base);
        fprintf(stderr, "devtrace trigger: %d of job %s's %lld ranks listen on this machine; once a trigger on "
                        "each of its machines has written to one folder: devtrace merge -o MERGED %.*s.rank*%s\n",
                here, job, (long long)world, (int)(strlen(base) - suffix), base, base + strlen(base) - suffix);
    }
}

/* Interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT), trigger removes its
   temporary files, then ends by the signal. Only the main thread takes
   these signals; the names are complete before the handler sees them. */
static const int interrupts[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static target *volatile g_targets;
static volatile size_t g_ntargets;

static void remove_temporaries(int sig)
{
    target *t = g_targets;
    for (size_t i = 0; t && i < g_ntargets; i++)
        if (t[i].tmp[0]) unlink(t[i].tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void block_interrupts(int block, sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof interrupts / sizeof *interrupts; i++) sigaddset(&set, interrupts[i]);
    pthread_sigmask(block ? SIG_BLOCK : SIG_SETMASK, block ? &set : old, block ? old : NULL);
}

/* Every target asked at once (a thread each), each outcome said; the
   highest exit status. */
static int trigger(const options *o, target *t, size_t n, dt_format fmt, const char *base)
{
    dt_ctl_msg req;
    int wait_ms = make_request(o, fmt, &req);
    sigset_t old;
    block_interrupts(1, &old); /* the threads inherit the mask */
    for (size_t i = 0; i < n; i++) {
        t[i].request = &req;
        t[i].wait_ms = wait_ms;
        t[i].threaded = n > 1 && pthread_create(&t[i].thread, NULL, exchange, &t[i]) == 0;
    }
    block_interrupts(0, &old);
    for (size_t i = 0; i < n; i++)
        if (!t[i].threaded) exchange(&t[i]);
    int worst = 0, written = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].threaded) pthread_join(t[i].thread, NULL);
        int st = finish(&t[i]);
        written += st == 0 || st == PARTIAL_STATUS;
        if (st > worst) worst = st;
    }
    if (n > 1) fprintf(stderr, "devtrace trigger: %d of %zu processes wrote a trace\n", written, n);
    /* one merge per job: two jobs' traces are never merged together */
    for (size_t i = 0; i < n; i++) {
        int first = 1;
        for (size_t j = 0; j < i && first; j++) first = strcmp(t[j].info.job, t[i].info.job) != 0;
        if (first) say_merge(t, n, t[i].info.job, base, !o->pid);
    }
    return worst;
}

int dt__cli_trigger(int argc, char **argv)
{
    options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed > 0) return 0;
    if (parsed < 0) {
        trigger_usage(stderr);
        return USAGE_STATUS;
    }
    if (o.list) return list_listeners();
    char base[4096], why[4600];
    dt_format fmt;
    if (dt__cli_output_name("devtrace trigger", o.output, o.format, base, sizeof base, &fmt) != 0)
        return USAGE_STATUS;
    /* where the trace goes is checked before anything is asked */
    if (dt__cli_check_output(base, why, sizeof why) != 0) {
        fprintf(stderr, "devtrace trigger: cannot write the trace %s: %s\n", base, why);
        return USAGE_STATUS;
    }
    target *t = NULL;
    size_t n = 0;
    int st = find_targets(&o, &t, &n);
    if (st) return st;
    name_outputs(t, n, base, o.pid && o.output);
    sigset_t old;
    block_interrupts(1, &old);
    struct sigaction sa = {.sa_handler = remove_temporaries};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof interrupts / sizeof *interrupts; i++) sigaction(interrupts[i], &sa, NULL);
    for (size_t i = 0; i < n; i++) t[i].fd = -1;
    for (size_t i = 0; i < n && st == 0; i++)
        if (open_output(&t[i]) != 0) st = USAGE_STATUS;
    g_targets = t;
    g_ntargets = n;
    block_interrupts(0, &old);
    if (st == 0) st = trigger(&o, t, n, fmt, base);
    block_interrupts(1, &old);
    for (size_t i = 0; i < n; i++) discard_output(&t[i]);
    g_targets = NULL;
    g_ntargets = 0;
    block_interrupts(0, &old);
    dt__free(t);
    return st;
}
