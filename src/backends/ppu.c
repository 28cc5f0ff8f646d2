/*
 * The PPU stack through its CUPTI-compatible libcupti, as a descriptor over
 * the engine. It speaks CUPTI's ABI (ppu_abi.h, all of it inferred), so what
 * differs is data: where the library lives, CUDA 12's record versions, one
 * kernel kind at a time (CONCURRENT_KERNEL, else KERNEL), and a clock that
 * is not CLOCK_REALTIME. The driver and external-correlation records it
 * adds to every runtime call are decoded like CUPTI's; those of external
 * kinds other than devtrace's are not devtrace's ids.
 */
#include "backends/cupti_family.h"
#include "backends/ppu_abi.h"


static const dt_layout_set layouts[] = {
    DT_LAYOUT_SET(0, "CUDA 12 (Kernel9 208, Memcpy5 88, Memset4 88: inferred)", 0, dt__cf_layouts_cuda12),
};

static const char *const sonames[] = {"libcupti.so", NULL};
static const char *const roots[] = {"PPU_SDK", "PPU_HOME", NULL};
static const char *const subdirs[] = {"lib", "lib64", "extras/CUPTI/lib64", NULL};

DT_ENGINE_DEFINE(ppu, ppu_vendor);

const dt_backend dt__backend_ppu = {
    .name = "ppu",
    .vendor = "PPU (CUPTI-compatible)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_PPU_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .impl = &dt__engine_ppu,
    DT_ENGINE_METHODS,
};

static const dt_vendor ppu_vendor = {
    .backend = &dt__backend_ppu,
    .library = {.spec = {.what = "the PPU SDK's libcupti", .sonames = sonames, .root_envs = roots,
                         .subdirs = subdirs, .hint = "set PPU_SDK to the PPU SDK",
                         /* a libcupti on the loader path is NVIDIA's as likely as the PPU's */
                         .roots_only = 1},
                .symbol_prefix = "cupti", .emulator_marker = "devtrace_emulator_ppu",
                .layout_note = "the PPU stack's record layouts and numbers are inferred (CUPTI's, CUDA 12 "
                               "versions), not read from its headers: check this trace against the workload "
                               "(docs/backends/ppu.md)"},
    .caps = DT_VCAP_COMPLETE_WITH_CONTEXT | DT_VCAP_DROPPED_WITH_CONTEXT | DT_VCAP_EARLY_ARMING,
    .results = DT_CF_RESULTS,
    .activity = DT_CF_ACTIVITY(DT_CF_EXTERNAL_CUSTOM0),
    .callbacks = DT_CF_CALLBACKS,
    .names = {DT_CF_DOMAIN_RUNTIME_API, DT_CF_DOMAIN_DRIVER_API, 1024, NULL, 0, NULL, 0, "cudaRuntime", "cudaDriver"},
    .records = {DT_COUNTED(dt__cf_kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = DT_CF_ENUMS,
    .clock_domain = "the PPU's own clock (cuptiGetTimestamp): another epoch, a drifting rate; mapped to "
                    "CLOCK_REALTIME by repeated samples",
};
