/*
 * Two copies of libcupti in one process (devtrace's, and another client's,
 * such as the one torch's wheel brings): they do not share one interface,
 * so the trace says so, naming both; with one copy it says nothing. On
 * the CUPTI emulator and a copy of it under another name.
 */
#include <dlfcn.h>
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

static int setup(void)
{
    g_emu = cupti_emu_open();
    return 0;
}

static void stop_and_destroy(dt_session *s)
{
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
    int (*sync)(int, int);
    *(void **)&sync = dlsym(g_emu, "emu_synchronize");
    REQUIRE_EQ(sync(-1, -1), 0); /* detaches CUPTI */
}

static void test_other_copy_noted(void)
{
    if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path);
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    CHECK_STR(cupti_note(s, "libraries"), "");
    stop_and_destroy(s);

    char dir[] = "/tmp/dt-cupti-copy-XXXXXX", copy[256], cmd[1536];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(copy, sizeof copy, "%s/libcupti.so.12", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", cupti_emu_path, copy);
    REQUIRE_EQ(system(cmd), 0);
    void *other = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(other != NULL);
    s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    const char *note = cupti_note(s, "libraries");
    CHECK(strstr(note, "two copies of libcupti in this process") != NULL && strstr(note, copy) != NULL,
          "note: [%s]", note);
    stop_and_destroy(s);
    unlink(copy);
    rmdir(dir);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_other_copy_noted))

#else
#include "cupti_test_util.h"
#endif
