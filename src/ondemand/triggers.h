/*
 * The flight recorder's dump triggers at work (src/ondemand/triggers.c):
 * one thread per running flight-recorder session that waits for a step
 * boundary, the dump signal or the next deadline, asks the policy
 * (ondemand/policy.h) whether a dump is due, and writes it to a new file
 * named from the session's output path, "<base>.dump<N><suffix>"
 * (trace.json -> trace.dump1.json), opened with O_CREAT | O_EXCL (a name
 * that exists is never replaced: the next number is taken).
 *
 * The step observer runs on the thread that began the step: it only puts
 * the boundary in a lock-free ring and wakes the thread; it never blocks
 * nor allocates. The signal handler, installed only when a signal is asked
 * for, writes one byte to a non-blocking pipe; bytes coalesce. No lock is
 * held across a dump. The dumps `devtrace trigger --dump` asks of the
 * process's listener (ondemand/ondemand.h) are told to the report hook and
 * counted too (they go to the trigger's output, not to a file of these).
 * Used by the injection library (src/inject).
 */
#ifndef DT_ONDEMAND_TRIGGERS_H
#define DT_ONDEMAND_TRIGGERS_H

#include "base/common.h"
#include "devtrace/devtrace.h"
#include "ondemand/config.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dt_flight_triggers dt_flight_triggers;

/* One dump, written or not, as the report hook is told of it. */
typedef struct dt_flight_dump {
    uint64_t number;   /* the N in its name; 0: asked by `devtrace trigger --dump` */
    const char *path;  /* "" when no name could be made, or the trigger's output */
    const char *why;   /* what triggered it */
    dt_status status;  /* DT_OK: written; DT_ERR_BUSY: not made, another dump
                          of the session was being written (it holds the
                          window); another: lost */
    const char *error; /* otherwise what went wrong */
} dt_flight_dump;

typedef void (*dt_flight_step_observer)(void *ctx, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns);

/* What the triggers call; tests replace them. */
typedef struct dt_flight_hooks {
    void *ctx;
    /* CLOCK_MONOTONIC ns; NULL: the system's */
    uint64_t (*now_ns)(void *ctx);
    /* writes the window to fd, its trace carrying the note key: text
       (what triggered it); NULL: dt_session_dump's, the note in the
       dump's trace alone */
    dt_status (*dump)(void *ctx, dt_session *s, int fd, dt_format format, const char *key, const char *text);
    /* hands the step observer to the step boundaries (fn NULL: takes it
       back, once no call of it runs); NULL: the process's steps */
    void (*observe)(void *ctx, dt_flight_step_observer fn, void *observer_ctx);
    /* told of each dump, on the thread that made it; NULL: none */
    void (*report)(void *ctx, const dt_flight_dump *dump);
} dt_flight_hooks;

/* Starts the triggers of session s (which may be NULL for tests), whose
   trace would be output (a file path) in format. cfg: when to dump. hooks:
   NULL members take the defaults. */
DT_HIDDEN dt_status dt__ondemand_triggers_start(dt_session *s, const char *output, dt_format format,
                                             const dt_dump_triggers *cfg, const dt_flight_hooks *hooks,
                                             dt_flight_triggers **out);

/* What a run of the triggers did. */
typedef struct dt_flight_summary {
    uint64_t written, failed;                /* dumps, those `devtrace trigger --dump` asked included */
    uint64_t asked;                          /* ... of which asked by `devtrace trigger --dump` */
    uint64_t skipped_cooldown, skipped_cap;  /* triggers that made no dump */
    uint64_t steps_lost;                     /* boundaries the observer's ring had no room for */
} dt_flight_summary;

/* Stops the triggers and frees t; the signal's previous disposition comes
   back. failed (NULL: the program did not fail) says how the program ended
   ("exited with status 1"): then one last dump is made, within the cap and
   past the cooldown, before this returns; a slow step's dump still in its
   grace period is made at any end (dt__ondemand_policy_end). The session's
   stop then decodes none of the ring (the dumps are its only traces).
   *summary (may be NULL) gets what the run did. */
DT_HIDDEN void dt__ondemand_triggers_stop(dt_flight_triggers *t, const char *failed, dt_flight_summary *summary);

/* In the child of a fork: t's thread is not there; the signal goes back to
   its previous disposition and t is forgotten (async-signal-safe). */
DT_HIDDEN void dt__ondemand_triggers_forked(dt_flight_triggers *t);

/* The observer that the steps call (tests call it to make steps). */
DT_HIDDEN void dt__ondemand_triggers_step(void *t, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns);
/* Waits until the thread has looked at everything that came before this
   call (steps, signals, the clock) and made the dumps due by then. */
DT_HIDDEN void dt__ondemand_triggers_sync(dt_flight_triggers *t);
/* The counts so far (a sync first makes them current). */
DT_HIDDEN void dt__ondemand_triggers_counts(dt_flight_triggers *t, dt_flight_summary *summary);
/* The median step duration the slow-step trigger compares with, in ns. */
DT_HIDDEN uint64_t dt__ondemand_triggers_median(dt_flight_triggers *t);

#endif /* DT_ONDEMAND_TRIGGERS_H */
