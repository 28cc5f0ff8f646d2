/*
 * devtrace's own declaration of the CUPTI-family activity ABI: the records,
 * callback data and constants that CUPTI (NVIDIA), the PPU stack's
 * CUPTI-compatible libcupti, MetaX MCPTI and Moore Threads MUPTI share.
 *
 * Written from public facts, not copied from any vendor header (CUPTI's are
 * NVIDIA-licensed): every offset below was measured with offsetof against
 * the CUDA 13.0 toolkit's cupti_activity.h (see
 * research/cupti_offsets.md), and tests/backends/cupti/test_cupti_layout.c
 * compares each field with the toolkit's structs wherever the toolkit is
 * installed, and walks records written through these structs with NVIDIA's
 * own libcupti.
 *
 * Records are byte-packed with 8-byte alignment (cupti_common.h's
 * PACKED_ALIGNMENT). Newer record versions only append fields or reuse
 * padding, so one struct per record holds the newest CUDA 13 layout and
 * the older versions are its prefixes, by size (DT_CF_*_SIZE).
 *
 * What the other vendors write is INFERRED, not read from their headers:
 * MCPTI's kernel, copy and fill records are CUPTI's Kernel8 (200 bytes),
 * Memcpy5 and Memset4 (88 bytes each), as Torch-FL's scanner sizes them on
 * MACA 3.8.0; MUPTI's are taken to be CUPTI's same-numbered versions
 * (Kernel6 168, Memcpy4 80, Memset3 80), which no public source confirms;
 * the PPU stack's libcupti is taken to write CUDA 12 records.
 */
#ifndef DT_CUPTI_FAMILY_ABI_H
#define DT_CUPTI_FAMILY_ABI_H

#include <stddef.h>
#include <stdint.h>

#define DT_CF_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

/* Activity kinds (CUpti_ActivityKind; MCPTI and MUPTI use the same values). */
enum {
    DT_CF_KIND_INVALID = 0,
    DT_CF_KIND_MEMCPY = 1,
    DT_CF_KIND_MEMSET = 2,
    DT_CF_KIND_KERNEL = 3,
    DT_CF_KIND_DRIVER = 4,
    DT_CF_KIND_RUNTIME = 5,
    DT_CF_KIND_DEVICE = 8,
    DT_CF_KIND_CONTEXT = 9,
    DT_CF_KIND_CONCURRENT_KERNEL = 10,
    DT_CF_KIND_NAME = 11,
    DT_CF_KIND_MARKER = 12,
    DT_CF_KIND_MARKER_DATA = 13,
    DT_CF_KIND_OVERHEAD = 17,
    DT_CF_KIND_MEMCPY2 = 22,
    DT_CF_KIND_CUDA_EVENT = 36,
    DT_CF_KIND_SYNCHRONIZATION = 38,
    DT_CF_KIND_EXTERNAL_CORRELATION = 39,
    DT_CF_KIND_INTERNAL_LAUNCH_API = 48,
    DT_CF_KIND_MEMORY2 = 49,
    DT_CF_KIND_MEMORY_POOL = 50,
    DT_CF_KIND_COUNT = 56
};

/* Result codes (CUptiResult). */
enum {
    DT_CF_SUCCESS = 0,
    DT_CF_ERROR_INVALID_PARAMETER = 1,
    DT_CF_ERROR_INVALID_OPERATION = 7,
    DT_CF_ERROR_MAX_LIMIT_REACHED = 12,
    DT_CF_ERROR_NOT_COMPATIBLE = 14,
    DT_CF_ERROR_NOT_INITIALIZED = 15,
    DT_CF_ERROR_QUEUE_EMPTY = 18,
    DT_CF_ERROR_INVALID_KIND = 21,
    DT_CF_ERROR_NOT_SUPPORTED = 27,
    DT_CF_ERROR_CUDA_COMPILER_NOT_COMPATIBLE = 34,
    DT_CF_ERROR_INSUFFICIENT_PRIVILEGES = 35,
    DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
    DT_CF_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES = 40,
    DT_CF_ERROR_LEGACY_PROFILER_NOT_SUPPORTED = 38,
    DT_CF_ERROR_UNKNOWN = 999
};

/* External-correlation kinds, memory-copy and memory kinds, flags. */
enum {
    DT_CF_EXTERNAL_INVALID = 0, DT_CF_EXTERNAL_UNKNOWN = 1, DT_CF_EXTERNAL_OPENACC = 2,
    DT_CF_EXTERNAL_CUSTOM0 = 3, DT_CF_EXTERNAL_CUSTOM1 = 4, DT_CF_EXTERNAL_CUSTOM2 = 5
};
enum {
    DT_CF_COPY_UNKNOWN = 0, DT_CF_COPY_HTOD = 1, DT_CF_COPY_DTOH = 2, DT_CF_COPY_HTOA = 3,
    DT_CF_COPY_ATOH = 4, DT_CF_COPY_ATOA = 5, DT_CF_COPY_ATOD = 6, DT_CF_COPY_DTOA = 7,
    DT_CF_COPY_DTOD = 8, DT_CF_COPY_HTOH = 9, DT_CF_COPY_PTOP = 10, DT_CF_COPY_COUNT = 11
};
enum {
    DT_CF_MEMORY_UNKNOWN = 0, DT_CF_MEMORY_PAGEABLE = 1, DT_CF_MEMORY_PINNED = 2, DT_CF_MEMORY_DEVICE = 3,
    DT_CF_MEMORY_ARRAY = 4, DT_CF_MEMORY_MANAGED = 5, DT_CF_MEMORY_DEVICE_STATIC = 6,
    DT_CF_MEMORY_MANAGED_STATIC = 7, DT_CF_MEMORY_COUNT = 8
};
enum { DT_CF_FLAG_FLUSH_FORCED = 1, DT_CF_FLAG_ASYNC = 1 };
/* Activity attributes (CUpti_ActivityAttribute) of the device buffers. */
enum { DT_CF_ATTR_DEVICE_BUFFER_SIZE = 0, DT_CF_ATTR_DEVICE_BUFFER_POOL_LIMIT = 2,
       DT_CF_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE = 6 };
enum { DT_CF_THREAD_ID_DEFAULT = 0, DT_CF_THREAD_ID_SYSTEM = 1 };
enum { DT_CF_DOMAIN_DRIVER_API = 1, DT_CF_DOMAIN_RUNTIME_API = 2, DT_CF_DOMAIN_RESOURCE = 3 };
/* the resource domain's callback for a context just created */
enum { DT_CF_CBID_RESOURCE_CONTEXT_CREATED = 1 };
enum { DT_CF_API_ENTER = 0, DT_CF_API_EXIT = 1 };
enum {
    DT_CF_OBJECT_PROCESS = 1, DT_CF_OBJECT_THREAD = 2, DT_CF_OBJECT_DEVICE = 3, DT_CF_OBJECT_CONTEXT = 4,
    DT_CF_OBJECT_STREAM = 5
};
#define DT_CF_SYNC_NO_STREAM 0xffffffffu

/* CUPTI's callback ids of the calls devtrace's emulators make, for the
   vendors that number their calls as CUPTI does (CUPTI; the PPU stack and
   MUPTI, inferred). */
enum {
    DT_CF_RT_MEMCPY = 31, DT_CF_RT_MEMCPY_ASYNC = 41, DT_CF_RT_MEMSET = 49, DT_CF_RT_MEMSET_ASYNC = 51,
    DT_CF_RT_STREAM_SYNCHRONIZE = 131, DT_CF_RT_DEVICE_SYNCHRONIZE = 165, DT_CF_RT_LAUNCH_KERNEL = 211,
    DT_CF_RT_NAMED = 212, DT_CF_RT_MALLOC = 20, DT_CF_RT_FREE = 22, DT_CF_RT_GRAPH_LAUNCH = 311,
    DT_CF_RT_MEM_POOL_TRIM_TO = 377, DT_CF_RT_MEM_POOL_CREATE = 383, DT_CF_RT_MEM_POOL_DESTROY = 384
};
/* CUDA 13's runtime lowers <<<>>> to __cudaPushCallConfiguration at the call
   site, then __cudaPopCallConfiguration and __cudaLaunchKernel in the stub
   nvcc generates (unless __NV_LEGACY_LAUNCH): three records per launch. */
enum {
    DT_CF_RT_PUSH_CALL_CONFIGURATION = 502, DT_CF_RT_POP_CALL_CONFIGURATION = 503,
    DT_CF_RT_LAUNCH_KERNEL_CUDA13 = 505, DT_CF_RT_LAUNCH_KERNEL_CUDA13_PTSZ = 506
};
enum {
    DT_CF_DRV_CTX_SYNCHRONIZE = 17, DT_CF_DRV_STREAM_SYNCHRONIZE = 126, DT_CF_DRV_MEMSET_ASYNC = 216,
    DT_CF_DRV_MEMSET = 249, DT_CF_DRV_MEMCPY_HTOD = 276, DT_CF_DRV_MEMCPY_HTOD_ASYNC = 277,
    DT_CF_DRV_MEMCPY_DTOH = 278, DT_CF_DRV_MEMCPY_DTOH_ASYNC = 279, DT_CF_DRV_MEMCPY_DTOD = 280,
    DT_CF_DRV_MEMCPY_DTOD_ASYNC = 281, DT_CF_DRV_MEMCPY = 305, DT_CF_DRV_MEMCPY_ASYNC = 306,
    DT_CF_DRV_LAUNCH_KERNEL = 307, DT_CF_DRV_MEMCPY_PEER = 318, DT_CF_DRV_MEMCPY_PEER_ASYNC = 319,
    DT_CF_DRV_NAMED = 320
};
/* Name tables for those ids, given the prefix a vendor's runtime or driver
 * API puts before CUDA's names ("cuda"/"cu", "musa"/"mu"). */
#define DT_CF_RUNTIME_NAMES(rt)                                                                              \
    {[DT_CF_RT_MEMCPY] = rt "Memcpy", [DT_CF_RT_MEMCPY_ASYNC] = rt "MemcpyAsync", [DT_CF_RT_MEMSET] = rt "Memset", \
     [DT_CF_RT_MEMSET_ASYNC] = rt "MemsetAsync", [DT_CF_RT_STREAM_SYNCHRONIZE] = rt "StreamSynchronize",        \
     [DT_CF_RT_DEVICE_SYNCHRONIZE] = rt "DeviceSynchronize", [DT_CF_RT_LAUNCH_KERNEL] = rt "LaunchKernel"}
#define DT_CF_DRIVER_NAMES(drv)                                                                               \
    {[DT_CF_DRV_CTX_SYNCHRONIZE] = drv "CtxSynchronize", [DT_CF_DRV_STREAM_SYNCHRONIZE] = drv "StreamSynchronize", \
     [DT_CF_DRV_MEMSET_ASYNC] = drv "MemsetD8Async", [DT_CF_DRV_MEMSET] = drv "MemsetD8_v2",                   \
     [DT_CF_DRV_MEMCPY_HTOD] = drv "MemcpyHtoD_v2", [DT_CF_DRV_MEMCPY_HTOD_ASYNC] = drv "MemcpyHtoDAsync_v2",  \
     [DT_CF_DRV_MEMCPY_DTOH] = drv "MemcpyDtoH_v2", [DT_CF_DRV_MEMCPY_DTOH_ASYNC] = drv "MemcpyDtoHAsync_v2",  \
     [DT_CF_DRV_MEMCPY_DTOD] = drv "MemcpyDtoD_v2", [DT_CF_DRV_MEMCPY_DTOD_ASYNC] = drv "MemcpyDtoDAsync_v2",  \
     [DT_CF_DRV_MEMCPY] = drv "Memcpy", [DT_CF_DRV_MEMCPY_ASYNC] = drv "MemcpyAsync",                          \
     [DT_CF_DRV_LAUNCH_KERNEL] = drv "LaunchKernel", [DT_CF_DRV_MEMCPY_PEER] = drv "MemcpyPeer",               \
     [DT_CF_DRV_MEMCPY_PEER_ASYNC] = drv "MemcpyPeerAsync"}

/* Kernel records: Kernel10 (CUDA 13); earlier versions are its prefixes. */
typedef struct DT_CF_PACKED dt_cf_kernel {
    uint32_t kind;
    uint8_t cacheConfig;
    uint8_t sharedMemoryConfig;
    uint16_t registersPerThread;
    uint32_t partitionedGlobalCacheRequested;
    uint32_t partitionedGlobalCacheExecuted;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    int32_t gridX, gridY, gridZ;
    int32_t blockX, blockY, blockZ;
    int32_t staticSharedMemory;
    int32_t dynamicSharedMemory;
    uint32_t localMemoryPerThread;
    uint32_t localMemoryTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
    void *reserved0;
    uint64_t queued;
    uint64_t submitted;
    uint8_t launchType;
    uint8_t isSharedMemoryCarveoutRequested;
    uint8_t sharedMemoryCarveoutRequested;
    uint8_t padding;
    uint32_t sharedMemoryExecuted;
    uint64_t graphNodeId;
    uint32_t shmemLimitConfig;
    uint32_t graphId;
    void *pAccessPolicyWindow;
    uint32_t channelID;
    uint32_t channelType;
    uint32_t clusterX, clusterY, clusterZ;
    uint32_t clusterSchedulingPolicy;
    uint64_t localMemoryTotal_v2;
    uint32_t maxPotentialClusterSize;
    uint32_t maxActiveClusters;
    uint8_t isDeviceLaunched;
    uint8_t padding3[7];
} dt_cf_kernel;
/* CUPTI's API version from which CUDA 13.1's Kernel11 is written:
   INFERRED (13.0 GA is 130000, 13.0 Update 1 130001; 13.1 taken to be
   130100), not read from a header of 13.1. */
#define DT_CF_API_KERNEL11 130100
/* CUPTI's API version of CUDA 13.1 Update 1, which fixed the correlation
   ids of cudaGraphLaunch in profiling sessions after the first (release
   notes): INFERRED, as 13.0 Update 1 is 130001. */
#define DT_CF_API_GRAPH_IDS_FIXED 130101
enum {
    DT_CF_KERNEL4_SIZE = 144, DT_CF_KERNEL6_SIZE = 168, DT_CF_KERNEL8_SIZE = 200,
    DT_CF_KERNEL9_SIZE = 208, DT_CF_KERNEL10_SIZE = 216
};

/* Memory copies: Memcpy6; Memcpy4 (80) and Memcpy5 (88) are prefixes. */
typedef struct DT_CF_PACKED dt_cf_memcpy {
    uint32_t kind;
    uint8_t copyKind;
    uint8_t srcKind;
    uint8_t dstKind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint32_t runtimeCorrelationId;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    uint32_t channelType;
    uint8_t isDeviceLaunched;
    uint8_t pad2[3];
    uint64_t copyCount;
} dt_cf_memcpy;
enum { DT_CF_MEMCPY4_SIZE = 80, DT_CF_MEMCPY5_SIZE = 88, DT_CF_MEMCPY6_SIZE = 96 };

/* Peer-to-peer copies (MEMCPY2): MemcpyPtoP4. */
typedef struct DT_CF_PACKED dt_cf_memcpy_peer {
    uint32_t kind;
    uint8_t copyKind;
    uint8_t srcKind;
    uint8_t dstKind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t srcDeviceId;
    uint32_t srcContextId;
    uint32_t dstDeviceId;
    uint32_t dstContextId;
    uint32_t correlationId;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    uint32_t channelType;
    uint32_t pad;
} dt_cf_memcpy_peer;
/* CUpti_ActivityMemcpyPtoP, the first version, ends after reserved0. */
enum { DT_CF_MEMCPY_PTOP_SIZE = 72, DT_CF_MEMCPY_PTOP4_SIZE = 96 };

/* Memsets: Memset4; Memset3 (80) is a prefix. */
typedef struct DT_CF_PACKED dt_cf_memset {
    uint32_t kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint16_t flags;
    uint16_t memoryKind;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    uint32_t channelType;
    uint8_t isDeviceLaunched;
    uint8_t pad2[3];
} dt_cf_memset;
enum { DT_CF_MEMSET3_SIZE = 80, DT_CF_MEMSET4_SIZE = 88 };

/* Runtime and driver API calls (kinds 4, 5, 48). */
typedef struct DT_CF_PACKED dt_cf_api {
    uint32_t kind;
    uint32_t cbid;
    uint64_t start;
    uint64_t end;
    uint32_t processId;
    uint32_t threadId;
    uint32_t correlationId;
    uint32_t returnValue;
} dt_cf_api;

typedef struct DT_CF_PACKED dt_cf_external {
    uint32_t kind;
    uint32_t externalKind;
    uint64_t externalId;
    uint32_t correlationId;
    uint32_t reserved;
} dt_cf_external;

/* Synchronization2. */
typedef struct DT_CF_PACKED dt_cf_sync {
    uint32_t kind;
    uint32_t type;
    uint64_t start;
    uint64_t end;
    uint32_t correlationId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t cudaEventId;
    uint64_t cudaEventSyncId;
    uint32_t returnValue;
    uint32_t pad;
} dt_cf_sync;

/* Overhead3; objectId is {processId, threadId} or {deviceId, contextId, streamId}. */
typedef struct DT_CF_PACKED dt_cf_overhead {
    uint32_t kind;
    uint32_t overheadKind;
    uint32_t objectKind;
    uint32_t objectId[3];
    uint64_t start;
    uint64_t end;
    uint32_t correlationId;
    uint32_t reserved0;
    void *overheadData;
} dt_cf_overhead;

/* Device5. */
typedef struct DT_CF_PACKED dt_cf_device {
    uint32_t kind;
    uint32_t flags;
    uint64_t globalMemoryBandwidth;
    uint64_t globalMemorySize;
    uint32_t constantMemorySize;
    uint32_t l2CacheSize;
    uint32_t numThreadsPerWarp;
    uint32_t coreClockRate;
    uint32_t numMemcpyEngines;
    uint32_t numMultiprocessors;
    uint32_t maxIPC;
    uint32_t maxWarpsPerMultiprocessor;
    uint32_t maxBlocksPerMultiprocessor;
    uint32_t maxSharedMemoryPerMultiprocessor;
    uint32_t maxRegistersPerMultiprocessor;
    uint32_t maxRegistersPerBlock;
    uint32_t maxSharedMemoryPerBlock;
    uint32_t maxThreadsPerBlock;
    uint32_t maxBlockDimX, maxBlockDimY, maxBlockDimZ;
    uint32_t maxGridDimX, maxGridDimY, maxGridDimZ;
    uint32_t computeCapabilityMajor;
    uint32_t computeCapabilityMinor;
    uint32_t id;
    uint32_t eccEnabled;
    uint8_t uuid[16];
    const char *name;
    uint8_t isCudaVisible;
    uint8_t isMigEnabled;
    uint8_t reserved[6];
    uint32_t gpuInstanceId;
    uint32_t computeInstanceId;
    uint8_t migUuid[16];
    uint32_t isNumaNode;
    uint32_t numaId;
} dt_cf_device;

/* Device memory allocations and frees (MEMORY2): Memory4. Allocations
   from a stream-ordered pool (cudaMallocAsync) name the pool in
   memoryPoolConfig and their stream. */
typedef struct DT_CF_PACKED dt_cf_memory {
    uint32_t kind;
    uint32_t memoryOperationType;
    uint32_t memoryKind;
    uint32_t correlationId;
    uint64_t address;
    uint64_t bytes;
    uint64_t timestamp;
    uint64_t PC;
    uint32_t processId;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    const char *name;
    uint32_t isAsync;
    uint32_t pad1;
    struct DT_CF_PACKED {
        uint32_t memoryPoolType;
        uint32_t pad2;
        uint64_t address;
        uint64_t releaseThreshold;
        uint64_t size;               /* a union with the pool's processId */
        uint64_t utilizedSize;
    } memoryPoolConfig;
    const char *source;
} dt_cf_memory;
enum { DT_CF_MEMORY_OPERATION_ALLOCATION = 1, DT_CF_MEMORY_OPERATION_RELEASE = 2 };
enum { DT_CF_MEMORY_POOL_INVALID = 0, DT_CF_MEMORY_POOL_LOCAL = 1, DT_CF_MEMORY_POOL_IMPORTED = 2 };

/* A stream-ordered memory pool created, destroyed or trimmed
   (MEMORY_POOL): MemoryPool3 (CUDA 13.0); MemoryPool2 is its prefix
   without isManagedPool. */
typedef struct DT_CF_PACKED dt_cf_memory_pool {
    uint32_t kind;
    uint32_t memoryPoolOperationType;
    uint32_t memoryPoolType;
    uint32_t correlationId;
    uint32_t processId;
    uint32_t deviceId;
    uint64_t minBytesToKeep;          /* size_t: LP64 */
    uint64_t address;
    uint64_t size;
    uint64_t releaseThreshold;
    uint64_t timestamp;
    uint64_t utilizedSize;
    uint8_t isManagedPool;
    uint8_t pad2[7];
} dt_cf_memory_pool;
enum { DT_CF_POOL_CREATED = 1, DT_CF_POOL_DESTROYED = 2, DT_CF_POOL_TRIMMED = 3 };
enum { DT_CF_MEMORY_POOL2_SIZE = 72, DT_CF_MEMORY_POOL3_SIZE = 80 };

/* Sizes of records devtrace walks over but does not decode. */
enum {
    DT_CF_MARKER2_SIZE = 56, DT_CF_MARKER_DATA2_SIZE = 40, DT_CF_NAME_SIZE = 32, DT_CF_CONTEXT3_SIZE = 32,
    DT_CF_MEMORY4_SIZE = 128, DT_CF_CUDA_EVENT2_SIZE = 56
};

/* What a named subscribe takes (CUpti_SubscriberParams, CUDA 13): the
   size of the struct, the subscriber's name, and where the library writes
   the name of the subscriber that holds it when it refuses. */
typedef struct dt_cf_subscriber_params {
    size_t structSize;
    const char *subscriberName;
    char *oldSubscriberName;
    size_t oldSubscriberSize;
} dt_cf_subscriber_params;

/* The API callback's data (CUpti_CallbackData: natural alignment). */
typedef struct dt_cf_callback_data {
    uint32_t callbackSite;
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    void *context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} dt_cf_callback_data;

/* A resource callback's data (CUpti_ResourceData): the context created. */
typedef struct dt_cf_resource_data {
    void *context;
    void *stream;                     /* resourceHandle, for stream callbacks */
    void *resourceDescriptor;
} dt_cf_resource_data;

_Static_assert(sizeof(dt_cf_kernel) == DT_CF_KERNEL10_SIZE, "Kernel10 is 216 bytes");
_Static_assert(sizeof(dt_cf_memcpy) == DT_CF_MEMCPY6_SIZE, "Memcpy6 is 96 bytes");
_Static_assert(sizeof(dt_cf_memcpy_peer) == 96, "MemcpyPtoP4 is 96 bytes");
_Static_assert(sizeof(dt_cf_memset) == DT_CF_MEMSET4_SIZE, "Memset4 is 88 bytes");
_Static_assert(sizeof(dt_cf_api) == 40, "API is 40 bytes");
_Static_assert(sizeof(dt_cf_external) == 24, "ExternalCorrelation is 24 bytes");
_Static_assert(sizeof(dt_cf_sync) == 56, "Synchronization2 is 56 bytes");
_Static_assert(sizeof(dt_cf_overhead) == 56, "Overhead3 is 56 bytes");
_Static_assert(sizeof(dt_cf_device) == 184, "Device5 is 184 bytes");
_Static_assert(sizeof(dt_cf_memory) == DT_CF_MEMORY4_SIZE, "Memory4 is 128 bytes");
_Static_assert(sizeof(dt_cf_memory_pool) == DT_CF_MEMORY_POOL3_SIZE, "MemoryPool3 is 80 bytes");
_Static_assert(offsetof(dt_cf_kernel, name) == 104 && offsetof(dt_cf_kernel, queued) == 120,
               "kernel name and queued as measured");
_Static_assert(offsetof(dt_cf_device, gpuInstanceId) == 152, "Device5 MIG fields as measured");
_Static_assert(sizeof(dt_cf_callback_data) == 72 && offsetof(dt_cf_callback_data, correlationId) == 64,
               "CUpti_CallbackData as measured");

#endif /* DT_CUPTI_FAMILY_ABI_H */
