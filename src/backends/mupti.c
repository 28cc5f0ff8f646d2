/*
 * Moore Threads MUSA through MUPTI (libmupti.so), as a descriptor over the
 * engine: CUPTI's signatures and numbering under the `mupti` prefix, the
 * record versions public code reads (Kernel6, Memcpy4, Memset3), MUSA's API
 * names, a vendor clock domain. Layouts and driver numbering are inferred
 * (mupti_abi.h), validated only on devtrace's emulator.
 */
#include "backends/cupti_family.h"
#include "backends/mupti_abi.h"


static const dt_layout_set layouts[] = {
    DT_LAYOUT_SET(0, "CUPTI's same-numbered versions (Kernel6 168, Memcpy4 80, Memset3 80: inferred)", 0,
                  dt__cf_layouts_kernel6),
};

static const char *const sonames[] = {"libmupti.so", "libmupti.so.1.2", NULL};
static const char *const roots[] = {"MUSA_HOME", NULL};
static const char *const subdirs[] = {"lib", "lib64", NULL};

DT_ENGINE_DEFINE(mupti, mupti_vendor);

const dt_backend dt__backend_mupti = {
    .name = "mupti",
    .vendor = "Moore Threads MUSA (MUPTI)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_MUPTI_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .impl = &dt__engine_mupti,
    DT_ENGINE_METHODS,
};

static const dt_vendor mupti_vendor = {
    .backend = &dt__backend_mupti,
    .library = {.spec = {.what = "libmupti", .sonames = sonames, .root_envs = roots,
                         .default_root = "/usr/local/musa", .subdirs = subdirs,
                         .hint = "install the MUSA toolkit and set MUSA_HOME"},
                .symbol_prefix = "mupti", .emulator_marker = "devtrace_emulator_mupti",
                .layout_note = "MUPTI's record layouts are inferred from CUPTI's same-numbered versions, not read "
                               "from Moore Threads' headers: check this trace against the workload "
                               "(docs/backends/mupti.md)"},
    .caps = DT_VCAP_COMPLETE_WITH_CONTEXT | DT_VCAP_DROPPED_WITH_CONTEXT,
    .results = DT_CF_RESULTS,
    .activity = DT_CF_ACTIVITY(DT_CF_EXTERNAL_CUSTOM0),
    .callbacks = DT_CF_CALLBACKS,
    .names = {DT_CF_DOMAIN_RUNTIME_API, DT_CF_DOMAIN_DRIVER_API, 1024, DT_COUNTED(dt__mupti_runtime_names),
              DT_COUNTED(dt__mupti_driver_names), "musaRuntime", "musaDriver"},
    .records = {DT_COUNTED(dt__cf_kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = DT_CF_ENUMS,
    .clock_domain = "MUPTI's own clock domain (muptiGetTimestamp), mapped to CLOCK_REALTIME",
};
