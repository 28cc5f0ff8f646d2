/*
 * devtrace's declaration of Cambricon's CNPAPI (libcnpapi.so, `cnpapi*`
 * symbols): the entry points, enums, records and callback data devtrace
 * uses, with the source of every fact.
 *
 * Sources (public; reference only, nothing copied but the ABI facts):
 *   [H1] cnpapi_activity_api.h, "Copyright 2022 Cambricon, Inc.", Apache-2.0,
 *        a copy vendored in public projects (no release number in it):
 *        activity types, records, external correlation, buffer callbacks,
 *        the activity entry points;
 *   [H2] callbackapi_types.h, "Copyright 2021 Cambricon, Inc.", Apache-2.0
 *        (likewise vendored): cnpapi_CallbackData, cnpapi_CallbackDomain up
 *        to CNNL_EXTRA_API, the callback signature;
 *   [H3] cnpapi_types.h and cnpapi.h (likewise): cnpapiResult values,
 *        cnpapiInit, cnpapiGetTimestamp (returns the time), cnpapiRelease,
 *        cnpapiGetLibVersion, cnpapiGetResultString;
 *   [U1] DeepLink-org/deeplink.framework,
 *        dipu/torch_dipu/csrc_dipu/vendor/camb/CambDeviceActivity.cpp:
 *        cnpapiInit at start, cnpapiSubscribe + cnpapiEnableDomain /
 *        cnpapiEnableCallback per domain, CNCL_API and CNNL_EXTRA_API
 *        kinds, cnpapiGetCallbackName(domain, cbid, &name), the
 *        CUSTOM0/CUSTOM1 external kinds, cnpapiGetTimestamp's own epoch;
 *   [U2] PaddlePaddle's MLU tracer (MluTracer::ProcessCnpapiActivity,
 *        details::ProcessCnpapiActivityRecord) and its custom-device MLU
 *        profiler plugin: cnpapiActivityGetNextRecord ends with
 *        MAX_LIMIT_REACHED (or INSUFFICIENT_MEMORY), cnpapiActivityFlushAll()
 *        takes nothing, cnpapiInit before RegisterCallbacks, cnpapiRelease;
 *   [U3] Cambricon/torch_mlu, third_party/kineto_mlu/libkineto/src/
 *        (CnpapiActivityApi.cpp, its tests) and Oneflow's MLU profiler
 *        (oneflow/core/profiler): CNPAPI_CNDRV_TRACE_CBID_cnInvokeKernel is
 *        the launch, cnpapiEnableCallback per domain (CNCL included),
 *        kernel `received`/`queued` timestamps.
 *
 * READ from [H1]-[H3]: every record layout below (field order and types;
 * offsets follow from LP64 alignment with 4-byte enums, which is how gcc and
 * clang lay them out on x86-64 and aarch64), the activity type values
 * (counted from UNKNOWN = 0 in [H1], explicit in an older copy), the
 * memcpy type values, the external correlation types, the result values,
 * callback domain values 0-5, the callback data layout.
 * INFERRED (no public header shows them):
 *   - CNPAPI_CB_DOMAIN_CNCL_API = 6: [U1] names the domain; [H2] ends at
 *     CNNL_EXTRA_API = 5 with SIZE = 6, so a later release is taken to have
 *     added CNCL there;
 *   - callback ids (cnpapi_cnrt_id.h, cnpapi_cndrv_id.h, cnpapi_cncl_id.h
 *     are not public): devtrace never relies on a number, it names calls
 *     through cnpapiGetCallbackName; the numbers below are the emulator's,
 *     and only its launch ids mark launches;
 *   - the timestamp function's clock: its own epoch ([U1] and [U2] add a
 *     measured gap to reach CLOCK_REALTIME), mapped like any vendor clock;
 *   - there is no dropped-record query and no thread-id type setter in
 *     [H1]-[H3]: drops are not counted, thread ids are what the library
 *     gives.
 */
#ifndef DT_CNPAPI_ABI_H
#define DT_CNPAPI_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported by devtrace's emulator only. */
#define DEVTRACE_CNPAPI_EMULATOR_MARKER "devtrace_emulator_cnpapi"

/* [H3] */
typedef enum {
    CNPAPI_SUCCESS = 0,
    CNPAPI_ERROR_NOT_INITIALIZED = 1,
    CNPAPI_ERROR_INVALID_DEVICE = 2,
    CNPAPI_ERROR_INVALID_ARGUMENT = 3,
    CNPAPI_ERROR_EVENT_GROUP_ENABLED = 4,
    CNPAPI_ERROR_INSUFFICIENT_MEMORY = 5,
    CNPAPI_ERROR_NO_DRIVER = 6,
    CNPAPI_ERROR_RESERVED0 = 7,
    CNPAPI_ERROR_UNKNOWN = 8,
    CNPAPI_ERROR_MAX_LIMIT_REACHED = 9,
    CNPAPI_ERROR_DRIVER_COMMUNICATION_FAILED = 10,
    CNPAPI_ERROR_DEVICE_BUSY = 11,
    CNPAPI_ERROR_ALREADY_IN_USE = 12,
    CNPAPI_ERROR_ACTIVITY_CALLBACK_NOT_REGISTERED = 13,
    CNPAPI_ERROR_ACTIVITY_CALLBACK_ALREADY_REGISTERED = 14,
    CNPAPI_ERROR_UNSUPPORTED_DRIVER_VERSION = 19,
} cnpapiResult;

/* [H1] (values counted from UNKNOWN = 0; an older copy spells 0-12 out) */
typedef enum {
    CNPAPI_ACTIVITY_TYPE_UNKNOWN = 0,
    CNPAPI_ACTIVITY_TYPE_KERNEL = 1,
    CNPAPI_ACTIVITY_TYPE_BANGC = 2,
    CNPAPI_ACTIVITY_TYPE_CNDRV_API = 3,
    CNPAPI_ACTIVITY_TYPE_CNRT_API = 4,
    CNPAPI_ACTIVITY_TYPE_CNML_API = 5,
    CNPAPI_ACTIVITY_TYPE_CNNL_API = 6,
    CNPAPI_ACTIVITY_TYPE_OVERHEAD = 7,
    CNPAPI_ACTIVITY_TYPE_MEMCPY = 9,
    CNPAPI_ACTIVITY_TYPE_MEMSET = 10,
    CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP = 11,
    CNPAPI_ACTIVITY_TYPE_CNNL_EXTRA_API = 12,
    CNPAPI_ACTIVITY_TYPE_NAME = 13,
    CNPAPI_ACTIVITY_TYPE_ATOMIC_OPERATION = 14,
    CNPAPI_ACTIVITY_TYPE_NOTIFIER = 15,
    CNPAPI_ACTIVITY_TYPE_CNCL_API = 16,
    CNPAPI_ACTIVITY_TYPE_DEVICE = 23,
    CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION = 27,
    CNPAPI_ACTIVITY_TYPE_FORCE_INT = 0x7fffffff
} cnpapiActivityType;

/* [H1]: MEMCPY_ASYNC and MEMSET_ASYNC are both bit 0 */
enum { CNPAPI_ACTIVITY_FLAG_NONE = 0, CNPAPI_ACTIVITY_FLAG_MEMCPY_ASYNC = 1, CNPAPI_ACTIVITY_FLAG_MEMSET_ASYNC = 1 };

/* [H1] */
typedef enum {
    CNPAPI_ACTIVITY_MEMCPY_TYPE_UNKNOWN = 0,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_HTOD = 1,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOH = 2,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOD = 3,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_HTOH = 4,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_PTOP = 5,
    CNPAPI_ACTIVITY_MEMCPY_TYPE_FORCE_INT = 0x7fffffff
} cnpapiActivityMemcpyType;

/* [H1] */
typedef enum {
    CNPAPI_EXTERNAL_CORRELATION_TYPE_INVALID = 0,
    CNPAPI_EXTERNAL_CORRELATION_TYPE_UNKNOWN = 1,
    CNPAPI_EXTERNAL_CORRELATION_TYPE_CUSTOM0 = 2,
    CNPAPI_EXTERNAL_CORRELATION_TYPE_CUSTOM1 = 3,
    CNPAPI_EXTERNAL_CORRELATION_TYPE_CUSTOM2 = 4,
    CNPAPI_EXTERNAL_CORRELATION_TYPE_FORCE_INT = 0x7fffffff
} cnpapiActivityExternalCorrelationType;

/* [H2]; CNCL_API's value INFERRED (see above) */
typedef enum {
    CNPAPI_CB_DOMAIN_CNRT_API = 0,
    CNPAPI_CB_DOMAIN_CNML_API = 1,
    CNPAPI_CB_DOMAIN_CNDRV_API = 2,
    CNPAPI_CB_DOMAIN_CNNL_API = 3,
    CNPAPI_CB_DOMAIN_CNPX_API = 4,
    CNPAPI_CB_DOMAIN_CNNL_EXTRA_API = 5,
    CNPAPI_CB_DOMAIN_CNCL_API = 6,
    CNPAPI_CB_DOMAIN_FORCE_INT = 0x7fffffff
} cnpapi_CallbackDomain;

/* [H2] */
typedef enum { CNPAPI_API_ENTER = 0, CNPAPI_API_EXIT = 1 } cnpapi_CallbackSite;
typedef int32_t cnpapi_CallbackId;

/* [H1] every record starts with its type */
typedef struct cnpapiActivity {
    cnpapiActivityType type;
} cnpapiActivity;

/* [H1] CNDRV, CNRT, CNNL, CNNL_EXTRA and CNCL API records (56 bytes) */
typedef struct cnpapiActivityAPI {
    cnpapiActivityType type;
    uint64_t correlation_id;
    cnpapi_CallbackId cbid;
    uint64_t start;
    uint64_t end;
    uint32_t process_id;
    uint32_t thread_id;
    const void *return_value;
} cnpapiActivityAPI;

/* [H1] (120 bytes). The header spells start and end as unions with the
   deprecated start_ts and end_ts. */
typedef struct cnpapiActivityKernel {
    cnpapiActivityType type;
    uint64_t correlation_id;       /* the CNDRV call's */
    uint64_t start;
    uint64_t end;
    uint64_t received;             /* 0: not collected */
    uint64_t queued;               /* 0: not collected */
    uint64_t submitted;            /* 0: not collected */
    uint64_t device_id;
    const char *name;              /* NULL: not collected */
    uint64_t queue_id;
    uint64_t runtime_correlation_id; /* the CNRT call's */
    uint64_t kernel_type;          /* KernelClass: BLOCK, UNION1, ... */
    uint32_t dimx, dimy, dimz;
    uint64_t context_id;
} cnpapiActivityKernel;

/* [H1] (104 bytes) */
typedef struct cnpapiActivityMemcpy {
    cnpapiActivityType type;
    uint32_t flags;                /* cnpapiActivityFlag */
    uint64_t correlation_id;
    uint64_t bytes;
    cnpapiActivityMemcpyType copy_type;
    uint64_t start;
    uint64_t end;
    uint64_t received, queued, submitted;
    uint64_t device_id;            /* (uint64_t)-1: not collected */
    uint64_t queue_id;             /* 0: not collected, or the default queue */
    uint64_t runtime_correlation_id;
    uint64_t context_id;
} cnpapiActivityMemcpy;

/* [H1] (120 bytes) */
typedef struct cnpapiActivityMemcpyPtoP {
    cnpapiActivityType type;
    uint32_t flags;
    uint64_t correlation_id;
    uint64_t bytes;
    cnpapiActivityMemcpyType copy_type;
    uint64_t start;
    uint64_t end;
    uint64_t received, queued, submitted;
    uint64_t device_id;
    uint64_t src_device_id;
    uint64_t dst_device_id;
    uint64_t queue_id;
    uint64_t runtime_correlation_id;
    uint64_t context_id;
} cnpapiActivityMemcpyPtoP;

/* [H1] (104 bytes) */
typedef struct cnpapiActivityMemset {
    cnpapiActivityType type;
    uint32_t flags;
    uint64_t correlation_id;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint64_t received, queued, submitted;
    uint64_t device_id;
    uint64_t queue_id;
    uint64_t runtime_correlation_id;
    uint64_t value;
    uint64_t context_id;
} cnpapiActivityMemset;

/* [H1] (24 bytes) */
typedef struct cnpapiActivityExternalCorrelation {
    cnpapiActivityType type;
    cnpapiActivityExternalCorrelationType external_type;
    uint64_t external_id;
    uint64_t correlation_id;
} cnpapiActivityExternalCorrelation;

/* [H2] (72 bytes): the site, then pointers, then the correlation id */
typedef struct cnpapi_CallbackData {
    cnpapi_CallbackSite callbackSite;
    const char *functionName;
    const void *functionParams;
    const void *functionReturnValue; /* valid at the exit */
    const char *symbolName;
    uint64_t correlationId;          /* 0: none */
    uint64_t reserved1, reserved2, reserved3;
} cnpapi_CallbackData;

/* [H1] the buffer callbacks, cnpapi_request and cnpapi_complete there (named
   otherwise here: the engine's callbacks of a vendor named cnpapi take those
   names): no context, no queue */
typedef void (*dt_cnpapi_request_fn)(uint64_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void (*dt_cnpapi_complete_fn)(uint64_t *buffer, size_t size, size_t validSize);
/* [H2] */
typedef void (*cnpapi_CallbackFunc)(void *userdata, cnpapi_CallbackDomain domain, cnpapi_CallbackId cbid,
                                    const void *cbdata);
typedef void *cnpapi_SubscriberHandle;

/* Callback ids: INFERRED, the emulator's numbering (see above). */
enum {
    DT_CNPAPI_CNRT_INVOKE_KERNEL = 1,
    DT_CNPAPI_CNRT_MEMCPY = 2,
    DT_CNPAPI_CNRT_MEMCPY_ASYNC = 3,
    DT_CNPAPI_CNRT_MEMSET = 4,
    DT_CNPAPI_CNRT_MEMSET_ASYNC = 5,
    DT_CNPAPI_CNRT_QUEUE_SYNC = 6,
    DT_CNPAPI_CNRT_SYNC_DEVICE = 7,
    DT_CNPAPI_CNRT_NAMED = 8,
    DT_CNPAPI_CNDRV_INVOKE_KERNEL = 1,
    DT_CNPAPI_CNDRV_MEMCPY = 2,
    DT_CNPAPI_CNDRV_MEMCPY_ASYNC = 3,
    DT_CNPAPI_CNDRV_MEMSET = 4,
    DT_CNPAPI_CNDRV_MEMSET_ASYNC = 5,
    DT_CNPAPI_CNDRV_QUEUE_SYNC = 6,
    DT_CNPAPI_CNDRV_CTX_SYNC = 7,
    DT_CNPAPI_CNDRV_MEMCPY_PEER = 8,
    DT_CNPAPI_CNDRV_MEMCPY_PEER_ASYNC = 9,
    DT_CNPAPI_CNDRV_NAMED = 10,
    DT_CNPAPI_CNCL_ALL_REDUCE = 1,
    DT_CNPAPI_CNCL_NAMED = 2,
};

/* The names at those ids (CNRT's, CNDRV's and CNCL's own function names). */
__attribute__((unused)) static const char *const dt__cnpapi_cnrt_names[DT_CNPAPI_CNRT_NAMED] = {
    [DT_CNPAPI_CNRT_INVOKE_KERNEL] = "cnrtInvokeKernel",
    [DT_CNPAPI_CNRT_MEMCPY] = "cnrtMemcpy",
    [DT_CNPAPI_CNRT_MEMCPY_ASYNC] = "cnrtMemcpyAsync",
    [DT_CNPAPI_CNRT_MEMSET] = "cnrtMemset",
    [DT_CNPAPI_CNRT_MEMSET_ASYNC] = "cnrtMemsetAsync",
    [DT_CNPAPI_CNRT_QUEUE_SYNC] = "cnrtQueueSync",
    [DT_CNPAPI_CNRT_SYNC_DEVICE] = "cnrtSyncDevice",
};
__attribute__((unused)) static const char *const dt__cnpapi_cndrv_names[DT_CNPAPI_CNDRV_NAMED] = {
    [DT_CNPAPI_CNDRV_INVOKE_KERNEL] = "cnInvokeKernel",
    [DT_CNPAPI_CNDRV_MEMCPY] = "cnMemcpy",
    [DT_CNPAPI_CNDRV_MEMCPY_ASYNC] = "cnMemcpyAsync",
    [DT_CNPAPI_CNDRV_MEMSET] = "cnMemsetD8",
    [DT_CNPAPI_CNDRV_MEMSET_ASYNC] = "cnMemsetD8Async",
    [DT_CNPAPI_CNDRV_QUEUE_SYNC] = "cnQueueSync",
    [DT_CNPAPI_CNDRV_CTX_SYNC] = "cnCtxSync",
    [DT_CNPAPI_CNDRV_MEMCPY_PEER] = "cnMemcpyPeer",
    [DT_CNPAPI_CNDRV_MEMCPY_PEER_ASYNC] = "cnMemcpyPeerAsync",
};
__attribute__((unused)) static const char *const dt__cnpapi_cncl_names[DT_CNPAPI_CNCL_NAMED] = {
    [DT_CNPAPI_CNCL_ALL_REDUCE] = "cnclAllReduce",
};

/* The sizes the layouts above give on LP64. */
#define DT_CNPAPI_API_SIZE 56u
#define DT_CNPAPI_KERNEL_SIZE 120u
#define DT_CNPAPI_MEMCPY_SIZE 104u
#define DT_CNPAPI_MEMCPY_PTOP_SIZE 120u
#define DT_CNPAPI_MEMSET_SIZE 104u
#define DT_CNPAPI_EXTERNAL_SIZE 24u
#define DT_CNPAPI_CALLBACK_DATA_SIZE 72u
_Static_assert(sizeof(cnpapiActivityAPI) == DT_CNPAPI_API_SIZE, "cnpapiActivityAPI");
_Static_assert(sizeof(cnpapiActivityKernel) == DT_CNPAPI_KERNEL_SIZE, "cnpapiActivityKernel");
_Static_assert(sizeof(cnpapiActivityMemcpy) == DT_CNPAPI_MEMCPY_SIZE, "cnpapiActivityMemcpy");
_Static_assert(sizeof(cnpapiActivityMemcpyPtoP) == DT_CNPAPI_MEMCPY_PTOP_SIZE, "cnpapiActivityMemcpyPtoP");
_Static_assert(sizeof(cnpapiActivityMemset) == DT_CNPAPI_MEMSET_SIZE, "cnpapiActivityMemset");
_Static_assert(sizeof(cnpapiActivityExternalCorrelation) == DT_CNPAPI_EXTERNAL_SIZE, "external");
_Static_assert(sizeof(cnpapi_CallbackData) == DT_CNPAPI_CALLBACK_DATA_SIZE, "cnpapi_CallbackData");
_Static_assert(offsetof(cnpapiActivityKernel, context_id) == 112, "kernel context_id");
_Static_assert(offsetof(cnpapi_CallbackData, correlationId) == 40, "callback correlationId");

#ifdef __cplusplus
}
#endif

#endif /* DT_CNPAPI_ABI_H */
