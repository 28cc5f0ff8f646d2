/* A session's life after creation: its start with a backend (and the one
   it waits for, attached later), the clock calibrated while it runs, its
   capture window, and its stop. */
#include "base/log.h"
#include "base/os.h"
#include "core/clock.h"
#include "core/contract.h"
#include "core/corr.h"
#include "core/event.h"
#include "core/flight.h"
#include "core/session_impl.h"
#include "core/threads.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

_Atomic(dt_session *) dt__g_active;
static _Atomic(const char *) g_last_backend;

const char *dt__core_last_backend(void) { return atomic_load(&g_last_backend); }
_Atomic int dt__g_exiting;
static _Atomic uint64_t g_generation;

/* Forget what an earlier start recorded (start, stop, start again).
   -1 when out of memory. */
static int session_reset(dt_session *s)
{
    dt__store_free(&s->sink.store);
    dt__store_init(&s->sink.store, s->config.max_events);
    s->collective_count = 0;
    dt__u64map_free(&s->corr);
    dt__corr_forget(s);
    dt__u64map_free(&s->ext_parents);
    int rc = dt__u64map_reserve(&s->corr, 1024) | dt__u64map_reserve(&s->ext_parents, 64);
    for (int i = 0; i < DT_LOSS_COUNT; i++) atomic_store(&s->sink.loss[i], 0);
    atomic_store(&s->kernel_names_cut, 0);
    atomic_store(&s->links_lost, 0);
    atomic_store(&s->parents_lost, 0);
    atomic_store(&s->external_unreliable, 0);
    dt__clock_free(&s->clock);
    s->note_count = 0;
    dt__thread_names_clear(&s->threads);
    s->backend_library[0] = s->backend_version[0] = 0;
    memset(s->devices, 0, sizeof s->devices);
    s->evicted_until_vendor = s->evicted_until_real = 0;
    atomic_store(&s->dumping, 0);
    return rc;
}

int dt__core_backend_clock(const void *backend, uint64_t *ns)
{
    const dt_backend *b = backend;
    return b->clock(b, ns);
}

/* A reading of the vendor's clock, kept: made with no lock held (its
   buffer callbacks take the session's), kept under it. When the clock no
   longer reads the domain of the reading before (another client of the
   vendor made it count otherwise), a second one, 1 ms later, gives the new
   domain a rate of its own. 0, or -1 when the clock could not be read. */
static int sample_clock(dt_session *s, const dt_backend *b, int tries)
{
    dt_clock_sample sample;
    if (dt__clock_read(dt__core_backend_clock, b, tries, &sample) != 0) return -1;
    dt__core_lock(s);
    int moved = s->clock.count && !dt__clock_same_domain(&s->clock.samples[s->clock.count - 1], &sample);
    int rc = dt__clock_add(&s->clock, sample);
    dt__core_unlock(s);
    if (!moved || rc != 0) return rc;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    if (dt__clock_read(dt__core_backend_clock, b, tries, &sample) != 0) return 0;
    dt__core_lock(s);
    dt__clock_add(&s->clock, sample);
    dt__core_unlock(s);
    return 0;
}

static void *calibrator_main(void *arg)
{
    dt_session *s = arg;
    struct timespec next;
    pthread_mutex_lock(&s->calib_lock);
    while (!s->calib_stop) {
        clock_gettime(CLOCK_REALTIME, &next);
        uint64_t ns = (uint64_t)next.tv_nsec + (uint64_t)s->config.calibration_period_ms * 1000000u;
        next.tv_sec += (time_t)(ns / 1000000000u);
        next.tv_nsec = (long)(ns % 1000000000u);
        int rc = 0;
        while (!s->calib_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->calib_cond, &s->calib_lock, &next);
        if (s->calib_stop) break;
        pthread_mutex_unlock(&s->calib_lock);
        sample_clock(s, s->backend, 8);
        pthread_mutex_lock(&s->calib_lock);
    }
    pthread_mutex_unlock(&s->calib_lock);
    return NULL;
}

static void start_calibrator(dt_session *s)
{
    if (s->backend->clock && s->config.calibration_period_ms &&
        pthread_create(&s->calibrator, NULL, calibrator_main, s) == 0)
        s->calibrator_running = 1;
}

dt_status dt__core_try_backend(dt_session *s, const dt_backend *b)
{
    if (s->config.flight_recorder_bytes && !(b->caps & DT_BACKEND_FLIGHT_RECORDER))
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "the %s backend has no flight recorder "
                        "(dt_config.flight_recorder_bytes, DEVTRACE_FLIGHT_RECORDER): record without one, or "
                        "with a backend that has it (docs/on-demand.md)", b->name);
    const dt_backend *before = s->backend;
    s->backend = b;
    dt__clock_free(&s->clock);
    dt__clock_init(&s->clock, b->clock == NULL);
    dt_status st = b->start(b, s);
    if (st != DT_OK) { s->backend = before; return st; }
    atomic_store(&g_last_backend, b->name);
    /* (a sample read but not kept for lack of memory is noted at stop) */
    if (b->clock && dt__clock_sample_now(&s->clock, dt__core_backend_clock, b, 16) != 0 && !s->clock.unkept)
        dt__core_note(s, "clock", "the %s clock could not be read at start", b->name);
    return DT_OK;
}

dt_status dt__core_begin(dt_session *s)
{
    if (!s) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_start: session is NULL");
    if (s->state == DT_STATE_RUNNING) return dt__error(DT_ERR_STATE, "dt_session_start: the session is already running");
    const char *busy = "another devtrace session is running in this process; vendor interfaces are process-wide, so stop it first";
    if (atomic_load(&dt__g_active)) return dt__error(DT_ERR_BUSY, "%s", busy);
    /* Everything a thread of the program reads from the session is set
       before the session is published as the active one. Under the
       session's lock: a thread of the program may still be about to record
       into it what began in its previous start (a range it pops); the
       generation it checks there changes with the reset. */
    dt__core_lock(s);
    if (s->state == DT_STATE_STOPPED && session_reset(s) != 0) {
        dt__core_unlock(s);
        return dt__error(DT_ERR_NO_MEMORY, "out of memory restarting the session");
    }
    s->sink.generation = atomic_fetch_add(&g_generation, 1) + 1;
    dt__core_unlock(s);
    atomic_store(&s->attaching, 0);
    s->window_start_ns = dt__realtime_ns();
    s->window_end_set = 0;
    s->backend = NULL;
    dt_session *expected = NULL;
    if (!atomic_compare_exchange_strong(&dt__g_active, &expected, s)) return dt__error(DT_ERR_BUSY, "%s", busy);
    return DT_OK;
}

dt_status dt__core_started(dt_session *s, dt_status st, int awaiting)
{
    if (st != DT_OK) {
        atomic_store(&dt__g_active, NULL);
        s->state = DT_STATE_CREATED;
        return st;
    }
    atomic_store(&s->awaiting_vendor, awaiting);
    atomic_store(&s->unheld_entries, 0);
    dt__store_prepare(1);
    s->calib_stop = 0;
    s->calibrator_running = 0;
    start_calibrator(s);
    s->state = DT_STATE_RUNNING;
    dt__log("session started with backend %s", s->backend->name);
    return DT_OK;
}

int dt__core_awaits(const dt_session *s, const char *backend)
{
    return s && atomic_load(&((dt_session *)s)->awaiting_vendor) && s->deferred &&
           strcmp(s->deferred->name, backend) == 0;
}

dt_status dt__core_attach_deferred(dt_session *s)
{
    if (!s || s->state != DT_STATE_RUNNING || !atomic_load(&s->awaiting_vendor)) return DT_OK;
    /* once, even when the vendor's runtime calls back into here while the
       backend starts */
    int idle = 0;
    if (!atomic_compare_exchange_strong(&s->attaching, &idle, 1)) return DT_OK;
    const dt_backend *b = s->deferred;
    dt_status st = dt__core_try_backend(s, b);
    if (st != DT_OK) {
        char why[448];
        snprintf(why, sizeof why, "%s", dt_last_error());
        atomic_store(&s->awaiting_vendor, 0);
        dt__core_note(s, b->name, "could not attach when the process initialised the device: %s", why);
        return dt__error(st, "%s", why);
    }
    atomic_store(&s->awaiting_vendor, 0);
    /* what was pushed meanwhile is on devtrace's stacks only */
    if (atomic_load(&s->unheld_entries) > 0 && b->attribute_by_api_enter && b->attribute_by_api_enter(b) != DT_OK)
        dt__core_note(s, "external_ids", "External ids pushed before %s attached could not be attributed "
                        "through API callbacks: device work launched directly inside them carries none", b->name);
    pthread_mutex_lock(&s->calib_lock);
    s->calib_stop = 0;
    pthread_mutex_unlock(&s->calib_lock);
    start_calibrator(s);
    dt__log("session attached to backend %s", b->name);
    return DT_OK;
}

void dt__core_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns)
{
    if (!s || s->state != DT_STATE_RUNNING || end_ns < start_ns) return;
    s->window_start_ns = start_ns;
    s->window_end_set = end_ns ? end_ns : 1;
}

dt_status dt__core_release_backend(dt_session *s, const char *to)
{
    if (!s || s->state != DT_STATE_RUNNING) return DT_OK;
    /* before it attached: the backend waited for is given away */
    const dt_backend *b = atomic_load(&s->awaiting_vendor) && s->deferred ? s->deferred : s->backend;
    return b && b->release ? b->release(b, s, to) : DT_OK;
}

dt_status dt_session_stop(dt_session *s)
{
    if (!s) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_stop: session is NULL");
    if (s->state != DT_STATE_RUNNING) return dt__error(DT_ERR_STATE, "dt_session_stop: the session is not running");
    /* The window closes now: activity still executing is outside it. */
    s->window_end_ns = s->window_end_set ? s->window_end_set : dt__realtime_ns();
    dt__host_clock_read(&s->host_clock);
    /* a forked child whose vendor cannot be used there calls it no more */
    const dt_backend *vendor = s->fork_vendor_unusable ? NULL : s->backend;
    if (s->fork_vendor_unusable)
        dt__core_note(s, "fork", "process %u was forked without exec from process %u, whose %s was armed: %s "
                        "cannot record in such a child, so its device activity is not recorded; its launch calls "
                        "are counted as lost (forked_child), and host ranges and operations are recorded",
                        s->pid, s->fork_parent, s->backend->name, s->backend->name);
    else if (s->fork_parent)
        dt__core_note(s, "fork", "process %u was forked without exec from process %u; this trace holds what it "
                        "did after the fork, and the trace of process %u what came before", s->pid,
                        s->fork_parent, s->fork_parent);
    dt_status flush_st = vendor && vendor->flush ? vendor->flush(vendor, s) : DT_OK;
    if (flush_st != DT_OK) dt__core_note(s, "flush", "%s", dt_last_error());
    if (s->calibrator_running) {
        pthread_mutex_lock(&s->calib_lock);
        s->calib_stop = 1;
        pthread_cond_signal(&s->calib_cond);
        pthread_mutex_unlock(&s->calib_lock);
        pthread_join(s->calibrator, NULL);
        s->calibrator_running = 0;
    }
    size_t unkept = s->clock.unkept;
    if (vendor && vendor->clock && sample_clock(s, vendor, 16) != 0 &&
        s->clock.unkept == unkept)
        dt__core_note(s, "clock", "the %s clock could not be read at stop", s->backend->name);
    if (s->clock.unkept)
        dt__core_note(s, "clock_samples", "out of memory: %zu clock samples were not kept; the clock map "
                        "and its error bound rest on the %zu others", s->clock.unkept, s->clock.count);
    if (atomic_exchange(&s->awaiting_vendor, 0) && strcmp(s->backend_request, s->deferred->name) == 0)
        dt__core_note(s, s->deferred->name, "not attached: the process never initialised the device (its runtime "
                        "never called the injection entry point)");
    dt_status stop_st = vendor && vendor->stop ? vendor->stop(vendor, s) : DT_OK;
    if (stop_st != DT_OK) dt__core_note(s, "stop", "%s", dt_last_error());
    atomic_store_explicit(&dt__g_active, NULL, memory_order_release);
    dt__store_prepare(0);
    dt__thread_names_sweep(s);
    dt__core_finish(s);
    dt__core_flight_free(s);
    dt__log("session stopped: %zu events kept, %llu lost", s->sink.store.count,
           (unsigned long long)dt_session_loss_total(s));
    return DT_OK;
}
