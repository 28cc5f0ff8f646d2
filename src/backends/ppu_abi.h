/*
 * devtrace's declaration of the PPU stack's CUPTI-compatible libcupti (a
 * `libcupti.so` with `cupti*` symbols shipped with the PPU SDK, which
 * forwards to the stack's own profiling interface). No PPU header is public;
 * everything here is INFERRED from Torch-FL's cupti_device_tracer.cc, which
 * records the PPU stack through the same code as CUPTI
 * (research/reference_implementation.md section 3.1):
 *
 * - records, activity kinds, result codes and callback ids are CUPTI's; the
 *   records are read as CUDA 12's versions (Kernel9 208 bytes, Memcpy5 88,
 *   Memset4 88), the layouts Torch-FL mirrors; strides come from the
 *   library's own iterator;
 * - only one of KERNEL and CONCURRENT_KERNEL may be enabled: the second
 *   answers a not-compatible error;
 * - every runtime call also produces a driver API record and an
 *   external-correlation record (which is why PPU buffers hold about twice
 *   as many records as CUDA's);
 * - its clock differs from CLOCK_REALTIME in epoch and drifts in rate under
 *   load;
 * - the library may deliver completed buffers from inside FlushAll, on the
 *   calling thread.
 * The names below are those of CUPTI's ids for the calls devtrace's emulator
 * makes; the library's own name function (cuptiGetCallbackName) names the
 * rest.
 */
#ifndef DT_PPU_ABI_H
#define DT_PPU_ABI_H

#include "backends/cupti_family_abi.h"

/* CUDA's names for the calls at CUPTI's ids. */
__attribute__((unused)) static const char *const dt_ppu_runtime_names[DT_CF_RT_NAMED] =
    DT_CF_RUNTIME_NAMES("cuda");
__attribute__((unused)) static const char *const dt_ppu_driver_names[DT_CF_DRV_NAMED] =
    DT_CF_DRIVER_NAMES("cu");

#endif /* DT_PPU_ABI_H */
