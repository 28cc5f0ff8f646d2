/*
 * HCCL and communication records are collectives on the device's rows:
 * name, communicator, data type, element count and bytes, linked to the
 * HCCL call that launched them and to its External id; in the trace as
 * Kineto writes NCCL's kernels ("kernel" with "Collective name", "In msg
 * nelems", "dtype", "Process Group Name"), in `devtrace stats` as a table of
 * their own, accepted by `devtrace check`, in Perfetto's format too. A
 * release before communication records reports HCCL records (bandwidth, no
 * correlation), which need libmspti.so preloaded.
 */
#include <math.h>

#include "mspti_test.h"

static void collective(int device, int stream, const char *name, uint64_t count, uint64_t duration)
{
    emu_collective_desc d = {.device = device, .stream = stream, .name = name, .group = "hccl_world_group",
                             .algorithm = "RING", .data_type = 4 /* fp32 */, .count = count,
                             .duration_ns = duration};
    REQUIRE_EQ(EMU(emu_collective)(&d), 0);
}

static void communication_records(void)
{
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    EMU(emu_stats_reset)();
    REQUIRE_EQ(dt_external_push(77), DT_OK);
    for (int i = 0; i < 6; i++) collective(i % 2, 3, "hcom_allReduce_", 1024 * (uint64_t)(i + 1), 20000);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    collective(0, 4, "hcom_broadcast_", 10, 5000);
    REQUIRE_EQ(EMU(emu_synchronize)(-1, -1), 0);
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_COLLECTIVE], 7);
    CHECK_EQ(count_kind(s, DT_EVENT_COLLECTIVE), 7);
    CHECK_EQ(dt_session_loss_total(s), 0);
    size_t n = dt_session_event_count(s), checked = 0, linked_calls = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_RUNTIME && strcmp(ev.name, "HcclAllReduce") == 0) linked_calls++;
        if (ev.kind != DT_EVENT_COLLECTIVE) continue;
        checked++;
        CHECK_STR(ev.u.collective.group, "hccl_world_group");
        CHECK_STR(ev.u.collective.algorithm, "RING");
        CHECK_STR(ev.u.collective.data_type, "Float");
        CHECK_EQ(ev.u.collective.bytes, ev.u.collective.count * 4);
        CHECK_EQ(ev.stream, strcmp(ev.name, "hcom_broadcast_") == 0 ? 4 : 3);
        CHECK(ev.correlation > UINT32_MAX, "no 64-bit correlation");
        CHECK(ev.end_ns > ev.start_ns);
        if (strcmp(ev.name, "hcom_allReduce_") == 0) {
            CHECK(ev.has_external && ev.external_id == 77, "External id %d/%" PRIu64, ev.has_external,
                  ev.external_id);
            CHECK(ev.u.collective.count % 1024 == 0 && ev.u.collective.count <= 6144);
        } else {
            CHECK_STR(ev.name, "hcom_broadcast_");
            CHECK(!ev.has_external);
            CHECK_EQ(ev.u.collective.count, 10);
        }
    }
    CHECK_EQ(checked, 7);
    CHECK_EQ(linked_calls, 7); /* the emulator names every collective's call HcclAllReduce */

    char json[512], pf[512];
    snprintf(json, sizeof json, "%s/mspti-collectives.json", DT_BINARY_DIR);
    snprintf(pf, sizeof pf, "%s/mspti-collectives.pftrace", DT_BINARY_DIR);
    REQUIRE(dt_session_write(s, json, DT_FORMAT_JSON) == DT_OK, "%s", dt_last_error());
    REQUIRE(dt_session_write(s, pf, DT_FORMAT_PERFETTO) == DT_OK, "%s", dt_last_error());
    trace_counts t = read_trace_counts(json);
    CHECK_EQ(t.collective, 7);
    CHECK_EQ(t.kernel, 0);
    check_trace_file(json);
    file_contains(json, "\"Collective name\":\"hcom_allReduce_\",\"In msg nelems\":1024,\"dtype\":\"Float\","
                        "\"Process Group Name\":\"hccl_world_group\",\"algorithm\":\"RING\",\"bytes\":4096");
    pftrace_contains(pf, "Process Group Name");
    pftrace_contains(pf, "Collective name");
    pftrace_contains(pf, "hccl_world_group");

    /* devtrace stats: a table of their own, not among the kernels */
    char *out_text = stats_csv(json, "collectives,kernels");
    /* 6 all-reduces of 1..6 x 4 KiB, and one broadcast of 40 bytes */
    CHECK(strstr(out_text, "collectives,") && strstr(out_text, ",6,") && strstr(out_text, ",86016,") &&
              strstr(out_text, ",hcom_allReduce_\n"),
          "%s", out_text);
    CHECK(strstr(out_text, ",40,") && strstr(out_text, ",hcom_broadcast_\n"), "%s", out_text);
    CHECK(!strstr(out_text, "kernels,"), "collectives counted as kernels:\n%s", out_text);
    free(out_text);
    dt_session_destroy(s);
}

static void collectives_follow_kernel_capture(void)
{
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session_with(DT_CAPTURE_RUNTIME, 0, 0);
    EMU(emu_stats_reset)();
    collective(0, 0, "hcom_allReduce_", 8, 1000);
    REQUIRE_EQ(EMU(emu_synchronize)(-1, -1), 0);
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_COLLECTIVE], 0); /* not even asked for */
    CHECK_EQ(count_kind(s, DT_EVENT_COLLECTIVE), 0);
    CHECK(count_kind(s, DT_EVENT_RUNTIME) >= 1);
    dt_session_destroy(s);
}

static void hccl_records_of_late_2024(void)
{
    if (!preloaded_now()) rerun_preloaded(g_argv, EMULATOR_2024, "hccl_records_of_late_2024");
    unsetenv("LD_PRELOAD");
    open_emulator(EMULATOR_2024);
    dt_session *s = start_session();
    collective(1, 2, "hcom_allGather_", 2048, 4096);
    REQUIRE_EQ(EMU(emu_synchronize)(-1, -1), 0);
    stop_session(s);
    CHECK_EQ(count_kind(s, DT_EVENT_COLLECTIVE), 1);
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_COLLECTIVE) continue;
        CHECK_STR(ev.name, "hcom_allGather_");
        CHECK_STR(ev.u.collective.group, "hccl_world_group");
        /* HCCL records give a bandwidth, not a count or type */
        CHECK_EQ(ev.u.collective.count, 0);
        CHECK_STR(ev.u.collective.data_type, "");
        CHECK_EQ(ev.correlation, 0);
        double expected = 2048.0 * 4 / (double)(ev.end_ns - ev.start_ns);
        CHECK(fabs(ev.u.collective.bandwidth_gbps - expected) < 0.01 * expected, "bandwidth %f, expected %f",
              ev.u.collective.bandwidth_gbps, expected);
        CHECK_EQ(ev.device, 1);
        CHECK_EQ(ev.stream, 2);
    }
    char json[512];
    snprintf(json, sizeof json, "%s/mspti-hccl.json", DT_BINARY_DIR);
    REQUIRE(dt_session_write(s, json, DT_FORMAT_JSON) == DT_OK, "%s", dt_last_error());
    check_trace_file(json);
    file_contains(json, "\"bandwidth (GB/s)\":");
    dt_session_destroy(s);
}

MSPTI_TEST_MAIN(DT_TEST(communication_records), DT_TEST(collectives_follow_kernel_capture),
                DT_TEST(hccl_records_of_late_2024))
