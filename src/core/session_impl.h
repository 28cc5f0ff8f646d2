/*
 * The session's fields: core's own. No other layer includes this header
 * (tests/layers/check_layers.py fails on one that does): above core a
 * session is an opaque handle (core/session.h), and a backend writes into
 * it through its sink (core/sink.h). Internal, not installed.
 */
#ifndef DT_CORE_SESSION_IMPL_H
#define DT_CORE_SESSION_IMPL_H

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
#include "core/session.h"
#include "core/sink.h"
#include "core/threads.h"

/* ------------------------------------------------------------------ */
/* The session                                                         */
/* ------------------------------------------------------------------ */
enum dt_session_state { DT_STATE_CREATED, DT_STATE_RUNNING, DT_STATE_STOPPED };

typedef struct dt_corr_chunk dt_corr_chunk;

struct dt_session {
    /* first: what the per-record paths write (core/sink.h), the records,
       losses and links among it */
    dt_sink sink;
    dt_config config;
    char *output_path;
    char *backend_request;        /* as configured: "auto" or a name */
    /* chosen at start; replaced once, by dt__core_attach_deferred, while
       the program's threads read it */
    _Atomic(const dt_backend *) backend;
    /* dt__select_start_deferring (src/api): the backend that waits for the vendor's
       runtime to call the injection entry point, until attached or never */
    const dt_backend *deferred;
    _Atomic int awaiting_vendor;      /* running without it, waiting */
    _Atomic int attaching;
    /* entries of the external-correlation stacks pushed while waiting: the
       vendor's own stacks do not hold them */
    _Atomic int64_t unheld_entries;
    int state;

    pthread_mutex_t lock;         /* store, names, launches, corr, notes */
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
    uint64_t window_end_set;      /* dt__core_set_window's end (0: the stop's time) */
    uint32_t pid;
    /* In a child forked without exec (dt__core_forked): the parent's pid
       (0: not forked), when, the records stored before, and whether the
       vendor cannot be used here (the backend's DT_BACKEND_NO_FORK_CHILD). */
    uint32_t fork_parent;
    uint64_t fork_ns;
    size_t fork_store_count;
    int fork_vendor_unusable;
    int fork_vendor_quiet; /* the backend's fork_child has run (dt__core_fork_child) */
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
static inline int dt__corr_get(const dt_session *s, uint64_t correlation, uint64_t *external_id)
{
    uint64_t at = correlation - s->corr_dense_base;
    if (correlation != 0 && at < s->corr_dense_len && s->corr_dense[at]) {
        *external_id = s->corr_dense[at] - 1;
        return 1;
    }
    return s->corr.count && dt__corr_map_get(s, correlation, external_id);
}

/* The sink is where a dt_session * points (core/sink.h: dt__sink_of). */
_Static_assert(offsetof(struct dt_session, sink) == 0, "the sink starts the session");

/* A backend's clock as a dt_clock_fn (core/clock.h): ctx is the backend. */
DT_HIDDEN int dt__core_backend_clock(const void *backend, uint64_t *ns);
/* Convert a stored record to the public view. */
DT_HIDDEN void dt__rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev);

#endif /* DT_CORE_SESSION_IMPL_H */
