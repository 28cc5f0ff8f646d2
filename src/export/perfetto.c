/*
 * A stopped session as a Perfetto trace (.pftrace): the same rows, events,
 * names, flows and args as the Chrome JSON (both come from layout.h), as
 * TrackEvent slices on one track per row (host thread, device stream,
 * annotation row, each overflow row), named by process and thread
 * descriptors with the JSON's pids and tids. .pftrace.gz is the same,
 * gzip'd.
 *
 * Each row is a packet sequence of its own (pf_trace.h). A long row is
 * written in parts, each beginning its sequence again (incremental state
 * cleared, strings interned afresh): the parts of all rows are the units
 * that the lanes encode at once (dt__out_units), written in order. A row
 * is cut only where no slice is open and the next one starts after every
 * earlier one ended, so the slices of a track nest whatever order a reader
 * merges its parts in.
 *
 * Per part, every argument name and category is interned up front in a
 * fixed order, so that an event's args are written with constant name ids
 * straight from the record, and what repeats (a stream's device args, an
 * operation's External id, a launch configuration's args) is encoded once
 * and copied.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/os.h"
#include "format/pf_trace.h"
#include "export/layout/layout.h"
#include "export/writers.h"

enum {
    ARG_EXTERNAL, ARG_QUEUED, ARG_DEVICE, ARG_CONTEXT, ARG_STREAM, ARG_CORRELATION, ARG_REGISTERS,
    ARG_SHARED, ARG_BLOCKS_SM, ARG_WARPS_SM, ARG_OCCUPANCY, ARG_GRID, ARG_BLOCK, ARG_BYTES, ARG_BANDWIDTH,
    ARG_COPY_KIND, ARG_VALUE, ARG_CBID, ARG_RETURN, ARG_PARENT, ARG_COLLECTIVE, ARG_NELEMS, ARG_DTYPE,
    ARG_GROUP, ARG_ALGORITHM, ARG_VENDOR_BANDWIDTH, ARG_TOTAL_ALLOCATED, ARG_MEM_BYTES, ARG_DEVICE_ID,
    ARG_DEVICE_TYPE, ARG_ADDR, ARG_MEMORY_KIND, ARG_COUNT
};

/* The JSON's arg names (docs/trace-format.md). */
static const char *const arg_names[ARG_COUNT] = {
    [ARG_EXTERNAL] = "External id", [ARG_QUEUED] = "queued", [ARG_DEVICE] = "device",
    [ARG_CONTEXT] = "context", [ARG_STREAM] = "stream", [ARG_CORRELATION] = "correlation",
    [ARG_REGISTERS] = "registers per thread", [ARG_SHARED] = "shared memory",
    [ARG_BLOCKS_SM] = "blocks per SM", [ARG_WARPS_SM] = "warps per SM",
    [ARG_OCCUPANCY] = "est. achieved occupancy %", [ARG_GRID] = "grid", [ARG_BLOCK] = "block",
    [ARG_BYTES] = "bytes", [ARG_BANDWIDTH] = "memory bandwidth (GB/s)", [ARG_COPY_KIND] = "copy kind",
    [ARG_VALUE] = "value", [ARG_CBID] = "cbid", [ARG_RETURN] = "return code", [ARG_PARENT] = "parent",
    [ARG_COLLECTIVE] = "Collective name", [ARG_NELEMS] = "In msg nelems", [ARG_DTYPE] = "dtype",
    [ARG_GROUP] = "Process Group Name", [ARG_ALGORITHM] = "algorithm", [ARG_VENDOR_BANDWIDTH] = "bandwidth (GB/s)",
    [ARG_TOTAL_ALLOCATED] = "Total Allocated", [ARG_MEM_BYTES] = "Bytes", [ARG_DEVICE_ID] = "Device Id",
    [ARG_DEVICE_TYPE] = "Device Type", [ARG_ADDR] = "Addr", [ARG_MEMORY_KIND] = "memory kind",
};

/* Interned first on every sequence, in this order: an arg's name id is
   its enum value + 1, a category's its enum value. */
#define ARG_IID(a) ((unsigned)(a) + 1)

enum { CAT_KERNEL = 1, CAT_MEMCPY, CAT_MEMSET, CAT_RUNTIME, CAT_DRIVER, CAT_SYNC, CAT_OVERHEAD, CAT_RANGE,
       CAT_OP, CAT_SPAN, CAT_TRACE, CAT_MEMORY, CAT_COUNT };

_Static_assert(ARG_COUNT < 128 && CAT_COUNT < 128, "name ids of one byte");

/* Room for an event's TrackEvent besides its variable-length fragments. */
#define EVENT_ROOM 256
#define COPY_PAD 16

/* An interning id kept for the sequence it belongs to. */
typedef struct pf_cached {
    uint32_t gen;
    uint32_t iid;
} pf_cached;

/* Encoded args that repeat, COPY_PAD readable bytes after them. */
typedef struct pf_bytes {
    uint32_t len;
    uint8_t bytes[160 + COPY_PAD];
} pf_bytes;

/* Copy names by (kind, source, destination) and memset names by memory
   kind after them. */
#define COPY_NAME_KEYS (16 * 16 * 16 + 16)

/* One encoding thread's state. */
typedef struct pf_lane {
    pf_trace *t;
    uint32_t gen;             /* counts this lane's sequences: the caches' generation */
    pf_cached *name_iids;     /* by interned name id */
    size_t name_cap;
    pf_cached copy_iids[COPY_NAME_KEYS];
    pf_cached copy_kind_iids[16]; /* "HtoD" ... as interned values */
    pf_bytes *configs;        /* launch configuration args by device * launch configs + config */
    uint8_t *config_done;
    size_t nconfigs;
    struct { uint32_t device, context, lane; int valid; pf_bytes b; } dev;
    struct { uint64_t id; int valid; pf_bytes b; } ext;
    uint64_t *open;           /* open slices of the row being written: their end times */
    size_t nopen, open_cap;
    uint64_t touched;         /* dt__wr_layout_touch's values */
} pf_lane;

/* A part of a final row: its positions j0..j1. */
typedef struct pf_part {
    uint32_t row;
    uint32_t j0, j1;
} pf_part;

typedef struct pf_export {
    const dt_recording *rec;
    dt_layout *l;
    uint64_t *track;          /* final row -> track uuid */
    pf_part *parts;
    size_t nparts;
    char cat_name[CAT_COUNT][48];
    pf_lane lane[DT_OUT_MAX_LANES];
    int lanes;
} pf_export;

#define vsize dt__pf_vsize
#define put_varint dt__pf_put_varint

/* ------------------------------------------------------------------ */
/* Tracks and parts                                                    */
/* ------------------------------------------------------------------ */
static int write_tracks(pf_export *e, pf_trace *t, uint64_t *capture_track)
{
    dt_layout_process proc;
    size_t cursor = 0;
    while (dt__wr_layout_next_process(e->l, &cursor, &proc))
        if (!dt__pf_process(t, (int64_t)proc.pid, proc.name, proc.label, (int64_t)proc.sort_index))
            return -1;
    size_t rows = e->l->nfrows;
    e->track = dt__calloc(rows + 1, sizeof *e->track);
    if (!e->track)
        return -1;
    dt_layout_row row;
    uint64_t main_pid = dt__wr_layout_main_pid(e->l);
    *capture_track = 0;
    for (size_t f = 0; f < rows; f++) {
        dt__wr_layout_row_get(e->l, f, &row);
        e->track[f] = dt__pf_thread(t, (int64_t)row.pid, (int64_t)row.tid, row.name);
        if (!e->track[f])
            return -1;
        if (row.pid == main_pid && row.tid == 0)
            *capture_track = e->track[f];
    }
    if (!*capture_track && dt__wr_layout_capture_row_free(e->l))
        *capture_track = dt__pf_thread(t, (int64_t)main_pid, 0, "devtrace capture");
    return *capture_track ? 0 : -1;
}

/* Rows in parts: a row of one level is cut where the layout found it may
   be (DT_LAYOUT_CUT_EVENTS apart), any other is written whole. */
static int plan_parts(pf_export *e)
{
    const dt_layout *l = e->l;
    e->parts = dt__malloc((l->ncuts + l->nfrows + 1) * sizeof *e->parts);
    if (!e->parts)
        return -1;
    size_t c = 0;
    for (size_t f = 0; f < l->nfrows; f++) {
        const dt_layout_final_row *fr = &l->frows[f];
        uint32_t j0 = 0;
        if (fr->contiguous) {
            while (c < l->ncuts && l->cuts[c] < fr->first)
                c++;
            for (; c < l->ncuts && l->cuts[c] < fr->first + fr->count; c++) {
                e->parts[e->nparts++] = (pf_part){(uint32_t)f, j0, l->cuts[c] - fr->first};
                j0 = l->cuts[c] - fr->first;
            }
        }
        if (fr->count > j0)
            e->parts[e->nparts++] = (pf_part){(uint32_t)f, j0, fr->count};
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */
/* ------------------------------------------------------------------ */
static inline uint8_t *copy_padded(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (size_t k = 0; k < n; k += 16)
        memcpy(dst + k, src + k, 16);
    return dst + n;
}

/* A DebugAnnotation of an interned name and a varint value. */
static inline uint8_t *put_varint_arg(uint8_t *p, int arg, unsigned field, uint64_t v)
{
    p[0] = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    p[2] = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p[3] = (uint8_t)ARG_IID(arg);
    p[4] = (uint8_t)PF_TAG(field, PF_WT_VARINT);
    uint8_t *end = put_varint(p + 5, v);
    p[1] = (uint8_t)(end - p - 2);
    return end;
}

static inline uint8_t *put_uint_arg(uint8_t *p, int arg, uint64_t v)
{
    return put_varint_arg(p, arg, DA_UINT, v);
}

static inline uint8_t *put_int_arg(uint8_t *p, int arg, int64_t v)
{
    return put_varint_arg(p, arg, DA_INT, (uint64_t)v);
}

static inline uint8_t *put_double_arg(uint8_t *p, int arg, double v)
{
    p[0] = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    p[1] = 11;
    p[2] = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p[3] = (uint8_t)ARG_IID(arg);
    p[4] = (uint8_t)PF_TAG(DA_DOUBLE, PF_WT_I64);
    memcpy(p + 5, &v, 8); /* little-endian, as the wire format */
    return p + 13;
}

/* An array of three integers ("grid": [x, y, z]). */
static uint8_t *put_ints3_arg(uint8_t *p, int arg, const int32_t v[3])
{
    size_t inner = 2;
    for (int i = 0; i < 3; i++)
        inner += 3 + vsize((uint64_t)(int64_t)v[i]);
    p[0] = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    p[1] = (uint8_t)inner;
    p[2] = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p[3] = (uint8_t)ARG_IID(arg);
    p += 4;
    for (int i = 0; i < 3; i++) {
        uint64_t x = (uint64_t)(int64_t)v[i];
        p[0] = (uint8_t)PF_TAG(DA_ARRAY, PF_WT_LEN);
        p[1] = (uint8_t)(1 + vsize(x));
        p[2] = (uint8_t)PF_TAG(DA_INT, PF_WT_VARINT);
        p = put_varint(p + 3, x);
    }
    return p;
}

/* A new sequence for part of final row f: every arg name and category
   interned first. */
static void sequence_begin(pf_export *e, pf_lane *ln, uint32_t f)
{
    pf_trace *t = ln->t;
    dt__pf_sequence_begin(t, 3 + f, e->track[f]);
    ln->gen++;
    for (int a = 0; a < ARG_COUNT; a++)
        dt__pf_intern(t, PF_ARG, arg_names[a], strlen(arg_names[a]));
    for (int c = 1; c < CAT_COUNT; c++)
        dt__pf_intern(t, PF_CATEGORY, e->cat_name[c], strlen(e->cat_name[c]));
}

static inline uint64_t cached(pf_lane *ln, pf_cached *c, int table, const char *s, size_t len)
{
    if (c->gen != ln->gen) {
        c->gen = ln->gen;
        c->iid = (uint32_t)dt__pf_intern(ln->t, table, s, len);
    }
    return c->iid;
}

static uint64_t name_iid_slow(pf_export *e, pf_lane *ln, uint32_t name)
{
    if (name >= ln->name_cap) {
        size_t cap = ln->name_cap ? ln->name_cap : 1024;
        while (cap <= name)
            cap *= 2;
        pf_cached *n = dt__realloc(ln->name_iids, cap * sizeof *n);
        if (!n) {
            dt__pf_fail(ln->t, ENOMEM);
            return 0;
        }
        memset(n + ln->name_cap, 0, (cap - ln->name_cap) * sizeof *n);
        ln->name_iids = n;
        ln->name_cap = cap;
    }
    const dt_intern *in = e->rec->names;
    return cached(ln, &ln->name_iids[name], PF_NAME, dt__intern_get(in, name), dt__intern_len(in, name));
}

/* An event name's id on the lane's sequence, interned when first used there. */
static inline uint64_t name_iid(pf_export *e, pf_lane *ln, uint32_t name)
{
    if (name < ln->name_cap && ln->name_iids[name].gen == ln->gen)
        return ln->name_iids[name].iid;
    return name_iid_slow(e, ln, name);
}

/* Memcpy and memset names, as the JSON writes them; 0 when out of memory. */
static uint64_t copy_name_iid(pf_lane *ln, const dt_rec *r)
{
    unsigned kind = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.copy_kind & 15 : 0;
    unsigned src = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.src_kind & 15 : r->u.memset.memory_kind & 15;
    unsigned dst = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.dst_kind & 15 : 0;
    unsigned key = r->kind == DT_EVENT_MEMSET ? 16 * 16 * 16 + src : (kind * 16 + src) * 16 + dst;
    pf_cached *c = &ln->copy_iids[key];
    if (c->gen == ln->gen)
        return c->iid;
    char buf[96];
    if (r->kind == DT_EVENT_MEMCPY)
        snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", dt__wr_layout_copy_kind_name(r->u.memcpy.copy_kind),
                 dt__wr_layout_memory_kind_name(r->u.memcpy.src_kind), dt__wr_layout_memory_kind_name(r->u.memcpy.dst_kind));
    else
        snprintf(buf, sizeof buf, "Memset (%s)", dt__wr_layout_memory_kind_name(r->u.memset.memory_kind));
    return cached(ln, c, PF_NAME, buf, strlen(buf));
}

/* A kernel's launch configuration args, as the JSON writes them: the same
   bytes for every launch of the configuration on the device. */
static const pf_bytes *config_args_slow(pf_export *e, pf_lane *ln, const dt_rec *r, pf_bytes *scratch)
{
    size_t launches = e->rec->launches->count;
    pf_bytes *c = scratch;
    if (r->device < DT_MAX_DEVICES && r->u.kernel.config < launches) {
        size_t key = (size_t)r->device * launches + r->u.kernel.config;
        if (!ln->nconfigs) {
            /* without the cache every launch is encoded afresh: the same bytes */
            dt__free(ln->configs);
            dt__free(ln->config_done);
            ln->configs = dt__malloc(DT_MAX_DEVICES * launches * sizeof *ln->configs);
            ln->config_done = dt__calloc(DT_MAX_DEVICES * launches, 1);
            if (ln->configs && ln->config_done)
                ln->nconfigs = DT_MAX_DEVICES * launches;
        }
        if (key < ln->nconfigs) {
            c = &ln->configs[key];
            if (ln->config_done[key])
                return c;
            ln->config_done[key] = 1;
        }
    }
    dt_layout_kernel k;
    dt__wr_layout_kernel_get(e->l, r->device, r->u.kernel.config, &k);
    uint8_t *p = c->bytes;
    /* what the backend does not know (dt_layout_kernel) is left out */
    if (k.has_resources) {
        p = put_uint_arg(p, ARG_REGISTERS, k.config.registers_per_thread);
        p = put_uint_arg(p, ARG_SHARED, (uint64_t)k.config.static_shared_memory + k.config.dynamic_shared_memory);
    }
    if (k.occupancy_valid) {
        p = put_double_arg(p, ARG_BLOCKS_SM, (double)k.blocks_per_sm_e6 / 1e6);
        p = put_double_arg(p, ARG_WARPS_SM, (double)k.warps_per_sm_e6 / 1e6);
        p = put_int_arg(p, ARG_OCCUPANCY, k.occupancy_pct);
    }
    if (k.has_config) {
        p = put_ints3_arg(p, ARG_GRID, k.config.grid);
        p = put_ints3_arg(p, ARG_BLOCK, k.config.block);
    }
    c->len = (uint32_t)(p - c->bytes);
    return c;
}

static inline const pf_bytes *config_args(pf_export *e, pf_lane *ln, const dt_rec *r, pf_bytes *scratch)
{
    size_t key = (size_t)r->device * e->rec->launches->count + r->u.kernel.config;
    if (r->u.kernel.config < e->rec->launches->count && key < ln->nconfigs && ln->config_done[key])
        return &ln->configs[key];
    return config_args_slow(e, ln, r, scratch);
}

static inline uint8_t *put_device_args(pf_lane *ln, uint8_t *p, const dt_rec *r)
{
    __typeof__(ln->dev) *d = &ln->dev;
    if (!d->valid || d->device != r->device || d->context != r->context || d->lane != r->lane) {
        uint8_t *q = d->b.bytes;
        q = put_uint_arg(q, ARG_DEVICE, r->device);
        q = put_uint_arg(q, ARG_CONTEXT, r->context);
        q = put_uint_arg(q, ARG_STREAM, r->lane);
        d->b.len = (uint32_t)(q - d->b.bytes);
        d->device = r->device;
        d->context = r->context;
        d->lane = r->lane;
        d->valid = 1;
    }
    p = copy_padded(p, d->b.bytes, d->b.len);
    return put_uint_arg(p, ARG_CORRELATION, r->correlation);
}

static inline uint8_t *put_external(pf_lane *ln, uint8_t *p, const dt_rec *r)
{
    if (!(r->flags & DT_REC_HAS_EXTERNAL))
        return p;
    __typeof__(ln->ext) *x = &ln->ext;
    if (!x->valid || x->id != r->external_id) {
        x->b.len = (uint32_t)(put_uint_arg(x->b.bytes, ARG_EXTERNAL, r->external_id) - x->b.bytes);
        x->id = r->external_id;
        x->valid = 1;
    }
    return copy_padded(p, x->b.bytes, x->b.len);
}

/* bytes per ns is GB/s: as the JSON writes it, six decimals exact */
static inline uint8_t *put_bandwidth(uint8_t *p, uint64_t bytes, uint64_t dur)
{
    if (dur == 0)
        return p;
    __extension__ unsigned __int128 q = (unsigned __int128)bytes * 1000000u / dur;
    double v = q > UINT64_MAX ? (double)UINT64_MAX : (double)(uint64_t)q;
    return put_double_arg(p, ARG_BANDWIDTH, v / 1e6);
}

static inline uint8_t *put_head(uint8_t *p, uint64_t name, int cat)
{
    p[0] = (uint8_t)PF_TAG(9, PF_WT_VARINT); /* type */
    p[1] = 1;                                /* TYPE_SLICE_BEGIN */
    p[2] = (uint8_t)PF_TAG(10, PF_WT_VARINT); /* name_iid */
    p = put_varint(p + 3, name);
    p[0] = (uint8_t)PF_TAG(3, PF_WT_VARINT); /* category_iids */
    p[1] = (uint8_t)cat;
    return p + 2;
}

/* A DebugAnnotation with an interned string value (iid), at p. */
static inline uint8_t *put_string_iid_arg(uint8_t *p, int arg, uint64_t iid)
{
    p[0] = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    p[1] = (uint8_t)(4 + vsize(iid));
    p[2] = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p[3] = (uint8_t)ARG_IID(arg);
    p = put_varint(p + 4, PF_TAG(DA_STRING_IID, PF_WT_VARINT));
    return put_varint(p, iid);
}

/* An interned name of the session as a string value (collectives are few:
   interned as met). */
static inline uint8_t *put_name_arg(pf_export *e, pf_lane *ln, uint8_t *p, int arg, uint32_t name)
{
    const dt_intern *in = e->rec->names;
    return put_string_iid_arg(p, arg, dt__pf_intern(ln->t, PF_VALUE, dt__intern_get(in, name), dt__intern_len(in, name)));
}

static void write_record(pf_export *e, pf_lane *ln, const dt_rec *r, uint64_t st, uint64_t en, unsigned flow)
{
    static const uint8_t cats[] = {[DT_EVENT_KERNEL] = CAT_KERNEL, [DT_EVENT_MEMCPY] = CAT_MEMCPY,
                                   [DT_EVENT_MEMSET] = CAT_MEMSET, [DT_EVENT_RUNTIME] = CAT_RUNTIME,
                                   [DT_EVENT_DRIVER] = CAT_DRIVER, [DT_EVENT_SYNC] = CAT_SYNC,
                                   [DT_EVENT_OVERHEAD] = CAT_OVERHEAD, [DT_EVENT_RANGE] = CAT_RANGE,
                                   [DT_EVENT_OP] = CAT_OP, [DT_EVENT_COLLECTIVE] = CAT_KERNEL,
                                   [DT_EVENT_MEMORY] = CAT_MEMORY};
    pf_trace *t = ln->t;
    uint64_t name = r->kind == DT_EVENT_MEMCPY || r->kind == DT_EVENT_MEMSET ? copy_name_iid(ln, r)
                                                                             : name_iid(e, ln, r->name);
    pf_bytes scratch;
    const pf_bytes *cfg = r->kind == DT_EVENT_KERNEL ? config_args(e, ln, r, &scratch) : NULL;
    uint8_t *p = dt__pf_event_room(t, EVENT_ROOM + (cfg ? cfg->len + COPY_PAD : 0));
    if (!p)
        return;
    t->ts = st;
    p = put_head(p, name, cats[r->kind]);
    uint64_t dur = en - st;
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        p = put_external(ln, p, r);
        uint32_t qd = r->u.kernel.queued_delta;
        p = put_uint_arg(p, ARG_QUEUED, qd == DT_DELTA_UNKNOWN || qd > st ? 0 : st - qd);
        p = put_device_args(ln, p, r);
        p = copy_padded(p, cfg->bytes, cfg->len);
        break;
    }
    case DT_EVENT_MEMCPY: {
        p = put_external(ln, p, r);
        p = put_device_args(ln, p, r);
        p = put_uint_arg(p, ARG_BYTES, r->u.memcpy.bytes);
        p = put_bandwidth(p, r->u.memcpy.bytes, dur);
        /* the copy kind, a word of a few, as an interned string */
        const char *kind = dt__wr_layout_copy_kind_name(r->u.memcpy.copy_kind);
        uint64_t kind_iid = cached(ln, &ln->copy_kind_iids[r->u.memcpy.copy_kind & 15], PF_VALUE, kind, strlen(kind));
        p = put_string_iid_arg(p, ARG_COPY_KIND, kind_iid);
        break;
    }
    case DT_EVENT_MEMSET:
        p = put_external(ln, p, r);
        p = put_device_args(ln, p, r);
        p = put_uint_arg(p, ARG_BYTES, r->u.memset.bytes);
        p = put_bandwidth(p, r->u.memset.bytes, dur);
        p = put_uint_arg(p, ARG_VALUE, r->u.memset.value);
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        p = put_external(ln, p, r);
        p = put_uint_arg(p, ARG_CBID, r->u.api.cbid);
        p = put_uint_arg(p, ARG_CORRELATION, r->correlation);
        p = put_int_arg(p, ARG_RETURN, r->u.api.return_code);
        break;
    case DT_EVENT_SYNC:
    case DT_EVENT_OVERHEAD:
        p = put_device_args(ln, p, r);
        break;
    case DT_EVENT_COLLECTIVE: {
        p = put_external(ln, p, r);
        p = put_device_args(ln, p, r);
        static const dt_collective none = {0};
        const dt_collective *k = r->u.collective.info < e->rec->collective_count
                                     ? &e->rec->collectives[r->u.collective.info] : &none;
        p = put_name_arg(e, ln, p, ARG_COLLECTIVE, r->name);
        if (k->count)
            p = put_uint_arg(p, ARG_NELEMS, k->count);
        if (k->data_type)
            p = put_name_arg(e, ln, p, ARG_DTYPE, k->data_type);
        if (k->group)
            p = put_name_arg(e, ln, p, ARG_GROUP, k->group);
        if (k->algorithm)
            p = put_name_arg(e, ln, p, ARG_ALGORITHM, k->algorithm);
        if (k->bytes) {
            p = put_uint_arg(p, ARG_BYTES, k->bytes);
            p = put_bandwidth(p, k->bytes, dur);
        }
        if (k->bandwidth_gbps > 0 && k->bandwidth_gbps < 1e12)
            p = put_double_arg(p, ARG_VENDOR_BANDWIDTH, k->bandwidth_gbps);
        break;
    }
    case DT_EVENT_MEMORY: {
        /* a slice of no length (Perfetto's instants show no args) */
        const dt_layout_memory *m = dt__wr_layout_memory_of(e->l, r);
        p = put_int_arg(p, ARG_TOTAL_ALLOCATED, m->total);
        p = put_int_arg(p, ARG_MEM_BYTES, m->bytes);
        p = put_int_arg(p, ARG_DEVICE_ID, m->device_id);
        p = put_int_arg(p, ARG_DEVICE_TYPE, m->device_type);
        p = put_uint_arg(p, ARG_ADDR, r->u.memory.address);
        const char *kind = dt__wr_layout_memory_kind_name(r->context);
        p = put_string_iid_arg(p, ARG_MEMORY_KIND, dt__pf_intern(t, PF_VALUE, kind, strlen(kind)));
        p = put_uint_arg(p, ARG_STREAM, r->lane);
        p = put_uint_arg(p, ARG_CORRELATION, r->correlation);
        break;
    }
    default: /* range, named host operation */
        p = put_external(ln, p, r);
        if (r->flags & DT_REC_HAS_PARENT)
            p = put_uint_arg(p, ARG_PARENT, r->u.range.parent);
        break;
    }
    if (flow & DT_LAYOUT_FLOW_START)
        p = dt__pf_put_flow(p, r->correlation, 0);
    if (flow & DT_LAYOUT_FLOW_FINISH)
        p = dt__pf_put_flow(p, r->correlation, 1);
    t->te.len = (size_t)(p - t->te.p);
    dt__pf_begin_done(t);
}

static void write_span(pf_export *e, pf_lane *ln, const dt_layout_span *sp)
{
    pf_trace *t = ln->t;
    uint64_t name = name_iid(e, ln, sp->name);
    uint8_t *p = dt__pf_event_room(t, EVENT_ROOM);
    if (!p)
        return;
    t->ts = sp->start;
    p = put_head(p, name, CAT_SPAN);
    p = put_uint_arg(p, ARG_EXTERNAL, sp->external_id);
    t->te.len = (size_t)(p - t->te.p);
    dt__pf_begin_done(t);
}

/* Ends the open slices of the row that end by ts (all of them: UINT64_MAX). */
static void close_until(pf_lane *ln, uint64_t ts)
{
    while (ln->nopen > 0 && ln->open[ln->nopen - 1] <= ts)
        dt__pf_end(ln->t, ln->open[--ln->nopen]);
}

/* One part of a row, as a sequence of its own. */
static int encode_part(void *arg, dt_out *out, size_t unit, int lane)
{
    pf_export *e = arg;
    pf_lane *ln = &e->lane[lane];
    const dt_layout *l = e->l;
    const pf_part *part = &e->parts[unit];
    const dt_layout_final_row *fr = &l->frows[part->row];
    ln->t->out = out;
    sequence_begin(e, ln, part->row);
    ln->nopen = 0;
    for (uint32_t j = part->j0; j < part->j1 && !out->err; j++) {
        if ((j - part->j0) % DT_LAYOUT_WARM == 0) {
            uint32_t end = part->j1 - j > DT_LAYOUT_WARM ? j + DT_LAYOUT_WARM : part->j1;
            for (uint32_t w = j; w < end; w++)
                ln->touched += dt__wr_layout_touch(l, dt__wr_layout_row_position(l, fr, w));
        }
        size_t k = dt__wr_layout_row_position(l, fr, j);
        const dt_rec *r = dt__wr_layout_pos_rec(l, k);
        const dt_layout_span *sp = r ? NULL : dt__wr_layout_pos_span(l, k);
        uint64_t st = r ? dt__wr_layout_rec_start(l, r) : sp->start;
        uint64_t en = r ? dt__wr_layout_rec_end(l, r) : sp->end;
        /* as the leveler placed them: an event nests in the innermost open
           one unless that one ends by its start */
        close_until(ln, st);
        if (ln->nopen == ln->open_cap) {
            size_t cap = ln->open_cap ? ln->open_cap * 2 : 64;
            uint64_t *o = dt__realloc(ln->open, cap * sizeof *o);
            if (!o)
                return ENOMEM;
            ln->open = o;
            ln->open_cap = cap;
        }
        ln->open[ln->nopen++] = en;
        if (r)
            write_record(e, ln, r, st, en, dt__wr_layout_pos_flow(l, k));
        else
            write_span(e, ln, sp);
        if (dt__pf_trace_error(ln->t))
            return dt__pf_trace_error(ln->t);
    }
    close_until(ln, UINT64_MAX);
    return dt__pf_trace_error(ln->t);
}

static uint64_t arg_iid(pf_trace *t, const char *name)
{
    return dt__pf_intern(t, PF_ARG, name, strlen(name));
}

/* What the JSON's devtrace key says of the session, as the capture slice's
   args "devtrace.<key>" (the Perfetto UI shows them as one tree under
   "devtrace"; docs/trace-format.md): the writer, backend, capture window,
   clock fit, and the losses by reason with their total. */
static void write_capture_args(pf_export *e, pf_trace *t)
{
    const dt_recording *rec = e->rec;
    const dt_layout *l = e->l;
    const char *backend = rec->backend_name ? rec->backend_name : "none";
    dt__pf_arg_string(t, arg_iid(t, "devtrace.version"), DT_VERSION_STRING, strlen(DT_VERSION_STRING));
    dt__pf_arg_string(t, arg_iid(t, "devtrace.backend"), backend, strlen(backend));
    dt__pf_arg_string(t, arg_iid(t, "devtrace.library"), rec->library, rec->library_len);
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.captureWindow.startNs"), l->window_start);
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.captureWindow.endNs"), l->window_end);
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.clock.samples"), rec->clock->count);
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.clock.segments"), rec->clock->segments);
    dt__pf_arg_double(t, arg_iid(t, "devtrace.clock.slope"), rec->clock->slope);
    dt__pf_arg_double(t, arg_iid(t, "devtrace.clock.offsetNs"), rec->clock->offset_ns);
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.clock.errorBoundNs"), rec->clock->error_bound_ns);
    dt__pf_arg_bool(t, arg_iid(t, "devtrace.clock.identity"), rec->clock->identity);
    uint64_t total = 0;
    char name[96];
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        uint64_t v = dt__wr_layout_loss(l, (dt_loss_reason)r);
        total += v;
        snprintf(name, sizeof name, "devtrace.loss.%s", dt_loss_reason_name((dt_loss_reason)r));
        dt__pf_arg_uint(t, arg_iid(t, name), v);
    }
    dt__pf_arg_uint(t, arg_iid(t, "devtrace.loss.total"), total);
}

/* The capture window's slice, on its own sequence (2). */
static void write_capture(pf_export *e, pf_lane *ln, uint64_t capture_track)
{
    const dt_layout *l = e->l;
    pf_trace *t = ln->t;
    dt__pf_sequence_begin(t, 2, capture_track);
    ln->gen++;
    static const char capture[] = "devtrace capture";
    dt__pf_begin(t, l->window_start, dt__pf_intern(t, PF_NAME, capture, sizeof capture - 1),
             dt__pf_intern(t, PF_CATEGORY, e->cat_name[CAT_TRACE], strlen(e->cat_name[CAT_TRACE])));
    write_capture_args(e, t);
    dt__pf_begin_done(t);
    dt__pf_end(t, l->window_end);
}

/* Writes the trace to out; 0, or an errno (ENOMEM included). */
static int write_perfetto(pf_export *e, dt_out *out)
{
    const dt_layout *l = e->l;
    const char *prefix = l->api_prefix;
    static const char *const fixed[CAT_COUNT] = {[CAT_KERNEL] = "kernel", [CAT_MEMCPY] = "gpu_memcpy",
                                                 [CAT_MEMSET] = "gpu_memset", [CAT_SYNC] = "cuda_sync",
                                                 [CAT_OVERHEAD] = "overhead", [CAT_RANGE] = "user_annotation",
                                                 [CAT_OP] = "cpu_op",
                                                 [CAT_SPAN] = "gpu_user_annotation", [CAT_TRACE] = "Trace",
                                                 [CAT_MEMORY] = "cpu_instant_event"};
    for (int k = 1; k < CAT_COUNT; k++) {
        if (k == CAT_RUNTIME || k == CAT_DRIVER)
            snprintf(e->cat_name[k], sizeof e->cat_name[k], "%s_%s", prefix, k == CAT_RUNTIME ? "runtime" : "driver");
        else
            snprintf(e->cat_name[k], sizeof e->cat_name[k], "%s", fixed[k]);
    }
    e->lane[0].t = dt__pf_trace_open(out, l->window_start);
    for (int k = 1; k < DT_OUT_MAX_LANES; k++)
        e->lane[k].t = dt__pf_trace_new(out, l->window_start);
    for (int k = 0; k < DT_OUT_MAX_LANES; k++)
        if (!e->lane[k].t)
            return ENOMEM;
    uint64_t capture_track;
    if (write_tracks(e, e->lane[0].t, &capture_track) != 0 || plan_parts(e) != 0)
        return dt__pf_trace_error(e->lane[0].t) ? dt__pf_trace_error(e->lane[0].t) : ENOMEM;
    write_capture(e, &e->lane[0], capture_track);
    if (dt__pf_trace_error(e->lane[0].t))
        return dt__pf_trace_error(e->lane[0].t);
    return dt__out_units(out, e->nparts, e->lanes, encode_part, e);
}

static int write_file(void *arg, dt_out *out)
{
    return write_perfetto(arg, out);
}

dt_status dt__wr_perfetto(const dt_recording *rec, const char *path, int fd, int gzip)
{
    pf_export *e = dt__calloc(1, sizeof *e);
    if (!e)
        return dt__error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    e->rec = rec;
    e->lanes = dt__out_lanes();
    uint64_t t0 = dt__monotonic_ns();
    e->l = dt__wr_layout_build(rec);
    uint64_t t1 = dt__monotonic_ns();
    int err = e->l ? dt__write_output(path, fd, gzip, write_file, e) : ENOMEM;
    uint64_t t2 = dt__monotonic_ns();
    dt__wr_layout_free(e->l);
    dt__free(e->track);
    dt__free(e->parts);
    for (int k = 0; k < DT_OUT_MAX_LANES; k++) {
        pf_lane *ln = &e->lane[k];
        if (ln->t) {
            int close_err = dt__pf_trace_close(ln->t);
            if (!err)
                err = close_err;
        }
        dt__free(ln->name_iids);
        dt__free(ln->configs);
        dt__free(ln->config_done);
        dt__free(ln->open);
    }
    int nparts = (int)e->nparts, lanes = e->lanes;
    dt__free(e);
    if (err == ENOMEM)
        return dt__error(DT_ERR_NO_MEMORY, "out of memory while writing the trace %s", path);
    if (err != 0)
        return dt__error(DT_ERR_IO, "cannot write trace %s: %s", path, strerror(err));
    dt__log("wrote %s: Perfetto trace, %llu events in %.3f s: layout %.3f, encode and write %.3f (%d parts on %d "
           "thread(s))",
           path, (unsigned long long)rec->store->count, (double)(t2 - t0) * 1e-9, (double)(t1 - t0) * 1e-9,
           (double)(t2 - t1) * 1e-9, nparts, lanes);
    return DT_OK;
}
