/*
 * rocprofiler-sdk buffers: staging buffers handed to the core, each
 * delivery split by the tool buffers whose services want its kinds and
 * handed over as arrays of record headers with the drop count so far.
 */
#include <stdlib.h>
#include <string.h>

#include "sdk.h"

/* Staging buffers handed to the core. */
static struct {
    pthread_mutex_t lock;
    uint8_t **free;
    size_t *sizes;
    size_t free_count, free_cap, outstanding;
} staging = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The core's buffer request (its lock held). Lossless: never refused. */
void sdk_staging_request(uint8_t **out, size_t *size, size_t *max_records)
{
    size_t want = atomic_load(&sdk_state.staging_size);
    *max_records = 0;
    *out = NULL;
    *size = 0;
    pthread_mutex_lock(&staging.lock);
    if (!atomic_load(&sdk_state.lossless) && staging.outstanding >= 2) {
        pthread_mutex_unlock(&staging.lock); /* discard: both halves are full */
        return;
    }
    for (size_t i = 0; i < staging.free_count; i++) {
        if (staging.sizes[i] != want) continue;
        *out = staging.free[i];
        staging.free[i] = staging.free[--staging.free_count];
        staging.sizes[i] = staging.sizes[staging.free_count];
        break;
    }
    if (!*out) *out = aligned_alloc(64, (want + 63) & ~(size_t)63);
    if (*out) {
        *size = want;
        staging.outstanding++;
    }
    pthread_mutex_unlock(&staging.lock);
}

static void staging_release(uint8_t *buf, size_t size)
{
    pthread_mutex_lock(&staging.lock);
    staging.outstanding--;
    if (staging.free_count == staging.free_cap) {
        size_t cap = staging.free_cap ? staging.free_cap * 2 : 16;
        uint8_t **f = realloc(staging.free, cap * sizeof *f);
        size_t *s = f ? realloc(staging.sizes, cap * sizeof *s) : NULL;
        if (f) staging.free = f;
        if (s) {
            staging.sizes = s;
            staging.free_cap = cap;
        }
    }
    if (staging.free_count < staging.free_cap) {
        staging.free[staging.free_count] = buf;
        staging.sizes[staging.free_count++] = size;
    } else {
        free(buf);
    }
    pthread_mutex_unlock(&staging.lock);
}

void sdk_staging_complete(void) {}

typedef struct delivery {
    rsdk_buffer_tracing_cb callback;
    void *data;
    uint64_t context, buffer, drops;
    int active;
    rsdk_record_header **headers;
    size_t n;
} delivery;

/* sdk_state.lock held. The buffers a record of this kind goes to (a mask of
   d[]): those whose context has the service (the active ones, or, when the
   context stopped since the record was made, any); a kind no service asked
   for goes to the first buffer, as records of other kinds would reach a
   tool. */
static uint32_t route(const delivery *d, size_t nd, uint32_t kind)
{
    int known = kind < KIND_SLOTS;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t mask = 0;
        for (size_t i = 0; i < nd; i++) {
            const sdk_context *c = sdk_find_context(d[i].context);
            if (!c || !known || (pass == 0 && !d[i].active) || !c->buffered[kind].on ||
                c->buffered[kind].buffer != d[i].buffer)
                continue;
            mask |= 1u << i;
        }
        if (mask) return mask;
    }
    for (size_t i = 0; i < nd; i++)
        if (d[i].active || i == nd - 1) return 1u << i;
    return 0;
}

void sdk_complete_buffer(void (*client_fn)(void), uint8_t *buf, size_t size, size_t valid)
{
    (void)client_fn;
    size_t max_records = valid / TRUNCATED_SIZE + 1;
    rsdk_record_header *headers = malloc(max_records * sizeof *headers);
    delivery d[MAX_BUFFERS];
    size_t nd = 0;
    pthread_mutex_lock(&sdk_state.lock);
    for (int b = 0; b < MAX_BUFFERS && headers; b++) {
        const sdk_buffer *bf = &sdk_state.buffers[b];
        const sdk_context *c = bf->valid ? sdk_find_context(bf->context) : NULL;
        if (!c) continue;
        rsdk_record_header **list = malloc(max_records * sizeof *list);
        if (!list) continue;
        d[nd++] = (delivery){bf->callback, bf->data, bf->context, (uint64_t)b + 1, 0, c->active, list, 0};
    }
    /* where each kind goes, found at its first record */
    uint32_t routes[KIND_SLOTS + 1];
    uint32_t routed = 0;
    size_t off = 0, count = 0;
    while (nd && off + TRUNCATED_SIZE <= valid) {
        uint8_t *rec = buf + off;
        size_t avail = valid - off;
        size_t sz = sdk_record_size(sdk_record_kind(rec, avail));
        uint32_t kind;
        memcpy(&kind, rec + 8, sizeof kind);
        if (sz > avail) {
            /* the core cut this record short: the SDK's equivalent is a
               record whose size cannot hold what its kind holds */
            uint64_t impossible = avail;
            memcpy(rec, &impossible, sizeof impossible);
            sz = avail;
        }
        rsdk_record_header *h = &headers[count++];
        h->category = RSDK_BUFFER_CATEGORY_TRACING;
        h->kind = kind;
        h->payload = rec;
        uint32_t slot = kind < KIND_SLOTS && kind != RSDK_BUFFER_PAGE_MIGRATION ? kind : KIND_SLOTS;
        if (!(routed & (1u << slot))) {
            routes[slot] = route(d, nd, slot);
            routed |= 1u << slot;
        }
        for (uint32_t m = routes[slot]; m; m &= m - 1) {
            delivery *to = &d[__builtin_ctz(m)];
            to->headers[to->n++] = h;
        }
        off += sz;
    }
    /* drops since the last delivery go with the first buffer delivered to;
       each buffer reports its own total */
    size_t dropped = emu_core_take_dropped();
    for (size_t i = 0; i < nd; i++) {
        sdk_buffer *b = sdk_find_buffer(d[i].buffer);
        if (dropped && (d[i].n || i == nd - 1)) {
            b->drops += dropped;
            dropped = 0;
        }
        d[i].drops = b->drops;
    }
    pthread_mutex_unlock(&sdk_state.lock);
    for (size_t i = 0; i < nd; i++) {
        /* the SDK calls back only with records; here also with news of drops */
        if ((d[i].n || d[i].drops) && d[i].callback)
            d[i].callback((rsdk_context_id){d[i].context}, (rsdk_buffer_id){d[i].buffer}, d[i].headers, d[i].n,
                          d[i].data, d[i].drops);
        free(d[i].headers);
    }
    free(headers);
    staging_release(buf, size);
}

/* The SDK's side of a delivery to a client that does nothing: the header
   array is made and handed over. */
static void null_callback(rsdk_record_header **headers, size_t n) { __asm__ __volatile__("" ::"r"(headers), "r"(n)); }

void sdk_null_client_buffer(uint8_t *buf, size_t valid)
{
    size_t max_records = valid / TRUNCATED_SIZE + 1, n = 0;
    rsdk_record_header *headers = malloc(max_records * sizeof *headers);
    rsdk_record_header **list = malloc(max_records * sizeof *list);
    for (size_t off = 0; headers && list && off + TRUNCATED_SIZE <= valid;) {
        uint8_t *rec = buf + off;
        size_t sz = sdk_record_size(sdk_record_kind(rec, valid - off));
        headers[n] = (rsdk_record_header){.payload = rec};
        memcpy(&headers[n].kind, rec + 8, sizeof headers[n].kind);
        headers[n].category = RSDK_BUFFER_CATEGORY_TRACING;
        list[n] = &headers[n];
        n++;
        off += sz < valid - off ? sz : valid - off;
    }
    null_callback(list, n);
    free(list);
    free(headers);
}
