/*
 * NVIDIA CUDA through CUPTI's activity API, as a descriptor over the engine.
 *
 * Records are decoded through devtrace's declaration of the CUPTI-family
 * layouts (cupti_family_abi.h), checked here at compile time against the
 * toolkit's own structs; the stride from one record to the next comes from
 * the loaded libcupti's iterator, since a libcupti of another release may
 * write longer records, and only it knows their size. CUPTI appends fields
 * across versions and never moves them, so the fields read sit at the same
 * offsets in every record version that has them.
 *
 * The runtime and driver API names are generated at build time from the
 * toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h, which is why the
 * backend needs the toolkit's headers to be built.
 */
#include "backends/cupti_family.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* CUDA calls its injection library (CUDA_INJECTION64_PATH) as the process
   initialises CUDA, before the first context: the session waiting for
   CUPTI attaches it now; without one (DEVTRACE_DISABLE: the program records
   through devtrace's API itself), what must precede the first context is
   armed for the program's session. */
static dt_status inject_arm(const dt_backend *self, dt_session *s, int *attached)
{
    /* attached already: another CUPTI client came before the program's
       first CUDA call, and devtrace attached first (src/inject/cuda.c) */
    if (s && strcmp(dt_session_backend(s), self->name) == 0) {
        *attached = 1;
        return DT_OK;
    }
    *attached = s && dt__core_awaits(s, self->name);
    return *attached ? dt__core_attach_deferred(s) : self->prepare(self);
}

/* What CUPTI is to the rest of devtrace besides what the engine says:
   CUDA calls devtrace's injection library; CUPTI does not support a child
   forked without exec from a process that uses CUDA (the driver is unusable
   there); torch.profiler records CUDA itself through Kineto's CUPTI
   support. */
#define CUPTI_CAPS \
    (DT_BACKEND_NO_FORK_CHILD | DT_BACKEND_INJECTION_ENTRY | DT_BACKEND_KINETO_NATIVE | DT_BACKEND_FLIGHT_RECORDER)
#define CUPTI_INJECT_ENV "CUDA_INJECTION64_PATH"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>
#include "cupti_cbid_names.h"

/* devtrace's declaration is the toolkit's, field by field where read. */
#define SAME_FIELD(ours, theirs, member)                                                       \
    _Static_assert(offsetof(ours, member) == offsetof(theirs, member) &&                       \
                       sizeof(((ours *)0)->member) == sizeof(((theirs *)0)->member),           \
                   #theirs "." #member " moved")
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, start);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, registersPerThread);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, gridX);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, dynamicSharedMemory);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, correlationId);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, name);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, submitted);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, isDeviceLaunched);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, copyKind);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, correlationId);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, copyCount);
SAME_FIELD(dt_cf_memcpy_peer, CUpti_ActivityMemcpyPtoP4, dstDeviceId);
SAME_FIELD(dt_cf_memcpy_peer, CUpti_ActivityMemcpyPtoP4, correlationId);
SAME_FIELD(dt_cf_memset, CUpti_ActivityMemset4, memoryKind);
SAME_FIELD(dt_cf_api, CUpti_ActivityAPI, returnValue);
SAME_FIELD(dt_cf_external, CUpti_ActivityExternalCorrelation, correlationId);
SAME_FIELD(dt_cf_sync, CUpti_ActivitySynchronization2, streamId);
SAME_FIELD(dt_cf_overhead, CUpti_ActivityOverhead3, correlationId);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, memoryOperationType);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, memoryKind);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, correlationId);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, address);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, bytes);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, timestamp);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, deviceId);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, streamId);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, memoryPoolConfig.memoryPoolType);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, memoryPoolConfig.address);
SAME_FIELD(dt_cf_memory, CUpti_ActivityMemory4, source);
_Static_assert(sizeof(dt_cf_memory) == sizeof(CUpti_ActivityMemory4), "Memory4 size");
_Static_assert(DT_CF_MEMORY_OPERATION_ALLOCATION == (int)CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
                   DT_CF_MEMORY_OPERATION_RELEASE == (int)CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE &&
                   DT_CF_KIND_MEMORY2 == (int)CUPTI_ACTIVITY_KIND_MEMORY2 &&
                   DT_CF_MEMORY_DEVICE == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
                   DT_CF_MEMORY_MANAGED_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC,
               "CUPTI's memory numbers");
SAME_FIELD(dt_cf_device, CUpti_ActivityDevice5, name);
SAME_FIELD(dt_cf_device, CUpti_ActivityDevice5, numMultiprocessors);
SAME_FIELD(dt_cf_callback_data, CUpti_CallbackData, correlationId);
SAME_FIELD(dt_cf_resource_data, CUpti_ResourceData, context);
_Static_assert(sizeof(dt_cf_resource_data) == sizeof(CUpti_ResourceData), "CUpti_ResourceData size");
_Static_assert(DT_CF_DOMAIN_DRIVER_API == (int)CUPTI_CB_DOMAIN_DRIVER_API &&
                   DT_CF_DOMAIN_RUNTIME_API == (int)CUPTI_CB_DOMAIN_RUNTIME_API &&
                   DT_CF_DOMAIN_RESOURCE == (int)CUPTI_CB_DOMAIN_RESOURCE &&
                   DT_CF_CBID_RESOURCE_CONTEXT_CREATED == (int)CUPTI_CBID_RESOURCE_CONTEXT_CREATED &&
                   DT_CF_API_ENTER == (int)CUPTI_API_ENTER && DT_CF_API_EXIT == (int)CUPTI_API_EXIT,
               "CUPTI's callback domains and sites");
SAME_FIELD(dt_cf_subscriber_params, CUpti_SubscriberParams, subscriberName);
SAME_FIELD(dt_cf_subscriber_params, CUpti_SubscriberParams, oldSubscriberName);
SAME_FIELD(dt_cf_subscriber_params, CUpti_SubscriberParams, oldSubscriberSize);
_Static_assert(sizeof(dt_cf_subscriber_params) == CUpti_SubscriberParams_STRUCT_SIZE, "CUpti_SubscriberParams size");
_Static_assert(sizeof(dt_cf_kernel) == sizeof(CUpti_ActivityKernel10), "Kernel10 size");
/* Every record version devtrace declares is the toolkit's (since 13.2 the
   older ones are in cupti_activity_deprecated.h, which cupti_activity.h
   includes): its size, and the fields read where that version has them. */
#define SAME_PREFIX(theirs, size, ours, member)                                                    \
    _Static_assert(sizeof(theirs) == (size) && offsetof(ours, member) == offsetof(theirs, member), \
                   #theirs " is not devtrace's prefix")
SAME_PREFIX(CUpti_ActivityKernel4, DT_CF_KERNEL4_SIZE, dt_cf_kernel, correlationId);
SAME_PREFIX(CUpti_ActivityKernel6, DT_CF_KERNEL6_SIZE, dt_cf_kernel, submitted);
SAME_PREFIX(CUpti_ActivityKernel8, DT_CF_KERNEL8_SIZE, dt_cf_kernel, name);
SAME_PREFIX(CUpti_ActivityKernel9, DT_CF_KERNEL9_SIZE, dt_cf_kernel, queued);
SAME_PREFIX(CUpti_ActivityKernel10, DT_CF_KERNEL10_SIZE, dt_cf_kernel, isDeviceLaunched);
SAME_PREFIX(CUpti_ActivityMemcpy4, DT_CF_MEMCPY4_SIZE, dt_cf_memcpy, correlationId);
SAME_PREFIX(CUpti_ActivityMemcpy5, DT_CF_MEMCPY5_SIZE, dt_cf_memcpy, graphId);
SAME_PREFIX(CUpti_ActivityMemcpy6, DT_CF_MEMCPY6_SIZE, dt_cf_memcpy, copyCount);
SAME_PREFIX(CUpti_ActivityMemset3, DT_CF_MEMSET3_SIZE, dt_cf_memset, memoryKind);
SAME_PREFIX(CUpti_ActivityMemset4, DT_CF_MEMSET4_SIZE, dt_cf_memset, isDeviceLaunched);
SAME_PREFIX(CUpti_ActivityMemcpyPtoP4, DT_CF_MEMCPY_PTOP4_SIZE, dt_cf_memcpy_peer, dstDeviceId);
SAME_PREFIX(CUpti_ActivityMemory4, DT_CF_MEMORY4_SIZE, dt_cf_memory, streamId);
SAME_PREFIX(CUpti_ActivityMemoryPool2, DT_CF_MEMORY_POOL2_SIZE, dt_cf_memory_pool, utilizedSize);
SAME_PREFIX(CUpti_ActivityMemoryPool3, DT_CF_MEMORY_POOL3_SIZE, dt_cf_memory_pool, isManagedPool);
SAME_FIELD(dt_cf_memory_pool, CUpti_ActivityMemoryPool3, memoryPoolOperationType);
SAME_FIELD(dt_cf_memory_pool, CUpti_ActivityMemoryPool3, correlationId);
SAME_FIELD(dt_cf_memory_pool, CUpti_ActivityMemoryPool3, deviceId);
SAME_FIELD(dt_cf_memory_pool, CUpti_ActivityMemoryPool3, size);
_Static_assert(DT_CF_KIND_MEMORY_POOL == (int)CUPTI_ACTIVITY_KIND_MEMORY_POOL &&
                   DT_CF_POOL_CREATED == (int)CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED &&
                   DT_CF_POOL_DESTROYED == (int)CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED &&
                   DT_CF_POOL_TRIMMED == (int)CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED,
               "CUPTI's memory pool numbers");
#if CUPTI_API_VERSION >= DT_CF_API_KERNEL11
/* CUDA 13.1's Kernel11 (API version inferred, see cupti_family_abi.h):
   Kernel10's fields where devtrace reads them */
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, start);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, registersPerThread);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, gridX);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, dynamicSharedMemory);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, correlationId);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, name);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, queued);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel11, submitted);
_Static_assert(sizeof(CUpti_ActivityKernel11) >= DT_CF_KERNEL10_SIZE, "Kernel11 shorter than Kernel10");
#endif
_Static_assert(sizeof(dt_cf_device) == sizeof(CUpti_ActivityDevice5), "Device5 size");
_Static_assert((int)DT_CF_KIND_EXTERNAL_CORRELATION == (int)CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
                   (int)DT_CF_EXTERNAL_CUSTOM2 == (int)CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2,
               "CUPTI's numbers");
_Static_assert(DT_CF_ATTR_DEVICE_BUFFER_SIZE == (int)CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE &&
                   DT_CF_ATTR_DEVICE_BUFFER_POOL_LIMIT == (int)CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT &&
                   DT_CF_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE == (int)CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
               "CUPTI's device-buffer attributes");
/* Every result code devtrace names is CUPTI's (cupti_result.h). */
#define SAME_RESULT(name) _Static_assert((int)DT_CF_##name == (int)CUPTI_##name, "CUPTI_" #name " is another number")
SAME_RESULT(SUCCESS);
SAME_RESULT(ERROR_INVALID_PARAMETER);
SAME_RESULT(ERROR_INVALID_OPERATION);
SAME_RESULT(ERROR_MAX_LIMIT_REACHED);
SAME_RESULT(ERROR_NOT_COMPATIBLE);
SAME_RESULT(ERROR_NOT_INITIALIZED);
SAME_RESULT(ERROR_QUEUE_EMPTY);
SAME_RESULT(ERROR_INVALID_KIND);
SAME_RESULT(ERROR_NOT_SUPPORTED);
SAME_RESULT(ERROR_CUDA_COMPILER_NOT_COMPATIBLE);
SAME_RESULT(ERROR_INSUFFICIENT_PRIVILEGES);
SAME_RESULT(ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME_RESULT(ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES);
SAME_RESULT(ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
SAME_RESULT(ERROR_UNKNOWN);
_Static_assert(DT_CF_RT_PUSH_CALL_CONFIGURATION == (int)CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000 &&
                   DT_CF_RT_POP_CALL_CONFIGURATION == (int)CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000 &&
                   DT_CF_RT_LAUNCH_KERNEL_CUDA13 == (int)CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 &&
                   DT_CF_RT_LAUNCH_KERNEL_CUDA13_PTSZ == (int)CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
               "CUDA 13's launch callback ids");

static int driver_version(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return 0;
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    int v = 0;
    if (!get || get(&v) != 0) v = 0;
    dlclose(h);
    return v;
}

static int explain_failure(const char *call, int r, const char *result_text, const char *library,
                           const char *version, int emulated, dt_failure *out)
{
    (void)emulated;
    if (r == DT_CF_ERROR_INSUFFICIENT_PRIVILEGES || r == DT_CF_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
        out->status = DT_ERR_BACKEND_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "%s: %s (%d): this user may not profile the GPU; see NVreg_RestrictProfilingToAdminUsers", call,
                 result_text, r);
        return 1;
    }
    if (r != DT_CF_ERROR_NOT_COMPATIBLE && r != DT_CF_ERROR_NOT_INITIALIZED &&
        r != DT_CF_ERROR_CUDA_COMPILER_NOT_COMPATIBLE)
        return 0;
    int dv = driver_version();
    char driver[48];
    if (dv > 0) snprintf(driver, sizeof driver, "the NVIDIA driver (CUDA %d.%d)", dv / 1000, (dv % 1000) / 10);
    else snprintf(driver, sizeof driver, "the NVIDIA driver");
    out->status = DT_ERR_BACKEND_UNAVAILABLE;
    snprintf(out->message, sizeof out->message,
             "%s: %s (%d): insufficient driver: %s is older than %s (CUPTI API %s) needs; update the driver or "
             "point DEVTRACE_CUPTI_LIBRARY at the CUPTI of an older toolkit",
             call, result_text, r, driver, library, version);
    return 1;
}

/* The devices as the driver describes them, where CUDA is initialised in
   the process already (libcuda.so.1 loaded: it is never loaded for this).
   DEVICE records lack the opt-in shared memory per block, and a driver
   initialised before CUPTI was armed describes its devices to nobody.
   Ordinals are CUDA's, after CUDA_VISIBLE_DEVICES: the numbering CUPTI's
   records use for deviceId. */
static uint32_t query_devices(dt_device_props *out, uint32_t max)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return 0;
    CUresult (*count)(int *) = (CUresult (*)(int *))dlsym(h, "cuDeviceGetCount");
    CUresult (*get)(CUdevice *, int) = (CUresult (*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*attribute)(int *, CUdevice_attribute, CUdevice) =
        (CUresult (*)(int *, CUdevice_attribute, CUdevice))dlsym(h, "cuDeviceGetAttribute");
    CUresult (*name)(char *, int, CUdevice) = (CUresult (*)(char *, int, CUdevice))dlsym(h, "cuDeviceGetName");
    CUresult (*memory)(size_t *, CUdevice) = (CUresult (*)(size_t *, CUdevice))dlsym(h, "cuDeviceTotalMem_v2");
    int n = 0;
    uint32_t filled = 0;
    if (count && get && attribute && count(&n) == CUDA_SUCCESS) {
        for (int i = 0; i < n && filled < max && i < DT_MAX_DEVICES; i++) {
            CUdevice dev;
            if (get(&dev, i) != CUDA_SUCCESS) continue;
            dt_device_props *p = &out[filled];
            memset(p, 0, sizeof *p);
#define ATTR(field, which) do { int v_ = 0; if (attribute(&v_, which, dev) == CUDA_SUCCESS) p->field = v_; } while (0)
            ATTR(compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
            ATTR(compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
            ATTR(max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
            ATTR(max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
            ATTR(max_blocks_per_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
            ATTR(regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
            ATTR(regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
            ATTR(warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
            ATTR(num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
            ATTR(shared_mem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
            ATTR(shared_mem_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
            ATTR(shared_mem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
#undef ATTR
            size_t bytes = 0;
            if (memory && memory(&bytes, dev) == CUDA_SUCCESS) p->total_global_mem = bytes;
            if (!name || name(p->name, (int)sizeof p->name, dev) != CUDA_SUCCESS) p->name[0] = '\0';
            p->name[sizeof p->name - 1] = '\0';
            p->id = (uint32_t)i;
            p->valid = p->num_sms > 0 && p->warp_size > 0;
            filled += p->valid ? 1u : 0u;
        }
    }
    dlclose(h);
    return filled;
}

/* cuCtxSynchronize of the calling thread's context, where CUDA is loaded:
   its exit callback is where CUPTI may be finalized. A thread without a
   context gets an error, and the callback all the same. */
static void synchronize(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return;
    CUresult (*sync)(void) = (CUresult (*)(void))dlsym(h, "cuCtxSynchronize");
    if (sync) sync();
    dlclose(h);
}

static const dt_kind_spec kinds[] = {
    {DT_CF_KIND_CONCURRENT_KERNEL, 0, DT_CAPTURE_KERNEL, 1, 1, "kernels"},
    {DT_CF_KIND_MEMCPY, 0, DT_CAPTURE_MEMCPY, 1, 1, "memory copies"},
    {DT_CF_KIND_MEMCPY2, 0, DT_CAPTURE_MEMCPY, 0, 1, "peer-to-peer copies"},
    {DT_CF_KIND_MEMSET, 0, DT_CAPTURE_MEMSET, 1, 1, "memsets"},
    {DT_CF_KIND_DEVICE, 0, 0, 0, 1, "device properties"},
    {DT_CF_KIND_RUNTIME, 0, DT_CAPTURE_RUNTIME, 1, 0, "runtime API"},
    {DT_CF_KIND_DRIVER, 0, DT_CAPTURE_DRIVER, 1, 0, "driver API"},
    {DT_CF_KIND_EXTERNAL_CORRELATION, 0, 0, 0, 0, "External ids"},
    {DT_CF_KIND_SYNCHRONIZATION, 0, DT_CAPTURE_SYNC, 0, 0, "synchronization"},
    {DT_CF_KIND_OVERHEAD, 0, DT_CAPTURE_OVERHEAD, 0, 0, "CUPTI overhead"},
    {DT_CF_KIND_MEMORY2, 0, DT_CAPTURE_MEMORY, 0, 0, "memory allocations and frees"},
    {DT_CF_KIND_MEMORY_POOL, 0, DT_CAPTURE_MEMORY, 0, 0, "memory pool operations"},
};

/* Kernel10/Memcpy6/Memset4 sizes measured with CUDA 13.0 (API 130001).
   From CUDA 13.1 CUPTI writes Kernel11, which adds the launch priority
   (release notes); where it put it is not in the 13.0 headers devtrace is
   validated with, so its size is not known here (the iterator gives the
   stride) and the fields devtrace reads are taken to stay where Kernel10
   has them, as CUPTI appends fields and never moves them. The version that
   starts writing it is inferred (13.1 GA: API 130100). */
static const dt_layout_set layouts[] = {
    DT_LAYOUT_SET(DT_CF_API_KERNEL11, "CUDA 13.1 (Kernel11 read as Kernel10, inferred; Memcpy6, Memset4)", 0,
                  dt__cf_layouts_cuda13),
    DT_LAYOUT_SET(130000, "CUDA 13 (Kernel10, Memcpy6, Memset4)", 130001, dt__cf_layouts_cuda13),
    DT_LAYOUT_SET(19, "CUDA 12 (Kernel9, Memcpy5, Memset4)", 0, dt__cf_layouts_cuda12),
    DT_LAYOUT_SET(0, "CUDA 11 (Kernel8, Memcpy5, Memset4)", 0, dt__cf_layouts_cuda11),
};

/* Launches whatever the call is named: CUDA 13's <<<>>> is __cudaLaunchKernel
   (its own callback id), not cudaLaunchKernel. */
static const uint32_t launch_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};
static const uint32_t launch_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};
/* The call-configuration pair around every CUDA 13 launch: two records per
   launch that launch nothing, not recorded (the library filters them before
   they reach a buffer; a CUPTI older than 12.5 has no such filter, and no
   such calls either). */
static const uint32_t quiet_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000,
    /* and what Kineto leaves out (CuptiActivityApi.cpp, enableCuptiActivities,
       CUDA 12.5 and later): the device query every torch op makes */
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
};
/* The driver calls Kineto leaves out (the same place): queries the runtime
   makes around launches, which launch nothing. Filtered once the driver
   kind is enabled (cupti_activity.h: enabling the kind overrides the
   filter made before it). */
static const uint32_t quiet_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
};

/* CUPTI's device buffers, where the device writes the timestamps of
   kernels, copies and memsets until CUPTI turns them into records, set
   deliberately rather than left to defaults a release may change. What the
   CUDA 13.0 header (cupti_activity.h, CUpti_ActivityAttribute) says: a
   buffer of the default 3,200,000 bytes holds 100,000 records; up to
   DEVICE_BUFFER_POOL_LIMIT (default 250) are allocated per context, 3
   ahead (PRE_ALLOCATE_VALUE), each further one on the launching thread
   ("stalls in the critical path"); a buffer is reused once CUPTI consumed
   it, and too small a pool risks dropping timestamps. Kineto meant to
   lower the default's worst case (about 750 MiB a context made its users
   run out of memory, kineto#606) to 20 buffers of 3,200,000 bytes, but
   never applies it. A user's report (parca-dev/parcagpu#23, CUPTI 13.0.85,
   driver 580) has CUDA graphs running out of the pool after the pool
   limit times 100,000 kernels (25 M with the default, 0.9 M with 8),
   device memory up about 1 GiB, and every timestamp after invalid.
   devtrace keeps the default's bound on device memory, 800 MB a context
   (100 buffers of 8 MiB), in fewer and larger buffers: at H200 graph rates
   (1 to 2 M kernels a second, the flight recorder's case) a default
   buffer fills every 50 to 100 ms, one of 8 MiB (262,144 records) every
   130 to 260 ms, so a fifth as many allocations land on the launching
   thread. The count of records before a pool that is never reused runs
   out is the same (memory divided by 32 bytes a record); such timestamps
   are counted as lost (timestamp_zero, timestamp_reversed), never kept.
   tests/gpu/cuda_validate.sh measures it on the GPU. */
static const dt_vendor_attribute attributes[] = {
    {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, sizeof(size_t), 8u << 20, "device buffer size (bytes)"},
    {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, sizeof(size_t), 100, "device buffers per context at most"},
    {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, sizeof(size_t), 3, "device buffers allocated ahead"},
};

/* Graph launches, whose correlation ids CUPTI before 13.1 Update 1 gets
   wrong in sessions after the first. */
static const uint32_t graph_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
static const uint32_t graph_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* Where CUPTI may be finalized after a session (dt_vendor_api_ids.sync_*):
   the exit of a device, context or stream synchronisation that succeeded.
   CUDA refuses to synchronise a stream being captured into a graph, and in
   the global and thread-local capture modes the device too (the CUDA
   programming guide's rules for stream capture, inferred, not in the
   headers), so such an exit is never inside a capture. */
static const uint32_t sync_runtime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
};
static const uint32_t sync_driver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
#if CUPTI_API_VERSION >= 130000
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, /* CUDA 13 */
#endif
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
};

static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so", NULL};
static const char *const roots[] = {"CUDA_HOME", NULL};
static const char *const subdirs[] = {"lib64", "lib", "extras/CUPTI/lib64", NULL};
/* CUDA 13's wheels (nvidia-cuda-cupti) put it in nvidia/cu13/lib, CUDA 12's
   in nvidia/cuda_cupti/lib */
static const char *const wheel_dirs[] = {"nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/*/lib", NULL};

DT_ENGINE_DEFINE(cupti, cupti_vendor);

const dt_backend dt__backend_cupti = {
    .name = "cupti",
    .vendor = "NVIDIA CUDA (CUPTI)",
    .api_category = "cuda",
    .library_env = "DEVTRACE_CUPTI_LIBRARY",
    .caps = CUPTI_CAPS,
    .impl = &dt__engine_cupti,
    DT_ENGINE_METHODS,
    .inject_env = CUPTI_INJECT_ENV,
    .inject_arm = inject_arm,
};

static const dt_vendor cupti_vendor = {
    .backend = &dt__backend_cupti,
    .library = {.spec = {.what = "libcupti", .sonames = sonames, .loaded_symbol = "cuptiActivityGetNextRecord", /* one the injection library does not stand in for */
                         .root_envs = roots, .default_root = "/usr/local/cuda", .subdirs = subdirs,
                         .python_dirs = wheel_dirs,
                         .hint = "set CUDA_HOME to the CUDA toolkit"},
                .symbol_prefix = "cupti",
                .symbols = {[DT_SYM_CALLBACK_NAME] = DT_SYM_NONE}, /* the generated tables are complete */
                .driver_library = "libcuda.so.1", .driver_name = "NVIDIA",
                .emulator_marker = "devtrace_emulator_cupti"},
    .caps = DT_VCAP_COMPLETE_WITH_CONTEXT | DT_VCAP_DROPPED_WITH_CONTEXT | DT_VCAP_DEVICE_RECORDS |
            DT_VCAP_EARLY_ARMING,
    .results = DT_CF_RESULTS,
    /* CUSTOM2: Kineto pushes CUSTOM0 for ops and CUSTOM1 for user scopes on
       the same per-thread stacks, so torch.profiler and devtrace can share
       a process. Finalize after a session from CUPTI API 24 (CUDA 12.6),
       which fixed the crashes with CUDA graphs that made torch stop
       finalizing (pytorch#146604). */
    .activity = DT_CF_ACTIVITY_FINALIZING(DT_CF_EXTERNAL_CUSTOM2, 24),
    /* EnableAndDump(DEVICE) and the runtime filter are first called from
       InitializeInjection under devtrace record, while the driver
       initialises and before any context exists: made again at the first
       context's creation where CUPTI refuses them there */
    .callbacks = {DT_CF_CALLBACK_FIELDS(dt__cf_subscribe_named), .domain_resource = DT_CF_DOMAIN_RESOURCE,
                  .context_created = DT_CF_CBID_RESOURCE_CONTEXT_CREATED},
    .api_ids = {DT_COUNTED(launch_runtime), DT_COUNTED(launch_driver), DT_COUNTED(quiet_runtime), DT_COUNTED(quiet_driver),
                DT_COUNTED(graph_runtime), DT_COUNTED(graph_driver), DT_CF_API_GRAPH_IDS_FIXED,
                DT_COUNTED(sync_runtime), DT_COUNTED(sync_driver)},
    .query_devices = query_devices,
    .synchronize = synchronize,
    /* a driver initialised before devtrace armed described its devices to
       nobody: they are described again */
    .dump_kind = DT_CF_KIND_DEVICE,
    .names = {.runtime = dt__cupti_runtime_names, .runtime_count = DT_CUPTI_RUNTIME_NAMES_COUNT,
              .driver = dt__cupti_driver_names, .driver_count = DT_CUPTI_DRIVER_NAMES_COUNT,
              .runtime_fallback = "cudaRuntime", .driver_fallback = "cudaDriver"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts), DT_COUNTED(dt__cf_pool_operations), DT_CF_POOL_NOTE},
    .enums = DT_CF_ENUMS,
    .clock_domain = "CLOCK_REALTIME ns (cuptiGetTimestamp, measured with CUDA 13.0)",
    .attributes = attributes, .attribute_count = sizeof attributes / sizeof *attributes,
    .attributes_key = "device_buffers",
    .explain_failure = explain_failure,
};

#else /* !DT_HAVE_CUPTI */

#ifndef DT_CUPTI_ABSENT_REASON
#define DT_CUPTI_ABSENT_REASON "built without CUPTI headers: set CUDA_HOME and rebuild"
#endif

static dt_status absent_probe(const dt_backend *self, dt_backend_status *st)
{
    st->available = 0;
    snprintf(st->reason, sizeof st->reason, "%s", DT_CUPTI_ABSENT_REASON);
    return DT_OK;
}

static dt_status absent(const dt_backend *self)
{
    return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s: %s", self->name, DT_CUPTI_ABSENT_REASON);
}
static dt_status absent_start(const dt_backend *self, dt_session *s)
{
    (void)s;
    return absent(self);
}

const dt_backend dt__backend_cupti = {
    .name = "cupti",
    .vendor = "NVIDIA CUDA (CUPTI)",
    .api_category = "cuda",
    .library_env = "DEVTRACE_CUPTI_LIBRARY",
    .caps = CUPTI_CAPS,
    .probe = absent_probe,
    .prepare = absent,
    .start = absent_start,
    .inject_env = CUPTI_INJECT_ENV,
    .inject_arm = inject_arm,
};

#endif /* DT_HAVE_CUPTI */
