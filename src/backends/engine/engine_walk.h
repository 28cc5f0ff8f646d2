/*
 * The engine's record walk (engine_decode.c), here so that a vendor's file
 * can compile the walk over its own layouts: with
 * DT_DECODER_WALK(records) each field of a kernel, copy, fill, API call or
 * External id is read at an offset known when compiling, one load of its
 * width, where the walk over prepared plans reads it through the table
 * (its offset and mask loaded, then the field). Internal, not installed.
 */
#ifndef DT_ENGINE_WALK_H
#define DT_ENGINE_WALK_H

#include "backends/engine/engine_classes.h"

#include <string.h>

__attribute__((always_inline)) static inline const dt_plan *eng_find_plan(const dt_decoder *d, uint32_t kind)
{
    if (kind < 64) {
        unsigned i = d->index[kind];
        return i ? &d->plans[i - 1] : NULL;
    }
    for (size_t i = 0; i < d->count; i++)
        if (d->plans[i].layout->kind == kind) return &d->plans[i];
    return NULL;
}

/* The kind every CUPTI-shaped record starts with. */
static inline uint32_t eng_kind_at(const uint8_t *p)
{
    uint32_t k;
    memcpy(&k, p, sizeof k);
    return k;
}

/* A record of the constant layout CL (P's), all of whose bytes are there:
   the vendor's own decoder called directly, the classes the engine decodes
   on every launch (kernels, copies, fills, API calls, External ids) inline
   at constant offsets; the rest (devices, sync, overhead, kinds not
   decoded) as the plans do. */
__attribute__((always_inline)) static inline void eng_known_one(dt_walk_ctx *cx, const dt_plan *P,
                                                                  const dt_record_layout *CL, const uint8_t *p,
                                                                  size_t avail)
{
    if (CL->decode) {
        CL->decode(cx->d, cx->s, &cx->cache, p);
        return;
    }
    switch (CL->cls) {
    case DT_RC_KERNEL: case DT_RC_MEMCPY: case DT_RC_MEMSET: case DT_RC_RUNTIME: case DT_RC_DRIVER:
    case DT_RC_EXTERNAL:
        eng_class(cx, P, CL, p, 0);
        return;
    default:
        dt__decoder_one(cx, P, CL->kind, p, avail);
        return;
    }
}

/* By the plan's index, its layout's in the set (dt__decoder_init). */
#define DT_KNOWN_CASE(k)                                                                             \
    case k:                                                                                          \
        if ((k) < count) eng_known_one(cx, P, &set[(k) < count ? (k) : 0], p, avail);             \
        return;
__attribute__((always_inline)) static inline void eng_known(dt_walk_ctx *cx, const dt_plan *P,
                                                              const dt_record_layout *set, size_t count,
                                                              const uint8_t *p, size_t avail)
{
    switch (P->at) {
    DT_KNOWN_CASE(0) DT_KNOWN_CASE(1) DT_KNOWN_CASE(2) DT_KNOWN_CASE(3) DT_KNOWN_CASE(4) DT_KNOWN_CASE(5)
    DT_KNOWN_CASE(6) DT_KNOWN_CASE(7) DT_KNOWN_CASE(8) DT_KNOWN_CASE(9) DT_KNOWN_CASE(10) DT_KNOWN_CASE(11)
    DT_KNOWN_CASE(12) DT_KNOWN_CASE(13) DT_KNOWN_CASE(14) DT_KNOWN_CASE(15) DT_KNOWN_CASE(16) DT_KNOWN_CASE(17)
    DT_KNOWN_CASE(18) DT_KNOWN_CASE(19) DT_KNOWN_CASE(20) DT_KNOWN_CASE(21) DT_KNOWN_CASE(22) DT_KNOWN_CASE(23)
    DT_KNOWN_CASE(24) DT_KNOWN_CASE(25) DT_KNOWN_CASE(26) DT_KNOWN_CASE(27) DT_KNOWN_CASE(28) DT_KNOWN_CASE(29)
    DT_KNOWN_CASE(30) DT_KNOWN_CASE(31)
    default:
        dt__decoder_one(cx, P, P->layout->kind, p, avail);
        return;
    }
}
#undef DT_KNOWN_CASE
_Static_assert(DT_DECODER_MAX_LAYOUTS == 32, "eng_known() has a case per plan");

/* ------------------------------------------------------------------ */
/* The walk                                                            */
/* ------------------------------------------------------------------ */
/* Bytes ahead of the record being decoded that are fetched: a few records. */
#define DECODE_PREFETCH 512
/* The walk, over the prepared plans (CL_SET NULL), or over a layout set
   known when compiling (DT_DECODER_WALK): then each record of a kind the
   engine decodes reads its fields at constant offsets. */
__attribute__((always_inline)) static inline void dt__decoder_walk_as(const dt_decoder *d, dt_session *s, uint8_t *buffer,
                                                                     size_t valid, dt_vendor_next_fn next,
                                                                     const dt_record_layout *CL_SET, size_t CL_COUNT)
{
    if (!s || !buffer || valid == 0) return;
    const dt_vendor_results *res = &d->v->results;
    const uint8_t *end = buffer + valid;
    const uint8_t *prev = NULL;
    size_t prev_size = 0;
    /* Whether every stride so far matched the layouts' record sizes: only
       then can bytes left after the last record be recognised as a record
       cut short (which an iterator passes over as the end). A library of
       another version may write longer records: its buffers are judged by
       the sizes only where those are its own. */
    int strides_known = next == NULL || d->sizes_known;
    void *rec = NULL;
    size_t min_at = 0; /* offset the next record must start at or after */
    /* offsets a record can start at leave room for its kind: below lim */
    const size_t lim = valid >= sizeof(uint32_t) ? valid - sizeof(uint32_t) + 1 : 0;
    const int success = res->success;
    dt_walk_ctx cx;
    cx.d = d;
    cx.s = s;
    cx.capture = dt__sink_capture(s);
    dt__decode_cache_init(&cx.cache);
    dt__api_names_init(&cx.api);
    dt__core_lock(s);
    for (;;) {
        const uint8_t *p;
        const dt_plan *P;
        if (next) {
            int r = next(buffer, valid, &rec);
            /* the common case first: one comparison per record */
            if (__builtin_expect(r != success || !rec, 0)) {
                if (r == res->max_limit_reached || r == res->queue_empty) {
                    size_t consumed = prev ? (size_t)(prev - buffer) + prev_size : 0;
                    if (strides_known && prev_size != SIZE_MAX && consumed < valid) dt__loss_add(s, DT_LOSS_MALFORMED, 1);
                    break;
                }
                if (r == res->invalid_kind) {
                    /* The iterator refuses a record it takes for incomplete or
                       invalid and cannot step past it. Where the record is of a
                       kind devtrace knows and the library's sizes are known, the
                       walk goes on by those sizes: the record is decoded like
                       any other (work still running counts as unfinished) and
                       nothing after it is lost. Otherwise the rest of the
                       buffer is lost with it. */
                    size_t at = prev ? (size_t)(prev - buffer) + prev_size : 0;
                    if (strides_known && prev_size != SIZE_MAX && at < valid && valid - at >= sizeof(uint32_t) &&
                        eng_find_plan(d, eng_kind_at(buffer + at))) {
                        next = NULL;
                        continue;
                    }
                    dt__loss_add(s, DT_LOSS_UNKNOWN_KIND, 1);
                    if (at < valid)
                        dt__core_note(s, "unreadable_bytes", "the %s iterator refused a record it could not step past: "
                                        "the records in the last bytes of a buffer were lost with it (one counted as "
                                        "unknown_kind)", d->v->backend->name);
                    break;
                }
                dt__loss_add(s, DT_LOSS_MALFORMED, 1);
                break;
            }
            p = rec;
            __builtin_prefetch(p + DECODE_PREFETCH);
            /* inside the buffer (a pointer before it wraps to a large
               offset), past the previous record, and room for a kind:
               min_at <= at < lim, in one comparison (min_at <= lim) */
            size_t at = (size_t)((uintptr_t)p - (uintptr_t)buffer);
            if (at - min_at >= lim - min_at) {
                dt__loss_add(s, DT_LOSS_MALFORMED, 1);
                break;
            }
            if (prev && (size_t)(p - prev) != prev_size) strides_known = 0;
            P = eng_find_plan(d, eng_kind_at(p));
        } else {
            /* The iterator's contract over the layouts' sizes, inline. */
            size_t off = prev ? (size_t)(prev - buffer) + prev_size : 0;
            if (off >= valid) break;
            /* bytes left that cannot hold a record: one cut short */
            if (valid - off < sizeof(uint32_t)) { dt__loss_add(s, DT_LOSS_MALFORMED, 1); break; }
            p = buffer + off;
            /* the records ahead, from memory the vendor wrote long ago */
            __builtin_prefetch(p + DECODE_PREFETCH);
            P = eng_find_plan(d, eng_kind_at(p));
            if (!P) { dt__loss_add(s, DT_LOSS_UNKNOWN_KIND, 1); break; }
            if (P->size > valid - off) { dt__loss_add(s, DT_LOSS_MALFORMED, 1); break; }
        }
        /* the common case (dt__decoder_one's last) without its tests */
        if (CL_SET) {
            if (__builtin_expect(P && (size_t)(end - p) >= P->need, 1))
                eng_known(&cx, P, CL_SET, CL_COUNT, p, (size_t)(end - p));
            else
                dt__decoder_one(&cx, P, eng_kind_at(p), p, (size_t)(end - p));
        } else if (__builtin_expect(P && (size_t)(end - p) >= P->wide_from, 1)) {
            eng_class(&cx, P, NULL, p, 1);
        } else {
            dt__decoder_one(&cx, P, eng_kind_at(p), p, (size_t)(end - p));
        }
        prev = p;
        prev_size = P ? P->size : SIZE_MAX; /* a plan's size is never 0 */
        min_at = (size_t)(p - buffer) + 1;
    }
    dt__core_unlock(s);
}

/* A vendor's walk over its layout set `records` (an array that ends with
   an entry of size 0, defined in the same file): records##_walk, named in
   its dt_layout_set (DT_LAYOUT_SET). */
#define DT_DECODER_WALK(records)                                                                    \
    void records##_walk(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,          \
                        dt_vendor_next_fn next)                                                     \
    {                                                                                               \
        dt__decoder_walk_as(d, s, buffer, valid, next, records, sizeof(records) / sizeof((records)[0]) - 1); \
    }

#endif /* DT_ENGINE_WALK_H */
