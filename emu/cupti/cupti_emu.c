/*
 * CUPTI personality of the emulator: a libcupti.so.13 stand-in with CUPTI's
 * entry points (the CUPTI family's, emu/cupti_family), CUDA 13's record
 * versions, CUPTI's callback ids and names (generated from the toolkit's
 * headers), its realtime clock, device descriptions and peer-copy records.
 */
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cf_personality.h"
#include "cupti_cbid_names.h"

/* The family's numbering is the toolkit's. */
_Static_assert(DT_CF_RT_LAUNCH_KERNEL == (int)CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 &&
                   DT_CF_RT_MEMSET == (int)CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020 &&
                   DT_CF_RT_DEVICE_SYNCHRONIZE == (int)CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 &&
                   DT_CF_DRV_LAUNCH_KERNEL == (int)CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel &&
                   DT_CF_DRV_MEMCPY_PEER_ASYNC == (int)CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync &&
                   DT_CF_DRV_MEMSET_ASYNC == (int)CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async &&
                   DT_CF_DRV_CTX_SYNCHRONIZE == (int)CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize &&
                   DT_CF_RT_MALLOC == (int)CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020 &&
                   DT_CF_RT_FREE == (int)CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020 &&
                   DT_CF_RT_GRAPH_LAUNCH == (int)CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 &&
                   DT_CF_RT_MEM_POOL_CREATE == (int)CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020 &&
                   DT_CF_RT_MEM_POOL_DESTROY == (int)CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020 &&
                   DT_CF_RT_MEM_POOL_TRIM_TO == (int)CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020,
               "CUPTI's callback ids");

_Static_assert(DT_CF_RT_PUSH_CALL_CONFIGURATION == (int)CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000 &&
                   DT_CF_RT_POP_CALL_CONFIGURATION == (int)CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000 &&
                   DT_CF_RT_LAUNCH_KERNEL_CUDA13 == (int)CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
               "CUDA 13's launch callback ids");

/* A launch as nvcc 13 lowers <<<>>>: __cudaPushCallConfiguration,
   __cudaPopCallConfiguration, __cudaLaunchKernel in the runtime domain, and
   (inferred) cuLaunchKernel in the driver domain. */
static const emu_cf_personality cupti = {
    .result_prefix = "CUPTI",
    .version = 130001, /* CUPTI_API_VERSION of CUDA 13.0 update 1 */
    .kernel_size = DT_CF_KERNEL10_SIZE, .memcpy_size = DT_CF_MEMCPY6_SIZE, .memset_size = DT_CF_MEMSET4_SIZE,
    .quirks = EMU_CF_DEVICE_RECORDS | EMU_CF_PEER_RECORDS,
    EMU_CF_CUDA13_NUMBERING,
    .runtime_names = dt__cupti_runtime_names, .runtime_name_count = DT_CUPTI_RUNTIME_NAMES_COUNT,
    .driver_names = dt__cupti_driver_names, .driver_name_count = DT_CUPTI_DRIVER_NAMES_COUNT,
};

/* CUDA 13: per-thread activity buffers by default, still-running work
   handed back without an end, CUDA_INJECTION64_PATH, no CUDA in a child
   forked without exec once CUDA has initialised (NVIDIA's documented
   initialization error), and a runtime that registers its teardown at exit
   as it initialises the driver, before the injection library is called (a
   statically linked cudart). */
EMU_CF_PERSONALITY(cupti, cupti, cupti, .clock_offset_ns = 0, .per_thread_buffers = 1,
                   .unfinished_without_end = 1, .injection_env = "CUDA_INJECTION64_PATH",
                   .fork_child_unusable = 1, .runtime_teardown = 1,
                   .capture_error = 900 /* cudaErrorStreamCaptureUnsupported (driver_types.h) */)
EMU_CF_CUDA13_ENTRY_POINTS(cupti)
