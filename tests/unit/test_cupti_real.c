/*
 * The CUPTI backend against the toolkit's real libcupti, found by the
 * backend's own search: without an NVIDIA driver every way in must fail with
 * the message that says so; with one, a session starts and stops cleanly.
 * Skipped when no libcupti is installed.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include "backends/cupti_backend.h"

static int g_have_driver;
static dt_backend_status g_probe;

static int setup(void **state)
{
    (void)state;
    unsetenv("DEVTRACE_CUPTI_LIBRARY");
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    g_have_driver = h != NULL;
    if (h) dlclose(h);
    memset(&g_probe, 0, sizeof g_probe);
    dt_backend_probe("cupti", &g_probe);
    return 0;
}

#define REQUIRE_LIBCUPTI()                                                      \
    do {                                                                        \
        if (!g_probe.library[0]) {                                              \
            print_message("no libcupti: %s: skipped\n", g_probe.reason);        \
            assert_non_null(strstr(g_probe.reason, "libcupti not found"));      \
            skip();                                                             \
        }                                                                       \
    } while (0)

static void test_probe(void **state)
{
    (void)state;
    REQUIRE_LIBCUPTI();
    print_message("%s %s: %s\n", g_probe.library, g_probe.version, g_probe.reason);
    assert_non_null(strstr(g_probe.library, "libcupti.so"));
    assert_true(atoi(g_probe.version) >= 18); /* CUPTI API version: 18 is CUDA 11.8 */
    assert_int_equal(g_probe.available, g_have_driver);
    if (!g_have_driver) assert_non_null(strstr(g_probe.reason, "no NVIDIA driver: libcuda.so.1 not found"));
}

static void test_start(void **state)
{
    (void)state;
    REQUIRE_LIBCUPTI();
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    assert_int_equal(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    print_message("start: %s %s\n", dt_status_name(st), dt_last_error());
    if (!g_have_driver) {
        assert_int_equal(st, DT_ERR_BACKEND_UNAVAILABLE);
        assert_non_null(strstr(dt_last_error(), "no NVIDIA driver: libcuda.so.1 not found"));
    } else {
        /* a driver without a usable GPU, or another profiler, fails with its
           own message; otherwise the session runs and holds nothing */
        if (st == DT_OK) {
            assert_int_equal(dt_session_stop(s), DT_OK);
            assert_int_equal(dt_session_loss_total(s), 0);
        } else {
            assert_true(strlen(dt_last_error()) > 10);
        }
    }
    dt_session_destroy(s);
}

static void test_prepare(void **state)
{
    (void)state;
    REQUIRE_LIBCUPTI();
    dt_status st = dt_cupti_prepare();
    print_message("prepare: %s %s\n", dt_status_name(st), st ? dt_last_error() : "");
    if (!g_have_driver) {
        assert_int_equal(st, DT_ERR_BACKEND_UNAVAILABLE);
        assert_non_null(strstr(dt_last_error(), "no NVIDIA driver"));
        dt_cupti_early_init(); /* logs, never fails loudly */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_start),
        cmocka_unit_test(test_prepare),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

#else
#include "cupti_test_util.h"
#endif
