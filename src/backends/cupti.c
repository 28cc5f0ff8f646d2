/*
 * NVIDIA CUDA through CUPTI's activity API, as a descriptor over the engine.
 *
 * Records are decoded through devtrace's declaration of the CUPTI-family
 * layouts (cupti_family_abi.h), checked here at compile time against the
 * toolkit's own structs; the stride from one record to the next comes from
 * the loaded libcupti's iterator, since a libcupti of another release may
 * write longer records, and only it knows their size. CUPTI appends fields
 * across versions and never moves them, so the fields read sit at the same
 * offsets in every record version that has them.
 *
 * The runtime and driver API names are generated at build time from the
 * toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h, which is why the
 * backend needs the toolkit's headers to be built.
 */
#include "backends/cupti_family.h"

#include <dlfcn.h>
#include <stdio.h>

extern const dt_backend dt_backend_cupti;

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include "cupti_cbid_names.h"

/* devtrace's declaration is the toolkit's, field by field where read. */
#define SAME_FIELD(ours, theirs, member)                                                       \
    _Static_assert(offsetof(ours, member) == offsetof(theirs, member) &&                       \
                       sizeof(((ours *)0)->member) == sizeof(((theirs *)0)->member),           \
                   #theirs "." #member " moved")
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, start);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, registersPerThread);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, gridX);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, dynamicSharedMemory);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, correlationId);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, name);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, submitted);
SAME_FIELD(dt_cf_kernel, CUpti_ActivityKernel10, isDeviceLaunched);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, copyKind);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, correlationId);
SAME_FIELD(dt_cf_memcpy, CUpti_ActivityMemcpy6, copyCount);
SAME_FIELD(dt_cf_memcpy_peer, CUpti_ActivityMemcpyPtoP4, dstDeviceId);
SAME_FIELD(dt_cf_memcpy_peer, CUpti_ActivityMemcpyPtoP4, correlationId);
SAME_FIELD(dt_cf_memset, CUpti_ActivityMemset4, memoryKind);
SAME_FIELD(dt_cf_api, CUpti_ActivityAPI, returnValue);
SAME_FIELD(dt_cf_external, CUpti_ActivityExternalCorrelation, correlationId);
SAME_FIELD(dt_cf_sync, CUpti_ActivitySynchronization2, streamId);
SAME_FIELD(dt_cf_overhead, CUpti_ActivityOverhead3, correlationId);
SAME_FIELD(dt_cf_device, CUpti_ActivityDevice5, name);
SAME_FIELD(dt_cf_device, CUpti_ActivityDevice5, numMultiprocessors);
SAME_FIELD(dt_cf_callback_data, CUpti_CallbackData, correlationId);
_Static_assert(sizeof(dt_cf_kernel) == sizeof(CUpti_ActivityKernel10), "Kernel10 size");
_Static_assert(sizeof(dt_cf_device) == sizeof(CUpti_ActivityDevice5), "Device5 size");
_Static_assert((int)DT_CF_KIND_EXTERNAL_CORRELATION == (int)CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
                   (int)DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ==
                       (int)CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED &&
                   (int)DT_CF_EXTERNAL_CUSTOM0 == (int)CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
               "CUPTI's numbers");

static int driver_version(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return 0;
    int (*get)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    int v = 0;
    if (!get || get(&v) != 0) v = 0;
    dlclose(h);
    return v;
}

static int explain_failure(const char *call, int r, const char *result_text, const char *library,
                           const char *version, int emulated, dt_failure *out)
{
    (void)emulated;
    if (r == DT_CF_ERROR_INSUFFICIENT_PRIVILEGES || r == DT_CF_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
        out->status = DT_ERR_BACKEND_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "%s: %s (%d): this user may not profile the GPU; see NVreg_RestrictProfilingToAdminUsers", call,
                 result_text, r);
        return 1;
    }
    if (r != DT_CF_ERROR_NOT_COMPATIBLE && r != DT_CF_ERROR_NOT_INITIALIZED &&
        r != DT_CF_ERROR_CUDA_COMPILER_NOT_COMPATIBLE)
        return 0;
    int dv = driver_version();
    char driver[48];
    if (dv > 0) snprintf(driver, sizeof driver, "the NVIDIA driver (CUDA %d.%d)", dv / 1000, (dv % 1000) / 10);
    else snprintf(driver, sizeof driver, "the NVIDIA driver");
    out->status = DT_ERR_BACKEND_UNAVAILABLE;
    snprintf(out->message, sizeof out->message,
             "%s: %s (%d): insufficient driver: %s is older than %s (CUPTI API %s) needs; update the driver or "
             "point DEVTRACE_CUPTI_LIBRARY at the CUPTI of an older toolkit",
             call, result_text, r, driver, library, version);
    return 1;
}

static const dt_kind_spec kinds[] = {
    {DT_CF_KIND_CONCURRENT_KERNEL, 0, DT_CAPTURE_KERNEL, 1, 1, "kernels"},
    {DT_CF_KIND_MEMCPY, 0, DT_CAPTURE_MEMCPY, 1, 1, "memory copies"},
    {DT_CF_KIND_MEMCPY2, 0, DT_CAPTURE_MEMCPY, 0, 1, "peer-to-peer copies"},
    {DT_CF_KIND_MEMSET, 0, DT_CAPTURE_MEMSET, 1, 1, "memsets"},
    {DT_CF_KIND_DEVICE, 0, 0, 0, 1, "device properties"},
    {DT_CF_KIND_RUNTIME, 0, DT_CAPTURE_RUNTIME, 1, 0, "runtime API"},
    {DT_CF_KIND_DRIVER, 0, DT_CAPTURE_DRIVER, 1, 0, "driver API"},
    {DT_CF_KIND_EXTERNAL_CORRELATION, 0, 0, 0, 0, "External ids"},
    {DT_CF_KIND_SYNCHRONIZATION, 0, DT_CAPTURE_SYNC, 0, 0, "synchronization"},
    {DT_CF_KIND_OVERHEAD, 0, DT_CAPTURE_OVERHEAD, 0, 0, "CUPTI overhead"},
};

/* Kernel10/Memcpy6/Memset4 sizes measured with CUDA 13.0 (API 130001). */
static const dt_layout_set layouts[] = {
    {130000, "CUDA 13 (Kernel10, Memcpy6, Memset4)", 130001, dt_cf_layouts_cuda13},
    {19, "CUDA 12 (Kernel9, Memcpy5, Memset4)", 0, dt_cf_layouts_cuda12},
    {0, "CUDA 11 (Kernel8, Memcpy5, Memset4)", 0, dt_cf_layouts_cuda11},
};

static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so", NULL};
static const char *const roots[] = {"CUDA_HOME", NULL};
static const char *const subdirs[] = {"lib64", "extras/CUPTI/lib64", NULL};

DT_ENGINE_BACKEND(cupti, cupti_vendor, "cupti", "NVIDIA CUDA (CUPTI)", "cuda", "DEVTRACE_CUPTI_LIBRARY");

static const dt_vendor cupti_vendor = {
    .backend = &dt_backend_cupti,
    .library = {.spec = {.what = "libcupti", .sonames = sonames, .loaded_symbol = "cuptiActivityRegisterCallbacks",
                         .root_envs = roots, .default_root = "/usr/local/cuda", .subdirs = subdirs,
                         .hint = "set CUDA_HOME to the CUDA toolkit"},
                .symbol_prefix = "cupti",
                .symbols = {[DT_SYM_CALLBACK_NAME] = DT_SYM_NONE}, /* the generated tables are complete */
                .driver_library = "libcuda.so.1", .driver_name = "NVIDIA",
                .emulator_marker = "devtrace_emulator_cupti"},
    .caps = DT_VCAP_COMPLETE_WITH_CONTEXT | DT_VCAP_DROPPED_WITH_CONTEXT | DT_VCAP_DEVICE_RECORDS |
            DT_VCAP_EARLY_ARMING,
    .results = DT_CF_RESULTS,
    .activity = DT_CF_ACTIVITY(DT_CF_EXTERNAL_CUSTOM0),
    .callbacks = DT_CF_CALLBACKS,
    .names = {.runtime = dt_cupti_runtime_names, .runtime_count = DT_CUPTI_RUNTIME_NAMES_COUNT,
              .driver = dt_cupti_driver_names, .driver_count = DT_CUPTI_DRIVER_NAMES_COUNT,
              .runtime_fallback = "cudaRuntime", .driver_fallback = "cudaDriver"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts)},
    .enums = DT_CF_ENUMS,
    .clock_domain = "CLOCK_REALTIME ns (cuptiGetTimestamp, measured with CUDA 13.0)",
    .explain_failure = explain_failure,
};

#else /* !DT_HAVE_CUPTI */

#ifndef DT_CUPTI_ABSENT_REASON
#define DT_CUPTI_ABSENT_REASON "built without CUPTI headers: set CUDA_HOME and rebuild"
#endif

static dt_status absent_probe(dt_backend_status *st)
{
    st->available = 0;
    snprintf(st->reason, sizeof st->reason, "%s", DT_CUPTI_ABSENT_REASON);
    return DT_OK;
}

static dt_status absent(void) { return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "cupti: %s", DT_CUPTI_ABSENT_REASON); }
static dt_status absent_start(dt_session *s)
{
    (void)s;
    return absent();
}

const dt_backend dt_backend_cupti = {
    .name = "cupti",
    .vendor = "NVIDIA CUDA (CUPTI)",
    .api_category = "cuda",
    .library_env = "DEVTRACE_CUPTI_LIBRARY",
    .probe = absent_probe,
    .prepare = absent,
    .start = absent_start,
};

#endif /* DT_HAVE_CUPTI */
