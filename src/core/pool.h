/*
 * Vendor activity buffers: a bounded pool (src/core/pool.c). Internal, not installed.
 */
#ifndef DT_CORE_POOL_H
#define DT_CORE_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "core/ring.h"

/* The vendor asks for buffers from the traced program's threads; handing
   out pooled ones keeps malloc out of that path and bounds memory. When the
   pool is empty the vendor gets no buffer (and drops, counting). Every
   backend's buffers come from here. Thread-safe, except that destroy must
   not race with get or put on the same pool. */
typedef struct dt_buffer_pool dt_buffer_pool;
/* Make buffers on demand, up to the count, instead of all at create: for
   arming before a session exists, when nobody has asked for the memory. */
#define DT_POOL_LAZY 1u
/* When all count buffers are out, make more on demand, up to the larger of
   DT_POOL_GROW_FACTOR x count and count + DT_POOL_PER_THREAD for each thread
   that has asked for a buffer (at most DT_POOL_MAX_BUFFERS). A vendor with
   per-thread buffers (CUDA 13's CUPTI) keeps one partly filled buffer per
   thread that uses the device, and a consumer that falls behind (its thread
   starved on a loaded machine) leaves completed buffers waiting: a pool
   sized for neither would run dry and the vendor drop records. The memory
   is made only when asked for, and kept until the pool is destroyed. */
#define DT_POOL_GROW 2u
#define DT_POOL_GROW_FACTOR 4u
#define DT_POOL_PER_THREAD 2u
#define DT_POOL_MAX_BUFFERS 4096u
/* count buffers of size bytes rounded up to 64; NULL when either is 0, on
   overflow or out of memory. Without DT_POOL_LAZY all are made now. */
DT_HIDDEN dt_buffer_pool *dt__pool_create(uint32_t count, size_t size, unsigned flags);
/* Frees the pool and returns how many buffers were still out. Those are not
   freed (the vendor may still write into them): they are kept, logged, until
   dt__pool_reclaim() frees them. The caller must drop its pointer either way.
   A pool with none out leaves its buffers to the next pool of the same
   buffer size (the next session's), already faulted in. */
DT_HIDDEN uint32_t dt__pool_destroy(dt_buffer_pool *p);
/* Free the buffers kept for the next pool. */
DT_HIDDEN void dt__pool_release_spares(void);
/* Free a buffer that a destroyed pool left out, now that the vendor has
   handed it back; -1 (and nothing freed) for any other pointer. A backend
   that reconfigures its pool while the vendor holds buffers uses this. */
DT_HIDDEN int dt__pool_reclaim(uint8_t *buf);
/* A buffer of dt__pool_buffer_size() bytes, 64-byte aligned (vendors need 8),
   or NULL, counted as refused, when all count buffers are out (or a lazy
   pool cannot make one). */
DT_HIDDEN uint8_t *dt__pool_get(dt_buffer_pool *p);
/* dt__pool_get without counting an empty pool as refused. */
DT_HIDDEN uint8_t *dt__pool_try_get(dt_buffer_pool *p);
/* Return a buffer; -1 for a pointer the pool did not hand out (another
   pool's, an offset into one, or a buffer already returned). */
DT_HIDDEN int dt__pool_put(dt_buffer_pool *p, uint8_t *buf);
DT_HIDDEN size_t dt__pool_buffer_size(const dt_buffer_pool *p);
/* Buffers handed out and not yet returned: held by the vendor. */
DT_HIDDEN uint32_t dt__pool_outstanding(dt_buffer_pool *p);
/* How many requests found the pool empty. */
DT_HIDDEN uint64_t dt__pool_refused(const dt_buffer_pool *p);
/* What a pool has become: buffers made, the most it may make now, and the
   threads that asked (for notes and tests). */
typedef struct dt_pool_stats {
    uint32_t made, bound, threads;
} dt_pool_stats;
DT_HIDDEN void dt__pool_shape(dt_buffer_pool *p, dt_pool_stats *out);

/* The policy every backend follows, around its one process-wide pool:
   preallocated when a session starts, so that a busy device never waits for
   malloc and memory stays bounded; made on demand (DT_POOL_LAZY) when armed
   before any session; when it runs dry the vendor gets no buffer and drops
   (counted as no_buffer); a new configuration replaces the pool, and buffers
   the vendor still holds of the old one are freed as they come back. The
   slot's lock guards the pointer against the vendor's threads. */
typedef struct dt_pool_slot {
    pthread_mutex_t lock;
    dt_buffer_pool *pool;
    /* The flight recorder's ring (core/ring.h), or NULL: when the pool has
       no free buffer, the ring recycles its oldest. */
    dt_ring *ring;
} dt_pool_slot;
#define DT_POOL_SLOT_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, NULL}
/* Replace the pool; -1 when it cannot be made. */
DT_HIDDEN int dt__pool_slot_configure(dt_pool_slot *slot, uint32_t count, size_t size, unsigned flags);
DT_HIDDEN int dt__pool_slot_exists(dt_pool_slot *slot);
/* A buffer and its size, or NULL (size 0) when the pool is empty or absent. */
DT_HIDDEN uint8_t *dt__pool_slot_get(dt_pool_slot *slot, size_t *size);
DT_HIDDEN void dt__pool_slot_put(dt_pool_slot *slot, uint8_t *buf);
DT_HIDDEN uint64_t dt__pool_slot_refused(dt_pool_slot *slot);
DT_HIDDEN void dt__pool_slot_shape(dt_pool_slot *slot, dt_pool_stats *out);
/* Lend the pool's buffers through ring r from now on: DT_RING_RESERVE of
   them go to its reserve. -1 when the pool cannot give them. */
DT_HIDDEN int dt__pool_slot_attach_ring(dt_pool_slot *slot, dt_ring *r);
/* The ring lends no more; its reserve comes back to the pool (its queue
   must have been taken and given back). */
DT_HIDDEN void dt__pool_slot_detach_ring(dt_pool_slot *slot);
/* dt__pool_slot_put for a void pointer to the slot (dt__ring_give_back). */
DT_HIDDEN void dt__pool_slot_put_to(void *slot, uint8_t *buf);
/* Free the pool; returns the buffers the vendor still holds (kept until they
   come back). */
DT_HIDDEN uint32_t dt__pool_slot_release(dt_pool_slot *slot);

#endif /* DT_CORE_POOL_H */
