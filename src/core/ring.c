/* The flight recorder's ring: completed vendor buffers queued undecoded,
   the oldest recycled (and counted) when the vendor needs one. */
#include "base/alloc.h"
#include "base/log.h"
#include "core/corr.h"
#include "core/event.h"
#include "core/pool.h"
#include "core/ring.h"
#include "core/session_impl.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct dt_ring {
    pthread_mutex_t lock;      /* the queue, the reserve, the counters */
    uint8_t **buf;             /* [cap]: a FIFO from head, count entries */
    size_t *valid;
    uint32_t cap, head, count;
    uint8_t *reserve[DT_RING_RESERVE];
    uint32_t reserve_count;
    uint64_t evicted_buffers, refused;
    uint64_t until_vendor, until_real;
    size_t buf_size;           /* for releasing a buffer's pages; 0: never */
    _Atomic int discard;       /* the stop decodes nothing */
    /* eviction decodes into the scratch session, one buffer at a time */
    pthread_mutex_t evict_lock;
    dt_session *scratch;
    dt_session *live;
    dt_ring_decode_fn decode;
    void *ctx;
};

uint32_t dt__ring_buffers(uint64_t bytes, size_t size)
{
    uint64_t n = size ? bytes / size : 0;
    if (n < DT_RING_MIN_BUFFERS) n = DT_RING_MIN_BUFFERS;
    if (n > DT_POOL_MAX_BUFFERS - DT_RING_RESERVE) n = DT_POOL_MAX_BUFFERS - DT_RING_RESERVE;
    return (uint32_t)n;
}

dt_ring *dt__ring_create(dt_session *live, uint32_t buffers, dt_ring_decode_fn decode, void *ctx)
{
    dt_ring *r = dt__calloc(1, sizeof *r);
    if (!r) return NULL;
    /* every buffer of the pool may be queued at once */
    r->cap = buffers + DT_RING_RESERVE;
    r->buf = dt__calloc(r->cap, sizeof *r->buf);
    r->valid = dt__calloc(r->cap, sizeof *r->valid);
    dt_config c = live->config;
    c.max_events = 0;
    c.flight_recorder_bytes = 0;
    if (!r->buf || !r->valid || dt__core_new(&c, &r->scratch) != DT_OK) {
        dt__free(r->buf);
        dt__free(r->valid);
        dt__free(r);
        return NULL;
    }
    atomic_store(&r->scratch->backend, atomic_load(&live->backend));
    r->scratch->sink.generation = live->sink.generation;
    r->live = live;
    r->decode = decode;
    r->ctx = ctx;
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->evict_lock, NULL);
    return r;
}

void dt__ring_destroy(dt_ring *r)
{
    if (!r) return;
    if (r->count) dt__log("flight recorder ring destroyed with %u buffers queued", r->count);
    dt_session_destroy(r->scratch);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->evict_lock);
    dt__free(r->buf);
    dt__free(r->valid);
    dt__free(r);
}

void dt__ring_add_reserve(dt_ring *r, uint8_t *buf)
{
    pthread_mutex_lock(&r->lock);
    if (r->reserve_count < DT_RING_RESERVE) r->reserve[r->reserve_count++] = buf;
    pthread_mutex_unlock(&r->lock);
}

void dt__ring_push(dt_ring *r, uint8_t *buf, size_t valid)
{
    pthread_mutex_lock(&r->lock);
    /* cap is every buffer the pool has: a slot is always free */
    uint32_t at = (r->head + r->count) % r->cap;
    r->buf[at] = buf;
    r->valid[at] = valid;
    r->count++;
    pthread_mutex_unlock(&r->lock);
}

/* Count an evicted buffer: decoded into the scratch session, whose records
   are counted as ring_evicted and whose decode losses are the live
   session's (atomic counters, no lock); what the decoder learned that the
   recording keeps (devices, External id links reported in records) stays
   in the scratch session. */
static void evict(dt_ring *r, uint8_t *buf, size_t valid)
{
    dt_session *x = r->scratch, *live = r->live;
    r->decode(r->ctx, x, buf, valid);
    dt__core_lock(x);
    uint64_t until_vendor = 0, until_real = 0;
    size_t n = x->sink.store.count;
    for (size_t i = 0; i < n; i++) {
        const dt_rec *rec = dt__store_at(&x->sink.store, i);
        uint64_t *until = rec->flags & DT_REC_REALTIME ? &until_real : &until_vendor;
        uint64_t t = rec->end > rec->start ? rec->end : rec->start;
        if (t > *until) *until = t;
    }
    dt__store_truncate(&x->sink.store, 0);
    x->collective_count = 0;
    dt__loss_add(live, DT_LOSS_RING_EVICTED, n);
    for (int k = 0; k < DT_LOSS_COUNT; k++) {
        uint64_t lost = atomic_exchange_explicit(&x->sink.loss[k], 0, memory_order_relaxed);
        if (lost) dt__loss_add(live, (dt_loss_reason)k, lost);
    }
    /* devices and links stay in the scratch session (never the live one:
       this runs in the vendor's buffer request, where the vendor may hold
       locks of its own that a thread holding the live session's lock, the
       calibrator reading the vendor's clock, may wait for) */
    dt__core_unlock(x);
    pthread_mutex_lock(&r->lock);
    r->evicted_buffers++;
    if (until_vendor > r->until_vendor) r->until_vendor = until_vendor;
    if (until_real > r->until_real) r->until_real = until_real;
    pthread_mutex_unlock(&r->lock);
}

/* evict_lock is held from the pop to the count: a dump that moves the
   queue out meanwhile waits, so that its window starts past this buffer. */
uint8_t *dt__ring_recycle(dt_ring *r)
{
    pthread_mutex_lock(&r->evict_lock);
    pthread_mutex_lock(&r->lock);
    uint8_t *b = NULL;
    size_t valid = 0;
    int queued = 0;
    if (r->count) {
        b = r->buf[r->head];
        valid = r->valid[r->head];
        r->head = (r->head + 1) % r->cap;
        r->count--;
        queued = 1;
    } else if (r->reserve_count) {
        b = r->reserve[--r->reserve_count];
    } else {
        r->refused++;
    }
    pthread_mutex_unlock(&r->lock);
    if (queued) evict(r, b, valid);
    pthread_mutex_unlock(&r->evict_lock);
    return b;
}

int dt__ring_take(dt_ring *r, dt_ring_batch *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&r->evict_lock);
    pthread_mutex_lock(&r->lock);
    uint32_t n = r->count;
    uint8_t **buf = dt__malloc(((size_t)n + 1) * sizeof *buf);
    size_t *valid = dt__malloc(((size_t)n + 1) * sizeof *valid);
    if (!buf || !valid) {
        pthread_mutex_unlock(&r->lock);
        pthread_mutex_unlock(&r->evict_lock);
        dt__free(buf);
        dt__free(valid);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        buf[i] = r->buf[(r->head + i) % r->cap];
        valid[i] = r->valid[(r->head + i) % r->cap];
    }
    r->head = r->count = 0;
    out->until_vendor = r->until_vendor;
    out->until_real = r->until_real;
    pthread_mutex_unlock(&r->lock);
    pthread_mutex_unlock(&r->evict_lock);
    out->buf = buf;
    out->valid = valid;
    out->count = n;
    return 0;
}

void dt__ring_decode(dt_ring *r, const dt_ring_batch *b, dt_session *into)
{
    for (uint32_t i = 0; i < b->count; i++) r->decode(r->ctx, into, b->buf[i], b->valid[i]);
}

void dt__ring_set_buffer_size(dt_ring *r, size_t size) { r->buf_size = size; }
void dt__ring_set_discard(dt_ring *r) { atomic_store(&r->discard, 1); }
int dt__ring_discarding(dt_ring *r) { return atomic_load(&r->discard); }

/* The whole pages a buffer spans, back to the system: a decoded buffer is
   empty until the vendor writes it again (it reads zero pages then). */
static void release_pages(const dt_ring *r, uint8_t *buf)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!r->buf_size || page <= 0) return;
    uintptr_t first = ((uintptr_t)buf + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t end = ((uintptr_t)buf + r->buf_size) & ~((uintptr_t)page - 1);
    if (end > first) madvise((void *)first, end - first, MADV_DONTNEED);
}

/* One buffer back: the reserve first, then the pool. */
static void give_one(dt_ring *r, uint8_t *buf, void (*put)(void *slot, uint8_t *buf), void *slot)
{
    release_pages(r, buf);
    pthread_mutex_lock(&r->lock);
    int kept = r->reserve_count < DT_RING_RESERVE;
    if (kept) r->reserve[r->reserve_count++] = buf;
    pthread_mutex_unlock(&r->lock);
    if (!kept) put(slot, buf);
}

void dt__ring_give_back(dt_ring *r, dt_ring_batch *b, void (*put)(void *slot, uint8_t *buf), void *slot)
{
    for (uint32_t i = 0; i < b->count; i++) give_one(r, b->buf[i], put, slot);
    dt__free(b->buf);
    dt__free(b->valid);
    memset(b, 0, sizeof *b);
}

void dt__ring_decode_back(dt_ring *r, dt_ring_batch *b, dt_session *into, void (*put)(void *slot, uint8_t *buf),
                         void *slot)
{
    for (uint32_t i = 0; i < b->count; i++) {
        if (into) r->decode(r->ctx, into, b->buf[i], b->valid[i]);
        give_one(r, b->buf[i], put, slot);
    }
    dt__free(b->buf);
    dt__free(b->valid);
    memset(b, 0, sizeof *b);
}

void dt__ring_drop_reserve(dt_ring *r, void (*put)(void *slot, uint8_t *buf), void *slot)
{
    pthread_mutex_lock(&r->lock);
    uint32_t n = r->reserve_count;
    uint8_t *bufs[DT_RING_RESERVE];
    memcpy(bufs, r->reserve, sizeof bufs);
    r->reserve_count = 0;
    pthread_mutex_unlock(&r->lock);
    for (uint32_t i = 0; i < n; i++) put(slot, bufs[i]);
}

void dt__ring_copy_kept(dt_ring *r, dt_session *into)
{
    pthread_mutex_lock(&r->evict_lock);
    dt_session *x = r->scratch;
    dt__core_lock(x);
    for (uint32_t d = 0; d < DT_MAX_DEVICES; d++)
        if (x->devices[d].valid && !into->devices[d].valid) dt__core_set_device(into, &x->devices[d]);
    const dt_sink *kept = &x->sink;
    for (size_t i = 0; i < kept->corr_log_count; i++) dt__corr_link(into, kept->corr_log[2 * i], kept->corr_log[2 * i + 1]);
    if (atomic_load(&x->external_unreliable)) atomic_store(&into->external_unreliable, 1);
    dt__core_unlock(x);
    pthread_mutex_unlock(&r->evict_lock);
}

void dt__ring_evicted_until(dt_ring *r, uint64_t *vendor, uint64_t *real)
{
    pthread_mutex_lock(&r->lock);
    *vendor = r->until_vendor;
    *real = r->until_real;
    pthread_mutex_unlock(&r->lock);
}

uint64_t dt__ring_evicted_buffers(dt_ring *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->evicted_buffers;
    pthread_mutex_unlock(&r->lock);
    return n;
}

uint64_t dt__ring_refused(dt_ring *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->refused;
    pthread_mutex_unlock(&r->lock);
    return n;
}
