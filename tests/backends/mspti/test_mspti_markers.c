/*
 * Markers become user ranges: a range's start and end records share an
 * id, may come from two threads and in two buffers (in either order), and
 * the range is the starting thread's. Instants are ranges of no length; a
 * range marked on a stream is kept from its host records (the device's own
 * are noted); a range with only one end inside the session is counted as
 * outside_window, exactly.
 */
#include <pthread.h>

#include "mspti_test.h"

#define RANGES 200

typedef struct ender {
    uint64_t ids[RANGES];
    int count;
    uint32_t tid;
} ender;

static void *end_ranges(void *p)
{
    ender *e = p;
    e->tid = dt__thread_id();
    for (int i = 0; i < e->count; i++) REQUIRE_EQ(EMU(emu_range_end)(e->ids[i]), 0);
    return NULL;
}

static void ranges_across_threads(void)
{
    open_emulator(DT_EMULATOR);
    /* small buffers: a range's two records fall in different ones */
    dt_session *s = start_session_with(0, 64, 1024);
    EMU(emu_stats_reset)();
    uint64_t before = dt__realtime_ns();
    static ender other;
    other.count = RANGES / 2;
    char name[32];
    for (int i = 0; i < RANGES; i++) {
        uint64_t id;
        snprintf(name, sizeof name, "range_%d", i);
        REQUIRE_EQ(EMU(emu_range_start)(name, -1, -1, &id), 0);
        if (i % 2) other.ids[i / 2] = id;
        else REQUIRE_EQ(EMU(emu_range_end)(id), 0);
    }
    pthread_t th;
    REQUIRE_EQ(pthread_create(&th, NULL, end_ranges, &other), 0);
    pthread_join(th, NULL);
    uint64_t after = dt__realtime_ns();
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK_EQ(st.records[EMU_KIND_MARKER], 2 * RANGES);
    CHECK_EQ(count_kind(s, DT_EVENT_RANGE), RANGES);
    CHECK_EQ(dt_session_loss_total(s), 0);
    size_t n = dt_session_event_count(s), seen = 0;
    uint32_t me = dt__thread_id();
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_RANGE) continue;
        int k = -1;
        REQUIRE(sscanf(ev.name, "range_%d", &k) == 1 && k >= 0 && k < RANGES, "range %s", ev.name);
        seen++;
        /* the starting thread's, whoever ended it */
        CHECK_EQ(ev.thread, me);
        CHECK_EQ(ev.process, (uint32_t)getpid());
        CHECK(ev.start_ns >= before && ev.end_ns <= after && ev.start_ns <= ev.end_ns, "range %d times", k);
        CHECK(ev.has_external && ev.u.range.range_id >= DT_RANGE_ID_BASE, "range %d id", k);
    }
    CHECK_EQ(seen, RANGES);
    CHECK(other.tid != me);
    char path[512];
    snprintf(path, sizeof path, "%s/mspti-markers.json", DT_BINARY_DIR);
    REQUIRE(dt_session_write(s, path, DT_FORMAT_JSON) == DT_OK, "%s", dt_last_error());
    trace_counts t = read_trace_counts(path);
    CHECK_EQ(t.user_annotation, RANGES);
    check_trace_file(path);
    dt_session_destroy(s);
}

static void instants_and_stream_markers(void)
{
    open_emulator(DT_EMULATOR);
    dt_session *s = start_session();
    REQUIRE_EQ(EMU(emu_mark)("tick", -1, -1), 0);
    uint64_t id;
    REQUIRE_EQ(EMU(emu_range_start)("on_stream", 0, 2, &id), 0);
    const int g[3] = {1, 1, 1}, b[3] = {64, 1, 1};
    REQUIRE_EQ(EMU(emu_launch_kernel)(0, 2, "inside", g, b, 1000), 0);
    REQUIRE_EQ(EMU(emu_range_end)(id), 0);
    REQUIRE_EQ(EMU(emu_synchronize)(-1, -1), 0);
    stop_session(s);
    int tick = 0, on_stream = 0;
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_RANGE) continue;
        if (strcmp(ev.name, "tick") == 0) {
            tick++;
            CHECK_EQ(ev.end_ns, ev.start_ns);
        } else if (strcmp(ev.name, "on_stream") == 0) {
            on_stream++;
            CHECK(ev.end_ns > ev.start_ns);
        }
    }
    CHECK_EQ(tick, 1);
    CHECK_EQ(on_stream, 1);
    CHECK_EQ(count_kind(s, DT_EVENT_RANGE), 2);
    const char *device = note_text(s, "device_markers");
    /* the device's records of the range's start and end */
    CHECK(device && strncmp(device, "2 device-side marker records", 28) == 0, "%s", device ? device : "no note");
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

static void unpaired_halves_are_counted(void)
{
    open_emulator(DT_EMULATOR);
    uint64_t early, late, whole;
    REQUIRE_EQ(EMU(emu_range_start)("began_before", -1, -1, &early), 0);
    dt_session *s = start_session();
    REQUIRE_EQ(EMU(emu_range_end)(early), 0);
    REQUIRE_EQ(EMU(emu_range_start)("whole", -1, -1, &whole), 0);
    REQUIRE_EQ(EMU(emu_range_end)(whole), 0);
    REQUIRE_EQ(EMU(emu_range_start)("ends_after", -1, -1, &late), 0);
    stop_session(s);
    REQUIRE_EQ(EMU(emu_range_end)(late), 0);
    CHECK_EQ(count_kind(s, DT_EVENT_RANGE), 1);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_OUTSIDE_WINDOW), 2);
    CHECK_EQ(dt_session_loss_total(s), 2);
    const char *why = note_text(s, "markers");
    CHECK(why && strncmp(why, "2 marker ranges", 15) == 0, "%s", why ? why : "no note");
    /* the next session starts clean */
    dt_session_destroy(s);
    s = start_session();
    REQUIRE_EQ(EMU(emu_range_start)("next", -1, -1, &whole), 0);
    REQUIRE_EQ(EMU(emu_range_end)(whole), 0);
    stop_session(s);
    CHECK_EQ(count_kind(s, DT_EVENT_RANGE), 1);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

MSPTI_TEST_MAIN(DT_TEST(ranges_across_threads), DT_TEST(instants_and_stream_markers),
                DT_TEST(unpaired_halves_are_counted))
