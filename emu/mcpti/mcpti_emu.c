/*
 * MCPTI personality of the emulator: libmcpti.so with the CUPTI family's
 * entry points under `mcpti`, MetaX's runtime callback numbering and name
 * function (mcptiActivityGetApiName, which aborts when called from inside
 * the buffer-completion callback, where the real one deadlocks), the record
 * versions of the CUDA 11.8 generation, version 18, a stale iterator after
 * external-correlation records, and a hardware clock that starts near 350 s.
 * No runtime call makes a driver call. All of it as inferred in
 * src/backends/mcpti_abi.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backends/mcpti_abi.h"
#include "cf_personality.h"

static const emu_cf_personality mcpti = {
    .result_prefix = "MCPTI",
    .version = MCPTI_API_VERSION_MACA_3_5,
    .kernel_size = DT_CF_KERNEL8_SIZE, .memcpy_size = DT_CF_MEMCPY5_SIZE, .memset_size = DT_CF_MEMSET4_SIZE,
    .quirks = EMU_CF_STALE_AFTER_EXTERNAL,
    .runtime_cbid = EMU_CF_OPS(MCPTI_RUNTIME_CBID_mcLaunchKernel, MCPTI_RUNTIME_CBID_mcMemcpy,
                               MCPTI_RUNTIME_CBID_mcMemcpyAsync, MCPTI_RUNTIME_CBID_mcMemset,
                               MCPTI_RUNTIME_CBID_mcMemsetAsync, MCPTI_RUNTIME_CBID_mcStreamSynchronize,
                               MCPTI_RUNTIME_CBID_mcDeviceSynchronize),
    .runtime_names = dt__mcpti_runtime_names, .runtime_name_count = MCPTI_RUNTIME_CBID_NAMED,
};

EMU_CF_PERSONALITY(mcpti, mcpti, mcpti, .clock_counter = 1, .clock_offset_ns = 350743133379, .clock_drift_ppm = 25.0)

/* MetaX's name function: by the record's activity kind. */
EMU_CF_EXPORT int mcptiActivityGetApiName(uint32_t kind, uint32_t cbid, const char **name);
int mcptiActivityGetApiName(uint32_t kind, uint32_t cbid, const char **name)
{
    if (emu_cf_in_completion()) {
        fprintf(stderr, "mcpti emulator: mcptiActivityGetApiName called from inside the buffer-completion "
                        "callback, where MCPTI deadlocks\n");
        abort();
    }
    uint32_t domain = kind == DT_CF_KIND_DRIVER ? DT_CF_DOMAIN_DRIVER_API : DT_CF_DOMAIN_RUNTIME_API;
    if (kind != DT_CF_KIND_DRIVER && kind != DT_CF_KIND_RUNTIME) return DT_CF_ERROR_INVALID_KIND;
    return emu_cf_callback_name(domain, cbid, name);
}
