/*
 * The flight recorder's session side (src/core/flight.c): a backend's ring
 * from start to stop, the window a dump or the stop starts past, and the
 * snapshot a dump writes. Internal, not installed.
 */
#ifndef DT_CORE_FLIGHT_H
#define DT_CORE_FLIGHT_H

#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/pool.h"
#include "core/ring.h"

/* DEVTRACE_FLIGHT_RECORDER's value was no size: dt_session_create fails,
   naming it (dt_config_from_env cannot fail). */
#define DT_FLIGHT_RECORDER_INVALID UINT64_MAX

/* How long a dump waits for the vendor's flush before it writes what has
   been delivered (and says so in the trace). */
#define DT_FLIGHT_FLUSH_TIMEOUT_MS 2000u

/* The smallest ring (DT_FLIGHT_RECORDER_MIN_BYTES, the public header's):
   DT_RING_MIN_BUFFERS buffers of DT_FLIGHT_MIN_BUFFER bytes. */
#define DT_FLIGHT_MIN_BUFFER 4096u
_Static_assert(DT_FLIGHT_RECORDER_MIN_BYTES == DT_RING_MIN_BUFFERS * DT_FLIGHT_MIN_BUFFER, "the smallest ring");

/* A configuration's flight recorder made to fit (dt_session_create): a
   ring smaller than DT_RING_MIN_BUFFERS buffers of buffer_size gets
   smaller buffers (bytes / DT_RING_MIN_BUFFERS, whole pages), so that it
   holds about the bytes asked for; a ring under
   DT_FLIGHT_RECORDER_MIN_BYTES is refused (DT_ERR_INVALID_ARGUMENT, the
   limit named). */
DT_HIDDEN dt_status dt__flight_fit_config(dt_config *c);

/* Parse a size: bytes with an optional K, M or G suffix (KiB, MiB, GiB;
   also "KB", "KiB"...), or "1"/"on"/"true"/"yes" for the default. 0 and
   -1 ("0", "off"...: off) are returned in *bytes; -1 for anything else. */
DT_HIDDEN int dt__flight_parse_size(const char *text, uint64_t *bytes);

/* A backend that has the flight recorder (DT_BACKEND_FLIGHT_RECORDER),
   from its start, after it has made its pool: when s records with one,
   the pool's buffers are lent through a ring whose buffers decode() turns
   into records. The pool must hold dt__flight_pool_buffers(s) buffers of
   dt__sink_config(s)->buffer_size and never grow. DT_OK also when s has none. */
DT_HIDDEN dt_status dt__core_flight_begin(dt_session *s, dt_pool_slot *slot, dt_ring_decode_fn decode, void *ctx);
/* The pool's buffer count for s: the ring's and the reserve. */
DT_HIDDEN uint32_t dt__flight_pool_buffers(const dt_session *s);
/* From the backend's stop, once its final flush has delivered everything
   and before it frees its pool: what the ring holds is decoded into s,
   the buffers go back to the pool, and the ring lends no more. */
DT_HIDDEN void dt__core_flight_end(dt_session *s);
/* At finish (lock held, clock fitted): the window starts past the newest
   evicted record. */
DT_HIDDEN void dt__core_flight_window(dt_session *s);
/* Free the ring (the session stopped, or is destroyed). */
DT_HIDDEN void dt__core_flight_free(dt_session *s);

/* One dump at a time: a dump holds its session from before its snapshot
   until its trace is written. dt__core_flight_hold: s, which the caller
   keeps alive; dt__core_flight_hold_running: the session running in this
   process, which another thread may stop and destroy meanwhile (held, its
   ring's end waits for dt__core_flight_release, and a session being
   destroyed is never found). DT_ERR_BUSY while another dump holds it;
   DT_ERR_STATE when it does not record with a flight recorder (or none
   runs). */
DT_HIDDEN dt_status dt__core_flight_hold(dt_session *s);
DT_HIDDEN dt_status dt__core_flight_hold_running(dt_session **s);
DT_HIDDEN void dt__core_flight_release(dt_session *s);
/* Whether a session runs in this process, 2 when it records with a flight
   recorder (read where no session it names can be destroyed meanwhile). */
DT_HIDDEN int dt__core_flight_running(void);

/* A dump's recording, s held: the vendor flushed (with a timeout), the
   ring's queue moved out and decoded into a new stopped session that
   shares what the recording keeps whole (devices, names, links, host
   ranges since the last dump), its window [past the newest evicted record,
   or the session's start or the last dump's end, now); each buffer back in
   the pool as soon as it is decoded, its pages released. The recording
   goes on; the next dump's window starts where this one's ends. *out:
   destroy with dt_session_destroy. */
DT_HIDDEN dt_status dt__core_flight_snapshot_held(dt_session *s, dt_session **out);
/* The same, holding s for the snapshot only (DT_ERR_BUSY while another
   dump holds it). */
DT_HIDDEN dt_status dt__core_flight_snapshot(dt_session *s, dt_session **out);

/* The session's stop decodes nothing of the ring: its window is written by
   nobody (the injection library's flight recorder, whose program ended
   well, or whose last dump took it). The buffers go back undecoded. */
DT_HIDDEN void dt__core_flight_discard_at_stop(dt_session *s);

#endif /* DT_CORE_FLIGHT_H */
