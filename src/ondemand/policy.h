/*
 * When the flight recorder dumps its window: the decisions of the dump
 * triggers (slow step, stall, signal, a failed end), the cooldown and the
 * cap, on times the caller gives (src/ondemand/policy.c). No thread, no
 * clock, no I/O: src/ondemand/triggers.c runs it.
 *
 * A slow step is a step longer than K x the exact median of the last
 * DT_FLIGHT_WINDOW step durations, once warmup_steps have been timed; its
 * dump is due a grace period after it ended (so that its device records
 * arrive). A slow step inside another's grace period is part of that dump.
 * A stall is no step boundary for stall_ns after the latest one (after the
 * first step): due once per stall. A signal is due at once. Causes due at
 * the same time make one dump. A dump due inside the cooldown after the
 * previous one, or past the cap, is not made and is counted (once per
 * cause) as skipped. The end of a failed program dumps past the cooldown,
 * within the cap; a slow step's dump still waiting is made at any end.
 */
#ifndef DT_ONDEMAND_POLICY_H
#define DT_ONDEMAND_POLICY_H

#include "base/common.h"
#include "ondemand/config.h"

#include <stddef.h>
#include <stdint.h>

#define DT_FLIGHT_WINDOW 64
#define DT_FLIGHT_MIN_GRACE_NS UINT64_C(1000000000)

typedef enum dt_flight_cause {
    DT_FLIGHT_SLOW_STEP = 1u << 0,
    DT_FLIGHT_STALL = 1u << 1,
    DT_FLIGHT_SIGNAL = 1u << 2,
    DT_FLIGHT_END = 1u << 3,
} dt_flight_cause;

typedef struct dt_flight_policy {
    dt_dump_triggers cfg;
    /* the durations of the last steps: in the order they came (a ring) and sorted */
    uint64_t window[DT_FLIGHT_WINDOW], sorted[DT_FLIGHT_WINDOW];
    unsigned window_next, window_count;
    uint64_t steps_timed;
    /* the latest boundary */
    int have_step, stall_due_once;
    uint64_t last_step_number, last_step_ns;
    /* a slow step's dump waiting for its grace period */
    int slow_pending;
    uint64_t slow_due_ns, slow_number, slow_duration_ns, slow_median_ns;
    unsigned slow_window; /* the steps the median was of */
    int signal_pending;
    /* dumps made (or tried) and skipped */
    uint64_t dumps, last_dump_ns;
    uint64_t skipped_cooldown, skipped_cap;
    char why[512]; /* the causes of the dump due, as the dump's note says them */
} dt_flight_policy;

DT_HIDDEN void dt__ondemand_policy_init(dt_flight_policy *p, const dt_dump_triggers *cfg);
/* Step `number` began at now_ns; the step before it lasted duration_ns (0:
   none before it). */
DT_HIDDEN void dt__ondemand_policy_step(dt_flight_policy *p, uint64_t number, uint64_t now_ns, uint64_t duration_ns);
/* The dump signal came, once or more since the last call. */
DT_HIDDEN void dt__ondemand_policy_signal(dt_flight_policy *p);
/* The causes of a dump to make now (0: none; the text in p->why), having
   counted those it skips; *next_ns: when to ask again at the latest
   (UINT64_MAX: not before something happens). The caller dumps, then calls
   dt__ondemand_policy_dumped. */
DT_HIDDEN unsigned dt__ondemand_policy_due(dt_flight_policy *p, uint64_t now_ns, uint64_t *next_ns);
/* The program ends at now_ns: having failed when how says how ("exited
   with status 1"), or not (NULL). 1 when a last dump is to be made (p->why
   says why): a failed end dumps past the cooldown, within the cap; a slow
   step still in its grace period goes in that dump, or, at an end that did
   not fail, makes one (within the cooldown and cap). 0 when none is made
   (one held back is counted). */
DT_HIDDEN int dt__ondemand_policy_end(dt_flight_policy *p, const char *how, uint64_t now_ns);
/* A dump was made or tried at now_ns: it counts for the cooldown and cap. */
DT_HIDDEN void dt__ondemand_policy_dumped(dt_flight_policy *p, uint64_t now_ns);
/* The exact median of the window (the mean of the middle two for an even
   count); 0 when empty. */
DT_HIDDEN uint64_t dt__ondemand_policy_median(const dt_flight_policy *p);
/* "dumps skipped: N (cooldown), M (cap)" into out. */
DT_HIDDEN void dt__ondemand_policy_skipped(const dt_flight_policy *p, char *out, size_t n);

#endif /* DT_ONDEMAND_POLICY_H */
