/*
 * rocprofiler-sdk personality: ${build}/emu/librocprofiler_sdk.so, with the
 * ABI of src/backends/rocprofiler_sdk_abi.h (devtrace's declaration of
 * AMD's rocprofiler-sdk), over the vendor-neutral core.
 *
 * What it reproduces of rocprofiler-sdk:
 *  - registration: tools are found when the emulated runtime initializes
 *    (its first API call: emu_* or roctx*) or when a tool forces it, from
 *    the forced configure function, a visible `rocprofiler_configure`, every
 *    loaded library that exports one and ROCP_TOOL_LIBRARIES (dlopened);
 *    each tool's configure, then each initialize, is called; contexts,
 *    buffers and services can be made only then. A runtime that initialized
 *    while no tool was present is not seen by the SDK: before 1.3.0 a later
 *    forced configure records nothing of it (as real ones did), from 1.3.0 it
 *    does (late start); from 1.3.2 a tool may force its configure after the
 *    SDK initialized ("anytime initialization").
 *  - contexts started and stopped, buffer and callback tracing services,
 *    external-correlation stacks per context and thread, copied into every
 *    record, the operation-name queries and the argument iterator.
 *  - buffers: records are self-sizing structs; a buffer callback gets an
 *    array of headers and the buffer's total drop count so far. One staging
 *    stream of the core feeds every buffer: each delivery is split by the
 *    buffers whose services want its kinds. Under the lossless policy the
 *    SDK makes the producing thread wait for the tool; this emulator lends
 *    another buffer instead, so the tool still sees every record, in
 *    buffers of the size it asked for.
 *  - kernel dispatches carry a kernel id; names come from kernel-symbol
 *    registrations (code-object callbacks, replayed when such a sdk_context
 *    starts). Memsets are the HIP runtime's fill kernel (a dispatch of
 *    "__amd_rocclr_fillBufferAligned"), as on ROCm; the hipMemset* call's
 *    arguments come through the argument iterator.
 *  - timestamps: CLOCK_BOOTTIME ns.
 *  - faults: a malformed record is a dispatch whose size field says 16
 *    bytes; an unknown kind is a page-migration record.
 * The sdk_version (default 1.3.0, ROCm 7.x) is DEVTRACE_EMU_ROCPROFILER_SDK_VERSION
 * ("major.minor.patch"): from RSDK_ANCESTOR_VERSION on, correlation ids
 * carry `ancestor` in API and callback records; before 0.6.0 memory-copy
 * records end before the addresses; before 1.3.0 a late start records
 * nothing.
 *
 * This file holds the personality (emu_vendor_impl), the version and the
 * status strings; sdk.h lists the other files.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sdk.h"

/* The emulator marker devtrace looks for. */
RSDK_API const int devtrace_emulator_rocprofiler_sdk = 1;

struct sdk_state sdk_state = {
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
};

pthread_once_t sdk_version_once = PTHREAD_ONCE_INIT;

void sdk_read_version(void)
{
    unsigned major = 1, minor = 3, patch = 0;
    const char *v = getenv("DEVTRACE_EMU_ROCPROFILER_SDK_VERSION");
    if (v && *v) {
        unsigned a = 0, b = 0, c = 0;
        if (sscanf(v, "%u.%u.%u", &a, &b, &c) >= 2) {
            major = a;
            minor = b;
            patch = c;
        }
    }
    sdk_state.version = RSDK_VERSION(major, minor, patch);
    snprintf(sdk_state.version_text, sizeof sdk_state.version_text, "%u.%u.%u", major, minor, patch);
}

RSDK_API int rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
    uint32_t v = sdk_version();
    if (major) *major = v / 10000;
    if (minor) *minor = v / 100 % 100;
    if (patch) *patch = v % 100;
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_get_timestamp(uint64_t *ns)
{
    if (!ns) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    *ns = emu_core_timestamp();
    return RSDK_STATUS_SUCCESS;
}

RSDK_API const char *rocprofiler_get_status_string(int status)
{
    switch (status) {
    case RSDK_STATUS_SUCCESS: return "ROCPROFILER_STATUS_SUCCESS";
    case RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND";
    case RSDK_STATUS_ERROR_BUFFER_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND";
    case RSDK_STATUS_ERROR_KIND_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND";
    case RSDK_STATUS_ERROR_OPERATION_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND";
    case RSDK_STATUS_ERROR_THREAD_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_THREAD_NOT_FOUND";
    case RSDK_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED: return "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED";
    case RSDK_STATUS_ERROR_CONFIGURATION_LOCKED: return "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED";
    case RSDK_STATUS_ERROR_NOT_IMPLEMENTED: return "ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED";
    case RSDK_STATUS_ERROR_INCOMPATIBLE_ABI: return "ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI";
    case RSDK_STATUS_ERROR_INVALID_ARGUMENT: return "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT";
    case RSDK_STATUS_ERROR_FINALIZED: return "ROCPROFILER_STATUS_ERROR_FINALIZED";
    default: return "ROCPROFILER_STATUS_ERROR";
    }
}

static uint64_t boot_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct emu_vendor emu_vendor_impl = {
    .name = "rocprofiler_sdk",
    .record_size = sdk_record_size,
    .write_record = sdk_write_record,
    .record_kind = sdk_record_kind,
    .complete_buffer = sdk_complete_buffer,
    .null_client_buffer = sdk_null_client_buffer,
    .invoke_callback = sdk_invoke_callback,
    .cbid = sdk_cbid,
    .callback_name = sdk_callback_name,
    .default_thread_id_type = EMU_TID_SYSTEM,
    .clock_counter = 1,
    .record_external = sdk_record_external,
    .clock_origin_ns = boot_clock_ns,
    .runtime_call = sdk_runtime_call,
    /* buffer-tracing records of device work are written as it completes
       (inferred) */
    .records_at_completion = 1,
};
