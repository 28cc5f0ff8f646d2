/*
 * TOPSPTI personality of the emulator: libtopspti.so with the entry points
 * and record layouts of src/backends/topspti_abi.h.
 *
 * Build variants (same source):
 *   EMU_TOPSPTI_MINIMAL    only the six entry points every TOPSPTI client
 *                          needs, so that clients can be tested degraded;
 *   EMU_TOPSPTI_NO_MARKER  without the emulator marker symbol, standing in
 *                          for a real vendor library.
 */
#include <stdint.h>
#include <string.h>

#include "backends/topspti_abi.h"
#include "cf_records.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

/* The ABI header declares only function pointer types; these are the
   definitions' prototypes. */
EXPORT TopsptiResult topsptiActivityRegisterCallbacks(Topspti_BuffersCallbackRequestFunc,
                                                      Topspti_BuffersCallbackCompleteFunc);
EXPORT TopsptiResult topsptiActivityEnable(Topspti_ActivityKind);
EXPORT TopsptiResult topsptiActivityDisable(Topspti_ActivityKind);
EXPORT TopsptiResult topsptiActivityFlushAll(uint32_t);
EXPORT TopsptiResult topsptiActivityGetNextRecord(uint8_t *, size_t, Topspti_Activity **);
EXPORT TopsptiResult topsptiGetTimestamp(uint64_t *);
EXPORT int topsGetDeviceCount(int *);
EXPORT TopsptiResult topsptiSubscribe(Topspti_SubscriberHandle *, Topspti_CallbackFunc, void *);
EXPORT TopsptiResult topsptiUnsubscribe(Topspti_SubscriberHandle);
EXPORT TopsptiResult topsptiEnableDomain(uint32_t, Topspti_SubscriberHandle, Topspti_CallbackDomain);
EXPORT TopsptiResult topsptiEnableAllDomains(uint32_t, Topspti_SubscriberHandle);
EXPORT TopsptiResult topsptiGetCallbackName(Topspti_CallbackDomain, uint32_t, const char **);
EXPORT TopsptiResult topsptiGetVersion(uint32_t *);
EXPORT TopsptiResult topsptiActivityGetNumDroppedRecords(size_t *);
EXPORT TopsptiResult topsptiSetThreadIdType(Topspti_ActivityThreadIdType);
EXPORT TopsptiResult topsptiGetThreadIdType(Topspti_ActivityThreadIdType *);
EXPORT TopsptiResult topsptiActivityFlushPeriod(uint32_t);

/* The marker lives in its own section so that AddressSanitizer leaves it
   alone: variants loaded into one process all define it, which it would
   otherwise report as a one-definition-rule violation. */
#ifndef EMU_TOPSPTI_NO_MARKER
EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_topspti_emulator[] =
    "devtrace TOPSPTI emulator, ABI of topspti_abi.h";
#endif

/* ------------------------------------------------------------------ */
/* Callback names                                                      */
/* ------------------------------------------------------------------ */
static const char *const runtime_names[TOPSPTI_RUNTIME_TRACE_CBID_SIZE] = {
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemset] = "topsMemset",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemsetAsync] = "topsMemsetAsync",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpy] = "topsMemcpy",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyAsync] = "topsMemcpyAsync",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyHtoD] = "topsMemcpyHtoD",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoH] = "topsMemcpyDtoH",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoD] = "topsMemcpyDtoD",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsModuleLaunchKernel] = "topsModuleLaunchKernel",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel] = "topsLaunchKernel",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsDeviceSynchronize] = "topsDeviceSynchronize",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsSetDevice] = "topsSetDevice",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsGetDevice] = "topsGetDevice",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsStreamCreate] = "topsStreamCreate",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsStreamSynchronize] = "topsStreamSynchronize",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsMalloc] = "topsMalloc",
    [TOPSPTI_RUNTIME_TRACE_CBID_topsFree] = "topsFree",
};

static const char *topspti_callback_name(emu_domain domain, uint32_t cbid)
{
    if (domain != EMU_DOMAIN_RUNTIME || cbid >= TOPSPTI_RUNTIME_TRACE_CBID_SIZE)
        return NULL;
    return runtime_names[cbid];
}

/* TOPSPTI makes no driver API calls (none are usable on real SDKs either). */
static uint32_t topspti_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    if (domain != EMU_DOMAIN_RUNTIME)
        return 0;
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel;
    case EMU_OP_MEMCPY:
        switch (ck) {
        case EMU_COPY_HTOD: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyHtoD;
        case EMU_COPY_DTOH: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoH;
        case EMU_COPY_DTOD: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoD;
        default: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpy;
        }
    case EMU_OP_MEMCPY_ASYNC: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyAsync;
    case EMU_OP_MEMSET: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemset;
    case EMU_OP_MEMSET_ASYNC: return TOPSPTI_RUNTIME_TRACE_CBID_topsMemsetAsync;
    case EMU_OP_STREAM_SYNCHRONIZE: return TOPSPTI_RUNTIME_TRACE_CBID_topsStreamSynchronize;
    case EMU_OP_DEVICE_SYNCHRONIZE: return TOPSPTI_RUNTIME_TRACE_CBID_topsDeviceSynchronize;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ */
/* Records: the CUPTI family's layouts, as topspti_abi.h declares them   */
/* ------------------------------------------------------------------ */
static const emu_cf_options records = {
    .kernel_kind = TOPSPTI_ACTIVITY_KIND_KERNEL,
    .copies_name_devices = 1,
    .latency_timestamps = 1,
    .kernel_size = TOPSPTI_ACTIVITY_KERNEL_SIZE,
    .memcpy_size = TOPSPTI_ACTIVITY_MEMCPY_SIZE,
    .memset_size = TOPSPTI_ACTIVITY_MEMSET_SIZE,
};

static size_t topspti_record_size(emu_rec_kind kind)
{
    /* no external-correlation records in TOPSPTI */
    return kind == EMU_REC_EXTERNAL ? 0 : emu_cf_record_size(kind, &records);
}

static void topspti_write_record(uint8_t *dst, const emu_activity *a) { emu_cf_write_record(dst, a, &records); }

static void topspti_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size,
                                    size_t valid_size)
{
    ((Topspti_BuffersCallbackCompleteFunc)(void *)client_fn)(buffer, size, valid_size);
}

const struct emu_vendor emu_vendor_impl = {
    .name = "topspti",
    .record_size = topspti_record_size,
    .write_record = topspti_write_record,
    .record_kind = emu_cf_record_kind,
    .complete_buffer = topspti_complete_buffer,
    .invoke_callback = emu_cf_invoke_callback,
    .cbid = topspti_cbid,
    .callback_name = topspti_callback_name,
    /* TOPSPTI API v4 reports pthread ids until told otherwise */
    .default_thread_id_type = EMU_TID_PTHREAD,
};

/* ------------------------------------------------------------------ */
/* Exported TOPSPTI entry points                                       */
/* ------------------------------------------------------------------ */
static int kind_map(Topspti_ActivityKind kind, emu_rec_kind *out)
{
    switch (kind) {
    case TOPSPTI_ACTIVITY_KIND_KERNEL: *out = EMU_REC_KERNEL; return 1;
    case TOPSPTI_ACTIVITY_KIND_MEMCPY: *out = EMU_REC_MEMCPY; return 1;
    case TOPSPTI_ACTIVITY_KIND_MEMSET: *out = EMU_REC_MEMSET; return 1;
    case TOPSPTI_ACTIVITY_KIND_RUNTIME: *out = EMU_REC_RUNTIME; return 1;
    case TOPSPTI_ACTIVITY_KIND_DRIVER: *out = EMU_REC_DRIVER; return 1;
    default: return 0;
    }
}

static TopsptiResult result_of(emu_status st)
{
    switch (st) {
    case EMU_ST_OK: return TOPSPTI_SUCCESS;
    case EMU_ST_INVALID: return TOPSPTI_ERROR_INVALID_PARAMETER;
    case EMU_ST_BUSY: return TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    case EMU_ST_NOT_SUBSCRIBED: return TOPSPTI_ERROR_INVALID_PARAMETER;
    case EMU_ST_END: return TOPSPTI_ERROR_MAX_LIMIT_REACHED;
    case EMU_ST_UNKNOWN_KIND: return TOPSPTI_ERROR_INVALID_KIND;
    case EMU_ST_TRUNCATED: return TOPSPTI_ERROR_INVALID_PARAMETER;
    }
    return TOPSPTI_ERROR_UNKNOWN;
}

EXPORT TopsptiResult topsptiActivityRegisterCallbacks(Topspti_BuffersCallbackRequestFunc request,
                                                      Topspti_BuffersCallbackCompleteFunc complete)
{
    return result_of(emu_core_register_buffers((emu_request_fn)request,
                                               (emu_generic_fn)(void *)complete));
}

static TopsptiResult set_kind(Topspti_ActivityKind kind, int on)
{
    emu_rec_kind k;
    if (!kind_map(kind, &k))
        return TOPSPTI_ERROR_INVALID_KIND;
    return result_of(emu_core_enable(k, on));
}

EXPORT TopsptiResult topsptiActivityEnable(Topspti_ActivityKind kind)
{
    return set_kind(kind, 1);
}

EXPORT TopsptiResult topsptiActivityDisable(Topspti_ActivityKind kind)
{
    return set_kind(kind, 0);
}

EXPORT TopsptiResult topsptiActivityFlushAll(uint32_t flag)
{
    return result_of(emu_core_flush_all((flag & TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0));
}

EXPORT TopsptiResult topsptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                  Topspti_Activity **record)
{
    if (!record)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    uint8_t *rec = (uint8_t *)*record;
    emu_status st = emu_core_next_record(buffer, validBufferSizeBytes, &rec);
    if (st == EMU_ST_OK || st == EMU_ST_UNKNOWN_KIND || st == EMU_ST_TRUNCATED)
        *record = (Topspti_Activity *)(void *)rec;
    return result_of(st);
}

EXPORT TopsptiResult topsptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    *timestamp = emu_core_timestamp();
    return TOPSPTI_SUCCESS;
}

#ifndef EMU_TOPSPTI_MINIMAL
/* The emulated runtime's device count, looked up by clients through dlsym. */
EXPORT int topsGetDeviceCount(int *count)
{
    if (!count)
        return 1;
    *count = emu_device_count();
    return 0;
}

EXPORT TopsptiResult topsptiSubscribe(Topspti_SubscriberHandle *subscriber, Topspti_CallbackFunc callback,
                                      void *userdata)
{
    if (!subscriber || !callback)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    void *h = NULL;
    emu_status st = emu_core_subscribe(&h, (emu_generic_fn)(void *)callback, userdata);
    if (st == EMU_ST_OK)
        *subscriber = (Topspti_SubscriberHandle)h;
    return result_of(st);
}

EXPORT TopsptiResult topsptiUnsubscribe(Topspti_SubscriberHandle subscriber)
{
    return result_of(emu_core_unsubscribe((void *)subscriber));
}

EXPORT TopsptiResult topsptiEnableDomain(uint32_t enable, Topspti_SubscriberHandle subscriber,
                                         Topspti_CallbackDomain domain)
{
    emu_domain d;
    if (domain == TOPSPTI_CB_DOMAIN_RUNTIME_API)
        d = EMU_DOMAIN_RUNTIME;
    else if (domain == TOPSPTI_CB_DOMAIN_DRIVER_API)
        d = EMU_DOMAIN_DRIVER;
    else
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    return result_of(emu_core_enable_domain((void *)subscriber, d, enable != 0));
}

EXPORT TopsptiResult topsptiEnableAllDomains(uint32_t enable, Topspti_SubscriberHandle subscriber)
{
    emu_status st = emu_core_enable_domain((void *)subscriber, EMU_DOMAIN_RUNTIME, enable != 0);
    if (st == EMU_ST_OK)
        st = emu_core_enable_domain((void *)subscriber, EMU_DOMAIN_DRIVER, enable != 0);
    return result_of(st);
}

EXPORT TopsptiResult topsptiGetCallbackName(Topspti_CallbackDomain domain, uint32_t cbid, const char **name)
{
    if (!name)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    const char *n = NULL;
    if (domain == TOPSPTI_CB_DOMAIN_RUNTIME_API)
        n = topspti_callback_name(EMU_DOMAIN_RUNTIME, cbid);
    if (!n)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    *name = n;
    return TOPSPTI_SUCCESS;
}

EXPORT TopsptiResult topsptiGetVersion(uint32_t *version)
{
    if (!version)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    *version = 4;
    return TOPSPTI_SUCCESS;
}

EXPORT TopsptiResult topsptiActivityGetNumDroppedRecords(size_t *dropped)
{
    if (!dropped)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    *dropped = emu_core_take_dropped();
    return TOPSPTI_SUCCESS;
}

EXPORT TopsptiResult topsptiSetThreadIdType(Topspti_ActivityThreadIdType type)
{
    if (type == TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT)
        emu_core_set_thread_id_type(EMU_TID_PTHREAD);
    else if (type == TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        emu_core_set_thread_id_type(EMU_TID_SYSTEM);
    else
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    return TOPSPTI_SUCCESS;
}

EXPORT TopsptiResult topsptiGetThreadIdType(Topspti_ActivityThreadIdType *type)
{
    if (!type)
        return TOPSPTI_ERROR_INVALID_PARAMETER;
    *type = emu_core_get_thread_id_type() == EMU_TID_SYSTEM ? TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                                                            : TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    return TOPSPTI_SUCCESS;
}

EXPORT TopsptiResult topsptiActivityFlushPeriod(uint32_t time_ms)
{
    return result_of(emu_core_flush_period(time_ms));
}
#endif /* EMU_TOPSPTI_MINIMAL */
