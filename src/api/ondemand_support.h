/*
 * What the on-demand layer (src/ondemand) may use of a session beyond the
 * public API: hidden functions, each standing for a session internal that
 * on-demand capture or the flight recorder's dumps need (the dumps' in
 * src/api/dump.c, the others in src/api/ondemand_support.c). Through
 * them, and the public API, on demand reaches the recording without
 * seeing the core. Internal, not installed.
 */
#ifndef DT_API_ONDEMAND_SUPPORT_H
#define DT_API_ONDEMAND_SUPPORT_H

#include "base/common.h"
#include "devtrace/devtrace.h"

#include <stddef.h>
#include <stdint.h>

/* The flight recorder's dump (src/api/dump.c): one dump of a session at a
   time, from before its snapshot until its trace is written; a second
   meanwhile is DT_ERR_BUSY. */

/* dt_session_dump of s with a note in the dump's trace alone (key: the
   note's name, NULL for none), and what it wrote: its events (0 when it was
   not written) and its losses (either may be NULL). DT_ERR_BUSY while
   another dump of s is being written. */
DT_HIDDEN dt_status dt__api_dump_noted(dt_session *s, int fd, dt_format format, const char *key, const char *note,
                                      size_t *events, uint64_t loss[DT_LOSS_COUNT]);
/* Holds the session running in this process for a dump to fd in format:
   DT_OK with it in *s (another thread may stop it meanwhile: its ring
   waits for dt__api_dump_release), DT_ERR_BUSY while another dump holds it,
   DT_ERR_STATE when no session with a flight recorder runs,
   DT_ERR_INVALID_ARGUMENT for fd or format. */
DT_HIDDEN dt_status dt__api_dump_hold_running(int fd, dt_format format, dt_session **s);
/* s held: its snapshot written to fd, the note (key: its name, NULL for
   none) in it alone; events and losses as dt__api_dump_noted's. */
DT_HIDDEN dt_status dt__api_dump_held(dt_session *s, int fd, dt_format format, const char *key, const char *note,
                                     size_t *events, uint64_t loss[DT_LOSS_COUNT]);
DT_HIDDEN void dt__api_dump_release(dt_session *s);

/* Whether a session runs in this process, 2 when it records with a flight
   recorder. */
DT_HIDDEN int dt__api_flight_running(void);
/* s's stop decodes nothing of its ring: the dumps were its traces. */
DT_HIDDEN void dt__api_flight_discard_at_stop(dt_session *s);

/* The session running in this process, or NULL. */
DT_HIDDEN dt_session *dt__api_active_session(void);
/* The capture window of the running session s is [start_ns, end_ns)
   (realtime), not start to stop: what lies outside counts as
   outside_window (or unfinished) at stop. */
DT_HIDDEN void dt__api_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns);
/* The backend of the latest session this process started; NULL: none. */
DT_HIDDEN const char *dt__api_last_backend(void);
/* The rank, local rank and world size a launcher announced in the
   environment; -1 for each it did not. */
DT_HIDDEN void dt__api_launcher_rank(int64_t *rank, int64_t *local_rank, int64_t *world_size);

#endif /* DT_API_ONDEMAND_SUPPORT_H */
