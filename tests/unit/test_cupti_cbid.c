/*
 * The runtime and driver API names generated at build time from the
 * toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "backends/cupti_backend.h"

static void test_runtime_names(void **state)
{
    (void)state;
    assert_string_equal(dt_cupti_api_name(0, 211), "cudaLaunchKernel");
    assert_string_equal(dt_cupti_api_name(0, 31), "cudaMemcpy");
    assert_string_equal(dt_cupti_api_name(0, 41), "cudaMemcpyAsync");
    assert_string_equal(dt_cupti_api_name(0, 165), "cudaDeviceSynchronize");
    assert_string_equal(dt_cupti_api_name(0, 17), "cudaGetDevice");
    assert_string_equal(dt_cupti_api_name(0, 200), "cudaDeviceGetAttribute");
    assert_string_equal(dt_cupti_api_name(0, 20), "cudaMalloc");
    assert_string_equal(dt_cupti_api_name(0, 131), "cudaStreamSynchronize");
}

static void test_driver_names(void **state)
{
    (void)state;
    assert_string_equal(dt_cupti_api_name(1, 307), "cuLaunchKernel");
    assert_string_equal(dt_cupti_api_name(1, 652), "cuLaunchKernelEx");
    /* _v2 is part of the exported function's name, so it stays */
    assert_string_equal(dt_cupti_api_name(1, 276), "cuMemcpyHtoD_v2");
    assert_string_equal(dt_cupti_api_name(1, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize), "cuCtxSynchronize");
}

/* Per-thread-stream variants and API-version suffixes are stripped. */
static void test_suffixes_stripped(void **state)
{
    (void)state;
    assert_string_equal(dt_cupti_api_name(0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000), "cudaMemcpy");
    assert_string_equal(dt_cupti_api_name(0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000),
                        "cudaLaunchKernel");
    assert_string_equal(dt_cupti_api_name(1, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds), "cuMemcpyHtoD_v2");
    size_t named = 0;
    for (uint32_t driver = 0; driver < 2; driver++) {
        uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        for (uint32_t cbid = 0; cbid < size; cbid++) {
            const char *n = dt_cupti_api_name((int)driver, cbid);
            if (!n) continue;
            named++;
            size_t len = strlen(n);
            assert_true(len > 2);
            /* names are functions (cudaMalloc, cuMemAlloc_v2, __cudaRegisterVar) */
            assert_non_null(strstr(n, driver ? "cu" : "cuda"));
            assert_null(strchr(n, ' '));
            assert_null(strstr(n, "_ptsz"));
            assert_null(strstr(n, "_ptds"));
            /* no _vNNNN (API version) left at the end */
            const char *v = strrchr(n, '_');
            if (v && v[1] == 'v') assert_true(strlen(v + 2) < 4);
        }
    }
    /* every id below SIZE except INVALID (0) is named by the header */
    assert_int_equal(named, (CUPTI_RUNTIME_TRACE_CBID_SIZE - 1) + (CUPTI_DRIVER_TRACE_CBID_SIZE - 1));
}

static void test_unknown_ids(void **state)
{
    (void)state;
    assert_null(dt_cupti_api_name(0, 0));
    assert_null(dt_cupti_api_name(1, 0));
    assert_null(dt_cupti_api_name(0, CUPTI_RUNTIME_TRACE_CBID_SIZE));
    assert_null(dt_cupti_api_name(1, CUPTI_DRIVER_TRACE_CBID_SIZE));
    assert_null(dt_cupti_api_name(0, UINT32_MAX));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_names),
        cmocka_unit_test(test_driver_names),
        cmocka_unit_test(test_suffixes_stripped),
        cmocka_unit_test(test_unknown_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
#include "cupti_test_util.h"
#endif
