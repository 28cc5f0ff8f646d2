/* Streaming trace reader: exact values, gzip, and every kind of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_reader.h"

static unsigned char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", DT_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct tally {
    uint64_t events, x, kernels, flows_s, flows_f, meta, with_external;
    int64_t kernel_ns, ts_sum;
    int64_t relu_first_ts;
    uint64_t relu_first_index;
    uint64_t relu_first_offset;
    int64_t memcpy_bytes;
    int64_t device_pid_tid;
} tally;

static int tally_visit(void *user, const dt_rd_event *e)
{
    tally *t = user;
    t->events++;
    t->ts_sum += e->ts_ns;
    if (strcmp(e->ph, "X") == 0)
        t->x++;
    if (strcmp(e->ph, "M") == 0)
        t->meta++;
    if (strcmp(e->ph, "s") == 0)
        t->flows_s++;
    if (strcmp(e->ph, "f") == 0 && strcmp(e->bp, "e") == 0)
        t->flows_f++;
    if (e->has & DT_RD_HAS_EXTERNAL_ID)
        t->with_external++;
    if (strcmp(e->cat, "kernel") == 0) {
        t->kernels++;
        t->kernel_ns += e->dur_ns;
        if (strcmp(e->name, "relu_kernel") == 0 && t->relu_first_ts == 0) {
            t->relu_first_ts = e->ts_ns;
            t->relu_first_index = e->index;
            t->relu_first_offset = e->offset;
            assert_true(e->has & DT_RD_HAS_CORRELATION);
            assert_int_equal(e->correlation, 12);
            assert_int_equal(e->external_id, 1);
            assert_int_equal(e->stream, 7);
            assert_int_equal(e->device, 0);
            assert_false(e->pid.is_str);
            assert_int_equal(e->pid.num, 0);
            assert_int_equal(e->tid.num, 7);
        }
    }
    if (strcmp(e->cat, "gpu_memcpy") == 0)
        t->memcpy_bytes += (int64_t)e->bytes;
    if (strcmp(e->ph, "M") == 0 && strcmp(e->name, "process_sort_index") == 0 && e->pid.num == 0)
        assert_int_equal(e->sort_index, 5000000);
    if (strcmp(e->ph, "M") == 0 && strcmp(e->name, "process_labels") == 0 && e->pid.num == 0)
        assert_string_equal(e->arg_labels, "GPU 0");
    return 0;
}

static int read_memory(const void *data, size_t len, tally *t, dt_rd_summary *sum, char *err, size_t errlen)
{
    dt_rd_source *src = dt_rd_open_memory(data, len);
    assert_non_null(src);
    int rc = dt_rd_read(src, tally_visit, t, sum, err, errlen);
    dt_rd_close(src);
    return rc;
}

static void good_trace_values_are_exact(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    assert_int_equal(read_memory(buf, len, &t, &s, err, sizeof err), 0);
    assert_int_equal(t.events, 39);
    assert_int_equal(s.event_count, 39);
    assert_int_equal(t.meta, 10);
    assert_int_equal(t.x, 17);
    assert_int_equal(t.kernels, 4);
    assert_int_equal(t.kernel_ns, 20250 + 30500 + 10500 + 9500);
    assert_int_equal(t.flows_s, 6);
    assert_int_equal(t.flows_f, 6);
    assert_int_equal(t.memcpy_bytes, 1000000);
    assert_int_equal(t.relu_first_ts, 1410000);
    assert_int_equal(t.relu_first_index, 23);
    /* the offset points at the event's opening brace */
    assert_int_equal(buf[t.relu_first_offset], '{');
    assert_memory_equal(buf + t.relu_first_offset, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu_kernel\"", 42);

    assert_false(s.compressed);
    assert_int_equal(s.bytes, len);
    assert_true(s.has_schema_version);
    assert_int_equal(s.schema_version, 1);
    assert_string_equal(s.display_time_unit, "ms");
    assert_int_equal(s.base_time_ns, 1699999993000000000LL);
    assert_int_equal(s.device_count, 1);
    assert_string_equal(s.trace_name, "good.json");
    assert_true(s.has_devtrace);
    assert_string_equal(s.backend, "cupti");
    assert_string_equal(s.library_version, "13");
    assert_int_equal(s.window_start_ns, 1699999993001000000LL);
    assert_int_equal(s.window_end_ns, 1699999993002000000LL);
    assert_true(s.clock_identity);
    assert_int_equal(s.clock_samples, 4);
    assert_true(s.loss.present);
    assert_int_equal(s.loss.count, 10);
    assert_string_equal(s.loss.items[6].key, "vendor_dropped");
    assert_int_equal(s.loss.items[6].value, 3);
    assert_string_equal(s.loss.items[9].key, "total");
    assert_int_equal(s.loss.items[9].value, 3);
    assert_int_equal(s.counts.count, 9);
    assert_int_equal(s.attribution.count, 2);
    assert_string_equal(s.attribution.items[0].key, "2");
    assert_int_equal(s.attribution.items[0].value, 30250);
    assert_string_equal(s.attribution.items[1].key, "1");
    assert_int_equal(s.attribution.items[1].value, 45000);
    dt_rd_summary_free(&s);
    free(buf);
}

static void gzip_reads_like_plain(void **state)
{
    (void)state;
    char path[1024], err[512];
    tally a = {0}, b = {0};
    dt_rd_summary sa, sb;
    snprintf(path, sizeof path, "%s/tests/data/good.json", DT_SOURCE_DIR);
    dt_rd_source *src = dt_rd_open_file(path, err, sizeof err);
    assert_non_null(src);
    assert_int_equal(dt_rd_read(src, tally_visit, &a, &sa, err, sizeof err), 0);
    dt_rd_close(src);
    snprintf(path, sizeof path, "%s/tests/data/good.json.gz", DT_SOURCE_DIR);
    src = dt_rd_open_file(path, err, sizeof err);
    assert_non_null(src);
    assert_int_equal(dt_rd_read(src, tally_visit, &b, &sb, err, sizeof err), 0);
    dt_rd_close(src);
    assert_true(sb.compressed);
    assert_false(sa.compressed);
    assert_int_equal(sa.bytes, sb.bytes);
    assert_memory_equal(&a, &b, sizeof a);
    dt_rd_summary_free(&sa);
    dt_rd_summary_free(&sb);
}

static void microseconds_become_exact_nanoseconds(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool ok;
        int64_t ns;
    } cases[] = {
        {"1234.567", true, 1234567},
        {"0.001", true, 1},
        {"12", true, 12000},
        {"1.5", true, 1500},
        {"0.0005", true, 1},
        {"0.0004", true, 0},
        {"-1.250", true, -1250},
        {"1e3", true, 1000000},
        {"2.5E-3", true, 3},
        /* 2^53 + 1 ns would be lost through a double; the text path keeps it */
        {"9007199254740.993", true, 9007199254740993LL},
        {"1699999993001000.123", true, 1699999993001000123LL},
        {"9223372036854775.807", false, 0},
        {"99999999999999999999", false, 0},
        {"1.", false, 0},
        {".5", false, 0},
        {"", false, 0},
        {"abc", false, 0},
        {"1.2.3", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -42;
        bool ok = dt_rd_parse_us_to_ns(cases[i].text, strlen(cases[i].text), &ns);
        if (ok != cases[i].ok)
            fail_msg("\"%s\": expected %s", cases[i].text, cases[i].ok ? "success" : "failure");
        if (ok)
            assert_int_equal(ns, cases[i].ns);
    }
}

static void every_truncation_is_an_error(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    size_t last_brace = len;
    while (last_brace > 0 && buf[last_brace - 1] != '}')
        last_brace--;
    assert_true(last_brace > 0);
    char err[512];
    for (size_t n = 0; n <= len; n++) {
        tally t = {0};
        dt_rd_summary s;
        int rc = read_memory(buf, n, &t, &s, err, sizeof err);
        if (n < last_brace) {
            if (rc != -1)
                fail_msg("prefix of %zu bytes was accepted", n);
            assert_non_null(strstr(err, "byte "));
        } else {
            assert_int_equal(rc, 0);
        }
        dt_rd_summary_free(&s);
    }
    free(buf);
}

static void truncated_gzip_is_an_error(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = slurp("good.json.gz", &len);
    char err[512];
    for (size_t n = 2; n < len; n++) {
        tally t = {0};
        dt_rd_summary s;
        int rc = read_memory(buf, n, &t, &s, err, sizeof err);
        if (rc != -1)
            fail_msg("gzip prefix of %zu of %zu bytes was accepted", n, len);
        dt_rd_summary_free(&s);
    }
    /* a flipped byte in the compressed data */
    buf[len / 2] ^= 0x55;
    tally t = {0};
    dt_rd_summary s;
    assert_int_equal(read_memory(buf, len, &t, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "gzip"));
    dt_rd_summary_free(&s);
    free(buf);
}

static void expect_error(const char *json, size_t len, const char *needle)
{
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    int rc = read_memory(json, len, &t, &s, err, sizeof err);
    if (rc != -1)
        fail_msg("accepted: %.80s", json);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
    if (strncmp(err, "byte ", 5) != 0)
        fail_msg("error \"%s\" names no byte offset", err);
    dt_rd_summary_free(&s);
}

#define EXPECT_ERROR(json, needle) expect_error(json, sizeof(json) - 1, needle)

static void wrong_shapes_are_named(void **state)
{
    (void)state;
    EXPECT_ERROR("", "empty");
    EXPECT_ERROR("   ", "");
    EXPECT_ERROR("[]", "not an object");
    EXPECT_ERROR("42", "not an object");
    EXPECT_ERROR("{}", "traceEvents");
    EXPECT_ERROR("{\"traceEvents\":{}}", "\"traceEvents\" must be an array");
    EXPECT_ERROR("{\"traceEvents\":[{},7]}", "traceEvents[1] must be an object");
    EXPECT_ERROR("{\"traceEvents\":[{\"ts\":\"1.0\"}]}", "\"ts\" must be a number");
    EXPECT_ERROR("{\"traceEvents\":[{\"dur\":null}]}", "\"dur\"");
    EXPECT_ERROR("{\"traceEvents\":[{\"ph\":1}]}", "\"ph\" must be a string");
    EXPECT_ERROR("{\"traceEvents\":[{\"pid\":1.5}]}", "\"pid\" must be an integer or a string");
    EXPECT_ERROR("{\"traceEvents\":[{\"pid\":[]}]}", "\"pid\"");
    EXPECT_ERROR("{\"traceEvents\":[{\"args\":[]}]}", "\"args\" must be an object");
    EXPECT_ERROR("{\"traceEvents\":[],\"traceEvents\":[]}", "twice");
    EXPECT_ERROR("{\"schemaVersion\":\"1\",\"traceEvents\":[]}", "schemaVersion");
    EXPECT_ERROR("{\"traceEvents\":[],\"devtrace\":{\"loss\":{\"total\":\"x\"}}}", "devtrace.loss");
    EXPECT_ERROR("{\"traceEvents\":[],\"devtrace\":{\"captureWindow\":{\"startNs\":1.5}}}", "startNs");
    EXPECT_ERROR("{\"traceEvents\":[],\"devtrace\":[]}", "\"devtrace\" must be an object");
    EXPECT_ERROR("{\"traceEvents\":[]} x", "invalid JSON");
    EXPECT_ERROR("{\"traceEvents\":[]}{}", "invalid JSON");
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"a\x01\"}]}", "invalid JSON");
    /* invalid UTF-8 in a name */
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"\xff\xfe\"}]}", "UTF-8");
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"\xc3\"}]}", "UTF-8");
    /* overlong forms and UTF-16 surrogates written as UTF-8 are not UTF-8 */
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"\xc0\xaf\"}]}", "UTF-8");
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"\xed\xa0\x80\"}]}", "UTF-8");
    EXPECT_ERROR("{\"traceEvents\":[{\"name\":\"\xf4\x90\x80\x80\"}]}", "UTF-8");
    /* the grammar, strictly */
    EXPECT_ERROR("{\"x\":[01],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[1.],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[-],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[1e],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"traceEvents\":[],}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[1,],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"traceEvents\" []}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[tru],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[nul],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[\"\\x\"],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{\"x\":[\"\\u12g4\"],\"traceEvents\":[]}", "invalid JSON");
    EXPECT_ERROR("{'traceEvents':[]}", "invalid JSON");
}

static void error_offset_points_at_the_problem(void **state)
{
    (void)state;
    static const char json[] = "{\"traceEvents\":[{\"ph\":\"X\"},\n{\"ts\":true}]}";
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    assert_int_equal(read_memory(json, sizeof json - 1, &t, &s, err, sizeof err), -1);
    /* "true" ends at byte 38 */
    assert_string_equal(err, "byte 38: traceEvents[1]: \"ts\" must be a number of microseconds that fits, not a boolean");
    assert_int_equal(t.events, 1);
    dt_rd_summary_free(&s);
}

static void hostile_nesting_is_bounded(void **state)
{
    (void)state;
    size_t n = 1000000;
    char *deep = malloc(n);
    assert_non_null(deep);
    memset(deep, '[', n);
    expect_error(deep, n, "not an object");
    static const char prefix[] = "{\"traceEvents\":[{\"args\":{\"x\":";
    memcpy(deep, prefix, sizeof prefix - 1);
    expect_error(deep, n, "nesting deeper than 64");
    for (size_t i = sizeof prefix - 1; i < n; i += 5)
        memcpy(deep + i, "{\"a\":", i + 5 <= n ? 5 : n - i);
    expect_error(deep, n, "nesting deeper than 64");
    free(deep);
}

static void garbage_is_an_error(void **state)
{
    (void)state;
    unsigned char buf[4096];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 200; round++) {
        size_t len = 1 + (size_t)(x % sizeof buf);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (unsigned char)x;
        }
        /* half the rounds look like the start of a gzip stream */
        if (round % 2 == 0 && len >= 2) {
            buf[0] = 0x1f;
            buf[1] = 0x8b;
        }
        tally t = {0};
        dt_rd_summary s;
        char err[512];
        assert_int_equal(read_memory(buf, len, &t, &s, err, sizeof err), -1);
        assert_true(strlen(err) > 0);
        dt_rd_summary_free(&s);
    }
}

static int stop_at_third(void *user, const dt_rd_event *e)
{
    (void)user;
    return e->index == 2 ? 7 : 0;
}

static void visitor_can_stop(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    dt_rd_source *src = dt_rd_open_memory(buf, len);
    dt_rd_summary s;
    char err[512];
    assert_int_equal(dt_rd_read(src, stop_at_third, NULL, &s, err, sizeof err), 7);
    assert_int_equal(s.event_count, 3);
    dt_rd_summary_free(&s);
    dt_rd_close(src);
    free(buf);
}

static void string_ids_and_unknown_keys(void **state)
{
    (void)state;
    static const char json[] =
        "{\"otherData\":{\"a\":[1,2,{\"b\":null}]},\"traceEvents\":[{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Record "
        "Window End\",\"pid\":\"\",\"tid\":\"Spans\",\"ts\":5,\"extra\":[{\"x\":[]}],\"id\":\"0x1f\","
        "\"args\":{\"grid\":[1,2,3],\"name\":7,\"occupancy\":{\"k\":\"v\"}}}],\"distributedInfo\":{}}";
    dt_rd_source *src = dt_rd_open_memory(json, sizeof json - 1);
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    assert_int_equal(dt_rd_read(src, tally_visit, &t, &s, err, sizeof err), 0);
    assert_int_equal(t.events, 1);
    assert_int_equal(t.ts_sum, 5000);
    assert_false(s.has_devtrace);
    assert_false(s.loss.present);
    dt_rd_summary_free(&s);
    dt_rd_close(src);
}

static int name_length_visit(void *user, const dt_rd_event *e)
{
    *(size_t *)user = strlen(e->name);
    assert_int_equal(e->name_len, strlen(e->name));
    return 0;
}

typedef struct raw_seen {
    int events;
    char pid[16], ts[16], ext[32], corr[16], args[4];
    uint64_t stream;
    uint32_t odd, string_args;
} raw_seen;

static void span_text(char *dst, size_t n, const dt_rd_event *e, int which)
{
    snprintf(dst, n, "%.*s", (int)e->at[which].len, e->raw + e->at[which].off);
}

static int raw_visit(void *user, const dt_rd_event *e)
{
    raw_seen *r = user;
    r->events++;
    /* the event's text as written, from its brace to its brace */
    assert_int_equal(e->raw[0], '{');
    assert_int_equal(e->raw[e->raw_len - 1], '}');
    span_text(r->pid, sizeof r->pid, e, DT_RD_AT_PID);
    span_text(r->ts, sizeof r->ts, e, DT_RD_AT_TS);
    span_text(r->ext, sizeof r->ext, e, DT_RD_AT_EXT);
    span_text(r->corr, sizeof r->corr, e, DT_RD_AT_CORR);
    span_text(r->args, sizeof r->args, e, DT_RD_AT_ARGS);
    r->stream = (e->has & DT_RD_HAS_STREAM) ? (uint64_t)e->stream : 999;
    r->odd = e->odd_args;
    r->string_args = e->string_args;
    return 0;
}

static void kineto_types_are_read_leniently_and_values_located(void **state)
{
    (void)state;
    /* the shape torch.profiler writes on ROCm: ids as strings, pretty printed */
    static const char json[] =
        "{\"traceEvents\": [\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"pid\": 12 , \"tid\": \"stream 7\",\n"
        "    \"ts\": 1.500, \"dur\": 2,\n    \"args\": { \"External id\": \"42\", \"stream\": \"0x1f\",\n"
        "      \"correlation\": 9, \"device\": 1.5, \"bytes\": -3}\n  }\n]}";
    dt_rd_source *src = dt_rd_open_memory(json, sizeof json - 1);
    raw_seen r = {0};
    dt_rd_summary s;
    char err[512];
    dt_rd_options o = {.visit = raw_visit, .user = &r, .flags = DT_RD_RAW};
    assert_int_equal(dt_rd_read_opts(src, &o, &s, err, sizeof err), 0);
    assert_int_equal(r.events, 1);
    assert_string_equal(r.pid, "12");
    assert_string_equal(r.ts, "1.500");
    assert_string_equal(r.ext, "\"42\"");
    assert_string_equal(r.corr, "9");
    assert_string_equal(r.args, "{");
    assert_int_equal(r.stream, 31);
    assert_int_equal(r.string_args, 2);
    /* a fraction for an integer and a negative count are left out, and said */
    assert_int_equal(r.odd, DT_RD_HAS_DEVICE | DT_RD_HAS_BYTES);
    dt_rd_summary_free(&s);
    dt_rd_close(src);
}

static void raw_events_survive_chunk_boundaries(void **state)
{
    (void)state;
    /* through gzip the reader sees the text in windows it refills: the
       captured text of every event must still be whole */
    size_t len;
    unsigned char *buf = slurp("good.json.gz", &len);
    dt_rd_source *src = dt_rd_open_memory(buf, len);
    raw_seen r = {0};
    dt_rd_summary s;
    char err[512];
    dt_rd_options o = {.visit = raw_visit, .user = &r, .flags = DT_RD_RAW};
    assert_int_equal(dt_rd_read_opts(src, &o, &s, err, sizeof err), 0);
    assert_int_equal(r.events, 39);
    dt_rd_summary_free(&s);
    dt_rd_close(src);
    free(buf);
}

/* Reads data through a window of the given size (0: the default). */
static int read_window(const void *data, size_t len, size_t window, unsigned flags, tally *t, char *err,
                       size_t errlen, uint64_t *events)
{
    dt_rd_source *src = dt_rd_open_memory(data, len);
    assert_non_null(src);
    dt_rd_summary s;
    dt_rd_options o = {.visit = tally_visit, .user = t, .flags = flags, .window = window};
    int rc = dt_rd_read_opts(src, &o, &s, err, errlen);
    *events = s.event_count;
    dt_rd_summary_free(&s);
    dt_rd_close(src);
    return rc;
}

static void window_never_changes_the_result(void **state)
{
    (void)state;
    /* every token and event of the good trace, plain and gzip, and of each
       of its truncations, crossing the window's end */
    static const char *const files[] = {"good.json", "good.json.gz"};
    for (size_t f = 0; f < 2; f++) {
        size_t len;
        unsigned char *buf = slurp(files[f], &len);
        for (size_t n = f == 0 ? 0 : len; n <= len; n += f == 0 ? 37 : 1) {
            tally whole = {0};
            char err_whole[512], err[512];
            uint64_t ev_whole, ev;
            int rc_whole = read_window(buf, n, 0, 0, &whole, err_whole, sizeof err_whole, &ev_whole);
            for (size_t w = 1; w <= 48; w += (w < 16 ? 1 : 7)) {
                for (unsigned flags = 0; flags <= DT_RD_RAW; flags += DT_RD_RAW) {
                    tally t = {0};
                    int rc = read_window(buf, n, w, flags, &t, err, sizeof err, &ev);
                    if (rc != rc_whole || ev != ev_whole || memcmp(&t, &whole, sizeof t) != 0 ||
                        strcmp(err, err_whole) != 0)
                        fail_msg("%s, %zu bytes, window %zu%s: rc %d, %llu events, \"%s\"; whole: rc %d, %llu "
                                 "events, \"%s\"",
                                 files[f], n, w, flags ? " (raw)" : "", rc, (unsigned long long)ev, err, rc_whole,
                                 (unsigned long long)ev_whole, err_whole);
                }
            }
        }
        free(buf);
    }
}

static void a_long_string_grows_the_window(void **state)
{
    (void)state;
    /* a name of 3 MiB, in an event and in the devtrace key: the window
       doubles until each fits, and the text comes through whole */
    size_t name_len = 3u << 20;
    size_t cap = 2 * name_len + 1024;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t o = (size_t)snprintf(json, cap, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"");
    memset(json + o, 'k', name_len);
    o += name_len;
    o += (size_t)snprintf(json + o, cap - o, "\",\"ts\":1}],\"devtrace\":{\"backend\":\"");
    memset(json + o, 'b', name_len);
    o += name_len;
    o += (size_t)snprintf(json + o, cap - o, "\"}}");
    size_t seen = 0;
    dt_rd_source *src = dt_rd_open_memory(json, o);
    dt_rd_summary s;
    char err[512];
    assert_int_equal(dt_rd_read(src, name_length_visit, &seen, &s, err, sizeof err), 0);
    assert_int_equal(seen, name_len);
    assert_int_equal(strlen(s.backend), name_len);
    dt_rd_summary_free(&s);
    dt_rd_close(src);
    free(json);
}

static void missing_file_is_reported(void **state)
{
    (void)state;
    char err[512];
    assert_null(dt_rd_open_file("/nonexistent/trace.json", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/trace.json"));
}

static void strtab_interns_many_keys(void **state)
{
    (void)state;
    dt_rd_strtab t;
    dt_rd_strtab_init(&t);
    char key[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        bool added;
        assert_int_equal(dt_rd_strtab_intern(&t, key, (size_t)n, &added), i);
        assert_true(added);
    }
    for (int i = 0; i < 20000; i += 7) {
        int n = snprintf(key, sizeof key, "k%d", i);
        bool added;
        assert_int_equal(dt_rd_strtab_intern(&t, key, (size_t)n, &added), i);
        assert_false(added);
        assert_int_equal(dt_rd_strtab_find(&t, key, (size_t)n), i);
        assert_string_equal(dt_rd_strtab_key(&t, (size_t)i), key);
    }
    assert_int_equal(dt_rd_strtab_find(&t, "nope", 4), -1);
    assert_int_equal(dt_rd_strtab_find(&t, "", 0), -1);
    assert_int_equal(dt_rd_strtab_intern(&t, "", 0, NULL), 20000);
    dt_rd_strtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_trace_values_are_exact),
        cmocka_unit_test(kineto_types_are_read_leniently_and_values_located),
        cmocka_unit_test(raw_events_survive_chunk_boundaries),
        cmocka_unit_test(window_never_changes_the_result),
        cmocka_unit_test(a_long_string_grows_the_window),
        cmocka_unit_test(gzip_reads_like_plain),
        cmocka_unit_test(microseconds_become_exact_nanoseconds),
        cmocka_unit_test(every_truncation_is_an_error),
        cmocka_unit_test(truncated_gzip_is_an_error),
        cmocka_unit_test(wrong_shapes_are_named),
        cmocka_unit_test(error_offset_points_at_the_problem),
        cmocka_unit_test(hostile_nesting_is_bounded),
        cmocka_unit_test(garbage_is_an_error),
        cmocka_unit_test(visitor_can_stop),
        cmocka_unit_test(string_ids_and_unknown_keys),
        cmocka_unit_test(missing_file_is_reported),
        cmocka_unit_test(strtab_interns_many_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
