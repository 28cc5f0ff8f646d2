/*
 * CNPAPI-specific behaviour the backend-neutral scenarios cannot see: the
 * library must be initialised before any activity call (devtrace does it,
 * and says so when it fails), CNCL calls are collectives linked to the
 * driver launch under them, BANG C launches keep their task dimensions as
 * the grid and have no blocks (which the trace notes), and peer copies are
 * read from their own records.
 *
 * The cases share the process-wide vendor interface and run in order: the
 * first sees the library before anything initialised it.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cnpapi_abi.h"
#include "devtrace_emu.h"

#include "dt_check.h"

static void *g_lib;

static void *sym(const char *name)
{
    void *p = dlsym(g_lib, name);
    REQUIRE(p != NULL, "the emulator lacks %s", name);
    return p;
}

static int setup(void)
{
    if (!DT_EMULATOR[0]) return 0;
    REQUIRE(setenv("DEVTRACE_CNPAPI_LIBRARY", DT_EMULATOR, 1) == 0, "setenv");
    g_lib = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_lib, "cannot load %s: %s", DT_EMULATOR, dlerror());
    int (*init)(void);
    *(void **)&init = sym("emu_init");
    REQUIRE(init() == 0, "emu_init");
    return 0;
}

#define REQUIRE_EMULATOR()                                          \
    do {                                                            \
        if (!g_lib) SKIP("the CNPAPI emulator was not built");      \
    } while (0)

static dt_session *start_session(dt_status *st)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cnpapi";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    *st = dt_session_start(s);
    return s;
}

/* Before cnpapiInit the library refuses activity calls; a failing init is
   a clear error naming the call, not a session that records nothing. */
static void init_comes_first(void)
{
    REQUIRE_EMULATOR();
    cnpapiResult (*enable)(cnpapiActivityType);
    *(void **)&enable = sym("cnpapiActivityEnable");
    REQUIRE_EQ(enable(CNPAPI_ACTIVITY_TYPE_KERNEL), CNPAPI_ERROR_NOT_INITIALIZED);

    REQUIRE(setenv("DEVTRACE_EMU_FAIL", "no_driver", 1) == 0, "setenv");
    dt_status st;
    dt_session *s = start_session(&st);
    CHECK_EQ(st, DT_ERR_BACKEND_UNAVAILABLE);
    CHECK(strstr(dt_last_error(), "cnpapiInit") != NULL, "message: %s", dt_last_error());
    dt_session_destroy(s);
    REQUIRE(unsetenv("DEVTRACE_EMU_FAIL") == 0, "unsetenv");

    s = start_session(&st);
    REQUIRE_EQ(st, DT_OK);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    dt_session_destroy(s);
    /* devtrace initialised the library for the program too */
    CHECK_EQ(enable(CNPAPI_ACTIVITY_TYPE_MEMSET), CNPAPI_SUCCESS);
    CHECK_EQ(((cnpapiResult(*)(cnpapiActivityType))sym("cnpapiActivityDisable"))(CNPAPI_ACTIVITY_TYPE_MEMSET),
             CNPAPI_SUCCESS);
}

static void collectives_kernels_and_peer_copies(void)
{
    REQUIRE_EMULATOR();
    dt_status st;
    dt_session *s = start_session(&st);
    REQUIRE_EQ(st, DT_OK);
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*collective)(const emu_collective_desc *);
    int (*copy)(int, int, int, uint64_t, int, uint64_t);
    int (*sync)(int, int);
    *(void **)&launch = sym("emu_launch_kernel");
    *(void **)&collective = sym("emu_collective");
    *(void **)&copy = sym("emu_memcpy");
    *(void **)&sync = sym("emu_synchronize");
    const int g[3] = {4, 2, 1}, b[3] = {1, 1, 1};
    REQUIRE_EQ(launch(0, 1, "bang_add", g, b, 2000), 0);
    emu_collective_desc c = {.device = 0, .stream = 2, .name = "allreduce", .count = 1024,
                             .duration_ns = 5000};
    REQUIRE_EQ(collective(&c), 0);
    REQUIRE_EQ(copy(0, 1, EMU_COPY_PTOP, 4096, 1000, 0), 0);
    REQUIRE_EQ(sync(-1, -1), 0);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());

    int kernels = 0, collectives = 0, peers = 0;
    uint64_t coll_corr = 0;
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        REQUIRE(dt_session_event(s, i, &ev) == DT_OK);
        if (ev.kind == DT_EVENT_KERNEL) {
            kernels++;
            CHECK_STR(ev.name, "bang_add");
            CHECK_EQ(ev.u.kernel.grid[0], 4);
            CHECK_EQ(ev.u.kernel.grid[1], 2);
            CHECK_EQ(ev.u.kernel.block[0], 0); /* BANG C has no blocks */
            CHECK_EQ(ev.stream, 1);
        } else if (ev.kind == DT_EVENT_COLLECTIVE) {
            collectives++;
            CHECK_STR(ev.name, "cnclAllReduce");
            CHECK_EQ(ev.end_ns - ev.start_ns >= 4900 && ev.end_ns - ev.start_ns <= 5100, 1);
            coll_corr = ev.correlation;
        } else if (ev.kind == DT_EVENT_MEMCPY && ev.u.memcpy.copy_kind == DT_COPY_PTOP) {
            peers++;
            CHECK_EQ(ev.u.memcpy.bytes, 4096);
            /* the emulator's peer copies stay on their device */
            CHECK_EQ(ev.u.memcpy.src_device, 0);
            CHECK_EQ(ev.u.memcpy.dst_device, 0);
        }
    }
    CHECK_EQ(kernels, 1);
    CHECK_EQ(collectives, 1);
    CHECK_EQ(peers, 1);
    /* the collective pairs with the driver launch CNCL made */
    int launched_by = 0;
    for (size_t i = 0; i < n && coll_corr; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_DRIVER && ev.correlation == coll_corr) {
            launched_by++;
            CHECK_STR(ev.name, "cnInvokeKernel");
        }
    }
    CHECK_EQ(launched_by, 1);
    const char *key, *text;
    int noted = 0;
    for (size_t i = 0; dt_session_note_at(s, i, &key, &text); i++)
        noted += strcmp(key, "launch_configuration") == 0 && strstr(text, "no block dimensions") != NULL;
    CHECK_EQ(noted, 1);
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL, DT_TEST(init_comes_first), DT_TEST(collectives_kernels_and_peer_copies))
