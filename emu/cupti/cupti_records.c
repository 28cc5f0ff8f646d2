/*
 * CUPTI record layouts for the emulator, through the toolkit's structs.
 */
#include "cupti_records.h"

#include <string.h>

#include <cupti_activity.h>

/* Peer copies share the memcpy slot of the emulator core, so both layouts
   must take the same room. */
_Static_assert(sizeof(CUpti_ActivityMemcpy6) == sizeof(CUpti_ActivityMemcpyPtoP4),
               "Memcpy6 and MemcpyPtoP4 differ in size");

size_t emu_cupti_record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case EMU_REC_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case EMU_REC_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: return sizeof(CUpti_ActivityAPI);
    case EMU_REC_EXTERNAL: return sizeof(CUpti_ActivityExternalCorrelation);
    case EMU_REC_UNKNOWN: return EMU_CUPTI_UNKNOWN_SIZE;
    default: return 0;
    }
}

size_t emu_cupti_stride(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    default: return 0;
    }
}

emu_rec_kind emu_cupti_record_kind(const uint8_t *rec, size_t avail)
{
    uint32_t kind;
    if (avail < sizeof kind) return EMU_REC_UNKNOWN;
    memcpy(&kind, rec, sizeof kind);
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return EMU_REC_KERNEL;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return EMU_REC_MEMCPY;
    case CUPTI_ACTIVITY_KIND_MEMSET: return EMU_REC_MEMSET;
    case CUPTI_ACTIVITY_KIND_RUNTIME: return EMU_REC_RUNTIME;
    case CUPTI_ACTIVITY_KIND_DRIVER: return EMU_REC_DRIVER;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return EMU_REC_EXTERNAL;
    default: return EMU_REC_UNKNOWN;
    }
}

static uint8_t cupti_copy_kind(emu_copy_kind k)
{
    switch (k) {
    case EMU_COPY_HTOD: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case EMU_COPY_DTOH: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case EMU_COPY_DTOD: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case EMU_COPY_HTOH: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    case EMU_COPY_PTOP: return CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    default: return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
    }
}

static uint8_t cupti_memory_kind(int m)
{
    switch (m) {
    case EMU_MEM_PAGEABLE: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    case EMU_MEM_PINNED: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case EMU_MEM_DEVICE: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    default: return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
    }
}

static void write_kernel(uint8_t *dst, const emu_activity *a, const emu_cupti_options *opt)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = (CUpti_ActivityKind)opt->kernel_kind;
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
    /* Without cuptiActivityEnableLatencyTimestamps CUPTI leaves them unknown. */
    k.queued = opt->latency_timestamps ? a->u.kernel.queued : CUPTI_TIMESTAMP_UNKNOWN;
    k.submitted = opt->latency_timestamps ? a->u.kernel.submitted : CUPTI_TIMESTAMP_UNKNOWN;
    k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    k.clusterX = k.clusterY = k.clusterZ = 1;
    memcpy(dst, &k, sizeof k);
}

static void write_memcpy(uint8_t *dst, const emu_activity *a, const emu_cupti_options *opt)
{
    uint8_t flags = a->u.memcpy.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    if (a->u.memcpy.copy_kind == EMU_COPY_PTOP && opt->peer_as_memcpy2) {
        CUpti_ActivityMemcpyPtoP4 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
        m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
        m.srcKind = cupti_memory_kind(a->u.memcpy.src_memory);
        m.dstKind = cupti_memory_kind(a->u.memcpy.dst_memory);
        m.flags = flags;
        m.bytes = a->u.memcpy.bytes;
        m.start = a->start;
        m.end = a->end;
        m.deviceId = a->device;
        m.contextId = a->context;
        m.streamId = a->stream;
        m.srcDeviceId = a->u.memcpy.src_device;
        m.srcContextId = a->context;
        m.dstDeviceId = a->u.memcpy.dst_device;
        m.dstContextId = a->context;
        m.correlationId = a->correlation;
        memcpy(dst, &m, sizeof m);
        return;
    }
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = cupti_copy_kind(a->u.memcpy.copy_kind);
    m.srcKind = cupti_memory_kind(a->u.memcpy.src_memory);
    m.dstKind = cupti_memory_kind(a->u.memcpy.dst_memory);
    m.flags = flags;
    m.bytes = a->u.memcpy.bytes;
    m.start = a->start;
    m.end = a->end;
    m.deviceId = a->device;
    m.contextId = a->context;
    m.streamId = a->stream;
    m.correlationId = a->correlation;
    m.copyCount = 1;
    memcpy(dst, &m, sizeof m);
}

static void write_memset(uint8_t *dst, const emu_activity *a)
{
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = a->u.memset.value;
    m.bytes = a->u.memset.bytes;
    m.start = a->start;
    m.end = a->end;
    m.deviceId = a->device;
    m.contextId = a->context;
    m.streamId = a->stream;
    m.correlationId = a->correlation;
    m.flags = a->u.memset.async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    m.memoryKind = cupti_memory_kind(a->u.memset.memory);
    memcpy(dst, &m, sizeof m);
}

static void write_api(uint8_t *dst, const emu_activity *a)
{
    CUpti_ActivityAPI r;
    memset(&r, 0, sizeof r);
    r.kind = a->kind == EMU_REC_DRIVER ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    r.cbid = a->u.api.cbid;
    r.start = a->start;
    r.end = a->end;
    r.processId = a->u.api.process;
    r.threadId = a->u.api.thread;
    r.correlationId = a->correlation;
    r.returnValue = (uint32_t)a->u.api.return_value;
    memcpy(dst, &r, sizeof r);
}

static void write_external(uint8_t *dst, const emu_activity *a)
{
    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = (CUpti_ExternalCorrelationKind)a->u.external.external_kind;
    e.externalId = a->u.external.external_id;
    e.correlationId = a->correlation;
    memcpy(dst, &e, sizeof e);
}

void emu_cupti_write_record(uint8_t *dst, const emu_activity *a, const emu_cupti_options *opt)
{
    switch (a->kind) {
    case EMU_REC_KERNEL: write_kernel(dst, a, opt); return;
    case EMU_REC_MEMCPY: write_memcpy(dst, a, opt); return;
    case EMU_REC_MEMSET: write_memset(dst, a); return;
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: write_api(dst, a); return;
    case EMU_REC_EXTERNAL: write_external(dst, a); return;
    case EMU_REC_UNKNOWN: {
        uint32_t kind = EMU_CUPTI_UNKNOWN_KIND;
        memcpy(dst, &kind, sizeof kind);
        memcpy(dst + 8, &a->correlation, sizeof a->correlation);
        return;
    }
    default: return;
    }
}

size_t emu_cupti_device_record_size(void) { return sizeof(CUpti_ActivityDevice5); }

void emu_cupti_write_device(uint8_t *dst, uint32_t id, const char *name)
{
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.globalMemoryBandwidth = 3352000000ull; /* KB/s */
    d.globalMemorySize = EMU_CUPTI_DEV_GLOBAL_MEM;
    d.constantMemorySize = 65536;
    d.l2CacheSize = 50u << 20;
    d.numThreadsPerWarp = 32;
    d.coreClockRate = 1980000;
    d.numMemcpyEngines = 3;
    d.numMultiprocessors = EMU_CUPTI_DEV_SMS;
    d.maxIPC = 4;
    d.maxWarpsPerMultiprocessor = EMU_CUPTI_DEV_WARPS_PER_SM;
    d.maxBlocksPerMultiprocessor = EMU_CUPTI_DEV_BLOCKS_PER_SM;
    d.maxSharedMemoryPerMultiprocessor = EMU_CUPTI_DEV_SHMEM_PER_SM;
    d.maxRegistersPerMultiprocessor = EMU_CUPTI_DEV_REGS_PER_SM;
    d.maxRegistersPerBlock = EMU_CUPTI_DEV_REGS_PER_BLOCK;
    d.maxSharedMemoryPerBlock = EMU_CUPTI_DEV_SHMEM_PER_BLOCK;
    d.maxThreadsPerBlock = EMU_CUPTI_DEV_THREADS_PER_BLOCK;
    d.maxBlockDimX = 1024;
    d.maxBlockDimY = 1024;
    d.maxBlockDimZ = 64;
    d.maxGridDimX = 2147483647u;
    d.maxGridDimY = 65535;
    d.maxGridDimZ = 65535;
    d.computeCapabilityMajor = EMU_CUPTI_DEV_CC_MAJOR;
    d.computeCapabilityMinor = EMU_CUPTI_DEV_CC_MINOR;
    d.id = id;
    d.name = name;
    d.isCudaVisible = 1;
    memcpy(dst, &d, sizeof d);
}
