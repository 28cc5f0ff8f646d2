/*
 * Decoding roctracer's activity buffers: records of one fixed size, by
 * domain (HIP_OPS device work, HIP_API calls, EXT_API external ids), kernel
 * names copied into the buffer, and the arguments the API callbacks took.
 */
#include "backends/common/api_names.h"
#include "backends/roctracer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Call arguments by correlation id                                    */
/* ------------------------------------------------------------------ */
/* Correlation ids count up, and a launch's arguments wait only until its
   kernel's record arrives: one slot per id modulo the table's size, no
   probing. Two ids in one slot are further apart than the table is long:
   it doubles, up to DT_RT_ARGS_MAX slots; past that the older entry goes
   (its record is lost or later than any roctracer delivers). */
static int args_grow(dt_rt_args_table *t)
{
    size_t cap = t->slots ? (t->mask + 1) * 2 : 1024;
    dt_rt_args *slots = dt__calloc(cap, sizeof *slots);
    if (!slots) return -1;
    size_t mask = cap - 1;
    for (size_t i = 0; t->slots && i <= t->mask; i++)
        if (t->slots[i].correlation) slots[t->slots[i].correlation & mask] = t->slots[i]; /* apart: mod the old size */
    dt__free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

int dt__rt_args_put(dt_rt_args_table *t, const dt_rt_args *a)
{
    if (a->correlation == 0) return 0;
    if (!t->slots && args_grow(t) != 0) return -1;
    for (;;) {
        dt_rt_args *e = &t->slots[a->correlation & t->mask];
        if (!e->correlation || e->correlation == a->correlation) {
            t->count += e->correlation == 0;
            *e = *a;
            return 0;
        }
        if (t->mask + 1 >= DT_RT_ARGS_MAX) {
            t->evicted++;
            if (e->correlation < a->correlation) *e = *a;
            return 0;
        }
        if (args_grow(t) != 0) return -1;
    }
}

static inline int args_take(dt_rt_args_table *t, uint64_t correlation, dt_rt_args *out)
{
    if (!t->slots || correlation == 0) return 0;
    dt_rt_args *e = &t->slots[correlation & t->mask];
    if (e->correlation != correlation) return 0;
    *out = *e;
    e->correlation = 0;
    t->count--;
    return 1;
}

int dt__rt_args_take(dt_rt_args_table *t, uint64_t correlation, dt_rt_args *out)
{
    return args_take(t, correlation, out);
}

void dt__rt_args_clear(dt_rt_args_table *t)
{
    /* a taken entry is emptied as it is taken: only those left are */
    if (t->count && t->slots) memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
    t->count = 0;
    t->evicted = 0;
}

void dt__rt_args_free(dt_rt_args_table *t)
{
    dt__free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ */
/* Command kinds                                                       */
/* ------------------------------------------------------------------ */
/* The operation says what a record is (a dispatch, a copy, a barrier);
   for copies, ROCclr's command kind says the direction or that it is a
   fill. A kind this table does not know, under a copy, is a copy of unknown
   direction. */
static inline dt_rt_command command_of(uint32_t op, uint32_t kind, uint8_t *copy_kind)
{
    *copy_kind = DT_COPY_UNKNOWN;
    switch (op) {
    case DT_RT_HIP_OP_DISPATCH: return DT_RT_COMMAND_KERNEL;
    case DT_RT_HIP_OP_BARRIER: return DT_RT_COMMAND_BARRIER;
    case DT_RT_HIP_OP_COPY: break;
    default: return DT_RT_COMMAND_OTHER;
    }
    switch (kind) {
    case DT_RT_CMD_FILL: return DT_RT_COMMAND_FILL;
    case DT_RT_CMD_READ:
    case DT_RT_CMD_READ_RECT: *copy_kind = DT_COPY_DTOH; break;
    case DT_RT_CMD_WRITE:
    case DT_RT_CMD_WRITE_RECT: *copy_kind = DT_COPY_HTOD; break;
    case DT_RT_CMD_COPY:
    case DT_RT_CMD_COPY_RECT: *copy_kind = DT_COPY_DTOD; break;
    default: break;
    }
    return DT_RT_COMMAND_COPY;
}

dt_rt_command dt__rt_command_of(uint32_t op, uint32_t kind, uint8_t *copy_kind)
{
    return command_of(op, kind, copy_kind);
}

/* ------------------------------------------------------------------ */
/* Per-buffer state                                                    */
/* ------------------------------------------------------------------ */
typedef struct decode_ctx {
    const dt_rt_decoder *d;
    dt_session *s;
    uint32_t capture;
    /* where the kernel names of this buffer may lie: [names_lo, names_hi)
       inside the pool; pool_lo..pool_hi the whole pool (empty: unknown) */
    const uint8_t *names_lo, *names_hi, *pool_lo, *pool_hi;
    /* names at [names_lo, names_hi) in the pool are read at names_copy +
       (pointer - names_lo): where they lie, or in the flight recorder's
       copy */
    const uint8_t *names_copy;
    /* an EXT_API record without a correlation id tags the next record */
    int pending;
    uint64_t pending_external;
    dt_decode_cache cache;
    dt_api_names api; /* key: op + 1 */
} decode_ctx;

static void note_other(decode_ctx *cx, uint32_t domain, uint32_t op, uint32_t kind)
{
    dt__loss_add(cx->s, DT_LOSS_UNKNOWN_KIND, 1);
    dt__core_note(cx->s, "unknown_kind",
                    "the roctracer library delivered records devtrace does not decode (domain %u, op %u, kind 0x%x)",
                    (unsigned)domain, (unsigned)op, (unsigned)kind);
}

/* Interned name of a HIP API call, cached for the buffer. */
static uint32_t api_name(decode_ctx *cx, uint32_t op)
{
    uint64_t key = (uint64_t)op + 1u;
    uint32_t id;
    if (dt__api_names_find(&cx->api, key, &id)) return id;
    const dt_rt_decoder *d = cx->d;
    const char *name = d->api_names && op < d->api_name_count ? d->api_names[op] : NULL;
    return dt__api_names_add(&cx->api, cx->s, key, name && name[0] ? name : NULL, "HIP_API", op);
}

/* The interned kernel name of a dispatch; *bad when the record's pointer
   cannot be a name roctracer stored (counted as malformed by the caller). */
static uint32_t kernel_name(decode_ctx *cx, const char *raw, int *bad)
{
    const uint8_t *p = (const uint8_t *)raw;
    if (!raw || cx->pool_lo == cx->pool_hi || p < cx->pool_lo || p >= cx->pool_hi)
        return dt__decode_kernel_name(cx->s, &cx->cache, raw); /* no name, or the vendor's own string */
    if (p < cx->names_lo || p >= cx->names_hi) {
        *bad = 1;
        return UINT32_MAX;
    }
    size_t room = (size_t)(cx->names_hi - p);
    raw = (const char *)cx->names_copy + (p - cx->names_lo);
    size_t len = strnlen(raw, room);
    if (len == room) {
        *bad = 1; /* no terminating NUL in the buffer */
        return UINT32_MAX;
    }
    return dt__decode_kernel_name_copied(cx->s, &cx->cache, raw, len);
}

/* The arguments the API callback took for a record's call: 1 with *a; 0
   with none; -1 when they were taken but could not be kept (the record is
   then dropped, as on every vendor a kernel whose configuration could not
   be kept is). */
static inline int call_args(decode_ctx *cx, uint64_t correlation, uint8_t what, dt_rt_args *a)
{
    const dt_rt_decoder *d = cx->d;
    if (d->args && args_take(d->args, correlation, a)) return a->what == what;
    if (d->args_unkept && d->args_unkept[what]) {
        d->args_unkept[what]--;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
static void decode_kernel(decode_ctx *cx, const activity_record_t *r)
{
    dt_session *s = cx->s;
    dt_rt_args a;
    int have = call_args(cx, r->correlation_id, DT_RT_ARGS_LAUNCH, &a);
    if (have < 0) {
        dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
        return;
    }
    uint32_t config = UINT32_MAX - 1; /* no configuration: the interface gave none */
    if (have) {
        dt_launch_config cfg;
        memset(&cfg, 0, sizeof cfg); /* hashed and compared bytewise when interned */
        for (int i = 0; i < 3; i++) {
            cfg.grid[i] = (int32_t)a.grid[i];
            cfg.block[i] = (int32_t)a.block[i];
        }
        cfg.dynamic_shared_memory = a.dynamic_shared;
        config = dt__decode_launch_config(s, &cx->cache, &cfg);
    }
    int bad = 0;
    uint32_t name = kernel_name(cx, r->kernel_name, &bad);
    if (bad) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    dt_rec *rec = dt__add_device_activity(s, DT_EVENT_KERNEL, r->begin_ns, r->end_ns, r->correlation_id,
                                         (uint32_t)r->device_id, (uint32_t)r->queue_id, (uint32_t)r->device_id,
                                         config == UINT32_MAX ? UINT32_MAX : name);
    if (!rec) return;
    rec->u.kernel.config = config; /* past the table when none: the exporter writes none */
    rec->u.kernel.queued_delta = DT_DELTA_UNKNOWN;
    rec->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
}

static void decode_copy(decode_ctx *cx, const activity_record_t *r, uint8_t copy_kind)
{
    uint32_t device = (uint32_t)r->device_id;
    /* roctracer does not say whether host memory was pageable or pinned */
    uint8_t src = DT_MEM_UNKNOWN, dst = DT_MEM_UNKNOWN;
    if (copy_kind == DT_COPY_HTOD) dst = DT_MEM_DEVICE;
    else if (copy_kind == DT_COPY_DTOH) src = DT_MEM_DEVICE;
    else if (copy_kind == DT_COPY_DTOD) src = dst = DT_MEM_DEVICE;
    dt_copy c = {
        .start = r->begin_ns, .end = r->end_ns, .correlation = r->correlation_id, .bytes = r->bytes,
        .device = device, .stream = (uint32_t)r->queue_id, .context = device, .src_device = device,
        .dst_device = device, .copy_kind = copy_kind, .src_kind = src, .dst_kind = dst,
    };
    dt__add_copy(cx->s, &cx->cache, &c);
}

static void decode_fill(decode_ctx *cx, const activity_record_t *r)
{
    dt_rt_args a;
    int have = call_args(cx, r->correlation_id, DT_RT_ARGS_FILL, &a);
    if (have < 0) {
        dt__loss_add(cx->s, DT_LOSS_STORE_FULL, 1);
        return;
    }
    uint32_t device = (uint32_t)r->device_id;
    dt_fill f = {
        .start = r->begin_ns, .end = r->end_ns, .correlation = r->correlation_id, .bytes = r->bytes,
        .device = device, .stream = (uint32_t)r->queue_id, .context = device, .value = have ? a.value : 0,
        .memory_kind = DT_MEM_DEVICE,
    };
    dt__add_fill(cx->s, &cx->cache, &f);
}

static void decode_barrier(decode_ctx *cx, const activity_record_t *r)
{
    dt_session *s = cx->s;
    const char *name = r->kind == DT_RT_CMD_MARKER ? "Marker" : "Barrier";
    dt__add_device_activity(s, DT_EVENT_SYNC, r->begin_ns, r->end_ns, r->correlation_id, (uint32_t)r->device_id,
                           (uint32_t)r->queue_id, (uint32_t)r->device_id, dt__sink_intern(s, name));
}

static void decode_ops(decode_ctx *cx, const activity_record_t *r)
{
    uint8_t copy_kind;
    switch (command_of(r->op, r->kind, &copy_kind)) {
    case DT_RT_COMMAND_KERNEL:
        if (cx->capture & DT_CAPTURE_KERNEL) decode_kernel(cx, r);
        return;
    case DT_RT_COMMAND_COPY:
        if (cx->capture & DT_CAPTURE_MEMCPY) decode_copy(cx, r, copy_kind);
        return;
    case DT_RT_COMMAND_FILL:
        if (cx->capture & DT_CAPTURE_MEMSET) decode_fill(cx, r);
        return;
    case DT_RT_COMMAND_BARRIER:
        if (cx->capture & DT_CAPTURE_SYNC) decode_barrier(cx, r);
        return;
    default:
        note_other(cx, r->domain, r->op, r->kind);
        return;
    }
}

static void decode_api(decode_ctx *cx, const activity_record_t *r)
{
    if (!(cx->capture & DT_CAPTURE_RUNTIME)) return;
    dt__add_api_call(cx->s, DT_EVENT_RUNTIME, r->begin_ns, r->end_ns, r->correlation_id, r->process_id,
                    r->thread_id, api_name(cx, r->op), r->op, 0);
}

static void decode_record(decode_ctx *cx, const uint8_t *p)
{
    activity_record_t r;
    memcpy(&r, p, sizeof r);
    if (cx->pending && (r.domain == ACTIVITY_DOMAIN_HIP_API || r.domain == ACTIVITY_DOMAIN_HIP_OPS) &&
        r.correlation_id) {
        dt__corr_link(cx->s, r.correlation_id, cx->pending_external);
        cx->pending = 0;
    }
    switch (r.domain) {
    case ACTIVITY_DOMAIN_HIP_OPS: decode_ops(cx, &r); return;
    case ACTIVITY_DOMAIN_HIP_API: decode_api(cx, &r); return;
    case ACTIVITY_DOMAIN_EXT_API:
        if (r.op != ACTIVITY_EXT_OP_EXTERN_ID) break;
        /* The record precedes the one it tags; releases that leave its
           correlation id 0 tag by position alone (inferred). */
        if (r.correlation_id) {
            dt__corr_link(cx->s, r.correlation_id, r.external_id);
        } else {
            cx->pending = 1;
            cx->pending_external = r.external_id;
        }
        return;
    default: break;
    }
    note_other(cx, r.domain, r.op, r.kind);
}

const uint8_t *dt__rt_half_end(const dt_rt_decoder *d, const uint8_t *at)
{
    if (!d->pool || !d->half || at < d->pool || at >= d->pool + 2 * d->half) return NULL;
    size_t half = (size_t)(at - d->pool) / d->half;
    return d->pool + (half + 1) * d->half;
}

/* The names a copy holds: [at, at + bytes) of the pool, read at copy. */
typedef struct rt_names {
    const uint8_t *at, *copy;
    size_t bytes;
} rt_names;

/* Decode the records [begin, end) that roctracer delivered at `at` (begin
   itself, or where a copy's records were delivered: then their names are
   read in `copied`, and cut says whether the buffer ran past its half). */
static void decode_buffer(const dt_rt_decoder *d, dt_session *s, const uint8_t *begin, const uint8_t *end,
                          const uint8_t *at, const rt_names *copied, int cut)
{
    if (!s || !begin || !end || end == begin) return;
    if (end < begin) { /* a buffer that ends before it begins: nothing of it can be read */
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    decode_ctx cx;
    cx.d = d;
    cx.s = s;
    cx.capture = dt__sink_capture(s);
    cx.pending = 0;
    cx.pending_external = 0;
    cx.names_lo = cx.names_hi = cx.pool_lo = cx.pool_hi = cx.names_copy = NULL;
    size_t bytes = (size_t)(end - begin);
    if (d->pool && d->half) {
        /* names are checked against the pool where roctracer delivered
           the buffer */
        cx.pool_lo = d->pool;
        cx.pool_hi = d->pool + 2 * d->half;
        const uint8_t *half_end = dt__rt_half_end(d, at);
        if (half_end) {
            /* records past the buffer's half cannot be roctracer's */
            if (bytes > (size_t)(half_end - at)) {
                bytes = (size_t)(half_end - at);
                cut = 1;
            }
            cx.names_lo = at + bytes;
            cx.names_hi = half_end;
            cx.names_copy = cx.names_lo;
            if (copied) {
                /* only what the copy holds can be read: a pointer into
                   the rest of the half is no name a record had */
                uintptr_t lo = (uintptr_t)copied->at, hi = lo + copied->bytes;
                uintptr_t from = (uintptr_t)cx.names_lo, to = (uintptr_t)cx.names_hi;
                if (hi < lo) hi = lo; /* a header that wraps: no names */
                if (lo > from) from = lo;
                if (hi < to) to = hi;
                if (to < from) to = from;
                size_t skip = from - lo < copied->bytes ? (size_t)(from - lo) : copied->bytes;
                cx.names_copy = copied->copy + skip;
                cx.names_hi = cx.names_lo + (to - (uintptr_t)cx.names_lo);
                cx.names_lo += from - (uintptr_t)cx.names_lo;
            }
        }
    }
    dt__decode_cache_init(&cx.cache);
    dt__api_names_init(&cx.api);
    dt__core_lock(s);
    size_t n = bytes / DT_RT_RECORD_SIZE;
    for (size_t i = 0; i < n; i++) {
        /* records ahead, from memory roctracer wrote long ago (past the
           end, the hint is harmless: a prefetch never faults) */
        __builtin_prefetch(begin + (i + 8) * DT_RT_RECORD_SIZE);
        decode_record(&cx, begin + i * DT_RT_RECORD_SIZE);
    }
    /* bytes left that cannot hold a record: one cut short */
    if (bytes % DT_RT_RECORD_SIZE || cut) dt__loss_add(s, DT_LOSS_MALFORMED, 1);
    if (cx.pending)
        dt__core_note(s, "external_ids", "an EXT_API record without a correlation id ended a buffer: "
                        "the record it tagged is in another buffer, and its External id is lost");
    dt__core_unlock(s);
}

void dt__rt_decode(const dt_rt_decoder *d, dt_session *s, const uint8_t *begin, const uint8_t *end)
{
    decode_buffer(d, s, begin, end, begin, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Copies (the flight recorder's)                                      */
/* ------------------------------------------------------------------ */
/* A copy: this header, the records as delivered, then their names. */
typedef struct rt_copy {
    const uint8_t *at;    /* where roctracer delivered the records */
    size_t bytes;         /* the records' bytes */
    const uint8_t *names; /* where the names copied after them lay in the pool */
    size_t names_bytes;
    uint64_t cut;         /* the buffer ran past its half (only what is in it is copied) */
} rt_copy;
_Static_assert(sizeof(rt_copy) <= DT_RT_COPY_HEADER, "the copy's header fits");

/* Records copied, then searched in the copy for their lowest name, at a
   time: the delivered records are read once. */
#define COPY_BLOCK (64u * DT_RT_RECORD_SIZE)

size_t dt__rt_copy(uint8_t *buf, size_t room, const dt_rt_decoder *d, const uint8_t *begin, const uint8_t *end)
{
    const uint8_t *half_end = dt__rt_half_end(d, begin);
    if (!half_end || !end || end < begin) return 0;
    /* as the decoder reads them: records past the half are none */
    const uint8_t *records_end = end < half_end ? end : half_end;
    size_t bytes = (size_t)(records_end - begin);
    if (room < DT_RT_COPY_HEADER || room - DT_RT_COPY_HEADER < bytes) return 0;
    uint8_t *out = buf + DT_RT_COPY_HEADER;
    /* the lowest name a dispatch points to between the records and the
       half's end (a pointer anywhere else is no name the decoder reads) */
    const uint8_t *lo = half_end;
    for (size_t done = 0; done < bytes; done += COPY_BLOCK) {
        size_t n = bytes - done < COPY_BLOCK ? bytes - done : COPY_BLOCK;
        memcpy(out + done, begin + done, n);
        for (size_t r = done; r + DT_RT_RECORD_SIZE <= done + n; r += DT_RT_RECORD_SIZE) {
            uint32_t domain, op;
            const uint8_t *name;
            memcpy(&domain, out + r + offsetof(activity_record_t, domain), sizeof domain);
            memcpy(&op, out + r + offsetof(activity_record_t, op), sizeof op);
            memcpy(&name, out + r + offsetof(activity_record_t, kernel_name), sizeof name);
            if (domain == ACTIVITY_DOMAIN_HIP_OPS && op == DT_RT_HIP_OP_DISPATCH && name >= records_end && name < lo)
                lo = name;
        }
    }
    size_t names = (size_t)(half_end - lo);
    if (room - DT_RT_COPY_HEADER - bytes < names) return 0;
    memcpy(out + bytes, lo, names);
    rt_copy h = {begin, bytes, lo, names, end > records_end};
    memset(buf, 0, DT_RT_COPY_HEADER);
    memcpy(buf, &h, sizeof h);
    return DT_RT_COPY_HEADER + bytes + names;
}

void dt__rt_decode_copy(const dt_rt_decoder *d, dt_session *s, const uint8_t *buf, size_t valid)
{
    rt_copy h;
    if (valid < DT_RT_COPY_HEADER) return;
    memcpy(&h, buf, sizeof h);
    /* never past the copy */
    size_t room = valid - DT_RT_COPY_HEADER;
    if (h.bytes > room) h.bytes = room;
    if (h.names_bytes > room - h.bytes) h.names_bytes = room - h.bytes;
    const uint8_t *records = buf + DT_RT_COPY_HEADER;
    rt_names names = {h.names, records + h.bytes, h.names_bytes};
    decode_buffer(d, s, records, records + h.bytes, h.at, &names, h.cut != 0);
}
