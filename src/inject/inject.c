/* libdevtrace_inject: preloaded into a program by `devtrace record` (or by
   hand with LD_PRELOAD). It starts a session when the program loads and
   writes the trace when it exits, execs another program, or is stopped by
   SIGINT, SIGTERM, SIGHUP or SIGQUIT. A process that recorded nothing
   writes no trace. It is also CUDA's injection library
   (CUDA_INJECTION64_PATH): the driver calls InitializeInjection when the
   process initialises CUDA, before its first context, and only then is
   CUPTI loaded and attached to the session: a process that never uses CUDA
   (a compiler, a launcher, `true`) never loads libcupti.

   CUPTI allows one subscriber per process. When the program starts its own
   CUPTI client while devtrace holds CUPTI (torch.profiler's Kineto
   subscribes when a profile starts), the client is refused and told that
   "CUPTI for devtrace" holds it; the trace notes it and `record` prints
   it. With DEVTRACE_CUPTI_HANDOVER=1 devtrace gives CUPTI to that client
   instead: what it recorded until then stays in its trace, the device
   activity after that goes to the client.

   It is also a rocprofiler-sdk tool: its exported rocprofiler_configure is
   how ROCm finds a preloaded tool.

   Under `devtrace record` (DEVTRACE_RECORD_LOG set) each process appends
   one line per event of its life to that file, which `record` reads to say
   how many processes were traced and where each trace went:
     <pid> \t <state> \t key=value ... \t message=<text>
   state: started (recording), wrote, empty (recorded nothing, no trace),
   failed (the trace could not be written), off (could not record), note
   (something the user should know, printed as it is). */
#include "dt_internal.h"
#include "backends/rocprofiler_sdk.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static dt_session *g_session;
static pid_t g_owner_pid;
static int g_pipe[2] = {-1, -1};
static char g_output[4096];
/* A trace found at the output path that is older than this is from an
   earlier run and is replaced; a newer one is another process's, kept. */
static uint64_t g_run_began_ns;
static struct sigaction g_old[65];
static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};


/* "trace.json" -> "trace.<tag>.json" (also before .json.gz and .pftrace). */
static void insert_tag(char *out, size_t n, const char *path, const char *tag)
{
    const char *ext = NULL;
    size_t len = strlen(path);
    if (len > 8 && strcmp(path + len - 8, ".json.gz") == 0) ext = path + len - 8;
    else if (len > 5 && strcmp(path + len - 5, ".json") == 0) ext = path + len - 5;
    else if (len > 8 && strcmp(path + len - 8, ".pftrace") == 0) ext = path + len - 8;
    if (!ext) ext = path + len;
    snprintf(out, n, "%.*s.%s%s", (int)(ext - path), path, tag, ext);
}

/* Expand %p (pid) and %r (rank); otherwise tag the name of every process but
   the one `devtrace record` started, so that each process has its own. */
static void output_path(char *out, size_t n, const char *tmpl)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    dt_rank_info info;
    dt_rank_from_env(&info);
    const char *rank = info.rank_text[0] ? info.rank_text : NULL;
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
        return;
    }
    char tag[64];
    const char *primary = dt_env("DEVTRACE_PRIMARY_PID");
    if (rank) {
        snprintf(tag, sizeof tag, "rank%s", rank);
        insert_tag(out, n, tmpl, tag);
    } else if (primary && atoi(primary) == (int)getpid()) {
        snprintf(out, n, "%s", tmpl);
    } else {
        insert_tag(out, n, tmpl, pid);
    }
}

/* Whether path may take this process's trace: free, or holding a trace
   from before this run. */
static int path_is_free(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT;
    if (!S_ISREG(st.st_mode)) return 0;
    uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    return mtime < g_run_began_ns;
}

/* Several processes (of one `record`, or of several) may be given the same
   output path: none replaces a trace another wrote during this run. The
   trace is written under a private name, then renamed to the path, or to
   the path tagged with the pid when another trace took it meanwhile. The
   choice and the rename happen under a lock on the folder, so two writers
   cannot both find the path free. */
static dt_status write_trace(dt_session *s, const char *want, char *got, size_t got_len)
{
    char pending[4200];
    snprintf(pending, sizeof pending, "%s.%d.pending", want, (int)getpid());
    dt_status st = dt_session_write(s, pending, s->config.format);
    if (st != DT_OK) return st;

    char dir[4096];
    dt_path_dir(dir, sizeof dir, want);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) flock(dfd, LOCK_EX); /* no lock (unsupported): the check below still mostly holds */

    snprintf(got, got_len, "%s", want);
    for (int k = 0; !path_is_free(got) && k < 1000; k++) {
        char tag[64];
        if (k == 0) snprintf(tag, sizeof tag, "%d", (int)getpid());
        else snprintf(tag, sizeof tag, "%d-%d", (int)getpid(), k);
        insert_tag(got, got_len, want, tag);
    }
    int err = rename(pending, got) == 0 ? 0 : errno;
    if (dfd >= 0) close(dfd); /* releases the lock */
    if (err) {
        unlink(pending);
        return dt_error(DT_ERR_IO, "cannot write trace %s: %s", got, strerror(err));
    }
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* What `devtrace record` is told                                      */
/* ------------------------------------------------------------------ */
/* One line to the record log; without `record`, failures go to stderr.
   path and the message may be empty. */
__attribute__((format(printf, 4, 5))) static void report(const char *state, int with_counts, const char *path,
                                                         const char *fmt, ...)
{
    char message[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    for (char *p = message; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' '; /* one field, one line */
    const char *log = dt_env("DEVTRACE_RECORD_LOG");
    if (!log) {
        if (strcmp(state, "failed") == 0 || strcmp(state, "off") == 0)
            fprintf(stderr, "devtrace: %s\n", message);
        return;
    }
    char line[8192];
    int len = snprintf(line, sizeof line, "%d\t%s", (int)getpid(), state);
    if (with_counts && g_session) {
        len += snprintf(line + len, sizeof line - (size_t)len, "\tbackend=%s\tevents=%zu",
                        dt_session_backend(g_session), dt_session_event_count(g_session));
        for (int r = 0; r < DT_LOSS_COUNT && len < (int)sizeof line; r++)
            len += snprintf(line + len, sizeof line - (size_t)len, "\tloss.%s=%llu",
                            dt_loss_reason_name((dt_loss_reason)r),
                            (unsigned long long)dt_session_loss(g_session, (dt_loss_reason)r));
    }
    if (path[0] && len < (int)sizeof line) len += snprintf(line + len, sizeof line - (size_t)len, "\tpath=%s", path);
    if (message[0] && len < (int)sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, "\tmessage=%s", message);
    if (len < (int)sizeof line) len += snprintf(line + len, sizeof line - (size_t)len, "\n");
    if (len >= (int)sizeof line) { len = (int)sizeof line - 1; line[len - 1] = '\n'; }
    int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)len); /* one write: lines of processes do not mix */
        (void)w;
        close(fd);
    }
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

static void stop_and_write(void)
{
    /* the process is ending: nothing is gained by detaching vendor libraries */
    atomic_store(&dt_g_exiting, 1);
    if (dt_session_stop(g_session) != DT_OK) {
        report("failed", 0, g_output, "stopping the session failed: %s", dt_last_error());
        return;
    }
    if (dt_session_event_count(g_session) == 0 && dt_session_loss_total(g_session) == 0) {
        report("empty", 1, g_output, "recorded nothing");
        return;
    }
    char got[4200];
    if (write_trace(g_session, g_output, got, sizeof got) != DT_OK) {
        report("failed", 1, g_output, "%s", dt_last_error());
        return;
    }
    if (strcmp(got, g_output) != 0)
        report("wrote", 1, got, "%s was written by another process during this run", g_output);
    else
        report("wrote", 1, got, "%s", "");
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
    if (getpid() != g_owner_pid || !g_session) return 0; /* a forked child: not ours */
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
    if (finish_begin()) finish_done();
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
/* Start                                                               */
/* ------------------------------------------------------------------ */
/* Whether the CUDA driver will call this library's InitializeInjection: only
   then may CUPTI wait for it. Another injection library named in
   CUDA_INJECTION64_PATH (by the user) would be called instead. */
static int cuda_calls_us(void)
{
    const char *named = dt_env("CUDA_INJECTION64_PATH");
    Dl_info self;
    if (!named || !dladdr((void *)cuda_calls_us, &self) || !self.dli_fname) return 0;
    char a[4096], b[4096];
    return realpath(named, a) && realpath(self.dli_fname, b) && strcmp(a, b) == 0;
}

__attribute__((constructor)) static void devtrace_inject_init(void)
{
    if (dt_env_bool("DEVTRACE_DISABLE") == 1) return;
    /* A signal that arrives while the session starts waits until the
       handlers that write the trace are in place. Threads started meanwhile
       (the vendor's, devtrace's) keep these signals blocked for good. */
    sigset_t ours, old;
    sigemptyset(&ours);
    for (size_t i = 0; i < sizeof g_signals / sizeof *g_signals; i++) sigaddset(&ours, g_signals[i]);
    pthread_sigmask(SIG_BLOCK, &ours, &old);

    const char *began = dt_env("DEVTRACE_RECORD_START_NS");
    g_run_began_ns = began ? strtoull(began, NULL, 10) : 0;
    if (!g_run_began_ns) g_run_began_ns = dt_realtime_ns();
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.output_path = "devtrace-%p.json";
    dt_config_from_env(&cfg);
    output_path(g_output, sizeof g_output, cfg.output_path);
    g_owner_pid = getpid();
    if (dt_session_create(&cfg, &g_session) != DT_OK) {
        report("off", 0, g_output, "not tracing: %s", dt_last_error());
        g_session = NULL;
    } else if (dt_session_start_deferring(g_session, cuda_calls_us() ? "cupti" : NULL) != DT_OK) {
        report("off", 0, g_output, "not tracing: %s", dt_last_error());
        dt_session_destroy(g_session);
        g_session = NULL;
    } else {
        if (install_signal_handlers() != 0)
            dt_log("no signal thread: a signal that stops the program loses its trace");
        atexit(finish);
        report("started", 0, g_output, "%s", "");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((destructor)) static void devtrace_inject_fini(void)
{
    finish();
}

/* Programs that end with _exit (dash does, and so do many servers) skip
   atexit and destructors; the preloaded definitions below write the trace
   first. A forked child is not the owner and writes nothing. */
__attribute__((visibility("default"), noreturn)) void _exit(int status);
__attribute__((visibility("default"), noreturn)) void _Exit(int status);
void _exit(int status)
{
    finish();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
void _Exit(int status)
{
    finish();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
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

/* ------------------------------------------------------------------ */
/* CUDA                                                                */
/* ------------------------------------------------------------------ */
/* Whether devtrace may use CUPTI in this process (the backend asked for). */
static int cupti_wanted(void)
{
    const char *b = dt_env("DEVTRACE_BACKEND");
    return !b || strcmp(b, "auto") == 0 || strcmp(b, "cupti") == 0;
}

/* CUDA driver injection entry point: the process initialises CUDA. */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    if (!cupti_wanted()) return 1;
    if (g_session && getpid() == g_owner_pid && dt_session_awaits(g_session, "cupti")) {
        if (dt_session_attach_deferred(g_session) != DT_OK)
            report("note", 0, "", "CUPTI not attached when the process initialised CUDA: %s", dt_last_error());
        return 1;
    }
    /* No session waits for CUPTI (DEVTRACE_DISABLE: the program records
       through devtrace's API itself): arm what must precede the first
       context, for its session. */
    if (dt_prepare("cupti") != DT_OK) dt_log("InitializeInjection: %s", dt_last_error());
    return 1;
}

/* rocprofiler-sdk's tool entry point: ROCm calls every visible
   rocprofiler_configure when its runtimes initialize. The session started
   above has usually registered devtrace already (and this declines). */
__attribute__((visibility("default"))) rsdk_tool_configure_result *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, rsdk_client_id *client_id);
rsdk_tool_configure_result *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                                  rsdk_client_id *client_id)
{
    return dt_rocprofiler_sdk_configure(version, runtime_version, priority, client_id);
}

/* Another CUPTI client subscribing (torch.profiler's Kineto, when a profile
   starts): the preloaded definitions below stand between it and CUPTI.
   devtrace itself calls CUPTI through the library's own symbols, never
   through these. */
typedef int (*subscribe_fn)(void **subscriber, void *callback, void *userdata);
typedef int (*subscribe_named_fn)(void **subscriber, void *callback, void *userdata, void *params);

#define DT_CUPTI_MULTIPLE_SUBSCRIBERS 39 /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
#define DT_CUPTI_NOT_INITIALIZED 15      /* CUPTI_ERROR_NOT_INITIALIZED */

/* CUPTI's definition of `name` for a caller at `caller`: the next in the
   global scope, or (for a library loaded with RTLD_LOCAL, as Python loads
   torch) the one the caller's own dependencies give. */
static void *cupti_symbol(const char *name, const void *caller, const void *self)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f && f != self) return f;
    Dl_info info;
    if (!caller || !dladdr(caller, &info) || !info.dli_fname) return NULL;
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    f = dlsym(h, name);
    dlclose(h);
    return f != self ? f : NULL;
}

/* The client's library, as the notes name it ("libtorch_cuda.so"). */
static void caller_name(const void *caller, char *out, size_t n)
{
    Dl_info info;
    const char *name = caller && dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(name, '/');
    snprintf(out, n, "%s", slash ? slash + 1 : name[0] ? name : "the program");
}

/* Before the client's subscribe: with the handover switch, devtrace lets
   CUPTI go. Returns whether devtrace held CUPTI. */
static int before_other_subscriber(const char *who)
{
    if (!g_session || getpid() != g_owner_pid || strcmp(dt_session_backend(g_session), "cupti") != 0) return 0;
    if (dt_env_bool("DEVTRACE_CUPTI_HANDOVER") == 1) {
        dt_session_release_backend(g_session, who);
        report("note", 0, "", "CUPTI given to %s (DEVTRACE_CUPTI_HANDOVER=1): the device activity from then on is "
               "in its trace, not devtrace's", who);
    }
    return 1;
}

static void after_other_subscriber(const char *who, const char *call, int held, int result)
{
    if (!held || result != DT_CUPTI_MULTIPLE_SUBSCRIBERS) return;
    dt_session_note(g_session, "cupti_clients", "%s called %s while devtrace held CUPTI and was refused: its own "
                    "trace (torch.profiler's, if it is that) has no device activity, this one has it; "
                    "DEVTRACE_CUPTI_HANDOVER=1 gives CUPTI to it instead", who, call);
    report("note", 0, "", "%s asked for CUPTI (%s) while devtrace held it and was refused: its own trace has no "
           "GPU activity, devtrace's has it (DEVTRACE_CUPTI_HANDOVER=1 gives CUPTI to it instead)", who, call);
}

__attribute__((visibility("default"))) int cuptiSubscribe(void **subscriber, void *callback, void *userdata);
int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    const void *caller = __builtin_return_address(0);
    subscribe_fn real = (subscribe_fn)cupti_symbol("cuptiSubscribe", caller, (const void *)cuptiSubscribe);
    if (!real) return DT_CUPTI_NOT_INITIALIZED;
    char who[256];
    caller_name(caller, who, sizeof who);
    int held = before_other_subscriber(who);
    int r = real(subscriber, callback, userdata);
    after_other_subscriber(who, "cuptiSubscribe", held, r);
    return r;
}

__attribute__((visibility("default"))) int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata,
                                                              void *params);
int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, void *params)
{
    const void *caller = __builtin_return_address(0);
    subscribe_named_fn real =
        (subscribe_named_fn)cupti_symbol("cuptiSubscribe_v2", caller, (const void *)cuptiSubscribe_v2);
    if (!real) return DT_CUPTI_NOT_INITIALIZED;
    char who[256];
    caller_name(caller, who, sizeof who);
    int held = before_other_subscriber(who);
    int r = real(subscriber, callback, userdata, params);
    after_other_subscriber(who, "cuptiSubscribe_v2", held, r);
    return r;
}
