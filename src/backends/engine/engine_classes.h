/*
 * The engine's class decoders (kernels, copies, fills, API calls, External
 * ids, sync, overhead) over a record's fields: read through a prepared
 * plan, or at the offsets of a layout known when compiling (the vendor's
 * walk, engine_walk.h). Internal, not installed.
 */
#ifndef DT_ENGINE_CLASSES_H
#define DT_ENGINE_CLASSES_H

#include "backends/engine/engine.h"
#include "backends/common/api_names.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */
/* A field's value. With `wide` (the record has 8 bytes past every field it
   holds, checked once per record) the read is one 8-byte load and a mask,
   whatever the layout, so a layout read at run time costs about what a
   compiled struct access does; otherwise it reads exactly the field's
   bytes. Absent fields read as 0. */
__attribute__((always_inline)) static inline uint64_t eng_rd(const uint8_t *rec, const dt_plan *P, int field, int wide)
{
    if (wide) {
        uint64_t v;
        memcpy(&v, rec + P->off[field], 8);
        return v & P->mask[field];
    }
    switch (P->layout->f[field].size) {
    case 8: { uint64_t v; memcpy(&v, rec + P->off[field], 8); return v; }
    case 4: { uint32_t v; memcpy(&v, rec + P->off[field], 4); return v; }
    case 2: { uint16_t v; memcpy(&v, rec + P->off[field], 2); return v; }
    case 1: return rec[P->off[field]];
    default: return 0;
    }
}

/* A field of a layout known when compiling (a vendor's walk,
   DT_DECODER_WALK): its offset and size are constants, so the read is one
   load of the field's own width. */
__attribute__((always_inline)) static inline uint64_t eng_rdc(const uint8_t *rec, const dt_record_layout *l, int field)
{
    switch (l->f[field].size) {
    case 8: { uint64_t v; memcpy(&v, rec + l->f[field].off, 8); return v; }
    case 4: { uint32_t v; memcpy(&v, rec + l->f[field].off, 4); return v; }
    case 2: { uint16_t v; memcpy(&v, rec + l->f[field].off, 2); return v; }
    case 1: return rec[l->f[field].off];
    default: return 0;
    }
}

/* Whether a field of this size is read (1, 2, 4 or 8 bytes), as a plan's
   mask says: any other reads as 0. */
static inline int eng_readable(uint8_t size)
{
    return size == 1 || size == 2 || size == 4 || size == 8;
}

/* In the class decoders: CL, the layout when it is a constant (else NULL:
   the prepared plan L, read wide or not). */
#define F(field) (CL ? eng_rdc(p, CL, field) : eng_rd(p, L, field, wide))
#define HAS(field) (CL ? eng_readable(CL->f[field].size) : L->mask[field] != 0)

static inline uint8_t eng_map_value(const uint8_t *table, uint32_t count, uint64_t value)
{
    return table && value < count ? table[value] : 0;
}

static inline const char *eng_value_name(const dt_value_name *names, size_t n, uint64_t value)
{
    for (size_t i = 0; i < n; i++)
        if (names[i].value == value) return names[i].name;
    return NULL;
}

static inline uint32_t eng_nonnegative(uint64_t raw)
{
    int32_t v = (int32_t)(uint32_t)raw;
    return v > 0 ? (uint32_t)v : 0;
}

/* ------------------------------------------------------------------ */
/* Per-buffer state                                                    */
/* ------------------------------------------------------------------ */
typedef struct dt_walk_ctx {
    const dt_decoder *d;
    dt_session *s;
    uint32_t capture;
    dt_decode_cache cache;
    dt_api_names api; /* key: cbid*2+driver+1 */
} dt_walk_ctx;

/* Interned name of an API call, cached for the buffer: the lookup inline
   in the decoder, the name's lookup and interning here. */
DT_HIDDEN uint32_t dt__decoder_api_name_miss(dt_walk_ctx *cx, int driver, uint32_t cbid, uint64_t key);

__attribute__((always_inline)) static inline uint32_t eng_api_name(dt_walk_ctx *cx, int driver, uint32_t cbid)
{
    uint64_t key = (uint64_t)cbid * 2u + (uint64_t)driver + 1u;
    uint32_t id;
    if (dt__api_names_find(&cx->api, key, &id)) return id;
    return dt__decoder_api_name_miss(cx, driver, cbid, key);
}

/* ------------------------------------------------------------------ */
/* Decoders, one per record class                                      */
/* ------------------------------------------------------------------ */
__attribute__((always_inline)) static inline void eng_kernel(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_KERNEL)) return;
    dt_session *s = cx->s;
    dt_launch_config cfg;
    memset(&cfg, 0, sizeof cfg); /* hashed and compared bytewise when interned */
    cfg.grid[0] = (int32_t)F(DT_F_GRID_X);
    cfg.grid[1] = (int32_t)F(DT_F_GRID_Y);
    cfg.grid[2] = (int32_t)F(DT_F_GRID_Z);
    cfg.block[0] = (int32_t)F(DT_F_BLOCK_X);
    cfg.block[1] = (int32_t)F(DT_F_BLOCK_Y);
    cfg.block[2] = (int32_t)F(DT_F_BLOCK_Z);
    cfg.registers_per_thread = (uint32_t)F(DT_F_REGISTERS);
    cfg.static_shared_memory = eng_nonnegative(F(DT_F_STATIC_SHARED));
    cfg.dynamic_shared_memory = eng_nonnegative(F(DT_F_DYNAMIC_SHARED));
    uint32_t config = dt__decode_launch_config(s, &cx->cache, &cfg);
    const char *raw = (const char *)(uintptr_t)F(DT_F_NAME);
    uint32_t name = dt__decode_kernel_name(s, &cx->cache, raw);
    uint64_t start = F(DT_F_START);
    /* a kernel whose configuration could not be kept is dropped (store_full) */
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_KERNEL, start, F(DT_F_END), F(DT_F_CORRELATION),
                                       (uint32_t)F(DT_F_DEVICE), (uint32_t)F(DT_F_STREAM),
                                       (uint32_t)F(DT_F_CONTEXT), config == UINT32_MAX ? UINT32_MAX : name);
    if (!r) return;
    r->u.kernel.config = config;
    /* Unknown latency timestamps are 0 or all ones depending on the
       release, and absent fields read as 0: all are "unknown" here. */
    r->u.kernel.queued_delta = dt__latency_delta(start, F(DT_F_QUEUED));
    r->u.kernel.submitted_delta = dt__latency_delta(start, F(DT_F_SUBMITTED));
}

__attribute__((always_inline)) static inline void eng_memcpy(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_MEMCPY)) return;
    const dt_vendor *v = cx->d->v;
    uint64_t kind = F(DT_F_COPY_KIND);
    uint32_t device = (uint32_t)F(DT_F_DEVICE);
    dt_copy copy = {
        .start = F(DT_F_START), .end = F(DT_F_END), .correlation = F(DT_F_CORRELATION), .bytes = F(DT_F_BYTES),
        .device = device, .stream = (uint32_t)F(DT_F_STREAM), .context = (uint32_t)F(DT_F_CONTEXT),
        .src_device = device, .dst_device = device,
        .copy_kind = eng_map_value(v->enums.copy_kinds, v->enums.copy_kind_count, kind),
        .src_kind = eng_map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_SRC_KIND)),
        .dst_kind = eng_map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_DST_KIND)),
        .async = (F(DT_F_FLAGS) & v->enums.copy_async_flag) != 0,
    };
    if (kind == v->enums.peer_copy_kind && HAS(DT_F_SRC_DEVICE) && HAS(DT_F_DST_DEVICE)) {
        copy.src_device = (uint32_t)F(DT_F_SRC_DEVICE);
        copy.dst_device = (uint32_t)F(DT_F_DST_DEVICE);
    }
    dt__add_copy(cx->s, &cx->cache, &copy);
}

__attribute__((always_inline)) static inline void eng_memset(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_MEMSET)) return;
    const dt_vendor *v = cx->d->v;
    dt_fill fill = {
        .start = F(DT_F_START), .end = F(DT_F_END), .correlation = F(DT_F_CORRELATION), .bytes = F(DT_F_BYTES),
        .device = (uint32_t)F(DT_F_DEVICE), .stream = (uint32_t)F(DT_F_STREAM),
        .context = (uint32_t)F(DT_F_CONTEXT), .value = (uint32_t)F(DT_F_VALUE),
        .memory_kind = eng_map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_MEMORY_KIND)),
        .async = (F(DT_F_FLAGS) & v->enums.fill_async_flag) != 0,
    };
    dt__add_fill(cx->s, &cx->cache, &fill);
}

__attribute__((always_inline)) static inline void eng_api(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                         const uint8_t *p, int driver, int wide)
{
    if (!(cx->capture & (driver ? DT_CAPTURE_DRIVER : DT_CAPTURE_RUNTIME))) return;
    uint32_t cbid = (uint32_t)F(DT_F_CBID);
    dt_rec *r = dt__add_api_call(cx->s, driver ? DT_EVENT_DRIVER : DT_EVENT_RUNTIME, F(DT_F_START), F(DT_F_END),
                                F(DT_F_CORRELATION), (uint32_t)F(DT_F_PROCESS), (uint32_t)F(DT_F_THREAD),
                                eng_api_name(cx, driver, cbid), cbid, (int32_t)(uint32_t)F(DT_F_RETURN_VALUE));
    if (r && dt__decoder_is_launch(cx->d, driver, cbid)) {
        r->flags |= DT_REC_LAUNCH;
        dt__decoder_count_graph(cx->d, driver, cbid);
    }
}

__attribute__((always_inline)) static inline void eng_external(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    /* Other kinds belong to other clients in the process (Kineto pushes its
       own): not devtrace's to attribute. */
    if (F(DT_F_EXTERNAL_KIND) == cx->d->v->activity.external_kind)
        dt__corr_link(cx->s, F(DT_F_CORRELATION), F(DT_F_EXTERNAL_ID));
}

__attribute__((always_inline)) static inline void eng_sync(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_SYNC)) return;
    const dt_vendor *v = cx->d->v;
    const char *name = eng_value_name(v->enums.sync_names, v->enums.sync_name_count, F(DT_F_SYNC_TYPE));
    uint32_t stream = (uint32_t)F(DT_F_STREAM);
    /* a context-wide synchronisation names no stream */
    if (stream == v->enums.sync_no_stream) stream = 0;
    dt__add_device_activity(cx->s, DT_EVENT_SYNC, F(DT_F_START), F(DT_F_END), F(DT_F_CORRELATION), 0, stream,
                           (uint32_t)F(DT_F_CONTEXT), dt__sink_intern(cx->s, name ? name : "Synchronization"));
}

__attribute__((always_inline)) static inline void eng_overhead(dt_walk_ctx *cx, const dt_plan *L, const dt_record_layout *CL,
                                                            const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_OVERHEAD)) return;
    const dt_vendor *v = cx->d->v;
    const char *name = eng_value_name(v->enums.overhead_names, v->enums.overhead_name_count, F(DT_F_OVERHEAD_KIND));
    uint64_t object = F(DT_F_OBJECT_KIND);
    uint32_t device = 0, context = 0, lane = 0;
    if (object == v->enums.object_process || object == v->enums.object_thread) {
        context = (uint32_t)F(DT_F_OBJECT_ID0); /* process */
        lane = (uint32_t)F(DT_F_OBJECT_ID1);    /* thread */
    } else if (object) {
        device = (uint32_t)F(DT_F_OBJECT_ID0);
        context = (uint32_t)F(DT_F_OBJECT_ID1);
        lane = (uint32_t)F(DT_F_OBJECT_ID2);
    }
    dt__add_device_activity(cx->s, DT_EVENT_OVERHEAD, F(DT_F_START), F(DT_F_END), F(DT_F_CORRELATION), device,
                           lane, context, dt__sink_intern(cx->s, name ? name : "Overhead"));
}
#undef F
#undef HAS

/* A device description (engine_decode.c), and one record as the plans
   decode it: of a vendor's own decoder, a kind not decoded, one cut short
   or ending the buffer. */
DT_HIDDEN void dt__decoder_device(dt_walk_ctx *cx, const dt_plan *L, const uint8_t *p);
DT_HIDDEN void dt__decoder_one(dt_walk_ctx *cx, const dt_plan *P, uint32_t kind, const uint8_t *p, size_t avail);

__attribute__((always_inline)) static inline void eng_class(dt_walk_ctx *cx, const dt_plan *L,
                                                              const dt_record_layout *CL, const uint8_t *p, int wide)
{
    switch (CL ? CL->cls : L->cls) {
    case DT_RC_KERNEL: eng_kernel(cx, L, CL, p, wide); return;
    case DT_RC_MEMCPY: eng_memcpy(cx, L, CL, p, wide); return;
    case DT_RC_MEMSET: eng_memset(cx, L, CL, p, wide); return;
    case DT_RC_RUNTIME: eng_api(cx, L, CL, p, 0, wide); return;
    case DT_RC_DRIVER: eng_api(cx, L, CL, p, 1, wide); return;
    case DT_RC_EXTERNAL: eng_external(cx, L, CL, p, wide); return;
    case DT_RC_SYNC: eng_sync(cx, L, CL, p, wide); return;
    case DT_RC_OVERHEAD: eng_overhead(cx, L, CL, p, wide); return;
    case DT_RC_DEVICE: dt__decoder_device(cx, L, p); return;
    default: return;
    }
}

#endif /* DT_ENGINE_CLASSES_H */
