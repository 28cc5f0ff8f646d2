/* libdevtrace_inject: preloaded into a program by `devtrace record` (or by
   hand with LD_PRELOAD). It starts a session when the program loads and
   writes the trace when it exits, execs another program, or is stopped by
   SIGINT, SIGTERM, SIGHUP or SIGQUIT. A process that recorded nothing
   writes no trace. The entry points vendors' runtimes look for in a
   preloaded tool are in the vendors' own files beside this one (cuda.c:
   CUDA's injection entry point and the CUPTI subscriber hand-over;
   rocprofiler_sdk.c: rocprofiler_configure).

   Under `devtrace record` (DEVTRACE_RECORD_LOG set) each process appends
   one line per event of its life to that file, which `record` reads to say
   how many processes were traced and where each trace went (the record
   protocol: src/protocol/record.h). */
#include "api/inject_support.h"
#include "base/atomic_file.h"
#include "base/env_names.h"
#include "base/log.h"
#include "base/os.h"
#include "devtrace/devtrace.h"
#include "inject/inject.h"
#include "ondemand/ondemand.h"
#include "ondemand/triggers.h"
#include "protocol/record.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

dt_session *dt__inject_session;
pid_t dt__inject_owner;
int dt__inject_on_demand;
static int g_pipe[2] = {-1, -1};
static char g_output[4096];
static dt_format g_format; /* the session's, as configured */
/* The name this process's trace would have had, had another `record` not
   held the output name (see below); "" when it is g_output. */
static char g_untaken[4096];
/* A trace found at the output path that is older than this is from an
   earlier run and is replaced; a newer one is another process's, kept. */
static uint64_t g_run_began_ns;
/* Another `devtrace record` holds the output name (src/cli/main.c claims
   it for the whole run): this process replaces no file at all, and its
   trace always carries its pid in the name. The value: that record's pid
   ("0": not known). NULL when this run holds the name, or runs alone. */
static const char *g_name_taken;
static struct sigaction g_old[65];
/* The output path as configured, before output_path() expands it: a
   process forked without exec names its own trace from it. */
static char g_output_template[4096];
/* The process this one was forked from without exec; 0: not forked. */
static pid_t g_forked_from;
static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};


/* Expand %p (pid) and %r (rank); otherwise tag the name of every process but
   the one `devtrace record` started, so that each process has its own. */
static void output_path(char *out, size_t n, const char *tmpl)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char rank_text[32];
    dt__inject_support_rank(rank_text, sizeof rank_text);
    const char *rank = rank_text[0] ? rank_text : NULL;
    const char *primary = dt__env(DT_ENV_PRIMARY_PID);
    int has_pid = 1;
    if (strstr(tmpl, "%p") || strstr(tmpl, "%r")) {
        size_t o = 0;
        for (const char *p = tmpl; *p && o + 1 < n; p++) {
            const char *sub = NULL;
            if (p[0] == '%' && p[1] == 'p') sub = pid;
            else if (p[0] == '%' && p[1] == 'r') sub = rank ? rank : pid;
            if (sub) { o += (size_t)snprintf(out + o, n - o, "%s", sub); p++; }
            else out[o++] = *p;
            if (o >= n) o = n - 1;
        }
        out[o] = 0;
        has_pid = strstr(tmpl, "%p") || !rank;
    } else if (rank) {
        char tag[64];
        snprintf(tag, sizeof tag, "rank%s", rank);
        dt__record_tag_path(out, n, tmpl, tag);
        has_pid = 0;
    } else if (primary && atoi(primary) == (int)getpid()) {
        snprintf(out, n, "%s", tmpl);
        has_pid = 0;
    } else {
        dt__record_tag_path(out, n, tmpl, pid);
    }
    g_untaken[0] = 0;
    if (g_name_taken && !has_pid) {
        snprintf(g_untaken, sizeof g_untaken, "%s", out);
        dt__record_tag_path(out, n, g_untaken, pid);
    }
}

/* Whether path may take this process's trace: free, or holding a trace
   from before this run (never while another record holds the name). A
   file's time is stamped from the kernel's coarse clock, up to one of its
   ticks behind the time it was written: a file stamped less than a tick
   before the run began may have been written after, and is kept. */
static int path_is_free(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT;
    if (!S_ISREG(st.st_mode) || g_name_taken) return 0;
    uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    struct timespec tick = {0, 10000000};
    clock_getres(CLOCK_REALTIME_COARSE, &tick);
    uint64_t stamp = (uint64_t)tick.tv_sec * 1000000000u + (uint64_t)tick.tv_nsec;
    return mtime + stamp < g_run_began_ns;
}

/* rename() that never replaces: EEXIST when to exists. Where the kernel
   or the filesystem lacks RENAME_NOREPLACE, link() then unlink() does the
   same; without hard links, a plain rename (the folder's lock still keeps
   devtrace's own writers apart). */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
    if (link(from, to) == 0) return unlink(from) == 0 ? 0 : errno;
    if (errno == EEXIST) return EEXIST;
    return rename(from, to) == 0 ? 0 : errno;
}

/* The k-th name write_trace tries for want: want itself, then want with
   the pid in it, then with the pid and a count. */
static void candidate_name(char *out, size_t n, const char *want, int k)
{
    char tag[64];
    if (k == 0) {
        snprintf(out, n, "%s", want);
        return;
    }
    if (k == 1) snprintf(tag, sizeof tag, "%d", (int)getpid());
    else snprintf(tag, sizeof tag, "%d-%d", (int)getpid(), k - 1);
    dt__record_tag_path(out, n, want, tag);
}

/* The trace, named name inside (its traceName), written whole into the
   private file pending. */
static dt_status write_pending(dt_session *s, const char *pending, const char *name)
{
    int fd = open(pending, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return dt__error(DT_ERR_IO, "cannot write trace %s: %s", pending, strerror(errno));
    dt_status st = dt__inject_support_write(s, fd, name, g_format);
    if (close(fd) != 0 && st == DT_OK) st = dt__error(DT_ERR_IO, "cannot write trace %s: %s", name, strerror(errno));
    return st;
}

/* Several processes (of one `record`, or of several) may be given the same
   output path: none replaces a trace another wrote during this run, nor,
   while another record holds the name, any file. The trace is written
   under a private name, carrying the name it will have (the path, or the
   path tagged with the pid when another trace holds it), then renamed to
   that name; when another trace took the name meanwhile, the next name is
   written and renamed instead. The rename happens under a lock on the
   folder, and a path that was free is taken without replacing, so two
   writers cannot both take it. A character device or a FIFO named as the
   output is written in place. */
static dt_status write_trace(dt_session *s, const char *want, char *got, size_t got_len)
{
    snprintf(got, got_len, "%s", want);
    if (dt__output_kind_of(want, NULL) == DT_OUTPUT_IN_PLACE) return dt_session_write(s, want, g_format);
    char pending[4200], written[4200] = "";
    snprintf(pending, sizeof pending, "%s.%d.pending", want, (int)getpid());

    char dir[4096];
    dt__path_dir(dir, sizeof dir, want);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    int err = EEXIST;
    for (int k = 0; err == EEXIST && k < 1000; k++) {
        candidate_name(got, got_len, want, k);
        if (!path_is_free(got)) continue; /* a first look, without the lock */
        if (strcmp(got, written) != 0) {
            dt_status st = write_pending(s, pending, got);
            if (st != DT_OK) {
                if (dfd >= 0) close(dfd);
                unlink(pending);
                return st;
            }
            snprintf(written, sizeof written, "%s", got);
        }
        if (dfd >= 0) flock(dfd, LOCK_EX); /* no lock (unsupported): the check below still mostly holds */
        struct stat old;
        if (path_is_free(got)) {
            if (lstat(got, &old) == 0) err = rename(pending, got) == 0 ? 0 : errno; /* a trace of an earlier run */
            else err = rename_noreplace(pending, got);
        }
        if (dfd >= 0) flock(dfd, LOCK_UN);
    }
    if (dfd >= 0) close(dfd);
    if (err) {
        unlink(pending);
        return dt__error(DT_ERR_IO, "cannot write trace %s: %s", got, strerror(err));
    }
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* What `devtrace record` is told                                      */
/* ------------------------------------------------------------------ */
/* One line to the record log; without `record`, failures go to stderr.
   path and the message may be empty. */
void dt__inject_report(const char *state, int with_counts, const char *path, const char *fmt, ...)
{
    int kind = dt__record_state_by_name(state);
    if (kind < 0) return;
    dt_record_line *line = malloc(sizeof *line);
    if (!line) return;
    dt__record_line_init(line, (dt_record_state)kind, (int)getpid());
    char *message = dt__record_message(line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, DT_RECORD_MESSAGE_MAX, fmt, ap);
    va_end(ap);
    dt__record_one_line(message);
    const char *log = dt__env(DT_ENV_RECORD_LOG);
    if (!log) {
        if (kind == DT_RECORD_FAILED || kind == DT_RECORD_OFF || kind == DT_RECORD_DUMP_FAILED ||
            kind == DT_RECORD_NOT_LISTENING)
            fprintf(stderr, "devtrace: %s\n", message);
        free(line);
        return;
    }
    char *line_path = dt__record_path(line);
    if (line_path) snprintf(line_path, DT_RECORD_PATH_MAX, "%s", path);
    if (with_counts && dt__inject_session && kind != DT_RECORD_STARTED && kind != DT_RECORD_OFF &&
        kind != DT_RECORD_NOTE) {
        dt_record_end *e = &line->u.end;
        e->has_counts = 1;
        snprintf(e->backend, sizeof e->backend, "%s", dt_session_backend(dt__inject_session));
        e->events = dt_session_event_count(dt__inject_session);
        for (int r = 0; r < DT_LOSS_COUNT; r++) e->loss[r] = dt_session_loss(dt__inject_session, (dt_loss_reason)r);
    }
    dt__record_append(log, line);
    free(line);
}

/* ------------------------------------------------------------------ */
/* Finishing: once, whoever asks first; the others wait                */
/* ------------------------------------------------------------------ */
/* Exit, _exit, exec and the signal thread may all ask at once (a signal
   makes the program's sleep return, and it exits while the signal thread
   writes). The first writes; the others wait until the trace is written,
   for the process must not end before. */
enum { FINISH_IDLE, FINISH_RUNNING, FINISH_DONE };
static _Atomic int g_finish_state;
static _Thread_local int tls_finishing; /* this thread writes, or tries to */

_Static_assert(sizeof(_Atomic int) == sizeof(int), "futex word");

static void wait_finished(void)
{
    while (atomic_load(&g_finish_state) != FINISH_DONE)
        syscall(SYS_futex, (int *)&g_finish_state, FUTEX_WAIT_PRIVATE, FINISH_RUNNING, NULL, NULL, 0);
}

static _Atomic int g_received; /* see raise_received */

static void stop_and_write(void)
{
    if (g_forked_from) {
        output_path(g_output, sizeof g_output, g_output_template);
        dt__inject_report("started", 0, g_output, "forked without exec from process %d", (int)g_forked_from);
    }
    /* the process is ending: nothing is gained by detaching vendor libraries */
    dt__inject_support_exiting();
    if (dt__inject_flight_on()) {
        /* the ring's window is written by dumps only; a trigger's dump
           under way ends first */
        dt_control_stop();
        dt__inject_flight_end(atomic_load(&g_received));
        if (dt_session_stop(dt__inject_session) != DT_OK) dt__log("stopping the session failed: %s", dt_last_error());
        return;
    }
    if (dt_session_stop(dt__inject_session) != DT_OK) {
        dt__inject_report("failed", 0, g_output, "stopping the session failed: %s", dt_last_error());
        return;
    }
    /* a child forked without exec that did nothing (a data loader's
       worker) writes no trace either, even where its vendor cannot record */
    if (dt_session_event_count(dt__inject_session) == 0 && dt_session_loss_total(dt__inject_session) == 0) {
        dt__inject_report("empty", 1, g_output, "recorded nothing");
        return;
    }
    if (dt__inject_support_fork_unrecorded(dt__inject_session))
        dt__inject_report("note", 0, "", "forked without exec from process %d: %s cannot record in such a child; "
                         "its device activity is not recorded, its launches are counted as lost (forked_child)",
                         (int)g_forked_from, dt_session_backend(dt__inject_session));
    char got[4200];
    if (write_trace(dt__inject_session, g_output, got, sizeof got) != DT_OK) {
        dt__inject_report("failed", 1, g_output, "%s", dt_last_error());
        return;
    }
    if (strcmp(got, g_output) != 0)
        dt__inject_report("wrote", 1, got, "%s was written by another process during this run", g_output);
    else if (g_untaken[0] && strcmp(g_name_taken, "0") != 0)
        dt__inject_report("wrote", 1, got, "%s belongs to another devtrace record with the same output, "
                         "pid %s", g_untaken, g_name_taken);
    else if (g_untaken[0])
        dt__inject_report("wrote", 1, got, "%s belongs to another devtrace record with the same output",
                         g_untaken);
    else
        dt__inject_report("wrote", 1, got, "%s", "");
}

/* The signal our handler took, raised again (with the program's previous
   disposition) by whoever writes the trace, once it is written. */
static _Atomic int g_received;

static void raise_received(void)
{
    int sig = atomic_exchange(&g_received, 0);
    if (sig <= 0 || sig >= 65) return;
    sigaction(sig, &g_old[sig], NULL);
    kill(getpid(), sig);
}

/* 1 when this call wrote the trace: the caller then calls finish_done().
   0 when there is nothing to write in this process, or another caller
   wrote it (and has finished). */
static int finish_begin(void)
{
    if (getpid() != dt__inject_owner || !dt__inject_session) return 0; /* not recording here */
    /* a handler of the program that ends the process from within this
       thread's own finish: waiting for itself would never end */
    if (tls_finishing) return 0;
    tls_finishing = 1;
    int expected = FINISH_IDLE;
    if (!atomic_compare_exchange_strong(&g_finish_state, &expected, FINISH_RUNNING)) {
        tls_finishing = 0;
        wait_finished();
        return 0;
    }
    stop_and_write();
    /* A program stopped by a signal ends by it, even when its sleep returned
       and it reached exit first: the signal is raised again before the exit
       (or the waiters) go on. */
    raise_received();
    return 1;
}

static void finish_done(void)
{
    atomic_store(&g_finish_state, FINISH_DONE);
    syscall(SYS_futex, (int *)&g_finish_state, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void finish(void)
{
    /* on demand: a capture under way is cut short and written before the
       process ends or execs */
    if (dt__inject_on_demand && getpid() == dt__inject_owner) dt__ondemand_stop("this process is ending");
    if (finish_begin()) finish_done();
}

void dt__inject_finish(void)
{
    finish();
}

/* ------------------------------------------------------------------ */
/* Signals                                                             */
/* ------------------------------------------------------------------ */
static void on_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;
    int none = 0;
    atomic_compare_exchange_strong(&g_received, &none, sig);
    if (g_pipe[1] >= 0) { ssize_t w = write(g_pipe[1], &b, 1); (void)w; }
    errno = saved;
}

/* Writing a trace is not async-signal-safe: a thread does it, then the
   signal is delivered again with the program's previous disposition. The
   program's own threads run on meanwhile (its sleep returns early) and may
   reach exit, where they wait for the trace, or write it themselves. */
static void *signal_thread(void *arg)
{
    (void)arg;
    unsigned char b;
    ssize_t r;
    while ((r = read(g_pipe[0], &b, 1)) < 0 && errno == EINTR) {}
    if (r != 1) return NULL;
    if (dt__inject_on_demand && getpid() == dt__inject_owner) { /* a capture cut short, written */
        char why[96];
        int sig = atomic_load(&g_received);
        snprintf(why, sizeof why, "this process was ended by signal %d (%s)", sig, strsignal(sig));
        dt__ondemand_stop(why);
    }
    int wrote = finish_begin();
    raise_received(); /* not tracing in this process, or written by another thread */
    if (wrote) finish_done();
    return NULL;
}

static int install_signal_handlers(void)
{
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return -1;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread takes no signals */
    int rc = pthread_create(&t, &a, signal_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0) return -1;
    for (size_t i = 0; i < sizeof g_signals / sizeof *g_signals; i++) {
        int sig = g_signals[i];
        struct sigaction sa = {0};
        sigaction(sig, NULL, &g_old[sig]);
        if (g_old[sig].sa_handler == SIG_IGN) continue; /* e.g. nohup */
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(sig, &sa, NULL);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Fork without exec                                                   */
/* ------------------------------------------------------------------ */
/* The child of a fork without exec records on as itself: the session goes
   on as the child's (dt__inject_support_forked) and the child writes its own trace,
   named by its pid, when it ends. Only stores and async-signal-safe calls
   here; the rest waits for the child's end. The signal thread is not in
   the child: the program's own dispositions come back, so that a signal
   ends the child as it would have (without a trace) instead of waiting for
   a thread that is not there. A child forked while the trace is written
   records nothing. */
static void restore_signals(void)
{
    for (size_t i = 0; i < sizeof g_signals / sizeof *g_signals; i++) {
        struct sigaction now;
        int sig = g_signals[i];
        if (sigaction(sig, NULL, &now) == 0 && now.sa_handler == on_signal) sigaction(sig, &g_old[sig], NULL);
    }
}

static void fork_child(void)
{
    if (!dt__inject_session || atomic_load(&g_finish_state) != FINISH_IDLE) {
        dt__inject_session = NULL;
        return;
    }
    g_forked_from = dt__inject_owner;
    dt__inject_owner = getpid();
    tls_finishing = 0;
    dt__inject_support_forked(dt__inject_session);
    dt__inject_flight_forked();
    restore_signals();
}

/* On demand, a forked child listens not (its parent's listener is not its
   own) and has no signal thread: its signals are the program's again. */
static void fork_child_on_demand(void) { restore_signals(); }

/* ------------------------------------------------------------------ */
/* Start                                                               */
/* ------------------------------------------------------------------ */
/* On demand: the process listens instead of recording from start; each
   capture arms the vendor for its window only (src/ondemand/capture.c)
   and writes to the client's descriptor. No session runs until a capture.
   A capture under way when the process ends (exit, _exit, exec, or SIGINT,
   SIGTERM, SIGHUP, SIGQUIT) is cut short and written first; the socket is
   removed at exit by the listener. Each capture written is told to
   `devtrace record`. */
static void report_capture(void *ctx, const dt_ondemand_served *served)
{
    (void)ctx;
    const dt_ctl_result *r = served->result;
    if (served->type != DT_CTL_CAPTURE || r->code != DT_CTL_SUCCESS || !r->written) return;
    dt__inject_report("captured", 0, "", "a capture for devtrace trigger (process %d): %llu events%s; %s",
                     served->peer_pid, (unsigned long long)r->records, r->partial ? ", partial" : "", r->text);
}

static void listen_on_demand(void)
{
    dt__inject_owner = getpid();
    dt_config cfg;
    dt_config_init(&cfg);
    dt_config_from_env(&cfg);
    if (dt_control_listen(&cfg) != DT_OK) {
        dt__inject_report("not_listening", 0, "", "not listening for devtrace trigger: %s", dt_last_error());
        return;
    }
    dt__ondemand_observe(report_capture, NULL);
    dt__inject_report("listening", 0, dt__ctl_socket_path(),
                     "listening for `devtrace trigger %d` (on demand): nothing is recorded from start", (int)getpid());
    if (dt__env(DT_ENV_FLIGHT_RECORDER))
        dt__inject_report("note", 0, "", "%s is ignored: on demand (%s) records nothing until a trigger, so no "
                         "flight recorder runs", DT_ENV_FLIGHT_RECORDER, DT_ENV_ON_DEMAND);
    if (install_signal_handlers() != 0)
        dt__log("no signal thread: a signal that ends the program loses a capture under way");
    pthread_atfork(NULL, NULL, fork_child_on_demand);
}

/* A flight recorder answers `devtrace trigger --dump` (its dumps counted
   with the triggers'); a capture is answered busy, the ring records on. */
static void listen_for_dumps(dt_config *cfg)
{
    if (!cfg->flight_recorder_bytes) return;
    if (dt_control_listen(cfg) != DT_OK)
        dt__inject_report("note", 0, "", "flight recorder: not listening for `devtrace trigger %d --dump`: %s",
                         (int)getpid(), dt_last_error());
}

__attribute__((constructor)) static void devtrace_inject_init(void)
{
    if (dt__env_bool(DT_ENV_DISABLE) == 1) return;
    if (dt__env_bool(DT_ENV_ON_DEMAND) == 1) {
        dt__inject_on_demand = 1;
        listen_on_demand();
        return;
    }
    /* A signal that arrives while the session starts waits until the
       handlers that write the trace are in place. Threads started meanwhile
       (the vendor's, devtrace's) keep these signals blocked for good. */
    sigset_t ours, old;
    sigemptyset(&ours);
    for (size_t i = 0; i < sizeof g_signals / sizeof *g_signals; i++) sigaddset(&ours, g_signals[i]);
    pthread_sigmask(SIG_BLOCK, &ours, &old);

    const char *began = dt__env(DT_ENV_RECORD_START_NS);
    g_name_taken = dt__env(DT_ENV_RECORD_NAME_TAKEN);
    g_run_began_ns = began ? strtoull(began, NULL, 10) : 0;
    if (!g_run_began_ns) g_run_began_ns = dt__realtime_ns();
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.output_path = "devtrace-%p.json";
    dt_config_from_env(&cfg);
    snprintf(g_output_template, sizeof g_output_template, "%s", cfg.output_path);
    g_format = cfg.format;
    output_path(g_output, sizeof g_output, cfg.output_path);
    dt__inject_owner = getpid();
    if (dt_session_create(&cfg, &dt__inject_session) != DT_OK) {
        dt__inject_report("off", 0, g_output, "not tracing: %s", dt_last_error());
        dt__inject_session = NULL;
    } else if (dt__inject_support_start(dt__inject_session, dt__inject_support_deferred_backend()) != DT_OK) {
        dt__inject_report("off", 0, g_output, "not tracing: %s", dt_last_error());
        dt_session_destroy(dt__inject_session);
        dt__inject_session = NULL;
    } else {
        if (install_signal_handlers() != 0)
            dt__log("no signal thread: a signal that stops the program loses its trace");
        atexit(finish);
        pthread_atfork(NULL, NULL, fork_child);
        dt__inject_report("started", 0, g_output, "%s", "");
        dt__inject_flight_start(dt__inject_session, &cfg, g_output);
        listen_for_dumps(&cfg);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((destructor)) static void devtrace_inject_fini(void)
{
    finish();
}

/* Programs that end with _exit (dash does, and so do many servers) skip
   atexit and destructors; the preloaded definitions below write the trace
   first. */
__attribute__((visibility("default"), noreturn)) void _exit(int status);
__attribute__((visibility("default"), noreturn)) void _Exit(int status);
void _exit(int status)
{
    dt__inject_flight_exit_status(status);
    finish();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
void _Exit(int status)
{
    dt__inject_flight_exit_status(status);
    finish();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* fork() itself, around the libc's: a vendor that cannot record in the
   child is readied in the parent for the child to count its launches, and
   quieted in the child once every atfork handler (the vendor's own
   included) has run (dt__inject_support_fork_prepare, _parent, _child). */
typedef pid_t (*fork_fn)(void);
__attribute__((visibility("default"))) pid_t fork(void);

static void *next_symbol(const char *name);

pid_t fork(void)
{
    static fork_fn next;
    if (!next) next = (fork_fn)next_symbol("fork");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    int prepared = getpid() == dt__inject_owner && dt__inject_session && atomic_load(&g_finish_state) == FINISH_IDLE;
    if (prepared) dt__inject_support_fork_prepare(dt__inject_session);
    pid_t pid = next();
    if (pid == 0 && dt__inject_session) dt__inject_support_fork_child(dt__inject_session);
    else if (prepared) dt__inject_support_fork_parent(dt__inject_session);
    return pid;
}

/* exec replaces the program without exit: the trace of what it recorded is
   written first (the new program, preloaded again, records anew). glibc's
   exec functions call each other internally, so each is defined. If exec
   fails the process goes on, no longer recorded. */
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

#define DT_EXEC_EXPORT __attribute__((visibility("default")))
DT_EXEC_EXPORT int execve(const char *path, char *const argv[], char *const envp[]);
DT_EXEC_EXPORT int execv(const char *path, char *const argv[]);
DT_EXEC_EXPORT int execvp(const char *file, char *const argv[]);
DT_EXEC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);
DT_EXEC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]);
DT_EXEC_EXPORT int execl(const char *path, const char *arg, ...);
DT_EXEC_EXPORT int execlp(const char *file, const char *arg, ...);
DT_EXEC_EXPORT int execle(const char *path, const char *arg, ...);

int execve(const char *path, char *const argv[], char *const envp[])
{
    finish();
    execve_fn f = (execve_fn)next_symbol("execve");
    if (!f) { errno = ENOSYS; return -1; }
    return f(path, argv, envp);
}

int execv(const char *path, char *const argv[])
{
    finish();
    execv_fn f = (execv_fn)next_symbol("execv");
    if (!f) { errno = ENOSYS; return -1; }
    return f(path, argv);
}

int execvp(const char *file, char *const argv[])
{
    finish();
    execv_fn f = (execv_fn)next_symbol("execvp");
    if (!f) { errno = ENOSYS; return -1; }
    return f(file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    finish();
    execve_fn f = (execve_fn)next_symbol("execvpe");
    if (!f) { errno = ENOSYS; return -1; }
    return f(file, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
    finish();
    int (*f)(int, char *const[], char *const[]) = (int (*)(int, char *const[], char *const[]))next_symbol("fexecve");
    if (!f) { errno = ENOSYS; return -1; }
    return f(fd, argv, envp);
}

/* execl* take their arguments as a list: gathered into an array (and, for
   execle, the environment after the terminating NULL read by the caller). */
#define DT_EXEC_MAX_ARGS 4096

static int gather_args(char **argv, const char *first, va_list *ap)
{
    size_t n = 0;
    argv[n++] = (char *)first;
    while (first && (argv[n] = va_arg(*ap, char *)) != NULL)
        if (++n == DT_EXEC_MAX_ARGS) {
            errno = E2BIG;
            return -1;
        }
    argv[n] = NULL;
    return 0;
}

int execl(const char *path, const char *arg, ...)
{
    char *argv[DT_EXEC_MAX_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int rc = gather_args(argv, arg, &ap);
    va_end(ap);
    return rc != 0 ? -1 : execv(path, argv);
}

int execlp(const char *file, const char *arg, ...)
{
    char *argv[DT_EXEC_MAX_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int rc = gather_args(argv, arg, &ap);
    va_end(ap);
    return rc != 0 ? -1 : execvp(file, argv);
}

int execle(const char *path, const char *arg, ...)
{
    char *argv[DT_EXEC_MAX_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int rc = gather_args(argv, arg, &ap);
    char **envp = rc == 0 ? va_arg(ap, char **) : NULL;
    va_end(ap);
    return rc != 0 ? -1 : execve(path, argv, envp);
}
