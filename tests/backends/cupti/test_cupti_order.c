/*
 * The CUPTI backend's order against the library's lock and the program's
 * threads, on the CUPTI emulator:
 * - no dropped-record query while holding a lock the completion callback
 *   takes (CUPTI's query takes the lock under which it delivers buffers;
 *   the emulator makes every query meet a completion in progress and counts
 *   the one that could not proceed);
 * - CUPTI detached only once no external-correlation call of another thread
 *   is inside the library, never on a thread capturing a graph, and across
 *   sessions that attach and detach while several threads launch.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include "devtrace_emu.h"
#include "cupti_emu_session.h"

static void *g_emu;
static struct {
    int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*synchronize)(int, int);
    int (*stream_capture)(int);
    int (*hold_external_calls)(int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
} emu;

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void)
{
    g_emu = cupti_emu_open();
    if (!g_emu) return 0;
    *(void **)&emu.launch_kernel = dlsym(g_emu, "emu_launch_kernel");
    *(void **)&emu.synchronize = dlsym(g_emu, "emu_synchronize");
    *(void **)&emu.stream_capture = dlsym(g_emu, "emu_stream_capture");
    *(void **)&emu.hold_external_calls = dlsym(g_emu, "emu_hold_external_calls");
    *(void **)&emu.stats_get = dlsym(g_emu, "emu_stats_get");
    *(void **)&emu.stats_reset = dlsym(g_emu, "emu_stats_reset");
    return 0;
}

#define REQUIRE_EMU()                                                           \
    do {                                                                        \
        if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path); \
    } while (0)

static emu_stats stats(void)
{
    emu_stats st;
    emu.stats_get(&st);
    return st;
}

/* Every dropped-record query meets a buffer completion in progress on the
   library's thread, which takes devtrace's decode lock: a query made while
   holding it would deadlock CUPTI (here: a 1 s stall, counted). A session
   and a flight recorder's, each stopped with records still in the library. */
static void test_dropped_query_outside_locks(void)
{
    REQUIRE_EMU();
    setenv("DEVTRACE_EMU_DROPPED_QUERY", "contended", 1);
    for (int flight = 0; flight < 2; flight++) {
        dt_config c;
        dt_config_init(&c);
        c.backend = "cupti";
        c.calibration_period_ms = 0;
        if (flight) c.flight_recorder_bytes = 8u << 20;
        dt_session *s = NULL;
        REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
        REQUIRE_EQ(dt_session_start(s), DT_OK);
        emu.stats_reset();
        for (int i = 0; i < 20; i++) REQUIRE_EQ(emu.launch_kernel(0, i % 2, "k", grid, block, 1000), 0);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        emu_stats st = stats();
        CHECK_EQ(st.lock_order_stalls, 0);
        if (!flight) CHECK_EQ(dt_session_loss_total(s), 0);
        dt_session_destroy(s);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0); /* detaches CUPTI */
    }
    unsetenv("DEVTRACE_EMU_DROPPED_QUERY");
}

/* A thread's external-correlation push is inside the library (held there
   by the emulator) as the session stops: the stop does not wait for it,
   and CUPTI is not detached until it has left, however many
   synchronisations come meanwhile. */
static _Atomic int g_pushed;

static void *push_range(void *arg)
{
    (void)arg;
    uint64_t id;
    dt_range_push("held", &id);
    atomic_store(&g_pushed, 1);
    dt_range_pop();
    return NULL;
}

static void test_finalize_waits_for_external_calls(void)
{
    REQUIRE_EMU();
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(emu.launch_kernel(0, 0, "k", grid, block, 1000), 0);
    emu.stats_reset();
    REQUIRE_EQ(emu.hold_external_calls(1), 0);
    pthread_t t;
    REQUIRE_EQ(pthread_create(&t, NULL, push_range, NULL), 0);
    for (int i = 0; stats().external_calls_inside == 0; i++) {
        if (i == 5000) FAIL("the push never reached the library");
        usleep(1000);
    }
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    for (int i = 0; i < 3; i++) REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    emu_stats st = stats();
    CHECK_EQ(st.finalize_during_external_call, 0);
    CHECK_EQ(st.finalized, 0);
    REQUIRE_EQ(emu.hold_external_calls(0), 0);
    pthread_join(t, NULL);
    REQUIRE(atomic_load(&g_pushed));
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    st = stats();
    CHECK_EQ(st.finalized, 1);
    CHECK_EQ(st.finalize_during_external_call, 0);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* A thread captures a graph as the session stops, and its calls are the
   only ones made: CUPTI is not detached inside the capture (its
   synchronisations fail there, as CUDA's do), but at the first
   synchronisation after it. */
static _Atomic int g_capture_stop, g_capture_calls;

static void *capture_thread(void *arg)
{
    (void)arg;
    emu.stream_capture(1);
    while (!atomic_load(&g_capture_stop)) {
        emu.launch_kernel(0, 3, "captured", grid, block, 100);
        if (emu.synchronize(0, 3) != EMU_ECAPTURE) atomic_store(&g_capture_stop, 2);
        atomic_fetch_add(&g_capture_calls, 1);
    }
    emu.stream_capture(0);
    return NULL;
}

static void test_finalize_not_in_capture(void)
{
    REQUIRE_EMU();
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(emu.launch_kernel(0, 0, "k", grid, block, 1000), 0);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    pthread_t t;
    atomic_store(&g_capture_stop, 0);
    REQUIRE_EQ(pthread_create(&t, NULL, capture_thread, NULL), 0);
    while (atomic_load(&g_capture_calls) < 10) usleep(100);
    emu.stats_reset();
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    int after = atomic_load(&g_capture_calls);
    while (atomic_load(&g_capture_calls) < after + 20) usleep(100);
    emu_stats st = stats();
    CHECK_EQ(st.finalize_in_capture, 0);
    CHECK_EQ(st.finalized, 0);
    atomic_store(&g_capture_stop, 1);
    pthread_join(t, NULL);
    REQUIRE(atomic_load(&g_capture_stop) == 1); /* every synchronisation in the capture refused */
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    st = stats();
    CHECK_EQ(st.finalized, 1);
    CHECK_EQ(st.finalize_in_capture, 0);
    dt_session_destroy(s);
}

/* One session started and stopped again and again (as on-demand captures
   arm and disarm theirs) while four threads launch inside ranges of their
   own and synchronise now and then, one of them inside a graph capture
   part of the time: no finalize while an external-correlation call is
   inside the library or inside a capture, none refused, and every start
   and stop succeeds. */
#define LAUNCHERS 4
static _Atomic int g_launchers_stop;

static void *launcher(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; !atomic_load(&g_launchers_stop); i++) {
        int capture = id == 0 && (i / 50) % 2 == 1;
        if (i % 50 == 0) emu.stream_capture(capture);
        uint64_t range;
        dt_range_push("step", &range);
        emu.launch_kernel(0, id, "work", grid, block, 200);
        dt_range_pop();
        if (i % 7 == 0) emu.synchronize(0, id);
    }
    emu.stream_capture(0);
    return NULL;
}

static void test_sessions_across_launching_threads(void)
{
    REQUIRE_EMU();
    emu.stats_reset();
    atomic_store(&g_launchers_stop, 0);
    pthread_t t[LAUNCHERS];
    for (int i = 0; i < LAUNCHERS; i++)
        REQUIRE_EQ(pthread_create(&t[i], NULL, launcher, (void *)(intptr_t)i), 0);
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    for (int cycle = 0; cycle < 40; cycle++) {
        if (cycle) REQUIRE_EQ(dt_session_start(s), DT_OK);
        usleep(3000);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        usleep(2000);
    }
    atomic_store(&g_launchers_stop, 1);
    for (int i = 0; i < LAUNCHERS; i++) pthread_join(t[i], NULL);
    dt_session_destroy(s);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    emu_stats st = stats();
    CHECK_EQ(st.finalize_during_external_call, 0);
    CHECK_EQ(st.finalize_in_capture, 0);
    CHECK_EQ(st.finalize_refused, 0);
    CHECK(st.finalized >= 1, "CUPTI was never detached");
    CHECK_EQ(st.subscribers, 0);
    CHECK_EQ(st.kinds_enabled, 0);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_dropped_query_outside_locks),
             DT_TEST(test_finalize_waits_for_external_calls),
             DT_TEST(test_finalize_not_in_capture),
             DT_TEST(test_sessions_across_launching_threads))

#else
#include "cupti_test_util.h"
#endif
