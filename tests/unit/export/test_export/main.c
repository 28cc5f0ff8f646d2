/* Writing on several threads, units and headers bigger than a buffer, and
   every allocation failing; the table of the cases. */
#include "export_test.h"

/* A session with enough events for many units of formatting, and rows long
   enough to be written in parts: two threads' output must be one thread's,
   byte for byte, in both formats. */
static dt_session *long_session(void)
{
    dt_session *s = new_session();
    uint64_t t = T0;
    for (int i = 0; i < 40000; i++, t += 2000) {
        uint64_t ext = DT_RANGE_ID_BASE + (uint64_t)i / 20;
        dt_rec *a = api(s, "cudaLaunchKernel", t, t + 300, 11, (uint64_t)i + 1);
        external(a, ext);
        dt_rec *k = kernel(s, i % 3 ? "_Z3fooi" : "bar", t + 500, t + 1500, 0, 7, (uint64_t)i + 1);
        external(k, ext);
        if (i % 20 == 19)
            range(s, "step", t - 19 * 2000, t + 1900, 11, ext, 0, 0);
    }
    /* a row with partial overlaps: several levels, written whole */
    for (int i = 0; i < 3000; i++)
        kernel(s, "stair", T0 + (uint64_t)i * 10, T0 + (uint64_t)i * 10 + 1000, 1, 5, 0);
    s->window_end_ns = t + SEC;
    return s;
}

static char *export_bytes(dt_session *s, const char *name, dt_format format, int lanes, size_t *len)
{
    char path[512];
    path_in_dir(path, sizeof path, name);
    dt__out_lane_limit = lanes;
    dt_status st = dt_session_write(s, path, format);
    dt__out_lane_limit = 0;
    REQUIRE_EQ(st, DT_OK);
    return format == DT_FORMAT_JSON_GZ ? read_gzip(path, len) : read_file(path, len);
}

/* The trace one lane writes, checked to be what every other number of
   lanes writes: two, an odd number, and the most there may be. */
static char *lanes_agree(dt_session *s, const char *name, dt_format format, size_t *len)
{
    char *one = export_bytes(s, name, format, 1, len);
    for (int lanes = 2; lanes <= DT_OUT_MAX_LANES; lanes++) {
        size_t more_len;
        char *more = export_bytes(s, name, format, lanes, &more_len);
        CHECK_EQ(*len, more_len);
        CHECK(*len == more_len && memcmp(one, more, more_len) == 0, "format %d differs on %d lanes", (int)format,
              lanes);
        free(more);
    }
    return one;
}

static void test_export_two_threads_write_what_one_writes(void)
{
    dt_session *s = long_session();
    static const dt_format formats[] = {DT_FORMAT_JSON, DT_FORMAT_JSON_GZ, DT_FORMAT_PERFETTO};
    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
        size_t one_len;
        char *one = lanes_agree(s, "lanes.out", formats[f], &one_len);
        if (formats[f] == DT_FORMAT_JSON) {
            /* what `devtrace check` verifies, at this size */
            char path[512];
            path_in_dir(path, sizeof path, "lanes.out");
            char *argv[] = {"check", path, NULL};
            FILE *out = tmpfile(), *err = tmpfile();
            REQUIRE(out && err);
            CHECK_EQ(dt__check_main(2, argv, out, err), 0);
            fclose(out);
            fclose(err);
            CHECK_EQ(count_text(&(trace){.text = one}, "\"cat\":\"gpu_user_annotation\",\"name\":\"step\""), 2000);
            CHECK_EQ(count_text(&(trace){.text = one}, "\"name\":\"stair\""), 3000);
        }
        free(one);
    }
    dt_session_destroy(s);
}

/* Units of formatting bigger than the writer's buffer (names of 1800
   bytes): a lane writes part of its unit before the unit is done, in its
   turn, and the trace is still one thread's. */
static void test_export_units_bigger_than_a_buffer(void)
{
    dt_session *s = new_session();
    char name[1801];
    for (int i = 0; i < 6000; i++) {
        memset(name, 'a' + i % 20, sizeof name - 1);
        name[sizeof name - 1] = 0;
        kernel(s, name, T0 + (uint64_t)i * 100, T0 + (uint64_t)i * 100 + 50, 0, 1 + (uint32_t)i % 2, 0);
    }
    static const dt_format formats[] = {DT_FORMAT_JSON, DT_FORMAT_PERFETTO};
    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
        size_t one_len;
        char *one = lanes_agree(s, "big_units.out", formats[f], &one_len);
        if (formats[f] == DT_FORMAT_JSON)
            REQUIRE(one_len > (size_t)10 << 20);
        free(one);
    }
    dt_session_destroy(s);
}

/* A header bigger than the writer's buffer (a thread_name for each of
   30000 streams) is written by the drain thread before the lanes write
   their units themselves: the lanes wait for it, and the trace is still
   one thread's. */
static void test_export_header_bigger_than_a_buffer(void)
{
    dt_session *s = new_session();
    for (uint32_t i = 0; i < 30000; i++)
        kernel(s, "k", T0 + (uint64_t)i * 100, T0 + (uint64_t)i * 100 + 50, 0, 7 + i, 0);
    static const dt_format formats[] = {DT_FORMAT_JSON, DT_FORMAT_JSON_GZ, DT_FORMAT_PERFETTO};
    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
        size_t one_len;
        char *one = lanes_agree(s, "big_header.out", formats[f], &one_len);
        if (formats[f] == DT_FORMAT_JSON) {
            /* the thread names alone fill more than the 1 MiB buffer */
            char *units = strstr(one, "\"cat\":\"kernel\"");
            REQUIRE(units != NULL);
            REQUIRE((size_t)(units - one) > (size_t)1 << 20);
        }
        free(one);
    }
    dt_session_destroy(s);
}

/* SQLite's countdown over the export of a session big enough for two
   threads in the layout and every lane formatting: the n-th allocation
   (a thread's creation among them) fails, for every n until the export
   makes fewer. Each failure ends in DT_ERR_NO_MEMORY and no file, or
   (where a thread or a buffer is only an optimization) in the trace one
   thread writes; never a crash, a hang or a leak (ASan). */
static void test_export_out_of_memory_at_every_allocation(void)
{
    dt_session *s = new_session();
    uint64_t t = T0;
    /* records enough for classify's second thread too */
    for (int i = 0; i < 9000; i++, t += 2000) {
        uint64_t ext = DT_RANGE_ID_BASE + (uint64_t)i / 10;
        external(api(s, "cudaLaunchKernel", t, t + 300, 11 + (uint32_t)i % 2, (uint64_t)i + 1), ext);
        external(kernel(s, "k", t + 500, t + 1500, 0, 7 + (uint32_t)i % 3, (uint64_t)i + 1), ext);
        if (i % 10 == 9)
            range(s, "step", t - 9 * 2000, t + 1900, 11 + (uint32_t)i % 2, ext, 0, 0);
    }
    static const dt_format formats[] = {DT_FORMAT_JSON, DT_FORMAT_PERFETTO};
    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
        size_t want_len;
        char *want = export_bytes(s, "oom.out", formats[f], DT_OUT_MAX_LANES, &want_len);
        char path[512], tmp[600];
        path_in_dir(path, sizeof path, "oom.out");
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        int ok_after_failure = 0;
        long n = getenv("DT_TEST_OOM_FROM") ? atol(getenv("DT_TEST_OOM_FROM")) : 1;
        for (;; n++) {
            unlink(path);
            unsigned long before = dt__alloc_failures();
            dt__out_lane_limit = DT_OUT_MAX_LANES;
            dt__alloc_fail_after(n, 0);
            dt_status st = dt_session_write(s, path, formats[f]);
            dt__alloc_fail_after(0, 0);
            dt__out_lane_limit = 0;
            if (dt__alloc_failures() == before) {
                REQUIRE_EQ(st, DT_OK);
                break;
            }
            CHECK_EQ(access(tmp, F_OK), -1);
            if (st == DT_OK) {
                size_t len;
                char *got = read_file(path, &len);
                CHECK(len == want_len && memcmp(got, want, len) == 0, "format %d, allocation %ld: a different trace",
                      (int)formats[f], n);
                if (getenv("DT_TEST_DUMP") && !(len == want_len && memcmp(got, want, len) == 0)) {
                    char dump[600];
                    snprintf(dump, sizeof dump, "/tmp/p2/oom_%d_%ld", (int)formats[f], n);
                    FILE *df = fopen(dump, "wb");
                    fwrite(got, 1, len, df);
                    fclose(df);
                    snprintf(dump, sizeof dump, "/tmp/p2/oom_%d_want", (int)formats[f]);
                    df = fopen(dump, "wb");
                    fwrite(want, 1, want_len, df);
                    fclose(df);
                }
                free(got);
                ok_after_failure++;
            } else {
                CHECK_EQ(st, DT_ERR_NO_MEMORY);
                CHECK(strstr(dt_last_error(), "out of memory") != NULL, "%s", dt_last_error());
                CHECK_EQ(access(path, F_OK), -1);
            }
        }
        CHECK(n > 50, "only %ld allocations", n);
        if (getenv("DT_TEST_VERBOSE"))
            printf("format %d: %ld allocations, %d failures the trace survived\n", (int)formats[f], n, ok_after_failure);
        /* the second thread's buffers, the drain's: failures that cost speed only */
        CHECK(ok_after_failure > 0);
        free(want);
    }
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup_dir, remove_dir,
             DT_TEST(test_export_top_level),
             DT_TEST(test_export_exact_times),
             DT_TEST(test_export_flows),
             DT_TEST(test_export_external_id),
             DT_TEST(test_export_hostile_names),
             DT_TEST(test_export_overlaps_move_to_overflow_rows),
             DT_TEST(test_export_many_overlaps_stay_valid),
             DT_TEST(test_export_gzip_matches_plain),
             DT_TEST(test_export_two_threads_write_what_one_writes),
             DT_TEST(test_export_out_of_memory_at_every_allocation),
             DT_TEST(test_export_unwritable_path),
             DT_TEST(test_export_units_bigger_than_a_buffer),
             DT_TEST(test_export_header_bigger_than_a_buffer),
             DT_TEST(test_export_write_failure_keeps_old_file),
             DT_TEST(test_export_loss_and_attribution),
             DT_TEST(test_export_copy_names_and_args),
             DT_TEST(test_export_memory_instants),
             DT_TEST(test_export_occupancy),
             DT_TEST(test_export_gpu_annotations),
             DT_TEST(test_export_metadata_and_categories),
             DT_TEST(test_export_empty_session),
             DT_TEST(test_export_host_tid_zero_named_once),
             DT_TEST(test_export_recorded_session),
             DT_TEST(test_export_maps_vendor_clock_records))
