/*
 * CNPAPI personality of the emulator: libcnpapi.so with the entry points,
 * records and callback data of src/backends/cnpapi_abi.h.
 *
 * As the public clients use the library (cnpapi_abi.h, [U1]-[U3]):
 *  - cnpapiInit comes first (with DEVTRACE_EMU_FAIL=no_driver it answers
 *    CNPAPI_ERROR_NO_DRIVER): activity calls before it answer
 *    CNPAPI_ERROR_NOT_INITIALIZED (inferred: every public client calls it
 *    first); cnpapiRelease detaches the client;
 *  - cnpapiGetTimestamp returns the time, in a clock of its own (a counter
 *    from about 11 days, +9 ppm);
 *  - cnpapiActivityFlushAll takes nothing and hands back everything;
 *  - there is no dropped-record query: drops happen and are not told;
 *  - copies go to MEMCPY records, peer copies to MEMCPY_PTOP records (both
 *    in 120-byte slots, the iterator's stride); API records of CNRT and
 *    CNDRV calls share one layout, told apart by type;
 *  - an emulated collective is a cnclAllReduce: its CNCL_API record spans
 *    the collective's work, and the driver launch CNCL makes (cnInvokeKernel)
 *    carries the same correlation id (how a real CNCL call's records relate
 *    is to be checked on hardware).
 *
 * Build variant (same source): EMU_CNPAPI_MINIMAL, without the optional
 * entry points (no callbacks, no names, no external correlation).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cnpapi_abi.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

/* A type no CNPAPI release defines. */
#define EMU_CNPAPI_UNKNOWN_TYPE 1000u
#define EMU_CNPAPI_UNKNOWN_SIZE 24u
/* Copies of either kind take the larger record's slot. */
#define EMU_CNPAPI_COPY_SLOT DT_CNPAPI_MEMCPY_PTOP_SIZE
/* The API version cnpapiGetLibVersion reports. */
#define EMU_CNPAPI_MAJOR 1
#define EMU_CNPAPI_MINOR 15
#define EMU_CNPAPI_PATCH 0

EXPORT cnpapiResult cnpapiInit(void);
EXPORT cnpapiResult cnpapiRelease(void);
EXPORT uint64_t cnpapiGetTimestamp(void);
EXPORT cnpapiResult cnpapiGetLibVersion(int *major, int *minor, int *patch);
EXPORT cnpapiResult cnpapiGetDeviceCount(int *count);
EXPORT cnpapiResult cnpapiActivityRegisterCallbacks(dt_cnpapi_request_fn request, dt_cnpapi_complete_fn complete);
EXPORT cnpapiResult cnpapiActivityEnable(cnpapiActivityType type);
EXPORT cnpapiResult cnpapiActivityDisable(cnpapiActivityType type);
EXPORT cnpapiResult cnpapiActivityFlushAll(void);
EXPORT cnpapiResult cnpapiActivityGetNextRecord(void *buffer, size_t valid, cnpapiActivity **record);
#ifndef EMU_CNPAPI_MINIMAL
EXPORT cnpapiResult cnpapiActivityPushExternalCorrelationId(cnpapiActivityExternalCorrelationType type, uint64_t id);
EXPORT cnpapiResult cnpapiActivityPopExternalCorrelationId(cnpapiActivityExternalCorrelationType type,
                                                           uint64_t *last);
EXPORT cnpapiResult cnpapiSubscribe(cnpapi_SubscriberHandle *subscriber, cnpapi_CallbackFunc callback,
                                    void *userdata);
EXPORT cnpapiResult cnpapiUnsubscribe(cnpapi_SubscriberHandle subscriber);
EXPORT cnpapiResult cnpapiEnableDomain(uint32_t enable, cnpapi_SubscriberHandle subscriber,
                                       cnpapi_CallbackDomain domain);
EXPORT cnpapiResult cnpapiEnableCallback(uint32_t enable, cnpapi_SubscriberHandle subscriber,
                                         cnpapi_CallbackDomain domain, cnpapi_CallbackId cbid);
EXPORT cnpapiResult cnpapiGetCallbackName(cnpapi_CallbackDomain domain, uint32_t cbid, const char **name);
EXPORT cnpapiResult cnpapiGetResultString(cnpapiResult result, const char **text);
#endif

/* In its own section, as every emulator's marker (AddressSanitizer and
   variants loaded into one process). */
EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_emulator_cnpapi[] =
    "devtrace cnpapi emulator, ABI of cnpapi_abi.h";

static int initialised;

/* ------------------------------------------------------------------ */
/* Callback ids and names                                              */
/* ------------------------------------------------------------------ */
static const char *cnpapi_callback_name(emu_domain domain, uint32_t cbid)
{
    if (domain == EMU_DOMAIN_RUNTIME) return cbid < DT_CNPAPI_CNRT_NAMED ? dt__cnpapi_cnrt_names[cbid] : NULL;
    return cbid < DT_CNPAPI_CNDRV_NAMED ? dt__cnpapi_cndrv_names[cbid] : NULL;
}

static uint32_t cnpapi_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    if (domain == EMU_DOMAIN_RUNTIME) {
        switch (op) {
        case EMU_OP_LAUNCH_KERNEL: return DT_CNPAPI_CNRT_INVOKE_KERNEL;
        case EMU_OP_MEMCPY: return DT_CNPAPI_CNRT_MEMCPY;
        case EMU_OP_MEMCPY_ASYNC: return DT_CNPAPI_CNRT_MEMCPY_ASYNC;
        case EMU_OP_MEMSET: return DT_CNPAPI_CNRT_MEMSET;
        case EMU_OP_MEMSET_ASYNC: return DT_CNPAPI_CNRT_MEMSET_ASYNC;
        case EMU_OP_STREAM_SYNCHRONIZE: return DT_CNPAPI_CNRT_QUEUE_SYNC;
        case EMU_OP_DEVICE_SYNCHRONIZE: return DT_CNPAPI_CNRT_SYNC_DEVICE;
        default: return 0; /* a collective is CNCL's, not CNRT's */
        }
    }
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL:
    case EMU_OP_COLLECTIVE: return DT_CNPAPI_CNDRV_INVOKE_KERNEL;
    case EMU_OP_MEMCPY: return ck == EMU_COPY_PTOP ? DT_CNPAPI_CNDRV_MEMCPY_PEER : DT_CNPAPI_CNDRV_MEMCPY;
    case EMU_OP_MEMCPY_ASYNC:
        return ck == EMU_COPY_PTOP ? DT_CNPAPI_CNDRV_MEMCPY_PEER_ASYNC : DT_CNPAPI_CNDRV_MEMCPY_ASYNC;
    case EMU_OP_MEMSET: return DT_CNPAPI_CNDRV_MEMSET;
    case EMU_OP_MEMSET_ASYNC: return DT_CNPAPI_CNDRV_MEMSET_ASYNC;
    case EMU_OP_STREAM_SYNCHRONIZE: return DT_CNPAPI_CNDRV_QUEUE_SYNC;
    case EMU_OP_DEVICE_SYNCHRONIZE: return DT_CNPAPI_CNDRV_CTX_SYNC;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
static size_t cnpapi_record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL: return DT_CNPAPI_KERNEL_SIZE;
    case EMU_REC_MEMCPY: return EMU_CNPAPI_COPY_SLOT;
    case EMU_REC_MEMSET: return DT_CNPAPI_MEMSET_SIZE;
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER:
    case EMU_REC_COLLECTIVE: return DT_CNPAPI_API_SIZE;
    case EMU_REC_EXTERNAL: return DT_CNPAPI_EXTERNAL_SIZE;
    case EMU_REC_UNKNOWN: return EMU_CNPAPI_UNKNOWN_SIZE;
    default: return 0;
    }
}

static emu_rec_kind cnpapi_record_kind(const uint8_t *rec, size_t avail)
{
    uint32_t type;
    if (avail < sizeof type) return EMU_REC_UNKNOWN;
    memcpy(&type, rec, sizeof type);
    switch (type) {
    case CNPAPI_ACTIVITY_TYPE_KERNEL: return EMU_REC_KERNEL;
    case CNPAPI_ACTIVITY_TYPE_MEMCPY:
    case CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP: return EMU_REC_MEMCPY;
    case CNPAPI_ACTIVITY_TYPE_MEMSET: return EMU_REC_MEMSET;
    case CNPAPI_ACTIVITY_TYPE_CNRT_API: return EMU_REC_RUNTIME;
    case CNPAPI_ACTIVITY_TYPE_CNDRV_API: return EMU_REC_DRIVER;
    case CNPAPI_ACTIVITY_TYPE_CNCL_API: return EMU_REC_COLLECTIVE;
    case CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION: return EMU_REC_EXTERNAL;
    default: return EMU_REC_UNKNOWN;
    }
}

static cnpapiActivityMemcpyType copy_type(emu_copy_kind k)
{
    switch (k) {
    case EMU_COPY_HTOD: return CNPAPI_ACTIVITY_MEMCPY_TYPE_HTOD;
    case EMU_COPY_DTOH: return CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOH;
    case EMU_COPY_DTOD: return CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOD;
    case EMU_COPY_PTOP: return CNPAPI_ACTIVITY_MEMCPY_TYPE_PTOP;
    default: return CNPAPI_ACTIVITY_MEMCPY_TYPE_UNKNOWN;
    }
}

static void write_kernel(uint8_t *dst, const emu_activity *a)
{
    cnpapiActivityKernel k;
    memset(&k, 0, sizeof k);
    k.type = CNPAPI_ACTIVITY_TYPE_KERNEL;
    k.correlation_id = a->correlation;
    k.start = a->start;
    k.end = a->end;
    k.received = a->u.kernel.queued;
    k.queued = a->u.kernel.queued;
    k.submitted = a->u.kernel.submitted;
    k.device_id = a->device;
    k.name = a->u.kernel.name;
    k.queue_id = a->stream;
    k.dimx = (uint32_t)a->u.kernel.grid[0];
    k.dimy = (uint32_t)a->u.kernel.grid[1];
    k.dimz = (uint32_t)a->u.kernel.grid[2];
    k.context_id = a->context;
    memcpy(dst, &k, sizeof k);
}

static void write_memcpy(uint8_t *dst, const emu_activity *a)
{
    uint32_t flags = a->u.memcpy.async ? CNPAPI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    if (a->u.memcpy.copy_kind == EMU_COPY_PTOP) {
        cnpapiActivityMemcpyPtoP m;
        memset(&m, 0, sizeof m);
        m.type = CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP;
        m.flags = flags;
        m.correlation_id = a->correlation;
        m.bytes = a->u.memcpy.bytes;
        m.copy_type = CNPAPI_ACTIVITY_MEMCPY_TYPE_PTOP;
        m.start = a->start;
        m.end = a->end;
        m.device_id = a->device;
        m.src_device_id = a->u.memcpy.src_device;
        m.dst_device_id = a->u.memcpy.dst_device;
        m.queue_id = a->stream;
        m.context_id = a->context;
        memcpy(dst, &m, sizeof m);
        return;
    }
    cnpapiActivityMemcpy m;
    memset(&m, 0, sizeof m);
    m.type = CNPAPI_ACTIVITY_TYPE_MEMCPY;
    m.flags = flags;
    m.correlation_id = a->correlation;
    m.bytes = a->u.memcpy.bytes;
    m.copy_type = copy_type(a->u.memcpy.copy_kind);
    m.start = a->start;
    m.end = a->end;
    m.device_id = a->device;
    m.queue_id = a->stream;
    m.context_id = a->context;
    memcpy(dst, &m, sizeof m);
}

static void write_memset(uint8_t *dst, const emu_activity *a)
{
    cnpapiActivityMemset m;
    memset(&m, 0, sizeof m);
    m.type = CNPAPI_ACTIVITY_TYPE_MEMSET;
    m.flags = a->u.memset.async ? CNPAPI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    m.correlation_id = a->correlation;
    m.bytes = a->u.memset.bytes;
    m.start = a->start;
    m.end = a->end;
    m.device_id = a->device;
    m.queue_id = a->stream;
    m.value = a->u.memset.value;
    m.context_id = a->context;
    memcpy(dst, &m, sizeof m);
}

static void write_api(uint8_t *dst, const emu_activity *a, cnpapiActivityType type, int32_t cbid, uint32_t process,
                      uint32_t thread)
{
    cnpapiActivityAPI r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.correlation_id = a->correlation;
    r.cbid = cbid;
    r.start = a->start;
    r.end = a->end;
    r.process_id = process;
    r.thread_id = thread;
    memcpy(dst, &r, sizeof r);
}

static void cnpapi_write_record(uint8_t *dst, const emu_activity *a)
{
    switch (a->kind) {
    case EMU_REC_KERNEL: write_kernel(dst, a); return;
    case EMU_REC_MEMCPY: write_memcpy(dst, a); return;
    case EMU_REC_MEMSET: write_memset(dst, a); return;
    case EMU_REC_RUNTIME:
        write_api(dst, a, CNPAPI_ACTIVITY_TYPE_CNRT_API, (int32_t)a->u.api.cbid, a->u.api.process, a->u.api.thread);
        return;
    case EMU_REC_DRIVER:
        write_api(dst, a, CNPAPI_ACTIVITY_TYPE_CNDRV_API, (int32_t)a->u.api.cbid, a->u.api.process, a->u.api.thread);
        return;
    case EMU_REC_COLLECTIVE:
        write_api(dst, a, CNPAPI_ACTIVITY_TYPE_CNCL_API, DT_CNPAPI_CNCL_ALL_REDUCE, (uint32_t)getpid(), 0);
        return;
    case EMU_REC_EXTERNAL: {
        cnpapiActivityExternalCorrelation e;
        memset(&e, 0, sizeof e);
        e.type = CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION;
        e.external_type = (cnpapiActivityExternalCorrelationType)a->u.external.external_kind;
        e.external_id = a->u.external.external_id;
        e.correlation_id = a->correlation;
        memcpy(dst, &e, sizeof e);
        return;
    }
    case EMU_REC_UNKNOWN: {
        uint32_t type = EMU_CNPAPI_UNKNOWN_TYPE;
        memcpy(dst, &type, sizeof type);
        memcpy(dst + 8, &a->correlation, sizeof a->correlation);
        return;
    }
    default: return;
    }
}

static void cnpapi_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid_size)
{
    ((dt_cnpapi_complete_fn)(void *)client_fn)((uint64_t *)(void *)buffer, size, valid_size);
}

static void cnpapi_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    cnpapi_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = call->site == EMU_SITE_ENTER ? CNPAPI_API_ENTER : CNPAPI_API_EXIT;
    data.functionName = call->function_name;
    data.functionParams = call->function_params;
    data.functionReturnValue = call->return_value;
    data.symbolName = call->symbol_name;
    data.correlationId = call->correlation;
    cnpapi_CallbackDomain domain = call->domain == EMU_DOMAIN_DRIVER ? CNPAPI_CB_DOMAIN_CNDRV_API
                                                                     : CNPAPI_CB_DOMAIN_CNRT_API;
    ((cnpapi_CallbackFunc)(void *)client_fn)(userdata, domain, (cnpapi_CallbackId)call->cbid, &data);
}

const struct emu_vendor emu_vendor_impl = {
    .name = "cnpapi",
    .record_size = cnpapi_record_size,
    .write_record = cnpapi_write_record,
    .record_kind = cnpapi_record_kind,
    .complete_buffer = cnpapi_complete_buffer,
    .invoke_callback = cnpapi_invoke_callback,
    .cbid = cnpapi_cbid,
    .callback_name = cnpapi_callback_name,
    /* no thread-id type to set: Linux thread ids */
    .default_thread_id_type = EMU_TID_SYSTEM,
    .clock_counter = 1,
    .clock_offset_ns = 950400000000000,
    .clock_drift_ppm = 9.0,
    /* no dropped-record query: drops the vendor tells are not drops it can
       exhibit (a client that lends no buffer still loses records, untold) */
    .unsupported_faults = (1u << EMU_FAULT_VENDOR_DROPPED) | (1u << EMU_FAULT_NO_BUFFER),
};

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */
static cnpapiResult result_of(emu_status st)
{
    switch (st) {
    case EMU_ST_OK: return CNPAPI_SUCCESS;
    case EMU_ST_INVALID: return CNPAPI_ERROR_INVALID_ARGUMENT;
    case EMU_ST_BUSY: return CNPAPI_ERROR_ALREADY_IN_USE;
    case EMU_ST_NOT_SUBSCRIBED: return CNPAPI_ERROR_INVALID_ARGUMENT;
    case EMU_ST_END: return CNPAPI_ERROR_MAX_LIMIT_REACHED;
    case EMU_ST_UNKNOWN_KIND: return CNPAPI_ERROR_UNKNOWN; /* no INVALID_KIND in cnpapiResult */
    case EMU_ST_TRUNCATED: return CNPAPI_ERROR_INVALID_ARGUMENT;
    }
    return CNPAPI_ERROR_UNKNOWN;
}

/* DEVTRACE_EMU_FAIL=no_driver: the library cannot reach a driver (the
   answer is inferred from the result code's name). */
cnpapiResult cnpapiInit(void)
{
    const char *fail = getenv("DEVTRACE_EMU_FAIL");
    if (fail && strcmp(fail, "no_driver") == 0) return CNPAPI_ERROR_NO_DRIVER;
    __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    return CNPAPI_SUCCESS;
}

cnpapiResult cnpapiRelease(void)
{
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CNPAPI_ERROR_NOT_INITIALIZED;
    __atomic_store_n(&initialised, 0, __ATOMIC_RELEASE);
    return result_of(emu_core_finalize());
}

static int ready(void)
{
    return __atomic_load_n(&initialised, __ATOMIC_ACQUIRE);
}

uint64_t cnpapiGetTimestamp(void)
{
    return emu_core_timestamp();
}

cnpapiResult cnpapiGetLibVersion(int *major, int *minor, int *patch)
{
    if (!major || !minor || !patch) return CNPAPI_ERROR_INVALID_ARGUMENT;
    *major = EMU_CNPAPI_MAJOR;
    *minor = EMU_CNPAPI_MINOR;
    *patch = EMU_CNPAPI_PATCH;
    return CNPAPI_SUCCESS;
}

cnpapiResult cnpapiGetDeviceCount(int *count)
{
    if (!count) return CNPAPI_ERROR_INVALID_ARGUMENT;
    *count = emu_device_count();
    return CNPAPI_SUCCESS;
}

cnpapiResult cnpapiActivityRegisterCallbacks(dt_cnpapi_request_fn request, dt_cnpapi_complete_fn complete)
{
    if (!ready()) return CNPAPI_ERROR_NOT_INITIALIZED;
    return result_of(emu_core_register_buffers((emu_request_fn)(void *)request, (emu_generic_fn)(void *)complete));
}

/* MEMCPY and MEMCPY_PTOP are one emulator kind, on while either is. */
static int copies_on[2];

static cnpapiResult set_type(cnpapiActivityType type, int on)
{
    if (!ready()) return CNPAPI_ERROR_NOT_INITIALIZED;
    switch (type) {
    case CNPAPI_ACTIVITY_TYPE_KERNEL: return result_of(emu_core_enable(EMU_REC_KERNEL, on));
    case CNPAPI_ACTIVITY_TYPE_MEMCPY:
    case CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP:
        copies_on[type == CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP] = on;
        return result_of(emu_core_enable(EMU_REC_MEMCPY, copies_on[0] || copies_on[1]));
    case CNPAPI_ACTIVITY_TYPE_MEMSET: return result_of(emu_core_enable(EMU_REC_MEMSET, on));
    case CNPAPI_ACTIVITY_TYPE_CNRT_API: return result_of(emu_core_enable(EMU_REC_RUNTIME, on));
    case CNPAPI_ACTIVITY_TYPE_CNDRV_API: return result_of(emu_core_enable(EMU_REC_DRIVER, on));
    case CNPAPI_ACTIVITY_TYPE_CNCL_API: return result_of(emu_core_enable(EMU_REC_COLLECTIVE, on));
#ifndef EMU_CNPAPI_MINIMAL
    case CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION: return result_of(emu_core_enable(EMU_REC_EXTERNAL, on));
#endif
    default: return CNPAPI_ERROR_INVALID_ARGUMENT;
    }
}

cnpapiResult cnpapiActivityEnable(cnpapiActivityType type)
{
    return set_type(type, 1);
}

cnpapiResult cnpapiActivityDisable(cnpapiActivityType type)
{
    return set_type(type, 0);
}

cnpapiResult cnpapiActivityFlushAll(void)
{
    if (!ready()) return CNPAPI_ERROR_NOT_INITIALIZED;
    return result_of(emu_core_flush_all(1));
}

cnpapiResult cnpapiActivityGetNextRecord(void *buffer, size_t valid, cnpapiActivity **record)
{
    if (!record || !buffer) return CNPAPI_ERROR_INVALID_ARGUMENT;
    uint8_t *rec = (uint8_t *)*record;
    emu_status st = emu_core_next_record(buffer, valid, &rec);
    if (st == EMU_ST_OK || st == EMU_ST_UNKNOWN_KIND || st == EMU_ST_TRUNCATED)
        *record = (cnpapiActivity *)(void *)rec;
    return result_of(st);
}

#ifndef EMU_CNPAPI_MINIMAL
cnpapiResult cnpapiActivityPushExternalCorrelationId(cnpapiActivityExternalCorrelationType type, uint64_t id)
{
    return result_of(emu_core_push_external((uint32_t)type, id));
}

cnpapiResult cnpapiActivityPopExternalCorrelationId(cnpapiActivityExternalCorrelationType type, uint64_t *last)
{
    uint64_t id = 0;
    emu_status st = emu_core_pop_external((uint32_t)type, &id);
    if (st == EMU_ST_OK && last) *last = id;
    return result_of(st);
}

cnpapiResult cnpapiSubscribe(cnpapi_SubscriberHandle *subscriber, cnpapi_CallbackFunc callback, void *userdata)
{
    if (!subscriber || !callback) return CNPAPI_ERROR_INVALID_ARGUMENT;
    void *h = NULL;
    emu_status st = emu_core_subscribe(&h, (emu_generic_fn)(void *)callback, userdata);
    if (st == EMU_ST_OK) *subscriber = h;
    return result_of(st);
}

cnpapiResult cnpapiUnsubscribe(cnpapi_SubscriberHandle subscriber)
{
    return result_of(emu_core_unsubscribe(subscriber));
}

static int domain_of(cnpapi_CallbackDomain domain, emu_domain *out)
{
    if (domain == CNPAPI_CB_DOMAIN_CNRT_API) *out = EMU_DOMAIN_RUNTIME;
    else if (domain == CNPAPI_CB_DOMAIN_CNDRV_API) *out = EMU_DOMAIN_DRIVER;
    else return 0;
    return 1;
}

cnpapiResult cnpapiEnableDomain(uint32_t enable, cnpapi_SubscriberHandle subscriber, cnpapi_CallbackDomain domain)
{
    emu_domain d;
    /* the emulator makes no calls in the other domains: nothing to switch */
    if (!domain_of(domain, &d))
        return (uint32_t)domain <= CNPAPI_CB_DOMAIN_CNCL_API ? CNPAPI_SUCCESS : CNPAPI_ERROR_INVALID_ARGUMENT;
    return result_of(emu_core_enable_domain(subscriber, d, enable != 0));
}

/* The emulator switches whole domains: one callback id switches its domain. */
cnpapiResult cnpapiEnableCallback(uint32_t enable, cnpapi_SubscriberHandle subscriber, cnpapi_CallbackDomain domain,
                                  cnpapi_CallbackId cbid)
{
    (void)cbid;
    return cnpapiEnableDomain(enable, subscriber, domain);
}

cnpapiResult cnpapiGetCallbackName(cnpapi_CallbackDomain domain, uint32_t cbid, const char **name)
{
    if (!name) return CNPAPI_ERROR_INVALID_ARGUMENT;
    const char *n = NULL;
    emu_domain d;
    if (domain == CNPAPI_CB_DOMAIN_CNCL_API)
        n = cbid < DT_CNPAPI_CNCL_NAMED ? dt__cnpapi_cncl_names[cbid] : NULL;
    else if (domain_of(domain, &d))
        n = cnpapi_callback_name(d, cbid);
    if (!n) return CNPAPI_ERROR_INVALID_ARGUMENT;
    *name = n;
    return CNPAPI_SUCCESS;
}

cnpapiResult cnpapiGetResultString(cnpapiResult result, const char **text)
{
    static const char *const names[] = {
        [CNPAPI_SUCCESS] = "CNPAPI_SUCCESS",
        [CNPAPI_ERROR_NOT_INITIALIZED] = "CNPAPI_ERROR_NOT_INITIALIZED",
        [CNPAPI_ERROR_INVALID_DEVICE] = "CNPAPI_ERROR_INVALID_DEVICE",
        [CNPAPI_ERROR_INVALID_ARGUMENT] = "CNPAPI_ERROR_INVALID_ARGUMENT",
        [CNPAPI_ERROR_INSUFFICIENT_MEMORY] = "CNPAPI_ERROR_INSUFFICIENT_MEMORY",
        [CNPAPI_ERROR_NO_DRIVER] = "CNPAPI_ERROR_NO_DRIVER",
        [CNPAPI_ERROR_UNKNOWN] = "CNPAPI_ERROR_UNKNOWN",
        [CNPAPI_ERROR_MAX_LIMIT_REACHED] = "CNPAPI_ERROR_MAX_LIMIT_REACHED",
        [CNPAPI_ERROR_ALREADY_IN_USE] = "CNPAPI_ERROR_ALREADY_IN_USE",
        [CNPAPI_ERROR_UNSUPPORTED_DRIVER_VERSION] = "CNPAPI_ERROR_UNSUPPORTED_DRIVER_VERSION",
    };
    if (!text) return CNPAPI_ERROR_INVALID_ARGUMENT;
    if ((unsigned)result >= sizeof names / sizeof names[0] || !names[result]) return CNPAPI_ERROR_INVALID_ARGUMENT;
    *text = names[result];
    return CNPAPI_SUCCESS;
}
#endif /* EMU_CNPAPI_MINIMAL */
