/* The event store: fixed-size records in 4 MiB chunks, never moved. */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

void dt_store_init(dt_store *st, uint64_t limit)
{
    memset(st, 0, sizeof *st);
    st->limit = limit;
}

void dt_store_free(dt_store *st)
{
    for (size_t i = 0; i < st->chunk_count; i++) free(st->chunks[i]);
    free(st->chunks);
    memset(st, 0, sizeof *st);
}

dt_rec *dt_store_push(dt_store *st)
{
    if (st->limit && st->count >= st->limit) return NULL;
    size_t chunk = st->count >> DT_STORE_CHUNK_SHIFT;
    if (chunk == st->chunk_count) {
        if (st->chunk_count == st->chunk_cap) {
            size_t cap = st->chunk_cap ? st->chunk_cap * 2 : 16;
            dt_rec **c = realloc(st->chunks, cap * sizeof *c);
            if (!c) return NULL;
            st->chunks = c;
            st->chunk_cap = cap;
        }
        /* calloc: pages are mapped lazily, and records start zeroed. */
        dt_rec *mem = aligned_alloc(64, (size_t)DT_STORE_CHUNK * sizeof(dt_rec));
        if (!mem) return NULL;
        st->chunks[st->chunk_count++] = mem;
    }
    dt_rec *r = dt_store_at(st, st->count++);
    memset(r, 0, sizeof *r);
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
    while (st->chunk_count > need) free(st->chunks[--st->chunk_count]);
}

size_t dt_store_bytes(const dt_store *st)
{
    return st->chunk_count * (size_t)DT_STORE_CHUNK * sizeof(dt_rec) +
           st->chunk_cap * sizeof(dt_rec *);
}
