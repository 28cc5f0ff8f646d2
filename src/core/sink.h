/*
 * The sink: all a backend sees of the session it records into
 * (src/core/sink.c). The session's fields are core's own
 * (core/session_impl.h, which no other layer includes): a backend holds a
 * session as an opaque dt_session * and writes into it through these calls
 * alone, as btree.c reaches SQLite's Pager only through its calls.
 *
 *   what                          calls
 *   a batch of records            dt__core_lock, dt__core_unlock (one vendor buffer)
 *   a record                      dt__sink_add, dt__times_ok (and core/decode.h's
 *                                 dt__add_device_activity, dt__add_api_call, ...)
 *   a loss, by reason             dt__loss_add
 *   a link the vendor reports     dt__corr_link (correlation id -> External id)
 *   a name                        dt__sink_intern, dt__sink_intern_n
 *   what the session is told      dt__core_note, dt__core_set_library, dt__core_set_device
 *   what the session asks         dt__sink_config, dt__sink_capture, dt__sink_generation,
 *                                 dt__sink_has_device
 *   the flight recorder's ring    dt__sink_has_ring, dt__sink_ring_push (core/flight.h:
 *                                 its beginning and end)
 *   the running session           dt__active_session, dt__g_exiting, dt__g_fork_unusable,
 *                                 dt__core_fork_launch_lost (the vendor's callbacks)
 *   the injection entry           dt__core_awaits, dt__core_attach_deferred
 *                                 (DT_BACKEND_INJECTION_ENTRY)
 *
 * The calls made for every record are inline: they read the part of the
 * session those paths write (dt_sink, at its start), so that an opaque
 * session costs the per-record paths no call. Internal, not installed.
 */
#ifndef DT_CORE_SINK_H
#define DT_CORE_SINK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/contract.h"
#include "core/event.h"

/* The part of a session that the per-record paths write: the first member
   of every session, so that a dt_session * points to it. Read and written
   through the inline calls below (and by core); a backend never names its
   fields. */
typedef struct dt_sink {
    dt_store store;                        /* the records */
    _Atomic uint64_t loss[DT_LOSS_COUNT];  /* records lost, by reason */
    /* the configuration's, as the session was made with it (dt__sink_config) */
    uint64_t max_duration_ns;
    uint32_t capture;                      /* DT_CAPTURE_* */
    _Atomic uint64_t generation;           /* distinguishes sessions for per-thread logs; read by the
                                              program's threads without the lock */
    /* dt__corr_link pairs (correlation, external), merged at stop */
    uint64_t *corr_log;
    size_t corr_log_count, corr_log_cap;
} dt_sink;

static inline dt_sink *dt__sink_of(dt_session *s)
{
    return (dt_sink *)(void *)s;
}
static inline const dt_sink *dt__sink_of_const(const dt_session *s)
{
    return (const dt_sink *)(const void *)s;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
/* Lock around a batch of store/intern/corr updates (one vendor buffer). */
DT_HIDDEN void dt__core_lock(dt_session *s);
DT_HIDDEN void dt__core_unlock(dt_session *s);

/* Count a dropped record. Lock-free. */
static inline void dt__loss_add(dt_session *s, dt_loss_reason r, uint64_t n)
{
    atomic_fetch_add_explicit(&dt__sink_of(s)->loss[r], n, memory_order_relaxed);
}
/* Check a record's vendor timestamps; counts and returns 0 if implausible.
   A start without an end is work a forced flush handed back while it still
   ran (CUPTI does so at stop), not a record without timing. */
static inline int dt__times_ok(dt_session *s, uint64_t start, uint64_t end)
{
    if (start == 0 || end == 0) {
        dt__loss_add(s, start && !end ? DT_LOSS_UNFINISHED : DT_LOSS_TIMESTAMP_ZERO, 1);
        return 0;
    }
    if (end < start) { dt__loss_add(s, DT_LOSS_TIMESTAMP_REVERSED, 1); return 0; }
    if (end - start > dt__sink_of(s)->max_duration_ns) { dt__loss_add(s, DT_LOSS_TIMESTAMP_TOO_LONG, 1); return 0; }
    return 1;
}
/* A zeroed record in the store (lock held), or NULL: counted as store_full. */
static inline dt_rec *dt__sink_add(dt_session *s)
{
    dt_rec *r = dt__store_push(&dt__sink_of(s)->store);
    if (!r) dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
    return r;
}

/* dt__corr_link when the log is full: grows it (core/corr.c). */
DT_HIDDEN void dt__corr_link_grow(dt_session *s, uint64_t correlation, uint64_t external_id);
/* For backends whose vendor reports the mapping in records (CUPTI):
   call with the session lock held (inside dt__core_lock/unlock). It only
   appends to a log (a sequential write, cheap on the vendor's thread); the
   map is filled once, sized for every link, at stop. */
static inline void dt__corr_link(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    dt_sink *k = dt__sink_of(s);
    if (__builtin_expect(k->corr_log_count == k->corr_log_cap, 0)) {
        dt__corr_link_grow(s, correlation, external_id);
        return;
    }
    k->corr_log[2 * k->corr_log_count] = correlation;
    k->corr_log[2 * k->corr_log_count + 1] = external_id;
    k->corr_log_count++;
}

/* A name interned in the session (lock held): its id, UINT32_MAX when out
   of memory. dt__sink_intern_n: len bytes, not NUL-terminated. */
DT_HIDDEN uint32_t dt__sink_intern(dt_session *s, const char *name);
DT_HIDDEN uint32_t dt__sink_intern_n(dt_session *s, const char *name, size_t len);

/* ------------------------------------------------------------------ */
/* What the session is told, and asks                                  */
/* ------------------------------------------------------------------ */
/* Backend-reported facts that go into the trace. */
DT_HIDDEN void dt__core_set_library(dt_session *s, const char *path, const char *version);
/* A degraded feature or other note ("topsptiGetCallbackName", "missing: ...").
   A key is never overwritten: a different text under a key already used is
   appended to it ("; "), the same text again is ignored. Thread-safe. */
DT_HIDDEN void dt__core_note(dt_session *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
DT_HIDDEN void dt__core_set_device(dt_session *s, const dt_device_props *p);
/* Whether device id is described (dt__core_set_device). */
DT_HIDDEN int dt__sink_has_device(const dt_session *s, uint32_t id);

/* The configuration the session was made with (defaults filled in). */
DT_HIDDEN const dt_config *dt__sink_config(const dt_session *s);
/* Its DT_CAPTURE_* bits, for the per-record checks. */
static inline uint32_t dt__sink_capture(const dt_session *s)
{
    return dt__sink_of_const(s)->capture;
}
/* Changes with every start: state a backend keeps per thread outside the
   session (a stack's depth) is the session's only while it matches. */
static inline uint64_t dt__sink_generation(const dt_session *s)
{
    return dt__sink_of_const(s)->generation;
}

/* The flight recorder (core/flight.h): whether s keeps the vendor's
   buffers undecoded in a ring, and a completed buffer of valid bytes
   queued there (1), or not, when s has no ring (0: decode it). */
DT_HIDDEN int dt__sink_has_ring(const dt_session *s);
DT_HIDDEN int dt__sink_ring_push(dt_session *s, uint8_t *buf, size_t valid);

/* ------------------------------------------------------------------ */
/* The running session, for the vendor's callbacks                     */
/* ------------------------------------------------------------------ */
/* The running session, or NULL (acquire load). For vendor callbacks, on
   every API call: inline. */
DT_HIDDEN extern _Atomic(dt_session *) dt__g_active;
static inline dt_session *dt__active_session(void)
{
    return atomic_load_explicit(&dt__g_active, memory_order_acquire);
}
/* Set by the injection library before it stops its session at process
   exit: vendor calls that only spare a running program cost (detaching the
   vendor library) are not made then. */
DT_HIDDEN extern _Atomic int dt__g_exiting;
/* Set in a child forked without exec whose vendor cannot record there
   (dt__core_forked, DT_BACKEND_NO_FORK_CHILD), never cleared: the
   backends' API callbacks, which test it first (one predictable branch),
   then count the child's launches instead (dt__core_fork_launch_lost). */
DT_HIDDEN extern int dt__g_fork_unusable;
/* One launch call made in such a child: counted as lost (forked_child). */
DT_HIDDEN void dt__core_fork_launch_lost(void);

/* ------------------------------------------------------------------ */
/* The injection entry (DT_BACKEND_INJECTION_ENTRY)                    */
/* ------------------------------------------------------------------ */
/* Whether s runs on the null backend waiting for `backend` (a name). */
DT_HIDDEN int dt__core_awaits(const dt_session *s, const char *backend);
/* The waiting backend takes over the running session (on the null
   backend): DT_OK also when none waits. The host ranges and operations
   recorded so far are kept; entries pushed while waiting are attributed
   through API callbacks where the vendor's stack did not see them. */
DT_HIDDEN dt_status dt__core_attach_deferred(dt_session *s);

#endif /* DT_CORE_SINK_H */
