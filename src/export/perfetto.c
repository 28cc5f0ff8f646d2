/*
 * A stopped session as a Perfetto trace (.pftrace): the same rows, events,
 * names, flows and args as the Chrome JSON (both come from layout.h), as
 * TrackEvent slices on one track per row (host thread, device stream,
 * annotation row, each overflow row), named by process and thread
 * descriptors with the JSON's pids and tids. Each row is a packet
 * sequence of its own (pf_trace.h); .pftrace.gz is the same, gzip'd.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "pf_trace.h"

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

enum { CAT_KERNEL = 1, CAT_MEMCPY, CAT_MEMSET, CAT_RUNTIME, CAT_DRIVER, CAT_SYNC, CAT_OVERHEAD, CAT_RANGE,
       CAT_OP, CAT_SPAN, CAT_TRACE, CAT_MEMORY, CAT_COUNT };

/* An interning id kept for the sequence it belongs to. */
typedef struct pf_cached {
    uint32_t seq;
    uint32_t iid;
} pf_cached;

/* A kernel launch configuration's args (registers ... block), encoded once
   per sequence: they are the same for every launch of the configuration. */
#define CONFIG_ARGS_MAX 192
typedef struct pf_config_args {
    uint32_t seq;
    uint32_t len;
    uint8_t bytes[CONFIG_ARGS_MAX];
} pf_config_args;

/* Copy names by (kind, source, destination) and memset names by memory
   kind after them, each built once. */
#define COPY_NAME_KEYS (16 * 16 * 16 + 16)

typedef struct pf_export {
    const dt_session *s;
    dt_layout *l;
    pf_trace *t;
    uint32_t seq; /* counts pf_track_begin calls: the caches' generation */
    size_t arg_len[ARG_COUNT];
    pf_cached arg_iids[ARG_COUNT];
    char cat_name[CAT_COUNT][48];
    pf_cached cat_iids[CAT_COUNT];
    pf_cached *name_iids; /* by interned name id */
    size_t name_cap;
    pf_cached copy_iids[COPY_NAME_KEYS];
    char *copy_names[COPY_NAME_KEYS];
    pf_config_args *configs; /* by device * launch configs + config */
    size_t nconfigs;
    uint64_t *track;      /* final row -> track uuid */
    /* open slices of the row being written: their end times */
    uint64_t *open;
    size_t nopen, open_cap;
} pf_export;

static void track_begin(pf_export *e, uint64_t track)
{
    pf_track_begin(e->t, track);
    e->seq++;
}

static inline uint64_t cached(pf_export *e, pf_cached *c, int table, const char *s, size_t len)
{
    if (c->seq != e->seq) {
        c->seq = e->seq;
        c->iid = (uint32_t)pf_intern(e->t, table, s, len);
    }
    return c->iid;
}

/* Argument names and categories, interned on the current row's sequence
   when first used there. */
static inline uint64_t arg_iid(pf_export *e, int a)
{
    return cached(e, &e->arg_iids[a], PF_ARG, arg_names[a], e->arg_len[a]);
}

static inline uint64_t cat_iid(pf_export *e, int c)
{
    return cached(e, &e->cat_iids[c], PF_CATEGORY, e->cat_name[c], strlen(e->cat_name[c]));
}

static uint64_t name_iid(pf_export *e, uint32_t name)
{
    if (name >= e->name_cap) {
        size_t cap = e->name_cap ? e->name_cap : 1024;
        while (cap <= name)
            cap *= 2;
        pf_cached *n = dt_realloc(e->name_iids, cap * sizeof *n);
        if (!n)
            return 0;
        memset(n + e->name_cap, 0, (cap - e->name_cap) * sizeof *n);
        e->name_iids = n;
        e->name_cap = cap;
    }
    const dt_intern *in = &e->s->names;
    return cached(e, &e->name_iids[name], PF_NAME, dt_intern_get(in, name), dt_intern_len(in, name));
}

static int write_tracks(pf_export *e, uint64_t *capture_track)
{
    dt_layout_process proc;
    size_t cursor = 0;
    while (dt_layout_next_process(e->l, &cursor, &proc))
        if (!pf_process(e->t, (int64_t)proc.pid, proc.name, proc.label, (int64_t)proc.sort_index))
            return -1;
    size_t rows = dt_layout_row_count(e->l);
    e->track = dt_calloc(rows + 1, sizeof *e->track);
    if (!e->track)
        return -1;
    dt_layout_row row;
    uint64_t main_pid = dt_layout_main_pid(e->l);
    *capture_track = 0;
    for (size_t f = 0; f < rows; f++) {
        dt_layout_row_get(e->l, f, &row);
        e->track[f] = pf_thread(e->t, (int64_t)row.pid, (int64_t)row.tid, row.name);
        if (!e->track[f])
            return -1;
        if (row.pid == main_pid && row.tid == 0)
            *capture_track = e->track[f];
    }
    if (!*capture_track && dt_layout_capture_row_free(e->l))
        *capture_track = pf_thread(e->t, (int64_t)main_pid, 0, "devtrace capture");
    return *capture_track ? 0 : -1;
}

static void device_args(pf_export *e, const dt_rec *r)
{
    pf_arg_uint(e->t, arg_iid(e, ARG_DEVICE), r->device);
    pf_arg_uint(e->t, arg_iid(e, ARG_CONTEXT), r->context);
    pf_arg_uint(e->t, arg_iid(e, ARG_STREAM), r->lane);
    pf_arg_uint(e->t, arg_iid(e, ARG_CORRELATION), r->correlation);
}

static void external_arg(pf_export *e, const dt_rec *r)
{
    if (r->flags & DT_REC_HAS_EXTERNAL)
        pf_arg_uint(e->t, arg_iid(e, ARG_EXTERNAL), r->external_id);
}

static void name_arg(pf_export *e, int arg, uint32_t name)
{
    const dt_intern *in = &e->s->names;
    pf_arg_string(e->t, arg_iid(e, arg), dt_intern_get(in, name), dt_intern_len(in, name));
}

/* bytes per ns is GB/s: as the JSON writes it, six decimals exact */
static void bandwidth_arg(pf_export *e, uint64_t bytes, uint64_t dur)
{
    if (dur == 0)
        return;
    __extension__ unsigned __int128 q = (unsigned __int128)bytes * 1000000u / dur;
    double v = q > UINT64_MAX ? (double)UINT64_MAX : (double)(uint64_t)q;
    pf_arg_double(e->t, arg_iid(e, ARG_BANDWIDTH), v / 1e6);
}

/* Memcpy and memset names, as the JSON writes them; 0 when out of memory. */
static uint64_t copy_name_iid(pf_export *e, const dt_rec *r)
{
    unsigned kind = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.copy_kind & 15 : 0;
    unsigned src = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.src_kind & 15 : r->u.memset.memory_kind & 15;
    unsigned dst = r->kind == DT_EVENT_MEMCPY ? r->u.memcpy.dst_kind & 15 : 0;
    unsigned key = (kind * 16 + src) * 16 + dst;
    if (r->kind == DT_EVENT_MEMSET)
        key = 16 * 16 * 16 + src;
    if (!e->copy_names[key]) {
        char buf[96];
        if (r->kind == DT_EVENT_MEMCPY)
            snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", dt_layout_copy_kind_name(r->u.memcpy.copy_kind),
                     dt_layout_memory_kind_name(r->u.memcpy.src_kind), dt_layout_memory_kind_name(r->u.memcpy.dst_kind));
        else
            snprintf(buf, sizeof buf, "Memset (%s)", dt_layout_memory_kind_name(r->u.memset.memory_kind));
        if (!(e->copy_names[key] = dt_strdup(buf)))
            return 0;
    }
    return cached(e, &e->copy_iids[key], PF_NAME, e->copy_names[key], strlen(e->copy_names[key]));
}

static uint64_t record_name(pf_export *e, const dt_rec *r)
{
    if (r->kind == DT_EVENT_MEMCPY || r->kind == DT_EVENT_MEMSET)
        return copy_name_iid(e, r);
    return name_iid(e, r->name);
}

/* A kernel's launch configuration args, as the JSON writes them. */
static void config_args(pf_export *e, const dt_rec *r)
{
    size_t launches = e->s->launches.count;
    pf_config_args *c = NULL;
    if (r->device < DT_MAX_DEVICES && r->u.kernel.config < launches) {
        size_t key = (size_t)r->device * launches + r->u.kernel.config;
        if (!e->configs && (e->configs = dt_calloc(DT_MAX_DEVICES * launches, sizeof *e->configs)))
            e->nconfigs = DT_MAX_DEVICES * launches;
        c = key < e->nconfigs ? &e->configs[key] : NULL;
    }
    if (c && c->seq == e->seq && c->len) {
        pf_args_raw(e->t, c->bytes, c->len);
        return;
    }
    size_t mark = pf_args_mark(e->t);
    dt_layout_kernel k;
    dt_layout_kernel_get(e->l, r->device, r->u.kernel.config, &k);
    pf_arg_uint(e->t, arg_iid(e, ARG_REGISTERS), k.config.registers_per_thread);
    pf_arg_uint(e->t, arg_iid(e, ARG_SHARED), (uint64_t)k.config.static_shared_memory + k.config.dynamic_shared_memory);
    if (k.occupancy_valid) {
        pf_arg_double(e->t, arg_iid(e, ARG_BLOCKS_SM), (double)k.blocks_per_sm_e6 / 1e6);
        pf_arg_double(e->t, arg_iid(e, ARG_WARPS_SM), (double)k.warps_per_sm_e6 / 1e6);
        pf_arg_int(e->t, arg_iid(e, ARG_OCCUPANCY), k.occupancy_pct);
    }
    int64_t grid[3] = {k.config.grid[0], k.config.grid[1], k.config.grid[2]};
    int64_t block[3] = {k.config.block[0], k.config.block[1], k.config.block[2]};
    pf_arg_ints(e->t, arg_iid(e, ARG_GRID), grid, 3);
    pf_arg_ints(e->t, arg_iid(e, ARG_BLOCK), block, 3);
    size_t len;
    const uint8_t *bytes = pf_args_since(e->t, mark, &len);
    if (c && len <= CONFIG_ARGS_MAX) {
        memcpy(c->bytes, bytes, len);
        c->len = (uint32_t)len;
        c->seq = e->seq;
    }
}

/* Item `item`, a record. A memory event is a slice of no length (Perfetto's
   instants have no args in the UI's details) with torch's args. */
static void write_record(pf_export *e, const dt_layout_item *it, size_t item)
{
    const dt_rec *r = it->rec;
    static const int cats[] = {[DT_EVENT_KERNEL] = CAT_KERNEL, [DT_EVENT_MEMCPY] = CAT_MEMCPY,
                               [DT_EVENT_MEMSET] = CAT_MEMSET, [DT_EVENT_RUNTIME] = CAT_RUNTIME,
                               [DT_EVENT_DRIVER] = CAT_DRIVER, [DT_EVENT_SYNC] = CAT_SYNC,
                               [DT_EVENT_OVERHEAD] = CAT_OVERHEAD, [DT_EVENT_RANGE] = CAT_RANGE,
                               [DT_EVENT_OP] = CAT_OP, [DT_EVENT_COLLECTIVE] = CAT_KERNEL,
                               [DT_EVENT_MEMORY] = CAT_MEMORY};
    uint64_t name = record_name(e, r);
    pf_begin(e->t, it->start, name, cat_iid(e, cats[r->kind]));
    uint64_t dur = it->end - it->start;
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        external_arg(e, r);
        uint32_t qd = r->u.kernel.queued_delta;
        pf_arg_uint(e->t, arg_iid(e, ARG_QUEUED), qd == DT_DELTA_UNKNOWN || qd > it->start ? 0 : it->start - qd);
        device_args(e, r);
        config_args(e, r);
        break;
    }
    case DT_EVENT_MEMCPY: {
        external_arg(e, r);
        device_args(e, r);
        pf_arg_uint(e->t, arg_iid(e, ARG_BYTES), r->u.memcpy.bytes);
        bandwidth_arg(e, r->u.memcpy.bytes, dur);
        const char *kind = dt_layout_copy_kind_name(r->u.memcpy.copy_kind);
        pf_arg_string(e->t, arg_iid(e, ARG_COPY_KIND), kind, strlen(kind));
        break;
    }
    case DT_EVENT_MEMSET:
        external_arg(e, r);
        device_args(e, r);
        pf_arg_uint(e->t, arg_iid(e, ARG_BYTES), r->u.memset.bytes);
        bandwidth_arg(e, r->u.memset.bytes, dur);
        pf_arg_uint(e->t, arg_iid(e, ARG_VALUE), r->u.memset.value);
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        external_arg(e, r);
        pf_arg_uint(e->t, arg_iid(e, ARG_CBID), r->u.api.cbid);
        pf_arg_uint(e->t, arg_iid(e, ARG_CORRELATION), r->correlation);
        pf_arg_int(e->t, arg_iid(e, ARG_RETURN), r->u.api.return_code);
        break;
    case DT_EVENT_SYNC:
    case DT_EVENT_OVERHEAD:
        device_args(e, r);
        break;
    case DT_EVENT_COLLECTIVE: {
        external_arg(e, r);
        device_args(e, r);
        static const dt_collective none = {0};
        const dt_collective *k = r->u.collective.info < e->s->collective_count
                                     ? &e->s->collectives[r->u.collective.info] : &none;
        name_arg(e, ARG_COLLECTIVE, r->name);
        if (k->count)
            pf_arg_uint(e->t, arg_iid(e, ARG_NELEMS), k->count);
        if (k->data_type)
            name_arg(e, ARG_DTYPE, k->data_type);
        if (k->group)
            name_arg(e, ARG_GROUP, k->group);
        if (k->algorithm)
            name_arg(e, ARG_ALGORITHM, k->algorithm);
        if (k->bytes) {
            pf_arg_uint(e->t, arg_iid(e, ARG_BYTES), k->bytes);
            bandwidth_arg(e, k->bytes, dur);
        }
        if (k->bandwidth_gbps > 0 && k->bandwidth_gbps < 1e12)
            pf_arg_double(e->t, arg_iid(e, ARG_VENDOR_BANDWIDTH), k->bandwidth_gbps);
        break;
    }
    case DT_EVENT_MEMORY: {
        const dt_layout_memory *m = dt_layout_memory_get(e->l, item);
        pf_arg_int(e->t, arg_iid(e, ARG_TOTAL_ALLOCATED), m->total);
        pf_arg_int(e->t, arg_iid(e, ARG_MEM_BYTES), m->bytes);
        pf_arg_int(e->t, arg_iid(e, ARG_DEVICE_ID), m->device_id);
        pf_arg_int(e->t, arg_iid(e, ARG_DEVICE_TYPE), m->device_type);
        pf_arg_uint(e->t, arg_iid(e, ARG_ADDR), r->u.memory.address);
        const char *kind = dt_layout_memory_kind_name(r->context);
        pf_arg_string(e->t, arg_iid(e, ARG_MEMORY_KIND), kind, strlen(kind));
        pf_arg_uint(e->t, arg_iid(e, ARG_STREAM), r->lane);
        pf_arg_uint(e->t, arg_iid(e, ARG_CORRELATION), r->correlation);
        break;
    }
    default: /* range, named host operation */
        external_arg(e, r);
        if (r->flags & DT_REC_HAS_PARENT)
            pf_arg_uint(e->t, arg_iid(e, ARG_PARENT), r->u.range.parent);
        break;
    }
    if (it->flow & DT_LAYOUT_FLOW_START)
        pf_flow(e->t, r->correlation, 0);
    if (it->flow & DT_LAYOUT_FLOW_FINISH)
        pf_flow(e->t, r->correlation, 1);
    pf_begin_done(e->t);
}

/* Ends the open slices of the row that end by ts (all of them: UINT64_MAX). */
static void close_until(pf_export *e, uint64_t ts)
{
    while (e->nopen > 0 && e->open[e->nopen - 1] <= ts)
        pf_end(e->t, e->open[--e->nopen]);
}

static int write_events(pf_export *e, uint64_t capture_track)
{
    uint64_t ws, we;
    dt_layout_window(e->l, &ws, &we);
    track_begin(e, capture_track);
    static const char capture[] = "devtrace capture";
    pf_begin(e->t, ws, pf_intern(e->t, PF_NAME, capture, sizeof capture - 1), cat_iid(e, CAT_TRACE));
    pf_begin_done(e->t);
    pf_end(e->t, we);

    size_t n = dt_layout_item_count(e->l);
    uint32_t row = UINT32_MAX;
    dt_layout_item it;
    for (size_t k = 0; k < n; k++) {
        dt_layout_prefetch(e->l, k + 32);
        dt_layout_item_get(e->l, k, &it);
        if (it.row != row) {
            close_until(e, UINT64_MAX);
            row = it.row;
            track_begin(e, e->track[row]);
        }
        /* as the leveler placed them: an event nests in the innermost open
           one unless that one ends by its start */
        close_until(e, it.start);
        if (e->nopen == e->open_cap) {
            size_t cap = e->open_cap ? e->open_cap * 2 : 64;
            uint64_t *o = dt_realloc(e->open, cap * sizeof *o);
            if (!o)
                return -1;
            e->open = o;
            e->open_cap = cap;
        }
        e->open[e->nopen++] = it.end;
        if (it.rec) {
            write_record(e, &it, k);
        } else {
            pf_begin(e->t, it.start, name_iid(e, it.name), cat_iid(e, CAT_SPAN));
            pf_arg_uint(e->t, arg_iid(e, ARG_EXTERNAL), it.external_id);
            pf_begin_done(e->t);
        }
        if (pf_trace_error(e->t))
            return -1;
    }
    close_until(e, UINT64_MAX);
    return pf_trace_error(e->t) ? -1 : 0;
}

/* Writes the trace to out; 0, or an errno (ENOMEM included). */
static int write_perfetto(pf_export *e, dt_out *out)
{
    uint64_t ws, we;
    dt_layout_window(e->l, &ws, &we);
    e->t = pf_trace_open(out, ws);
    if (!e->t)
        return ENOMEM;
    for (int a = 0; a < ARG_COUNT; a++)
        e->arg_len[a] = strlen(arg_names[a]);
    const char *prefix = dt_layout_api_prefix(e->l);
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
    uint64_t capture_track;
    int rc = 0;
    if (pf_trace_error(e->t) || write_tracks(e, &capture_track) != 0 || write_events(e, capture_track) != 0)
        rc = pf_trace_error(e->t) ? pf_trace_error(e->t) : ENOMEM;
    int close_rc = pf_trace_close(e->t);
    e->t = NULL;
    return rc ? rc : close_rc;
}

static int write_file(void *arg, dt_out *out)
{
    return write_perfetto(arg, out);
}

dt_status dt_export_perfetto(const dt_session *s, const char *path, dt_format format)
{
    if (!s || !path || !*path)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_export_perfetto: %s is NULL or empty", !s ? "session" : "path");
    if (s->state != DT_STATE_STOPPED)
        return dt_error(DT_ERR_STATE, "the session must be stopped before its trace is written");
    pf_export e;
    memset(&e, 0, sizeof e);
    e.s = s;
    e.l = dt_layout_build(s);
    if (!e.l)
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    int err = dt_write_file_atomic(path, format == DT_FORMAT_PERFETTO_GZ, write_file, &e);
    dt_layout_free(e.l);
    dt_free(e.track);
    dt_free(e.open);
    dt_free(e.name_iids);
    dt_free(e.configs);
    for (size_t k = 0; k < COPY_NAME_KEYS; k++)
        dt_free(e.copy_names[k]);
    if (err == ENOMEM)
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while writing the trace %s", path);
    if (err != 0)
        return dt_error(DT_ERR_IO, "cannot write trace %s: %s", path, strerror(err));
    dt_log("wrote %s: Perfetto trace, %llu events", path, (unsigned long long)s->store.count);
    return DT_OK;
}
