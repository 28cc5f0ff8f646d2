/*
 * Graph launches in a process's later sessions: CUPTI before CUDA 13.1
 * Update 1 gives cudaGraphLaunch wrong correlation ids in profiling
 * sessions after the first, and devtrace arms CUPTI anew for every
 * session. On the CUPTI emulator (the API version of the CUDA 13.0
 * headers), in a fresh process: the first session's graph launches are
 * not noted; the second's are counted in the note `graph_launches`.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_version.h>

#include "backends/cupti_family_abi.h"
#include "cupti_emu_session.h"
#include "devtrace_emu.h"

static void *g_emu;
static int (*graph_launch)(int, int, int, uint64_t);
static int (*synchronize)(int, int);

static int setup(void)
{
    g_emu = cupti_emu_open();
    if (!g_emu) return 0;
    *(void **)&graph_launch = dlsym(g_emu, "emu_graph_launch");
    *(void **)&synchronize = dlsym(g_emu, "emu_synchronize");
    return 0;
}

static void test_later_sessions_noted(void)
{
    if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path);
    REQUIRE(CUPTI_API_VERSION < DT_CF_API_GRAPH_IDS_FIXED);
    for (int session = 1; session <= 3; session++) {
        dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
        /* the third session launches none: nothing to note */
        int graphs = session == 3 ? 0 : 2;
        for (int g = 0; g < graphs; g++) REQUIRE_EQ(graph_launch(0, g, 3, 1000), 0);
        REQUIRE_EQ(synchronize(-1, -1), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        size_t kernels = 0, launches = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            kernels += ev.kind == DT_EVENT_KERNEL;
            launches += ev.kind == DT_EVENT_RUNTIME && ev.u.api.launch && strcmp(ev.name, "cudaGraphLaunch") == 0;
        }
        CHECK_EQ(kernels, (size_t)graphs * 3);
        CHECK_EQ(launches, (size_t)graphs);
        const char *text = cupti_note(s, "graph_launches");
        printf("session %d: [%s]\n", session, text);
        if (session == 2) {
            char want[512];
            snprintf(want, sizeof want, "2 runtime and 0 driver graph launch calls in the process's session 2: "
                     "NVIDIA CUDA (CUPTI) API version %u (older than %u) gives graph launches wrong correlation ids "
                     "in sessions after the first, so their flows and External ids cannot be trusted",
                     (unsigned)CUPTI_API_VERSION, (unsigned)DT_CF_API_GRAPH_IDS_FIXED);
            CHECK_STR(text, want);
        } else {
            CHECK_STR(text, "");
        }
        CHECK_EQ(dt_session_loss_total(s), 0);
        dt_session_destroy(s);
    }
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_later_sessions_noted))

#else
#include "cupti_test_util.h"
#endif
