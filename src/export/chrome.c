/*
 * Chrome trace JSON in Kineto's schema (docs/trace-format.md), streamed
 * through a fixed buffer to a temporary file that is renamed into place.
 *
 * The rows, events, flows and spans come from the layout (layout.h), in
 * its order: row by row, by start (longer first on equal starts), the
 * order in which viewers build their nesting. The events are formatted in
 * units of consecutive positions, on a lane per processor up to four
 * (dt__out_units): each unit's text depends on nothing but its events, and
 * the units' bytes are written in order.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/out.h"
#include "format/json.h"
#include "format/names.h"
#include "base/os.h"
#include "export/device_props.h"
#include "export/job_meta.h"
#include "export/layout/layout.h"
#include "export/writers.h"
#include "base/vec.h"

#define NAME_INLINE 2048            /* escaped names up to this go in place */
#define COPY_PAD 16                 /* readable bytes after copied fragments */
#define NONE UINT32_MAX
/* Events per unit of formatting: about a buffer's worth of text, so that a
   unit goes to the file in one write; touched at once (dt__wr_layout_touch). */
#define UNIT_EVENTS DT_LAYOUT_WARM

/* What one formatting thread keeps from event to event. */
typedef struct lane_state {
    /* Text repeated from event to event, formatted once: the External id
       (consecutive events share their operation's) and the device args
       (events are written row by row, a row is one stream). COPY_PAD bytes
       of room after each, for copy_padded. */
    struct { uint64_t id; int valid; uint32_t len; char text[48 + COPY_PAD]; } ext_text;
    struct { uint32_t device, context, lane; int valid; uint32_t len; char text[96 + COPY_PAD]; } dev_text;
    /* kernel args tail per (device slot, launch config) */
    uint32_t *kcache[DT_MAX_DEVICES + 1]; /* arrays of offsets */
    char *kfrag;
    size_t kfrag_len, kfrag_cap;
    uint64_t touched; /* dt__wr_layout_touch's values */
} lane_state;

typedef struct ctx {
    const dt_recording *rec;
    dt_layout *l;
    const char *path;          /* written as traceName */
    uint64_t bytes;            /* JSON bytes written */
    uint64_t format_ns;

    /* escaped names, one per interned id */
    char *names;
    size_t names_len, names_cap;
    uint32_t *name_off, *name_len;
    uint32_t name_count;

    /* per final row: "pid":P,"tid":T,"ts": */
    uint32_t *prefix_off;
    uint8_t *prefix_len;
    char *prefix;
    size_t prefix_size;

    /* "cuda_runtime", "cuda_driver" (or privateuse1_...), quoted, with
       COPY_PAD bytes after each */
    struct { char text[64 + COPY_PAD]; uint32_t len; } api_cat[2];

    int lanes;
    lane_state lane[DT_OUT_MAX_LANES];
} ctx;

/* ------------------------------------------------------------------ */
/* Text formatted once per trace                                       */
/* ------------------------------------------------------------------ */
static int escape_names(ctx *c)
{
    const dt_intern *in = c->rec->names;
    c->name_count = in->count;
    c->name_off = dt__malloc((c->name_count + 1) * sizeof *c->name_off);
    c->name_len = dt__malloc((c->name_count + 1) * sizeof *c->name_len);
    if (!c->name_off || !c->name_len)
        return -1;
    for (uint32_t id = 0; id < c->name_count; id++) {
        size_t len = dt__intern_len(in, id);
        if (dt__vec_reserve((void **)&c->names, &c->names_cap, c->names_len + dt__json_escaped_max(len), 1) != 0)
            return -1;
        char *p = c->names + c->names_len;
        char *e = dt__json_escape(p, dt__intern_get(in, id), len);
        c->name_off[id] = (uint32_t)c->names_len;
        c->name_len[id] = (uint32_t)(e - p);
        c->names_len += (size_t)(e - p);
        if (c->names_len > UINT32_MAX - 64)
            return -1;
    }
    if (dt__vec_reserve((void **)&c->names, &c->names_cap, c->names_len + COPY_PAD, 1) != 0)
        return -1;
    memset(c->names + c->names_len, 0, COPY_PAD);
    return 0;
}

static int row_prefixes(ctx *c)
{
    const dt_layout *l = c->l;
    /* at most 20 digits each, 20 bytes of keys */
    c->prefix = dt__malloc(l->nfrows * 64 + COPY_PAD);
    c->prefix_off = dt__malloc((l->nfrows + 1) * sizeof *c->prefix_off);
    c->prefix_len = dt__malloc(l->nfrows + 1);
    if (!c->prefix || !c->prefix_off || !c->prefix_len)
        return -1;
    char *p = c->prefix;
    for (size_t f = 0; f < l->nfrows; f++) {
        char *p0 = p;
        DT_PUT_LIT(p, "\"pid\":");
        p = dt__put_u64(p, l->frows[f].pid);
        DT_PUT_LIT(p, ",\"tid\":");
        p = dt__put_u64(p, l->frows[f].tid);
        DT_PUT_LIT(p, ",\"ts\":");
        c->prefix_off[f] = (uint32_t)(p0 - c->prefix);
        c->prefix_len[f] = (uint8_t)(p - p0);
    }
    memset(p, 0, COPY_PAD);
    return 0;
}

static char *put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* ------------------------------------------------------------------ */
/* Kernel args: launch configuration and occupancy, once per config     */
/* ------------------------------------------------------------------ */
static const char *kernel_tail(ctx *c, lane_state *ls, unsigned device, uint32_t config, uint32_t *len)
{
    uint32_t nconf = c->rec->launches->count;
    unsigned slot = device < DT_MAX_DEVICES ? device : DT_MAX_DEVICES;
    uint32_t ci = config < nconf ? config : nconf; /* nconf: an unknown config */
    if (!ls->kcache[slot]) {
        ls->kcache[slot] = dt__malloc((size_t)(nconf + 1) * 2 * sizeof(uint32_t));
        if (!ls->kcache[slot])
            return NULL;
        memset(ls->kcache[slot], 0xff, (size_t)(nconf + 1) * 2 * sizeof(uint32_t));
    }
    uint32_t *e = ls->kcache[slot] + 2 * (size_t)ci;
    if (e[0] == NONE) {
        dt_layout_kernel k;
        dt__wr_layout_kernel_get(c->l, slot, ci, &k);
        const dt_launch_config *lc = &k.config;
        if (dt__vec_reserve((void **)&ls->kfrag, &ls->kfrag_cap, ls->kfrag_len + 512, 1) != 0)
            return NULL;
        char *p = ls->kfrag + ls->kfrag_len, *p0 = p;
        if (k.has_resources) {
            DT_PUT_LIT(p, ",\"registers per thread\":");
            p = dt__put_u64(p, lc->registers_per_thread);
            DT_PUT_LIT(p, ",\"shared memory\":");
            p = dt__put_u64(p, (uint64_t)lc->static_shared_memory + lc->dynamic_shared_memory);
        }
        if (k.occupancy_valid) {
            DT_PUT_LIT(p, ",\"blocks per SM\":");
            p = dt__put_fixed(p, k.blocks_per_sm_e6, 6);
            DT_PUT_LIT(p, ",\"warps per SM\":");
            p = dt__put_fixed(p, k.warps_per_sm_e6, 6);
            DT_PUT_LIT(p, ",\"est. achieved occupancy %\":");
            p = dt__put_i64(p, k.occupancy_pct);
        }
        if (k.has_config) {
            DT_PUT_LIT(p, ",\"grid\":[");
            for (int d = 0; d < 3; d++) {
                if (d)
                    *p++ = ',';
                p = dt__put_i64(p, lc->grid[d]);
            }
            DT_PUT_LIT(p, "],\"block\":[");
            for (int d = 0; d < 3; d++) {
                if (d)
                    *p++ = ',';
                p = dt__put_i64(p, lc->block[d]);
            }
            *p++ = ']';
        }
        DT_PUT_LIT(p, "}}");
        memset(p, 0, COPY_PAD);
        e[0] = (uint32_t)ls->kfrag_len;
        e[1] = (uint32_t)(p - p0);
        ls->kfrag_len += e[1];
    }
    *len = e[1];
    return ls->kfrag + e[0];
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */
/* Short variable-length copies in 16-byte blocks: faster than a memcpy
   call for the names and fragments of an event. The sources keep
   COPY_PAD readable bytes after their end, the destination has the room
   reserved for the event. */
static inline char *copy_padded(char *dst, const char *src, size_t n)
{
    for (size_t k = 0; k < n; k += 16)
        memcpy(dst + k, src + k, 16);
    return dst + n;
}

static inline char *put_name(dt_out *o, char *p, const char *name, size_t n)
{
    if (n <= NAME_INLINE) {
        return copy_padded(p, name, n);
    }
    dt__out_commit(o, p);
    dt__out_write(o, name, n);
    return dt__out_reserve(o, DT_JSON_EVENT_ROOM);
}

static inline char *put_bandwidth(char *p, uint64_t bytes, uint64_t dur)
{
    if (dur == 0)
        return p;
    DT_PUT_LIT(p, ",\"memory bandwidth (GB/s)\":");
    /* bytes per ns is GB/s; exact integer arithmetic, six decimals */
    __extension__ unsigned __int128 q = (unsigned __int128)bytes * 1000000u / dur;
    if (q > UINT64_MAX)
        q = UINT64_MAX;
    return dt__put_fixed(p, (uint64_t)q, 6);
}

/* The correlation id, whose digits a flow event repeats: *at and *len say
   where they went. */
static inline char *put_correlation(char *p, uint64_t corr, char **at, size_t *len)
{
    *at = p;
    char *e = dt__put_u64(p, corr);
    *len = (size_t)(e - p);
    return e;
}

static inline char *put_device_args(lane_state *ls, char *p, const dt_rec *r, char **corr_at, size_t *corr_len)
{
    __typeof__(ls->dev_text) *t = &ls->dev_text;
    if (!t->valid || t->device != r->device || t->context != r->context || t->lane != r->lane) {
        char *q = t->text;
        DT_PUT_LIT(q, "\"device\":");
        q = dt__put_u64(q, r->device);
        DT_PUT_LIT(q, ",\"context\":");
        q = dt__put_u64(q, r->context);
        DT_PUT_LIT(q, ",\"stream\":");
        q = dt__put_u64(q, r->lane);
        DT_PUT_LIT(q, ",\"correlation\":");
        t->len = (uint32_t)(q - t->text);
        t->device = r->device;
        t->context = r->context;
        t->lane = r->lane;
        t->valid = 1;
    }
    p = copy_padded(p, t->text, t->len);
    return put_correlation(p, r->correlation, corr_at, corr_len);
}

static inline char *put_external(lane_state *ls, char *p, const dt_rec *r)
{
    if (!(r->flags & DT_REC_HAS_EXTERNAL))
        return p;
    __typeof__(ls->ext_text) *t = &ls->ext_text;
    if (!t->valid || t->id != r->external_id) {
        char *q = t->text;
        DT_PUT_LIT(q, "\"External id\":");
        q = dt__put_u64(q, r->external_id);
        *q++ = ',';
        t->len = (uint32_t)(q - t->text);
        t->id = r->external_id;
        t->valid = 1;
    }
    return copy_padded(p, t->text, t->len);
}

/* A named span that carries an External id: an operation pushed with a
   name (cpu_op, the host event its device activity's External id resolves
   to) or a range's span on a device row (gpu_user_annotation). */
#define SPAN_HEAD(cat) ",\n{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":"
static void write_id_span(ctx *c, dt_out *o, const char *head, size_t head_len, uint32_t name, uint32_t row,
                          uint64_t start, uint64_t end, uint64_t external_id)
{
    char *p = dt__out_reserve(o, DT_JSON_EVENT_ROOM);
    memcpy(p, head, head_len);
    p += head_len;
    if (name < c->name_count)
        p = put_name(o, p, c->names + c->name_off[name], c->name_len[name]);
    else
        DT_PUT_LIT(p, "\"\"");
    *p++ = ',';
    p = copy_padded(p, c->prefix + c->prefix_off[row], c->prefix_len[row]);
    p = dt__put_us3(p, start - c->l->base_ns);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt__put_us3(p, end - start);
    DT_PUT_LIT(p, ",\"args\":{\"External id\":");
    p = dt__put_u64(p, external_id);
    DT_PUT_LIT(p, "}}");
    dt__out_commit(o, p);
}

/* An interned name as a JSON string value. */
static char *put_name_value(ctx *c, dt_out *o, char *p, uint32_t name)
{
    if (name >= c->name_count) {
        DT_PUT_LIT(p, "\"\"");
        return p;
    }
    return put_name(o, p, c->names + c->name_off[name], c->name_len[name]);
}

/* A collective's args after the device's, as Kineto gives NCCL kernels
   linked to their process group. */
static char *put_collective_args(ctx *c, dt_out *o, char *p, const dt_rec *r, uint64_t dur)
{
    static const dt_collective none = {0};
    const dt_collective *k = r->u.collective.info < c->rec->collective_count
                                 ? &c->rec->collectives[r->u.collective.info] : &none;
    DT_PUT_LIT(p, ",\"Collective name\":");
    p = put_name_value(c, o, p, r->name);
    if (k->count) {
        DT_PUT_LIT(p, ",\"In msg nelems\":");
        p = dt__put_u64(p, k->count);
    }
    if (k->data_type) {
        DT_PUT_LIT(p, ",\"dtype\":");
        p = put_name_value(c, o, p, k->data_type);
    }
    if (k->group) {
        DT_PUT_LIT(p, ",\"Process Group Name\":");
        p = put_name_value(c, o, p, k->group);
    }
    if (k->algorithm) {
        DT_PUT_LIT(p, ",\"algorithm\":");
        p = put_name_value(c, o, p, k->algorithm);
    }
    if (k->bytes) {
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt__put_u64(p, k->bytes);
        p = put_bandwidth(p, k->bytes, dur);
    }
    if (k->bandwidth_gbps > 0 && k->bandwidth_gbps < 1e12) {
        DT_PUT_LIT(p, ",\"bandwidth (GB/s)\":");
        p = dt__put_fixed(p, (uint64_t)(k->bandwidth_gbps * 1e6 + 0.5), 6);
    }
    DT_PUT_LIT(p, "}}");
    return p;
}

/* A memory event as torch.profiler writes one with profile_memory: an
   instant on its row, with the same args (dt__wr_layout_memory_of). */
static void write_memory(ctx *c, dt_out *o, const dt_rec *r, uint32_t row)
{
    const dt_layout_memory *mi = dt__wr_layout_memory_of(c->l, r);
    char *p = dt__out_reserve(o, DT_JSON_EVENT_ROOM);
    DT_PUT_LIT(p, ",\n{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",");
    p = copy_padded(p, c->prefix + c->prefix_off[row], c->prefix_len[row]);
    p = dt__put_us3(p, dt__wr_layout_rec_start(c->l, r) - c->l->base_ns);
    DT_PUT_LIT(p, ",\"args\":{\"Total Allocated\":");
    p = dt__put_i64(p, mi->total);
    DT_PUT_LIT(p, ",\"Bytes\":");
    p = dt__put_i64(p, mi->bytes);
    DT_PUT_LIT(p, ",\"Device Id\":");
    p = dt__put_i64(p, mi->device_id);
    DT_PUT_LIT(p, ",\"Device Type\":");
    p = dt__put_i64(p, mi->device_type);
    DT_PUT_LIT(p, ",\"Addr\":");
    p = dt__put_u64(p, r->u.memory.address);
    DT_PUT_LIT(p, ",\"memory kind\":\"");
    p = put_str(p, dt__wr_layout_memory_kind_name(r->context));
    DT_PUT_LIT(p, "\",\"stream\":");
    p = dt__put_u64(p, r->lane);
    DT_PUT_LIT(p, ",\"correlation\":");
    p = dt__put_u64(p, r->correlation);
    DT_PUT_LIT(p, "}}");
    dt__out_commit(o, p);
}

static int write_record(ctx *c, lane_state *ls, dt_out *o, const dt_rec *r, uint32_t row, unsigned flow)
{
    if (r->kind == DT_EVENT_OP) {
        write_id_span(c, o, SPAN_HEAD("cpu_op"), sizeof SPAN_HEAD("cpu_op") - 1, r->name, row,
                      dt__wr_layout_rec_start(c->l, r), dt__wr_layout_rec_end(c->l, r), r->external_id);
        return 0;
    }
    if (r->kind == DT_EVENT_MEMORY) {
        write_memory(c, o, r, row);
        return 0;
    }
    uint64_t st = dt__wr_layout_rec_start(c->l, r), en = dt__wr_layout_rec_end(c->l, r);
    uint64_t ts = st - c->l->base_ns, dur = en - st;
    char *p = dt__out_reserve(o, DT_JSON_EVENT_ROOM);
    char *ts_at;

    DT_PUT_LIT(p, ",\n{\"ph\":\"X\",\"cat\":");
    switch (r->kind) {
    /* as Kineto writes NCCL's: tools that know collectives read the args,
       the others count them as device time */
    case DT_EVENT_COLLECTIVE:
    case DT_EVENT_KERNEL: DT_PUT_LIT(p, "\"kernel\""); break;
    case DT_EVENT_MEMCPY: DT_PUT_LIT(p, "\"gpu_memcpy\""); break;
    case DT_EVENT_MEMSET: DT_PUT_LIT(p, "\"gpu_memset\""); break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER: {
        const __typeof__(c->api_cat[0]) *cat = &c->api_cat[r->kind == DT_EVENT_DRIVER];
        if (cat->len) {
            p = copy_padded(p, cat->text, cat->len);
        } else {
            *p++ = '"';
            p = put_str(p, c->l->api_prefix);
            p = put_str(p, r->kind == DT_EVENT_DRIVER ? "_driver\"" : "_runtime\"");
        }
        break;
    }
    case DT_EVENT_SYNC: DT_PUT_LIT(p, "\"cuda_sync\""); break;
    case DT_EVENT_OVERHEAD: DT_PUT_LIT(p, "\"overhead\""); break;
    default: DT_PUT_LIT(p, "\"user_annotation\""); break;
    }
    DT_PUT_LIT(p, ",\"name\":");
    if (r->kind == DT_EVENT_MEMCPY) {
        DT_PUT_LIT(p, "\"Memcpy ");
        p = put_str(p, dt__wr_layout_copy_kind_name(r->u.memcpy.copy_kind));
        DT_PUT_LIT(p, " (");
        p = put_str(p, dt__wr_layout_memory_kind_name(r->u.memcpy.src_kind));
        DT_PUT_LIT(p, " -> ");
        p = put_str(p, dt__wr_layout_memory_kind_name(r->u.memcpy.dst_kind));
        DT_PUT_LIT(p, ")\"");
    } else if (r->kind == DT_EVENT_MEMSET) {
        DT_PUT_LIT(p, "\"Memset (");
        p = put_str(p, dt__wr_layout_memory_kind_name(r->u.memset.memory_kind));
        DT_PUT_LIT(p, ")\"");
    } else if (r->name < c->name_count) {
        p = put_name(o, p, c->names + c->name_off[r->name], c->name_len[r->name]);
    } else {
        DT_PUT_LIT(p, "\"\"");
    }
    *p++ = ',';
    p = copy_padded(p, c->prefix + c->prefix_off[row], c->prefix_len[row]);
    ts_at = p;
    p = dt__put_us3(p, ts);
    size_t ts_len = (size_t)(p - ts_at);
    /* a fixed-size copy (the event's room covers it): no call per event */
    char ts_text[32];
    memcpy(ts_text, ts_at, sizeof ts_text);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt__put_us3(p, dur);
    DT_PUT_LIT(p, ",\"args\":{");

    /* the correlation id's digits as written in the args, for the flow */
    char *corr_at = NULL;
    size_t corr_len = 0;
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        p = put_external(ls, p, r);
        DT_PUT_LIT(p, "\"queued\":");
        uint32_t qd = r->u.kernel.queued_delta;
        p = dt__put_u64(p, qd == DT_DELTA_UNKNOWN || qd > st ? 0 : st - qd);
        *p++ = ',';
        p = put_device_args(ls, p, r, &corr_at, &corr_len);
        uint32_t tl;
        const char *tail = kernel_tail(c, ls, r->device, r->u.kernel.config, &tl);
        if (!tail)
            return ENOMEM;
        p = copy_padded(p, tail, tl);
        break;
    }
    case DT_EVENT_MEMCPY:
        p = put_external(ls, p, r);
        p = put_device_args(ls, p, r, &corr_at, &corr_len);
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt__put_u64(p, r->u.memcpy.bytes);
        p = put_bandwidth(p, r->u.memcpy.bytes, dur);
        DT_PUT_LIT(p, ",\"copy kind\":\"");
        p = put_str(p, dt__wr_layout_copy_kind_name(r->u.memcpy.copy_kind));
        DT_PUT_LIT(p, "\"}}");
        break;
    case DT_EVENT_MEMSET:
        p = put_external(ls, p, r);
        p = put_device_args(ls, p, r, &corr_at, &corr_len);
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt__put_u64(p, r->u.memset.bytes);
        p = put_bandwidth(p, r->u.memset.bytes, dur);
        DT_PUT_LIT(p, ",\"value\":");
        p = dt__put_u64(p, r->u.memset.value);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        p = put_external(ls, p, r);
        DT_PUT_LIT(p, "\"cbid\":");
        p = dt__put_u64(p, r->u.api.cbid);
        DT_PUT_LIT(p, ",\"correlation\":");
        p = put_correlation(p, r->correlation, &corr_at, &corr_len);
        DT_PUT_LIT(p, ",\"return code\":");
        p = dt__put_i64(p, r->u.api.return_code);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_SYNC:
    case DT_EVENT_OVERHEAD:
        p = put_device_args(ls, p, r, &corr_at, &corr_len);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_COLLECTIVE:
        p = put_external(ls, p, r);
        p = put_device_args(ls, p, r, &corr_at, &corr_len);
        p = put_collective_args(c, o, p, r, dur);
        corr_at = NULL; /* a long name may have moved the event's room */
        break;
    default: /* range */
        if (r->flags & DT_REC_HAS_EXTERNAL) {
            DT_PUT_LIT(p, "\"External id\":");
            p = dt__put_u64(p, r->external_id);
            if (r->flags & DT_REC_HAS_PARENT)
                *p++ = ',';
        }
        if (r->flags & DT_REC_HAS_PARENT) {
            DT_PUT_LIT(p, "\"parent\":");
            p = dt__put_u64(p, r->u.range.parent);
        }
        DT_PUT_LIT(p, "}}");
        break;
    }

    if (flow) {
        int finish = (flow & DT_LAYOUT_FLOW_FINISH) != 0;
        DT_PUT_LIT(p, ",\n{\"ph\":\"");
        *p++ = finish ? 'f' : 's';
        DT_PUT_LIT(p, "\",\"id\":");
        if (corr_at) {
            /* at most 20 digits: fixed-size copies (the event's room covers
               them) through a local, so the two places may overlap */
            char corr_text[20];
            memcpy(corr_text, corr_at, sizeof corr_text);
            memcpy(p, corr_text, sizeof corr_text);
            p += corr_len;
        } else {
            p = dt__put_u64(p, r->correlation);
        }
        *p++ = ',';
        p = copy_padded(p, c->prefix + c->prefix_off[row], c->prefix_len[row]);
        memcpy(p, ts_text, sizeof ts_text);
        p += ts_len;
        if (finish)
            DT_PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
        else
            DT_PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
    }
    dt__out_commit(o, p);
    return 0;
}

/* The events at positions [unit * UNIT_EVENTS, ...). */
static int format_unit(void *arg, dt_out *o, size_t unit, int lane)
{
    ctx *c = arg;
    const dt_layout *l = c->l;
    lane_state *ls = &c->lane[lane];
    size_t k = unit * UNIT_EVENTS, end = k + UNIT_EVENTS < l->items ? k + UNIT_EVENTS : l->items;
    for (size_t j = k; j < end; j++)
        ls->touched += dt__wr_layout_touch(l, j);
    for (; k < end && !o->err; k++) {
        const dt_rec *r = dt__wr_layout_pos_rec(l, k);
        uint32_t row = dt__wr_layout_pos_row(l, k);
        if (r) {
            int err = write_record(c, ls, o, r, row, dt__wr_layout_pos_flow(l, k));
            if (err)
                return err;
        } else {
            const dt_layout_span *sp = dt__wr_layout_pos_span(l, k);
            write_id_span(c, o, SPAN_HEAD("gpu_user_annotation"), sizeof SPAN_HEAD("gpu_user_annotation") - 1,
                          sp->name, row, sp->start, sp->end, sp->external_id);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Metadata and the devtrace key                                       */
/* ------------------------------------------------------------------ */
/* Small, rare output (metadata, the devtrace key) goes through these. */
#define put_lit dt__out_text
#define put_u64 dt__out_u64
#define put_cstr dt__json_cstr

static void put_double(dt_out *o, double v)
{
    char tmp[40];
    if (!isfinite(v))
        v = 0;
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    dt__out_write(o, tmp, (size_t)n);
}

static void meta_begin(ctx *c, dt_out *o, const char *what, uint64_t pid, uint64_t tid)
{
    put_lit(o, "{\"ph\":\"M\",\"name\":\"");
    put_lit(o, what);
    put_lit(o, "\",\"pid\":");
    put_u64(o, pid);
    put_lit(o, ",\"tid\":");
    put_u64(o, tid);
    put_lit(o, ",\"ts\":");
    char *p = dt__out_reserve(o, 32);
    dt__out_commit(o, dt__put_us3(p, c->l->window_start - c->l->base_ns));
    put_lit(o, ",\"args\":{");
}

static void write_process_meta(ctx *c, dt_out *o, const dt_layout_process *proc)
{
    meta_begin(c, o, "process_name", proc->pid, 0);
    put_lit(o, "\"name\":");
    put_cstr(o, proc->name);
    put_lit(o, "}},\n");
    if (proc->label) {
        meta_begin(c, o, "process_labels", proc->pid, 0);
        put_lit(o, "\"labels\":");
        put_cstr(o, proc->label);
        put_lit(o, "}},\n");
    }
    meta_begin(c, o, "process_sort_index", proc->pid, 0);
    put_lit(o, "\"sort_index\":");
    put_u64(o, proc->sort_index);
    put_lit(o, "}},\n");
}

static void write_metadata(ctx *c, dt_out *o)
{
    dt_layout *l = c->l;
    dt_layout_process proc;
    size_t cursor = 0;
    while (dt__wr_layout_next_process(l, &cursor, &proc))
        write_process_meta(c, o, &proc);
    dt_layout_row row;
    for (size_t f = 0; f < l->nfrows; f++) {
        dt__wr_layout_row_get(l, f, &row);
        meta_begin(c, o, "thread_name", row.pid, row.tid);
        put_lit(o, "\"name\":");
        put_cstr(o, row.name);
        put_lit(o, "}},\n");
    }
    uint64_t main_pid = dt__wr_layout_main_pid(l);
    if (dt__wr_layout_capture_row_free(l)) {
        meta_begin(c, o, "thread_name", main_pid, 0);
        put_lit(o, "\"name\":\"devtrace capture\"}},\n");
    }
    /* the list is followed by events, each written with a leading comma */
    meta_begin(c, o, "thread_sort_index", main_pid, 0);
    put_lit(o, "\"sort_index\":0}}");
}

static void write_device_properties(const dt_recording *rec, dt_out *o)
{
    char buf[2048];
    int first = 1;
    put_lit(o, "[");
    for (int d = 0; d < DT_MAX_DEVICES; d++) {
        if (!rec->devices[d].valid)
            continue;
        put_lit(o, first ? "\n  " : ",\n  ");
        first = 0;
        size_t n = dt__wr_device_props_json(&rec->devices[d], buf, sizeof buf);
        dt__out_write(o, buf, n < sizeof buf ? n : sizeof buf - 1);
    }
    put_lit(o, "]");
}

static void write_devtrace_key(ctx *c, dt_out *o)
{
    const dt_recording *rec = c->rec;
    const dt_layout *l = c->l;
    put_lit(o, "\"devtrace\": {\n  \"version\": ");
    put_cstr(o, DT_VERSION_STRING);
    put_lit(o, ",\n  \"backend\": ");
    put_cstr(o, rec->backend_name ? rec->backend_name : "none");
    put_lit(o, ",\n  \"vendor\": ");
    put_cstr(o, rec->vendor ? rec->vendor : "");
    put_lit(o, ",\n  \"library\": ");
    dt__json_string(o, rec->library, rec->library_len);
    put_lit(o, ",\n  \"libraryVersion\": ");
    dt__json_string(o, rec->library_version, rec->library_version_len);
    dt__wr_json_origin(o, rec);
    put_lit(o, ",\n  \"captureWindow\": {\"startNs\": ");
    put_u64(o, l->window_start);
    put_lit(o, ", \"endNs\": ");
    put_u64(o, l->window_end);
    put_lit(o, "},\n  \"clock\": {\"samples\": ");
    put_u64(o, rec->clock->count);
    put_lit(o, ", \"segments\": ");
    put_u64(o, rec->clock->segments);
    put_lit(o, ", \"slope\": ");
    put_double(o, rec->clock->slope);
    put_lit(o, ", \"offsetNs\": ");
    put_double(o, rec->clock->offset_ns);
    put_lit(o, ", \"errorBoundNs\": ");
    put_u64(o, rec->clock->error_bound_ns);
    put_lit(o, ", \"identity\": ");
    put_lit(o, rec->clock->identity ? "true" : "false");

    put_lit(o, "},\n  \"loss\": {");
    uint64_t total = 0;
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        uint64_t v = dt__wr_layout_loss(l, (dt_loss_reason)r);
        total += v;
        put_lit(o, r ? ", \"" : "\"");
        put_lit(o, dt_loss_reason_name((dt_loss_reason)r));
        put_lit(o, "\": ");
        put_u64(o, v);
    }
    put_lit(o, ", \"total\": ");
    put_u64(o, total);

    put_lit(o, "},\n  \"counts\": {");
    for (int k = 1; k <= DT_EVENT_KIND_MAX; k++) {
        put_lit(o, k > 1 ? ", \"" : "\"");
        put_lit(o, dt__fmt_event_kind_name(k));
        put_lit(o, "\": ");
        put_u64(o, dt__wr_layout_kind_count(l, k));
    }
    put_lit(o, ", \"flows\": ");
    put_u64(o, dt__wr_layout_flow_count(l));
    put_lit(o, ", \"launches\": ");
    put_u64(o, dt__wr_layout_launch_count(l));

    put_lit(o, "},\n  \"notes\": {");
    int first = 1;
    for (int k = 0; k < rec->note_count; k++) {
        const dt_recording_note *n = &rec->notes[k];
        int dup = 0;
        for (int j = 0; j < k && !dup; j++)
            dup = rec->notes[j].key_len == n->key_len && memcmp(rec->notes[j].key, n->key, n->key_len) == 0;
        if (dup)
            continue;
        put_lit(o, first ? "\n    " : ",\n    ");
        first = 0;
        dt__json_string(o, n->key, n->key_len);
        put_lit(o, ": ");
        dt__json_string(o, n->text, n->text_len);
    }
    if (dt__wr_layout_host_pid_shifted(l)) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "a host process id equal to a device id is written as that id + %llu",
                 (unsigned long long)DT_LAYOUT_HOST_PID_SHIFT);
        put_lit(o, first ? "\n    " : ",\n    ");
        first = 0;
        put_lit(o, "\"hostPid\": ");
        put_cstr(o, buf);
    }
    put_lit(o, "},\n  \"attribution\": {");
    size_t nattr = dt__wr_layout_attribution_count(l);
    for (size_t k = 0; k < nattr; k++) {
        uint64_t ext, ns;
        dt__wr_layout_attribution_get(l, k, &ext, &ns);
        put_lit(o, k ? ",\n    \"" : "\n    \"");
        put_u64(o, ext);
        put_lit(o, "\": ");
        put_u64(o, ns);
    }
    put_lit(o, "},\n  \"externalParents\": {");
    size_t nparents = dt__wr_layout_parent_count(l);
    for (size_t k = 0; k < nparents; k++) {
        uint64_t ext, range;
        dt__wr_layout_parent_get(l, k, &ext, &range);
        put_lit(o, k ? ",\n    \"" : "\n    \"");
        put_u64(o, ext);
        put_lit(o, "\": ");
        put_u64(o, range);
    }
    put_lit(o, "}\n}");
}

static void write_trace(ctx *c, dt_out *o, const char *path)
{
    const dt_recording *rec = c->rec;
    const dt_layout *l = c->l;
    put_lit(o, "{\n\"schemaVersion\": 1,\n");
    dt__wr_json_distributed_info(o, rec);
    put_lit(o, "\"deviceProperties\": ");
    write_device_properties(rec, o);
    put_lit(o, ",\n\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ");
    put_u64(o, l->base_ns);
    put_lit(o, ",\n\"traceEvents\": [\n");
    write_metadata(c, o);

    /* the capture window: the Trace event on its own row */
    char *p = dt__out_reserve(o, DT_JSON_EVENT_ROOM);
    DT_PUT_LIT(p, ",\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace capture\",\"pid\":");
    p = dt__put_u64(p, dt__wr_layout_main_pid(c->l));
    DT_PUT_LIT(p, ",\"tid\":0,\"ts\":");
    p = dt__put_us3(p, l->window_start - l->base_ns);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt__put_us3(p, l->window_end - l->window_start);
    DT_PUT_LIT(p, ",\"args\":{}}");
    dt__out_commit(o, p);

    size_t units = (l->items + UNIT_EVENTS - 1) / UNIT_EVENTS;
    if (dt__out_units(o, units, c->lanes, format_unit, c) != 0)
        return;
    put_lit(o, "\n],\n");
    write_devtrace_key(c, o);
    put_lit(o, ",\n\"traceName\": ");
    put_cstr(o, path);
    put_lit(o, "\n}\n");
}

static int write_file(void *arg, dt_out *o)
{
    ctx *c = arg;
    uint64_t t = dt__monotonic_ns();
    write_trace(c, o, c->path);
    c->bytes = o->bytes;
    c->format_ns = dt__monotonic_ns() - t;
    return o->err;
}

static void ctx_free(ctx *c)
{
    dt__free(c->names);
    dt__free(c->name_off);
    dt__free(c->name_len);
    dt__free(c->prefix);
    dt__free(c->prefix_off);
    dt__free(c->prefix_len);
    for (int k = 0; k < DT_OUT_MAX_LANES; k++) {
        for (int d = 0; d <= DT_MAX_DEVICES; d++)
            dt__free(c->lane[k].kcache[d]);
        dt__free(c->lane[k].kfrag);
    }
    dt__wr_layout_free(c->l);
}

dt_status dt__wr_chrome(const dt_recording *rec, const char *path, int fd, int gzip)
{

    ctx *c = dt__calloc(1, sizeof *c);
    if (!c)
        return dt__error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    c->rec = rec;
    c->path = path;
    c->lanes = dt__out_lanes();
    uint64_t t0 = dt__monotonic_ns();
    c->l = dt__wr_layout_build(rec);
    uint64_t t1 = dt__monotonic_ns();
    if (c->l) {
        for (int k = 0; k < 2; k++) {
            /* (an api prefix too long for it is written piece by piece) */
            int n = snprintf(c->api_cat[k].text, 64, "\"%s_%s\"", c->l->api_prefix, k ? "driver" : "runtime");
            c->api_cat[k].len = n > 0 && n < 64 ? (uint32_t)n : 0;
        }
    }
    if (!c->l || escape_names(c) != 0 || row_prefixes(c) != 0) {
        ctx_free(c);
        dt__free(c);
        return dt__error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    }
    uint64_t t2 = dt__monotonic_ns();
    int err = dt__write_output(path, fd, gzip, write_file, c);
    uint64_t bytes = c->bytes;
    if (err == 0) {
        double cl, sp, rows;
        dt__wr_layout_phases(c->l, &cl, &sp, &rows);
        dt__log("wrote %s in %.3f s: layout %.3f (classify %.3f, annotation spans beside the rows %.3f, their rows %.3f), "
               "names %.3f, "
               "format and write %.3f on %d thread(s)",
               path, (double)(t2 - t0 + c->format_ns) * 1e-9, (double)(t1 - t0) * 1e-9, cl, sp, rows,
               (double)(t2 - t1) * 1e-9, (double)c->format_ns * 1e-9, c->lanes);
    }
    ctx_free(c);
    dt__free(c);
    if (err == ENOMEM)
        return dt__error(DT_ERR_NO_MEMORY, "out of memory while writing the trace %s", path);
    if (err != 0)
        return dt__error(DT_ERR_IO, "cannot write trace %s: %s", path, strerror(err));
    dt__log("wrote %s: %llu bytes of JSON, %llu events", path, (unsigned long long)bytes,
           (unsigned long long)rec->store->count);
    return DT_OK;
}
