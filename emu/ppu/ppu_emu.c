/*
 * PPU personality of the emulator: the PPU SDK's CUPTI-compatible
 * libcupti.so (built as emu/ppu/libcupti.so) with CUPTI's entry points and
 * numbering, CUDA 12's record versions, one of KERNEL and CONCURRENT_KERNEL
 * at a time (the second answers CUPTI_ERROR_NOT_COMPATIBLE), a driver call
 * and an external-correlation record for every runtime call (of kind
 * UNKNOWN, id 0, when no id is pushed), and a clock with another epoch
 * (a counter near three days) and rate (-150 ppm). All of it as inferred in
 * src/backends/ppu_abi.h.
 */
#include "backends/ppu_abi.h"
#include "cf_personality.h"

static const emu_cf_personality ppu = {
    .result_prefix = "CUPTI",
    .version = 20,
    .kernel_size = DT_CF_KERNEL9_SIZE, .memcpy_size = DT_CF_MEMCPY5_SIZE, .memset_size = DT_CF_MEMSET4_SIZE,
    .quirks = EMU_CF_SINGLE_KERNEL_KIND,
    EMU_CF_CUPTI_NUMBERING,
    .runtime_names = dt_ppu_runtime_names, .runtime_name_count = DT_CF_RT_NAMED,
    .driver_names = dt_ppu_driver_names, .driver_name_count = DT_CF_DRV_NAMED,
};

EMU_CF_PERSONALITY(cupti, ppu, ppu, .clock_counter = 1, .clock_offset_ns = 259200000000000,
                   .clock_drift_ppm = -150.0, .external_kind_when_empty = DT_CF_EXTERNAL_UNKNOWN)
