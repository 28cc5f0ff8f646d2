/*
 * devtrace's own declaration of the MSPTI ABI (Huawei Ascend, libmspti.so),
 * used when CANN's headers (mspti.h) are not found; the emulator
 * (emu/mspti) is compiled from it.
 *
 * MSPTI's headers are public (github.com/Ascend/mspti, csrc/include/
 * mspti_activity.h, mspti_callback.h, mspti_result.h; Mulan PSL v2). Every
 * name, enumerator value, field order and type below was read from them
 * (master and 26.x, and the development version with msptiGetVersion,
 * msptiActivityGetNumDroppedRecords and msptiGetTimestamp), not inferred;
 * the names are MSPTI's own, so that the backend compiles unchanged against
 * CANN's headers. tests/backends/mspti/test_mspti_layout.c asserts the
 * record sizes and offsets, against whichever of the two a build uses.
 *
 * Records are packed and 8-byte aligned as a whole, with no padding inside:
 * most 64-bit fields are misaligned (a kernel's start is at offset 4), so
 * they are read through these packed structs or with memcpy.
 */
#ifndef DT_MSPTI_ABI_H
#define DT_MSPTI_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

typedef enum {
    MSPTI_SUCCESS = 0,
    MSPTI_ERROR_INVALID_PARAMETER = 1,
    MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 2,
    MSPTI_ERROR_MAX_LIMIT_REACHED = 3,
    MSPTI_ERROR_DEVICE_OFFLINE = 4,
    MSPTI_ERROR_QUEUE_EMPTY = 5,
    MSPTI_ERROR_WITHOUT_LD_PRELOAD = 6,
    /* the development version's additions */
    MSPTI_ERROR_NOT_INITIALIZED = 7,
    MSPTI_ERROR_INVALID_KIND = 8,
    MSPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT = 9,
    MSPTI_ERROR_INNER = 999,
    MSPTI_ERROR_FORCE_INT = 0x7fffffff
} msptiResult;

typedef enum {
    MSPTI_ACTIVITY_KIND_INVALID = 0,
    MSPTI_ACTIVITY_KIND_MARKER = 1,
    MSPTI_ACTIVITY_KIND_KERNEL = 2,
    MSPTI_ACTIVITY_KIND_API = 3,
    MSPTI_ACTIVITY_KIND_HCCL = 4,
    MSPTI_ACTIVITY_KIND_MEMORY = 5,
    MSPTI_ACTIVITY_KIND_MEMSET = 6,
    MSPTI_ACTIVITY_KIND_MEMCPY = 7,
    MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION = 8,
    MSPTI_ACTIVITY_KIND_COMMUNICATION = 9,
    MSPTI_ACTIVITY_KIND_ACL_API = 10,
    MSPTI_ACTIVITY_KIND_NODE_API = 11,
    MSPTI_ACTIVITY_KIND_RUNTIME_API = 12,
    MSPTI_ACTIVITY_KIND_OVERHEAD = 13,
    MSPTI_ACTIVITY_KIND_COUNT,
    MSPTI_ACTIVITY_KIND_FORCE_INT = 0x7fffffff
} msptiActivityKind;

typedef enum {
    MSPTI_ACTIVITY_SOURCE_KIND_HOST = 0,
    MSPTI_ACTIVITY_SOURCE_KIND_DEVICE = 1
} msptiActivitySourceKind;

/* CUSTOM0 is 2 here, 3 in CUPTI. */
typedef enum {
    MSPTI_EXTERNAL_CORRELATION_KIND_INVALID = 0,
    MSPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN = 1,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 = 2,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 = 3,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 = 4,
    MSPTI_EXTERNAL_CORRELATION_KIND_SIZE,
    MSPTI_EXTERNAL_CORRELATION_KIND_FORCE_INT = 0x7fffffff
} msptiExternalCorrelationKind;

typedef enum {
    MSPTI_ACTIVITY_FLAG_NONE = 0,
    MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS = 1 << 0,
    MSPTI_ACTIVITY_FLAG_MARKER_START = 1 << 1,
    MSPTI_ACTIVITY_FLAG_MARKER_END = 1 << 2,
    MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS_WITH_DEVICE = 1 << 3,
    MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE = 1 << 4,
    MSPTI_ACTIVITY_FLAG_MARKER_END_WITH_DEVICE = 1 << 5
} msptiActivityFlag;

typedef enum {
    MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION = 0,
    MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE = 1
} msptiActivityMemoryOperationType;

typedef enum {
    MSPTI_ACTIVITY_MEMORY_UNKNOWN = 0,
    MSPTI_ACTIVITY_MEMORY_DEVICE = 1,
    MSPTI_ACTIVITY_MEMORY_HOST = 2,
    MSPTI_ACTIVITY_MEMORY_MANAGED = 3
} msptiActivityMemoryKind;

/* Numbered unlike CUPTI's. */
typedef enum {
    MSPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
    MSPTI_ACTIVITY_MEMCPY_KIND_HTOH = 1,
    MSPTI_ACTIVITY_MEMCPY_KIND_HTOD = 2,
    MSPTI_ACTIVITY_MEMCPY_KIND_DTOH = 3,
    MSPTI_ACTIVITY_MEMCPY_KIND_DTOD = 4,
    MSPTI_ACTIVITY_MEMCPY_KIND_DEFAULT = 5
} msptiActivityMemcpyKind;

typedef enum {
    MSPTI_ACTIVITY_OVERHEAD_UNKNOWN = 0,
    MSPTI_ACTIVITY_OVERHEAD_MSPTI_RESOURCE = 1,
    MSPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST = 2,
    MSPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_FLUSH = 3
} msptiActivityOverheadKind;

typedef enum {
    MSPTI_ACTIVITY_OBJECT_UNKNOWN = 0,
    MSPTI_ACTIVITY_OBJECT_PROCESS = 1,
    MSPTI_ACTIVITY_OBJECT_THREAD = 2,
    MSPTI_ACTIVITY_OBJECT_DEVICE = 3,
    MSPTI_ACTIVITY_OBJECT_FORCE_INT = 0x7fffffff
} msptiActivityObjectKind;

/* HCCL's data types (value 13 unused). */
typedef enum {
    MSPTI_ACTIVITY_COMMUNICATION_INT8 = 0,
    MSPTI_ACTIVITY_COMMUNICATION_INT16 = 1,
    MSPTI_ACTIVITY_COMMUNICATION_INT32 = 2,
    MSPTI_ACTIVITY_COMMUNICATION_FP16 = 3,
    MSPTI_ACTIVITY_COMMUNICATION_FP32 = 4,
    MSPTI_ACTIVITY_COMMUNICATION_INT64 = 5,
    MSPTI_ACTIVITY_COMMUNICATION_UINT64 = 6,
    MSPTI_ACTIVITY_COMMUNICATION_UINT8 = 7,
    MSPTI_ACTIVITY_COMMUNICATION_UINT16 = 8,
    MSPTI_ACTIVITY_COMMUNICATION_UINT32 = 9,
    MSPTI_ACTIVITY_COMMUNICATION_FP64 = 10,
    MSPTI_ACTIVITY_COMMUNICATION_BFP16 = 11,
    MSPTI_ACTIVITY_COMMUNICATION_INT128 = 12,
    MSPTI_ACTIVITY_COMMUNICATION_HIF8 = 14,
    MSPTI_ACTIVITY_COMMUNICATION_FP8E4M3 = 15,
    MSPTI_ACTIVITY_COMMUNICATION_FP8E5M2 = 16,
    MSPTI_ACTIVITY_COMMUNICATION_FP8E8M0 = 17,
    MSPTI_ACTIVITY_COMMUNICATION_INVALID_TYPE = 0x0000FFFF
} msptiCommunicationDataType;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;
} msptiActivity;

/* The id union is 8-byte aligned as a type, yet sits at offset 28 of a
   marker (the record is packed): as the vendor's header has it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpacked-not-aligned"
#endif

typedef union MSPTI_PACKED {
    struct {
        uint32_t processId;
        uint32_t threadId;
    } pt;
    struct {
        uint32_t deviceId;
        uint32_t streamId;
    } ds;
} msptiObjectId;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* MARKER */
    msptiActivityFlag flag;
    msptiActivitySourceKind sourceKind;
    uint64_t timestamp;                /* 0: not collected */
    uint64_t id;                       /* pairs a range's start and end */
    msptiObjectId objectId;            /* pt for host markers, ds for device ones */
    const char *name;                  /* "" on an end marker */
    const char *domain;                /* NULL: the default domain */
} msptiActivityMarker;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* API, ACL_API, NODE_API, RUNTIME_API */
    uint64_t start;
    uint64_t end;
    struct {
        uint32_t processId;
        uint32_t threadId;
    } pt;
    uint64_t correlationId;
    const char *name;                  /* the API's name: there is no callback id */
} msptiActivityApi;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* KERNEL */
    uint64_t start;
    uint64_t end;
    struct {
        uint32_t deviceId;
        uint32_t streamId;
    } ds;
    uint64_t correlationId;
    const char *type;                  /* "KERNEL_AICORE", "KERNEL_AIVEC", ... */
    const char *name;
} msptiActivityKernel;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* HCCL */
    uint64_t start;
    uint64_t end;
    struct {
        uint32_t deviceId;
        uint32_t streamId;
    } ds;
    double bandWidth;                  /* GB/s */
    const char *name;
    const char *commName;
} msptiActivityHccl;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* MEMORY */
    msptiActivityMemoryOperationType memoryOperationType;
    msptiActivityMemoryKind memoryKind;
    uint64_t correlationId;
    uint64_t start;
    uint64_t end;
    uint64_t address;
    uint64_t bytes;
    uint32_t processId;
    uint32_t deviceId;
    uint32_t streamId;                 /* MSPTI_INVALID_STREAM_ID when not async */
} msptiActivityMemory;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* MEMSET */
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t streamId;
    uint64_t correlationId;
    uint8_t isAsync;
} msptiActivityMemset;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* MEMCPY */
    msptiActivityMemcpyKind copyKind;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t streamId;
    uint64_t correlationId;
    uint8_t isAsync;
} msptiActivityMemcpy;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* EXTERNAL_CORRELATION, before its API record */
    msptiExternalCorrelationKind externalKind;
    uint64_t externalId;
    uint64_t correlationId;
} msptiActivityExternalCorrelation;

typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* COMMUNICATION */
    msptiCommunicationDataType dataType;
    uint64_t count;                    /* elements */
    struct {
        uint32_t deviceId;
        uint32_t streamId;
    } ds;
    uint64_t start;
    uint64_t end;
    const char *algType;
    const char *name;
    const char *commName;              /* the communication group */
    uint64_t correlationId;
} msptiActivityCommunication;

/* The development version's. */
typedef struct MSPTI_PACKED {
    msptiActivityKind kind;            /* OVERHEAD */
    msptiActivityOverheadKind overheadKind;
    msptiObjectId objectId;
    uint64_t start;
    uint64_t end;
    uint64_t correlationId;
    void *overheadData;
    msptiActivityObjectKind objectKind;
} msptiActivityOverhead;

#define MSPTI_INVALID_DEVICE_ID ((uint32_t)0xFFFFFFFFU)
#define MSPTI_INVALID_STREAM_ID ((uint32_t)0xFFFFFFFFU)
#define MSPTI_INVALID_CORRELATION_ID ((uint64_t)0)

/* Callbacks. */
typedef enum {
    MSPTI_CB_DOMAIN_INVALID = 0,
    MSPTI_CB_DOMAIN_RUNTIME = 1,
    MSPTI_CB_DOMAIN_HCCL = 2,
    MSPTI_CB_DOMAIN_SIZE,
    MSPTI_CB_DOMAIN_FORCE_INT = 0x7fffffff
} msptiCallbackDomain;

typedef uint32_t msptiCallbackId;

typedef enum {
    MSPTI_API_ENTER = 0,
    MSPTI_API_EXIT = 1,
    MSPTI_API_CBSITE_FORCE_INT = 0x7fffffff
} msptiApiCallbackSite;

/* Not packed. The library fills callbackSite and functionName only: the
   correlation id is whatever the caller's stack held (see the backend). */
typedef struct {
    msptiApiCallbackSite callbackSite;
    const char *functionName;
    const void *functionParams;
    const void *functionReturnValue;
    const char *symbolName;
    uint64_t correlationId;
    uint64_t reserved1;
    uint64_t reserved2;
    uint64_t *correlationData;
} msptiCallbackData;

/* The callback ids the emulator uses (mspti_cbid.h). */
enum {
    MSPTI_CBID_RUNTIME_STREAM_SYNCHRONIZED = 9,
    MSPTI_CBID_RUNTIME_LAUNCH = 10,
    MSPTI_CBID_RUNTIME_MALLOC = 15,
    MSPTI_CBID_RUNTIME_FREE = 16,
    MSPTI_CBID_RUNTIME_MEMCPY = 22,
    MSPTI_CBID_RUNTIME_MEMCPY_ASYNC = 24,
    MSPTI_CBID_RUNTIME_MEM_SET = 27,
    MSPTI_CBID_RUNTIME_MEM_SET_ASYNC = 28,
    MSPTI_CBID_RUNTIME_SIZE = 37,
    MSPTI_CBID_HCCL_ALLREDUCE = 1,
    MSPTI_CBID_HCCL_SIZE = 13
};

typedef void (*msptiCallbackFunc)(void *userdata, msptiCallbackDomain domain, msptiCallbackId cbid,
                                  const msptiCallbackData *cbdata);
struct msptiSubscriber_st;
typedef struct msptiSubscriber_st *msptiSubscriberHandle;

typedef void (*msptiBuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
/* No context or stream, unlike CUPTI's. */
typedef void (*msptiBuffersCallbackCompleteFunc)(uint8_t *buffer, size_t size, size_t validSize);

/* The entry points: every release has the first group; the others came
   later (see docs/backends/mspti.md). */
msptiResult msptiSubscribe(msptiSubscriberHandle *subscriber, msptiCallbackFunc callback, void *userdata);
msptiResult msptiUnsubscribe(msptiSubscriberHandle subscriber);
msptiResult msptiEnableCallback(uint32_t enable, msptiSubscriberHandle subscriber, msptiCallbackDomain domain,
                                msptiCallbackId cbid);
msptiResult msptiEnableDomain(uint32_t enable, msptiSubscriberHandle subscriber, msptiCallbackDomain domain);
msptiResult msptiActivityRegisterCallbacks(msptiBuffersCallbackRequestFunc funcBufferRequested,
                                           msptiBuffersCallbackCompleteFunc funcBufferCompleted);
msptiResult msptiActivityEnable(msptiActivityKind kind);
msptiResult msptiActivityDisable(msptiActivityKind kind);
msptiResult msptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, msptiActivity **record);
msptiResult msptiActivityFlushAll(uint32_t flag);
/* since the end of 2024 */
msptiResult msptiActivityFlushPeriod(uint32_t time);
msptiResult msptiActivityPushExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t id);
msptiResult msptiActivityPopExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t *lastId);
/* 2025 and 2026 */
msptiResult msptiActivityEnableMarkerDomain(const char *name);
msptiResult msptiActivityDisableMarkerDomain(const char *name);
bool msptiActivityIsEnabled(msptiActivityKind kind);
/* the development version's */
msptiResult msptiGetVersion(uint32_t *version);
msptiResult msptiGetTimestamp(uint64_t *timestamp);
msptiResult msptiActivityGetNumDroppedRecords(void *context, uint32_t streamId, size_t *dropped);
msptiResult msptiActivityGetStructSize(msptiActivityKind kind, uint32_t version, size_t *activityStructSize);

#ifdef __cplusplus
}
#endif
#endif /* DT_MSPTI_ABI_H */
