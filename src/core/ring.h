/*
 * The flight recorder's ring of undecoded vendor buffers (src/core/ring.c).
 * Internal, not installed.
 */
#ifndef DT_CORE_RING_H
#define DT_CORE_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

/* With dt_config.flight_recorder_bytes set, a backend does not decode the
   buffers the vendor completes: it queues them, raw, in completion order,
   in a ring, and the ring lends them back to the vendor. The buffers are
   the backend's pool's (core/pool.h): the pool gets
   dt__ring_buffers(bytes, size) + DT_RING_RESERVE buffers and never grows.
   When the vendor asks for a buffer and the pool has none free, the
   oldest completed buffer is recycled: decoded once into a scratch session
   that only counts (its records are counted as DT_LOSS_RING_EVICTED, the
   records the decoder itself drops under their own reasons), and its
   newest record's time raises the ring's evicted_until. What the decoders
   learn from records and keep (devices, External id links the vendor
   reports in records) stays in the scratch session, never evicted, and is
   copied into every recording made of the ring (dt__ring_copy_kept). */
typedef struct dt_ring dt_ring;

/* Decode one buffer of the backend's into session `into` (its lock taken
   by the decoder, as at completion). */
typedef void (*dt_ring_decode_fn)(void *ctx, dt_session *into, uint8_t *buf, size_t valid);

/* The fewest buffers a ring holds, whatever the size asked for. */
#define DT_RING_MIN_BUFFERS 4u
/* Buffers kept aside for the vendor while a dump holds the ring's queue. */
#define DT_RING_RESERVE 2u
/* DEVTRACE_FLIGHT_RECORDER=1 or =on: 256 MiB. */
#define DT_FLIGHT_RECORDER_DEFAULT_BYTES ((uint64_t)256 << 20)

/* The ring's buffers for bytes of buffers of size bytes: bytes / size, at
   least DT_RING_MIN_BUFFERS, at most what a pool holds less the reserve. */
DT_HIDDEN uint32_t dt__ring_buffers(uint64_t bytes, size_t size);
/* A ring of `buffers` queue slots for session live. NULL: no memory. */
DT_HIDDEN dt_ring *dt__ring_create(dt_session *live, uint32_t buffers, dt_ring_decode_fn decode, void *ctx);
/* Frees the ring (its queue must be empty: dt__ring_take it first). */
DT_HIDDEN void dt__ring_destroy(dt_ring *r);
/* A reserve buffer, given when the ring is attached to its pool. */
DT_HIDDEN void dt__ring_add_reserve(dt_ring *r, uint8_t *buf);
/* A completed buffer of valid bytes, queued undecoded. */
DT_HIDDEN void dt__ring_push(dt_ring *r, uint8_t *buf, size_t valid);
/* For the vendor, when the pool has no free buffer: the oldest completed
   buffer, counted (see above), or a reserve buffer when none is queued,
   or NULL. */
DT_HIDDEN uint8_t *dt__ring_recycle(dt_ring *r);

/* The queue, moved out (a dump, or the end of the session). */
typedef struct dt_ring_batch {
    uint8_t **buf;
    size_t *valid;
    uint32_t count;
    /* dt__ring_evicted_until when the queue was moved out: every record
       evicted before the batch's */
    uint64_t until_vendor, until_real;
} dt_ring_batch;
/* Move the queue out into *out (its arrays are freed by
   dt__ring_give_back). -1: no memory (nothing moved). */
DT_HIDDEN int dt__ring_take(dt_ring *r, dt_ring_batch *out);
/* Decode a batch, in completion order, into session `into`. */
DT_HIDDEN void dt__ring_decode(dt_ring *r, const dt_ring_batch *b, dt_session *into);
/* Give a batch's buffers back: the reserve first, then the pool (through
   put, the backend's pool slot's). Frees the batch's arrays. */
DT_HIDDEN void dt__ring_give_back(dt_ring *r, dt_ring_batch *b, void (*put)(void *slot, uint8_t *buf), void *slot);
/* Decode a batch into `into` (NULL: decode nothing, the ring's window is
   dropped), giving each buffer back as soon as it is decoded, its pages
   released (dt__ring_set_buffer_size): the records a dump or the stop
   decodes take the place of the raw buffers in memory rather than adding
   to them, and the vendor has the buffers again early. Frees the batch's
   arrays. */
DT_HIDDEN void dt__ring_decode_back(dt_ring *r, dt_ring_batch *b, dt_session *into,
                                   void (*put)(void *slot, uint8_t *buf), void *slot);
/* The ring's window is written by nobody: the session's stop decodes none
   of it (dt__core_flight_discard_at_stop). */
DT_HIDDEN void dt__ring_set_discard(dt_ring *r);
DT_HIDDEN int dt__ring_discarding(dt_ring *r);
/* The bytes of each of the ring's buffers (the pool's size): a buffer given
   back has the pages it spans released to the system (they come back, zero,
   when the vendor writes it again). 0 (the default): released nothing. */
DT_HIDDEN void dt__ring_set_buffer_size(dt_ring *r, size_t size);
/* The reserve's buffers, handed to put (the ring is being detached). */
DT_HIDDEN void dt__ring_drop_reserve(dt_ring *r, void (*put)(void *slot, uint8_t *buf), void *slot);

/* The devices and the vendor's External id links learned from evicted
   buffers, into `into` (its lock held; a device it knows stays). */
DT_HIDDEN void dt__ring_copy_kept(dt_ring *r, dt_session *into);
/* The newest time of an evicted record: vendor clock (vendor, 0: none)
   and already realtime (real, 0: none). */
DT_HIDDEN void dt__ring_evicted_until(dt_ring *r, uint64_t *vendor, uint64_t *real);
/* Buffers recycled so far, and buffers the vendor found none for. */
DT_HIDDEN uint64_t dt__ring_evicted_buffers(dt_ring *r);
DT_HIDDEN uint64_t dt__ring_refused(dt_ring *r);

#endif /* DT_CORE_RING_H */
