/* On demand, capture mode (dt_control_listen): while idle nothing is
   armed; each CAPTURE makes a session from the stored configuration,
   starts it (arming the vendor), captures the window asked for, stops it
   with the session's window set to exactly that window, writes the trace
   to the client's descriptor and destroys the session. A DUMP writes the
   flight recorder of the running session. Both run on the control
   listener's worker thread (src/protocol/control_server.c).

   Windows (realtime, the clock of the trace):
   - duration D: [t, t + D), t when the session has started;
   - N steps from a multiple of M: [boundary of step S, boundary of step
     S + N), S the first step whose number is a multiple of M (M 0 or 1:
     the next step) to begin after the session started; waiting for the
     steps gives up after the request's timeout (default 60 s): before S
     began, nothing is written (ERR timeout).
   A window cut short (its last step did not come in time, or the process
   stopped listening or ended during it) is written as far as it came: the
   reply is OK partial=1, its text saying why, then what was lost. A steps
   window stopped before it began writes nothing (OK written=0, the text
   saying why).
   What the vendor delivers outside the window counts as outside_window
   (or unfinished: it began inside and ended after), so that every event
   of the trace lies in the window. A capture records with no flight
   recorder, whatever the configuration says (DEVTRACE_FLIGHT_RECORDER in
   the environment of a dt_control_listen(NULL) program): a ring would
   keep only the window's last part. */
#include "ondemand/ondemand.h"

#include "api/ondemand_support.h"
#include "base/log.h"
#include "base/os.h"
#include "core/steps.h"
#include "ondemand/config.h"
#include "protocol/record.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>


static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    int stopping;        /* dt_control_stop: a capture that waits ends now */
    dt_config config;
    char backend[64];
    /* The captures' session, made at the first and started again for each
       (only the listener's worker uses it). It is never freed: a vendor
       callback that began before a capture's stop may still read it after
       (its store is reset at the next start). A new dt_control_listen, with
       its own configuration, makes a new one. */
    dt_session *session;
} cap = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t cap_once = PTHREAD_ONCE_INIT;

static void cap_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cap.cond, &a);
    pthread_condattr_destroy(&a);
}

static void fail(dt_ctl_result *r, dt_ctl_code code, const char *text)
{
    r->code = code;
    snprintf(r->text, sizeof r->text, "%s", text);
}

/* Sleeps until realtime `until` or dt_control_stop; 0, or -1 when stopped. */
static int wait_until(uint64_t until)
{
    int stopped = 0;
    pthread_mutex_lock(&cap.lock);
    for (;;) {
        uint64_t now = dt__realtime_ns();
        if (cap.stopping) stopped = 1;
        if (stopped || now >= until) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (until - now);
        ts.tv_sec = (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        pthread_cond_timedwait(&cap.cond, &cap.lock, &ts);
    }
    pthread_mutex_unlock(&cap.lock);
    return stopped ? -1 : 0;
}

static int stopping(void)
{
    pthread_mutex_lock(&cap.lock);
    int s = cap.stopping;
    pthread_mutex_unlock(&cap.lock);
    return s;
}

/* The boundary of step `target` that began at or after since (realtime),
   or of the first step numbered past it when the numbers skip it: 0 with
   it in *number and *t, -1 at the deadline or on stop. A step that began
   while this thread was not waiting yet is found in the latest
   boundaries. */
static int boundary(uint64_t target, uint64_t since, uint64_t deadline, uint64_t *number, uint64_t *t)
{
    if (dt__core_step_find(target, since, t) == 0) {
        *number = target;
        return 0;
    }
    if (stopping() || dt__core_step_wait(target, deadline, number, t) != 0) return -1;
    if (*number != target && dt__core_step_find(target, since, t) == 0) *number = target;
    return 0;
}

/* The steps window: 0 with [*start, *end); 1 when it began but its end did
   not come (*end: now); -1 when it never began; -2 when it would end past
   step 2^64-1 (*beyond: the step it would begin after). armed: when the
   session started (realtime). */
static int steps_window(const dt_ctl_request *req, uint64_t armed, uint64_t *start, uint64_t *end, uint64_t *beyond)
{
    uint64_t timeout = req->timeout_ns ? req->timeout_ns : DT_ONDEMAND_DEFAULT_TIMEOUT_NS;
    uint64_t deadline = dt__monotonic_ns() + timeout;
    uint64_t multiple = req->step_multiple > 1 ? req->step_multiple : 1, first = 0, t = 0, n = 0;
    if (stopping() || dt__core_step_wait(0, deadline, &first, &t) != 0) return -1;
    while (first % multiple != 0) { /* the next multiple (numbers may skip it) */
        if (first / multiple + 1 > UINT64_MAX / multiple) {
            *beyond = first;
            return -2;
        }
        if (boundary((first / multiple + 1) * multiple, armed, deadline, &first, &t) != 0) return -1;
    }
    if (first > UINT64_MAX - req->steps) { /* a ProfilerStep# numbering near 2^64 */
        *beyond = first;
        return -2;
    }
    *start = t;
    dt__ctl_set_state(DT_CTL_CAPTURING);
    if (boundary(first + req->steps, *start, deadline, &n, &t) == 0) {
        dt__log("control: a window of steps %llu to %llu", (unsigned long long)first, (unsigned long long)n);
        *end = t;
        return 0;
    }
    *end = dt__realtime_ns();
    return 1;
}

static void capture(const dt_ctl_request *req, int fd, dt_format format, dt_ctl_result *res)
{
    int running = dt__api_flight_running();
    if (running) {
        fail(res, DT_CTL_BUSY, running == 2 ? "this process records with a flight recorder: `devtrace trigger --dump` "
                                              "writes its window"
                                            : "another devtrace session is running in this process");
        return;
    }
    dt_session *s = cap.session;
    dt_status st = s ? DT_OK : dt_session_create(&cap.config, &s);
    if (st == DT_OK) {
        cap.session = s;
        if (req->steps) dt__core_steps_watch(1); /* before the vendor is armed: no boundary is missed */
        st = dt_session_start(s);
        if (st != DT_OK && req->steps) dt__core_steps_watch(0);
    }
    if (st != DT_OK) {
        dt_session *other = dt__api_active_session();
        fail(res, other && other != s ? DT_CTL_BUSY : DT_CTL_CANNOT_ARM, dt_last_error());
        return;
    }
    snprintf(res->backend, sizeof res->backend, "%s", dt_session_backend(s));
    dt__ondemand_exit_after_runtime();
    uint64_t start = 0, end = 0, beyond = 0, armed = dt__realtime_ns();
    /* 0: the window; 1: cut short (timeout or stop); -1: none; -2: past step 2^64-1 */
    int outcome = 0;
    if (req->steps) {
        outcome = steps_window(req, armed, &start, &end, &beyond);
        dt__core_steps_watch(0);
    } else {
        dt__ctl_set_state(DT_CTL_CAPTURING);
        start = dt__realtime_ns();
        end = start + req->duration_ns; /* at most DT_CTL_MAX_WINDOW_NS (dt__ctl_parse) */
        if (wait_until(end) != 0) {
            outcome = 1;
            end = dt__realtime_ns();
        }
    }
    if (outcome >= 0) dt__api_set_window(s, start, end);
    dt_session_stop(s);
    uint64_t loss[DT_LOSS_COUNT];
    for (int r = 0; r < DT_LOSS_COUNT; r++) loss[r] = dt_session_loss(s, (dt_loss_reason)r);
    char lost[900];
    dt__record_loss_summary(lost, sizeof lost, loss);
    if (outcome == -2) {
        res->code = DT_CTL_BAD_REQUEST;
        snprintf(res->text, sizeof res->text, "the steps here are numbered from %llu: %llu steps from a multiple "
                 "of %llu would end past step 18446744073709551615, the last there is; no trace written",
                 (unsigned long long)beyond, (unsigned long long)req->steps,
                 (unsigned long long)(req->step_multiple > 1 ? req->step_multiple : 1));
        return;
    }
    if (outcome < 0) {
        int stopped = stopping();
        res->code = stopped ? DT_CTL_SUCCESS : DT_CTL_TIMEOUT;
        if (stopped)
            snprintf(res->text, sizeof res->text, "%s before the window's first step: no trace written",
                     dt__ondemand_stop_reason());
        else
            snprintf(res->text, sizeof res->text, "the window's first step did not begin before the timeout: no trace "
                                                  "written");
        return;
    }
    st = dt_session_write_fd(s, fd, format);
    res->written = st == DT_OK;
    res->records = res->written ? dt_session_event_count(s) : 0;
    res->code = DT_CTL_SUCCESS;
    char wrote[512] = "";
    if (st != DT_OK) snprintf(wrote, sizeof wrote, "the trace could not be written: %s; ", dt_last_error());
    if (outcome == 0) {
        snprintf(res->text, sizeof res->text, "%s%s", wrote, lost);
        return;
    }
    res->partial = 1;
    int timed_out = req->steps && !stopping();
    snprintf(res->text, sizeof res->text, "%.200s%s: the trace holds what came until then%s; %.700s",
             timed_out ? "the window's last step did not begin before the timeout" : dt__ondemand_stop_reason(),
             timed_out ? "" : " during the window", res->written ? "" : " (not written)", lost);
    if (wrote[0]) snprintf(res->text + strlen(res->text), sizeof res->text - strlen(res->text), "; %s", wrote);
}

static void capture_handler(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *res)
{
    (void)ctx;
    const char *name = req->format[0] ? req->format : "json";
    int format = dt_format_by_name(name);
    if (format < 0 || !dt_format_available((dt_format)format)) {
        res->code = DT_CTL_BAD_REQUEST;
        snprintf(res->text, sizeof res->text, "the format %s is not one this process writes", name);
        return;
    }
    if (req->type == DT_CTL_DUMP) {
        char note[96];
        snprintf(note, sizeof note, "asked by devtrace trigger (process %d)", req->peer_pid);
        dt__ondemand_dump_running(fd, (dt_format)format, note, res);
    } else {
        capture(req, fd, (dt_format)format, res);
    }
}

static void capture_cancel(void)
{
    pthread_mutex_lock(&cap.lock);
    cap.stopping = 1;
    pthread_cond_broadcast(&cap.cond);
    pthread_mutex_unlock(&cap.lock);
    dt__core_steps_wake();
}

dt_status dt_control_listen(const dt_config *config)
{
    pthread_once(&cap_once, cap_init);
    if (dt_control_listening())
        return dt__error(DT_ERR_STATE, "this process already listens on %s", dt__ctl_socket_path());
    dt_config c;
    if (config) {
        c = *config;
    } else {
        dt_config_init(&c);
        dt_config_from_env(&c);
    }
    pthread_mutex_lock(&cap.lock);
    cap.stopping = 0;
    cap.session = NULL; /* not freed: see cap.session */
    cap.config = c;
    snprintf(cap.backend, sizeof cap.backend, "%s", c.backend ? c.backend : "auto");
    cap.config.backend = cap.backend;
    cap.config.output_path = NULL; /* the client's descriptor is the output */
    cap.config.flight_recorder_bytes = 0; /* a capture is its whole window (above) */
    pthread_mutex_unlock(&cap.lock);
    return dt__ondemand_listen(capture_handler, NULL, capture_cancel, cap.backend);
}
