/*
 * Decoding CUPTI-shaped activity buffers through a vendor's layout table:
 * the record walk (the vendor's iterator, bounds-checked, or the layouts'
 * own strides) and one decoder per record class reading each field where
 * the chosen layout says it is.
 */
#include "backends/engine/engine_walk.h"

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
        const uint32_t *graph = driver ? v->api_ids.graph_driver : v->api_ids.graph_runtime;
        n = driver ? v->api_ids.graph_driver_count : v->api_ids.graph_runtime_count;
        for (uint32_t i = 0; i < n; i++) d->graph_maybe[driver] |= UINT64_C(1) << (graph[i] % 64);
    }
    for (size_t i = 0; d->set->records[i].size && d->count < DT_DECODER_MAX_LAYOUTS; i++) {
        const dt_record_layout *l = &d->set->records[i];
        prepare(&d->plans[d->count], l);
        d->plans[d->count].at = (uint8_t)d->count;
        if (l->kind < 64 && !d->index[l->kind]) d->index[l->kind] = (uint8_t)(d->count + 1);
        d->count++;
    }
}

const dt_record_layout *dt__decoder_layout(const dt_decoder *d, uint32_t kind)
{
    const dt_plan *P = eng_find_plan(d, kind);
    return P ? P->layout : NULL;
}


static size_t stride_of(const dt_decoder *d, uint32_t kind)
{
    const dt_plan *P = eng_find_plan(d, kind);
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
        size_t sz = stride_of(d, eng_kind_at(cur));
        if (sz == 0) return r->invalid_kind;
        off = (size_t)(cur - buffer) + sz;
    }
    if (valid < sizeof(uint32_t) || off > valid - sizeof(uint32_t)) return r->max_limit_reached;
    size_t sz = stride_of(d, eng_kind_at(buffer + off));
    if (sz == 0) return r->invalid_kind;
    if (sz > valid - off) return r->max_limit_reached;
    *record = buffer + off;
    return r->success;
}

void dt__decoder_count_graph_listed(const dt_decoder *d, int driver, uint32_t cbid)
{
    const dt_vendor_api_ids *ids = &d->v->api_ids;
    if (driver ? dt__engine_listed(ids->graph_driver, ids->graph_driver_count, cbid)
               : dt__engine_listed(ids->graph_runtime, ids->graph_runtime_count, cbid))
        d->graph_counted[driver ? 1 : 0]++;
}

int dt__decoder_is_launch_listed(const dt_decoder *d, int driver, uint32_t cbid)
{
    const dt_vendor_api_ids *ids = &d->v->api_ids;
    return driver ? dt__engine_listed(ids->launch_driver, ids->launch_driver_count, cbid)
                  : dt__engine_listed(ids->launch_runtime, ids->launch_runtime_count, cbid);
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

uint32_t dt__decoder_api_name_miss(dt_walk_ctx *cx, int driver, uint32_t cbid, uint64_t key)
{
    const dt_vendor *v = cx->d->v;
    return dt__api_names_add(&cx->api, cx->s, key, dt__decoder_api_name(cx->d, driver, cbid),
                            driver ? v->names.driver_fallback : v->names.runtime_fallback, cbid);
}


#define F(field) eng_rd(p, L, field, wide)
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

static void decode_device(dt_walk_ctx *cx, const dt_plan *L, const uint8_t *p)
{
    dt_device_props props;
    device_props(L, p, &props);
    remember_device(cx->d, &props);
    dt__core_set_device(cx->s, &props);
}

#undef F

void dt__decoder_device(dt_walk_ctx *cx, const dt_plan *L, const uint8_t *p)
{
    decode_device(cx, L, p);
}

/* P: the record's prepared layout (NULL: none); avail: bytes from p to the
   end of the valid part of the buffer. */
void dt__decoder_one(dt_walk_ctx *cx, const dt_plan *P, uint32_t kind, const uint8_t *p, size_t avail)
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
    eng_class(cx, P, NULL, p, 0);
}

void dt__decoder_run(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid, dt_vendor_next_fn next)
{
    if (d->set && d->set->walk) d->set->walk(d, s, buffer, valid, next);
    else dt__decoder_walk_as(d, s, buffer, valid, next, NULL, 0);
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
        const dt_plan *P = eng_find_plan(d, eng_kind_at(p));
        if (P && P->cls == DT_RC_DEVICE && (size_t)(end - p) >= P->need) {
            dt_device_props props;
            device_props(P, p, &props);
            remember_device(d, &props);
        }
        prev = p;
    }
}
