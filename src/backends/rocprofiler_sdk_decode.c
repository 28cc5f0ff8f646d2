/*
 * Decoding rocprofiler-sdk buffer records: the array of record headers a
 * buffer callback receives, each pointing at a self-sizing record. A record
 * is read only where its own size covers the fields, so a record of a newer
 * release (longer) decodes, and one whose size is impossible is counted as
 * malformed; a header of a category or kind devtrace does not decode is
 * counted as unknown_kind. Headers are independent of each other: a bad one
 * costs only itself.
 */
#include "base/hash.h"
#include "backends/common/api_names.h"
#include "backends/rocprofiler_sdk.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Larger than any record of any release: a size beyond it is corrupt. */
#define RSDK_MAX_RECORD_SIZE 4096u

void dt__rsdk_decoder_init(dt_rsdk_decoder *d, uint32_t version)
{
    memset(d, 0, sizeof *d);
    d->version = version;
    d->pid = (uint32_t)getpid();
    pthread_mutex_init(&d->kernel_lock, NULL);
    pthread_mutex_init(&d->call_lock, NULL);
}

void dt__rsdk_decoder_free(dt_rsdk_decoder *d)
{
    for (uint32_t i = 0; i < d->kernel_count; i++) dt__free(d->kernels[i].name);
    dt__free(d->kernels);
    dt__free(d->kernel_index);
    dt__free(d->queues);
    dt__free(d->api_names);
    dt__free(d->launches);
    pthread_mutex_destroy(&d->kernel_lock);
    pthread_mutex_destroy(&d->call_lock);
    memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------------ */
/* Agents                                                              */
/* ------------------------------------------------------------------ */
/* Name an absent property once, whichever agents lack it. */
static void say_missing(char *missing, size_t len, const char *what)
{
    size_t used = strlen(missing);
    if (used < len && !strstr(missing, what)) snprintf(missing + used, len - used, "%s%s", used ? ", " : "", what);
}

void dt__rsdk_decoder_add_agent(dt_rsdk_decoder *d, const rsdk_agent *a, size_t avail, dt_device_props *props,
                               char *missing, size_t missing_len)
{
    props->valid = 0;
    if (!a || avail < offsetof(rsdk_agent, cpu_cores_count) || d->agent_count == DT_RSDK_MAX_AGENTS) return;
    /* fields the agent's own size does not cover are absent, not zero */
    size_t have = a->size < avail ? (size_t)a->size : avail;
    dt_rsdk_agent *e = &d->agents[d->agent_count++];
    e->handle = a->id.handle;
    e->gpu = a->type == RSDK_AGENT_TYPE_GPU;
    e->device = e->gpu ? (uint16_t)d->gpu_count++ : 0;
    if (!e->gpu) return;
#define HAVE(field) (offsetof(rsdk_agent, field) + sizeof(a->field) <= have)
    memset(props, 0, sizeof *props);
    props->valid = 1;
    props->id = e->device;
    const char *name = HAVE(product_name) && a->product_name && a->product_name[0] ? a->product_name
                       : HAVE(name) && a->name ? a->name : NULL;
    if (name) snprintf(props->name, sizeof props->name, "%s", name);
    else say_missing(missing, missing_len, "name");
    if (HAVE(local_mem_size)) props->total_global_mem = a->local_mem_size;
    /* gfx_target_version is major*10000 + minor*100 + stepping: gfx942 is 90402 */
    if (HAVE(gfx_target_version)) {
        props->compute_major = (int)(a->gfx_target_version / 10000 % 100);
        props->compute_minor = (int)(a->gfx_target_version / 100 % 100);
    }
    if (HAVE(workgroup_max_size)) props->max_threads_per_block = (int)a->workgroup_max_size;
    if (HAVE(wave_front_size)) props->warp_size = (int)a->wave_front_size;
    if (HAVE(max_waves_per_cu)) props->max_threads_per_sm = (int)(a->max_waves_per_cu * a->wave_front_size);
    if (HAVE(cu_count)) props->num_sms = (int)a->cu_count;
    /* LDS is allocated per compute unit; a work-group may use all of it */
    if (HAVE(lds_size_in_kb)) {
        props->shared_mem_per_sm = (uint64_t)a->lds_size_in_kb * 1024u;
        props->shared_mem_per_block = props->shared_mem_per_block_optin = props->shared_mem_per_sm;
    }
#undef HAVE
    /* rocprofiler-sdk's agents do not describe register files or a
       resident-block limit: those properties stay absent (0) */
    say_missing(missing, missing_len, "regsPerBlock, regsPerMultiprocessor and the blocks-per-CU limit");
}

/* devtrace's device id for an agent; an agent the SDK did not list (its
   query failed or was not bound) gets the next id, and is counted. */
static uint16_t agent_device(dt_rsdk_decoder *d, uint64_t handle)
{
    for (uint32_t i = 0; i < d->agent_count; i++)
        if (d->agents[i].handle == handle) return d->agents[i].device;
    atomic_fetch_add_explicit(&d->unknown_agents, 1, memory_order_relaxed);
    if (d->agent_count == DT_RSDK_MAX_AGENTS) return 0;
    dt_rsdk_agent *e = &d->agents[d->agent_count++];
    e->handle = handle;
    e->gpu = 1;
    e->device = (uint16_t)d->gpu_count++;
    return e->device;
}

/* The row of an HSA queue: numbered from 1 in order of first use. */
static uint32_t queue_lane(dt_rsdk_decoder *d, uint64_t handle)
{
    for (uint32_t i = d->queue_count; i-- > 0;)
        if (d->queues[i] == handle) return i + 1;
    if (d->queue_count == d->queue_cap) {
        uint32_t cap = d->queue_cap ? d->queue_cap * 2 : 16;
        uint64_t *q = dt__realloc(d->queues, cap * sizeof *q);
        if (!q) return UINT32_MAX;
        d->queues = q;
        d->queue_cap = cap;
    }
    d->queues[d->queue_count++] = handle;
    return d->queue_count;
}

/* ------------------------------------------------------------------ */
/* Kernels                                                             */
/* ------------------------------------------------------------------ */
static uint32_t kernel_slot(uint64_t id, uint32_t mask)
{
    return (uint32_t)dt__hash_slot(id, 32) & mask;
}

int dt__rsdk_is_fill_kernel(const char *name)
{
    /* ROCclr's blit kernels for hipMemset* (clr: rocclr/device/blit*.cpp) */
    return name && (strncmp(name, "__amd_rocclr_fillBuffer", 23) == 0 ||
                    strncmp(name, "__amd_rocclr_fillImage", 22) == 0);
}

static const dt_rsdk_kernel *find_kernel(const dt_rsdk_decoder *d, uint64_t id)
{
    if (!d->kernel_index) return NULL;
    for (uint32_t i = kernel_slot(id, d->kernel_mask);; i = (i + 1) & d->kernel_mask) {
        uint32_t k = d->kernel_index[i];
        if (!k) return NULL;
        if (d->kernels[k - 1].kernel_id == id) return &d->kernels[k - 1];
    }
}

static int grow_kernels(dt_rsdk_decoder *d)
{
    if (d->kernel_count == d->kernel_cap) {
        uint32_t cap = d->kernel_cap ? d->kernel_cap * 2 : 256;
        dt_rsdk_kernel *k = dt__realloc(d->kernels, cap * sizeof *k);
        if (!k) return -1;
        d->kernels = k;
        d->kernel_cap = cap;
    }
    if (!d->kernel_index || (d->kernel_count + 1) * 2 > d->kernel_mask + 1) {
        uint32_t slots = d->kernel_index ? (d->kernel_mask + 1) * 2 : 512;
        uint32_t *index = dt__calloc(slots, sizeof *index);
        if (!index) return -1;
        for (uint32_t k = 0; k < d->kernel_count; k++) {
            uint32_t i = kernel_slot(d->kernels[k].kernel_id, slots - 1);
            while (index[i]) i = (i + 1) & (slots - 1);
            index[i] = k + 1;
        }
        dt__free(d->kernel_index);
        d->kernel_index = index;
        d->kernel_mask = slots - 1;
    }
    return 0;
}

int dt__rsdk_decoder_add_kernel(dt_rsdk_decoder *d, const rsdk_kernel_symbol *sym)
{
    if (!sym || sym->size < offsetof(rsdk_kernel_symbol, sgpr_count)) return 0;
#define HAVE(field) (offsetof(rsdk_kernel_symbol, field) + sizeof(sym->field) <= sym->size)
    uint32_t registers = HAVE(arch_vgpr_count) ? sym->arch_vgpr_count : 0;
    /* accumulation VGPRs come out of the same per-lane register file */
    if (HAVE(accum_vgpr_count)) registers += sym->accum_vgpr_count;
#undef HAVE
    const char *raw = sym->kernel_name ? sym->kernel_name : "";
    /* the name is the HSA executable symbol's: a kernel descriptor's, which
       code objects v3 on name <kernel>.kd; the kernel's own name is the
       rest (the one the demangler and other vendors know) */
    size_t len = strlen(raw);
    if (len > 3 && memcmp(raw + len - 3, ".kd", 3) == 0) len -= 3;
    char *name = dt__malloc(len + 1);
    if (!name) return -1;
    memcpy(name, raw, len);
    name[len] = '\0';
    pthread_mutex_lock(&d->kernel_lock);
    dt_rsdk_kernel *old = (dt_rsdk_kernel *)find_kernel(d, sym->kernel_id);
    int rc = 0;
    if (old) {
        dt__free(old->name);
        old->name = name;
        old->registers = registers;
        old->static_lds = sym->group_segment_size;
        old->fill = (uint8_t)dt__rsdk_is_fill_kernel(name);
    } else if (grow_kernels(d) == 0) {
        dt_rsdk_kernel *k = &d->kernels[d->kernel_count++];
        *k = (dt_rsdk_kernel){sym->kernel_id, name, registers, sym->group_segment_size,
                              (uint8_t)dt__rsdk_is_fill_kernel(name)};
        uint32_t i = kernel_slot(k->kernel_id, d->kernel_mask);
        while (d->kernel_index[i]) i = (i + 1) & d->kernel_mask;
        d->kernel_index[i] = d->kernel_count;
    } else {
        dt__free(name);
        rc = -1;
    }
    pthread_mutex_unlock(&d->kernel_lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Fill sizes                                                          */
/* ------------------------------------------------------------------ */
static void note_call(dt_rsdk_decoder *d, const dt_rsdk_call *c)
{
    if (!c->correlation) return;
    pthread_mutex_lock(&d->call_lock);
    dt_rsdk_call *f = &d->calls[c->correlation & (DT_RSDK_CALL_SLOTS - 1)];
    /* correlation ids count up: a slot still taken holds a call whose
       dispatch never came (or comes much later: a fill without its size) */
    if (f->correlation && !f->launch) atomic_fetch_add_explicit(&d->fills_unrecorded, 1, memory_order_relaxed);
    if (!f->correlation) atomic_fetch_add_explicit(&d->awaiting, 1, memory_order_relaxed);
    *f = *c;
    pthread_mutex_unlock(&d->call_lock);
}

void dt__rsdk_decoder_note_fill(dt_rsdk_decoder *d, uint64_t correlation, uint64_t bytes, uint32_t value, int async)
{
    note_call(d, &(dt_rsdk_call){correlation, bytes, value, (uint8_t)(async != 0), 0});
}

void dt__rsdk_decoder_note_launch(dt_rsdk_decoder *d, uint64_t correlation)
{
    note_call(d, &(dt_rsdk_call){.correlation = correlation, .launch = 1});
}

static uint64_t take_launches(dt_rsdk_decoder *d);

uint64_t dt__rsdk_decoder_take_awaiting(dt_rsdk_decoder *d)
{
    uint64_t n = 0;
    pthread_mutex_lock(&d->call_lock);
    for (size_t i = 0; i < DT_RSDK_CALL_SLOTS; i++) {
        n += d->calls[i].correlation != 0;
        d->calls[i].correlation = 0;
    }
    atomic_store_explicit(&d->awaiting, 0, memory_order_relaxed);
    pthread_mutex_unlock(&d->call_lock);
    return n + take_launches(d);
}

/* The call that made this dispatch, taken: 1 with *out. */
static int take_call(dt_rsdk_decoder *d, uint64_t correlation, dt_rsdk_call *out)
{
    if (!correlation || !atomic_load_explicit(&d->awaiting, memory_order_relaxed)) return 0;
    pthread_mutex_lock(&d->call_lock);
    dt_rsdk_call *f = &d->calls[correlation & (DT_RSDK_CALL_SLOTS - 1)];
    int hit = f->correlation == correlation;
    if (hit) {
        *out = *f;
        f->correlation = 0;
        atomic_fetch_sub_explicit(&d->awaiting, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&d->call_lock);
    return hit;
}

/* ------------------------------------------------------------------ */
/* Launches matched with their dispatches                              */
/* ------------------------------------------------------------------ */
/* A launch's HIP API record and its dispatch record come in different
   buffers, delivered in either order, on the decoding thread. Each is
   entered in a slot by its correlation id, as the side it is; the other
   side completes the slot. A launch whose dispatch never came is one whose
   kernel was still running at stop: the SDK writes a dispatch's record only
   when the kernel completes (inferred, not read from the SDK's headers; the
   emulator models it so). Dispatches of no launch operation (fill kernels,
   graph launches, a second dispatch of one call) leave a slot with their
   side only, which is never counted. */
_Static_assert(offsetof(rsdk_api_record, correlation_id.internal) ==
                   offsetof(rsdk_api_record_ancestor, correlation_id.internal) &&
               offsetof(rsdk_api_record, operation) == offsetof(rsdk_api_record_ancestor, operation),
               "an API record's operation and correlation id are read the same way in both layouts");
#define SIDE_LAUNCH 1u
#define SIDE_DISPATCH 2u
#define SIDES 3u

int dt__rsdk_decoder_match_launches(dt_rsdk_decoder *d, const int32_t *ops, size_t n, size_t buffer_bytes)
{
    /* The records of one launch are apart by at most about what the SDK's
       buffers hold undelivered (it keeps two of each), in correlation ids:
       twice the API records a buffer holds, rounded up to a power of two,
       fits that. Past it (a kernel still running after that many more
       calls, a buffer held back longer), a newer id takes the slot and the
       older call is forgotten: a launch not counted when still running at
       stop, never one counted that was not (a record older than its
       slot's is ignored). */
    uint64_t want = (uint64_t)buffer_bytes / sizeof(rsdk_api_record) * 2;
    uint32_t slots = DT_RSDK_CALL_SLOTS;
    while (slots < want && slots < (1u << 22)) slots *= 2;
    uint64_t *table = dt__calloc(slots, sizeof *table);
    if (!table) return -1;
    dt__free(d->launches);
    d->launches = table;
    d->launch_mask = slots - 1;
    d->launch_low = UINT64_MAX;
    d->launch_high = 0;
    memset(d->launch_ops, 0, sizeof d->launch_ops);
    for (size_t i = 0; i < n; i++)
        if (ops[i] >= 0 && ops[i] < DT_RSDK_MAX_OPS) d->launch_ops[ops[i] / 64] |= UINT64_C(1) << (ops[i] % 64);
    return 0;
}

int dt__rsdk_decoder_matches_launches(const dt_rsdk_decoder *d, uint32_t capture)
{
    /* API records arrive only when they are captured, and dispatches only
       when kernels are: a launch is awaited only where both come */
    return d->launches && (capture & DT_CAPTURE_RUNTIME) && (capture & DT_CAPTURE_KERNEL);
}

static int is_launch_op(const dt_rsdk_decoder *d, int32_t op)
{
    return op >= 0 && op < DT_RSDK_MAX_OPS && (d->launch_ops[op / 64] >> (op % 64) & 1);
}

/* One side of a correlation id was decoded. */
static inline void saw(dt_rsdk_decoder *d, uint64_t correlation, unsigned side)
{
    /* 0 is no id; ids count up from 1 and never come near 2^62, which the
       slot's two side bits would not hold (one unsigned test for both) */
    if (correlation - 1 >= (UINT64_C(1) << 62) - 1) return;
    uint64_t *slot = &d->launches[correlation & d->launch_mask];
    uint64_t held = *slot >> 2;
    if (held == correlation) {
        *slot |= side;
    } else if (held < correlation) {
        *slot = correlation << 2 | side;
        if (correlation < d->launch_low) d->launch_low = correlation;
        if (correlation > d->launch_high) d->launch_high = correlation;
    }
    /* else: a call older than the slot's, already forgotten */
}

/* Only the slots of the ids written since the last take are visited: a
   stop costs what the session decoded, not the table's size. */
static uint64_t take_launches(dt_rsdk_decoder *d)
{
    if (!d->launches || d->launch_low > d->launch_high) return 0;
    uint64_t span = d->launch_high - d->launch_low;
    uint64_t count = span < d->launch_mask ? span + 1 : (uint64_t)d->launch_mask + 1;
    uint64_t n = 0;
    for (uint64_t i = 0, at = d->launch_low & d->launch_mask; i < count; i++, at = (at + 1) & d->launch_mask) {
        n += (d->launches[at] & SIDES) == SIDE_LAUNCH;
        d->launches[at] = 0;
    }
    d->launch_low = UINT64_MAX;
    d->launch_high = 0;
    return n;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
/* Per buffer: what records repeat, looked up once. Slots are direct
   mapped by a hash of the key; a slot's key + 1 is stored (0: empty). */
#define CX_SLOTS 64
typedef struct decode_ctx {
    dt_rsdk_decoder *d;
    dt_session *s;
    uint32_t capture;
    dt_decode_cache cache;
    struct { uint64_t key; uint16_t device; } agent[CX_SLOTS];
    struct { uint64_t key; uint32_t lane; } queue[CX_SLOTS];
    /* a dispatch's launch configuration, from its raw dimensions */
    struct { rsdk_dim3 grid, group; uint32_t lds; uint64_t kernel; uint32_t config; int used; } launch[CX_SLOTS];
    dt_api_names api; /* key: (uint32_t)op + 1 */
} decode_ctx;

static size_t cx_slot(uint64_t key)
{
    return dt__hash_slot(key, 6);
}
_Static_assert(CX_SLOTS == 64, "cx_slot() yields 6 bits");

static uint16_t device_of(decode_ctx *cx, uint64_t handle)
{
    __typeof__(cx->agent[0]) *e = &cx->agent[cx_slot(handle)];
    if (e->key != handle + 1) {
        e->device = agent_device(cx->d, handle);
        e->key = handle + 1;
    }
    return e->device;
}

/* UINT32_MAX: out of memory */
static uint32_t lane_of(decode_ctx *cx, uint64_t handle)
{
    __typeof__(cx->queue[0]) *e = &cx->queue[cx_slot(handle)];
    if (e->key != handle + 1) {
        uint32_t lane = queue_lane(cx->d, handle);
        if (lane == UINT32_MAX) return lane;
        e->lane = lane;
        e->key = handle + 1;
    }
    return e->lane;
}

/* The External id devtrace pushed rides in the records as id + 1 (0: none
   pushed, since the SDK gives 0 where nothing was). */
static inline void link_external(dt_session *s, uint64_t correlation, uint64_t external)
{
    if (external && correlation) dt__corr_link(s, correlation, external - 1);
}

static inline int dim3_equal(const rsdk_dim3 *a, const rsdk_dim3 *b)
{
    return ((a->x ^ b->x) | (a->y ^ b->y) | (a->z ^ b->z)) == 0;
}

static uint32_t div_up(uint32_t work_items, uint32_t group)
{
    return group ? work_items / group + (work_items % group != 0) : work_items;
}

/* The launch configuration of a dispatch (UINT32_MAX: out of memory). */
static uint32_t launch_config(decode_ctx *cx, const rsdk_kernel_dispatch_info *info, const dt_rsdk_kernel *k)
{
    uint64_t kernel = k ? k->kernel_id + 1 : 0;
    uint64_t key = ((uint64_t)info->grid_size.x << 32 | info->workgroup_size.x) ^
                   ((uint64_t)info->grid_size.y * 0x9e3779b9u + info->group_segment_size) ^ kernel * 0x85ebca6bu ^
                   ((uint64_t)info->grid_size.z << 16 | info->workgroup_size.y << 8 | info->workgroup_size.z);
    __typeof__(cx->launch[0]) *e = &cx->launch[cx_slot(key)];
    if (e->used && e->kernel == kernel && e->lds == info->group_segment_size &&
        dim3_equal(&e->grid, &info->grid_size) && dim3_equal(&e->group, &info->workgroup_size))
        return e->config;
    dt_launch_config cfg;
    memset(&cfg, 0, sizeof cfg); /* hashed and compared bytewise when interned */
    /* HSA grids count work-items; devtrace's, like CUDA's, work-groups */
    cfg.grid[0] = (int32_t)div_up(info->grid_size.x, info->workgroup_size.x);
    cfg.grid[1] = (int32_t)div_up(info->grid_size.y, info->workgroup_size.y);
    cfg.grid[2] = (int32_t)div_up(info->grid_size.z, info->workgroup_size.z);
    cfg.block[0] = (int32_t)info->workgroup_size.x;
    cfg.block[1] = (int32_t)info->workgroup_size.y;
    cfg.block[2] = (int32_t)info->workgroup_size.z;
    uint32_t declared = k ? k->static_lds : 0;
    cfg.registers_per_thread = k ? k->registers : 0;
    /* the dispatch's group segment is the kernel's own plus what the launch
       asked for */
    cfg.static_shared_memory = declared <= info->group_segment_size ? declared : info->group_segment_size;
    cfg.dynamic_shared_memory = info->group_segment_size - cfg.static_shared_memory;
    uint32_t config = dt__decode_launch_config(cx->s, &cx->cache, &cfg);
    if (config != UINT32_MAX) {
        e->grid = info->grid_size;
        e->group = info->workgroup_size;
        e->lds = info->group_segment_size;
        e->kernel = kernel;
        e->config = config;
        e->used = 1;
    }
    return config;
}

static void decode_dispatch(decode_ctx *cx, const rsdk_kernel_dispatch_record *r)
{
    const rsdk_kernel_dispatch_info *info = &r->dispatch_info;
    dt_session *s = cx->s;
    uint64_t corr = r->correlation_id.internal;
    const dt_rsdk_kernel *k = find_kernel(cx->d, info->kernel_id);
    dt_rsdk_call fill;
    int is_fill = take_call(cx->d, corr, &fill) && !fill.launch;
    if (!is_fill && k && k->fill) {
        is_fill = 1;
        fill = (dt_rsdk_call){corr, 0, 0, 0, 0};
        atomic_fetch_add_explicit(&cx->d->fills_without_size, 1, memory_order_relaxed);
    }
    if (!(cx->capture & (is_fill ? DT_CAPTURE_MEMSET : DT_CAPTURE_KERNEL))) return;
    uint32_t device = device_of(cx, info->agent_id.handle);
    uint32_t lane = lane_of(cx, info->queue_id);
    if (lane == UINT32_MAX) {
        dt__loss_add(s, DT_LOSS_STORE_FULL, 1); /* out of memory for the queue's row */
        return;
    }
    dt_rec *rec;
    if (is_fill) {
        dt_fill f = {.start = r->start_timestamp, .end = r->end_timestamp, .correlation = corr, .bytes = fill.bytes,
                     .device = device, .stream = lane, .value = fill.value,
                     .memory_kind = DT_MEM_DEVICE, .async = fill.async};
        rec = dt__add_fill(s, &cx->cache, &f);
    } else {
        uint32_t config = launch_config(cx, info, k);
        if (!k) atomic_fetch_add_explicit(&cx->d->unknown_kernels, 1, memory_order_relaxed);
        uint32_t name = dt__decode_kernel_name(s, &cx->cache, k ? k->name : NULL);
        rec = dt__add_device_activity(s, DT_EVENT_KERNEL, r->start_timestamp, r->end_timestamp, corr, device, lane,
                                     0, config == UINT32_MAX ? UINT32_MAX : name);
        if (rec) {
            rec->u.kernel.config = config;
            rec->u.kernel.queued_delta = rec->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
        }
    }
    if (rec) link_external(s, corr, r->correlation_id.external.value);
}

static void decode_copy(decode_ctx *cx, const rsdk_memory_copy_record *r)
{
    if (!(cx->capture & DT_CAPTURE_MEMCPY)) return;
    static const uint8_t copy_kind[RSDK_MEMORY_COPY_LAST] = {
        [RSDK_MEMORY_COPY_HOST_TO_HOST] = DT_COPY_HTOH, [RSDK_MEMORY_COPY_HOST_TO_DEVICE] = DT_COPY_HTOD,
        [RSDK_MEMORY_COPY_DEVICE_TO_HOST] = DT_COPY_DTOH, [RSDK_MEMORY_COPY_DEVICE_TO_DEVICE] = DT_COPY_DTOD};
    uint32_t op = r->operation < RSDK_MEMORY_COPY_LAST ? r->operation : RSDK_MEMORY_COPY_NONE;
    uint16_t src = device_of(cx, r->src_agent_id.handle), dst = device_of(cx, r->dst_agent_id.handle);
    dt_copy c = {
        .start = r->start_timestamp, .end = r->end_timestamp, .correlation = r->correlation_id.internal,
        .bytes = r->bytes, .src_device = src, .dst_device = dst, .copy_kind = copy_kind[op],
        /* whether host memory was pinned is not in the record */
        .src_kind = op == RSDK_MEMORY_COPY_DEVICE_TO_HOST || op == RSDK_MEMORY_COPY_DEVICE_TO_DEVICE
                        ? DT_MEM_DEVICE : DT_MEM_UNKNOWN,
        .dst_kind = op == RSDK_MEMORY_COPY_HOST_TO_DEVICE || op == RSDK_MEMORY_COPY_DEVICE_TO_DEVICE
                        ? DT_MEM_DEVICE : DT_MEM_UNKNOWN,
    };
    /* the GPU that did the copy: the destination of an upload, else the
       source; copies name no queue, so they share their device's row 0 */
    c.device = op == RSDK_MEMORY_COPY_HOST_TO_DEVICE ? dst : src;
    if (op == RSDK_MEMORY_COPY_DEVICE_TO_DEVICE && src != dst) c.copy_kind = DT_COPY_PTOP;
    if (dt__add_copy(cx->s, &cx->cache, &c)) link_external(cx->s, c.correlation, r->correlation_id.external.value);
}

static uint32_t api_name(decode_ctx *cx, int32_t op)
{
    uint64_t key = (uint64_t)(uint32_t)op + 1u;
    uint32_t id;
    if (dt__api_names_find(&cx->api, key, &id)) return id;
    const dt_rsdk_decoder *d = cx->d;
    const char *known = op >= 0 && (uint32_t)op < d->api_name_count ? d->api_names[op] : NULL;
    return dt__api_names_add(&cx->api, cx->s, key, known, "HIP", op);
}

static void decode_api(decode_ctx *cx, const uint8_t *p, uint64_t size)
{
    if (!(cx->capture & DT_CAPTURE_RUNTIME)) return;
    uint64_t internal, external, start, end, thread;
    int32_t op;
    memcpy(&op, p + offsetof(rsdk_api_record, operation), sizeof op);
    /* a record as long as the one with `ancestor` is that one, from the
       release that added it on */
    if (size >= sizeof(rsdk_api_record_ancestor) && cx->d->version >= RSDK_ANCESTOR_VERSION) {
        const rsdk_api_record_ancestor *r = (const void *)p;
        internal = r->correlation_id.internal;
        external = r->correlation_id.external.value;
        start = r->start_timestamp;
        end = r->end_timestamp;
        thread = r->thread_id;
    } else {
        const rsdk_api_record *r = (const void *)p;
        internal = r->correlation_id.internal;
        external = r->correlation_id.external.value;
        start = r->start_timestamp;
        end = r->end_timestamp;
        thread = r->thread_id;
    }
    dt_rec *rec = dt__add_api_call(cx->s, DT_EVENT_RUNTIME, start, end, internal, cx->d->pid, (uint32_t)thread,
                                  api_name(cx, op), (uint32_t)op, 0);
    /* the call's own id: one that launches nothing (hipStreamSynchronize)
       shares no device record's correlation id */
    if (rec && external) {
        rec->external_id = external - 1;
        rec->flags |= DT_REC_HAS_EXTERNAL;
    }
}

static void unknown(decode_ctx *cx, uint32_t category, uint32_t kind)
{
    dt__loss_add(cx->s, DT_LOSS_UNKNOWN_KIND, 1);
    dt__core_note(cx->s, "unknown_kind",
                    "rocprofiler-sdk delivered records of category %u, kind %u, which devtrace does not decode",
                    (unsigned)category, (unsigned)kind);
}

/* Records ahead whose payloads are asked for before they are decoded. */
#define DECODE_AHEAD 6u

void dt__rsdk_decode(dt_rsdk_decoder *d, dt_session *s, rsdk_record_header *const *headers, size_t n)
{
    if (!s || !headers || !n) return;
    decode_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.d = d;
    cx.s = s;
    cx.capture = dt__sink_capture(s);
    /* launches are matched here whether or not their records are kept */
    int match_launches = dt__rsdk_decoder_matches_launches(d, cx.capture);
    dt__decode_cache_init(&cx.cache);
    dt__core_lock(s);
    pthread_mutex_lock(&d->kernel_lock);
    for (size_t i = 0; i < n; i++) {
        const rsdk_record_header *h = headers[i];
        /* payloads ahead: a flight recorder's copy was written a ring ago
           (a prefetch never faults) */
        if (i + DECODE_AHEAD < n && headers[i + DECODE_AHEAD]) {
            const uint8_t *ahead = headers[i + DECODE_AHEAD]->payload;
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + 128);
        }
        if (!h || !h->payload) {
            dt__loss_add(s, DT_LOSS_MALFORMED, 1);
            continue;
        }
        if (h->category != RSDK_BUFFER_CATEGORY_TRACING) {
            unknown(&cx, h->category, h->kind);
            continue;
        }
        const uint8_t *p = h->payload;
        uint64_t size;
        memcpy(&size, p, sizeof size);
        size_t need;
        switch (h->kind) {
        case RSDK_BUFFER_KERNEL_DISPATCH: need = RSDK_KERNEL_DISPATCH_RECORD_MIN_SIZE; break;
        case RSDK_BUFFER_MEMORY_COPY: need = RSDK_MEMORY_COPY_RECORD_MIN_SIZE; break;
        case RSDK_BUFFER_HIP_RUNTIME_API: need = sizeof(rsdk_api_record); break;
        default: unknown(&cx, h->category, h->kind); continue;
        }
        /* the record's own size: too short for its kind, or longer than any
           record, is not a record */
        if (size < need || size > RSDK_MAX_RECORD_SIZE) {
            dt__loss_add(s, DT_LOSS_MALFORMED, 1);
            continue;
        }
        /* records are 8-byte aligned since 0.5.0 ("fixed misaligned stores
           for buffer records"); an older library's are read from a copy */
        union {
            rsdk_kernel_dispatch_record dispatch;
            rsdk_memory_copy_record copy;
            rsdk_api_record_ancestor api;
        } aligned;
        if ((uintptr_t)p & 7u) {
            memcpy(&aligned, p, size < sizeof aligned ? (size_t)size : sizeof aligned);
            p = (const uint8_t *)&aligned;
        }
        switch (h->kind) {
        case RSDK_BUFFER_KERNEL_DISPATCH: {
            const rsdk_kernel_dispatch_record *r = (const void *)p;
            if (r->dispatch_info.size < offsetof(rsdk_kernel_dispatch_info, reserved_padding)) {
                dt__loss_add(s, DT_LOSS_MALFORMED, 1);
                break;
            }
            if (match_launches) saw(d, r->correlation_id.internal, SIDE_DISPATCH);
            decode_dispatch(&cx, r);
            break;
        }
        case RSDK_BUFFER_MEMORY_COPY: decode_copy(&cx, (const void *)p); break;
        default: {
            const rsdk_api_record *r = (const void *)p; /* the fields read are where both layouts have them */
            if (match_launches && is_launch_op(d, r->operation)) saw(d, r->correlation_id.internal, SIDE_LAUNCH);
            decode_api(&cx, p, size);
            break;
        }
        }
    }
    pthread_mutex_unlock(&d->kernel_lock);
    dt__core_unlock(s);
}

/* ------------------------------------------------------------------ */
/* Copies (the flight recorder's)                                      */
/* ------------------------------------------------------------------ */
#define COPY_ALIGN(x) (((x) + 7u) & ~(size_t)7u)

/* A chunk: its record count and bytes, the payloads, each 8-byte aligned,
   then per record its header's hash and its payload's offset in the chunk
   (0: none). Made in one pass over the delivered headers, the entries
   kept on the stack until the payloads' end is known; payloads that lie
   one after another in the SDK's memory are copied as one. */
#define CHUNK_HEAD 16u
#define ENTRY 16u
/* The most records a chunk holds */
#define CHUNK_RECORDS 256u

_Static_assert(DT_RSDK_COPY_MIN >= CHUNK_HEAD + ENTRY + RSDK_MAX_RECORD_SIZE, "a copy holds any record");

/* The payload bytes a copy keeps of a record. */
static inline size_t copied_payload(const rsdk_record_header *h)
{
    if (!h || !h->payload) return 0;
    uint64_t size;
    memcpy(&size, h->payload, sizeof size);
    return size >= sizeof size && size <= RSDK_MAX_RECORD_SIZE ? (size_t)size : sizeof size;
}

size_t dt__rsdk_copy(uint8_t *buf, size_t size, rsdk_record_header *const *headers, size_t n, size_t *from)
{
    uint64_t entries[CHUNK_RECORDS][2];
    size_t i = *from, at = CHUNK_HEAD, count = 0;
    /* the run of payloads not copied yet: [run, run + run_bytes) to at */
    const uint8_t *run = NULL;
    size_t run_bytes = 0, run_at = at;
    for (; i < n && count < CHUNK_RECORDS; i++) {
        const rsdk_record_header *h = headers[i];
        size_t bytes = copied_payload(h), room = COPY_ALIGN(bytes);
        if (at + room + (count + 1) * ENTRY > size) break;
        entries[count][0] = h ? h->hash : 0;
        entries[count][1] = bytes ? at : 0;
        count++;
        if (!bytes) continue;
        const uint8_t *src = h->payload;
        if (bytes == sizeof(uint64_t)) { /* its size is no record's: kept as 0, counted when decoded */
            if (run_bytes) memcpy(buf + run_at, run, run_bytes);
            run = NULL;
            run_bytes = 0;
            memset(buf + at, 0, sizeof(uint64_t));
        } else if (run && src == run + run_bytes && !(run_bytes & 7u)) {
            run_bytes += bytes;
        } else {
            if (run_bytes) memcpy(buf + run_at, run, run_bytes);
            run = src;
            run_bytes = bytes;
            run_at = at;
        }
        at += room;
    }
    if (run_bytes) memcpy(buf + run_at, run, run_bytes);
    if (!count) return 0;
    memcpy(buf + at, entries, count * ENTRY);
    uint64_t head[2] = {count, at + count * ENTRY};
    memcpy(buf, head, sizeof head);
    *from = i;
    return at + count * ENTRY;
}

/* Records handed to dt__rsdk_decode at once: its per-call work is paid
   once per so many. */
#define DECODE_BATCH 256u

void dt__rsdk_decode_copy(dt_rsdk_decoder *d, dt_session *s, uint8_t *buf, size_t valid)
{
    rsdk_record_header hdrs[DECODE_BATCH];
    rsdk_record_header *ptrs[DECODE_BATCH];
    size_t k = 0;
    for (size_t o = 0; valid - o >= CHUNK_HEAD;) {
        uint8_t *c = buf + o;
        uint64_t head[2];
        memcpy(head, c, sizeof head);
        uint64_t count = head[0], bytes = head[1];
        /* not a chunk dt__rsdk_copy made */
        if (bytes < CHUNK_HEAD || bytes > valid - o || count > (bytes - CHUNK_HEAD) / ENTRY) break;
        const uint8_t *entries = c + bytes - count * ENTRY;
        for (uint64_t i = 0; i < count; i++) {
            uint64_t entry[2];
            memcpy(entry, entries + i * ENTRY, sizeof entry);
            uint64_t off = entry[1];
            hdrs[k].hash = entry[0];
            /* an offset outside the payloads: no chunk dt__rsdk_copy made
               (the decoder counts the record) */
            hdrs[k].payload = off >= CHUNK_HEAD && off < (uint64_t)(entries - c) ? c + off : NULL;
            ptrs[k] = &hdrs[k];
            if (++k == DECODE_BATCH) {
                dt__rsdk_decode(d, s, ptrs, k);
                k = 0;
            }
        }
        o += (size_t)bytes;
    }
    if (k) dt__rsdk_decode(d, s, ptrs, k);
}

void dt__rsdk_pack_push(dt_rsdk_packer *p, dt_session *s)
{
    if (!p->buf) return;
    if (s && p->used) dt__sink_ring_push(s, p->buf, p->used);
    else dt__pool_slot_put(p->slot, p->buf);
    p->buf = NULL;
}

void dt__rsdk_pack(dt_rsdk_packer *p, dt_session *s, rsdk_record_header *const *headers, size_t n)
{
    for (size_t from = 0; from < n;) {
        if (!p->buf) {
            p->buf = dt__pool_slot_get(p->slot, &p->size);
            p->used = 0;
        }
        size_t used = p->buf ? dt__rsdk_copy(p->buf + p->used, p->size - p->used, headers, n, &from) : 0;
        p->used += used;
        if (used) continue;
        if (p->used) { /* full */
            dt__rsdk_pack_push(p, s);
            continue;
        }
        dt__rsdk_pack_push(p, s); /* a buffer too small for a record, or none */
        dt__loss_add(s, DT_LOSS_NO_BUFFER, n - from);
        return;
    }
}
