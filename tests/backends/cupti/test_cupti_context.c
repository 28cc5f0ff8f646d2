/*
 * Calls CUPTI may refuse before the process has a CUDA context (as
 * InitializeInjection runs, while the driver initialises): enabling device
 * descriptions with cuptiActivityEnableAndDump and the runtime filter of
 * the launches' call-configuration calls. On the CUPTI emulator with
 * DEVTRACE_EMU_BEFORE_CONTEXT=refused, in a fresh process, both orders:
 * - a session started before any context: the calls are refused, made
 *   again when the first context is created (the resource callback), and
 *   the trace says so; a session during which no context is created says
 *   that they were not made again;
 * - a session started once a context exists: accepted at once, no note.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include "cupti_emu_session.h"
#include "devtrace_emu.h"

static void *g_emu;
static int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
static int (*synchronize)(int, int);

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void)
{
    setenv("DEVTRACE_EMU_BEFORE_CONTEXT", "refused", 1);
    g_emu = cupti_emu_open();
    if (!g_emu) return 0;
    *(void **)&launch_kernel = dlsym(g_emu, "emu_launch_kernel");
    *(void **)&synchronize = dlsym(g_emu, "emu_synchronize");
    return 0;
}

#define REQUIRE_EMU()                                                                 \
    do {                                                                              \
        if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path);      \
    } while (0)

/* A session with kernels on both devices: every launch recorded, none of
   the call-configuration calls (filtered), both devices described,
   nothing lost, and the note `context_retry` as expected. */
static void record_kernels(const char *expected_note)
{
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    for (int i = 0; i < 3; i++) REQUIRE_EQ(launch_kernel(i % 2, 0, "k", grid, block, 100), 0);
    REQUIRE_EQ(synchronize(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    size_t launches = 0, configurations = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_RUNTIME) continue;
        launches += strcmp(ev.name, "__cudaLaunchKernel") == 0;
        configurations += strstr(ev.name, "CallConfiguration") != NULL;
    }
    CHECK_EQ(launches, 3);
    CHECK_EQ(configurations, 0);
    CHECK(s->devices[0].valid && s->devices[1].valid, "devices described: %d %d", s->devices[0].valid,
          s->devices[1].valid);
    CHECK_EQ(s->devices[1].num_sms, 132);
    CHECK_STR(cupti_note(s, "context_retry"), expected_note);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* First, in a fresh process: no context yet. A session during which none
   is created says the calls were refused and not made again. */
static void test_no_context_while_recording(void)
{
    REQUIRE_EMU();
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    CHECK_STR(cupti_note(s, "context_retry"), "cuptiActivityEnableAndDump (the device descriptions) returned CUPTI_ERROR_NOT_INITIALIZED "
                    "(15) as the session started; no device context was created while it recorded: devices are "
                    "described by the driver at stop only; cuptiActivityEnableRuntimeApi (the runtime filter) "
                    "returned CUPTI_ERROR_NOT_INITIALIZED (15) as the session started; no device context was "
                    "created while it recorded: call-configuration calls are recorded");
    CHECK_STR(cupti_note(s, "kinds"), "");
    CHECK_STR(cupti_note(s, "quiet_runtime_calls"), "");
    dt_session_destroy(s);
}

/* Still no context: the session's first call creates one, whose resource
   callback makes both calls again; every launch's call-configuration pair
   is filtered, the devices are described, and the trace says so. */
static void test_made_again_at_first_context(void)
{
    REQUIRE_EMU();
    record_kernels("cuptiActivityEnableAndDump (the device descriptions) returned CUPTI_ERROR_NOT_INITIALIZED (15) "
                   "as the session started; made again when a device context was created: accepted; "
                   "cuptiActivityEnableRuntimeApi (the runtime filter) returned CUPTI_ERROR_NOT_INITIALIZED (15) as "
                   "the session started; made again when a device context was created: accepted");
}

/* The other order: contexts exist when the session starts; the calls are
   accepted there and then, and nothing is noted. */
static void test_accepted_once_a_context_exists(void)
{
    REQUIRE_EMU();
    record_kernels("");
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_no_context_while_recording),
             DT_TEST(test_made_again_at_first_context),
             DT_TEST(test_accepted_once_a_context_exists))

#else
#include "cupti_test_util.h"
#endif
