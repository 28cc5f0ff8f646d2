/* The CUPTI family's shared engine data: layouts from devtrace's own ABI
   declaration (cupti_family_abi.h), enums in devtrace's terms, names. */
#include "backends/cupti_family.h"
#include "backends/engine/engine_walk.h"

#include <string.h>

const uint8_t dt__cf_copy_kinds[DT_CF_COPY_COUNT] = {
    [DT_CF_COPY_HTOD] = DT_COPY_HTOD, [DT_CF_COPY_HTOA] = DT_COPY_HTOD,
    [DT_CF_COPY_DTOH] = DT_COPY_DTOH, [DT_CF_COPY_ATOH] = DT_COPY_DTOH,
    [DT_CF_COPY_DTOD] = DT_COPY_DTOD, [DT_CF_COPY_ATOA] = DT_COPY_DTOD,
    [DT_CF_COPY_ATOD] = DT_COPY_DTOD, [DT_CF_COPY_DTOA] = DT_COPY_DTOD,
    [DT_CF_COPY_HTOH] = DT_COPY_HTOH, [DT_CF_COPY_PTOP] = DT_COPY_PTOP,
};

const uint8_t dt__cf_memory_kinds[DT_CF_MEMORY_COUNT] = {
    [DT_CF_MEMORY_PAGEABLE] = DT_MEM_PAGEABLE, [DT_CF_MEMORY_PINNED] = DT_MEM_PINNED,
    [DT_CF_MEMORY_DEVICE] = DT_MEM_DEVICE, [DT_CF_MEMORY_DEVICE_STATIC] = DT_MEM_DEVICE,
    [DT_CF_MEMORY_ARRAY] = DT_MEM_ARRAY, [DT_CF_MEMORY_MANAGED] = DT_MEM_MANAGED,
    [DT_CF_MEMORY_MANAGED_STATIC] = DT_MEM_MANAGED,
};

const dt_kind_spec dt__cf_kinds[DT_CF_KIND_SPECS] = {
    {DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KIND_KERNEL, DT_CAPTURE_KERNEL, 1, 1, "kernels"},
    {DT_CF_KIND_MEMCPY, 0, DT_CAPTURE_MEMCPY, 1, 1, "memory copies"},
    {DT_CF_KIND_MEMSET, 0, DT_CAPTURE_MEMSET, 1, 1, "memsets"},
    {DT_CF_KIND_RUNTIME, 0, DT_CAPTURE_RUNTIME, 1, 0, "runtime API"},
    {DT_CF_KIND_DRIVER, 0, DT_CAPTURE_DRIVER, 0, 0, "driver API"},
    {DT_CF_KIND_EXTERNAL_CORRELATION, 0, 0, 0, 0, "External ids"},
    {DT_CF_KIND_SYNCHRONIZATION, 0, DT_CAPTURE_SYNC, 0, 0, "synchronization"},
};

const dt_value_name dt__cf_sync_names[DT_CF_SYNC_NAME_COUNT] = {
    {0, "Synchronization"}, {1, "Event Synchronize"}, {2, "Stream Wait Event"},
    {3, "Stream Synchronize"}, {4, "Context Synchronize"},
};

const dt_value_name dt__cf_overhead_names[DT_CF_OVERHEAD_NAME_COUNT] = {
    {1, "Driver compiler"},         {1u << 16, "CUPTI buffer flush"},
    {2u << 16, "CUPTI instrumentation"}, {3u << 16, "CUPTI resource"},
    {4u << 16, "Module loading"},   {5u << 16, "Lazy function loading"},
    {6u << 16, "Command buffer full"}, {7u << 16, "Activity buffer request"},
};

#define TIMED(T) [DT_F_START] = DT_FIELD(T, start), [DT_F_END] = DT_FIELD(T, end), \
    [DT_F_CORRELATION] = DT_FIELD(T, correlationId)
#define PLACED(T) [DT_F_DEVICE] = DT_FIELD(T, deviceId), [DT_F_CONTEXT] = DT_FIELD(T, contextId), \
    [DT_F_STREAM] = DT_FIELD(T, streamId)

#define KERNEL(kind_, size_)                                                                           \
    {.kind = kind_, .cls = DT_RC_KERNEL, .size = size_, .f = {                                         \
        TIMED(dt_cf_kernel), PLACED(dt_cf_kernel),                                                     \
        [DT_F_GRID_X] = DT_FIELD(dt_cf_kernel, gridX), [DT_F_GRID_Y] = DT_FIELD(dt_cf_kernel, gridY),  \
        [DT_F_GRID_Z] = DT_FIELD(dt_cf_kernel, gridZ), [DT_F_BLOCK_X] = DT_FIELD(dt_cf_kernel, blockX), \
        [DT_F_BLOCK_Y] = DT_FIELD(dt_cf_kernel, blockY), [DT_F_BLOCK_Z] = DT_FIELD(dt_cf_kernel, blockZ), \
        [DT_F_REGISTERS] = DT_FIELD(dt_cf_kernel, registersPerThread),                                 \
        [DT_F_STATIC_SHARED] = DT_FIELD(dt_cf_kernel, staticSharedMemory),                             \
        [DT_F_DYNAMIC_SHARED] = DT_FIELD(dt_cf_kernel, dynamicSharedMemory),                           \
        [DT_F_NAME] = DT_FIELD(dt_cf_kernel, name), [DT_F_QUEUED] = DT_FIELD(dt_cf_kernel, queued),    \
        [DT_F_SUBMITTED] = DT_FIELD(dt_cf_kernel, submitted)}}

#define COPY_FIELDS(T) TIMED(T), PLACED(T), [DT_F_BYTES] = DT_FIELD(T, bytes),                        \
    [DT_F_COPY_KIND] = DT_FIELD(T, copyKind), [DT_F_SRC_KIND] = DT_FIELD(T, srcKind),                 \
    [DT_F_DST_KIND] = DT_FIELD(T, dstKind), [DT_F_FLAGS] = DT_FIELD(T, flags)

#define MEMCPY(size_) {.kind = DT_CF_KIND_MEMCPY, .cls = DT_RC_MEMCPY, .size = size_, .f = {COPY_FIELDS(dt_cf_memcpy)}}

#define MEMCPY_PEER                                                                                  \
    {.kind = DT_CF_KIND_MEMCPY2, .cls = DT_RC_MEMCPY, .size = sizeof(dt_cf_memcpy_peer), .f = {     \
        COPY_FIELDS(dt_cf_memcpy_peer), [DT_F_SRC_DEVICE] = DT_FIELD(dt_cf_memcpy_peer, srcDeviceId), \
        [DT_F_DST_DEVICE] = DT_FIELD(dt_cf_memcpy_peer, dstDeviceId)}}

#define MEMSET(size_)                                                                                \
    {.kind = DT_CF_KIND_MEMSET, .cls = DT_RC_MEMSET, .size = size_, .f = {                           \
        TIMED(dt_cf_memset), PLACED(dt_cf_memset), [DT_F_BYTES] = DT_FIELD(dt_cf_memset, bytes),     \
        [DT_F_VALUE] = DT_FIELD(dt_cf_memset, value), [DT_F_FLAGS] = DT_FIELD(dt_cf_memset, flags),  \
        [DT_F_MEMORY_KIND] = DT_FIELD(dt_cf_memset, memoryKind)}}

#define API(kind_, cls_)                                                                             \
    {.kind = kind_, .cls = cls_, .size = sizeof(dt_cf_api), .f = {                                   \
        TIMED(dt_cf_api), [DT_F_CBID] = DT_FIELD(dt_cf_api, cbid),                                   \
        [DT_F_PROCESS] = DT_FIELD(dt_cf_api, processId), [DT_F_THREAD] = DT_FIELD(dt_cf_api, threadId), \
        [DT_F_RETURN_VALUE] = DT_FIELD(dt_cf_api, returnValue)}}

#define EXTERNAL                                                                                     \
    {.kind = DT_CF_KIND_EXTERNAL_CORRELATION, .cls = DT_RC_EXTERNAL, .size = sizeof(dt_cf_external), \
     .f = {[DT_F_EXTERNAL_KIND] = DT_FIELD(dt_cf_external, externalKind),                            \
           [DT_F_EXTERNAL_ID] = DT_FIELD(dt_cf_external, externalId),                                \
           [DT_F_CORRELATION] = DT_FIELD(dt_cf_external, correlationId)}}

#define SYNC(size_)                                                                                  \
    {.kind = DT_CF_KIND_SYNCHRONIZATION, .cls = DT_RC_SYNC, .size = size_, .f = {                    \
        TIMED(dt_cf_sync), [DT_F_SYNC_TYPE] = DT_FIELD(dt_cf_sync, type),                            \
        [DT_F_CONTEXT] = DT_FIELD(dt_cf_sync, contextId), [DT_F_STREAM] = DT_FIELD(dt_cf_sync, streamId)}}

#define OVERHEAD                                                                                     \
    {.kind = DT_CF_KIND_OVERHEAD, .cls = DT_RC_OVERHEAD, .size = sizeof(dt_cf_overhead), .f = {      \
        TIMED(dt_cf_overhead), [DT_F_OVERHEAD_KIND] = DT_FIELD(dt_cf_overhead, overheadKind),        \
        [DT_F_OBJECT_KIND] = DT_FIELD(dt_cf_overhead, objectKind),                                   \
        [DT_F_OBJECT_ID0] = {offsetof(dt_cf_overhead, objectId), 4},                                 \
        [DT_F_OBJECT_ID1] = {offsetof(dt_cf_overhead, objectId) + 4, 4},                             \
        [DT_F_OBJECT_ID2] = {offsetof(dt_cf_overhead, objectId) + 8, 4}}}

#define DEV(field, member) [field] = DT_FIELD(dt_cf_device, member)
#define DEVICE                                                                                       \
    {.kind = DT_CF_KIND_DEVICE, .cls = DT_RC_DEVICE, .size = sizeof(dt_cf_device), .f = {            \
        DEV(DT_F_DEV_ID, id), DEV(DT_F_DEV_NAME, name), DEV(DT_F_DEV_GLOBAL_MEMORY, globalMemorySize), \
        DEV(DT_F_DEV_CC_MAJOR, computeCapabilityMajor), DEV(DT_F_DEV_CC_MINOR, computeCapabilityMinor), \
        DEV(DT_F_DEV_THREADS_PER_BLOCK, maxThreadsPerBlock),                                         \
        DEV(DT_F_DEV_WARPS_PER_SM, maxWarpsPerMultiprocessor), DEV(DT_F_DEV_THREADS_PER_WARP, numThreadsPerWarp), \
        DEV(DT_F_DEV_BLOCKS_PER_SM, maxBlocksPerMultiprocessor),                                     \
        DEV(DT_F_DEV_REGS_PER_BLOCK, maxRegistersPerBlock),                                          \
        DEV(DT_F_DEV_REGS_PER_SM, maxRegistersPerMultiprocessor),                                    \
        DEV(DT_F_DEV_SHMEM_PER_BLOCK, maxSharedMemoryPerBlock),                                      \
        DEV(DT_F_DEV_SHMEM_PER_SM, maxSharedMemoryPerMultiprocessor), DEV(DT_F_DEV_SMS, numMultiprocessors)}}

/* An allocation or free, at the time CUPTI gives it; one from a
   stream-ordered pool on its stream's row, the others on stream 0's. */
static void decode_memory(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMORY)) return;
    dt_cf_memory m;
    memcpy(&m, rec, sizeof m);
    if (m.memoryOperationType != DT_CF_MEMORY_OPERATION_ALLOCATION &&
        m.memoryOperationType != DT_CF_MEMORY_OPERATION_RELEASE) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    const dt_vendor_enums *en = &d->v->enums;
    dt_memory_op op = {.time = m.timestamp, .correlation = m.correlationId, .address = m.address, .bytes = m.bytes,
                       .device = m.deviceId, .stream = m.streamId,
                       .memory_kind = m.memoryKind < en->memory_kind_count ? en->memory_kinds[m.memoryKind]
                                                                            : DT_MEM_UNKNOWN,
                       .is_free = m.memoryOperationType == DT_CF_MEMORY_OPERATION_RELEASE};
    dt__add_memory(s, &op);
}

const char *const dt__cf_pool_operations[3] = {"created", "destroyed", "trimmed"};

/* A memory pool created, destroyed or trimmed: counted. */
static void decode_memory_pool(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMORY)) return;
    uint32_t op;
    memcpy(&op, rec + offsetof(dt_cf_memory_pool, memoryPoolOperationType), sizeof op);
    if (op < DT_CF_POOL_CREATED || op > DT_CF_POOL_TRIMMED) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    if (d->counted) d->counted[op - DT_CF_POOL_CREATED]++;
}

#define MEMORY_POOL(size_) {.kind = DT_CF_KIND_MEMORY_POOL, .cls = DT_RC_OTHER, .size = size_, \
                            .what = "memory pool", .decode = decode_memory_pool}

#define MEMORY {.kind = DT_CF_KIND_MEMORY2, .cls = DT_RC_OTHER, .size = DT_CF_MEMORY4_SIZE, .what = "memory", \
                .decode = decode_memory}

#define OTHER(kind_, size_, what_) {.kind = kind_, .cls = DT_RC_OTHER, .size = size_, .what = what_}

/* Kinds every generation walks over without decoding. */
#define OTHERS                                                                                       \
    OTHER(DT_CF_KIND_MARKER, DT_CF_MARKER2_SIZE, "marker"),                                          \
    OTHER(DT_CF_KIND_MARKER_DATA, DT_CF_MARKER_DATA2_SIZE, "marker data"),                           \
    OTHER(DT_CF_KIND_NAME, DT_CF_NAME_SIZE, "name"),                                                 \
    OTHER(DT_CF_KIND_CONTEXT, DT_CF_CONTEXT3_SIZE, "context"),                                       \
    OTHER(DT_CF_KIND_CUDA_EVENT, DT_CF_CUDA_EVENT2_SIZE, "CUDA event"),                              \
    OTHER(DT_CF_KIND_INTERNAL_LAUNCH_API, sizeof(dt_cf_api), "internal launch API")

#define COMMON                                                                                       \
    API(DT_CF_KIND_RUNTIME, DT_RC_RUNTIME), API(DT_CF_KIND_DRIVER, DT_RC_DRIVER), EXTERNAL

const dt_record_layout dt__cf_layouts_cuda13[] = {
    KERNEL(DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KERNEL10_SIZE), KERNEL(DT_CF_KIND_KERNEL, DT_CF_KERNEL10_SIZE),
    MEMCPY(DT_CF_MEMCPY6_SIZE), MEMCPY_PEER, MEMSET(DT_CF_MEMSET4_SIZE), COMMON,
    SYNC(sizeof(dt_cf_sync)), OVERHEAD, DEVICE, MEMORY, MEMORY_POOL(DT_CF_MEMORY_POOL3_SIZE), OTHERS, {0},
};

const dt_record_layout dt__cf_layouts_cuda12[] = {
    KERNEL(DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KERNEL9_SIZE), KERNEL(DT_CF_KIND_KERNEL, DT_CF_KERNEL9_SIZE),
    MEMCPY(DT_CF_MEMCPY5_SIZE), MEMCPY_PEER, MEMSET(DT_CF_MEMSET4_SIZE), COMMON,
    SYNC(sizeof(dt_cf_sync)), OVERHEAD, DEVICE, MEMORY, MEMORY_POOL(DT_CF_MEMORY_POOL2_SIZE), OTHERS, {0},
};

const dt_record_layout dt__cf_layouts_cuda11[] = {
    KERNEL(DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KERNEL8_SIZE), KERNEL(DT_CF_KIND_KERNEL, DT_CF_KERNEL8_SIZE),
    MEMCPY(DT_CF_MEMCPY5_SIZE), MEMSET(DT_CF_MEMSET4_SIZE), COMMON, {0},
};

/* Synchronization (version 1) is the first 40 bytes of Synchronization2. */
const dt_record_layout dt__cf_layouts_kernel6[] = {
    KERNEL(DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KERNEL6_SIZE), KERNEL(DT_CF_KIND_KERNEL, DT_CF_KERNEL6_SIZE),
    MEMCPY(DT_CF_MEMCPY4_SIZE), MEMSET(DT_CF_MEMSET3_SIZE), COMMON, SYNC(40), {0},
};

DT_DECODER_WALK(dt__cf_layouts_cuda13)
DT_DECODER_WALK(dt__cf_layouts_cuda12)
DT_DECODER_WALK(dt__cf_layouts_cuda11)
DT_DECODER_WALK(dt__cf_layouts_kernel6)

size_t dt__cf_record_size(const dt_record_layout *set, uint32_t kind)
{
    for (size_t i = 0; set[i].size; i++)
        if (set[i].kind == kind) return set[i].size;
    return 0;
}

int dt__cf_subscribe_named(void *fn, void **subscriber, void *callback, void *userdata, const char *name,
                          char *holder, size_t holder_len)
{
    dt_cf_subscriber_params params = {sizeof params, name, holder, holder_len};
    if (holder_len) holder[0] = '\0';
    return ((int (*)(void **, void *, void *, dt_cf_subscriber_params *))fn)(subscriber, callback, userdata, &params);
}
