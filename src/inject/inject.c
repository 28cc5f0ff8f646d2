/* libdevtrace_inject: preloaded into a program by `devtrace record` (or by
   hand with LD_PRELOAD). It starts a session when the program loads and
   writes the trace when it exits, or when it is stopped by SIGINT/SIGTERM.
   It is also CUDA's injection library (CUDA_INJECTION64_PATH): the driver
   calls InitializeInjection before the first context, when CUPTI must be
   armed. */
#include "dt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static dt_session *g_session;
static _Atomic int g_finished;
static pid_t g_owner_pid;
static int g_pipe[2] = {-1, -1};
static char g_output[4096];
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

/* One line per traced process for `devtrace record` to report. */
static void report(const char *status_text)
{
    const char *log = dt_env("DEVTRACE_RECORD_LOG");
    if (!log) {
        if (status_text[0]) fprintf(stderr, "devtrace: %s\n", status_text);
        return;
    }
    char line[4096];
    int len = snprintf(line, sizeof line, "%d\t%s\t%s\t%zu", (int)getpid(),
                       g_session ? dt_session_backend(g_session) : "", g_output,
                       g_session ? dt_session_event_count(g_session) : (size_t)0);
    for (int r = 0; r < DT_LOSS_COUNT && len < (int)sizeof line; r++)
        len += snprintf(line + len, sizeof line - (size_t)len, "\t%s=%llu", dt_loss_reason_name((dt_loss_reason)r),
                        (unsigned long long)(g_session ? dt_session_loss(g_session, (dt_loss_reason)r) : 0));
    if (len < (int)sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, "\tstatus=%s\n", status_text);
    if (len >= (int)sizeof line) { len = (int)sizeof line - 1; line[len - 1] = '\n'; }
    int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)len);
        (void)w;
        close(fd);
    }
}

static void finish(void)
{
    if (getpid() != g_owner_pid || !g_session) return; /* a forked child: not ours */
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_finished, &expected, 1)) return;
    char status[1024] = "";
    if (dt_session_stop(g_session) != DT_OK)
        snprintf(status, sizeof status, "stop failed: %s", dt_last_error());
    else if (dt_session_write(g_session, g_output, g_session->config.format) != DT_OK)
        snprintf(status, sizeof status, "write failed: %s", dt_last_error());
    report(status);
}

static void on_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;
    if (g_pipe[1] >= 0) { ssize_t w = write(g_pipe[1], &b, 1); (void)w; }
    errno = saved;
}

/* Writing a trace is not async-signal-safe: a thread does it, then the
   signal is delivered again with the program's previous disposition. */
static void *signal_thread(void *arg)
{
    (void)arg;
    unsigned char b;
    while (read(g_pipe[0], &b, 1) < 0 && errno == EINTR) {}
    int sig = b;
    finish();
    /* the program's own disposition: its handler, or the default action */
    if (sig > 0 && sig < 65) sigaction(sig, &g_old[sig], NULL);
    kill(getpid(), sig);
    return NULL;
}

static void install_signal_handlers(void)
{
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return;
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
    if (rc != 0) return;
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
}

__attribute__((constructor)) static void devtrace_inject_init(void)
{
    if (dt_env_bool("DEVTRACE_DISABLE") == 1) return;
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.output_path = "devtrace-%p.json";
    dt_config_from_env(&cfg);
    output_path(g_output, sizeof g_output, cfg.output_path);
    g_owner_pid = getpid();
    if (dt_session_create(&cfg, &g_session) != DT_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "not tracing: %s", dt_last_error());
        report(msg);
        g_session = NULL;
        return;
    }
    if (dt_session_start(g_session) != DT_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "not tracing: %s", dt_last_error());
        report(msg);
        dt_session_destroy(g_session);
        g_session = NULL;
        return;
    }
    install_signal_handlers();
    atexit(finish);
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

/* CUDA driver injection entry point. */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    /* The session may already run (the constructor starts it); arming again
       is harmless, and needed when DEVTRACE_DISABLE deferred the session. */
    if (dt_prepare("cupti") != DT_OK) dt_log("InitializeInjection: %s", dt_last_error());
    return 1;
}
