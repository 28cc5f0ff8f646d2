/* On demand, external mode: the program captures through its own profiler
   (e.g. torch.profiler fed by devtrace's Kineto plugin). The listener's
   worker thread posts each CAPTURE to a one-slot mailbox, with a duplicate
   of the client's descriptor that is the program's until dt_control_done,
   and waits for dt_control_done (or the request's timeout and a margin)
   to reply. The program polls dt_control_take at step boundaries: one
   relaxed atomic load while nothing waits. devtrace arms nothing here. */
#include "ondemand/ondemand.h"

#include "base/log.h"
#include "ondemand/config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Beyond the request's timeout (or duration): how long the reply waits for
   the program to report, for writing the trace. */
#define REPLY_MARGIN_NS (30ull * 1000000000ull)

/* The mailbox. pending: a request waits to be taken (read relaxed by
   dt_control_take); the rest under lock. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    _Atomic int pending;
    int taken;     /* the program holds the request */
    int done;      /* ... and reported: result is set */
    int abandoned; /* the reply went out (timeout) while the program held it */
    int stopping;  /* dt_control_stop: a waiting request is withdrawn */
    dt_capture_request request;
    dt_ctl_result result;
} box = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t box_once = PTHREAD_ONCE_INIT;

/* The condition waits on CLOCK_MONOTONIC deadlines. */
static void box_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&box.cond, &a);
    pthread_condattr_destroy(&a);
}

static void set_text(dt_ctl_result *r, dt_ctl_code code, const char *text)
{
    r->code = code;
    snprintf(r->text, sizeof r->text, "%s", text ? text : "");
}

static void deadline_after(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t t = (uint64_t)ts->tv_nsec + ns % 1000000000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull + t / 1000000000ull);
    ts->tv_nsec = (long)(t % 1000000000ull);
}

/* Closes the program's descriptor and empties the slot (lock held). */
static void clear_slot(void)
{
    if (box.request.fd >= 0) close(box.request.fd);
    box.request.fd = -1;
    box.taken = box.done = box.abandoned = 0;
    atomic_store_explicit(&box.pending, 0, memory_order_relaxed);
}

static void external_handler(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *result)
{
    (void)ctx;
    const char *format = req->format[0] ? req->format : "json";
    int f = dt_format_by_name(format);
    if (f < 0 || !dt_format_available((dt_format)f)) {
        snprintf(result->text, sizeof result->text, "the format %s is not one this process writes", format);
        result->code = DT_CTL_BAD_REQUEST;
        return;
    }
    if (req->type == DT_CTL_DUMP) { /* a flight recorder of the program's own, if any */
        char note[96];
        snprintf(note, sizeof note, "asked by devtrace trigger (process %d)", req->peer_pid);
        dt__ondemand_dump_running(fd, (dt_format)f, note, result);
        return;
    }
    pthread_mutex_lock(&box.lock);
    if (box.stopping || box.taken || atomic_load(&box.pending)) {
        /* the program still holds an earlier capture whose reply went out */
        set_text(result, box.stopping ? DT_CTL_CANNOT_ARM : DT_CTL_BUSY,
                 box.stopping ? "this process stops listening" : "the program is still running an earlier capture");
        pthread_mutex_unlock(&box.lock);
        return;
    }
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (mine < 0) {
        snprintf(result->text, sizeof result->text, "cannot keep the output's descriptor: %s", strerror(errno));
        result->code = DT_CTL_CANNOT_ARM;
        pthread_mutex_unlock(&box.lock);
        return;
    }
    memset(&box.request, 0, sizeof box.request);
    box.request.duration_ns = req->duration_ns;
    box.request.steps = req->steps;
    box.request.step_multiple = req->step_multiple;
    box.request.timeout_ns = req->timeout_ns ? req->timeout_ns : DT_ONDEMAND_DEFAULT_TIMEOUT_NS;
    box.request.fd = mine;
    snprintf(box.request.format, sizeof box.request.format, "%s", format);
    atomic_store_explicit(&box.pending, 1, memory_order_release);
    /* the program takes it within the timeout (at a step boundary), then
       has the window and a margin to write the trace */
    struct timespec deadline;
    deadline_after(&deadline, box.request.timeout_ns);
    int rc = 0;
    while (!box.taken && !box.stopping && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&box.cond, &box.lock, &deadline);
    if (box.taken) {
        uint64_t window = req->duration_ns > box.request.timeout_ns ? req->duration_ns : box.request.timeout_ns;
        deadline_after(&deadline, window + REPLY_MARGIN_NS);
        rc = 0;
        while (!box.done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&box.cond, &box.lock, &deadline);
    }
    if (box.done) {
        *result = box.result;
        clear_slot();
    } else if (box.taken) {
        /* the program goes on with it: dt_control_done closes the output */
        box.abandoned = 1;
        set_text(result, DT_CTL_TIMEOUT, "the program took the capture but did not finish it in time");
    } else {
        set_text(result, box.stopping ? DT_CTL_CANNOT_ARM : DT_CTL_TIMEOUT,
                 box.stopping ? "this process stopped listening before it took the capture"
                              : "the program did not take the capture in time (it takes captures at step boundaries)");
        clear_slot();
    }
    pthread_mutex_unlock(&box.lock);
}

static void external_cancel(void)
{
    pthread_mutex_lock(&box.lock);
    box.stopping = 1;
    pthread_cond_broadcast(&box.cond);
    pthread_mutex_unlock(&box.lock);
}

dt_status dt_control_listen_external(void)
{
    pthread_once(&box_once, box_init);
    pthread_mutex_lock(&box.lock);
    int busy = box.taken;
    if (!busy) {
        box.stopping = 0;
        box.request.fd = -1;
    }
    pthread_mutex_unlock(&box.lock);
    if (busy) return dt__error(DT_ERR_STATE, "dt_control_listen_external: the program still holds a capture; call dt_control_done first");
    dt_config config;
    dt_config_init(&config);
    dt_config_from_env(&config);
    const char *backend = config.backend && strcmp(config.backend, "auto") != 0 ? config.backend : "";
    return dt__ondemand_listen(external_handler, NULL, external_cancel, backend);
}

int dt_control_take(dt_capture_request *request)
{
    if (!atomic_load_explicit(&box.pending, memory_order_relaxed)) return 0;
    int took = 0;
    pthread_mutex_lock(&box.lock);
    if (atomic_load_explicit(&box.pending, memory_order_relaxed) && !box.taken && !box.stopping) {
        box.taken = 1;
        pthread_cond_broadcast(&box.cond);
        atomic_store_explicit(&box.pending, 0, memory_order_relaxed);
        if (request) *request = box.request;
        dt__ctl_set_state(DT_CTL_CAPTURING);
        took = 1;
    }
    pthread_mutex_unlock(&box.lock);
    return took;
}

static dt_ctl_code code_of(dt_status status)
{
    switch (status) {
    case DT_OK: return DT_CTL_SUCCESS;
    case DT_ERR_BUSY: return DT_CTL_BUSY;
    case DT_ERR_INVALID_ARGUMENT: return DT_CTL_BAD_REQUEST;
    case DT_ERR_TIMEOUT: return DT_CTL_TIMEOUT;
    default: return DT_CTL_CANNOT_ARM;
    }
}

dt_status dt_control_done(dt_status status, int written, uint64_t records, const char *text)
{
    pthread_mutex_lock(&box.lock);
    if (!box.taken || box.done) {
        pthread_mutex_unlock(&box.lock);
        return dt__error(DT_ERR_STATE, "dt_control_done: no capture was taken (dt_control_take)");
    }
    if (box.abandoned) {
        dt__log("control: a capture ended after its reply had gone out (timeout)");
        clear_slot();
    } else {
        /* a trace written with an error status is a partial window: kept,
           the reply saying why */
        memset(&box.result, 0, sizeof box.result);
        set_text(&box.result, written ? DT_CTL_SUCCESS : code_of(status), text);
        box.result.written = written ? 1 : 0;
        box.result.partial = status != DT_OK && written;
        box.result.records = written ? records : 0;
        box.done = 1;
        pthread_cond_broadcast(&box.cond);
    }
    pthread_mutex_unlock(&box.lock);
    return DT_OK;
}
