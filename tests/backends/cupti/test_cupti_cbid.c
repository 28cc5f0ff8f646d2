/*
 * The runtime and driver API names generated at build time from the
 * toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h, and which of
 * those calls launch device work.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cupti_engine.h"

static dt_decoder D;

static int setup(void)
{
    D = cupti_decoder();
    return 0;
}

static const char *api_name(int driver, uint32_t cbid) { return dt__decoder_api_name(&D, driver, cbid); }

static void test_runtime_names(void)
{
    REQUIRE_STR(api_name(0, 211), "cudaLaunchKernel");
    REQUIRE_STR(api_name(0, 31), "cudaMemcpy");
    REQUIRE_STR(api_name(0, 41), "cudaMemcpyAsync");
    REQUIRE_STR(api_name(0, 165), "cudaDeviceSynchronize");
    REQUIRE_STR(api_name(0, 17), "cudaGetDevice");
    REQUIRE_STR(api_name(0, 200), "cudaDeviceGetAttribute");
    REQUIRE_STR(api_name(0, 20), "cudaMalloc");
    REQUIRE_STR(api_name(0, 131), "cudaStreamSynchronize");
}

static void test_driver_names(void)
{
    REQUIRE_STR(api_name(1, 307), "cuLaunchKernel");
    REQUIRE_STR(api_name(1, 652), "cuLaunchKernelEx");
    /* _v2 is part of the exported function's name, so it stays */
    REQUIRE_STR(api_name(1, 276), "cuMemcpyHtoD_v2");
    REQUIRE_STR(api_name(1, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize), "cuCtxSynchronize");
}

/* Per-thread-stream variants and API-version suffixes are stripped. */
static void test_suffixes_stripped(void)
{
    REQUIRE_STR(api_name(0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000), "cudaMemcpy");
    REQUIRE_STR(api_name(0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000), "cudaLaunchKernel");
    REQUIRE_STR(api_name(1, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds), "cuMemcpyHtoD_v2");
    size_t named = 0;
    for (uint32_t driver = 0; driver < 2; driver++) {
        uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        for (uint32_t cbid = 0; cbid < size; cbid++) {
            const char *n = api_name((int)driver, cbid);
            if (!n) continue;
            named++;
            size_t len = strlen(n);
            REQUIRE(len > 2);
            /* names are functions (cudaMalloc, cuMemAlloc_v2, __cudaRegisterVar) */
            REQUIRE(strstr(n, driver ? "cu" : "cuda") != NULL);
            REQUIRE(strchr(n, ' ') == NULL);
            REQUIRE(strstr(n, "_ptsz") == NULL);
            REQUIRE(strstr(n, "_ptds") == NULL);
            /* no _vNNNN (API version) left at the end */
            const char *v = strrchr(n, '_');
            if (v && v[1] == 'v') REQUIRE(strlen(v + 2) < 4);
        }
    }
    /* every id below SIZE except INVALID (0) is named by the header */
    REQUIRE_EQ(named, (CUPTI_RUNTIME_TRACE_CBID_SIZE - 1) + (CUPTI_DRIVER_TRACE_CBID_SIZE - 1));
}

static void test_unknown_ids(void)
{
    REQUIRE(api_name(0, 0) == NULL);
    REQUIRE(api_name(1, 0) == NULL);
    REQUIRE(api_name(0, CUPTI_RUNTIME_TRACE_CBID_SIZE) == NULL);
    REQUIRE(api_name(1, CUPTI_DRIVER_TRACE_CBID_SIZE) == NULL);
    REQUIRE(api_name(0, UINT32_MAX) == NULL);
}

/* Launches by callback id: CUDA 13's <<<>>> (__cudaLaunchKernel, 505 and
   506 on a per-thread default stream) as well as cudaLaunchKernel and the
   Ex, cooperative and graph launches; the call-configuration pair around
   every CUDA 13 launch, and other calls, are not launches. */
static void test_launches(void)
{
    static const uint32_t runtime[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
    for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++) REQUIRE(dt__decoder_is_launch(&D, 0, runtime[i]));
    REQUIRE_EQ(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 505);
    REQUIRE_EQ(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, 506);
    REQUIRE_STR(api_name(0, 505), "__cudaLaunchKernel");
    static const uint32_t driver[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel};
    for (size_t i = 0; i < sizeof driver / sizeof *driver; i++) REQUIRE(dt__decoder_is_launch(&D, 1, driver[i]));
    REQUIRE(!dt__decoder_is_launch(&D, 0, CUPTI_RUNTIME_TRACE_CBID___cudaPushCallConfiguration_v13000));
    REQUIRE(!dt__decoder_is_launch(&D, 0, CUPTI_RUNTIME_TRACE_CBID___cudaPopCallConfiguration_v13000));
    REQUIRE(!dt__decoder_is_launch(&D, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000));
    REQUIRE(!dt__decoder_is_launch(&D, 0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020));
    REQUIRE(!dt__decoder_is_launch(&D, 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc));
    REQUIRE(!dt__decoder_is_launch(&D, 0, UINT32_MAX));
    /* the pair is what the backend asks CUPTI not to record, with the calls
       Kineto leaves out: none a launch */
    const dt_vendor_api_ids *ids = &dt__engine_cupti.v->api_ids;
    REQUIRE_EQ(ids->quiet_runtime_count, 3);
    REQUIRE_STR(api_name(0, ids->quiet_runtime[0]), "__cudaPushCallConfiguration");
    REQUIRE_STR(api_name(0, ids->quiet_runtime[1]), "__cudaPopCallConfiguration");
    REQUIRE_STR(api_name(0, ids->quiet_runtime[2]), "cudaGetDevice");
    REQUIRE_EQ(ids->quiet_driver_count, 3);
    REQUIRE_STR(api_name(1, ids->quiet_driver[0]), "cuKernelGetAttribute");
    REQUIRE_STR(api_name(1, ids->quiet_driver[1]), "cuDevicePrimaryCtxGetState");
    REQUIRE_STR(api_name(1, ids->quiet_driver[2]), "cuCtxGetCurrent");
    for (uint32_t i = 0; i < ids->quiet_runtime_count; i++) REQUIRE(!dt__decoder_is_launch(&D, 0, ids->quiet_runtime[i]));
    for (uint32_t i = 0; i < ids->quiet_driver_count; i++) REQUIRE(!dt__decoder_is_launch(&D, 1, ids->quiet_driver[i]));
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_launches),
             DT_TEST(test_runtime_names),
             DT_TEST(test_driver_names),
             DT_TEST(test_suffixes_stripped),
             DT_TEST(test_unknown_ids))
#else
#include "cupti_test_util.h"
#endif
