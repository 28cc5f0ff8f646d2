/* The event store: fixed-size records in 4 MiB chunks, never moved. */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_BYTES ((size_t)DT_STORE_CHUNK * sizeof(dt_rec))

/* Chunks are 4 MiB of anonymous memory, returned to the system whole.
   (Transparent huge pages were measured slower here: with defrag=madvise the
   first touch compacts memory. The first touch of fresh pages is the main
   cost of storing into a new store; bench/decode reports it apart.) */
static dt_rec *chunk_alloc(void)
{
    if (dt_alloc_injected_failure()) return NULL;
    void *m = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void chunk_free(dt_rec *c)
{
    if (c) munmap(c, CHUNK_BYTES);
}

void dt_store_init(dt_store *st, uint64_t limit)
{
    memset(st, 0, sizeof *st);
    st->limit = limit;
}

void dt_store_free(dt_store *st)
{
    for (size_t i = 0; i < st->chunk_count; i++) chunk_free(st->chunks[i]);
    dt_free(st->chunks);
    memset(st, 0, sizeof *st);
}

dt_rec *dt_store_push(dt_store *st)
{
    if (st->limit && st->count >= st->limit) return NULL;
    size_t chunk = st->count >> DT_STORE_CHUNK_SHIFT;
    if (chunk == st->chunk_count) {
        if (st->chunk_count == st->chunk_cap) {
            size_t cap = st->chunk_cap ? st->chunk_cap * 2 : 16;
            dt_rec **c = dt_realloc(st->chunks, cap * sizeof *c);
            if (!c) return NULL;
            st->chunks = c;
            st->chunk_cap = cap;
        }
        dt_rec *mem = chunk_alloc();
        if (!mem) return NULL;
        st->chunks[st->chunk_count++] = mem;
    }
    dt_rec *r = dt_store_at(st, st->count++);
    *r = (dt_rec){0};
    return r;
}

void dt_store_filter(dt_store *st, int (*keep)(dt_rec *, void *), void *arg)
{
    size_t out = 0;
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt_store_at(st, i);
        if (!keep(r, arg)) continue;
        if (out != i) *dt_store_at(st, out) = *r;
        out++;
    }
    st->count = out;
    size_t need = (out + DT_STORE_CHUNK - 1) >> DT_STORE_CHUNK_SHIFT;
    while (st->chunk_count > need) chunk_free(st->chunks[--st->chunk_count]);
}

size_t dt_store_bytes(const dt_store *st)
{
    /* Pages of a chunk that were never written are never made resident:
       count the used part of the last chunk, rounded up to whole pages. */
    size_t full = st->count >> DT_STORE_CHUNK_SHIFT;
    size_t tail = (st->count & (DT_STORE_CHUNK - 1)) * sizeof(dt_rec);
    tail = (tail + 4095) & ~(size_t)4095;
    return full * CHUNK_BYTES + tail +
           st->chunk_cap * sizeof(dt_rec *);
}
