/*
 * devtrace's own declaration of the TOPSPTI ABI, used when the TopsRider SDK
 * headers (topspti_activity.h, topspti_callbacks.h) are not available.
 *
 * No TOPSPTI header is public. Function, type, enumerator and field NAMES
 * below are those known from public users of the SDK; the field ORDER, widths,
 * packing and enumerator VALUES are devtrace's choice: CUPTI's numbering and
 * the CUPTI family's record layouts (cupti_family_abi.h). The
 * devtrace TOPSPTI emulator implements exactly this declaration. A build made
 * against it must never decode a real libtopspti: the backend refuses any
 * library that lacks the emulator's marker symbol (DEVTRACE_TOPSPTI_EMULATOR_MARKER).
 */
#ifndef DT_TOPSPTI_ABI_H
#define DT_TOPSPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "backends/cupti_family_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exported by the emulator only: `const char devtrace_topspti_emulator[]`. */
#define DEVTRACE_TOPSPTI_EMULATOR_MARKER "devtrace_topspti_emulator"

#define TOPSPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

typedef enum {
    TOPSPTI_SUCCESS = 0,
    TOPSPTI_ERROR_INVALID_PARAMETER = 1,
    TOPSPTI_ERROR_INVALID_OPERATION = 3,
    TOPSPTI_ERROR_MAX_LIMIT_REACHED = 12,
    TOPSPTI_ERROR_NOT_INITIALIZED = 15,
    TOPSPTI_ERROR_QUEUE_EMPTY = 18,
    TOPSPTI_ERROR_INVALID_KIND = 21,
    TOPSPTI_ERROR_NOT_SUPPORTED = 27,
    TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
    TOPSPTI_ERROR_UNKNOWN = 999
} TopsptiResult;

typedef enum {
    TOPSPTI_ACTIVITY_KIND_INVALID = 0,
    TOPSPTI_ACTIVITY_KIND_MEMCPY = 1,
    TOPSPTI_ACTIVITY_KIND_MEMSET = 2,
    TOPSPTI_ACTIVITY_KIND_KERNEL = 3,
    TOPSPTI_ACTIVITY_KIND_DRIVER = 4,
    TOPSPTI_ACTIVITY_KIND_RUNTIME = 5,
    TOPSPTI_ACTIVITY_KIND_COUNT,
    TOPSPTI_ACTIVITY_KIND_FORCE_INT = 0x7fffffff
} Topspti_ActivityKind;

typedef enum {
    TOPSPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOD = 1,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOH = 2,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOD = 8,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOH = 9,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_PTOP = 10,
    TOPSPTI_ACTIVITY_MEMCPY_KIND_FORCE_INT = 0x7fffffff
} Topspti_ActivityMemcpyKind;

typedef enum {
    TOPSPTI_ACTIVITY_MEMORY_KIND_UNKNOWN = 0,
    TOPSPTI_ACTIVITY_MEMORY_KIND_PAGEABLE = 1,
    TOPSPTI_ACTIVITY_MEMORY_KIND_PINNED = 2,
    TOPSPTI_ACTIVITY_MEMORY_KIND_DEVICE = 3,
    TOPSPTI_ACTIVITY_MEMORY_KIND_FORCE_INT = 0x7fffffff
} Topspti_ActivityMemoryKind;

typedef enum {
    TOPSPTI_ACTIVITY_FLAG_NONE = 0,
    TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1,
    TOPSPTI_ACTIVITY_FLAG_MEMCPY_ASYNC = 1,
    TOPSPTI_ACTIVITY_FLAG_MEMSET_ASYNC = 1
} Topspti_ActivityFlag;

typedef enum {
    TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT = 0, /* pthread id */
    TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM = 1   /* Linux tid */
} Topspti_ActivityThreadIdType;

typedef enum {
    TOPSPTI_CB_DOMAIN_INVALID = 0,
    TOPSPTI_CB_DOMAIN_DRIVER_API = 1,
    TOPSPTI_CB_DOMAIN_RUNTIME_API = 2,
    TOPSPTI_CB_DOMAIN_SIZE = 3,
    TOPSPTI_CB_DOMAIN_FORCE_INT = 0x7fffffff
} Topspti_CallbackDomain;

typedef enum {
    TOPSPTI_API_ENTER = 0,
    TOPSPTI_API_EXIT = 1,
    TOPSPTI_API_CBSITE_FORCE_INT = 0x7fffffff
} Topspti_ApiCallbackSite;

typedef uint32_t Topspti_CallbackId;
typedef struct Topspti_Subscriber_st *Topspti_SubscriberHandle;

typedef struct TOPSPTI_PACKED Topspti_Activity_st {
    Topspti_ActivityKind kind;
} Topspti_Activity;

/* The records and the callback data are the CUPTI family's, as devtrace
   declares them (cupti_family_abi.h), at the earliest versions that hold
   every field devtrace reads: a kernel record with every launch detail
   (Kernel4), a memcpy record that names source and destination devices
   (the first MemcpyPtoP), Memset3. The records are those structs' leading
   bytes: their sizes are below, not sizeof. */
typedef dt_cf_kernel Topspti_ActivityKernel;
typedef dt_cf_memcpy_peer Topspti_ActivityMemcpy;
typedef dt_cf_memset Topspti_ActivityMemset;
typedef dt_cf_api Topspti_ActivityAPI;
typedef dt_cf_callback_data Topspti_CallbackData;
enum {
    TOPSPTI_ACTIVITY_KERNEL_SIZE = DT_CF_KERNEL4_SIZE,
    TOPSPTI_ACTIVITY_MEMCPY_SIZE = DT_CF_MEMCPY_PTOP_SIZE,
    TOPSPTI_ACTIVITY_MEMSET_SIZE = DT_CF_MEMSET3_SIZE,
};

typedef void (*Topspti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                   size_t *maxNumRecords);
/* Unlike CUPTI, no context or stream arguments. */
typedef void (*Topspti_BuffersCallbackCompleteFunc)(uint8_t *buffer, size_t size,
                                                    size_t validSize);
typedef void (*Topspti_CallbackFunc)(void *userdata, Topspti_CallbackDomain domain,
                                     Topspti_CallbackId cbid, const void *cbdata);

/* Runtime API callback ids (TOPSPTI_CB_DOMAIN_RUNTIME_API). */
typedef enum {
    TOPSPTI_RUNTIME_TRACE_CBID_INVALID = 0,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemset = 1,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemsetAsync = 2,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpy = 9,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyAsync = 10,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyHtoD = 12,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoH = 14,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyDtoD = 16,
    TOPSPTI_RUNTIME_TRACE_CBID_topsModuleLaunchKernel = 22,
    TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel = 24,
    TOPSPTI_RUNTIME_TRACE_CBID_topsDeviceSynchronize = 39,
    TOPSPTI_RUNTIME_TRACE_CBID_topsSetDevice = 41,
    TOPSPTI_RUNTIME_TRACE_CBID_topsGetDevice = 42,
    TOPSPTI_RUNTIME_TRACE_CBID_topsStreamCreate = 50,
    TOPSPTI_RUNTIME_TRACE_CBID_topsStreamSynchronize = 54,
    TOPSPTI_RUNTIME_TRACE_CBID_topsMalloc = 61,
    TOPSPTI_RUNTIME_TRACE_CBID_topsFree = 66,
    TOPSPTI_RUNTIME_TRACE_CBID_SIZE = 78
} Topspti_RuntimeCallbackId;

/* Function pointer types of the entry points the backend resolves. */
typedef TopsptiResult (*topsptiActivityRegisterCallbacks_fn)(Topspti_BuffersCallbackRequestFunc,
                                                             Topspti_BuffersCallbackCompleteFunc);
typedef TopsptiResult (*topsptiActivityEnable_fn)(Topspti_ActivityKind);
typedef TopsptiResult (*topsptiActivityDisable_fn)(Topspti_ActivityKind);
typedef TopsptiResult (*topsptiActivityFlushAll_fn)(uint32_t flag);
typedef TopsptiResult (*topsptiActivityGetNextRecord_fn)(uint8_t *buffer, size_t validBufferSizeBytes,
                                                         Topspti_Activity **record);
typedef TopsptiResult (*topsptiGetTimestamp_fn)(uint64_t *timestamp);
typedef TopsptiResult (*topsptiSubscribe_fn)(Topspti_SubscriberHandle *subscriber,
                                             Topspti_CallbackFunc callback, void *userdata);
typedef TopsptiResult (*topsptiUnsubscribe_fn)(Topspti_SubscriberHandle subscriber);
typedef TopsptiResult (*topsptiEnableDomain_fn)(uint32_t enable, Topspti_SubscriberHandle subscriber,
                                                Topspti_CallbackDomain domain);
typedef TopsptiResult (*topsptiEnableAllDomains_fn)(uint32_t enable, Topspti_SubscriberHandle subscriber);
typedef TopsptiResult (*topsptiGetCallbackName_fn)(Topspti_CallbackDomain domain, uint32_t cbid,
                                                   const char **name);
typedef TopsptiResult (*topsptiGetVersion_fn)(uint32_t *version);
typedef TopsptiResult (*topsptiActivityGetNumDroppedRecords_fn)(size_t *dropped);
typedef TopsptiResult (*topsptiSetThreadIdType_fn)(Topspti_ActivityThreadIdType type);
typedef TopsptiResult (*topsptiGetThreadIdType_fn)(Topspti_ActivityThreadIdType *type);
typedef TopsptiResult (*topsptiActivityFlushPeriod_fn)(uint32_t time_ms);

#ifdef __cplusplus
}
#endif
#endif /* DT_TOPSPTI_ABI_H */
