/*
 * MSPTI records HCCL, memory, memset and memcpy activity only when
 * libmspti.so is in LD_PRELOAD from the start of the process (it interposes
 * CANN's runtime); otherwise enabling those kinds fails with
 * MSPTI_ERROR_WITHOUT_LD_PRELOAD. A session says which kinds it could not
 * enable and why, and so does the backend's probe before any session;
 * `devtrace record` preloads the library itself and says so.
 */
#include <sys/wait.h>

#include "backends/mspti_abi.h"
#include "mspti_test.h"

static void workload(void)
{
    const int g[3] = {1, 1, 1}, b[3] = {64, 1, 1};
    for (int i = 0; i < 5; i++) REQUIRE_EQ(EMU(emu_memcpy)(0, 0, EMU_COPY_HTOD, 4096, 1000, 1), 0);
    for (int i = 0; i < 3; i++) REQUIRE_EQ(EMU(emu_memset)(0, 1, 1 << 20, 0, 500, 1), 0);
    for (int i = 0; i < 2; i++) REQUIRE_EQ(EMU(emu_launch_kernel)(1, 0, "k", g, b, 100), 0);
    REQUIRE_EQ(EMU(emu_synchronize)(-1, -1), 0);
}

static void without_preload_the_trace_says_why(void)
{
    REQUIRE(!preloaded_now(), "this case runs without LD_PRELOAD");
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    workload();
    stop_session(s);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMCPY), 0);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMSET), 0);
    CHECK_EQ(count_kind(s, DT_EVENT_KERNEL), 2);
    const char *why = note_text(s, "kinds");
    REQUIRE(why != NULL, "no note about the kinds");
    CHECK(strstr(why, "memory copies, memsets, memory allocations not recorded"), "%s", why);
    CHECK(strstr(why, "MSPTI_ERROR_WITHOUT_LD_PRELOAD (6)"), "%s", why);
    CHECK(strstr(why, "LD_PRELOAD=" DT_EMULATOR), "the note does not say what to preload: %s", why);
    CHECK_EQ(dt_session_loss_total(s), 0);
    /* before any session, the probe says it in the note's words */
    dt_backend_status st;
    REQUIRE_EQ(dt_backend_probe("mspti", &st), DT_OK);
    CHECK_EQ(st.available, 1);
    CHECK(strstr(st.reason, "memory copies, memsets, memory allocations (and collectives where the release has only "
                      "HCCL records) not recorded: "),
          "the probe does not say which kinds: %s", st.reason);
    const char *advice = strstr(why, "libmspti.so must be in LD_PRELOAD");
    REQUIRE(advice != NULL, "%s", why);
    CHECK(strstr(st.reason, advice), "the probe (%s) and the note (%s) say it differently", st.reason, why);
    dt_session_destroy(s);
    /* what counts is the environment the process started with */
    REQUIRE_EQ(setenv("LD_PRELOAD", DT_EMULATOR, 1), 0);
    msptiResult (*enable)(msptiActivityKind) = (msptiResult(*)(msptiActivityKind))sym("msptiActivityEnable");
    CHECK_EQ(enable(MSPTI_ACTIVITY_KIND_MEMCPY), MSPTI_ERROR_WITHOUT_LD_PRELOAD);
    CHECK_EQ(enable(MSPTI_ACTIVITY_KIND_HCCL), MSPTI_ERROR_WITHOUT_LD_PRELOAD);
    CHECK_EQ(enable(MSPTI_ACTIVITY_KIND_COMMUNICATION), MSPTI_SUCCESS);
    unsetenv("LD_PRELOAD");
}

static void preloaded_everything_is_recorded(void)
{
    if (!preloaded_now()) rerun_preloaded(g_argv, DT_EMULATOR, "preloaded_everything_is_recorded");
    unsetenv("LD_PRELOAD");
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    EMU(emu_stats_reset)();
    workload();
    stop_session(s);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMCPY), 5);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMSET), 3);
    CHECK(note_text(s, "kinds") == NULL, "%s", note_text(s, "kinds"));
    dt_backend_status st;
    REQUIRE_EQ(dt_backend_probe("mspti", &st), DT_OK);
    CHECK(strstr(st.reason, "LD_PRELOAD") == NULL, "preloaded, yet the probe says: %s", st.reason);
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_MEMCPY) {
            CHECK_EQ(ev.u.memcpy.bytes, 4096);
            CHECK_EQ(ev.u.memcpy.copy_kind, DT_COPY_HTOD);
            CHECK(ev.correlation > UINT32_MAX, "correlation %" PRIu64 " lost its high bits", ev.correlation);
        } else if (ev.kind == DT_EVENT_MEMSET) {
            CHECK_EQ(ev.u.memset.bytes, 1 << 20);
            CHECK_EQ(ev.stream, 1);
        } else if (ev.kind == DT_EVENT_RUNTIME) {
            CHECK(strncmp(ev.name, "aclrt", 5) == 0, "API name %s", ev.name);
        }
    }
    dt_session_destroy(s);
}

/* The program `devtrace record` runs below: no session of its own (the
   injection library records it). */
static void child_workload(void)
{
    open_emulator(getenv("DEVTRACE_MSPTI_LIBRARY"));
    workload();
}

static void record_preloads_the_library(void)
{
    char dir[] = "/tmp/devtrace-mspti-XXXXXX";
    REQUIRE(mkdtemp(dir), "mkdtemp");
    char cmd[4096], trace[512], log[512];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(log, sizeof log, "%s/record.log", dir);
    snprintf(cmd, sizeof cmd,
             "DEVTRACE_MSPTI_LIBRARY='%s' '%s/devtrace' record --backend mspti -o '%s' -- '%s' child_workload "
             ">'%s' 2>&1",
             DT_EMULATOR, DT_BINARY_DIR, trace, g_argv[0], log);
    int rc = system(cmd);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "devtrace record exited %d", rc);
    char text[8192] = "";
    FILE *f = fopen(log, "r");
    REQUIRE(f, "no log");
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
    CHECK(strstr(text, "devtrace: preloading " DT_EMULATOR), "devtrace record does not say it preloads:\n%s", text);
    trace_counts t = read_trace_counts(trace);
    CHECK_EQ(t.memcpy, 5);
    CHECK_EQ(t.memset, 3);
    CHECK_EQ(t.kernel, 2);
    check_trace_file(trace);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
}

int main(int argc, char **argv)
{
    g_argv = argv;
    if (argc > 1 && strcmp(argv[1], "child_workload") == 0) {
        child_workload();
        return dt_check_failures != 0;
    }
    static const dt_test tests[] = {DT_TEST(without_preload_the_trace_says_why),
                                    DT_TEST(preloaded_everything_is_recorded),
                                    DT_TEST(record_preloads_the_library)};
    return run_each_in_own_process(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
