/*
 * The session: what it holds while it records, and the calls every part of
 * the recording makes on it (src/core/session.c). Internal, not installed.
 */
#ifndef DT_CORE_SESSION_H
#define DT_CORE_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "base/hash.h"
#include "core/clock.h"
#include "core/contract.h"
#include "core/corr.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/jobinfo.h"
#include "core/recording.h"
#include "core/threads.h"

/* ------------------------------------------------------------------ */
/* The session                                                         */
/* ------------------------------------------------------------------ */
enum dt_session_state { DT_STATE_CREATED, DT_STATE_RUNNING, DT_STATE_STOPPED };


typedef struct dt_corr_chunk dt_corr_chunk;

struct dt_session {
    dt_config config;
    char *output_path;
    char *backend_request;        /* as configured: "auto" or a name */
    /* chosen at start; replaced once, by dt_core_attach_deferred, while
       the program's threads read it */
    _Atomic(const dt_backend *) backend;
    /* dt_select_start_deferring (src/api): the backend that waits for the vendor's
       runtime to call the injection entry point, until attached or never */
    const dt_backend *deferred;
    _Atomic int awaiting_vendor;      /* running without it, waiting */
    _Atomic int attaching;
    /* entries of the external-correlation stacks pushed while waiting: the
       vendor's own stacks do not hold them */
    _Atomic int64_t unheld_entries;
    int state;
    uint64_t generation;          /* distinguishes sessions for per-thread logs */

    pthread_mutex_t lock;         /* store, names, launches, corr, notes */
    dt_store store;
    dt_intern names;
    dt_launch_table launches;
    dt_collective *collectives;   /* DT_EVENT_COLLECTIVE details, by u.collective.info */
    uint32_t collective_count, collective_cap;
    /* Links resolved at stop: vendors count correlation ids up, so they
       usually fill a table indexed by id - corr_dense_base (external id + 1;
       0: no link); ids outside it go to the map (vendor correlation ->
       external id; key 0, "no correlation", is never stored). */
    dt_u64map corr;
    uint64_t *corr_dense;
    uint64_t corr_dense_base;
    size_t corr_dense_len, corr_dense_count;
    dt_corr_chunk *corr_chunks;   /* per-thread link logs, merged at stop */
    uint64_t *corr_log;           /* dt_corr_link pairs (correlation, external), merged at stop */
    size_t corr_log_count, corr_log_cap;
    /* An external id pushed inside a user range -> that range's id (key: id + 1,
       since 0 is a valid external id). Device activity is attributed to the
       innermost entry; this lets a range's device time include the operations
       run inside it. Filled at stop from per-thread logs. */
    dt_corr_chunk *parent_chunks;
    dt_u64map ext_parents;
    /* The vendor's stack refused an id that could not be attributed
       otherwise: its External-correlation records may name an enclosing id,
       so they are not used (see corr.c). */
    _Atomic int external_unreliable;

    _Atomic uint64_t loss[DT_LOSS_COUNT];
    /* Damage short of losing a record, noted in the trace at stop. */
    _Atomic uint64_t kernel_names_cut;  /* longer than DT_MAX_KERNEL_NAME */
    _Atomic uint64_t links_lost;        /* External id links: out of memory */
    _Atomic uint64_t parents_lost;      /* operation -> enclosing range: out of memory */

    dt_clock clock;
    pthread_t calibrator;
    int calibrator_running;
    pthread_mutex_t calib_lock;
    pthread_cond_t calib_cond;
    int calib_stop;

    uint64_t window_start_ns, window_end_ns; /* realtime capture window */
    uint64_t window_end_set;      /* dt_core_set_window's end (0: the stop's time) */
    uint32_t pid;
    /* In a child forked without exec (dt_core_forked): the parent's pid
       (0: not forked), when, the records stored before, and whether the
       vendor cannot be used here (the backend's DT_BACKEND_NO_FORK_CHILD). */
    uint32_t fork_parent;
    uint64_t fork_ns;
    size_t fork_store_count;
    int fork_vendor_unusable;
    int fork_vendor_quiet; /* the backend's fork_child has run (dt_core_fork_child) */
    char process_name[256];       /* the command line, program's base name first */
    dt_thread_names threads;
    char host_name[256];
    dt_rank_info rank;
    dt_host_clock host_clock;     /* read at stop */
    char backend_library[512];
    char backend_version[64];
    struct { char key[64]; char text[448]; } notes[DT_MAX_NOTES];
    int note_count;

    dt_device_props devices[DT_MAX_DEVICES];

    /* The flight recorder (core/flight.h): the ring and the pool slot it
       lends through, while running; the newest evicted record's time (the
       vendor's clock, and realtime; 0: none) that the window starts past. */
    struct dt_ring *ring;
    struct dt_pool_slot *ring_slot;
    uint64_t evicted_until_vendor, evicted_until_real;
    _Atomic int dumping;          /* one dump at a time */
};

/* The External id linked to a vendor correlation id, after stop. */
static inline int dt_corr_get(const dt_session *s, uint64_t correlation, uint64_t *external_id)
{
    uint64_t at = correlation - s->corr_dense_base;
    if (correlation != 0 && at < s->corr_dense_len && s->corr_dense[at]) {
        *external_id = s->corr_dense[at] - 1;
        return 1;
    }
    return s->corr.count && dt_corr_map_get(s, correlation, external_id);
}


/* For backends whose vendor reports the mapping in records (CUPTI):
   call with the session lock held (inside dt_core_lock/unlock). It only
   appends to a log (a sequential write, cheap on the vendor's thread); the
   map is filled once, sized for every link, at stop. */
static inline void dt_corr_link(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    if (__builtin_expect(s->corr_log_count == s->corr_log_cap, 0)) {
        dt_corr_link_grow(s, correlation, external_id);
        return;
    }
    s->corr_log[2 * s->corr_log_count] = correlation;
    s->corr_log[2 * s->corr_log_count + 1] = external_id;
    s->corr_log_count++;
}

/* Lock around a batch of store/intern/corr updates (one vendor buffer). */
DT_HIDDEN void dt_core_lock(dt_session *s);
DT_HIDDEN void dt_core_unlock(dt_session *s);
/* A session is made and started by the API (src/api), which chooses the
   backend: the core never names one. dt_core_new: dt_session_create
   without the backend's name checked (config->backend is kept as the
   request, "auto" or a name). */
DT_HIDDEN dt_status dt_core_new(const dt_config *config, dt_session **out);
/* Starting, in three steps: dt_core_begin makes s the process's running
   session (or fails: not started); dt_core_try_backend starts backend b
   for it, as many times as the caller tries backends (s->backend stays the
   last that started); dt_core_started ends the start with st, the
   outcome of the tries: DT_OK runs s (awaiting: on the null backend,
   waiting for s->deferred to attach), anything else undoes the begin and
   returns st. */
DT_HIDDEN dt_status dt_core_begin(dt_session *s);
DT_HIDDEN dt_status dt_core_try_backend(dt_session *s, const dt_backend *b);
DT_HIDDEN dt_status dt_core_started(dt_session *s, dt_status st, int awaiting);
/* The waiting backend takes over the running session (on the null
   backend): DT_OK also when none waits. The host ranges and operations
   recorded so far are kept; entries pushed while waiting are attributed
   through API callbacks where the vendor's stack did not see them. */
DT_HIDDEN dt_status dt_core_attach_deferred(dt_session *s);
/* Whether s runs on the null backend waiting for `backend` (a name). */
DT_HIDDEN int dt_core_awaits(const dt_session *s, const char *backend);
/* The capture window of the running session s is [start_ns, end_ns)
   (realtime), not start to stop: what lies outside counts as
   outside_window (or unfinished) at stop. An on-demand capture's window
   opens at a step boundary after the session started, and closes at one
   before it stops. */
DT_HIDDEN void dt_core_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns);
/* Give s's vendor interface to another client (backend.h: release); while
   s waits for its deferred backend, that backend's. */
DT_HIDDEN dt_status dt_core_release_backend(dt_session *s, const char *to);

/* A backend's clock as a dt_clock_fn (core/clock.h): ctx is the backend. */
DT_HIDDEN int dt_core_backend_clock(const void *backend, uint64_t *ns);

/* Set by the injection library before it stops its session at process
   exit: vendor calls that only spare a running program cost (detaching the
   vendor library) are not made then. */
DT_HIDDEN extern _Atomic int dt_g_exiting;

/* Set in a child forked without exec whose vendor cannot record there
   (dt_core_forked, DT_BACKEND_NO_FORK_CHILD), never cleared: the
   backends' API callbacks, which test it first (one predictable branch),
   then count the child's launches instead (dt_core_fork_launch_lost). */
DT_HIDDEN extern int dt_g_fork_unusable;
/* One launch call made in such a child: counted as lost (forked_child). */
DT_HIDDEN void dt_core_fork_launch_lost(void);

/* The running session, or NULL (acquire load). For vendor callbacks, on
   every API call: inline. */
DT_HIDDEN extern _Atomic(dt_session *) dt_g_active;
static inline dt_session *dt_active_session(void)
{
    return atomic_load_explicit(&dt_g_active, memory_order_acquire);
}
/* The name of the backend the latest session of this process started with
   (a backend descriptor's, valid for the process's life), NULL before any:
   what `devtrace trigger --list` shows a listener uses. */
DT_HIDDEN const char *dt_core_last_backend(void);

/* Count a dropped record. Lock-free. */
static inline void dt_loss_add(dt_session *s, dt_loss_reason r, uint64_t n)
{
    atomic_fetch_add_explicit(&s->loss[r], n, memory_order_relaxed);
}
/* Check a record's vendor timestamps; counts and returns 0 if implausible.
   A start without an end is work a forced flush handed back while it still
   ran (CUPTI does so at stop), not a record without timing. */
static inline int dt_times_ok(dt_session *s, uint64_t start, uint64_t end)
{
    if (start == 0 || end == 0) {
        dt_loss_add(s, start && !end ? DT_LOSS_UNFINISHED : DT_LOSS_TIMESTAMP_ZERO, 1);
        return 0;
    }
    if (end < start) { dt_loss_add(s, DT_LOSS_TIMESTAMP_REVERSED, 1); return 0; }
    if (end - start > s->config.max_duration_ns) { dt_loss_add(s, DT_LOSS_TIMESTAMP_TOO_LONG, 1); return 0; }
    return 1;
}
/* A zeroed record in the store (lock held), or NULL: counted as store_full. */
static inline dt_rec *dt_session_add(dt_session *s)
{
    dt_rec *r = dt_store_push(&s->store);
    if (!r) dt_loss_add(s, DT_LOSS_STORE_FULL, 1);
    return r;
}

/* After the vendor has delivered everything (session lock not held): the
   notes of what was cut or lost, the links merged, the clock fitted, the
   window applied to every record; the session is then stopped. */
DT_HIDDEN void dt_core_finish(dt_session *s);

/* Backend-reported facts that go into the trace. */
DT_HIDDEN void dt_core_set_library(dt_session *s, const char *path, const char *version);
/* A degraded feature or other note ("topsptiGetCallbackName", "missing: ...").
   A key is never overwritten: a different text under a key already used is
   appended to it ("; "), the same text again is ignored. Thread-safe. */
DT_HIDDEN void dt_core_note(dt_session *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
DT_HIDDEN void dt_core_set_device(dt_session *s, const dt_device_props *p);

/* Convert a stored record to the public view. */
DT_HIDDEN void dt_rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev);
/* In the child of a fork without exec, from a pthread_atfork child handler
   (plain stores and async-signal-safe calls only): the running session goes
   on as the child's; see session.c. */
DT_HIDDEN void dt_core_forked(dt_session *s);
/* Before and after a fork without exec, in the parent, from pthread_atfork
   handlers: the backend's fork_prepare and fork_parent where its vendor
   cannot record in the child. */
DT_HIDDEN void dt_core_fork_prepare(dt_session *s);
DT_HIDDEN void dt_core_fork_parent(dt_session *s);
/* In such a child once fork has returned there (every atfork handler has
   run, so that the vendor's locks are usable): the backend's fork_child. */
DT_HIDDEN void dt_core_fork_child(dt_session *s);

#endif /* DT_CORE_SESSION_H */
