/*
 * devtrace's declaration of MetaX MACA's MCPTI (libmcpti.so, `mcpti*`
 * symbols). No MCPTI header is public; everything here is INFERRED from
 * public users of it (research/vendor_abis.md section 5, Torch-FL's
 * cupti_device_tracer.cc on a C550 with MACA 3.8.0, a third-party decoder of
 * MACA 3.5.3 records):
 *
 * - records: the CUPTI family's (cupti_family_abi.h) at the versions of the
 *   CUDA 11.8 generation: Kernel8 (200 bytes), Memcpy5 and Memset4 (88
 *   each), API (40), ExternalCorrelation (24), the sizes Torch-FL's scanner
 *   walks on MACA 3.8.0; activity kinds, result codes and external kinds are
 *   CUPTI's values;
 * - mcptiGetVersion returns 18 on MACA 3.5.3 (CUPTI API v18);
 * - the iterator can return a stale record after an external-correlation
 *   record (MACA 3.8.0), so records are walked by these sizes;
 * - the runtime callback ids are MetaX's own, not CUPTI's: the ids and names
 *   below are those Torch-FL names (launch ids 56 and 60 observed); whether
 *   MCPTI has driver-API callbacks is not known;
 * - mcptiActivityGetApiName(kind, cbid, &name) names an API record by its
 *   activity kind; it cannot be called from inside the buffer-completion
 *   callback (observed to deadlock);
 * - timestamps count a hardware clock, not the epoch (e.g. 350743133379 ns).
 */
#ifndef DT_MCPTI_ABI_H
#define DT_MCPTI_ABI_H

#include "backends/cupti_family_abi.h"

#define MCPTI_API_VERSION_MACA_3_5 18u

/* MetaX runtime callback ids (inferred). */
enum {
    MCPTI_RUNTIME_CBID_mcDeviceSynchronize = 18,
    MCPTI_RUNTIME_CBID_mcGetDevice = 19,
    MCPTI_RUNTIME_CBID_mcGetDeviceCount = 20,
    MCPTI_RUNTIME_CBID_mcGetDeviceProperties = 22,
    MCPTI_RUNTIME_CBID_mcSetDevice = 23,
    MCPTI_RUNTIME_CBID_mcStreamSynchronize = 46,
    MCPTI_RUNTIME_CBID_mcStreamWaitEvent = 47,
    MCPTI_RUNTIME_CBID_mcLaunchKernel = 56,
    MCPTI_RUNTIME_CBID_mcModuleLaunchKernel = 60,
    MCPTI_RUNTIME_CBID_mcLaunchKernelExC = 62,
    MCPTI_RUNTIME_CBID_mcEventRecord = 74,
    MCPTI_RUNTIME_CBID_mcEventSynchronize = 76,
    MCPTI_RUNTIME_CBID_mcMalloc = 107,
    MCPTI_RUNTIME_CBID_mcFree = 108,
    MCPTI_RUNTIME_CBID_mcMemcpy = 118,
    MCPTI_RUNTIME_CBID_mcMemcpyAsync = 119,
    MCPTI_RUNTIME_CBID_mcMemset = 146,
    MCPTI_RUNTIME_CBID_mcMemsetAsync = 147,
    MCPTI_RUNTIME_CBID_NAMED = 148 /* names below cover ids below this */
};

#define DT_MCPTI_NAME(n) [MCPTI_RUNTIME_CBID_##n] = #n
__attribute__((unused)) static const char *const dt__mcpti_runtime_names[MCPTI_RUNTIME_CBID_NAMED] = {
    DT_MCPTI_NAME(mcDeviceSynchronize), DT_MCPTI_NAME(mcGetDevice), DT_MCPTI_NAME(mcGetDeviceCount),
    DT_MCPTI_NAME(mcGetDeviceProperties), DT_MCPTI_NAME(mcSetDevice), DT_MCPTI_NAME(mcStreamSynchronize),
    DT_MCPTI_NAME(mcStreamWaitEvent), DT_MCPTI_NAME(mcLaunchKernel), DT_MCPTI_NAME(mcModuleLaunchKernel),
    DT_MCPTI_NAME(mcLaunchKernelExC), DT_MCPTI_NAME(mcEventRecord), DT_MCPTI_NAME(mcEventSynchronize),
    DT_MCPTI_NAME(mcMalloc), DT_MCPTI_NAME(mcFree), DT_MCPTI_NAME(mcMemcpy), DT_MCPTI_NAME(mcMemcpyAsync),
    DT_MCPTI_NAME(mcMemset), DT_MCPTI_NAME(mcMemsetAsync),
};
#undef DT_MCPTI_NAME

#endif /* DT_MCPTI_ABI_H */
