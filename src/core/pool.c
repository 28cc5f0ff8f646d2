/* A bounded pool of vendor activity buffers, made up front or on demand. */
#include "base/alloc.h"
#include "base/log.h"
#include "core/pool.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct dt_buffer_pool {
    pthread_mutex_t lock;
    size_t size;           /* bytes per buffer, a multiple of 64 */
    uint32_t count;        /* buffers asked for at create */
    uint32_t cap;          /* room in the arrays below */
    uint32_t made;         /* buffers made so far: bufs[0, made) */
    uint32_t free_count;
    int lazy, grow;
    uint32_t threads;      /* distinct threads that asked (DT_POOL_GROW) */
    uint64_t id;           /* tells pools apart for those threads */
    uint8_t **bufs;        /* [cap]: every buffer made, each its own allocation */
    uint8_t *held;         /* [cap]: bufs[i] is out (with the vendor) */
    uint32_t *free_list;   /* [cap]: indices of free buffers, a stack */
    _Atomic uint64_t refused;
    struct dt_buffer_pool *next_retired;
};

static _Atomic uint64_t g_pool_ids;
/* The last growing pool this thread asked for a buffer. */
static _Thread_local uint64_t t_pool_asked;

/* Pools destroyed with buffers still out, kept so that dt__pool_reclaim()
   can recognise those buffers when the vendor hands them back. */
static pthread_mutex_t g_retired_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_buffer_pool *g_retired;

/* The buffers of the last pool destroyed with none out, kept for the next
   pool of the same buffer size (the next session): those the vendor wrote
   into are faulted in already, and they are handed out first again. A
   session would otherwise fault its buffers in anew (on the development
   machine about 1.5 us per 4 KiB, some 30 ns per launch in a short session). */
static struct {
    pthread_mutex_t lock;
    uint8_t **bufs;        /* the next to hand out first */
    uint32_t count, next;
    size_t size;
} g_spare = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint8_t *spare_take(size_t size)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&g_spare.lock);
    if (g_spare.size == size && g_spare.next < g_spare.count) b = g_spare.bufs[g_spare.next++];
    pthread_mutex_unlock(&g_spare.lock);
    return b;
}

static void spare_clear(void)
{
    for (uint32_t i = g_spare.next; i < g_spare.count; i++) free(g_spare.bufs[i]);
    free(g_spare.bufs);
    g_spare.bufs = NULL;
    g_spare.count = g_spare.next = 0;
    g_spare.size = 0;
}

void dt__pool_release_spares(void)
{
    pthread_mutex_lock(&g_spare.lock);
    spare_clear();
    pthread_mutex_unlock(&g_spare.lock);
}

static void pool_free(dt_buffer_pool *p)
{
    for (uint32_t i = 0; i < p->made; i++) dt__free(p->bufs[i]);
    dt__free(p->bufs);
    dt__free(p->held);
    dt__free(p->free_list);
    dt__free(p);
}

/* A pool with no buffer out: its buffers become the spares, in the order the
   free stack would hand them out (the last returned, the warmest, first). */
static void pool_keep_buffers(dt_buffer_pool *p)
{
    uint8_t **order = malloc((size_t)p->made * sizeof *order);
    if (!order) {
        pool_free(p);
        return;
    }
    for (uint32_t k = 0; k < p->free_count; k++) order[k] = p->bufs[p->free_list[p->free_count - 1 - k]];
    pthread_mutex_lock(&g_spare.lock);
    spare_clear();
    g_spare.bufs = order;
    g_spare.count = p->free_count;
    g_spare.size = p->size;
    pthread_mutex_unlock(&g_spare.lock);
    p->made = 0; /* the buffers are the spares' now */
    pool_free(p);
}

/* Make one more buffer and push it on the free stack; lock held. */
static int pool_make(dt_buffer_pool *p)
{
    uint8_t *b = spare_take(p->size);
    if (!b) b = dt__aligned_alloc(64, p->size);
    if (!b) return -1;
    p->bufs[p->made] = b;
    p->held[p->made] = 0;
    p->free_list[p->free_count++] = p->made++;
    return 0;
}

/* Buffers a growing pool may have: see DT_POOL_GROW. */
static uint32_t pool_bound(const dt_buffer_pool *p)
{
    if (!p->grow) return p->count;
    uint64_t by_count = (uint64_t)p->count * DT_POOL_GROW_FACTOR;
    uint64_t by_threads = (uint64_t)p->count + (uint64_t)DT_POOL_PER_THREAD * p->threads;
    uint64_t bound = by_count > by_threads ? by_count : by_threads;
    return bound > DT_POOL_MAX_BUFFERS ? DT_POOL_MAX_BUFFERS : (uint32_t)bound;
}

/* Room for one more buffer in the arrays; lock held. */
static int pool_room(dt_buffer_pool *p)
{
    if (p->made < p->cap) return 0;
    uint32_t cap = p->cap * 2 > DT_POOL_MAX_BUFFERS ? DT_POOL_MAX_BUFFERS : p->cap * 2;
    if (cap <= p->cap) return -1;
    uint8_t **bufs = dt__realloc(p->bufs, (size_t)cap * sizeof *bufs);
    if (!bufs) return -1;
    p->bufs = bufs;
    uint8_t *held = dt__realloc(p->held, (size_t)cap * sizeof *held);
    if (!held) return -1;
    p->held = held;
    uint32_t *free_list = dt__realloc(p->free_list, (size_t)cap * sizeof *free_list);
    if (!free_list) return -1;
    p->free_list = free_list;
    p->cap = cap;
    return 0;
}

dt_buffer_pool *dt__pool_create(uint32_t count, size_t size, unsigned flags)
{
    if (!count || count > DT_POOL_MAX_BUFFERS || !size || size > SIZE_MAX - 63) return NULL;
    size = (size + 63) & ~(size_t)63;
    if (size > SIZE_MAX / count) return NULL;
    dt_buffer_pool *p = dt__calloc(1, sizeof *p);
    if (!p) return NULL;
    p->bufs = dt__calloc(count, sizeof *p->bufs);
    p->held = dt__calloc(count, sizeof *p->held);
    p->free_list = dt__calloc(count, sizeof *p->free_list);
    p->size = size;
    p->count = p->cap = count;
    p->lazy = (flags & DT_POOL_LAZY) != 0;
    p->grow = (flags & DT_POOL_GROW) != 0;
    p->id = atomic_fetch_add(&g_pool_ids, 1) + 1;
    if (!p->bufs || !p->held || !p->free_list) {
        pool_free(p);
        return NULL;
    }
    while (!p->lazy && p->made < p->count) {
        if (pool_make(p) != 0) {
            pool_free(p);
            return NULL;
        }
    }
    /* Handed out in address order of making: the first made goes first. */
    for (uint32_t i = 0; i < p->free_count / 2; i++) {
        uint32_t t = p->free_list[i];
        p->free_list[i] = p->free_list[p->free_count - 1 - i];
        p->free_list[p->free_count - 1 - i] = t;
    }
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

uint32_t dt__pool_destroy(dt_buffer_pool *p)
{
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    uint32_t out = p->made - p->free_count;
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_destroy(&p->lock);
    if (out == 0) {
        pool_keep_buffers(p);
        return 0;
    }
    /* The vendor may still write into the buffers it holds: free only the
       idle ones and keep the rest, compacted, until dt__pool_reclaim(). */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->made; i++) {
        if (p->held[i]) {
            p->bufs[kept] = p->bufs[i];
            p->held[kept++] = 1;
        } else {
            dt__free(p->bufs[i]);
        }
    }
    p->made = kept;
    p->free_count = 0;
    dt__log("buffer pool destroyed with %" PRIu32 " buffers of %zu bytes still held by the vendor; "
           "their memory is kept",
           out, p->size);
    pthread_mutex_lock(&g_retired_lock);
    p->next_retired = g_retired;
    g_retired = p;
    pthread_mutex_unlock(&g_retired_lock);
    return out;
}

int dt__pool_reclaim(uint8_t *buf)
{
    if (!buf) return -1;
    int rc = -1;
    pthread_mutex_lock(&g_retired_lock);
    for (dt_buffer_pool **link = &g_retired; *link && rc != 0; link = &(*link)->next_retired) {
        dt_buffer_pool *p = *link;
        for (uint32_t i = 0; i < p->made; i++) {
            if (p->bufs[i] != buf) continue;
            dt__free(buf);
            p->bufs[i] = p->bufs[--p->made];
            rc = 0;
            break;
        }
        if (rc == 0 && p->made == 0) {
            *link = p->next_retired;
            pool_free(p);
            break;
        }
    }
    pthread_mutex_unlock(&g_retired_lock);
    return rc;
}

uint8_t *dt__pool_get(dt_buffer_pool *p)
{
    uint8_t *b = dt__pool_try_get(p);
    if (!b && p) atomic_fetch_add_explicit(&p->refused, 1, memory_order_relaxed);
    return b;
}

uint8_t *dt__pool_try_get(dt_buffer_pool *p)
{
    if (!p) return NULL;
    pthread_mutex_lock(&p->lock);
    if (p->grow && t_pool_asked != p->id) {
        t_pool_asked = p->id;
        p->threads++;
    }
    uint8_t *b = NULL;
    if (!p->free_count && (p->lazy || p->made >= p->count) && p->made < pool_bound(p) && pool_room(p) == 0)
        pool_make(p);
    if (p->free_count) {
        uint32_t i = p->free_list[--p->free_count];
        p->held[i] = 1;
        b = p->bufs[i];
    }
    pthread_mutex_unlock(&p->lock);
    return b;
}

int dt__pool_put(dt_buffer_pool *p, uint8_t *buf)
{
    if (!p || !buf) return -1;
    int rc = -1;
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->made; i++) {
        if (p->bufs[i] != buf) continue;
        if (p->held[i]) {
            p->held[i] = 0;
            p->free_list[p->free_count++] = i;
            rc = 0;
        }
        break;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

size_t dt__pool_buffer_size(const dt_buffer_pool *p) { return p ? p->size : 0; }

uint32_t dt__pool_outstanding(dt_buffer_pool *p)
{
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    uint32_t out = p->made - p->free_count;
    pthread_mutex_unlock(&p->lock);
    return out;
}

uint64_t dt__pool_refused(const dt_buffer_pool *p)
{
    return p ? atomic_load_explicit(&((dt_buffer_pool *)p)->refused, memory_order_relaxed) : 0;
}

void dt__pool_shape(dt_buffer_pool *p, dt_pool_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    out->made = p->made;
    out->bound = pool_bound(p);
    out->threads = p->threads;
    pthread_mutex_unlock(&p->lock);
}

/* ---- the one pool policy every backend follows ---- */

int dt__pool_slot_configure(dt_pool_slot *slot, uint32_t count, size_t size, unsigned flags)
{
    dt_buffer_pool *p = dt__pool_create(count, size, flags);
    if (!p) return -1;
    pthread_mutex_lock(&slot->lock);
    /* Under the lock: a buffer of the old pool coming back must find it
       either current or already retired. */
    dt__pool_destroy(slot->pool);
    slot->pool = p;
    pthread_mutex_unlock(&slot->lock);
    return 0;
}

int dt__pool_slot_exists(dt_pool_slot *slot)
{
    pthread_mutex_lock(&slot->lock);
    int have = slot->pool != NULL;
    pthread_mutex_unlock(&slot->lock);
    return have;
}

uint8_t *dt__pool_slot_get(dt_pool_slot *slot, size_t *size)
{
    pthread_mutex_lock(&slot->lock);
    uint8_t *b = slot->ring ? dt__pool_try_get(slot->pool) : dt__pool_get(slot->pool);
    /* the ring counts its refusals itself */
    if (!b && slot->ring && slot->pool) b = dt__ring_recycle(slot->ring);
    *size = b ? dt__pool_buffer_size(slot->pool) : 0;
    pthread_mutex_unlock(&slot->lock);
    return b;
}

void dt__pool_slot_put(dt_pool_slot *slot, uint8_t *buf)
{
    if (!buf) return;
    pthread_mutex_lock(&slot->lock);
    /* A buffer of an earlier configuration is freed as it comes back. */
    if (dt__pool_put(slot->pool, buf) != 0) dt__pool_reclaim(buf);
    pthread_mutex_unlock(&slot->lock);
}

uint64_t dt__pool_slot_refused(dt_pool_slot *slot)
{
    pthread_mutex_lock(&slot->lock);
    uint64_t refused = dt__pool_refused(slot->pool) + (slot->ring ? dt__ring_refused(slot->ring) : 0);
    pthread_mutex_unlock(&slot->lock);
    return refused;
}

void dt__pool_slot_shape(dt_pool_slot *slot, dt_pool_stats *out)
{
    pthread_mutex_lock(&slot->lock);
    dt__pool_shape(slot->pool, out);
    pthread_mutex_unlock(&slot->lock);
}

int dt__pool_slot_attach_ring(dt_pool_slot *slot, dt_ring *r)
{
    pthread_mutex_lock(&slot->lock);
    uint8_t *got[DT_RING_RESERVE];
    uint32_t n = 0;
    while (n < DT_RING_RESERVE && (got[n] = dt__pool_try_get(slot->pool)) != NULL) n++;
    if (n < DT_RING_RESERVE) {
        for (uint32_t i = 0; i < n; i++) dt__pool_put(slot->pool, got[i]);
        pthread_mutex_unlock(&slot->lock);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) dt__ring_add_reserve(r, got[i]);
    slot->ring = r;
    pthread_mutex_unlock(&slot->lock);
    return 0;
}

void dt__pool_slot_put_to(void *slot, uint8_t *buf) { dt__pool_slot_put(slot, buf); }

void dt__pool_slot_detach_ring(dt_pool_slot *slot)
{
    pthread_mutex_lock(&slot->lock);
    dt_ring *r = slot->ring;
    slot->ring = NULL;
    pthread_mutex_unlock(&slot->lock);
    if (r) dt__ring_drop_reserve(r, dt__pool_slot_put_to, slot);
}

uint32_t dt__pool_slot_release(dt_pool_slot *slot)
{
    pthread_mutex_lock(&slot->lock);
    uint32_t held = dt__pool_destroy(slot->pool);
    slot->pool = NULL;
    pthread_mutex_unlock(&slot->lock);
    return held;
}
