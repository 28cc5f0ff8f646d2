/*
 * Correlation: vendor correlation ids to External ids, user ranges
 * (src/core/corr.c). The inline calls on the session's tables are beside
 * them: dt__corr_get in core/session_impl.h, dt__corr_link (and
 * dt__corr_link_grow, its slow path) in core/sink.h. Internal, not installed.
 */
#ifndef DT_CORE_CORR_H
#define DT_CORE_CORR_H

#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

/* ------------------------------------------------------------------ */
/* Correlation                                                         */
/* ------------------------------------------------------------------ */
/* Called from the vendor's API-enter callback on the calling thread: links
   the vendor correlation id to the innermost entry of the thread's external
   stack, unless the vendor's own stack holds that entry (then the vendor's
   records carry it). devtrace's stack is the truth: a vendor without
   external correlation (TOPSPTI), or whose stack refused an id (too
   shallow), is attributed through here. These links win over the vendor's
   records at stop. Lock-free: appends to a per-thread log merged at stop. */
DT_HIDDEN void dt__corr_link_current(uint64_t correlation);
/* A new user range id (DT_RANGE_ID_BASE and up), for ranges a vendor
   reports (markers) as for dt_range_push's. */
DT_HIDDEN uint64_t dt__corr_range_id_next(void);
/* A user range the vendor reported rather than the program pushed (ROCTX
   start/stop ranges and marks): recorded with an id of its own, on host
   thread tid, times in realtime ns. Session lock not held. While steps are
   watched, a "ProfilerStep#<n>" name begins step n, dated start_ns. */
DT_HIDDEN void dt__corr_range_add(dt_session *s, const char *name, uint64_t start_ns, uint64_t end_ns, uint32_t tid);
/* The user range that encloses external id `id` (pushed inside it), after
   stop. Returns 1 and sets *range when there is one. */
DT_HIDDEN int dt__corr_parent_range(const dt_session *s, uint64_t id, uint64_t *range);

/* How many correlation ids have a link, after stop. */
DT_HIDDEN size_t dt__corr_count(const dt_session *s);

/* dt__corr_get's lookup in the map (s->corr), out of line: inlined in the
   loop that maps every record at stop, the table's probe would crowd that
   loop's registers. */
DT_HIDDEN int dt__corr_map_get(const dt_session *s, uint64_t correlation, uint64_t *external_id);
/* Merge the per-thread link logs into the session's tables: at stop (lock
   held, keep 1), and at destroy (keep 0: only freed). */
DT_HIDDEN void dt__corr_merge_chunks(dt_session *s, int keep);
/* Copy src's links, reported and logged, and its operations' ranges into
   dst, a session of the caller's own, still to be finished (a flight
   recorder's dump; src's lock held). -1 when out of memory. */
DT_HIDDEN int dt__corr_copy_links(dt_session *dst, const dt_session *src);
/* Forget the links of a session (a new start, or destroy). */
DT_HIDDEN void dt__corr_forget(dt_session *s);

#endif /* DT_CORE_CORR_H */
