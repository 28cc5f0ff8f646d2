/*
 * The CUPTI backend against the toolkit's real libcupti, found by the
 * backend's own search: without an NVIDIA driver every way in must fail with
 * the message that says so; with one, a session starts and stops cleanly.
 * Skipped when no libcupti is installed.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"
#include "backends/cupti_family_abi.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI

static int g_have_driver;
static dt_backend_status g_probe;

static int setup(void)
{
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
            REQUIRE(strstr(g_probe.reason, "libcupti not found") != NULL);      \
            SKIP("no libcupti: %s", g_probe.reason);                                  \
        }                                                                       \
    } while (0)

static void test_probe(void)
{
    REQUIRE_LIBCUPTI();
    printf("%s %s: %s\n", g_probe.library, g_probe.version, g_probe.reason);
    REQUIRE(strstr(g_probe.library, "libcupti.so") != NULL);
    REQUIRE(atoi(g_probe.version) >= 18); /* CUPTI API version: 18 is CUDA 11.8 */
    REQUIRE_EQ(g_probe.available, g_have_driver);
    if (!g_have_driver) REQUIRE(strstr(g_probe.reason, "no NVIDIA driver: libcuda.so.1 not found") != NULL);
}

static void test_start(void)
{
    REQUIRE_LIBCUPTI();
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    printf("start: %s %s\n", dt_status_name(st), dt_last_error());
    if (!g_have_driver) {
        REQUIRE_EQ(st, DT_ERR_BACKEND_UNAVAILABLE);
        REQUIRE(strstr(dt_last_error(), "no NVIDIA driver: libcuda.so.1 not found") != NULL);
    } else {
        /* a driver without a usable GPU, or another profiler, fails with its
           own message; otherwise the session runs and holds nothing */
        if (st == DT_OK) {
            REQUIRE_EQ(dt_session_stop(s), DT_OK);
            REQUIRE_EQ(dt_session_loss_total(s), 0);
        } else {
            REQUIRE(strlen(dt_last_error()) > 10);
        }
    }
    dt_session_destroy(s);
}

static void test_prepare(void)
{
    REQUIRE_LIBCUPTI();
    dt_status st = dt_prepare("cupti");
    printf("prepare: %s %s\n", dt_status_name(st), st ? dt_last_error() : "");
    if (!g_have_driver) {
        REQUIRE_EQ(st, DT_ERR_BACKEND_UNAVAILABLE);
        REQUIRE(strstr(dt_last_error(), "no NVIDIA driver") != NULL);
        REQUIRE_EQ(dt_prepare("cupti"), DT_ERR_BACKEND_UNAVAILABLE); /* and again: nothing was left half armed */
    }
}

/* Every result code devtrace names means what the real library says it
   means (cuptiGetResultString needs no driver). */
static void test_result_names(void)
{
    REQUIRE_LIBCUPTI();
    void *h = dlopen(g_probe.library, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL);
    int (*text)(int, const char **) = (int (*)(int, const char **))dlsym(h, "cuptiGetResultString");
    REQUIRE(text != NULL);
    static const struct { int code; const char *name; } ours[] = {
        {DT_CF_SUCCESS, "CUPTI_SUCCESS"},
        {DT_CF_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
        {DT_CF_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
        {DT_CF_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
        {DT_CF_ERROR_NOT_COMPATIBLE, "CUPTI_ERROR_NOT_COMPATIBLE"},
        {DT_CF_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
        {DT_CF_ERROR_QUEUE_EMPTY, "CUPTI_ERROR_QUEUE_EMPTY"},
        {DT_CF_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND"},
        {DT_CF_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
        {DT_CF_ERROR_CUDA_COMPILER_NOT_COMPATIBLE, "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE"},
        {DT_CF_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
        {DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
        {DT_CF_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
         "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES"},
        {DT_CF_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED"},
        {DT_CF_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"},
    };
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++) {
        const char *name = NULL;
        CHECK_EQ(text(ours[i].code, &name), DT_CF_SUCCESS);
        CHECK_STR(name ? name : "(null)", ours[i].name);
    }
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_probe),
             DT_TEST(test_result_names),
             DT_TEST(test_start),
             DT_TEST(test_prepare))

#else
#include "cupti_test_util.h"
#endif
