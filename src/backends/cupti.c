/*
 * NVIDIA CUDA backend through CUPTI's activity API.
 *
 * Records are decoded through the toolkit's own structs (CUpti_ActivityKernel10
 * and friends, the versions the CUDA 13 headers document as current), while
 * the stride from one record to the next comes from the loaded libcupti's
 * cuptiActivityGetNextRecord: a libcupti of another release may write longer
 * or shorter records, and only its own iterator knows their size. CUPTI
 * appends fields across versions and never moves them, so the fields read
 * here sit at the same offsets in every record version that has them.
 *
 * CUPTI state is process-wide, so is this file's: one library handle, one
 * buffer pool, one recording session at a time.
 */
#include "dt_internal.h"
#include "backends/cupti_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include "cupti_cbid_names.h"

/* ------------------------------------------------------------------ */
/* Callback-id names                                                   */
/* ------------------------------------------------------------------ */
const char *dt_cupti_api_name(int driver, uint32_t cbid)
{
    if (driver)
        return cbid < DT_CUPTI_DRIVER_NAMES_COUNT ? dt_cupti_driver_names[cbid] : NULL;
    return cbid < DT_CUPTI_RUNTIME_NAMES_COUNT ? dt_cupti_runtime_names[cbid] : NULL;
}

/* ------------------------------------------------------------------ */
/* Record sizes and the bounds-checked iterator                        */
/* ------------------------------------------------------------------ */
size_t dt_cupti_record_size(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    default: return 0;
    }
}

CUptiResult dt_cupti_next_record(uint8_t *buffer, size_t valid_size, CUpti_Activity **record)
{
    if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    if (*record) {
        const uint8_t *cur = (const uint8_t *)*record;
        if (cur < buffer || (size_t)(cur - buffer) >= valid_size) return CUPTI_ERROR_INVALID_PARAMETER;
        uint32_t kind;
        memcpy(&kind, cur, sizeof kind);
        size_t sz = dt_cupti_record_size(kind);
        if (sz == 0) return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)(cur - buffer) + sz;
    }
    if (valid_size < sizeof(uint32_t) || off > valid_size - sizeof(uint32_t))
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    uint32_t kind;
    memcpy(&kind, buffer + off, sizeof kind);
    size_t sz = dt_cupti_record_size(kind);
    if (sz == 0) return CUPTI_ERROR_INVALID_KIND;
    if (sz > valid_size - off) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(void *)(buffer + off);
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */
static int g_same_layout; /* the loaded libcupti writes this toolkit's records */

/* Per-buffer state: the core's caches of kernel names, launch configurations
   and copy/fill names, and CUPTI's own cache of API names by callback id. */
#define API_SLOTS 64
typedef struct decode_ctx {
    dt_decode_cache cache;
    struct { uint32_t key; uint32_t id; } api[API_SLOTS]; /* key: cbid*2+driver+1 */
} decode_ctx;

static uint8_t copy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return DT_COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return DT_COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return DT_COPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return DT_COPY_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return DT_COPY_PTOP;
    default: return DT_COPY_UNKNOWN;
    }
}

static uint8_t memory_kind(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return DT_MEM_PAGEABLE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return DT_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return DT_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return DT_MEM_ARRAY;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return DT_MEM_MANAGED;
    default: return DT_MEM_UNKNOWN;
    }
}

static void decode_kernel(dt_session *s, dt_decode_cache *c, const CUpti_ActivityKernel10 *k)
{
    if (!(s->config.capture & DT_CAPTURE_KERNEL)) return;
    dt_launch_config cfg;
    memset(&cfg, 0, sizeof cfg); /* compared bytewise by the cache */
    cfg = (dt_launch_config){
        .grid = {k->gridX, k->gridY, k->gridZ},
        .block = {k->blockX, k->blockY, k->blockZ},
        .registers_per_thread = k->registersPerThread,
        .static_shared_memory = (uint32_t)k->staticSharedMemory,
        .dynamic_shared_memory = (uint32_t)k->dynamicSharedMemory,
    };
    uint32_t config = dt_decode_launch_config(s, c, &cfg);
    uint32_t name = dt_decode_kernel_name(s, c, k->name);
    /* a kernel whose configuration could not be kept is dropped (store_full) */
    dt_rec *r = dt_add_device_activity(s, DT_EVENT_KERNEL, k->start, k->end, k->correlationId, k->deviceId,
                                       k->streamId, k->contextId, config == UINT32_MAX ? UINT32_MAX : name);
    if (!r) return;
    r->u.kernel.config = config;
    /* CUPTI_TIMESTAMP_UNKNOWN is 0 in CUDA 13 headers and was ~0 in older
       ones: dt_latency_delta takes both as unknown. */
    r->u.kernel.queued_delta = dt_latency_delta(k->start, k->queued);
    r->u.kernel.submitted_delta = dt_latency_delta(k->start, k->submitted);
}

static void decode_memcpy(dt_session *s, dt_decode_cache *c, const CUpti_ActivityMemcpy6 *m)
{
    if (!(s->config.capture & DT_CAPTURE_MEMCPY)) return;
    dt_copy copy = {
        .start = m->start, .end = m->end, .correlation = m->correlationId, .bytes = m->bytes,
        .device = m->deviceId, .stream = m->streamId, .context = m->contextId,
        .src_device = m->deviceId, .dst_device = m->deviceId,
        .copy_kind = copy_kind(m->copyKind), .src_kind = memory_kind(m->srcKind),
        .dst_kind = memory_kind(m->dstKind), .async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0,
    };
    dt_add_copy(s, c, &copy);
}

static void decode_memcpy2(dt_session *s, dt_decode_cache *c, const CUpti_ActivityMemcpyPtoP4 *m)
{
    if (!(s->config.capture & DT_CAPTURE_MEMCPY)) return;
    dt_copy copy = {
        .start = m->start, .end = m->end, .correlation = m->correlationId, .bytes = m->bytes,
        .device = m->deviceId, .stream = m->streamId, .context = m->contextId,
        .src_device = m->srcDeviceId, .dst_device = m->dstDeviceId,
        .copy_kind = DT_COPY_PTOP, .src_kind = memory_kind(m->srcKind),
        .dst_kind = memory_kind(m->dstKind), .async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0,
    };
    dt_add_copy(s, c, &copy);
}

static void decode_memset(dt_session *s, dt_decode_cache *c, const CUpti_ActivityMemset4 *m)
{
    if (!(s->config.capture & DT_CAPTURE_MEMSET)) return;
    dt_fill fill = {
        .start = m->start, .end = m->end, .correlation = m->correlationId, .bytes = m->bytes,
        .device = m->deviceId, .stream = m->streamId, .context = m->contextId, .value = m->value,
        .memory_kind = memory_kind(m->memoryKind),
        .async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0,
    };
    dt_add_fill(s, c, &fill);
}

/* Interned name of a runtime or driver callback id, cached for the buffer. */
static uint32_t api_name(dt_session *s, decode_ctx *cx, int driver, uint32_t cbid)
{
    uint32_t key = cbid * 2u + (uint32_t)driver + 1u;
    size_t slot = (size_t)((key * UINT32_C(0x9e3779b9)) >> 26); /* 64 slots */
    if (cx->api[slot].key == key) return cx->api[slot].id;
    const char *name = dt_cupti_api_name(driver, cbid);
    uint32_t id;
    if (name) {
        id = dt_intern_str(&s->names, name);
    } else {
        char buf[40];
        snprintf(buf, sizeof buf, "%s#%u", driver ? "cudaDriver" : "cudaRuntime", (unsigned)cbid);
        id = dt_intern_str(&s->names, buf);
    }
    if (id != UINT32_MAX) {
        cx->api[slot].key = key;
        cx->api[slot].id = id;
    }
    return id;
}

_Static_assert(API_SLOTS == 64, "api_name() yields 6 bits");

static void decode_api(dt_session *s, decode_ctx *cx, const CUpti_ActivityAPI *a, int driver)
{
    if (!(s->config.capture & (driver ? DT_CAPTURE_DRIVER : DT_CAPTURE_RUNTIME))) return;
    dt_add_api_call(s, driver ? DT_EVENT_DRIVER : DT_EVENT_RUNTIME, a->start, a->end, a->correlationId,
                    a->processId, a->threadId, api_name(s, cx, driver, a->cbid), a->cbid,
                    (int32_t)a->returnValue);
}

static void decode_sync(dt_session *s, const CUpti_ActivitySynchronization2 *y)
{
    if (!(s->config.capture & DT_CAPTURE_SYNC)) return;
    static const char *const names[] = {"Synchronization", "Event Synchronize", "Stream Wait Event",
                                        "Stream Synchronize", "Context Synchronize"};
    unsigned t = (unsigned)y->type;
    /* A context-wide synchronisation names no stream. */
    uint32_t stream = y->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : y->streamId;
    dt_add_device_activity(s, DT_EVENT_SYNC, y->start, y->end, y->correlationId, 0, stream, y->contextId,
                           dt_intern_str(&s->names, t < 5 ? names[t] : names[0]));
}

static void decode_overhead(dt_session *s, const CUpti_ActivityOverhead3 *o)
{
    if (!(s->config.capture & DT_CAPTURE_OVERHEAD)) return;
    const char *name;
    switch ((unsigned)o->overheadKind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: name = "Driver compiler"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: name = "CUPTI buffer flush"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: name = "CUPTI instrumentation"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: name = "CUPTI resource"; break;
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: name = "Module loading"; break;
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: name = "Lazy function loading"; break;
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: name = "Command buffer full"; break;
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: name = "Activity buffer request"; break;
    default: name = "Overhead"; break;
    }
    uint32_t device = 0, context = 0, lane = 0;
    switch (o->objectKind) {
    case CUPTI_ACTIVITY_OBJECT_PROCESS:
    case CUPTI_ACTIVITY_OBJECT_THREAD:
        context = o->objectId.pt.processId;
        lane = o->objectId.pt.threadId;
        break;
    case CUPTI_ACTIVITY_OBJECT_DEVICE:
    case CUPTI_ACTIVITY_OBJECT_CONTEXT:
    case CUPTI_ACTIVITY_OBJECT_STREAM:
        device = o->objectId.dcs.deviceId;
        context = o->objectId.dcs.contextId;
        lane = o->objectId.dcs.streamId;
        break;
    default: break;
    }
    dt_add_device_activity(s, DT_EVENT_OVERHEAD, o->start, o->end, o->correlationId, device, lane, context,
                           dt_intern_str(&s->names, name));
}

static void device_props_from(const CUpti_ActivityDevice5 *d, dt_device_props *p)
{
    memset(p, 0, sizeof *p);
    p->valid = 1;
    p->id = d->id;
    if (d->name) {
        size_t n = strnlen(d->name, sizeof p->name - 1);
        memcpy(p->name, d->name, n);
        p->name[n] = '\0';
    }
    p->total_global_mem = d->globalMemorySize;
    p->compute_major = (int)d->computeCapabilityMajor;
    p->compute_minor = (int)d->computeCapabilityMinor;
    p->max_threads_per_block = (int)d->maxThreadsPerBlock;
    p->max_threads_per_sm = (int)(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
    p->max_blocks_per_sm = (int)d->maxBlocksPerMultiprocessor;
    p->regs_per_block = (int)d->maxRegistersPerBlock;
    p->regs_per_sm = (int)d->maxRegistersPerMultiprocessor;
    p->warp_size = (int)d->numThreadsPerWarp;
    p->shared_mem_per_block = d->maxSharedMemoryPerBlock;
    /* CUPTI reports the opt-in limit as the per-block maximum. */
    p->shared_mem_per_block_optin = d->maxSharedMemoryPerBlock;
    p->shared_mem_per_sm = d->maxSharedMemoryPerMultiprocessor;
    p->num_sms = (int)d->numMultiprocessors;
}

/* Devices are described once, when their context is created, which may be
   before any session: the descriptions are kept for every later session. */
static pthread_mutex_t g_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_device_props g_devices[DT_MAX_DEVICES];

static void remember_device(const CUpti_ActivityDevice5 *d, dt_device_props *out)
{
    device_props_from(d, out);
    if (out->id >= DT_MAX_DEVICES) return;
    pthread_mutex_lock(&g_devices_lock);
    g_devices[out->id] = *out;
    pthread_mutex_unlock(&g_devices_lock);
}

static const char *record_kind_name(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_NAME: return "name";
    case CUPTI_ACTIVITY_KIND_MARKER: return "marker";
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return "marker data";
    case CUPTI_ACTIVITY_KIND_CONTEXT: return "context";
    case CUPTI_ACTIVITY_KIND_MEMORY2: return "memory";
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return "CUDA event";
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return "internal launch API";
    default: return "other";
    }
}

/* avail: bytes from rec to the end of the valid part of the buffer. */
static void decode_one(dt_session *s, decode_ctx *cx, const CUpti_Activity *rec, size_t avail)
{
#define NEED(type)                                                             \
    do {                                                                       \
        if (avail < sizeof(type)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; } \
    } while (0)
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        /* Kernel10 grew from Kernel9 only past `submitted`: a Kernel9 writer
           is decoded through the fields it has. */
        if (avail < offsetof(CUpti_ActivityKernel10, launchType)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; }
        decode_kernel(s, &cx->cache, (const CUpti_ActivityKernel10 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        if (avail < offsetof(CUpti_ActivityMemcpy6, reserved0)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; }
        decode_memcpy(s, &cx->cache, (const CUpti_ActivityMemcpy6 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        if (avail < offsetof(CUpti_ActivityMemcpyPtoP4, reserved0)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; }
        decode_memcpy2(s, &cx->cache, (const CUpti_ActivityMemcpyPtoP4 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        if (avail < offsetof(CUpti_ActivityMemset4, reserved0)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; }
        decode_memset(s, &cx->cache, (const CUpti_ActivityMemset4 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        NEED(CUpti_ActivityAPI);
        decode_api(s, cx, (const CUpti_ActivityAPI *)rec, rec->kind == CUPTI_ACTIVITY_KIND_DRIVER);
        return;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        NEED(CUpti_ActivityExternalCorrelation);
        const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
        /* Other kinds belong to other clients in the process (Kineto pushes
           CUSTOM1 for its user annotations): not ours to attribute. */
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            dt_corr_link(s, e->correlationId, e->externalId);
        return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        NEED(CUpti_ActivitySynchronization2);
        decode_sync(s, (const CUpti_ActivitySynchronization2 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
        NEED(CUpti_ActivityOverhead3);
        decode_overhead(s, (const CUpti_ActivityOverhead3 *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        if (avail < offsetof(CUpti_ActivityDevice5, isCudaVisible)) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); return; }
        dt_device_props p;
        remember_device((const CUpti_ActivityDevice5 *)rec, &p);
        dt_session_set_device(s, &p);
        return;
    }
    default:
        /* A kind some other CUPTI client in the process enabled, or a newer
           CUPTI's: counted, and named once in the trace. */
        dt_loss_add(s, DT_LOSS_UNKNOWN_KIND, 1);
        dt_session_note(s, "cupti.unknown_kind", "CUPTI delivered %s records (kind %u) that devtrace does not decode",
                        record_kind_name(rec->kind), (unsigned)rec->kind);
        return;
    }
#undef NEED
}

void dt_cupti_decode_buffer(dt_session *s, uint8_t *buffer, size_t valid_size, dt_cupti_next_fn next)
{
    if (!s || !buffer || valid_size == 0) return;
    const uint8_t *end = buffer + valid_size;
    const uint8_t *prev = NULL;
    size_t prev_size = 0;
    /* Whether every stride so far matched this toolkit's record sizes: only
       then can bytes left after the last record be recognised as a record
       cut short (which CUPTI's iterator passes over as the end). A CUPTI of
       another version may write longer records, so its buffers are not
       judged by this toolkit's sizes. */
    int strides_known = next == dt_cupti_next_record || g_same_layout;
    CUpti_Activity *rec = NULL;
    decode_ctx cx;
    dt_decode_cache_init(&cx.cache);
    memset(cx.api, 0, sizeof cx.api);
    dt_session_lock(s);
    for (;;) {
        CUptiResult r = next(buffer, valid_size, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) {
            size_t consumed = prev ? (size_t)(prev - buffer) + prev_size : 0;
            if (strides_known && prev_size != SIZE_MAX && consumed < valid_size)
                dt_loss_add(s, DT_LOSS_MALFORMED, 1);
            break;
        }
        /* The iterator cannot step past a record it does not understand, so
           the rest of the buffer is lost with it. */
        if (r == CUPTI_ERROR_INVALID_KIND) { dt_loss_add(s, DT_LOSS_UNKNOWN_KIND, 1); break; }
        if (r != CUPTI_SUCCESS || !rec) { dt_loss_add(s, DT_LOSS_MALFORMED, 1); break; }
        const uint8_t *p = (const uint8_t *)rec;
        if (p < buffer || p >= end || (prev && p <= prev) || (size_t)(end - p) < sizeof(uint32_t)) {
            dt_loss_add(s, DT_LOSS_MALFORMED, 1);
            break;
        }
        if (prev && (size_t)(p - prev) != prev_size) strides_known = 0;
        uint32_t kind = rec->kind;
        decode_one(s, &cx, rec, (size_t)(end - p));
        prev = p;
        prev_size = dt_cupti_record_size(kind);
        if (prev_size == 0) prev_size = SIZE_MAX;
    }
    dt_session_unlock(s);
}

/* Outside a session only device descriptions are kept. */
static void scan_devices(uint8_t *buffer, size_t valid_size, dt_cupti_next_fn next)
{
    CUpti_Activity *rec = NULL;
    const uint8_t *end = buffer + valid_size, *prev = NULL;
    while (next(buffer, valid_size, &rec) == CUPTI_SUCCESS && rec) {
        const uint8_t *p = (const uint8_t *)rec;
        if (p < buffer || p >= end || (prev && p <= prev)) break;
        if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE &&
            (size_t)(end - p) >= offsetof(CUpti_ActivityDevice5, isCudaVisible)) {
            dt_device_props props;
            remember_device((const CUpti_ActivityDevice5 *)rec, &props);
        }
        prev = p;
    }
}

/* ------------------------------------------------------------------ */
/* The library                                                         */
/* ------------------------------------------------------------------ */
static struct {
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*GetTimestamp)(uint64_t *);
    /* optional */
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*ActivityPushExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*ActivityPopExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t *);
    CUptiResult (*GetVersion)(uint32_t *);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
    CUptiResult (*GetThreadIdType)(CUpti_ActivityThreadIdType *);
} g_api;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* load, arm, disarm */
static void *g_handle;
static int g_emulated; /* the library is devtrace's CUPTI emulator */
static char g_path[512], g_version[64], g_load_error[1000];

static int resolve_symbols(void *h, char *missing, size_t missing_len)
{
#define REQ(field, sym)                                                        \
    do {                                                                       \
        g_api.field = (__typeof__(g_api.field))dlsym(h, sym);                 \
        if (!g_api.field) { snprintf(missing, missing_len, "%s", sym); return -1; } \
    } while (0)
#define OPT(field, sym) g_api.field = (__typeof__(g_api.field))dlsym(h, sym)
    REQ(ActivityEnable, "cuptiActivityEnable");
    REQ(ActivityDisable, "cuptiActivityDisable");
    REQ(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
    REQ(ActivityFlushAll, "cuptiActivityFlushAll");
    REQ(ActivityGetNextRecord, "cuptiActivityGetNextRecord");
    REQ(GetTimestamp, "cuptiGetTimestamp");
    OPT(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
    OPT(ActivityPushExternalCorrelationId, "cuptiActivityPushExternalCorrelationId");
    OPT(ActivityPopExternalCorrelationId, "cuptiActivityPopExternalCorrelationId");
    OPT(GetVersion, "cuptiGetVersion");
    OPT(GetResultString, "cuptiGetResultString");
    OPT(Subscribe, "cuptiSubscribe");
    OPT(Unsubscribe, "cuptiUnsubscribe");
    OPT(SetThreadIdType, "cuptiSetThreadIdType");
    OPT(GetThreadIdType, "cuptiGetThreadIdType");
#undef REQ
#undef OPT
    return 0;
}

static void *already_loaded(void)
{
    /* A libcupti the program (or its CUDA runtime) already uses must be the
       one we talk to: two copies would fight over one driver interface. */
    void *self = dlopen(NULL, RTLD_NOW);
    if (self && dlsym(self, "cuptiActivityRegisterCallbacks")) return self;
    static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (h) return h;
    }
    return NULL;
}

/* g_lock held. 0 when the library is usable. */
static int cupti_load(void)
{
    if (g_handle) return 0;
    void *h = NULL;
    char found[512] = "";
    const char *override = dt_env("DEVTRACE_CUPTI_LIBRARY");
    if (override) {
        h = dlopen(override, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(g_load_error, sizeof g_load_error,
                     "DEVTRACE_CUPTI_LIBRARY=%s does not load: %s", override, e ? e : "unknown error");
            return -1;
        }
        snprintf(found, sizeof found, "%s", override);
    }
    if (!h) h = already_loaded();
    if (!h) {
        const char *home = dt_env("CUDA_HOME");
        if (!home) home = "/usr/local/cuda";
        static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
        static const char *const dirs[] = {"lib64", "extras/CUPTI/lib64"};
        char paths[6][512];
        const char *cands[9];
        size_t n = 0;
        for (size_t i = 0; i < 3; i++) cands[n++] = sonames[i];
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < 3; i++) {
                snprintf(paths[d * 3 + i], sizeof paths[0], "%s/%s/%s", home, dirs[d], sonames[i]);
                cands[n++] = paths[d * 3 + i];
            }
        char tried[700] = "";
        h = dt_dlopen_first(cands, n, found, sizeof found, tried, sizeof tried);
        if (!h) {
            snprintf(g_load_error, sizeof g_load_error,
                     "libcupti not found (tried %s); set CUDA_HOME or DEVTRACE_CUPTI_LIBRARY", tried);
            return -1;
        }
    }
    char missing[96];
    if (resolve_symbols(h, missing, sizeof missing) != 0) {
        snprintf(g_load_error, sizeof g_load_error,
                 "%s lacks %s: not a usable CUPTI library; set DEVTRACE_CUPTI_LIBRARY",
                 found[0] ? found : "the loaded libcupti", missing);
        memset(&g_api, 0, sizeof g_api);
        return -1;
    }
    Dl_info info;
    if (dladdr((void *)g_api.ActivityRegisterCallbacks, &info) && info.dli_fname)
        snprintf(g_path, sizeof g_path, "%s", info.dli_fname);
    else
        snprintf(g_path, sizeof g_path, "%s", found);
    uint32_t v = 0;
    if (g_api.GetVersion && g_api.GetVersion(&v) == CUPTI_SUCCESS)
        snprintf(g_version, sizeof g_version, "%u", (unsigned)v);
    g_emulated = dlsym(h, "devtrace_emulator_personality") != NULL;
    g_same_layout = g_emulated || v == CUPTI_API_VERSION;
    g_handle = h;
    dt_log("cupti: using %s (CUPTI API %s)%s", g_path, g_version, g_emulated ? ", emulated" : "");
    return 0;
}

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (g_api.GetResultString && g_api.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
    return "CUPTI error";
}

/* "" when the driver library is present, otherwise why not. */
static void driver_presence(char *why, size_t len)
{
    why[0] = '\0';
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) { dlclose(h); return; }
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) { dlclose(h); return; }
    const char *e = dlerror();
    snprintf(why, len, "no NVIDIA driver: libcuda.so.1 not found (%s)", e ? e : "not in the loader path");
}

static int driver_version(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return 0;
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    int v = 0;
    if (!get || get(&v) != 0) v = 0;
    dlclose(h);
    return v;
}

/* Turn a failed CUPTI call into a status whose message says what to do. */
static dt_status cupti_failure(const char *call, CUptiResult r)
{
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        return dt_error(DT_ERR_BUSY,
                        "%s: another profiler holds CUPTI: another CUPTI client (Nsight Systems, "
                        "Kineto) holds the subscription; stop it or disable its CUDA tracing", call);
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s: %s (%d): this user may not profile the GPU; see "
                        "NVreg_RestrictProfilingToAdminUsers", call, result_text(r), (int)r);
    char why[400] = "";
    if (r == CUPTI_ERROR_UNKNOWN) {
        driver_presence(why, sizeof why);
        if (why[0]) return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s: %s", call, why);
    }
    if (r == CUPTI_ERROR_NOT_COMPATIBLE || r == CUPTI_ERROR_NOT_INITIALIZED ||
        r == CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE) {
        if (!g_emulated) driver_presence(why, sizeof why);
        if (why[0]) return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s: %s", call, why);
        int dv = driver_version();
        char driver[48];
        if (dv > 0) snprintf(driver, sizeof driver, "the NVIDIA driver (CUDA %d.%d)", dv / 1000, (dv % 1000) / 10);
        else snprintf(driver, sizeof driver, "the NVIDIA driver");
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s: %s (%d): insufficient driver: %s is older than %s "
                        "(CUPTI API %s) needs; update the driver or point DEVTRACE_CUPTI_LIBRARY at "
                        "the CUPTI of an older toolkit", call, result_text(r), (int)r, driver, g_path,
                        g_version);
    }
    return dt_error(DT_ERR_VENDOR, "%s failed: %s (%d) from %s", call, result_text(r), (int)r, g_path);
}

/* ------------------------------------------------------------------ */
/* Buffer pool                                                         */
/* ------------------------------------------------------------------ */
/* The core's pool, preallocated at session start so that a busy GPU never
   waits for malloc and memory stays bounded; when it runs dry CUPTI gets no
   buffer, drops the records and reports how many through
   GetNumDroppedRecords. Before any session (early arming) buffers are made
   on demand up to the default pool (DT_POOL_LAZY). A new configuration
   replaces the pool; buffers CUPTI still holds of the old one are freed as
   they come back (dt_pool_reclaim). g_pool_lock guards the pointer against
   CUPTI's threads. */
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_buffer_pool *g_pool;

static int pool_configure(uint32_t count, size_t size, unsigned flags)
{
    dt_buffer_pool *p = dt_pool_create(count, size, flags);
    if (!p) return -1;
    pthread_mutex_lock(&g_pool_lock);
    /* Under the lock: a buffer of the old pool coming back must find it
       either current or already retired. */
    dt_pool_destroy(g_pool);
    g_pool = p;
    pthread_mutex_unlock(&g_pool_lock);
    return 0;
}

static int pool_exists(void)
{
    pthread_mutex_lock(&g_pool_lock);
    int have = g_pool != NULL;
    pthread_mutex_unlock(&g_pool_lock);
    return have;
}

static uint64_t pool_refused(void)
{
    pthread_mutex_lock(&g_pool_lock);
    uint64_t refused = dt_pool_refused(g_pool);
    pthread_mutex_unlock(&g_pool_lock);
    return refused;
}

static uint8_t *pool_get(size_t *size)
{
    pthread_mutex_lock(&g_pool_lock);
    uint8_t *b = dt_pool_get(g_pool);
    *size = dt_pool_buffer_size(g_pool);
    pthread_mutex_unlock(&g_pool_lock);
    return b;
}

static void pool_put(uint8_t *b)
{
    if (!b) return;
    pthread_mutex_lock(&g_pool_lock);
    /* A buffer of an earlier configuration is freed as it comes back. */
    if (dt_pool_put(g_pool, b) != 0) dt_pool_reclaim(b);
    pthread_mutex_unlock(&g_pool_lock);
}

/* Free the idle buffers; those CUPTI still holds are freed as they return. */
static void pool_release(void)
{
    pthread_mutex_lock(&g_pool_lock);
    dt_pool_destroy(g_pool);
    g_pool = NULL;
    pthread_mutex_unlock(&g_pool_lock);
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */
/* Serialises decoding with stop: a completion callback running on a CUPTI
   thread must finish with the session before stop returns. */
static pthread_mutex_t g_decode_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_session *g_session;      /* recording session, under g_decode_lock */
static int g_early;                /* cheap kinds armed before any session */
static CUpti_SubscriberHandle g_subscriber;
static int g_subscribed;
static int g_thread_type_set;
static CUpti_ActivityThreadIdType g_previous_thread_type;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    size_t n = 0;
    uint8_t *b = pool_get(&n);
    *buffer = b;
    *size = b ? n : 0;
    *max_records = 0;
}

static void count_vendor_drops(dt_session *s, CUcontext ctx, uint32_t stream)
{
    size_t dropped = 0;
    if (g_api.ActivityGetNumDroppedRecords &&
        g_api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        dt_loss_add(s, DT_LOSS_VENDOR_DROPPED, dropped);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid_size)
{
    pthread_mutex_lock(&g_decode_lock);
    dt_session *s = g_session;
    if (buffer && valid_size <= size) {
        if (s) dt_cupti_decode_buffer(s, buffer, valid_size, g_api.ActivityGetNextRecord);
        else scan_devices(buffer, valid_size, g_api.ActivityGetNextRecord);
    }
    if (s) count_vendor_drops(s, ctx, stream);
    pthread_mutex_unlock(&g_decode_lock);
    pool_put(buffer);
}

static void CUPTIAPI ignore_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                     const void *data)
{
    (void)userdata; (void)domain; (void)cbid; (void)data;
}

/* ------------------------------------------------------------------ */
/* Arming                                                              */
/* ------------------------------------------------------------------ */
typedef struct kind_spec {
    CUpti_ActivityKind kind;
    uint32_t capture;   /* DT_CAPTURE_* bit, 0: always */
    int required;       /* start fails without it */
    int cheap;          /* may stay armed outside a session */
    const char *what;
} kind_spec;

static const kind_spec g_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, DT_CAPTURE_KERNEL, 1, 1, "kernels"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, DT_CAPTURE_MEMCPY, 1, 1, "memory copies"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, DT_CAPTURE_MEMCPY, 0, 1, "peer-to-peer copies"},
    {CUPTI_ACTIVITY_KIND_MEMSET, DT_CAPTURE_MEMSET, 1, 1, "memsets"},
    {CUPTI_ACTIVITY_KIND_DEVICE, 0, 0, 1, "device properties"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, DT_CAPTURE_RUNTIME, 1, 0, "runtime API"},
    {CUPTI_ACTIVITY_KIND_DRIVER, DT_CAPTURE_DRIVER, 1, 0, "driver API"},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, 0, 0, 0, "External ids"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, DT_CAPTURE_SYNC, 0, 0, "synchronization"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, DT_CAPTURE_OVERHEAD, 0, 0, "CUPTI overhead"},
};
#define KIND_COUNT (sizeof g_kinds / sizeof g_kinds[0])
static int g_armed[KIND_COUNT];

static void disarm(int keep_cheap)
{
    for (size_t i = 0; i < KIND_COUNT; i++) {
        if (!g_armed[i] || (keep_cheap && g_kinds[i].cheap)) continue;
        g_api.ActivityDisable(g_kinds[i].kind);
        g_armed[i] = 0;
    }
}

dt_status dt_cupti_prepare(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_early) { pthread_mutex_unlock(&g_lock); return DT_OK; }
    if (cupti_load() != 0) {
        pthread_mutex_unlock(&g_lock);
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s", g_load_error);
    }
    /* A session started earlier (devtrace record starts one from its
       constructor, before the driver calls InitializeInjection) already
       sized the pool. */
    int have_pool = pool_exists();
    dt_config defaults;
    dt_config_init(&defaults);
    if (!have_pool && pool_configure(defaults.buffer_count, defaults.buffer_size, DT_POOL_LAZY) != 0) {
        pthread_mutex_unlock(&g_lock);
        return dt_error(DT_ERR_NO_MEMORY, "cupti: out of memory for the activity buffer pool");
    }
    int armed_now[KIND_COUNT] = {0};
    CUptiResult r = g_api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
    for (size_t i = 0; r == CUPTI_SUCCESS && i < KIND_COUNT; i++) {
        if (!g_kinds[i].cheap || g_armed[i]) continue;
        CUptiResult e = g_api.ActivityEnable(g_kinds[i].kind);
        if (e == CUPTI_SUCCESS) g_armed[i] = armed_now[i] = 1;
        else if (g_kinds[i].required) r = e;
    }
    dt_status st = DT_OK;
    if (r != CUPTI_SUCCESS) {
        st = cupti_failure("cupti early arming", r);
        /* only what this call armed: a running session keeps its kinds */
        for (size_t i = 0; i < KIND_COUNT; i++)
            if (armed_now[i]) { g_api.ActivityDisable(g_kinds[i].kind); g_armed[i] = 0; }
    } else {
        g_early = 1;
        dt_log("cupti: kernels, copies and memsets armed before the first CUDA context");
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

void dt_cupti_early_init(void)
{
    if (dt_cupti_prepare() != DT_OK) dt_log("cupti: early arming skipped: %s", dt_last_error());
}

static dt_status cupti_probe(dt_backend_status *st)
{
    pthread_mutex_lock(&g_lock);
    int rc = cupti_load();
    if (rc != 0) {
        st->available = 0;
        snprintf(st->reason, sizeof st->reason, "%s", g_load_error);
    } else {
        snprintf(st->library, sizeof st->library, "%s", g_path);
        snprintf(st->version, sizeof st->version, "%s", g_version);
        st->available = 1;
        char why[400] = "";
        if (!g_emulated) driver_presence(why, sizeof why);
        if (why[0]) {
            st->available = 0;
            snprintf(st->reason, sizeof st->reason, "%s", why);
        } else if (!g_api.ActivityPushExternalCorrelationId || !g_api.ActivityPopExternalCorrelationId) {
            snprintf(st->reason, sizeof st->reason,
                     "cuptiActivityPush/PopExternalCorrelationId missing: no External ids");
        }
    }
    pthread_mutex_unlock(&g_lock);
    return DT_OK;
}

static dt_status cupti_start(dt_session *s)
{
    pthread_mutex_lock(&g_lock);
    if (cupti_load() != 0) {
        pthread_mutex_unlock(&g_lock);
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s", g_load_error);
    }
    if (pool_configure(s->config.buffer_count, s->config.buffer_size, 0) != 0) {
        pthread_mutex_unlock(&g_lock);
        return dt_error(DT_ERR_NO_MEMORY, "cupti: cannot preallocate %u activity buffers of %zu bytes",
                        (unsigned)s->config.buffer_count, s->config.buffer_size);
    }
    dt_status st = DT_OK;
    CUptiResult r;
    /* A subscriber that enables no callback costs nothing, and it is the one
       call that tells whether another tool owns CUPTI. */
    if (g_api.Subscribe && g_api.Unsubscribe) {
        r = g_api.Subscribe(&g_subscriber, ignore_callback, NULL);
        if (r != CUPTI_SUCCESS) { st = cupti_failure("cuptiSubscribe", r); goto fail; }
        g_subscribed = 1;
    }
    /* Registered again at every start: another client (Kineto) may have
       replaced our callbacks since. */
    r = g_api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) { st = cupti_failure("cuptiActivityRegisterCallbacks", r); goto fail; }
    /* Records of early-armed kinds made before this session are delivered
       now, while no session takes them (g_session is still NULL). */
    if (g_early) g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    /* From here every completed buffer belongs to this session, before any
       kind is enabled, so that no record can fall between the two. */
    pthread_mutex_lock(&g_devices_lock);
    for (uint32_t i = 0; i < DT_MAX_DEVICES; i++)
        if (g_devices[i].valid) dt_session_set_device(s, &g_devices[i]);
    pthread_mutex_unlock(&g_devices_lock);
    pthread_mutex_lock(&g_decode_lock);
    g_session = s;
    pthread_mutex_unlock(&g_decode_lock);
    for (size_t i = 0; i < KIND_COUNT; i++) {
        const kind_spec *k = &g_kinds[i];
        if (g_armed[i] || (k->capture && !(s->config.capture & k->capture))) continue;
        r = g_api.ActivityEnable(k->kind);
        if (r == CUPTI_SUCCESS) { g_armed[i] = 1; continue; }
        if (k->required) {
            char call[64];
            snprintf(call, sizeof call, "cuptiActivityEnable(%s)", k->what);
            st = cupti_failure(call, r);
            goto fail;
        }
        dt_session_note(s, "cupti", "%s not recorded: cuptiActivityEnable(%d) returned %s (%d)",
                        k->what, (int)k->kind, result_text(r), (int)r);
    }
    /* CUPTI reports pthread_self() values by default; system thread ids put
       API rows on the rows of the host threads that made the calls. */
    g_thread_type_set = 0;
    if (g_api.SetThreadIdType) {
        g_previous_thread_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
        if (g_api.GetThreadIdType) g_api.GetThreadIdType(&g_previous_thread_type);
        r = g_api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
        if (r == CUPTI_SUCCESS) g_thread_type_set = 1;
        else dt_session_note(s, "cupti.thread_ids", "cuptiSetThreadIdType(SYSTEM) returned %s (%d): API rows "
                             "carry pthread ids, not host thread ids", result_text(r), (int)r);
    } else {
        dt_session_note(s, "cupti.thread_ids", "%s lacks cuptiSetThreadIdType: API rows carry pthread ids, "
                        "not host thread ids", g_path);
    }
    if (!g_api.ActivityPushExternalCorrelationId || !g_api.ActivityPopExternalCorrelationId)
        dt_session_note(s, "cupti", "%s lacks cuptiActivityPush/PopExternalCorrelationId: no External ids",
                        g_path);
    if (!g_api.ActivityGetNumDroppedRecords)
        dt_session_note(s, "cupti", "%s lacks cuptiActivityGetNumDroppedRecords: records CUPTI drops "
                        "are not counted", g_path);
    dt_session_set_library(s, g_path, g_version);
    pthread_mutex_unlock(&g_lock);
    return DT_OK;

fail:
    disarm(g_early);
    if (g_session == s) {
        pthread_mutex_lock(&g_decode_lock);
        g_session = NULL;
        pthread_mutex_unlock(&g_decode_lock);
        /* what the kinds armed for a moment recorded is not the session's */
        g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    if (g_subscribed) { g_api.Unsubscribe(g_subscriber); g_subscribed = 0; }
    if (!g_early) pool_release();
    pthread_mutex_unlock(&g_lock);
    return st;
}

static dt_status cupti_flush(dt_session *s)
{
    (void)s;
    if (!g_handle) return DT_OK;
    /* Forced: a plain flush leaves partly filled buffers with CUPTI. The
       completion callback may run on this thread, so no lock is held. */
    CUptiResult r = g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    return r == CUPTI_SUCCESS ? DT_OK : cupti_failure("cuptiActivityFlushAll", r);
}

static dt_status cupti_stop(dt_session *s)
{
    pthread_mutex_lock(&g_lock);
    disarm(g_early);
    pthread_mutex_unlock(&g_lock);
    /* Records made before the kinds were disarmed are still in CUPTI's
       buffers: deliver them to this session. */
    CUptiResult r = g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g_lock);
    pthread_mutex_lock(&g_decode_lock);
    count_vendor_drops(s, NULL, 0);
    g_session = NULL;
    pthread_mutex_unlock(&g_decode_lock);
    uint64_t refused = pool_refused();
    if (refused)
        dt_session_note(s, "cupti.buffers",
                        "the pool of %u buffers of %zu bytes ran dry %llu times; CUPTI dropped the "
                        "records it could not store (counted as vendor_dropped): raise buffer_count",
                        (unsigned)s->config.buffer_count, s->config.buffer_size,
                        (unsigned long long)refused);
    if (g_subscribed) { g_api.Unsubscribe(g_subscriber); g_subscribed = 0; }
    if (g_thread_type_set) { g_api.SetThreadIdType(g_previous_thread_type); g_thread_type_set = 0; }
    if (!g_early) pool_release();
    pthread_mutex_unlock(&g_lock);
    return r == CUPTI_SUCCESS ? DT_OK : cupti_failure("cuptiActivityFlushAll", r);
}

static int cupti_clock(uint64_t *ns)
{
    return g_api.GetTimestamp && g_api.GetTimestamp(ns) == CUPTI_SUCCESS ? 0 : -1;
}

static dt_status cupti_push_external(uint64_t id)
{
    if (!g_api.ActivityPushExternalCorrelationId)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s lacks cuptiActivityPushExternalCorrelationId", g_path);
    CUptiResult r = g_api.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
    return r == CUPTI_SUCCESS ? DT_OK : cupti_failure("cuptiActivityPushExternalCorrelationId", r);
}

static dt_status cupti_pop_external(void)
{
    if (!g_api.ActivityPopExternalCorrelationId)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "%s lacks cuptiActivityPopExternalCorrelationId", g_path);
    uint64_t last = 0; /* CUPTI writes the popped id: it must be a real pointer */
    CUptiResult r = g_api.ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    return r == CUPTI_SUCCESS ? DT_OK : cupti_failure("cuptiActivityPopExternalCorrelationId", r);
}

const dt_backend dt_backend_cupti = {
    .name = "cupti",
    .vendor = "NVIDIA CUDA (CUPTI)",
    .api_category = "cuda",
    .probe = cupti_probe,
    .prepare = dt_cupti_prepare,
    .start = cupti_start,
    .flush = cupti_flush,
    .stop = cupti_stop,
    .clock = cupti_clock,
    .push_external = cupti_push_external,
    .pop_external = cupti_pop_external,
};

#else /* !DT_HAVE_CUPTI */

#ifndef DT_CUPTI_ABSENT_REASON
#define DT_CUPTI_ABSENT_REASON "built without CUPTI headers: set CUDA_HOME and rebuild"
#endif

void dt_cupti_early_init(void) {}

dt_status dt_cupti_prepare(void)
{
    return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "cupti: %s", DT_CUPTI_ABSENT_REASON);
}

static dt_status cupti_probe(dt_backend_status *st)
{
    st->available = 0;
    snprintf(st->reason, sizeof st->reason, "%s", DT_CUPTI_ABSENT_REASON);
    return DT_OK;
}

static dt_status cupti_start(dt_session *s)
{
    (void)s;
    return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "cupti: %s", DT_CUPTI_ABSENT_REASON);
}

const dt_backend dt_backend_cupti = {
    .name = "cupti",
    .vendor = "NVIDIA CUDA (CUPTI)",
    .api_category = "cuda",
    .probe = cupti_probe,
    .prepare = dt_cupti_prepare,
    .start = cupti_start,
};

#endif /* DT_HAVE_CUPTI */
