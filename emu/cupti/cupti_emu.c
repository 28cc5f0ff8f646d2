/*
 * CUPTI personality of the emulator: a libcupti.so.13 stand-in with CUPTI's
 * entry points, record layouts (through the toolkit's headers), realtime
 * clock, per-thread external-correlation stacks and iterator semantics
 * (MAX_LIMIT_REACHED at the end of the valid data and on a record cut short,
 * INVALID_KIND on a kind CUPTI never defined).
 *
 * It also stands in for CUPTI's failure modes, chosen by
 * DEVTRACE_EMU_CUPTI_FAIL, read at every arming call:
 *   no_driver   arming calls answer CUPTI_ERROR_UNKNOWN, as CUPTI does
 *               without libcuda.so.1;
 *   busy        cuptiSubscribe answers MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as
 *               when Nsight Systems or another tool holds CUPTI;
 *   old_driver  arming calls answer CUPTI_ERROR_NOT_COMPATIBLE, as with a
 *               driver older than the toolkit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_result.h>
#include <cupti_version.h>

#include "cupti_cbid_names.h"
#include "cupti_records.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const char devtrace_emulator_personality[] = "cupti";

/* ------------------------------------------------------------------ */
/* Personality state                                                   */
/* ------------------------------------------------------------------ */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int kernel_on, concurrent_on, memcpy2_on, device_on, latency;
    int devices_delivered;
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
} g;

enum { FAIL_NONE, FAIL_NO_DRIVER, FAIL_BUSY, FAIL_OLD_DRIVER };

static int fail_mode(void)
{
    const char *v = getenv("DEVTRACE_EMU_CUPTI_FAIL");
    if (!v || !*v) return FAIL_NONE;
    if (strcmp(v, "no_driver") == 0) return FAIL_NO_DRIVER;
    if (strcmp(v, "busy") == 0) return FAIL_BUSY;
    if (strcmp(v, "old_driver") == 0) return FAIL_OLD_DRIVER;
    return FAIL_NONE;
}

/* The failure an arming call reports in the current mode. */
static CUptiResult arming_failure(void)
{
    switch (fail_mode()) {
    case FAIL_NO_DRIVER: return CUPTI_ERROR_UNKNOWN;
    case FAIL_OLD_DRIVER: return CUPTI_ERROR_NOT_COMPATIBLE;
    default: return CUPTI_SUCCESS;
    }
}

static emu_cupti_options current_options(void)
{
    emu_cupti_options o;
    pthread_mutex_lock(&g_lock);
    o.kernel_kind = g.concurrent_on || !g.kernel_on ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                                    : CUPTI_ACTIVITY_KIND_KERNEL;
    o.peer_as_memcpy2 = g.memcpy2_on;
    o.latency_timestamps = g.latency;
    pthread_mutex_unlock(&g_lock);
    return o;
}

/* ------------------------------------------------------------------ */
/* The emu_vendor interface                                            */
/* ------------------------------------------------------------------ */
static void cupti_write_record(uint8_t *dst, const emu_activity *a)
{
    emu_cupti_options o = current_options();
    emu_cupti_write_record(dst, a, &o);
}

static void cupti_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid_size)
{
    /* CUDA 13 CUPTI hands out per-thread buffers: no context, stream 0. */
    ((CUpti_BuffersCallbackCompleteFunc)(void *)client_fn)(NULL, 0, buffer, size, valid_size);
}

static void cupti_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = call->site == EMU_SITE_ENTER ? CUPTI_API_ENTER : CUPTI_API_EXIT;
    data.functionName = call->function_name;
    data.functionParams = call->function_params;
    data.functionReturnValue = call->return_value;
    data.symbolName = call->symbol_name;
    data.contextUid = call->context_uid;
    data.correlationData = call->correlation_data;
    data.correlationId = call->correlation;
    CUpti_CallbackDomain domain =
        call->domain == EMU_DOMAIN_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    ((CUpti_CallbackFunc)(void *)client_fn)(userdata, domain, call->cbid, &data);
}

static uint32_t cupti_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    if (domain == EMU_DOMAIN_RUNTIME) {
        switch (op) {
        case EMU_OP_LAUNCH_KERNEL: return CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
        case EMU_OP_MEMCPY: return CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020;
        case EMU_OP_MEMCPY_ASYNC: return CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
        case EMU_OP_MEMSET: return CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020;
        case EMU_OP_MEMSET_ASYNC: return CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
        case EMU_OP_STREAM_SYNCHRONIZE: return CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
        case EMU_OP_DEVICE_SYNCHRONIZE: return CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
        default: return 0;
        }
    }
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    case EMU_OP_MEMCPY:
        switch (ck) {
        case EMU_COPY_HTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2;
        case EMU_COPY_DTOH: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
        case EMU_COPY_DTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2;
        case EMU_COPY_PTOP: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer;
        default: return CUPTI_DRIVER_TRACE_CBID_cuMemcpy;
        }
    case EMU_OP_MEMCPY_ASYNC:
        switch (ck) {
        case EMU_COPY_HTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2;
        case EMU_COPY_DTOH: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2;
        case EMU_COPY_DTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2;
        case EMU_COPY_PTOP: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync;
        default: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
        }
    case EMU_OP_MEMSET: return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2;
    case EMU_OP_MEMSET_ASYNC: return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async;
    case EMU_OP_STREAM_SYNCHRONIZE: return CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
    case EMU_OP_DEVICE_SYNCHRONIZE: return CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;
    default: return 0;
    }
}

static const char *cupti_callback_name(emu_domain domain, uint32_t cbid)
{
    if (domain == EMU_DOMAIN_DRIVER)
        return cbid < DT_CUPTI_DRIVER_NAMES_COUNT ? dt_cupti_driver_names[cbid] : NULL;
    return cbid < DT_CUPTI_RUNTIME_NAMES_COUNT ? dt_cupti_runtime_names[cbid] : NULL;
}

const struct emu_vendor emu_vendor_impl = {
    .name = "cupti",
    .record_size = emu_cupti_record_size,
    .write_record = cupti_write_record,
    .record_kind = emu_cupti_record_kind,
    .complete_buffer = cupti_complete_buffer,
    .invoke_callback = cupti_invoke_callback,
    .cbid = cupti_cbid,
    .callback_name = cupti_callback_name,
    .default_thread_id_type = EMU_TID_PTHREAD,
};

/* ------------------------------------------------------------------ */
/* Device records                                                      */
/* ------------------------------------------------------------------ */
static char g_device_names[EMU_MAX_DEVICES][48];

/* CUPTI describes each device once, when its context is created; the
   emulator's devices exist from the start, so they are described as soon as
   both the kind is on and the client has buffers. */
static void deliver_devices(void)
{
    pthread_mutex_lock(&g_lock);
    int go = g.device_on && g.request && g.complete && !g.devices_delivered;
    CUpti_BuffersCallbackRequestFunc request = g.request;
    CUpti_BuffersCallbackCompleteFunc complete = g.complete;
    if (go) g.devices_delivered = 1;
    pthread_mutex_unlock(&g_lock);
    if (!go) return;
    int n = emu_device_count();
    size_t need = (size_t)n * emu_cupti_device_record_size();
    uint8_t *buf = NULL;
    size_t size = 0, max_records = 0;
    request(&buf, &size, &max_records);
    if (!buf) return;
    if (size < need || ((uintptr_t)buf & 7u)) {
        complete(NULL, 0, buf, size, 0);
        return;
    }
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        snprintf(g_device_names[i], sizeof g_device_names[i], "devtrace emulated GPU %d", i);
        memset(buf + used, 0, emu_cupti_device_record_size());
        emu_cupti_write_device(buf + used, (uint32_t)i, g_device_names[i]);
        used += emu_cupti_device_record_size();
    }
    complete(NULL, 0, buf, size, used);
}

/* ------------------------------------------------------------------ */
/* Exported CUPTI entry points                                         */
/* ------------------------------------------------------------------ */
EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

static const char *result_name(CUptiResult r)
{
    switch (r) {
    case CUPTI_SUCCESS: return "CUPTI_SUCCESS";
    case CUPTI_ERROR_INVALID_PARAMETER: return "CUPTI_ERROR_INVALID_PARAMETER";
    case CUPTI_ERROR_MAX_LIMIT_REACHED: return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case CUPTI_ERROR_NOT_COMPATIBLE: return "CUPTI_ERROR_NOT_COMPATIBLE";
    case CUPTI_ERROR_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
    case CUPTI_ERROR_QUEUE_EMPTY: return "CUPTI_ERROR_QUEUE_EMPTY";
    case CUPTI_ERROR_INVALID_KIND: return "CUPTI_ERROR_INVALID_KIND";
    case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED: return "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_UNKNOWN: return "CUPTI_ERROR_UNKNOWN";
    default: return NULL;
    }
}

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
    const char *s = result_name(result);
    if (!s) return CUPTI_ERROR_INVALID_PARAMETER;
    *str = s;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str)
{
    return cuptiGetResultString(result, str);
}

EXPORT CUptiResult CUPTIAPI cuptiGetLastError(void) { return CUPTI_SUCCESS; }
EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) { return CUPTI_SUCCESS; }

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = emu_core_timestamp();
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                           CUpti_BuffersCallbackCompleteFunc complete)
{
    if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
    if (emu_core_register_buffers((emu_request_fn)request, (emu_generic_fn)(void *)complete) != EMU_ST_OK)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    g.request = request;
    g.complete = complete;
    pthread_mutex_unlock(&g_lock);
    deliver_devices();
    return CUPTI_SUCCESS;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, int on)
{
    if (on) {
        CUptiResult f = arming_failure();
        if (f != CUPTI_SUCCESS) return f;
    }
    emu_rec_kind ek;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        pthread_mutex_lock(&g_lock);
        if (kind == CUPTI_ACTIVITY_KIND_KERNEL) g.kernel_on = on;
        else g.concurrent_on = on;
        int any = g.kernel_on || g.concurrent_on;
        pthread_mutex_unlock(&g_lock);
        emu_core_enable(EMU_REC_KERNEL, any);
        return CUPTI_SUCCESS;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: ek = EMU_REC_MEMCPY; break;
    case CUPTI_ACTIVITY_KIND_MEMSET: ek = EMU_REC_MEMSET; break;
    case CUPTI_ACTIVITY_KIND_RUNTIME: ek = EMU_REC_RUNTIME; break;
    case CUPTI_ACTIVITY_KIND_DRIVER: ek = EMU_REC_DRIVER; break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: ek = EMU_REC_EXTERNAL; break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        pthread_mutex_lock(&g_lock);
        g.memcpy2_on = on;
        pthread_mutex_unlock(&g_lock);
        return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_DEVICE:
        pthread_mutex_lock(&g_lock);
        g.device_on = on;
        pthread_mutex_unlock(&g_lock);
        if (on) deliver_devices();
        return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_EVENT:
    case CUPTI_ACTIVITY_KIND_METRIC:
    case CUPTI_ACTIVITY_KIND_EVENT_INSTANCE:
    case CUPTI_ACTIVITY_KIND_METRIC_INSTANCE:
        return CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED;
    default:
        /* Kinds CUPTI has but the emulated device never produces. */
        if ((unsigned)kind == 0 || (unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
        return CUPTI_SUCCESS;
    }
    return emu_core_enable(ek, on) == EMU_ST_OK ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, 1); }
EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, 0); }

EXPORT CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
    pthread_mutex_lock(&g_lock);
    g.latency = enable != 0;
    pthread_mutex_unlock(&g_lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    if (fail_mode() == FAIL_NO_DRIVER) return CUPTI_ERROR_UNKNOWN;
    emu_core_flush_all((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    (void)context; (void)streamId;
    return cuptiActivityFlushAll(flag);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
    emu_core_flush_period(time);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                              size_t *dropped)
{
    (void)context; (void)streamId;
    if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = emu_core_take_dropped();
    return CUPTI_SUCCESS;
}

/* CUPTI's iterator: the stride comes from the record's kind, and a record
   that does not fit in the valid size ends the buffer (MAX_LIMIT_REACHED),
   exactly as the real library answers. */
EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                       CUpti_Activity **record)
{
    if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    uint32_t kind;
    if (*record) {
        uint8_t *cur = (uint8_t *)*record;
        if (cur < buffer || cur >= buffer + validBufferSizeBytes) return CUPTI_ERROR_INVALID_PARAMETER;
        memcpy(&kind, cur, sizeof kind);
        size_t sz = emu_cupti_stride(kind);
        if (sz == 0) return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)(cur - buffer) + sz;
    }
    if (validBufferSizeBytes < sizeof kind || off > validBufferSizeBytes - sizeof kind)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    memcpy(&kind, buffer + off, sizeof kind);
    size_t sz = emu_cupti_stride(kind);
    if (sz == 0) return CUPTI_ERROR_INVALID_KIND;
    if (sz > validBufferSizeBytes - off) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(void *)(buffer + off);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                   uint64_t id)
{
    /* Not an arming call: the failure modes (and their getenv, which would
       cost more than the push itself) do not apply to the per-thread stack. */
    if (kind == CUPTI_EXTERNAL_CORRELATION_KIND_INVALID) return CUPTI_ERROR_INVALID_PARAMETER;
    return emu_core_push_external((uint32_t)kind, id) == EMU_ST_OK ? CUPTI_SUCCESS
                                                                   : CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                  uint64_t *lastId)
{
    /* Stricter than needed on purpose: a client passing NULL here is a bug
       some CUPTI versions crash on. */
    if (!lastId || kind == CUPTI_EXTERNAL_CORRELATION_KIND_INVALID) return CUPTI_ERROR_INVALID_PARAMETER;
    return emu_core_pop_external((uint32_t)kind, lastId) == EMU_ST_OK ? CUPTI_SUCCESS
                                                                     : CUPTI_ERROR_QUEUE_EMPTY;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                           void *userdata)
{
    if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
    int mode = fail_mode();
    if (mode == FAIL_BUSY) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    CUptiResult f = arming_failure();
    if (f != CUPTI_SUCCESS) return f;
    void *h = NULL;
    emu_status st = emu_core_subscribe(&h, (emu_generic_fn)(void *)callback, userdata);
    if (st == EMU_ST_BUSY) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (st != EMU_ST_OK) return CUPTI_ERROR_INVALID_PARAMETER;
    *subscriber = (CUpti_SubscriberHandle)h;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    return emu_core_unsubscribe((void *)subscriber) == EMU_ST_OK ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static int domain_map(CUpti_CallbackDomain d, emu_domain *out)
{
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API) { *out = EMU_DOMAIN_RUNTIME; return 1; }
    if (d == CUPTI_CB_DOMAIN_DRIVER_API) { *out = EMU_DOMAIN_DRIVER; return 1; }
    return 0;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain)
{
    emu_domain d;
    if (!domain_map(domain, &d)) return CUPTI_SUCCESS; /* no such callbacks are ever made */
    return emu_core_enable_domain((void *)subscriber, d, enable != 0) == EMU_ST_OK ? CUPTI_SUCCESS
                                                                                    : CUPTI_ERROR_INVALID_PARAMETER;
}

/* The emulator switches whole domains: enabling one callback id enables its
   domain. */
EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)cbid;
    return cuptiEnableDomain(enable, subscriber, domain);
}

EXPORT CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
    CUptiResult r = cuptiEnableDomain(enable, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (r != CUPTI_SUCCESS) return r;
    return cuptiEnableDomain(enable, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

EXPORT CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
    emu_domain d;
    if (!name || !domain_map(domain, &d)) return CUPTI_ERROR_INVALID_PARAMETER;
    const char *n = cupti_callback_name(d, cbid);
    if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = n;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
    if (type == CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT) emu_core_set_thread_id_type(EMU_TID_PTHREAD);
    else if (type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) emu_core_set_thread_id_type(EMU_TID_SYSTEM);
    else return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
    if (!type) return CUPTI_ERROR_INVALID_PARAMETER;
    *type = emu_core_get_thread_id_type() == EMU_TID_SYSTEM ? CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                                                            : CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    return CUPTI_SUCCESS;
}
