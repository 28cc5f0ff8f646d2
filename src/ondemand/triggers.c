/* The flight recorder's dump triggers at work: the trigger thread, the
   step observer, the dump signal and the dump files (triggers.h). */
#include "ondemand/triggers.h"

#include "api/ondemand_support.h"
#include "base/log.h"
#include "base/os.h"
#include "core/steps.h"
#include "ondemand/ondemand.h"
#include "ondemand/policy.h"
#include "protocol/record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Boundaries waiting for the thread: a bounded ring that any number of
   stepping threads put into without locks (each slot's sequence number
   says whose turn it is); a full ring drops and counts. */
#define STEP_SLOTS 256

typedef struct step_slot {
    _Atomic uint64_t seq;
    uint64_t number, now_ns, duration_ns;
} step_slot;

struct dt_flight_triggers {
    dt_session *session;
    dt_format format;
    char output[4096];
    dt_flight_hooks hooks;
    dt_flight_policy policy; /* the thread's (and stop's, once it has ended) */
    uint64_t next_number;    /* the N of the next dump file */
    uint64_t written, failed; /* the thread's dumps */
    uint64_t asked, asked_failed; /* `devtrace trigger --dump`'s (under mu) */

    step_slot steps[STEP_SLOTS];
    _Atomic uint64_t steps_head;
    uint64_t steps_tail;
    _Atomic uint64_t steps_lost;
    _Atomic int wake_pending;
    int wake[2];   /* steps, syncs, stop */
    int signal_pipe[2];
    int signal;
    struct sigaction old_action;

    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    uint64_t sync_asked, sync_done;
    dt_flight_summary counts; /* under mu, as of the thread's last turn */
    uint64_t median_ns;       /* likewise */
    _Atomic int forked;       /* in a forked child: the thread is not there */
};

/* The write end of the signal's pipe, for the handler (one flight recorder
   per process). */
static volatile sig_atomic_t g_signal_fd = -1;

static void on_dump_signal(int sig)
{
    (void)sig;
    int saved = errno;
    int fd = g_signal_fd;
    if (fd >= 0) {
        char b = 1;
        ssize_t w = write(fd, &b, 1); /* a full pipe drops it: one dump is asked already */
        (void)w;
    }
    errno = saved;
}

static uint64_t now_ns(dt_flight_triggers *t)
{
    return t->hooks.now_ns ? t->hooks.now_ns(t->hooks.ctx) : dt__monotonic_ns();
}

static void wake(dt_flight_triggers *t)
{
    char b = 0;
    ssize_t w = write(t->wake[1], &b, 1);
    (void)w;
}

void dt__ondemand_triggers_step(void *ctx, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns)
{
    (void)t_ns; /* the policy's clock is the monotonic one */
    dt_flight_triggers *t = ctx;
    if (atomic_load_explicit(&t->forked, memory_order_relaxed)) return;
    uint64_t pos = atomic_load_explicit(&t->steps_head, memory_order_relaxed);
    step_slot *slot;
    for (;;) {
        slot = &t->steps[pos % STEP_SLOTS];
        uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (seq == pos) {
            if (atomic_compare_exchange_weak_explicit(&t->steps_head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if ((int64_t)(seq - pos) < 0) {
            atomic_fetch_add_explicit(&t->steps_lost, 1, memory_order_relaxed);
            return;
        } else {
            pos = atomic_load_explicit(&t->steps_head, memory_order_relaxed);
        }
    }
    slot->number = number;
    slot->now_ns = now_ns(t);
    slot->duration_ns = last_duration_ns;
    atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
    if (!atomic_exchange(&t->wake_pending, 1)) wake(t);
}

static void take_steps(dt_flight_triggers *t)
{
    for (;;) {
        step_slot *slot = &t->steps[t->steps_tail % STEP_SLOTS];
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) != t->steps_tail + 1) return;
        dt__ondemand_policy_step(&t->policy, slot->number, slot->now_ns, slot->duration_ns);
        atomic_store_explicit(&slot->seq, t->steps_tail + STEP_SLOTS, memory_order_release);
        t->steps_tail++;
    }
}

/* Reads what a non-blocking pipe holds; whether it held anything. */
static int drain(int fd)
{
    char buf[256];
    int any = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR)) any |= r > 0;
    return any;
}

/* The next dump file, opened new: its number and path, or -1 with errno. */
static int open_dump_file(dt_flight_triggers *t, char *path, size_t n)
{
    for (int tries = 0; tries < 1000; tries++) {
        char tag[32];
        snprintf(tag, sizeof tag, "dump%llu", (unsigned long long)++t->next_number);
        dt__record_tag_path(path, n, t->output, tag);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

/* One dump of the window, for the causes in t->policy.why. */
static void make_dump(dt_flight_triggers *t)
{
    dt_flight_policy *p = &t->policy;
    char path[4200], error[4400] = "";
    dt_flight_dump d = {0, path, p->why, DT_OK, error};
    int fd = open_dump_file(t, path, sizeof path);
    d.number = t->next_number;
    if (fd < 0) {
        d.status = DT_ERR_IO;
        snprintf(error, sizeof error, "cannot create %s: %s", path, strerror(errno));
    } else {
        char skipped[128], key[64], note[700];
        dt__ondemand_policy_skipped(p, skipped, sizeof skipped);
        snprintf(key, sizeof key, "flight_recorder.dump%llu", (unsigned long long)d.number);
        snprintf(note, sizeof note, "%s; %s before it", p->why, skipped);
        d.status = t->hooks.dump(t->hooks.ctx, t->session, fd, t->format, key, note);
        if (d.status != DT_OK) snprintf(error, sizeof error, "%s", dt_last_error());
        if (close(fd) != 0 && d.status == DT_OK) {
            d.status = DT_ERR_IO;
            snprintf(error, sizeof error, "writing %s: %s", path, strerror(errno));
        }
        if (d.status != DT_OK) unlink(path);
    }
    if (d.status == DT_ERR_BUSY) {
        /* another dump (`devtrace trigger --dump`) is being written: it
           holds this window; this one is neither made nor lost */
        if (t->hooks.report) t->hooks.report(t->hooks.ctx, &d);
        return;
    }
    if (d.status == DT_OK) t->written++;
    else t->failed++;
    if (d.status != DT_OK) dt__log("flight recorder: dump %llu (%s) failed: %s", (unsigned long long)d.number, p->why,
                                  error);
    else dt__log("flight recorder: dump %llu (%s): %s", (unsigned long long)d.number, p->why, path);
    if (t->hooks.report) t->hooks.report(t->hooks.ctx, &d);
    dt__ondemand_policy_dumped(p, now_ns(t));
}

static void publish_counts(dt_flight_triggers *t, uint64_t sync_seen)
{
    pthread_mutex_lock(&t->mu);
    t->counts.written = t->written + t->asked;
    t->counts.failed = t->failed + t->asked_failed;
    t->counts.asked = t->asked;
    t->counts.skipped_cooldown = t->policy.skipped_cooldown;
    t->counts.skipped_cap = t->policy.skipped_cap;
    t->counts.steps_lost = atomic_load(&t->steps_lost);
    t->median_ns = dt__ondemand_policy_median(&t->policy);
    if (sync_seen > t->sync_done) t->sync_done = sync_seen;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void *trigger_thread(void *arg)
{
    dt_flight_triggers *t = arg;
    for (;;) {
        /* drained before the requests are read: a request made after the
           read writes its byte after the drain, so the poll below sees it */
        drain(t->wake[0]);
        atomic_exchange(&t->wake_pending, 0); /* an exchange: it sees the steps put before the wake */
        pthread_mutex_lock(&t->mu);
        int stopping = t->stopping;
        uint64_t sync_seen = t->sync_asked;
        pthread_mutex_unlock(&t->mu);
        if (stopping) break;
        take_steps(t);
        if (t->signal_pipe[0] >= 0 && drain(t->signal_pipe[0])) dt__ondemand_policy_signal(&t->policy);
        uint64_t now = now_ns(t), next;
        int due = dt__ondemand_policy_due(&t->policy, now, &next) != 0;
        if (due) make_dump(t); /* no lock held */
        publish_counts(t, sync_seen);
        if (due) continue; /* the dump took time: look again */
        int timeout = -1;
        if (next != UINT64_MAX) {
            uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
            timeout = ms > INT_MAX ? INT_MAX : (int)ms;
        }
        struct pollfd fds[2] = {{t->wake[0], POLLIN, 0}, {t->signal_pipe[0], POLLIN, 0}};
        poll(fds, t->signal_pipe[0] >= 0 ? 2 : 1, timeout);
    }
    return NULL;
}

static int nonblocking_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}

static void close_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) close(fds[i]), fds[i] = -1;
}

static void free_triggers(dt_flight_triggers *t)
{
    close_pipe(t->wake);
    close_pipe(t->signal_pipe);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

static dt_status install_signal(dt_flight_triggers *t, int sig)
{
    if (g_signal_fd >= 0) return dt__error(DT_ERR_BUSY, "the dump signal is taken by another flight recorder");
    if (nonblocking_pipe(t->signal_pipe) != 0)
        return dt__error(DT_ERR_IO, "flight recorder: cannot make the signal's pipe: %s", strerror(errno));
    g_signal_fd = t->signal_pipe[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &t->old_action) != 0) {
        g_signal_fd = -1;
        return dt__error(DT_ERR_INVALID_ARGUMENT, "flight recorder: cannot handle signal %d: %s", sig,
                        strerror(errno));
    }
    t->signal = sig;
    return DT_OK;
}

static void restore_signal(dt_flight_triggers *t)
{
    if (!t->signal) return;
    sigaction(t->signal, &t->old_action, NULL);
    g_signal_fd = -1;
    t->signal = 0;
}

static dt_status session_dump(void *ctx, dt_session *s, int fd, dt_format format, const char *key, const char *text)
{
    (void)ctx;
    return dt__api_dump_noted(s, fd, format, key, text, NULL, NULL);
}

/* A dump `devtrace trigger --dump` asked of the listener: counted and told
   as the thread's own are (a capture is none of the flight recorder's). */
static void trigger_served(void *ctx, const dt_ondemand_served *served)
{
    dt_flight_triggers *t = ctx;
    if (served->type != DT_CTL_DUMP || served->result->code == DT_CTL_BUSY) return;
    int ok = served->result->code == DT_CTL_SUCCESS && served->result->written;
    char why[64];
    snprintf(why, sizeof why, "asked by devtrace trigger (process %d)", served->peer_pid);
    dt_flight_dump d = {0, "", why, ok ? DT_OK : DT_ERR_IO, served->result->text};
    pthread_mutex_lock(&t->mu);
    if (ok) t->asked++;
    else t->asked_failed++;
    pthread_mutex_unlock(&t->mu);
    if (t->hooks.report) t->hooks.report(t->hooks.ctx, &d);
}

/* The process's step boundaries (core/steps.h): ProfilerStep# ranges are
   looked at while the triggers run. */
static void observe_steps(void *ctx, dt_flight_step_observer fn, void *observer_ctx)
{
    (void)ctx;
    if (fn) {
        dt__core_steps_watch(1);
        dt__core_steps_observe(fn, observer_ctx);
    } else {
        dt__core_steps_observe(NULL, NULL);
        dt__core_steps_watch(0);
    }
}

dt_status dt__ondemand_triggers_start(dt_session *s, const char *output, dt_format format, const dt_dump_triggers *cfg,
                                   const dt_flight_hooks *hooks, dt_flight_triggers **out)
{
    *out = NULL;
    if (!output || !hooks)
        return dt__error(DT_ERR_INVALID_ARGUMENT, "dt__ondemand_triggers_start: output and hooks are needed");
    if (strlen(output) >= sizeof((dt_flight_triggers *)0)->output)
        return dt__error(DT_ERR_INVALID_ARGUMENT, "flight recorder: the output path is too long");
    dt_flight_triggers *t = calloc(1, sizeof *t);
    if (!t) return dt__error(DT_ERR_NO_MEMORY, "out of memory starting the flight recorder's triggers");
    t->session = s;
    t->format = format;
    snprintf(t->output, sizeof t->output, "%s", output);
    t->hooks = *hooks;
    if (!t->hooks.observe) t->hooks.observe = observe_steps;
    if (!t->hooks.dump) t->hooks.dump = session_dump;
    dt__ondemand_policy_init(&t->policy, cfg);
    for (uint64_t i = 0; i < STEP_SLOTS; i++) atomic_init(&t->steps[i].seq, i);
    t->wake[0] = t->wake[1] = t->signal_pipe[0] = t->signal_pipe[1] = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (nonblocking_pipe(t->wake) != 0) {
        dt_status st = dt__error(DT_ERR_IO, "flight recorder: cannot make a pipe: %s", strerror(errno));
        free_triggers(t);
        return st;
    }
    if (cfg->signal) {
        dt_status st = install_signal(t, cfg->signal);
        if (st != DT_OK) {
            free_triggers(t);
            return st;
        }
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread takes no signal */
    int rc = pthread_create(&t->thread, NULL, trigger_thread, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        restore_signal(t);
        free_triggers(t);
        return dt__error(DT_ERR_NO_MEMORY, "flight recorder: cannot start its thread: %s", strerror(rc));
    }
    t->thread_started = 1;
    t->hooks.observe(t->hooks.ctx, dt__ondemand_triggers_step, t);
    dt__ondemand_observe(trigger_served, t);
    *out = t;
    return DT_OK;
}

void dt__ondemand_triggers_sync(dt_flight_triggers *t)
{
    pthread_mutex_lock(&t->mu);
    uint64_t asked = ++t->sync_asked;
    pthread_mutex_unlock(&t->mu);
    wake(t);
    pthread_mutex_lock(&t->mu);
    while (t->sync_done < asked) pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void dt__ondemand_triggers_counts(dt_flight_triggers *t, dt_flight_summary *summary)
{
    pthread_mutex_lock(&t->mu);
    *summary = t->counts;
    pthread_mutex_unlock(&t->mu);
}

uint64_t dt__ondemand_triggers_median(dt_flight_triggers *t)
{
    dt__ondemand_triggers_sync(t);
    pthread_mutex_lock(&t->mu);
    uint64_t median = t->median_ns;
    pthread_mutex_unlock(&t->mu);
    return median;
}

void dt__ondemand_triggers_stop(dt_flight_triggers *t, const char *failed, dt_flight_summary *summary)
{
    if (!t) {
        if (summary) memset(summary, 0, sizeof *summary);
        return;
    }
    t->hooks.observe(t->hooks.ctx, NULL, NULL);
    dt__ondemand_observe(NULL, NULL);
    restore_signal(t);
    pthread_mutex_lock(&t->mu);
    t->stopping = 1;
    pthread_mutex_unlock(&t->mu);
    wake(t);
    if (t->thread_started) pthread_join(t->thread, NULL);
    take_steps(t);
    if (dt__ondemand_policy_end(&t->policy, failed, now_ns(t))) make_dump(t);
    /* the dumps were the ring's traces: the stop decodes none of it */
    dt__api_flight_discard_at_stop(t->session);
    publish_counts(t, 0);
    if (summary) *summary = t->counts;
    free_triggers(t);
}

void dt__ondemand_triggers_forked(dt_flight_triggers *t)
{
    if (!t) return;
    atomic_store(&t->forked, 1);
    if (t->signal) sigaction(t->signal, &t->old_action, NULL);
    g_signal_fd = -1;
}
