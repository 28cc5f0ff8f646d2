/*
 * Steps: the process's step boundaries, from dt_step() and from user ranges
 * named "ProfilerStep#<n>" (src/core/steps.c). Internal, not installed.
 *
 * A step boundary is a step number and the realtime ns it began at. On-demand
 * captures of N steps wait on boundaries; the flight recorder observes them
 * to time steps. While nothing watches (dt__core_steps_watch), a range push
 * pays one relaxed atomic load for steps and does not look at its name;
 * dt_step() always counts.
 */
#ifndef DT_CORE_STEPS_H
#define DT_CORE_STEPS_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/common.h"

/* Count a watcher in (on 1) or out (on 0); range names are looked at while
   the count is above zero. */
DT_HIDDEN void dt__core_steps_watch(int on);
/* The watch count, read where user ranges enter (dt__core_steps_watched). */
DT_HIDDEN extern _Atomic int dt__core_steps_watchers;
/* Whether a user range's name must be looked at: one relaxed load. */
static inline int dt__core_steps_watched(void)
{
    return atomic_load_explicit(&dt__core_steps_watchers, memory_order_relaxed) > 0;
}
/* A user range named name began at t_ns (realtime; 0: now, the clock read
   only for a step): when the name is exactly "ProfilerStep#" and 1 to 20
   decimal digits whose value fits in 64 bits, step <that value> begins at
   t_ns; any other name (NULL included) does nothing. Callers ask
   dt__core_steps_watched() first. */
DT_HIDDEN void dt__core_step_range(const char *name, uint64_t t_ns);
/* Step `number` began at t_ns (realtime). Numbers that do not rise are
   taken as they come (a ProfilerStep# numbering that restarts). */
DT_HIDDEN void dt__core_step_begin(uint64_t number, uint64_t t_ns);
/* The latest boundary (0 and 0: none yet). */
DT_HIDDEN void dt__core_step_last(uint64_t *number, uint64_t *t_ns);
/* The latest boundary numbered `number` among the last few (a ring of 16)
   that began at or after since_ns: 0 with its time in *t_ns, -1 when none.
   For a waiter that must not miss a boundary that began between two of
   its calls. */
DT_HIDDEN int dt__core_step_find(uint64_t number, uint64_t since_ns, uint64_t *t_ns);
/* Waits until a step numbered at least `target` begins after this call, or
   until deadline_ns (CLOCK_MONOTONIC). 0 with that boundary in *number and
   *t_ns: the first such one, unless more than 16 boundaries began before
   the waiter woke (then the earliest such one still held); -1 at the
   deadline or when woken (dt__core_steps_wake). target 0: the next step,
   whatever its number. */
DT_HIDDEN int dt__core_step_wait(uint64_t target, uint64_t deadline_ns, uint64_t *number, uint64_t *t_ns);
/* Wakes every waiter now (they return -1): a capture that is cancelled. */
DT_HIDDEN void dt__core_steps_wake(void);

/* An observer of boundaries (the flight recorder's slow-step and stall
   triggers): called on the thread that began the step, outside any lock,
   with the duration of the step that just ended (0 for the first, and when
   the realtime clock went back). One at a time; NULL removes it, and on
   return no call of the one removed is running. It must not block, nor
   call dt__core_steps_observe. */
typedef void (*dt_core_step_observer)(void *ctx, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns);
DT_HIDDEN void dt__core_steps_observe(dt_core_step_observer fn, void *ctx);

#endif
