/*
 * CUPTI's clock changes domain while a session records: another client of
 * the program (torch.profiler's Kineto) registers a timestamp callback of
 * its own (cuptiActivityRegisterTimestampCallback, a TSC: cycles since
 * boot rather than nanoseconds since the epoch), and never removes it. The
 * CUPTI emulator then gives every later timestamp in the callback's terms.
 * devtrace fits each domain to realtime apart: every kernel, before the
 * change and after it, lies where and as long as it ran, and the trace says
 * the clock changed. With the periodic calibration off (the new domain has
 * only the stop's readings) and on.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
    int (*register_timestamp)(uint64_t (*)(void));
} emu;

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void)
{
    g_emu = cupti_emu_open();
    if (!g_emu) return 0;
    *(void **)&emu.launch_kernel = dlsym(g_emu, "emu_launch_kernel");
    *(void **)&emu.synchronize = dlsym(g_emu, "emu_synchronize");
    *(void **)&emu.register_timestamp = dlsym(g_emu, "cuptiActivityRegisterTimestampCallback");
    return 0;
}

#define REQUIRE_EMU()                                                           \
    do {                                                                        \
        if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path); \
    } while (0)

/* Kineto's TSC callback counts cycles: here 2 (or 3) a nanosecond since
   boot. */
static uint64_t boot_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t ticks(void) { return boot_ns() * 2u; }
static uint64_t ticks3(void) { return boot_ns() * 3u; }

#define KERNELS 5
#define KERNEL_NS 400000u
/* launched when the device was idle: each begins at its launch */
static uint64_t g_launched[2 * KERNELS];

static void launch(int i, const char *name)
{
    g_launched[i] = dt__realtime_ns();
    REQUIRE_EQ(emu.launch_kernel(0, 0, name, grid, block, KERNEL_NS), 0);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
}

/* A session recording 5 kernels, then `change` registered (NULL: none),
   then 5 more: each kernel where and as long as it ran. */
static void check_session(uint32_t calibration_ms, uint64_t (*change)(void))
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.calibration_period_ms = calibration_ms;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    for (int i = 0; i < KERNELS; i++) launch(i, "before");
    if (calibration_ms) usleep(3 * calibration_ms * 1000);
    if (change) REQUIRE_EQ(emu.register_timestamp(change), 0);
    for (int i = KERNELS; i < 2 * KERNELS; i++) launch(i, "after");
    /* the last call ends well inside the window, beyond the mapping's error */
    usleep(calibration_ms ? 5 * calibration_ms * 1000 : 2000);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    int kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int k = kernels++;
        if (k >= 2 * KERNELS) break;
        int64_t late = (int64_t)ev.start_ns - (int64_t)g_launched[k];
        int64_t dur = (int64_t)(ev.end_ns - ev.start_ns);
        CHECK(late > -200000 && late < 2000000, "kernel %d (%s) starts %lld ns after its launch", k, ev.name,
              (long long)late);
        CHECK(dur > (int64_t)KERNEL_NS * 9 / 10 && dur < (int64_t)KERNEL_NS * 2, "kernel %d (%s) lasts %lld ns", k,
              ev.name, (long long)dur);
    }
    CHECK_EQ(kernels, 2 * KERNELS);
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        CHECK(dt_session_loss(s, (dt_loss_reason)r) == 0, "%" PRIu64 " lost as %s", dt_session_loss(s, (dt_loss_reason)r),
              dt_loss_reason_name((dt_loss_reason)r));
    CHECK(s->clock.error_bound_ns < 1000000, "clock error bound %" PRIu64 " ns", s->clock.error_bound_ns);
    if (!change)
        CHECK(strcmp(cupti_note(s, "clock_domains"), "") == 0, "one domain noted as two: %s",
              cupti_note(s, "clock_domains"));
    else
        CHECK(strstr(cupti_note(s, "clock_domains"), "2 domains were each fitted to realtime apart") != NULL,
              "no note: [%s]", cupti_note(s, "clock_domains"));
    dt_session_destroy(s);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0); /* detaches CUPTI */
}

/* First in the process: CUPTI's own clock (ns since the epoch) until a
   callback is registered mid-session; no periodic calibration, so the new
   domain has the stop's readings only. */
static void test_domain_change_without_calibration(void)
{
    REQUIRE_EMU();
    check_session(0, ticks);
}

/* One callback's domain, then another's (3 cycles a ns), with the periodic
   calibration on. */
static void test_domain_change_with_calibration(void)
{
    REQUIRE_EMU();
    REQUIRE_EQ(emu.register_timestamp(ticks), 0);
    check_session(20, ticks3);
}

/* The callback stays (Kineto never removes it): a later session reads one
   domain, the callback's, throughout, and is not told of a change. */
static void test_callback_domain_throughout(void)
{
    REQUIRE_EMU();
    REQUIRE_EQ(emu.register_timestamp(ticks3), 0);
    check_session(20, NULL);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_domain_change_without_calibration),
             DT_TEST(test_domain_change_with_calibration),
             DT_TEST(test_callback_domain_throughout))

#else
#include "cupti_test_util.h"
#endif
