/*
 * The PPU stack allows one of KERNEL and CONCURRENT_KERNEL: with KERNEL
 * already enabled (by another client, or early), enabling CONCURRENT_KERNEL
 * answers NOT_COMPATIBLE, and the backend records kernels through KERNEL.
 * Every runtime call also brings a driver and an external-correlation
 * record; those carry no devtrace id unless one was pushed.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "devtrace_emu.h"
#include "backends/cupti_family_abi.h"
#include "dt_check.h"
#include "dt_internal.h"

static void *g_emu;

static void *sym(const char *name)
{
    void *p = dlsym(g_emu, name);
    REQUIRE(p != NULL, "the PPU emulator lacks %s", name);
    return p;
}

static void kernels_through_the_kind_allowed(void)
{
    if (!DT_EMULATOR[0]) SKIP("the PPU emulator was not built");
    REQUIRE_EQ(setenv("DEVTRACE_PPU_LIBRARY", DT_EMULATOR, 1), 0);
    g_emu = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_emu != NULL, "%s", dlerror());
    int (*enable)(uint32_t), (*disable)(uint32_t);
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    void (*stats)(emu_stats *), (*reset)(void);
    *(void **)&enable = sym("cuptiActivityEnable");
    *(void **)&disable = sym("cuptiActivityDisable");
    *(void **)&launch = sym("emu_launch_kernel");
    *(void **)&sync = sym("emu_synchronize");
    *(void **)&stats = sym("emu_stats_get");
    *(void **)&reset = sym("emu_stats_reset");

    REQUIRE_EQ(enable(DT_CF_KIND_KERNEL), DT_CF_SUCCESS);
    REQUIRE_EQ(enable(DT_CF_KIND_CONCURRENT_KERNEL), DT_CF_ERROR_NOT_COMPATIBLE);

    dt_config c;
    dt_config_init(&c);
    c.backend = "ppu";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE(dt_session_start(s) == DT_OK, "%s", dt_last_error());
    reset();
    const int g[3] = {2, 1, 1}, b[3] = {64, 1, 1};
    REQUIRE_EQ(launch(0, 0, "unpushed", g, b, 1000), 0);
    REQUIRE_EQ(dt_external_push(5), DT_OK);
    REQUIRE_EQ(launch(0, 0, "pushed", g, b, 1000), 0);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(sync(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    emu_stats st;
    stats(&st);
    /* a driver and an external-correlation record with every runtime call */
    CHECK_EQ(st.records[EMU_KIND_DRIVER], st.records[EMU_KIND_RUNTIME]);
    CHECK_EQ(st.records[EMU_KIND_EXTERNAL], st.records[EMU_KIND_RUNTIME] + st.records[EMU_KIND_DRIVER]);
    size_t kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        kernels++;
        if (strcmp(ev.name, "pushed") == 0) CHECK(ev.has_external && ev.external_id == 5);
        else CHECK(!ev.has_external, "%s carries External id %llu", ev.name, (unsigned long long)ev.external_id);
    }
    CHECK_EQ(kernels, 2);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
    /* the session's kinds are released: the other kind can be chosen now */
    CHECK_EQ(enable(DT_CF_KIND_CONCURRENT_KERNEL), DT_CF_SUCCESS);
    disable(DT_CF_KIND_CONCURRENT_KERNEL);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(kernels_through_the_kind_allowed))
