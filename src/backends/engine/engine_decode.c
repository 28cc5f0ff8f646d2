/*
 * Decoding CUPTI-shaped activity buffers through a vendor's layout table:
 * the record walk (the vendor's iterator, bounds-checked, or the layouts'
 * own strides) and one decoder per record class reading each field where
 * the chosen layout says it is.
 */
#include "backends/engine/engine.h"
#include "backends/common/api_names.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Layouts                                                             */
/* ------------------------------------------------------------------ */
static const uint64_t size_mask[9] = {0, 0xff, 0xffff, 0, 0xffffffff, 0, 0, 0, UINT64_MAX};

static void prepare(dt_plan *P, const dt_record_layout *l)
{
    P->layout = l;
    P->size = l->size;
    P->cls = l->cls;
    P->decode = l->decode;
    /* the kind; a vendor's decoder reads the whole record */
    P->need = l->decode ? l->size : 4;
    for (int i = 0; i < DT_F_COUNT; i++) {
        dt_field f = l->f[i];
        P->off[i] = f.off;
        P->mask[i] = f.size <= 8 ? size_mask[f.size] : 0;
        if (P->mask[i] && (uint32_t)f.off + f.size > P->need) P->need = (uint32_t)f.off + f.size;
    }
    P->wide_from = l->decode || l->cls == DT_RC_OTHER ? SIZE_MAX : (size_t)P->need + 8;
}

void dt__decoder_init(dt_decoder *d, const dt_vendor *v, uint32_t api_version)
{
    memset(d, 0, sizeof *d);
    d->v = v;
    /* Sets are newest first: the first one this version writes. An unknown
       version (0) gets the newest. */
    d->set = &v->records.layout_sets[0];
    for (size_t i = 0; api_version && i < v->records.layout_set_count; i++) {
        d->set = &v->records.layout_sets[i];
        if (api_version >= v->records.layout_sets[i].min_version) break;
    }
    d->sizes_known = api_version ? api_version <= d->set->sizes_known_up_to : d->set->sizes_known_up_to != 0;
    for (int driver = 0; driver < 2; driver++) {
        const uint32_t *set = driver ? v->api_ids.launch_driver : v->api_ids.launch_runtime;
        uint32_t n = driver ? v->api_ids.launch_driver_count : v->api_ids.launch_runtime_count;
        for (uint32_t i = 0; i < n; i++)
            if (set[i] < DT_LAUNCH_BITS) d->launch_bits[driver][set[i] / 64] |= UINT64_C(1) << (set[i] % 64);
    }
    for (size_t i = 0; d->set->records[i].size && d->count < DT_DECODER_MAX_LAYOUTS; i++) {
        const dt_record_layout *l = &d->set->records[i];
        prepare(&d->plans[d->count], l);
        if (l->kind < 64 && !d->index[l->kind]) d->index[l->kind] = (uint8_t)(d->count + 1);
        d->count++;
    }
}

__attribute__((always_inline)) static inline const dt_plan *find_plan(const dt_decoder *d, uint32_t kind)
{
    if (kind < 64) {
        unsigned i = d->index[kind];
        return i ? &d->plans[i - 1] : NULL;
    }
    for (size_t i = 0; i < d->count; i++)
        if (d->plans[i].layout->kind == kind) return &d->plans[i];
    return NULL;
}

const dt_record_layout *dt__decoder_layout(const dt_decoder *d, uint32_t kind)
{
    const dt_plan *P = find_plan(d, kind);
    return P ? P->layout : NULL;
}

/* The kind every CUPTI-shaped record starts with. */
static uint32_t kind_at(const uint8_t *p)
{
    uint32_t k;
    memcpy(&k, p, sizeof k);
    return k;
}

static size_t stride_of(const dt_decoder *d, uint32_t kind)
{
    const dt_plan *P = find_plan(d, kind);
    return P ? P->size : 0;
}

int dt__decoder_next(const dt_decoder *d, uint8_t *buffer, size_t valid, void **record)
{
    const dt_vendor_results *r = &d->v->results;
    if (!buffer || !record) return r->invalid_parameter;
    size_t off = 0;
    if (*record) {
        const uint8_t *cur = *record;
        if (cur < buffer || (size_t)(cur - buffer) >= valid) return r->invalid_parameter;
        if (valid - (size_t)(cur - buffer) < sizeof(uint32_t)) return r->max_limit_reached;
        size_t sz = stride_of(d, kind_at(cur));
        if (sz == 0) return r->invalid_kind;
        off = (size_t)(cur - buffer) + sz;
    }
    if (valid < sizeof(uint32_t) || off > valid - sizeof(uint32_t)) return r->max_limit_reached;
    size_t sz = stride_of(d, kind_at(buffer + off));
    if (sz == 0) return r->invalid_kind;
    if (sz > valid - off) return r->max_limit_reached;
    *record = buffer + off;
    return r->success;
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */
/* A field's value. With `wide` (the record has 8 bytes past every field it
   holds, checked once per record) the read is one 8-byte load and a mask,
   whatever the layout, so a layout read at run time costs about what a
   compiled struct access does; otherwise it reads exactly the field's
   bytes. Absent fields read as 0. */
__attribute__((always_inline)) static inline uint64_t rd(const uint8_t *rec, const dt_plan *P, int field, int wide)
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

#define F(field) rd(p, L, field, wide)
#define HAS(field) (L->mask[field] != 0)

static uint8_t map_value(const uint8_t *table, uint32_t count, uint64_t value)
{
    return table && value < count ? table[value] : 0;
}

static const char *value_name(const dt_value_name *names, size_t n, uint64_t value)
{
    for (size_t i = 0; i < n; i++)
        if (names[i].value == value) return names[i].name;
    return NULL;
}

static uint32_t nonnegative(uint64_t raw)
{
    int32_t v = (int32_t)(uint32_t)raw;
    return v > 0 ? (uint32_t)v : 0;
}

/* ------------------------------------------------------------------ */
/* Per-buffer state                                                    */
/* ------------------------------------------------------------------ */
typedef struct decode_ctx {
    const dt_decoder *d;
    dt_session *s;
    uint32_t capture;
    dt_decode_cache cache;
    dt_api_names api; /* key: cbid*2+driver+1 */
} decode_ctx;

int dt__decoder_is_launch(const dt_decoder *d, int driver, uint32_t cbid)
{
    if (cbid < DT_LAUNCH_BITS) return (int)((d->launch_bits[driver ? 1 : 0][cbid / 64] >> (cbid % 64)) & 1u);
    const dt_vendor_api_ids *ids = &d->v->api_ids;
    const uint32_t *set = driver ? ids->launch_driver : ids->launch_runtime;
    uint32_t n = driver ? ids->launch_driver_count : ids->launch_runtime_count;
    for (uint32_t i = 0; i < n; i++)
        if (set[i] == cbid) return 1;
    return 0;
}

const char *dt__decoder_api_name(const dt_decoder *d, int driver, uint32_t cbid)
{
    const dt_vendor *v = d->v;
    const char *const *vendor = d->vendor_names[driver ? 1 : 0];
    if (vendor && cbid < v->names.limit && vendor[cbid]) return vendor[cbid];
    const char *const *table = driver ? v->names.driver : v->names.runtime;
    uint32_t count = driver ? v->names.driver_count : v->names.runtime_count;
    return table && cbid < count ? table[cbid] : NULL;
}

/* Interned name of an API call, cached for the buffer: the lookup inline
   in the decoder, the name's lookup and interning here. */
__attribute__((noinline)) static uint32_t api_name_miss(decode_ctx *cx, int driver, uint32_t cbid, uint64_t key)
{
    const dt_vendor *v = cx->d->v;
    return dt__api_names_add(&cx->api, cx->s, key, dt__decoder_api_name(cx->d, driver, cbid),
                            driver ? v->names.driver_fallback : v->names.runtime_fallback, cbid);
}

__attribute__((always_inline)) static inline uint32_t api_name(decode_ctx *cx, int driver, uint32_t cbid)
{
    uint64_t key = (uint64_t)cbid * 2u + (uint64_t)driver + 1u;
    uint32_t id;
    if (dt__api_names_find(&cx->api, key, &id)) return id;
    return api_name_miss(cx, driver, cbid, key);
}

/* ------------------------------------------------------------------ */
/* Decoders, one per record class                                      */
/* ------------------------------------------------------------------ */
__attribute__((always_inline)) static inline void decode_kernel(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
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
    cfg.static_shared_memory = nonnegative(F(DT_F_STATIC_SHARED));
    cfg.dynamic_shared_memory = nonnegative(F(DT_F_DYNAMIC_SHARED));
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

__attribute__((always_inline)) static inline void decode_memcpy(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_MEMCPY)) return;
    const dt_vendor *v = cx->d->v;
    uint64_t kind = F(DT_F_COPY_KIND);
    uint32_t device = (uint32_t)F(DT_F_DEVICE);
    dt_copy copy = {
        .start = F(DT_F_START), .end = F(DT_F_END), .correlation = F(DT_F_CORRELATION), .bytes = F(DT_F_BYTES),
        .device = device, .stream = (uint32_t)F(DT_F_STREAM), .context = (uint32_t)F(DT_F_CONTEXT),
        .src_device = device, .dst_device = device,
        .copy_kind = map_value(v->enums.copy_kinds, v->enums.copy_kind_count, kind),
        .src_kind = map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_SRC_KIND)),
        .dst_kind = map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_DST_KIND)),
        .async = (F(DT_F_FLAGS) & v->enums.copy_async_flag) != 0,
    };
    if (kind == v->enums.peer_copy_kind && HAS(DT_F_SRC_DEVICE) && HAS(DT_F_DST_DEVICE)) {
        copy.src_device = (uint32_t)F(DT_F_SRC_DEVICE);
        copy.dst_device = (uint32_t)F(DT_F_DST_DEVICE);
    }
    dt__add_copy(cx->s, &cx->cache, &copy);
}

__attribute__((always_inline)) static inline void decode_memset(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_MEMSET)) return;
    const dt_vendor *v = cx->d->v;
    dt_fill fill = {
        .start = F(DT_F_START), .end = F(DT_F_END), .correlation = F(DT_F_CORRELATION), .bytes = F(DT_F_BYTES),
        .device = (uint32_t)F(DT_F_DEVICE), .stream = (uint32_t)F(DT_F_STREAM),
        .context = (uint32_t)F(DT_F_CONTEXT), .value = (uint32_t)F(DT_F_VALUE),
        .memory_kind = map_value(v->enums.memory_kinds, v->enums.memory_kind_count, F(DT_F_MEMORY_KIND)),
        .async = (F(DT_F_FLAGS) & v->enums.fill_async_flag) != 0,
    };
    dt__add_fill(cx->s, &cx->cache, &fill);
}

__attribute__((always_inline)) static inline void decode_api(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int driver, int wide)
{
    if (!(cx->capture & (driver ? DT_CAPTURE_DRIVER : DT_CAPTURE_RUNTIME))) return;
    uint32_t cbid = (uint32_t)F(DT_F_CBID);
    dt_rec *r = dt__add_api_call(cx->s, driver ? DT_EVENT_DRIVER : DT_EVENT_RUNTIME, F(DT_F_START), F(DT_F_END),
                                F(DT_F_CORRELATION), (uint32_t)F(DT_F_PROCESS), (uint32_t)F(DT_F_THREAD),
                                api_name(cx, driver, cbid), cbid, (int32_t)(uint32_t)F(DT_F_RETURN_VALUE));
    if (r && dt__decoder_is_launch(cx->d, driver, cbid)) r->flags |= DT_REC_LAUNCH;
}

__attribute__((always_inline)) static inline void decode_external(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
{
    /* Other kinds belong to other clients in the process (Kineto pushes its
       own): not devtrace's to attribute. */
    if (F(DT_F_EXTERNAL_KIND) == cx->d->v->activity.external_kind)
        dt__corr_link(cx->s, F(DT_F_CORRELATION), F(DT_F_EXTERNAL_ID));
}

__attribute__((always_inline)) static inline void decode_sync(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_SYNC)) return;
    const dt_vendor *v = cx->d->v;
    const char *name = value_name(v->enums.sync_names, v->enums.sync_name_count, F(DT_F_SYNC_TYPE));
    uint32_t stream = (uint32_t)F(DT_F_STREAM);
    /* a context-wide synchronisation names no stream */
    if (stream == v->enums.sync_no_stream) stream = 0;
    dt__add_device_activity(cx->s, DT_EVENT_SYNC, F(DT_F_START), F(DT_F_END), F(DT_F_CORRELATION), 0, stream,
                           (uint32_t)F(DT_F_CONTEXT), dt__sink_intern(cx->s, name ? name : "Synchronization"));
}

__attribute__((always_inline)) static inline void decode_overhead(decode_ctx *cx, const dt_plan *L, const uint8_t *p, int wide)
{
    if (!(cx->capture & DT_CAPTURE_OVERHEAD)) return;
    const dt_vendor *v = cx->d->v;
    const char *name = value_name(v->enums.overhead_names, v->enums.overhead_name_count, F(DT_F_OVERHEAD_KIND));
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

static void device_props(const dt_plan *L, const uint8_t *p, dt_device_props *out)
{
    const int wide = 0;
    memset(out, 0, sizeof *out);
    out->valid = 1;
    out->id = (uint32_t)F(DT_F_DEV_ID);
    const char *name = (const char *)(uintptr_t)F(DT_F_DEV_NAME);
    if (name) {
        size_t n = strnlen(name, sizeof out->name - 1);
        memcpy(out->name, name, n);
        out->name[n] = '\0';
    }
    int warp = (int)F(DT_F_DEV_THREADS_PER_WARP);
    out->total_global_mem = F(DT_F_DEV_GLOBAL_MEMORY);
    out->compute_major = (int)F(DT_F_DEV_CC_MAJOR);
    out->compute_minor = (int)F(DT_F_DEV_CC_MINOR);
    out->max_threads_per_block = (int)F(DT_F_DEV_THREADS_PER_BLOCK);
    out->max_threads_per_sm = (int)F(DT_F_DEV_WARPS_PER_SM) * warp;
    out->max_blocks_per_sm = (int)F(DT_F_DEV_BLOCKS_PER_SM);
    out->regs_per_block = (int)F(DT_F_DEV_REGS_PER_BLOCK);
    out->regs_per_sm = (int)F(DT_F_DEV_REGS_PER_SM);
    out->warp_size = warp;
    out->shared_mem_per_block = F(DT_F_DEV_SHMEM_PER_BLOCK);
    /* the per-block maximum these records give is the opt-in limit */
    out->shared_mem_per_block_optin = out->shared_mem_per_block;
    out->shared_mem_per_sm = F(DT_F_DEV_SHMEM_PER_SM);
    out->num_sms = (int)F(DT_F_DEV_SMS);
}

/* Devices are described once, maybe before any session: the descriptions
   are kept for every later session. */
static void remember_device(const dt_decoder *d, const dt_device_props *props)
{
    if (!d->device_cache || props->id >= DT_MAX_DEVICES) return;
    pthread_mutex_lock(d->device_lock);
    d->device_cache[props->id] = *props;
    pthread_mutex_unlock(d->device_lock);
}

static void decode_device(decode_ctx *cx, const dt_plan *L, const uint8_t *p)
{
    dt_device_props props;
    device_props(L, p, &props);
    remember_device(cx->d, &props);
    dt__core_set_device(cx->s, &props);
}

#undef F
#undef HAS

__attribute__((always_inline)) static inline void decode_class(decode_ctx *cx, const dt_plan *L,
                                                              const uint8_t *p, int wide)
{
    switch (L->cls) {
    case DT_RC_KERNEL: decode_kernel(cx, L, p, wide); return;
    case DT_RC_MEMCPY: decode_memcpy(cx, L, p, wide); return;
    case DT_RC_MEMSET: decode_memset(cx, L, p, wide); return;
    case DT_RC_RUNTIME: decode_api(cx, L, p, 0, wide); return;
    case DT_RC_DRIVER: decode_api(cx, L, p, 1, wide); return;
    case DT_RC_EXTERNAL: decode_external(cx, L, p, wide); return;
    case DT_RC_SYNC: decode_sync(cx, L, p, wide); return;
    case DT_RC_OVERHEAD: decode_overhead(cx, L, p, wide); return;
    case DT_RC_DEVICE: decode_device(cx, L, p); return;
    default: return;
    }
}

/* P: the record's prepared layout (NULL: none); avail: bytes from p to the
   end of the valid part of the buffer. */
static void decode_one(decode_ctx *cx, const dt_plan *P, uint32_t kind, const uint8_t *p, size_t avail)
{
    dt_session *s = cx->s;
    if (P && P->decode) {
        if (avail < P->need) dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        else P->decode(cx->d, s, &cx->cache, p);
        return;
    }
    if (!P || P->cls == DT_RC_OTHER) {
        /* A kind another client in the process enabled, or a newer
           library's: counted, and named once in the trace. */
        dt__loss_add(s, DT_LOSS_UNKNOWN_KIND, 1);
        dt__core_note(s, "unknown_kind", "the %s library delivered %s records (kind %u) that devtrace does not decode",
                        cx->d->v->backend->name, P && P->layout->what ? P->layout->what : "other", (unsigned)kind);
        return;
    }
    if (avail < P->need) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    /* Specialised twice, so that the common case reads each field with one
       load: every record but one that ends the buffer, decoded by the walk
       (P->wide_from); here the one that ends it. */
    decode_class(cx, P, p, 0);
}

/* ------------------------------------------------------------------ */
/* The walk                                                            */
/* ------------------------------------------------------------------ */
/* Bytes ahead of the record being decoded that are fetched: a few records. */
#define DECODE_PREFETCH 512
void dt__decoder_run(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid, dt_vendor_next_fn next)
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
    decode_ctx cx;
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
                        find_plan(d, kind_at(buffer + at))) {
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
            P = find_plan(d, kind_at(p));
        } else {
            /* The iterator's contract over the layouts' sizes, inline. */
            size_t off = prev ? (size_t)(prev - buffer) + prev_size : 0;
            if (off >= valid) break;
            /* bytes left that cannot hold a record: one cut short */
            if (valid - off < sizeof(uint32_t)) { dt__loss_add(s, DT_LOSS_MALFORMED, 1); break; }
            p = buffer + off;
            /* the records ahead, from memory the vendor wrote long ago */
            __builtin_prefetch(p + DECODE_PREFETCH);
            P = find_plan(d, kind_at(p));
            if (!P) { dt__loss_add(s, DT_LOSS_UNKNOWN_KIND, 1); break; }
            if (P->size > valid - off) { dt__loss_add(s, DT_LOSS_MALFORMED, 1); break; }
        }
        /* the common case (decode_one's last) without its tests */
        if (__builtin_expect(P && (size_t)(end - p) >= P->wide_from, 1)) decode_class(&cx, P, p, 1);
        else decode_one(&cx, P, kind_at(p), p, (size_t)(end - p));
        prev = p;
        prev_size = P ? P->size : SIZE_MAX; /* a plan's size is never 0 */
        min_at = (size_t)(p - buffer) + 1;
    }
    dt__core_unlock(s);
}

void dt__decoder_scan_devices(const dt_decoder *d, uint8_t *buffer, size_t valid, dt_vendor_next_fn next)
{
    const uint8_t *end = buffer + valid, *prev = NULL;
    void *rec = NULL;
    for (;;) {
        int r = next ? next(buffer, valid, &rec) : dt__decoder_next(d, buffer, valid, &rec);
        if (r != d->v->results.success || !rec) break;
        const uint8_t *p = rec;
        if (p < buffer || p >= end || (prev && p <= prev) || (size_t)(end - p) < sizeof(uint32_t)) break;
        const dt_plan *P = find_plan(d, kind_at(p));
        if (P && P->cls == DT_RC_DEVICE && (size_t)(end - p) >= P->need) {
            dt_device_props props;
            device_props(P, p, &props);
            remember_device(d, &props);
        }
        prev = p;
    }
}
