/* The JSON reader: exact values, gzip, and every kind of bad input; the table
   of the cases. */
#include "reader_test.h"

static unsigned char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", DT_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    REQUIRE((f) != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    REQUIRE((buf) != NULL);
    REQUIRE_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
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
            REQUIRE(e->has & DT_RD_HAS_CORRELATION);
            REQUIRE_EQ(e->correlation, 12);
            REQUIRE_EQ(e->external_id, 1);
            REQUIRE_EQ(e->stream, 7);
            REQUIRE_EQ(e->device, 0);
            REQUIRE(!(e->pid.is_str));
            REQUIRE_EQ(e->pid.num, 0);
            REQUIRE_EQ(e->tid.num, 7);
        }
    }
    if (strcmp(e->cat, "gpu_memcpy") == 0)
        t->memcpy_bytes += (int64_t)e->bytes;
    if (strcmp(e->ph, "M") == 0 && strcmp(e->name, "process_sort_index") == 0 && e->pid.num == 0)
        REQUIRE_EQ(e->sort_index, 5000000);
    if (strcmp(e->ph, "M") == 0 && strcmp(e->name, "process_labels") == 0 && e->pid.num == 0)
        REQUIRE_STR(e->arg_labels, "GPU 0");
    return 0;
}

static int read_memory(const void *data, size_t len, tally *t, dt_rd_summary *sum, char *err, size_t errlen)
{
    dt_rd_source *src = dt__rd_open_memory(data, len);
    REQUIRE((src) != NULL);
    int rc = dt__rd_read(src, tally_visit, t, sum, err, errlen);
    dt__rd_close(src);
    return rc;
}

static void good_trace_values_are_exact(void)
{
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    REQUIRE_EQ(read_memory(buf, len, &t, &s, err, sizeof err), 0);
    REQUIRE_EQ(t.events, 39);
    REQUIRE_EQ(s.event_count, 39);
    REQUIRE_EQ(t.meta, 10);
    REQUIRE_EQ(t.x, 17);
    REQUIRE_EQ(t.kernels, 4);
    REQUIRE_EQ(t.kernel_ns, 20250 + 30500 + 10500 + 9500);
    REQUIRE_EQ(t.flows_s, 6);
    REQUIRE_EQ(t.flows_f, 6);
    REQUIRE_EQ(t.memcpy_bytes, 1000000);
    REQUIRE_EQ(t.relu_first_ts, 1410000);
    REQUIRE_EQ(t.relu_first_index, 23);
    /* the offset points at the event's opening brace */
    REQUIRE_EQ(buf[t.relu_first_offset], '{');
    REQUIRE(memcmp(buf + t.relu_first_offset, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu_kernel\"", 42) == 0);

    REQUIRE(!(s.compressed));
    REQUIRE_EQ(s.bytes, len);
    REQUIRE(s.has_schema_version);
    REQUIRE_EQ(s.schema_version, 1);
    REQUIRE_STR(s.display_time_unit, "ms");
    REQUIRE_EQ(s.base_time_ns, 1699999993000000000LL);
    REQUIRE_EQ(s.device_count, 1);
    REQUIRE_STR(s.trace_name, "good.json");
    REQUIRE(s.has_devtrace);
    REQUIRE_STR(s.backend, "cupti");
    REQUIRE_STR(s.library_version, "13");
    REQUIRE_EQ(s.window_start_ns, 1699999993001000000LL);
    REQUIRE_EQ(s.window_end_ns, 1699999993002000000LL);
    REQUIRE(s.clock_identity);
    REQUIRE_EQ(s.clock_samples, 4);
    REQUIRE(s.loss.present);
    REQUIRE_EQ(s.loss.count, DT_LOSS_COUNT + 1);
    REQUIRE_STR(s.loss.items[6].key, "vendor_dropped");
    REQUIRE_EQ(s.loss.items[6].value, 3);
    REQUIRE_STR(s.loss.items[DT_LOSS_COUNT].key, "total");
    REQUIRE_EQ(s.loss.items[DT_LOSS_COUNT].value, 3);
    REQUIRE_EQ(s.counts.count, 9);
    REQUIRE_EQ(s.attribution.count, 2);
    REQUIRE_STR(s.attribution.items[0].key, "2");
    REQUIRE_EQ(s.attribution.items[0].value, 30250);
    REQUIRE_STR(s.attribution.items[1].key, "1");
    REQUIRE_EQ(s.attribution.items[1].value, 45000);
    dt__rd_summary_free(&s);
    free(buf);
}

static void gzip_reads_like_plain(void)
{
    char path[1024], err[512];
    tally a = {0}, b = {0};
    dt_rd_summary sa, sb;
    snprintf(path, sizeof path, "%s/tests/data/good.json", DT_SOURCE_DIR);
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE((src) != NULL);
    REQUIRE_EQ(dt__rd_read(src, tally_visit, &a, &sa, err, sizeof err), 0);
    dt__rd_close(src);
    snprintf(path, sizeof path, "%s/tests/data/good.json.gz", DT_SOURCE_DIR);
    src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE((src) != NULL);
    REQUIRE_EQ(dt__rd_read(src, tally_visit, &b, &sb, err, sizeof err), 0);
    dt__rd_close(src);
    REQUIRE(sb.compressed);
    REQUIRE(!(sa.compressed));
    REQUIRE_EQ(sa.bytes, sb.bytes);
    REQUIRE(memcmp(&a, &b, sizeof a) == 0);
    dt__rd_summary_free(&sa);
    dt__rd_summary_free(&sb);
}

static void microseconds_become_exact_nanoseconds(void)
{
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
        bool ok = dt__rd_parse_us_to_ns(cases[i].text, strlen(cases[i].text), &ns);
        if (ok != cases[i].ok)
            FAIL("\"%s\": expected %s", cases[i].text, cases[i].ok ? "success" : "failure");
        if (ok)
            REQUIRE_EQ(ns, cases[i].ns);
    }
}

static void every_truncation_is_an_error(void)
{
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    size_t last_brace = len;
    while (last_brace > 0 && buf[last_brace - 1] != '}')
        last_brace--;
    REQUIRE(last_brace > 0);
    char err[512];
    for (size_t n = 0; n <= len; n++) {
        tally t = {0};
        dt_rd_summary s;
        int rc = read_memory(buf, n, &t, &s, err, sizeof err);
        if (n < last_brace) {
            if (rc != -1)
                FAIL("prefix of %zu bytes was accepted", n);
            REQUIRE((strstr(err, "byte ")) != NULL);
        } else {
            REQUIRE_EQ(rc, 0);
        }
        dt__rd_summary_free(&s);
    }
    free(buf);
}

static void truncated_gzip_is_an_error(void)
{
    size_t len;
    unsigned char *buf = slurp("good.json.gz", &len);
    char err[512];
    for (size_t n = 2; n < len; n++) {
        tally t = {0};
        dt_rd_summary s;
        int rc = read_memory(buf, n, &t, &s, err, sizeof err);
        if (rc != -1)
            FAIL("gzip prefix of %zu of %zu bytes was accepted", n, len);
        dt__rd_summary_free(&s);
    }
    /* a flipped byte in the CRC of the trailer: the text parses, the
       damage is still found, and named */
    buf[len - 8] ^= 0x55;
    tally t = {0};
    dt_rd_summary s;
    REQUIRE_EQ(read_memory(buf, len, &t, &s, err, sizeof err), -1);
    REQUIRE((strstr(err, "gzip")) != NULL, "%s", err);
    dt__rd_summary_free(&s);
    buf[len - 8] ^= 0x55;
    /* a flipped byte in the compressed data: inflate may turn it into other
       text before its check fails, so either error will do, never success */
    buf[len / 2] ^= 0x55;
    t = (tally){0};
    REQUIRE_EQ(read_memory(buf, len, &t, &s, err, sizeof err), -1);
    dt__rd_summary_free(&s);
    free(buf);
}

static void expect_error(const char *json, size_t len, const char *needle)
{
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    int rc = read_memory(json, len, &t, &s, err, sizeof err);
    if (rc != -1)
        FAIL("accepted: %.80s", json);
    if (!strstr(err, needle))
        FAIL("error \"%s\" does not mention \"%s\"", err, needle);
    if (strncmp(err, "byte ", 5) != 0)
        FAIL("error \"%s\" names no byte offset", err);
    dt__rd_summary_free(&s);
}

#define EXPECT_ERROR(json, needle) expect_error(json, sizeof(json) - 1, needle)

static void wrong_shapes_are_named(void)
{
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

static void error_offset_points_at_the_problem(void)
{
    static const char json[] = "{\"traceEvents\":[{\"ph\":\"X\"},\n{\"ts\":true}]}";
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    REQUIRE_EQ(read_memory(json, sizeof json - 1, &t, &s, err, sizeof err), -1);
    /* "true" ends at byte 38 */
    REQUIRE_STR(err, "byte 38: traceEvents[1]: \"ts\" must be a number of microseconds that fits, not a boolean");
    REQUIRE_EQ(t.events, 1);
    dt__rd_summary_free(&s);
}

static void hostile_nesting_is_bounded(void)
{
    size_t n = 1000000;
    char *deep = malloc(n);
    REQUIRE((deep) != NULL);
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

static void garbage_is_an_error(void)
{
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
        REQUIRE_EQ(read_memory(buf, len, &t, &s, err, sizeof err), -1);
        REQUIRE(strlen(err) > 0);
        dt__rd_summary_free(&s);
    }
}

static int stop_at_third(void *user, const dt_rd_event *e)
{
    (void)user;
    return e->index == 2 ? 7 : 0;
}

static void visitor_can_stop(void)
{
    size_t len;
    unsigned char *buf = slurp("good.json", &len);
    dt_rd_source *src = dt__rd_open_memory(buf, len);
    dt_rd_summary s;
    char err[512];
    REQUIRE_EQ(dt__rd_read(src, stop_at_third, NULL, &s, err, sizeof err), 7);
    REQUIRE_EQ(s.event_count, 3);
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    free(buf);
}

static void string_ids_and_unknown_keys(void)
{
    static const char json[] =
        "{\"otherData\":{\"a\":[1,2,{\"b\":null}]},\"traceEvents\":[{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Record "
        "Window End\",\"pid\":\"\",\"tid\":\"Spans\",\"ts\":5,\"extra\":[{\"x\":[]}],\"id\":\"0x1f\","
        "\"args\":{\"grid\":[1,2,3],\"name\":7,\"occupancy\":{\"k\":\"v\"}}}],\"distributedInfo\":{}}";
    dt_rd_source *src = dt__rd_open_memory(json, sizeof json - 1);
    tally t = {0};
    dt_rd_summary s;
    char err[512];
    REQUIRE_EQ(dt__rd_read(src, tally_visit, &t, &s, err, sizeof err), 0);
    REQUIRE_EQ(t.events, 1);
    REQUIRE_EQ(t.ts_sum, 5000);
    REQUIRE(!(s.has_devtrace));
    REQUIRE(!(s.loss.present));
    dt__rd_summary_free(&s);
    dt__rd_close(src);
}

static int name_length_visit(void *user, const dt_rd_event *e)
{
    *(size_t *)user = strlen(e->name);
    REQUIRE_EQ(e->name_len, strlen(e->name));
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
    REQUIRE_EQ(e->raw[0], '{');
    REQUIRE_EQ(e->raw[e->raw_len - 1], '}');
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

static void kineto_types_are_read_leniently_and_values_located(void)
{
    /* the shape torch.profiler writes on ROCm: ids as strings, pretty printed */
    static const char json[] =
        "{\"traceEvents\": [\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"pid\": 12 , \"tid\": \"stream 7\",\n"
        "    \"ts\": 1.500, \"dur\": 2,\n    \"args\": { \"External id\": \"42\", \"stream\": \"0x1f\",\n"
        "      \"correlation\": 9, \"device\": 1.5, \"bytes\": -3}\n  }\n]}";
    dt_rd_source *src = dt__rd_open_memory(json, sizeof json - 1);
    raw_seen r = {0};
    dt_rd_summary s;
    char err[512];
    dt_rd_options o = {.visit = raw_visit, .user = &r, .flags = DT_RD_RAW};
    REQUIRE_EQ(dt__rd_read_opts(src, &o, &s, err, sizeof err), 0);
    REQUIRE_EQ(r.events, 1);
    REQUIRE_STR(r.pid, "12");
    REQUIRE_STR(r.ts, "1.500");
    REQUIRE_STR(r.ext, "\"42\"");
    REQUIRE_STR(r.corr, "9");
    REQUIRE_STR(r.args, "{");
    REQUIRE_EQ(r.stream, 31);
    REQUIRE_EQ(r.string_args, 2);
    /* a fraction for an integer and a negative count are left out, and said */
    REQUIRE_EQ(r.odd, DT_RD_HAS_DEVICE | DT_RD_HAS_BYTES);
    dt__rd_summary_free(&s);
    dt__rd_close(src);
}

static void raw_events_survive_chunk_boundaries(void)
{
    /* through gzip the reader sees the text in windows it refills: the
       captured text of every event must still be whole */
    size_t len;
    unsigned char *buf = slurp("good.json.gz", &len);
    dt_rd_source *src = dt__rd_open_memory(buf, len);
    raw_seen r = {0};
    dt_rd_summary s;
    char err[512];
    dt_rd_options o = {.visit = raw_visit, .user = &r, .flags = DT_RD_RAW};
    REQUIRE_EQ(dt__rd_read_opts(src, &o, &s, err, sizeof err), 0);
    REQUIRE_EQ(r.events, 39);
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    free(buf);
}

/* Reads data through a window of the given size (0: the default). */
static int read_window(const void *data, size_t len, size_t window, unsigned flags, tally *t, char *err,
                       size_t errlen, uint64_t *events)
{
    dt_rd_source *src = dt__rd_open_memory(data, len);
    REQUIRE((src) != NULL);
    dt_rd_summary s;
    dt_rd_options o = {.visit = tally_visit, .user = t, .flags = flags, .window = window};
    int rc = dt__rd_read_opts(src, &o, &s, err, errlen);
    *events = s.event_count;
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    return rc;
}

static void window_never_changes_the_result(void)
{
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
                        FAIL("%s, %zu bytes, window %zu%s: rc %d, %llu events, \"%s\"; whole: rc %d, %llu "
                                 "events, \"%s\"", files[f], n, w, flags ? " (raw)" : "", rc, (unsigned long long)ev, err, rc_whole, (unsigned long long)ev_whole, err_whole);
                }
            }
        }
        free(buf);
    }
}

static void a_long_string_grows_the_window(void)
{
    /* a name of 3 MiB, in an event and in the devtrace key: the window
       doubles until each fits, and the text comes through whole */
    size_t name_len = 3u << 20;
    size_t cap = 2 * name_len + 1024;
    char *json = malloc(cap);
    REQUIRE((json) != NULL);
    size_t o = (size_t)snprintf(json, cap, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"");
    memset(json + o, 'k', name_len);
    o += name_len;
    o += (size_t)snprintf(json + o, cap - o, "\",\"ts\":1}],\"devtrace\":{\"backend\":\"");
    memset(json + o, 'b', name_len);
    o += name_len;
    o += (size_t)snprintf(json + o, cap - o, "\"}}");
    size_t seen = 0;
    dt_rd_source *src = dt__rd_open_memory(json, o);
    dt_rd_summary s;
    char err[512];
    REQUIRE_EQ(dt__rd_read(src, name_length_visit, &seen, &s, err, sizeof err), 0);
    REQUIRE_EQ(seen, name_len);
    REQUIRE_EQ(strlen(s.backend), name_len);
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    free(json);
}

/* A Perfetto trace another writer made (one slice on a thread's track,
   written with Perfetto's own protos): no "devtrace capture" slice. */
static const unsigned char other_pftrace[] =
    "\x0a\x0d\x50\x01\xe2\x03\x08\x08\x05\x22\x04\x08\x01\x10\x02\x0a\x1b\x40\xe8\x07\x50\x02\x5a\x06\x48\x01\x50"
    "\x01\x58\x05\x62\x0a\x12\x08\x08\x01\x12\x04\x77\x6f\x72\x6b\x68\x01\x0a\x0b\x40\xd0\x0f\x50\x02\x5a\x04\x48"
    "\x02\x58\x05";

static int read_err(const void *data, size_t len, unsigned flags, char *err, size_t errlen, int *format)
{
    dt_rd_source *src = dt__rd_open_memory(data, len);
    REQUIRE((src) != NULL);
    dt_rd_summary s;
    dt_rd_options o = {.flags = flags};
    int rc = dt__rd_read_opts(src, &o, &s, err, errlen);
    if (format)
        *format = s.format;
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    return rc;
}

/* What is not a JSON trace is named: a Perfetto trace devtrace did not
   write, a truncated or corrupt one, and other binary formats, gzip'd or
   not; never "invalid JSON". */
static void other_formats_are_named(void)
{
    char err[512];
    int format = -1;
    size_t n = sizeof other_pftrace - 1;
    REQUIRE_EQ(read_err(other_pftrace, n, 0, err, sizeof err, &format), -1);
    REQUIRE_EQ(format, DT_RD_FORMAT_PERFETTO);
    REQUIRE((strstr(err, "byte 0: a Perfetto protobuf trace not written by devtrace")) != NULL);
    /* every truncation that shows more than whitespace (its first two
       bytes are "\n\r"): an error naming the format and the byte */
    for (size_t k = 3; k < n; k++) {
        REQUIRE_EQ(read_err(other_pftrace, k, 0, err, sizeof err, NULL), -1);
        REQUIRE((strstr(err, "Perfetto")) != NULL);
        REQUIRE((strstr(err, "invalid JSON")) == NULL);
    }
    REQUIRE_EQ(read_err(other_pftrace, 20, 0, err, sizeof err, NULL), -1);
    REQUIRE_STR(err, "byte 15: Perfetto trace: truncated: a packet of 27 bytes has 3");
    /* merge's reading (the events' JSON text) refuses it by name */
    REQUIRE_EQ(read_err(other_pftrace, n, DT_RD_RAW, err, sizeof err, NULL), -1);
    REQUIRE_STR(err, "byte 0: a Perfetto protobuf trace: only JSON traces are taken here (record them with "
                     "--format json)");
    static const unsigned char elf[] = "\x7f" "ELF\x02\x01\x01\x00";
    REQUIRE_EQ(read_err(elf, sizeof elf - 1, 0, err, sizeof err, NULL), -1);
    REQUIRE_STR(err, "byte 0: not a trace: an ELF executable or library, neither JSON nor a Perfetto protobuf trace");
    /* JSON after more newlines than the format is told by (0x0a starts a
       Perfetto packet too) */
    static const char padded[] = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n{\"traceEvents\":[]}";
    REQUIRE_EQ(read_err(padded, sizeof padded - 1, 0, err, sizeof err, &format), 0);
    REQUIRE_EQ(format, DT_RD_FORMAT_JSON);
    static const unsigned char zip[] = "PK\x03\x04\x14\x00";
    REQUIRE_EQ(read_err(zip, sizeof zip - 1, 0, err, sizeof err, NULL), -1);
    REQUIRE_STR(err, "byte 0: not a trace: a zip archive, neither JSON nor a Perfetto protobuf trace");
}

static void missing_file_is_reported(void)
{
    char err[512];
    REQUIRE((dt__rd_open_file("/nonexistent/trace.json", err, sizeof err)) == NULL);
    REQUIRE((strstr(err, "/nonexistent/trace.json")) != NULL);
}

static void strtab_interns_many_keys(void)
{
    dt_strtab t;
    dt__strtab_init(&t);
    char key[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        bool added;
        REQUIRE_EQ(dt__strtab_intern(&t, key, (size_t)n, &added), i);
        REQUIRE(added);
    }
    for (int i = 0; i < 20000; i += 7) {
        int n = snprintf(key, sizeof key, "k%d", i);
        bool added;
        REQUIRE_EQ(dt__strtab_intern(&t, key, (size_t)n, &added), i);
        REQUIRE(!(added));
        REQUIRE_EQ(dt__strtab_find(&t, key, (size_t)n), i);
        REQUIRE_STR(dt__strtab_key(&t, (size_t)i), key);
    }
    REQUIRE_EQ(dt__strtab_find(&t, "nope", 4), -1);
    REQUIRE_EQ(dt__strtab_find(&t, "", 0), -1);
    REQUIRE_EQ(dt__strtab_intern(&t, "", 0, NULL), 20000);
    dt__strtab_free(&t);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(good_trace_values_are_exact),
             DT_TEST(kineto_types_are_read_leniently_and_values_located),
             DT_TEST(raw_events_survive_chunk_boundaries),
             DT_TEST(window_never_changes_the_result),
             DT_TEST(a_long_string_grows_the_window),
             DT_TEST(gzip_reads_like_plain),
             DT_TEST(microseconds_become_exact_nanoseconds),
             DT_TEST(every_truncation_is_an_error),
             DT_TEST(truncated_gzip_is_an_error),
             DT_TEST(wrong_shapes_are_named),
             DT_TEST(error_offset_points_at_the_problem),
             DT_TEST(hostile_nesting_is_bounded),
             DT_TEST(garbage_is_an_error),
             DT_TEST(visitor_can_stop),
             DT_TEST(string_ids_and_unknown_keys),
             DT_TEST(other_formats_are_named),
             DT_TEST(perfetto_args_are_the_json_text_typed),
             DT_TEST(malformed_perfetto_args_are_left_out),
             DT_TEST(missing_file_is_reported),
             DT_TEST(strtab_interns_many_keys))
