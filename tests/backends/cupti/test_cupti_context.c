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
#include "devtrace_emu.h"

static char g_lib[1024];
static void *g_emu;
static int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
static int (*synchronize)(int, int);

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void)
{
    snprintf(g_lib, sizeof g_lib, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    setenv("DEVTRACE_CUPTI_LIBRARY", g_lib, 1);
    setenv("DEVTRACE_EMU_BEFORE_CONTEXT", "refused", 1);
    unsetenv("DEVTRACE_EMU_FAIL");
    g_emu = dlopen(g_lib, RTLD_NOW | RTLD_LOCAL);
    if (!g_emu) return 0;
    *(void **)&launch_kernel = dlsym(g_emu, "emu_launch_kernel");
    *(void **)&synchronize = dlsym(g_emu, "emu_synchronize");
    return 0;
}

static dt_session *start_session(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    if (st != DT_OK) printf("start: %s\n", dt_last_error());
    REQUIRE_EQ(st, DT_OK);
    return s;
}

/* The text of the session's notes under key, one per line ("" if none). */
static const char *notes(const dt_session *s, const char *key)
{
    static char text[4096];
    text[0] = '\0';
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s\n", s->notes[i].text);
    return text;
}

/* Kernels on both devices; the session's runtime rows by name. */
static void launch_and_count(dt_session *s, size_t *launches, size_t *configurations)
{
    for (int i = 0; i < 3; i++) REQUIRE_EQ(launch_kernel(i % 2, 0, "k", grid, block, 100), 0);
    REQUIRE_EQ(synchronize(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    *launches = *configurations = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_RUNTIME) continue;
        *launches += strcmp(ev.name, "__cudaLaunchKernel") == 0;
        *configurations += strncmp(ev.name, "__cuda", 6) == 0 && strstr(ev.name, "CallConfiguration") != NULL;
    }
}

#define REQUIRE_EMU()                                                     \
    do {                                                                  \
        if (!g_emu) SKIP("the CUPTI emulator %s was not built", g_lib); \
    } while (0)

/* First, in a fresh process: no context yet. A session during which none
   is created says the calls were refused and not made again. */
static void test_no_context_while_recording(void)
{
    REQUIRE_EMU();
    dt_session *s = start_session();
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    const char *text = notes(s, "context_retry");
    printf("%s", text);
    CHECK_STR(text, "cuptiActivityEnableAndDump (the device descriptions) returned CUPTI_ERROR_NOT_INITIALIZED "
                    "(15) as the session started; no device context was created while it recorded: devices are "
                    "described by the driver at stop only; cuptiActivityEnableRuntimeApi (the runtime filter) "
                    "returned CUPTI_ERROR_NOT_INITIALIZED (15) as the session started; no device context was "
                    "created while it recorded: call-configuration calls are recorded\n");
    CHECK_EQ(notes(s, "kinds")[0], '\0');
    CHECK_EQ(notes(s, "quiet_runtime_calls")[0], '\0');
    dt_session_destroy(s);
}

/* Still no context: the session's first call creates one, whose resource
   callback makes both calls again; every launch's call-configuration pair
   is filtered, the devices are described, and the trace says so. */
static void test_made_again_at_first_context(void)
{
    REQUIRE_EMU();
    dt_session *s = start_session();
    size_t launches, configurations;
    launch_and_count(s, &launches, &configurations);
    CHECK_EQ(launches, 3);
    CHECK_EQ(configurations, 0);
    CHECK(s->devices[0].valid && s->devices[1].valid, "devices described: %d %d", s->devices[0].valid,
          s->devices[1].valid);
    CHECK_EQ(s->devices[1].num_sms, 132);
    const char *text = notes(s, "context_retry");
    printf("%s", text);
    CHECK_STR(text, "cuptiActivityEnableAndDump (the device descriptions) returned CUPTI_ERROR_NOT_INITIALIZED "
                    "(15) as the session started; made again when a device context was created: accepted; "
                    "cuptiActivityEnableRuntimeApi (the runtime filter) returned CUPTI_ERROR_NOT_INITIALIZED (15) "
                    "as the session started; made again when a device context was created: accepted\n");
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* The other order: contexts exist when the session starts; the calls are
   accepted there and then, and nothing is noted. */
static void test_accepted_once_a_context_exists(void)
{
    REQUIRE_EMU();
    dt_session *s = start_session();
    size_t launches, configurations;
    launch_and_count(s, &launches, &configurations);
    CHECK_EQ(launches, 3);
    CHECK_EQ(configurations, 0);
    CHECK(s->devices[0].valid && s->devices[1].valid, "devices described");
    CHECK_EQ(notes(s, "context_retry")[0], '\0');
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_no_context_while_recording),
             DT_TEST(test_made_again_at_first_context),
             DT_TEST(test_accepted_once_a_context_exists))

#else
#include "cupti_test_util.h"
#endif
