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

/* Parse a size: bytes with an optional K, M or G suffix (KiB, MiB, GiB;
   also "KB", "KiB"...), or "1"/"on"/"true"/"yes" for the default. 0 and
   -1 ("0", "off"...: off) are returned in *bytes; -1 for anything else. */
DT_HIDDEN int dt_flight_parse_size(const char *text, uint64_t *bytes);

/* A backend that has the flight recorder (DT_BACKEND_FLIGHT_RECORDER),
   from its start, after it has made its pool: when s records with one,
   the pool's buffers are lent through a ring whose buffers decode() turns
   into records. The pool must hold dt_flight_pool_buffers(s) buffers of
   s->config.buffer_size and never grow. DT_OK also when s has none. */
DT_HIDDEN dt_status dt_core_flight_begin(dt_session *s, dt_pool_slot *slot, dt_ring_decode_fn decode, void *ctx);
/* The pool's buffer count for s: the ring's and the reserve. */
DT_HIDDEN uint32_t dt_flight_pool_buffers(const dt_session *s);
/* From the backend's stop, once its final flush has delivered everything
   and before it frees its pool: what the ring holds is decoded into s,
   the buffers go back to the pool, and the ring lends no more. */
DT_HIDDEN void dt_core_flight_end(dt_session *s);
/* At finish (lock held, clock fitted): the window starts past the newest
   evicted record. */
DT_HIDDEN void dt_core_flight_window(dt_session *s);
/* Free the ring (the session stopped, or is destroyed). */
DT_HIDDEN void dt_core_flight_free(dt_session *s);

/* A dump's recording: the vendor flushed (with a timeout), the ring's queue
   moved out and decoded into a new stopped session that shares what the
   recording keeps whole (devices, names, links, host ranges since the last
   dump), its window [past the newest evicted record, or the session's
   start or the last dump's end, now); the buffers back in the pool. The
   recording goes on; the next dump's window starts where this one's ends.
   DT_ERR_BUSY while another dump runs. *out: destroy with
   dt_session_destroy. */
DT_HIDDEN dt_status dt_core_flight_snapshot(dt_session *s, dt_session **out);

#endif /* DT_CORE_FLIGHT_H */
