/* CUPTI-family records for the emulator, through devtrace's declaration. */
#include "cf_records.h"

#include <string.h>

emu_cf_options emu_cf_cuda13(void)
{
    emu_cf_options o = {DT_CF_KIND_CONCURRENT_KERNEL, 1, 0, 0, DT_CF_KERNEL10_SIZE, DT_CF_MEMCPY6_SIZE,
                        DT_CF_MEMSET4_SIZE};
    return o;
}

size_t emu_cf_record_size(emu_rec_kind kind, const emu_cf_options *opt)
{
    switch (kind) {
    case EMU_REC_KERNEL: return opt->kernel_size;
    /* peer copies share the memcpy slot of the emulator core: the larger */
    case EMU_REC_MEMCPY:
        return opt->peer_as_memcpy2 && sizeof(dt_cf_memcpy_peer) > opt->memcpy_size ? sizeof(dt_cf_memcpy_peer)
                                                                                     : opt->memcpy_size;
    case EMU_REC_MEMSET: return opt->memset_size;
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: return sizeof(dt_cf_api);
    case EMU_REC_EXTERNAL: return sizeof(dt_cf_external);
    case EMU_REC_MEMORY: return sizeof(dt_cf_memory);
    case EMU_REC_MEMORY_POOL: return sizeof(dt_cf_memory_pool);
    case EMU_REC_UNKNOWN: return EMU_CF_UNKNOWN_SIZE;
    default: return 0;
    }
}

size_t emu_cf_stride(uint32_t kind, const emu_cf_options *opt)
{
    switch (kind) {
    case DT_CF_KIND_KERNEL:
    case DT_CF_KIND_CONCURRENT_KERNEL: return opt->kernel_size;
    case DT_CF_KIND_MEMCPY: return opt->memcpy_size;
    case DT_CF_KIND_MEMCPY2: return opt->peer_as_memcpy2 ? sizeof(dt_cf_memcpy_peer) : 0;
    case DT_CF_KIND_MEMSET: return opt->memset_size;
    case DT_CF_KIND_RUNTIME:
    case DT_CF_KIND_DRIVER: return sizeof(dt_cf_api);
    case DT_CF_KIND_EXTERNAL_CORRELATION: return sizeof(dt_cf_external);
    case DT_CF_KIND_DEVICE: return sizeof(dt_cf_device);
    case DT_CF_KIND_MEMORY2: return sizeof(dt_cf_memory);
    case DT_CF_KIND_MEMORY_POOL: return sizeof(dt_cf_memory_pool);
    default: return 0;
    }
}

emu_rec_kind emu_cf_record_kind(const uint8_t *rec, size_t avail)
{
    uint32_t kind;
    if (avail < sizeof kind) return EMU_REC_UNKNOWN;
    memcpy(&kind, rec, sizeof kind);
    switch (kind) {
    case DT_CF_KIND_KERNEL:
    case DT_CF_KIND_CONCURRENT_KERNEL: return EMU_REC_KERNEL;
    case DT_CF_KIND_MEMCPY:
    case DT_CF_KIND_MEMCPY2: return EMU_REC_MEMCPY;
    case DT_CF_KIND_MEMSET: return EMU_REC_MEMSET;
    case DT_CF_KIND_RUNTIME: return EMU_REC_RUNTIME;
    case DT_CF_KIND_DRIVER: return EMU_REC_DRIVER;
    case DT_CF_KIND_EXTERNAL_CORRELATION: return EMU_REC_EXTERNAL;
    case DT_CF_KIND_MEMORY2: return EMU_REC_MEMORY;
    case DT_CF_KIND_MEMORY_POOL: return EMU_REC_MEMORY_POOL;
    default: return EMU_REC_UNKNOWN;
    }
}

static uint8_t copy_kind(emu_copy_kind k)
{
    switch (k) {
    case EMU_COPY_HTOD: return DT_CF_COPY_HTOD;
    case EMU_COPY_DTOH: return DT_CF_COPY_DTOH;
    case EMU_COPY_DTOD: return DT_CF_COPY_DTOD;
    case EMU_COPY_HTOH: return DT_CF_COPY_HTOH;
    case EMU_COPY_PTOP: return DT_CF_COPY_PTOP;
    default: return DT_CF_COPY_UNKNOWN;
    }
}

static uint8_t memory_kind(int m)
{
    switch (m) {
    case EMU_MEM_PAGEABLE: return DT_CF_MEMORY_PAGEABLE;
    case EMU_MEM_PINNED: return DT_CF_MEMORY_PINNED;
    case EMU_MEM_DEVICE: return DT_CF_MEMORY_DEVICE;
    default: return DT_CF_MEMORY_UNKNOWN;
    }
}

/* Older record versions are prefixes of the newest: write the newest, keep
   the first `size` bytes. */
static void put(uint8_t *dst, const void *rec, size_t size) { memcpy(dst, rec, size); }

static void write_kernel(uint8_t *dst, const emu_activity *a, const emu_cf_options *opt)
{
    dt_cf_kernel k;
    memset(&k, 0, sizeof k);
    k.kind = opt->kernel_kind;
    k.registersPerThread = (uint16_t)a->u.kernel.registers_per_thread;
    k.start = a->start;
    k.end = a->end;
    k.completed = a->u.kernel.completed;
    k.deviceId = a->device;
    k.contextId = a->context;
    k.streamId = a->stream;
    k.gridX = a->u.kernel.grid[0];
    k.gridY = a->u.kernel.grid[1];
    k.gridZ = a->u.kernel.grid[2];
    k.blockX = a->u.kernel.block[0];
    k.blockY = a->u.kernel.block[1];
    k.blockZ = a->u.kernel.block[2];
    k.staticSharedMemory = a->u.kernel.static_shared_memory;
    k.dynamicSharedMemory = a->u.kernel.dynamic_shared_memory;
    k.correlationId = a->correlation;
    k.gridId = a->u.kernel.grid_id;
    k.name = a->u.kernel.name;
    /* Without latency timestamps enabled they stay unknown (0 since CUDA 13). */
    k.queued = opt->latency_timestamps ? a->u.kernel.queued : 0;
    k.submitted = opt->latency_timestamps ? a->u.kernel.submitted : 0;
    k.clusterX = k.clusterY = k.clusterZ = 1;
    put(dst, &k, opt->kernel_size);
}

/* The fields every copy record has, at the same names in both layouts. */
#define COPY_FIELDS(m, a)                                                    \
    do {                                                                     \
        (m).copyKind = copy_kind((a)->u.memcpy.copy_kind);                   \
        (m).srcKind = memory_kind((a)->u.memcpy.src_memory);                 \
        (m).dstKind = memory_kind((a)->u.memcpy.dst_memory);                 \
        (m).flags = (a)->u.memcpy.async ? DT_CF_FLAG_ASYNC : 0;              \
        (m).bytes = (a)->u.memcpy.bytes;                                     \
        (m).start = (a)->start;                                              \
        (m).end = (a)->end;                                                  \
        (m).deviceId = (a)->device;                                          \
        (m).contextId = (a)->context;                                        \
        (m).streamId = (a)->stream;                                          \
        (m).correlationId = (a)->correlation;                                \
    } while (0)

static void write_memcpy(uint8_t *dst, const emu_activity *a, const emu_cf_options *opt)
{
    int peer = a->u.memcpy.copy_kind == EMU_COPY_PTOP && opt->peer_as_memcpy2;
    if (peer || opt->copies_name_devices) {
        dt_cf_memcpy_peer m;
        memset(&m, 0, sizeof m);
        m.kind = peer ? DT_CF_KIND_MEMCPY2 : DT_CF_KIND_MEMCPY;
        COPY_FIELDS(m, a);
        m.srcDeviceId = a->u.memcpy.src_device;
        m.srcContextId = a->context;
        m.dstDeviceId = a->u.memcpy.dst_device;
        m.dstContextId = a->context;
        put(dst, &m, peer ? sizeof m : opt->memcpy_size);
        return;
    }
    dt_cf_memcpy m;
    memset(&m, 0, sizeof m);
    m.kind = DT_CF_KIND_MEMCPY;
    COPY_FIELDS(m, a);
    m.copyCount = 1;
    put(dst, &m, opt->memcpy_size);
}

static void write_memset(uint8_t *dst, const emu_activity *a, const emu_cf_options *opt)
{
    dt_cf_memset m;
    memset(&m, 0, sizeof m);
    m.kind = DT_CF_KIND_MEMSET;
    m.value = a->u.memset.value;
    m.bytes = a->u.memset.bytes;
    m.start = a->start;
    m.end = a->end;
    m.deviceId = a->device;
    m.contextId = a->context;
    m.streamId = a->stream;
    m.correlationId = a->correlation;
    m.flags = a->u.memset.async ? DT_CF_FLAG_ASYNC : 0;
    m.memoryKind = memory_kind(a->u.memset.memory);
    put(dst, &m, opt->memset_size);
}

static void write_api(uint8_t *dst, const emu_activity *a)
{
    dt_cf_api r;
    memset(&r, 0, sizeof r);
    r.kind = a->kind == EMU_REC_DRIVER ? DT_CF_KIND_DRIVER : DT_CF_KIND_RUNTIME;
    r.cbid = a->u.api.cbid;
    r.start = a->start;
    r.end = a->end;
    r.processId = a->u.api.process;
    r.threadId = a->u.api.thread;
    r.correlationId = a->correlation;
    r.returnValue = (uint32_t)a->u.api.return_value;
    put(dst, &r, sizeof r);
}

static void write_external(uint8_t *dst, const emu_activity *a)
{
    dt_cf_external e;
    memset(&e, 0, sizeof e);
    e.kind = DT_CF_KIND_EXTERNAL_CORRELATION;
    e.externalKind = a->u.external.external_kind;
    e.externalId = a->u.external.external_id;
    e.correlationId = a->correlation;
    put(dst, &e, sizeof e);
}

/* An allocation or free (Memory4), at the time of its call. */
static void write_memory(uint8_t *dst, const emu_activity *a)
{
    dt_cf_memory m;
    memset(&m, 0, sizeof m);
    m.kind = DT_CF_KIND_MEMORY2;
    m.memoryOperationType = a->u.memory.is_free ? DT_CF_MEMORY_OPERATION_RELEASE : DT_CF_MEMORY_OPERATION_ALLOCATION;
    m.memoryKind = memory_kind(a->u.memory.memory);
    m.correlationId = a->correlation;
    m.address = a->u.memory.address;
    m.bytes = a->u.memory.bytes;
    m.timestamp = a->start;
    m.processId = a->u.memory.process;
    m.deviceId = a->device;
    m.contextId = a->context;
    m.streamId = a->stream;
    put(dst, &m, sizeof m);
}

/* A memory pool created, destroyed or trimmed (MemoryPool3). */
static void write_memory_pool(uint8_t *dst, const emu_activity *a)
{
    dt_cf_memory_pool p;
    memset(&p, 0, sizeof p);
    p.kind = DT_CF_KIND_MEMORY_POOL;
    p.memoryPoolOperationType = (uint32_t)a->u.memory.pool_op;
    p.memoryPoolType = DT_CF_MEMORY_POOL_LOCAL;
    p.correlationId = a->correlation;
    p.processId = a->u.memory.process;
    p.deviceId = a->device;
    p.address = a->u.memory.address;
    p.size = a->u.memory.bytes;
    p.timestamp = a->start;
    put(dst, &p, sizeof p);
}

void emu_cf_write_record(uint8_t *dst, const emu_activity *a, const emu_cf_options *opt)
{
    switch (a->kind) {
    case EMU_REC_KERNEL: write_kernel(dst, a, opt); return;
    case EMU_REC_MEMCPY: write_memcpy(dst, a, opt); return;
    case EMU_REC_MEMSET: write_memset(dst, a, opt); return;
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: write_api(dst, a); return;
    case EMU_REC_EXTERNAL: write_external(dst, a); return;
    case EMU_REC_MEMORY: write_memory(dst, a); return;
    case EMU_REC_MEMORY_POOL: write_memory_pool(dst, a); return;
    case EMU_REC_UNKNOWN: {
        uint32_t kind = EMU_CF_UNKNOWN_KIND;
        memcpy(dst, &kind, sizeof kind);
        memcpy(dst + 8, &a->correlation, sizeof a->correlation);
        return;
    }
    default: return;
    }
}

void emu_cf_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    dt_cf_callback_data data;
    memset(&data, 0, sizeof data);
    data.callbackSite = call->site == EMU_SITE_ENTER ? DT_CF_API_ENTER : DT_CF_API_EXIT;
    data.functionName = call->function_name;
    data.functionParams = call->function_params;
    data.functionReturnValue = call->return_value;
    data.symbolName = call->symbol_name;
    data.contextUid = call->context_uid;
    data.correlationData = call->correlation_data;
    data.correlationId = call->correlation;
    uint32_t domain = call->domain == EMU_DOMAIN_DRIVER ? DT_CF_DOMAIN_DRIVER_API : DT_CF_DOMAIN_RUNTIME_API;
    ((void (*)(void *, uint32_t, uint32_t, const void *))client_fn)(userdata, domain, call->cbid, &data);
}

void emu_cf_write_device(uint8_t *dst, uint32_t id, const char *name)
{
    dt_cf_device d;
    memset(&d, 0, sizeof d);
    d.kind = DT_CF_KIND_DEVICE;
    d.globalMemoryBandwidth = 3352000000ull; /* KB/s */
    d.globalMemorySize = EMU_CF_DEV_GLOBAL_MEM;
    d.constantMemorySize = 65536;
    d.l2CacheSize = 50u << 20;
    d.numThreadsPerWarp = 32;
    d.coreClockRate = 1980000;
    d.numMemcpyEngines = 3;
    d.numMultiprocessors = EMU_CF_DEV_SMS;
    d.maxIPC = 4;
    d.maxWarpsPerMultiprocessor = EMU_CF_DEV_WARPS_PER_SM;
    d.maxBlocksPerMultiprocessor = EMU_CF_DEV_BLOCKS_PER_SM;
    d.maxSharedMemoryPerMultiprocessor = EMU_CF_DEV_SHMEM_PER_SM;
    d.maxRegistersPerMultiprocessor = EMU_CF_DEV_REGS_PER_SM;
    d.maxRegistersPerBlock = EMU_CF_DEV_REGS_PER_BLOCK;
    d.maxSharedMemoryPerBlock = EMU_CF_DEV_SHMEM_PER_BLOCK;
    d.maxThreadsPerBlock = EMU_CF_DEV_THREADS_PER_BLOCK;
    d.maxBlockDimX = 1024;
    d.maxBlockDimY = 1024;
    d.maxBlockDimZ = 64;
    d.maxGridDimX = 2147483647u;
    d.maxGridDimY = 65535;
    d.maxGridDimZ = 65535;
    d.computeCapabilityMajor = EMU_CF_DEV_CC_MAJOR;
    d.computeCapabilityMinor = EMU_CF_DEV_CC_MINOR;
    d.id = id;
    d.name = name;
    d.isCudaVisible = 1;
    put(dst, &d, sizeof d);
}
