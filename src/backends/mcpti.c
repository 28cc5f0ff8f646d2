/*
 * MetaX MACA through MCPTI (libmcpti.so), as a descriptor over the engine.
 * What differs from CUPTI is data: MetaX's runtime callback numbering and
 * its name function (asked once per session: it cannot be called from the
 * buffer callback), the CUDA 11.8 generation's record versions walked by
 * their sizes (MCPTI 3.8's iterator returns stale records after an
 * external-correlation record), and a hardware clock. All of it is inferred
 * (mcpti_abi.h), validated only on devtrace's emulator.
 */
#include "backends/cupti_family.h"
#include "backends/mcpti_abi.h"


static const dt_layout_set layouts[] = {
    DT_LAYOUT_SET(0, "MACA 3.5-3.8 (Kernel8 200, Memcpy5 88, Memset4 88: inferred)", UINT32_MAX, dt__cf_layouts_cuda11),
};

static const char *const sonames[] = {"libmcpti.so", NULL};
static const char *const roots[] = {"MACA_PATH", "METAX_PATH", NULL};
static const char *const subdirs[] = {"lib", "lib64", NULL};

DT_ENGINE_DEFINE(mcpti, mcpti_vendor);

const dt_backend dt__backend_mcpti = {
    .name = "mcpti",
    .vendor = "MetaX MACA (MCPTI)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_MCPTI_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .impl = &dt__engine_mcpti,
    DT_ENGINE_METHODS,
};

static const dt_vendor mcpti_vendor = {
    .backend = &dt__backend_mcpti,
    .library = {.spec = {.what = "libmcpti", .sonames = sonames, .root_envs = roots, .default_root = "/opt/maca",
                         .subdirs = subdirs, .hint = "install MACA and set MACA_PATH"},
                .symbol_prefix = "mcpti", .symbols = {[DT_SYM_CALLBACK_NAME] = "mcptiActivityGetApiName"},
                .emulator_marker = "devtrace_emulator_mcpti",
                .layout_note = "MCPTI's record layouts, callback ids and numbering are inferred from public users "
                               "of MACA 3.5-3.8, not read from MetaX's headers: check this trace against the "
                               "workload (docs/backends/mcpti.md)"},
    .caps = DT_VCAP_COMPLETE_WITH_CONTEXT | DT_VCAP_DROPPED_WITH_CONTEXT | DT_VCAP_EARLY_ARMING | DT_VCAP_OWN_STRIDES,
    .results = DT_CF_RESULTS,
    .activity = DT_CF_ACTIVITY(DT_CF_EXTERNAL_CUSTOM0),
    .callbacks = DT_CF_CALLBACKS,
    /* the name function takes the record's activity kind */
    .names = {DT_CF_KIND_RUNTIME, DT_CF_KIND_DRIVER, 1024, DT_COUNTED(dt__mcpti_runtime_names), NULL, 0,
              "mcRuntime", "mcDriver"},
    .records = {DT_COUNTED(dt__cf_kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = DT_CF_ENUMS,
    .clock_domain = "a hardware counter (mcptiGetTimestamp), not the epoch; mapped to CLOCK_REALTIME",
};
