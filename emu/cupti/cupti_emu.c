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

static uint32_t cupti_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    if (domain == EMU_DOMAIN_RUNTIME) {
        switch (op) {
        case EMU_OP_LAUNCH_KERNEL: return CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
        case EMU_OP_MEMCPY: return CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020;
        case EMU_OP_MEMCPY_ASYNC: return CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
        case EMU_OP_MEMSET: return CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020;
        case EMU_OP_MEMSET_ASYNC: return CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
        case EMU_OP_STREAM_SYNCHRONIZE: return CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
        case EMU_OP_DEVICE_SYNCHRONIZE: return CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
        default: return 0;
        }
    }
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    case EMU_OP_MEMCPY:
        switch (ck) {
        case EMU_COPY_HTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2;
        case EMU_COPY_DTOH: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
        case EMU_COPY_DTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2;
        case EMU_COPY_PTOP: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer;
        default: return CUPTI_DRIVER_TRACE_CBID_cuMemcpy;
        }
    case EMU_OP_MEMCPY_ASYNC:
        switch (ck) {
        case EMU_COPY_HTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2;
        case EMU_COPY_DTOH: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2;
        case EMU_COPY_DTOD: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2;
        case EMU_COPY_PTOP: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync;
        default: return CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
        }
    case EMU_OP_MEMSET: return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2;
    case EMU_OP_MEMSET_ASYNC: return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async;
    case EMU_OP_STREAM_SYNCHRONIZE: return CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
    case EMU_OP_DEVICE_SYNCHRONIZE: return CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;
    default: return 0;
    }
}

static const char *cupti_callback_name(emu_domain domain, uint32_t cbid)
{
    if (domain == EMU_DOMAIN_DRIVER)
        return cbid < DT_CUPTI_DRIVER_NAMES_COUNT ? dt_cupti_driver_names[cbid] : NULL;
    return cbid < DT_CUPTI_RUNTIME_NAMES_COUNT ? dt_cupti_runtime_names[cbid] : NULL;
}

static const emu_cf_personality cupti = {
    .result_prefix = "CUPTI",
    .version = 130001, /* CUPTI_API_VERSION of CUDA 13.0 update 1 */
    .kernel_size = DT_CF_KERNEL10_SIZE,
    .memcpy_size = DT_CF_MEMCPY6_SIZE,
    .memset_size = DT_CF_MEMSET4_SIZE,
    .quirks = EMU_CF_DEVICE_RECORDS | EMU_CF_PEER_RECORDS,
};

EMU_CF_PERSONALITY(cupti, cupti, cupti, .cbid = cupti_cbid, .callback_name = cupti_callback_name)
