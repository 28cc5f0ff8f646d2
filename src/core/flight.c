/* The flight recorder's session side: the ring from a backend's start to
   its stop, the window past what was evicted, and the dump's snapshot. */
#include "base/alloc.h"
#include "base/log.h"
#include "base/os.h"
#include "base/units.h"
#include "core/clock.h"
#include "core/corr.h"
#include "core/flight.h"
#include "core/intern.h"
#include "core/session_impl.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

int dt__flight_parse_size(const char *text, uint64_t *bytes)
{
    static const char *const on[] = {"1", "on", "true", "yes"}, *const off[] = {"0", "off", "false", "no"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcasecmp(text, on[i]) == 0) { *bytes = DT_FLIGHT_RECORDER_DEFAULT_BYTES; return 0; }
        if (strcasecmp(text, off[i]) == 0) { *bytes = 0; return 0; }
    }
    uint64_t n;
    if (dt__parse_size(text, &n) != 0 || n == 0 || n == UINT64_MAX) return -1;
    *bytes = n;
    return 0;
}

uint32_t dt__flight_pool_buffers(const dt_session *s)
{
    return dt__ring_buffers(s->config.flight_recorder_bytes, s->config.buffer_size) + DT_RING_RESERVE;
}

dt_status dt__flight_fit_config(dt_config *c)
{
    uint64_t bytes = c->flight_recorder_bytes;
    if (!bytes || bytes == DT_FLIGHT_RECORDER_INVALID) return DT_OK;
    if (bytes < DT_FLIGHT_RECORDER_MIN_BYTES)
        return dt__error(DT_ERR_INVALID_ARGUMENT, "a flight recorder's ring of %llu bytes is too small: it holds at "
                        "least %u buffers of %u bytes (%u bytes)", (unsigned long long)bytes, DT_RING_MIN_BUFFERS,
                        DT_FLIGHT_MIN_BUFFER, DT_FLIGHT_RECORDER_MIN_BYTES);
    /* a ring smaller than its fewest buffers of the configured size: the
       buffers shrink to fit it (whole pages), never below the minimum */
    if (c->buffer_size && bytes / DT_RING_MIN_BUFFERS < c->buffer_size) {
        size_t fit = (size_t)(bytes / DT_RING_MIN_BUFFERS) & ~(size_t)(DT_FLIGHT_MIN_BUFFER - 1);
        c->buffer_size = fit < DT_FLIGHT_MIN_BUFFER ? DT_FLIGHT_MIN_BUFFER : fit;
    }
    return DT_OK;
}

dt_status dt__core_flight_begin(dt_session *s, dt_pool_slot *slot, dt_ring_decode_fn decode, void *ctx)
{
    if (!s->config.flight_recorder_bytes) return DT_OK;
    uint32_t buffers = dt__ring_buffers(s->config.flight_recorder_bytes, s->config.buffer_size);
    dt_ring *r = dt__ring_create(s, buffers, decode, ctx);
    if (!r) return dt__error(DT_ERR_NO_MEMORY, "out of memory for the flight recorder's ring");
    pthread_mutex_lock(&slot->lock);
    dt__ring_set_buffer_size(r, dt__pool_buffer_size(slot->pool));
    pthread_mutex_unlock(&slot->lock);
    if (dt__pool_slot_attach_ring(slot, r) != 0) {
        dt__ring_destroy(r);
        return dt__error(DT_ERR_NO_MEMORY, "the flight recorder's pool has no %u buffers to keep in reserve",
                        DT_RING_RESERVE);
    }
    s->ring = r;
    s->ring_slot = slot;
    s->evicted_until_vendor = s->evicted_until_real = 0;
    return DT_OK;
}

/* One dump at a time: the flag is taken under hold_lock, which the end of
   a session's ring also takes, so that a dump that looks for the running
   session never touches one being destroyed (see dt__core_flight_hold_running). */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_released = PTHREAD_COND_INITIALIZER;
static dt_session *g_held; /* the session a dump holds (one runs at a time: one session runs) */

static int dump_begin(dt_session *s)
{
    int idle = 0;
    return atomic_compare_exchange_strong(&s->dumping, &idle, 1);
}

static dt_status hold_locked(dt_session *s)
{
    if (!s) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: session is NULL");
    if (s->state != DT_STATE_RUNNING || !s->config.flight_recorder_bytes)
        return dt__error(DT_ERR_STATE, "dt_session_dump: the session is not recording with a flight recorder "
                                      "(dt_config.flight_recorder_bytes, DEVTRACE_FLIGHT_RECORDER)");
    if (!dump_begin(s))
        return dt__error(DT_ERR_BUSY, "dt_session_dump: a dump of this session is already being written");
    g_held = s;
    return DT_OK;
}

dt_status dt__core_flight_hold(dt_session *s)
{
    pthread_mutex_lock(&hold_lock);
    dt_status st = hold_locked(s);
    pthread_mutex_unlock(&hold_lock);
    return st;
}

dt_status dt__core_flight_hold_running(dt_session **out)
{
    pthread_mutex_lock(&hold_lock);
    dt_session *s = dt__active_session();
    dt_status st = s ? hold_locked(s)
                     : dt__error(DT_ERR_STATE, "no session records in this process, so it has no flight recorder");
    pthread_mutex_unlock(&hold_lock);
    *out = st == DT_OK ? s : NULL;
    return st;
}

int dt__core_flight_running(void)
{
    pthread_mutex_lock(&hold_lock);
    dt_session *s = dt__active_session();
    int running = s ? (s->config.flight_recorder_bytes ? 2 : 1) : 0;
    pthread_mutex_unlock(&hold_lock);
    return running;
}

void dt__core_flight_release(dt_session *s)
{
    pthread_mutex_lock(&hold_lock);
    atomic_store(&s->dumping, 0);
    if (g_held == s) g_held = NULL;
    pthread_cond_broadcast(&hold_released);
    pthread_mutex_unlock(&hold_lock);
}

void dt__core_flight_discard_at_stop(dt_session *s)
{
    if (s && s->ring) dt__ring_set_discard(s->ring);
}

/* The ring's note in the trace of `s` (the recording session, or a dump's
   snapshot); `ring` is the configuration of the session that owns it. */
static void note_ring(dt_session *s, const dt_config *ring, dt_ring *r, uint32_t decoded)
{
    uint32_t buffers = dt__ring_buffers(ring->flight_recorder_bytes, ring->buffer_size);
    dt__core_note(s, "flight_recorder",
                 "a ring of %" PRIu32 " buffers of %zu bytes (and %u in reserve); %" PRIu64 " buffers evicted "
                 "in all, their records counted as ring_evicted; this trace decodes the %" PRIu32 " buffers the "
                 "ring held, from past the newest evicted record",
                 buffers, ring->buffer_size, DT_RING_RESERVE, dt__ring_evicted_buffers(r), decoded);
}

void dt__core_flight_end(dt_session *s)
{
    dt_ring *r = s->ring;
    if (!r || !s->ring_slot) return;
    /* a dump that runs finishes first; none starts after */
    for (;;) {
        pthread_mutex_lock(&hold_lock);
        int mine = dump_begin(s);
        pthread_mutex_unlock(&hold_lock);
        if (mine) break;
        usleep(1000);
    }
    dt_ring_batch b;
    if (dt__ring_take(r, &b) != 0) {
        dt__core_note(s, "flight_recorder", "out of memory taking the ring's buffers: they are not decoded");
        dt__pool_slot_detach_ring(s->ring_slot);
        s->ring_slot = NULL;
        return;
    }
    if (dt__ring_discarding(r)) {
        /* nobody writes this window (the injection library's program ended
           well): nothing is decoded */
        dt__log("flight recorder: the ring's %u buffers given back undecoded (nobody writes its window)", b.count);
        dt__ring_decode_back(r, &b, NULL, dt__pool_slot_put_to, s->ring_slot);
        dt__pool_slot_detach_ring(s->ring_slot);
        s->ring_slot = NULL;
        return;
    }
    dt__core_lock(s);
    dt__ring_copy_kept(r, s);
    dt__core_unlock(s);
    s->evicted_until_vendor = b.until_vendor;
    s->evicted_until_real = b.until_real;
    uint32_t decoded = b.count;
    dt__ring_decode_back(r, &b, s, dt__pool_slot_put_to, s->ring_slot);
    note_ring(s, &s->config, r, decoded);
    dt__pool_slot_detach_ring(s->ring_slot);
    s->ring_slot = NULL;
}

void dt__core_flight_window(dt_session *s)
{
    uint64_t start = s->window_start_ns;
    if (s->evicted_until_vendor) {
        uint64_t t = dt__clock_map(&s->clock, s->evicted_until_vendor) + 1;
        if (t > start) start = t;
    }
    if (s->evicted_until_real && s->evicted_until_real + 1 > start) start = s->evicted_until_real + 1;
    s->window_start_ns = start;
}

void dt__core_flight_free(dt_session *s)
{
    /* no dump still holds s (a backend without a ring, whose stop does not
       wait for one in dt__core_flight_end) */
    pthread_mutex_lock(&hold_lock);
    while (g_held == s) pthread_cond_wait(&hold_released, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    if (s->ring_slot) dt__pool_slot_detach_ring(s->ring_slot);
    s->ring_slot = NULL;
    dt__ring_destroy(s->ring);
    s->ring = NULL;
}

/* ---- the dump ---- */

/* The vendor's flush on a thread of its own, waited for at most
   DT_FLIGHT_FLUSH_TIMEOUT_MS: a hung device must not hang the dump. The
   job is freed by whichever side lets go last. */
typedef struct flush_job {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    const dt_backend *backend;
    dt_session *s;
    int done, refs;
} flush_job;

static void job_release(flush_job *j)
{
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->lock);
    if (!last) return;
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->cond);
    free(j);
}

static void *flush_main(void *arg)
{
    flush_job *j = arg;
    j->backend->flush(j->backend, j->s);
    pthread_mutex_lock(&j->lock);
    j->done = 1;
    pthread_cond_signal(&j->cond);
    job_release(j);
    return NULL;
}

/* 1 when the flush completed in time. */
static int flush_with_timeout(dt_session *s)
{
    const dt_backend *b = s->backend;
    if (!b || !b->flush) return 1;
    flush_job *j = calloc(1, sizeof *j);
    if (!j) return b->flush(b, s), 1;
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    j->backend = b;
    j->s = s;
    j->refs = 2;
    pthread_t t;
    if (pthread_create(&t, NULL, flush_main, j) != 0) {
        j->refs = 1;
        pthread_mutex_lock(&j->lock);
        job_release(j);
        return b->flush(b, s), 1;
    }
    pthread_detach(t);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)DT_FLIGHT_FLUSH_TIMEOUT_MS * 1000000u;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&j->lock);
    int rc = 0;
    while (!j->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&j->cond, &j->lock, &until);
    int done = j->done;
    job_release(j);
    return done;
}

/* What the recording keeps whole, copied into the snapshot; the host
   records since the last dump and the losses counted since then moved
   into it. s's lock held. */
static int snapshot_of(dt_session *s, dt_session *x)
{
    x->pid = s->pid;
    x->fork_parent = s->fork_parent;
    x->fork_ns = s->fork_ns;
    memcpy(x->process_name, s->process_name, sizeof x->process_name);
    memcpy(x->host_name, s->host_name, sizeof x->host_name);
    x->rank = s->rank;
    memcpy(x->backend_library, s->backend_library, sizeof x->backend_library);
    memcpy(x->backend_version, s->backend_version, sizeof x->backend_version);
    memcpy(x->devices, s->devices, sizeof x->devices);
    pthread_mutex_lock(&s->calib_lock);
    memcpy(x->notes, s->notes, sizeof x->notes);
    x->note_count = s->note_count;
    pthread_mutex_unlock(&s->calib_lock);
    dt__clock_free(&x->clock);
    dt__clock_init(&x->clock, s->clock.identity);
    for (size_t i = 0; i < s->clock.count; i++)
        if (dt__clock_add(&x->clock, s->clock.samples[i]) != 0) return -1;
    pthread_mutex_lock(&s->threads.lock);
    int threads_ok = 1;
    if (s->threads.count) {
        x->threads.v = dt__malloc(s->threads.count * sizeof *x->threads.v);
        if (x->threads.v) {
            memcpy(x->threads.v, s->threads.v, s->threads.count * sizeof *x->threads.v);
            x->threads.count = x->threads.cap = s->threads.count;
        } else {
            threads_ok = 0;
        }
    }
    pthread_mutex_unlock(&s->threads.lock);
    if (!threads_ok || dt__corr_copy_links(x, s) != 0) return -1;
    /* host records since the last dump: moved, their names interned anew */
    for (size_t i = 0; i < s->sink.store.count; i++) {
        const dt_rec *r = dt__store_at(&s->sink.store, i);
        dt_rec *c = dt__sink_add(x);
        if (!c) continue;
        *c = *r;
        c->name = dt__intern_str(&x->names, dt__intern_get(&s->names, r->name));
    }
    dt__store_truncate(&s->sink.store, 0);
    for (int k = 0; k < DT_LOSS_COUNT; k++)
        atomic_store(&x->sink.loss[k], atomic_exchange(&s->sink.loss[k], 0));
    atomic_store(&x->external_unreliable, atomic_load(&s->external_unreliable));
    return 0;
}

dt_status dt__core_flight_snapshot(dt_session *s, dt_session **out)
{
    if (!out) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: out is NULL");
    *out = NULL;
    dt_status st = dt__core_flight_hold(s);
    if (st != DT_OK) return st;
    st = dt__core_flight_snapshot_held(s, out);
    dt__core_flight_release(s);
    return st;
}

dt_status dt__core_flight_snapshot_held(dt_session *s, dt_session **out)
{
    *out = NULL;
    /* the window ends now: what the flush delivers that ends later is
       unfinished, as at stop */
    uint64_t window_end = dt__realtime_ns();
    int flushed = flush_with_timeout(s);
    dt_config c = s->config;
    c.flight_recorder_bytes = 0;
    dt_session *x = NULL;
    dt_status st = dt__core_new(&c, &x);
    if (st != DT_OK) return st;
    atomic_store(&x->backend, atomic_load(&s->backend));
    /* a backend without buffers (null) has no ring: host records only */
    dt_ring *r = s->ring;
    dt_ring_batch b;
    memset(&b, 0, sizeof b);
    if (r && dt__ring_take(r, &b) != 0) {
        dt_session_destroy(x);
        return dt__error(DT_ERR_NO_MEMORY, "dt_session_dump: out of memory");
    }
    dt__core_lock(s);
    int ok = snapshot_of(s, x) == 0;
    x->window_start_ns = s->window_start_ns;
    s->window_start_ns = window_end;
    dt__core_unlock(s);
    x->window_end_ns = window_end;
    x->evicted_until_vendor = b.until_vendor;
    x->evicted_until_real = b.until_real;
    const dt_backend *be = x->backend;
    if (be && be->clock) dt__clock_sample_now(&x->clock, dt__core_backend_clock, be, 16);
    dt__host_clock_read(&x->host_clock);
    if (r) {
        dt__core_lock(x);
        dt__ring_copy_kept(r, x);
        dt__core_unlock(x);
        uint32_t decoded = b.count;
        dt__ring_decode_back(r, &b, x, dt__pool_slot_put_to, s->ring_slot);
        note_ring(x, &s->config, r, decoded);
    }
    if (!flushed)
        dt__core_note(x, "flush", "the vendor's flush did not complete within %u ms: this trace holds what it had "
                                 "delivered", DT_FLIGHT_FLUSH_TIMEOUT_MS);
    if (!ok) dt__core_note(x, "flight_recorder", "out of memory copying what the recording keeps: names, threads or "
                                                "links may be missing");
    dt__core_finish(x);
    *out = x;
    return DT_OK;
}
