/*
 * MSPTI's memory records (aclrtMalloc, aclrtFree, aclrtMallocHost) are
 * device memory events: exact counts, sizes, addresses, kinds and the
 * call's correlation id; in the trace as torch.profiler writes its
 * [memory] instants, with a running total per device; in `devtrace stats`
 * (allocations, frees, peak per device), accepted by `devtrace check`, in
 * Perfetto's format too. The kind needs libmspti.so preloaded, follows the
 * memory capture bit, and is not in the late-2024 release.
 */
#include "mspti_test.h"

static uint64_t alloc_on(int device, int memory, uint64_t bytes)
{
    uint64_t address = 0;
    REQUIRE_EQ(EMU(emu_malloc)(device, memory, bytes, &address), 0);
    REQUIRE(address != 0);
    return address;
}

static void memory_records(void)
{
    if (!preloaded_now()) rerun_preloaded(g_argv, DT_EMULATOR, "memory_records");
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    EMU(emu_stats_reset)();
    REQUIRE_EQ(dt_external_push(5), DT_OK);
    uint64_t a = alloc_on(0, 3, 4096);
    uint64_t b = alloc_on(0, 3, 1 << 20);
    uint64_t c = alloc_on(0, 3, 1 << 16);
    uint64_t pinned = alloc_on(1, 2, 8192);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(EMU(emu_free)(b), 0);
    REQUIRE_EQ(EMU(emu_free)(c), 0);
    REQUIRE_EQ(EMU(emu_free)(pinned), 0);
    CHECK_EQ(EMU(emu_free)(pinned), -1); /* twice: refused, no record */
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_MEMORY], 7);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMORY), 7);
    CHECK_EQ(dt_session_loss_total(s), 0);
    size_t n = dt_session_event_count(s), allocs = 0, frees = 0, pinned_seen = 0, mallocs = 0, free_calls = 0;
    uint64_t allocated = 0, freed = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_RUNTIME) {
            mallocs += strcmp(ev.name, "aclrtMalloc") == 0;
            free_calls += strcmp(ev.name, "aclrtFree") == 0;
        }
        if (ev.kind != DT_EVENT_MEMORY) continue;
        CHECK_STR(ev.name, "[memory]");
        CHECK_EQ(ev.start_ns, ev.end_ns);
        CHECK(ev.correlation > UINT32_MAX, "no 64-bit correlation");
        CHECK_EQ(ev.stream, 0); /* a call on no stream */
        CHECK(ev.u.memory.address == a || ev.u.memory.address == b || ev.u.memory.address == c ||
              ev.u.memory.address == pinned, "address %" PRIx64, ev.u.memory.address);
        if (ev.u.memory.address == pinned) {
            pinned_seen++;
            CHECK_EQ(ev.u.memory.memory_kind, DT_MEM_PINNED);
            CHECK_EQ(ev.device, 1);
        } else {
            CHECK_EQ(ev.u.memory.memory_kind, DT_MEM_DEVICE);
            CHECK_EQ(ev.device, 0);
        }
        if (ev.u.memory.is_free) {
            frees++;
            freed += ev.u.memory.bytes;
            CHECK(!ev.has_external);
        } else {
            allocs++;
            allocated += ev.u.memory.bytes;
            /* the call's External id, through its correlation id */
            CHECK(ev.has_external && ev.external_id == 5, "External id %d/%" PRIu64, ev.has_external,
                  ev.external_id);
        }
    }
    CHECK_EQ(allocs, 4);
    CHECK_EQ(frees, 3);
    CHECK_EQ(pinned_seen, 2);
    CHECK_EQ(allocated, 4096 + (1 << 20) + (1 << 16) + 8192);
    CHECK_EQ(freed, (1 << 20) + (1 << 16) + 8192);
    CHECK_EQ(mallocs, 4);
    CHECK_EQ(free_calls, 3);

    char json[512], pf[512];
    snprintf(json, sizeof json, "%s/mspti-memory.json", DT_BINARY_DIR);
    snprintf(pf, sizeof pf, "%s/mspti-memory.pftrace", DT_BINARY_DIR);
    REQUIRE(dt_session_write(s, json, DT_FORMAT_JSON) == DT_OK, "%s", dt_last_error());
    REQUIRE(dt_session_write(s, pf, DT_FORMAT_PERFETTO) == DT_OK, "%s", dt_last_error());
    check_trace_file(json);
    /* in time order on device 0: 4096, +1 MiB, +64 KiB, -1 MiB, -64 KiB */
    file_contains(json, "\"name\":\"[memory]\",");
    file_contains(json, "\"args\":{\"Total Allocated\":1052672,\"Bytes\":1048576,\"Device Id\":0,"
                        "\"Device Type\":20,");
    file_contains(json, "\"args\":{\"Total Allocated\":69632,\"Bytes\":-1048576,\"Device Id\":0,");
    file_contains(json, "\"args\":{\"Total Allocated\":0,\"Bytes\":-8192,\"Device Id\":-1,\"Device Type\":0,");
    file_contains(json, "\"memory\": 7");
    pftrace_contains(pf, "Total Allocated");
    pftrace_contains(pf, "cpu_instant_event");

    char *out_text = stats_csv(json, "memory");
    /* allocations, frees, bytes allocated, bytes freed, peak, final */
    CHECK(strstr(out_text, "\nmemory,privateuse1:0,3,2,1118208,1114112,1118208,4096\n") != NULL, "%s", out_text);
    CHECK(strstr(out_text, "\nmemory,cpu,1,1,8192,8192,8192,0\n") != NULL, "%s", out_text);
    free(out_text);
    dt_session_destroy(s);
}

static void memory_follows_capture(void)
{
    if (!preloaded_now()) rerun_preloaded(g_argv, DT_EMULATOR, "memory_follows_capture");
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session_with(DT_CAPTURE_RUNTIME, 0, 0);
    EMU(emu_stats_reset)();
    REQUIRE_EQ(EMU(emu_free)(alloc_on(0, 3, 256)), 0);
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_MEMORY], 0); /* not even asked for */
    CHECK_EQ(count_kind(s, DT_EVENT_MEMORY), 0);
    CHECK_EQ(count_kind(s, DT_EVENT_RUNTIME), 2);
    dt_session_destroy(s);
}

/* Without libmspti.so preloaded MSPTI refuses the kind: the session says
   so and records the rest. */
static void memory_needs_preload(void)
{
    unsetenv("LD_PRELOAD");
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    REQUIRE_EQ(EMU(emu_free)(alloc_on(0, 3, 256)), 0);
    stop_session(s);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMORY), 0);
    CHECK_EQ(count_kind(s, DT_EVENT_RUNTIME), 2);
    const char *kinds = note_text(s, "kinds");
    CHECK(kinds && strstr(kinds, "memory allocations") && strstr(kinds, "MSPTI_ERROR_WITHOUT_LD_PRELOAD"), "%s",
          kinds ? kinds : "(no note)");
    dt_session_destroy(s);
}

static void no_memory_records_in_late_2024(void)
{
    if (!preloaded_now()) rerun_preloaded(g_argv, EMULATOR_2024, "no_memory_records_in_late_2024");
    open_emulator(EMULATOR_2024);
    dt_session *s = start_session();
    EMU(emu_stats_reset)();
    REQUIRE_EQ(EMU(emu_free)(alloc_on(1, 3, 256)), 0);
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_MEMORY], 0);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMORY), 0);
    const char *kinds = note_text(s, "kinds");
    CHECK(kinds && strstr(kinds, "memory allocations"), "%s", kinds ? kinds : "(no note)");
    dt_session_destroy(s);
}

MSPTI_TEST_MAIN(DT_TEST(memory_records), DT_TEST(memory_follows_capture), DT_TEST(memory_needs_preload),
                DT_TEST(no_memory_records_in_late_2024))
