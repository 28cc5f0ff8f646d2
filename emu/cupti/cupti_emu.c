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

static const emu_cf_personality cupti = {
    .result_prefix = "CUPTI",
    .version = 130001, /* CUPTI_API_VERSION of CUDA 13.0 update 1 */
    .kernel_size = DT_CF_KERNEL10_SIZE,
    .memcpy_size = DT_CF_MEMCPY6_SIZE,
    .memset_size = DT_CF_MEMSET4_SIZE,
    .quirks = EMU_CF_DEVICE_RECORDS | EMU_CF_PEER_RECORDS,
    .runtime_cbid = {
        [EMU_OP_LAUNCH_KERNEL] = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        [EMU_OP_MEMCPY] = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
        [EMU_OP_MEMCPY_ASYNC] = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
        [EMU_OP_MEMSET] = CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
        [EMU_OP_MEMSET_ASYNC] = CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
        [EMU_OP_STREAM_SYNCHRONIZE] = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
        [EMU_OP_DEVICE_SYNCHRONIZE] = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    },
    .driver_cbid = {
        [EMU_OP_LAUNCH_KERNEL] = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
        [EMU_OP_MEMCPY] = CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
        [EMU_OP_MEMCPY_ASYNC] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
        [EMU_OP_MEMSET] = CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
        [EMU_OP_MEMSET_ASYNC] = CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
        [EMU_OP_STREAM_SYNCHRONIZE] = CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        [EMU_OP_DEVICE_SYNCHRONIZE] = CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    },
    .driver_copy_cbid = {
        {[EMU_COPY_HTOD] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
         [EMU_COPY_DTOH] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
         [EMU_COPY_DTOD] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
         [EMU_COPY_PTOP] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer},
        {[EMU_COPY_HTOD] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
         [EMU_COPY_DTOH] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
         [EMU_COPY_DTOD] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
         [EMU_COPY_PTOP] = CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync},
    },
    .runtime_names = dt_cupti_runtime_names,
    .runtime_name_count = DT_CUPTI_RUNTIME_NAMES_COUNT,
    .driver_names = dt_cupti_driver_names,
    .driver_name_count = DT_CUPTI_DRIVER_NAMES_COUNT,
};

EMU_CF_PERSONALITY(cupti, cupti, cupti, .clock_offset_ns = 0)
