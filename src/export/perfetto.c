/*
 * A stopped session as a Perfetto trace (.pftrace): the same rows, events,
 * names, flows and args as the Chrome JSON (both come from layout.h), as
 * TrackEvent slices on one track per row (host thread, device stream,
 * annotation row, each overflow row), named by process and thread
 * descriptors with the JSON's pids and tids.
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
    ARG_GROUP, ARG_ALGORITHM, ARG_VENDOR_BANDWIDTH, ARG_COUNT
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
};

enum { CAT_KERNEL = 1, CAT_MEMCPY, CAT_MEMSET, CAT_RUNTIME, CAT_DRIVER, CAT_SYNC, CAT_OVERHEAD, CAT_RANGE,
       CAT_OP, CAT_SPAN, CAT_TRACE, CAT_COUNT };

typedef struct pf_export {
    const dt_session *s;
    dt_layout *l;
    pf_trace *t;
    uint64_t arg[ARG_COUNT];
    uint64_t cat[CAT_COUNT];
    uint64_t *track;      /* final row -> track uuid */
    /* open slices of the row being written: their end times */
    uint64_t *open;
    size_t nopen, open_cap;
} pf_export;

static uint64_t intern_lit(pf_export *e, int table, const char *s)
{
    return pf_intern(e->t, table, s, strlen(s));
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
    pf_arg_uint(e->t, e->arg[ARG_DEVICE], r->device);
    pf_arg_uint(e->t, e->arg[ARG_CONTEXT], r->context);
    pf_arg_uint(e->t, e->arg[ARG_STREAM], r->lane);
    pf_arg_uint(e->t, e->arg[ARG_CORRELATION], r->correlation);
}

static void external_arg(pf_export *e, const dt_rec *r)
{
    if (r->flags & DT_REC_HAS_EXTERNAL)
        pf_arg_uint(e->t, e->arg[ARG_EXTERNAL], r->external_id);
}

static void name_arg(pf_export *e, int arg, uint32_t name)
{
    const dt_intern *in = &e->s->names;
    pf_arg_string(e->t, e->arg[arg], dt_intern_get(in, name), dt_intern_len(in, name));
}

/* bytes per ns is GB/s: as the JSON writes it, six decimals exact */
static void bandwidth_arg(pf_export *e, uint64_t bytes, uint64_t dur)
{
    if (dur == 0)
        return;
    __extension__ unsigned __int128 q = (unsigned __int128)bytes * 1000000u / dur;
    double v = q > UINT64_MAX ? (double)UINT64_MAX : (double)(uint64_t)q;
    pf_arg_double(e->t, e->arg[ARG_BANDWIDTH], v / 1e6);
}

static uint64_t record_name(pf_export *e, const dt_rec *r)
{
    char buf[96];
    if (r->kind == DT_EVENT_MEMCPY) {
        int n = snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", dt_layout_copy_kind_name(r->u.memcpy.copy_kind),
                         dt_layout_memory_kind_name(r->u.memcpy.src_kind),
                         dt_layout_memory_kind_name(r->u.memcpy.dst_kind));
        return pf_intern(e->t, PF_NAME, buf, (size_t)n);
    }
    if (r->kind == DT_EVENT_MEMSET) {
        int n = snprintf(buf, sizeof buf, "Memset (%s)", dt_layout_memory_kind_name(r->u.memset.memory_kind));
        return pf_intern(e->t, PF_NAME, buf, (size_t)n);
    }
    const dt_intern *in = &e->s->names;
    return pf_intern_key(e->t, PF_NAME, r->name, dt_intern_get(in, r->name), dt_intern_len(in, r->name));
}

static void write_record(pf_export *e, uint64_t track, const dt_layout_item *it)
{
    const dt_rec *r = it->rec;
    static const int cats[] = {[DT_EVENT_KERNEL] = CAT_KERNEL, [DT_EVENT_MEMCPY] = CAT_MEMCPY,
                               [DT_EVENT_MEMSET] = CAT_MEMSET, [DT_EVENT_RUNTIME] = CAT_RUNTIME,
                               [DT_EVENT_DRIVER] = CAT_DRIVER, [DT_EVENT_SYNC] = CAT_SYNC,
                               [DT_EVENT_OVERHEAD] = CAT_OVERHEAD, [DT_EVENT_RANGE] = CAT_RANGE,
                               [DT_EVENT_OP] = CAT_OP, [DT_EVENT_COLLECTIVE] = CAT_KERNEL};
    uint64_t name = record_name(e, r);
    pf_begin(e->t, track, it->start, name, e->cat[cats[r->kind]]);
    uint64_t dur = it->end - it->start;
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        external_arg(e, r);
        uint32_t qd = r->u.kernel.queued_delta;
        pf_arg_uint(e->t, e->arg[ARG_QUEUED], qd == DT_DELTA_UNKNOWN || qd > it->start ? 0 : it->start - qd);
        device_args(e, r);
        dt_layout_kernel k;
        dt_layout_kernel_get(e->l, r->device, r->u.kernel.config, &k);
        pf_arg_uint(e->t, e->arg[ARG_REGISTERS], k.config.registers_per_thread);
        pf_arg_uint(e->t, e->arg[ARG_SHARED],
                    (uint64_t)k.config.static_shared_memory + k.config.dynamic_shared_memory);
        if (k.occupancy_valid) {
            pf_arg_double(e->t, e->arg[ARG_BLOCKS_SM], (double)k.blocks_per_sm_e6 / 1e6);
            pf_arg_double(e->t, e->arg[ARG_WARPS_SM], (double)k.warps_per_sm_e6 / 1e6);
            pf_arg_int(e->t, e->arg[ARG_OCCUPANCY], k.occupancy_pct);
        }
        int64_t grid[3] = {k.config.grid[0], k.config.grid[1], k.config.grid[2]};
        int64_t block[3] = {k.config.block[0], k.config.block[1], k.config.block[2]};
        pf_arg_ints(e->t, e->arg[ARG_GRID], grid, 3);
        pf_arg_ints(e->t, e->arg[ARG_BLOCK], block, 3);
        break;
    }
    case DT_EVENT_MEMCPY: {
        external_arg(e, r);
        device_args(e, r);
        pf_arg_uint(e->t, e->arg[ARG_BYTES], r->u.memcpy.bytes);
        bandwidth_arg(e, r->u.memcpy.bytes, dur);
        const char *kind = dt_layout_copy_kind_name(r->u.memcpy.copy_kind);
        pf_arg_string(e->t, e->arg[ARG_COPY_KIND], kind, strlen(kind));
        break;
    }
    case DT_EVENT_MEMSET:
        external_arg(e, r);
        device_args(e, r);
        pf_arg_uint(e->t, e->arg[ARG_BYTES], r->u.memset.bytes);
        bandwidth_arg(e, r->u.memset.bytes, dur);
        pf_arg_uint(e->t, e->arg[ARG_VALUE], r->u.memset.value);
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        external_arg(e, r);
        pf_arg_uint(e->t, e->arg[ARG_CBID], r->u.api.cbid);
        pf_arg_uint(e->t, e->arg[ARG_CORRELATION], r->correlation);
        pf_arg_int(e->t, e->arg[ARG_RETURN], r->u.api.return_code);
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
            pf_arg_uint(e->t, e->arg[ARG_NELEMS], k->count);
        if (k->data_type)
            name_arg(e, ARG_DTYPE, k->data_type);
        if (k->group)
            name_arg(e, ARG_GROUP, k->group);
        if (k->algorithm)
            name_arg(e, ARG_ALGORITHM, k->algorithm);
        if (k->bytes) {
            pf_arg_uint(e->t, e->arg[ARG_BYTES], k->bytes);
            bandwidth_arg(e, k->bytes, dur);
        }
        if (k->bandwidth_gbps > 0 && k->bandwidth_gbps < 1e12)
            pf_arg_double(e->t, e->arg[ARG_VENDOR_BANDWIDTH], k->bandwidth_gbps);
        break;
    }
    default: /* range, named host operation */
        external_arg(e, r);
        if (r->flags & DT_REC_HAS_PARENT)
            pf_arg_uint(e->t, e->arg[ARG_PARENT], r->u.range.parent);
        break;
    }
    if (it->flow & DT_LAYOUT_FLOW_START)
        pf_flow(e->t, r->correlation, 0);
    if (it->flow & DT_LAYOUT_FLOW_FINISH)
        pf_flow(e->t, r->correlation, 1);
    pf_begin_done(e->t);
}

/* Ends the open slices of the row that end by ts (all of them: UINT64_MAX). */
static void close_until(pf_export *e, uint64_t track, uint64_t ts)
{
    while (e->nopen > 0 && e->open[e->nopen - 1] <= ts)
        pf_end(e->t, track, e->open[--e->nopen]);
}

static int write_events(pf_export *e, uint64_t capture_track)
{
    uint64_t ws, we;
    dt_layout_window(e->l, &ws, &we);
    pf_begin(e->t, capture_track, ws, intern_lit(e, PF_NAME, "devtrace capture"), e->cat[CAT_TRACE]);
    pf_begin_done(e->t);
    pf_end(e->t, capture_track, we);

    size_t n = dt_layout_item_count(e->l);
    uint32_t row = UINT32_MAX;
    uint64_t track = 0;
    dt_layout_item it;
    const dt_intern *in = &e->s->names;
    for (size_t k = 0; k < n; k++) {
        dt_layout_prefetch(e->l, k + 32);
        dt_layout_item_get(e->l, k, &it);
        if (it.row != row) {
            close_until(e, track, UINT64_MAX);
            row = it.row;
            track = e->track[row];
        }
        /* as the leveler placed them: an event nests in the innermost open
           one unless that one ends by its start */
        close_until(e, track, it.start);
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
            write_record(e, track, &it);
        } else {
            uint64_t name = pf_intern_key(e->t, PF_NAME, it.name, dt_intern_get(in, it.name), dt_intern_len(in, it.name));
            pf_begin(e->t, track, it.start, name, e->cat[CAT_SPAN]);
            pf_arg_uint(e->t, e->arg[ARG_EXTERNAL], it.external_id);
            pf_begin_done(e->t);
        }
        if (pf_trace_error(e->t))
            return -1;
    }
    close_until(e, track, UINT64_MAX);
    return pf_trace_error(e->t) ? -1 : 0;
}

/* Writes the trace to out; 0, or an errno (ENOMEM included). */
static int write_perfetto(pf_export *e, dt_out *out)
{
    e->t = pf_trace_open(out, 1);
    if (!e->t)
        return ENOMEM;
    /* argument names first: small iids, one-byte varints on every event */
    for (int a = 0; a < ARG_COUNT; a++)
        e->arg[a] = intern_lit(e, PF_ARG, arg_names[a]);
    char cat[64];
    const char *prefix = dt_layout_api_prefix(e->l);
    static const char *const fixed[CAT_COUNT] = {[CAT_KERNEL] = "kernel", [CAT_MEMCPY] = "gpu_memcpy",
                                                 [CAT_MEMSET] = "gpu_memset", [CAT_SYNC] = "cuda_sync",
                                                 [CAT_OVERHEAD] = "overhead", [CAT_RANGE] = "user_annotation",
                                                 [CAT_OP] = "cpu_op",
                                                 [CAT_SPAN] = "gpu_user_annotation", [CAT_TRACE] = "Trace"};
    for (int k = 1; k < CAT_COUNT; k++) {
        if (k == CAT_RUNTIME || k == CAT_DRIVER) {
            snprintf(cat, sizeof cat, "%s_%s", prefix, k == CAT_RUNTIME ? "runtime" : "driver");
            e->cat[k] = intern_lit(e, PF_CATEGORY, cat);
        } else {
            e->cat[k] = intern_lit(e, PF_CATEGORY, fixed[k]);
        }
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

dt_status dt_export_perfetto(const dt_session *s, const char *path)
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
    int err = dt_write_file_atomic(path, 0, write_file, &e);
    dt_layout_free(e.l);
    dt_free(e.track);
    dt_free(e.open);
    if (err == ENOMEM)
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while writing the trace %s", path);
    if (err != 0)
        return dt_error(DT_ERR_IO, "cannot write trace %s: %s", path, strerror(err));
    dt_log("wrote %s: Perfetto trace, %llu events", path, (unsigned long long)s->store.count);
    return DT_OK;
}
