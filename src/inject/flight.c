/* The flight recorder in a traced program: its dump triggers start with
   the session (ondemand/triggers.h), each dump is told to `devtrace
   record`, and at the end a program that failed dumps once more, while one
   that did not writes no trace (the ring is no full trace).

   How the program ended is what this library can see of it: the status
   given to exit() and _exit() (interposed), main's return value (main is
   wrapped, through __libc_start_main, only when a flight recorder runs),
   and the ending signals this library handles (SIGINT, SIGTERM, SIGHUP,
   SIGQUIT). It cannot see a crash (SIGSEGV, SIGABRT, ...: no trace is
   written then at all), SIGKILL, nor an exit status that glibc gives exit
   from inside itself (error(), a failed assertion ends by SIGABRT). */
#include "base/log.h"
#include "inject/inject.h"
#include "ondemand/config.h"
#include "ondemand/triggers.h"
#include "protocol/record.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static dt_flight_triggers *g_triggers;
static _Atomic int g_flight_on;
/* the program's exit status as seen (-1: not seen) */
static _Atomic int g_exit_status = -1;

static void report_dump(void *ctx, const dt_flight_dump *d)
{
    (void)ctx;
    if (d->number == 0 && d->status == DT_OK) /* `devtrace trigger --dump`: to its output, which it named */
        dt__inject_report("dumped", 0, "", "%s, to its output", d->why);
    else if (d->number == 0) /* the trigger said it failed, and why: not a trace this run loses */
        dt__inject_report("note", 0, "", "flight recorder: a dump %s failed: %s", d->why, d->error);
    else if (d->status == DT_OK)
        dt__inject_report("dumped", 0, d->path, "dump %llu: %s", (unsigned long long)d->number, d->why);
    else if (d->status == DT_ERR_BUSY)
        dt__inject_report("note", 0, "", "flight recorder: dump %llu (%s) was not made: another dump was being "
                         "written, which holds its window", (unsigned long long)d->number, d->why);
    else
        dt__inject_report("dump_failed", 0, d->path, "dump %llu (%s): %s", (unsigned long long)d->number, d->why,
                         d->error);
}

void dt__inject_flight_start(dt_session *s, const dt_config *cfg, const char *output)
{
    if (!cfg->flight_recorder_bytes) return;
    atomic_store(&g_flight_on, 1);
    dt_dump_triggers triggers;
    char why[512];
    if (dt__ondemand_dump_triggers_from_env(&triggers, why, sizeof why) != 0)
        dt__inject_report("note", 0, "", "flight recorder: %s; the default is used", why);
    dt_flight_hooks hooks = {NULL, NULL, NULL, NULL, report_dump};
    if (dt__ondemand_triggers_start(s, output, cfg->format, &triggers, &hooks, &g_triggers) != DT_OK)
        dt__inject_report("note", 0, "", "flight recorder: no dump triggers: %s", dt_last_error());
}

int dt__inject_flight_on(void)
{
    return atomic_load(&g_flight_on);
}

void dt__inject_flight_exit_status(int status)
{
    /* a vfork child shares this memory: its _exit(127) is not ours */
    if (getpid() != dt__inject_owner) return;
    int unseen = -1;
    atomic_compare_exchange_strong(&g_exit_status, &unseen, status & 0xff);
}

void dt__inject_flight_end(int signal_received)
{
    char how[128] = "";
    int status = atomic_load(&g_exit_status);
    if (signal_received > 0)
        snprintf(how, sizeof how, "was ended by signal %d (%s)", signal_received, strsignal(signal_received));
    else if (status > 0)
        snprintf(how, sizeof how, "exited with status %d", status);
    dt_flight_summary sum;
    int had_triggers = g_triggers != NULL;
    dt__ondemand_triggers_stop(g_triggers, how[0] ? how : NULL, &sum);
    g_triggers = NULL;
    char text[DT_RECORD_MESSAGE_MAX];
    int len = snprintf(text, sizeof text, "%llu dump%s written", (unsigned long long)sum.written,
                       sum.written == 1 ? "" : "s");
    if (sum.failed) len += snprintf(text + len, sizeof text - (size_t)len, ", %llu lost", (unsigned long long)sum.failed);
    len += snprintf(text + len, sizeof text - (size_t)len, "; dumps skipped: %llu (cooldown), %llu (cap)",
                    (unsigned long long)sum.skipped_cooldown, (unsigned long long)sum.skipped_cap);
    if (!had_triggers)
        snprintf(text + len, sizeof text - (size_t)len, "; no dump triggers ran in this process (a child forked "
                 "without exec has none)");
    else if (!how[0])
        snprintf(text + len, sizeof text - (size_t)len, "; the program did not fail: the ring is not written");
    dt__inject_report("ended", 0, "", "%s", text);
}

void dt__inject_flight_forked(void)
{
    dt__ondemand_triggers_forked(g_triggers);
    g_triggers = NULL;
}

/* ------------------------------------------------------------------ */
/* The exit status                                                     */
/* ------------------------------------------------------------------ */
__attribute__((visibility("default"), noreturn)) void exit(int status);
void exit(int status)
{
    static void (*next)(int);
    if (!next) *(void **)&next = dlsym(RTLD_NEXT, "exit");
    dt__inject_flight_exit_status(status);
    if (next) next(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn g_main;

static int main_then_status(int argc, char **argv, char **envp)
{
    int status = g_main(argc, argv, envp);
    dt__inject_flight_exit_status(status);
    return status;
}

/* The program's main is wrapped only when a flight recorder runs (this
   library's constructor has run by now: the dynamic linker runs it before
   the program's entry point). */
__attribute__((visibility("default"))) int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                                                             void (*fini)(void), void (*rtld_fini)(void),
                                                             void *stack_end);
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn next;
    *(void **)&next = dlsym(RTLD_NEXT, "__libc_start_main");
    if (!next) {
        static const char msg[] = "devtrace: the C library's __libc_start_main is not found\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        syscall(SYS_exit_group, 127);
    }
    if (atomic_load(&g_flight_on)) {
        g_main = main;
        main = main_then_status;
    }
    return next(main, argc, argv, init, fini, rtld_fini, stack_end);
}
