/*
 * Device properties from the CUDA driver, where the process has it loaded:
 * a stand-in libcuda.so.1 describes two H200-like devices, and the session
 * takes every field from it, the default and the opt-in shared memory per
 * block among them (DEVICE records give neither apart), over what the
 * emulator's records said.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI && defined(DT_FAKE_LIBCUDA)

static void *g_emu;

static int setup(void)
{
    char lib[1024];
    snprintf(lib, sizeof lib, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    setenv("DEVTRACE_CUPTI_LIBRARY", lib, 1);
    g_emu = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    return 0;
}

static dt_session *record_one_kernel(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    *(void **)&launch = dlsym(g_emu, "emu_launch_kernel");
    *(void **)&sync = dlsym(g_emu, "emu_synchronize");
    const int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    REQUIRE_EQ(launch(0, 0, "k", grid, block, 100), 0);
    REQUIRE_EQ(sync(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    return s;
}

static void test_records_alone(void)
{
    if (!g_emu) SKIP("the CUPTI emulator was not built");
    dt_session *s = record_one_kernel();
    REQUIRE(s->devices[0].valid);
    REQUIRE(strstr(s->devices[0].name, "emulated") != NULL); /* no driver: the records' description */
    dt_session_destroy(s);
}

static void test_driver_describes_devices(void)
{
    if (!g_emu) SKIP("the CUPTI emulator was not built");
    void *cuda = dlopen(DT_FAKE_LIBCUDA, RTLD_NOW | RTLD_GLOBAL); /* as libcuda.so.1, its soname */
    REQUIRE(cuda != NULL);
    REQUIRE(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) != NULL);
    dt_session *s = record_one_kernel();
    for (int d = 0; d < 2; d++) {
        const dt_device_props *p = &s->devices[d];
        char name[32];
        snprintf(name, sizeof name, "Fake H200 %d", d);
        REQUIRE(p->valid);
        REQUIRE_STR(p->name, name);
        REQUIRE_EQ(p->id, (uint32_t)d);
        REQUIRE_EQ(p->shared_mem_per_block, 49152);
        REQUIRE_EQ(p->shared_mem_per_block_optin, 232448);
        REQUIRE_EQ(p->shared_mem_per_sm, 233472);
        REQUIRE_EQ(p->num_sms, 132);
        REQUIRE_EQ(p->max_threads_per_sm, 2048);
        REQUIRE_EQ(p->compute_major, 9);
        REQUIRE(p->total_global_mem == (uint64_t)141 << 30);
    }
    char json[4096];
    dt_session_device_properties(s, json, sizeof json);
    REQUIRE(strstr(json, "\"sharedMemPerBlock\":49152") != NULL);
    REQUIRE(strstr(json, "\"sharedMemPerBlockOptin\":232448") != NULL);
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_records_alone),
             DT_TEST(test_driver_describes_devices))

#else
#include "cupti_test_util.h"
#endif
