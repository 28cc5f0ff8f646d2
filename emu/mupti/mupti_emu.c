/*
 * MUPTI personality of the emulator: libmupti.so with the CUPTI family's
 * entry points under `mupti`, CUPTI's numbering with MUSA's names, the
 * record versions public code reads (Kernel6, Memcpy4, Memset3), and a
 * clock of its own (a counter near 26 hours, +17 ppm). All of it as
 * inferred in src/backends/mupti_abi.h.
 */
#include "backends/mupti_abi.h"
#include "cf_personality.h"

static const emu_cf_personality mupti = {
    .result_prefix = "MUPTI",
    .version = 12,
    .kernel_size = DT_CF_KERNEL6_SIZE, .memcpy_size = DT_CF_MEMCPY4_SIZE, .memset_size = DT_CF_MEMSET3_SIZE,
    EMU_CF_CUPTI_NUMBERING,
    .runtime_names = dt__mupti_runtime_names, .runtime_name_count = DT_CF_RT_NAMED,
    .driver_names = dt__mupti_driver_names, .driver_name_count = DT_CF_DRV_NAMED,
};

EMU_CF_PERSONALITY(mupti, mupti, mupti, .clock_counter = 1, .clock_offset_ns = 93600000000000,
                   .clock_drift_ppm = 17.0)
