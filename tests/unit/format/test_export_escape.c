/*
 * JSON string escaping and the streaming writer of the trace exporter:
 * whatever bytes go in, a valid JSON string comes out, and valid text
 * round-trips unchanged.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include <zlib.h>

#include "base/out.h"
#include "format/json.h"

static uint64_t rng = 0x243f6a8885a308d3u;
static uint32_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Parse `["<escaped>"]` and return the decoded string (malloc'ed), or NULL. */
static char *decode(const char *escaped, size_t n, size_t *out_len)
{
    char *doc = malloc(n + 3);
    doc[0] = '[';
    memcpy(doc + 1, escaped, n);
    doc[n + 1] = ']';
    doc[n + 2] = 0;
    char err[256];
    yajl_val v = yajl_tree_parse(doc, err, sizeof err);
    free(doc);
    if (!v)
        return NULL;
    char *res = NULL;
    if (YAJL_IS_ARRAY(v) && v->u.array.len == 1 && YAJL_IS_STRING(v->u.array.values[0])) {
        const char *s = YAJL_GET_STRING(v->u.array.values[0]);
        *out_len = strlen(s);
        res = strdup(s);
    }
    yajl_tree_free(v);
    return res;
}

static void test_escape_known_forms(void)
{
    static const struct { const char *in; size_t n; const char *out; } cases[] = {
        {"plain", 5, "\"plain\""},
        {"a\"b\\c", 5, "\"a\\\"b\\\\c\""},
        {"\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\""},
        {"\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\""},
        {"a\0b", 3, "\"a\\u0000b\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\""},           /* overlong '/' */
        {"\xed\xb0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* a lone surrogate */
        {"\xe2\x82", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\""},           /* cut short at the end */
        {"", 0, "\"\""},
    };
    char buf[128];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *e = dt__json_escape(buf, cases[k].in, cases[k].n);
        *e = 0;
        REQUIRE_STR(buf, cases[k].out);
        REQUIRE((size_t)(e - buf) <= dt__json_escaped_max(cases[k].n));
    }
}

static void test_escape_random_bytes_always_parse(void)
{
    char in[300], out[6 * 300 + 2];
    for (int round = 0; round < 20000; round++) {
        size_t n = next_random() % sizeof in;
        int printable = round % 2 == 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = next_random();
            /* half the rounds: valid UTF-8 text without control characters */
            in[i] = printable ? (char)(0x20 + r % 0x5f) : (char)r;
        }
        if (printable && n >= 4 && round % 4 == 0)
            memcpy(in + n / 2 - 2, "\xe2\x82\xac", 3);
        char *e = dt__json_escape(out, in, n);
        size_t len;
        char *dec = decode(out, (size_t)(e - out), &len);
        if (!dec)
            FAIL("round %d: escaped text does not parse", round);
        if (printable) {
            REQUIRE_EQ(len, n);
            REQUIRE(memcmp(dec, in, n) == 0);
        }
        free(dec);
    }
}

/* The writer escapes long strings in slices that fit its buffer; a slice
   must not cut a UTF-8 sequence in two. */
static void test_writer_long_strings_match_escaper(void)
{
    char path[] = "/tmp/dt_test_escape_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    dt_out o;
    REQUIRE_EQ(dt__out_init(&o, fd, 0, 1, 4096), 0);
    size_t n = 50000;
    char *s = malloc(n);
    for (size_t i = 0; i + 3 <= n; i += 3)
        memcpy(s + i, i % 7 ? "\xe2\x82\xac" : "\"\\\x01", 3);
    for (size_t i = n - n % 3; i < n; i++)
        s[i] = 'x';
    dt__json_string(&o, s, n);
    REQUIRE_EQ(dt__out_finish(&o), 0);
    REQUIRE_EQ(o.bytes, (uint64_t)lseek(fd, 0, SEEK_END));
    dt__out_free(&o);

    char *want = malloc(dt__json_escaped_max(n));
    size_t want_len = (size_t)(dt__json_escape(want, s, n) - want);
    char *got = malloc(want_len + 1);
    REQUIRE_EQ(pread(fd, got, want_len + 1, 0), (ssize_t)want_len);
    REQUIRE(memcmp(got, want, want_len) == 0);
    close(fd);
    unlink(path);
    free(s);
    free(want);
    free(got);
}

static void test_writer_gzip_round_trip(void)
{
    char path[] = "/tmp/dt_test_escape_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    dt_out o;
    REQUIRE_EQ(dt__out_init(&o, fd, 1, 1, 8192), 0);
    size_t total = 0;
    char line[64];
    for (int i = 0; i < 100000; i++) {
        char *p = dt__out_reserve(&o, sizeof line);
        char *e = dt__put_us3(p, (uint64_t)i * 1001);
        *e++ = '\n';
        total += (size_t)(e - p);
        dt__out_commit(&o, e);
    }
    REQUIRE_EQ(dt__out_finish(&o), 0);
    REQUIRE_EQ(o.bytes, total);
    dt__out_free(&o);
    close(fd);

    gzFile g = gzopen(path, "rb");
    REQUIRE((g) != NULL);
    char *buf = malloc(total + 16);
    REQUIRE_EQ(gzread(g, buf, (unsigned)total + 16), (int)total);
    gzclose(g);
    /* line i is i * 1.001 us with three decimals */
    char *p = buf;
    for (int i = 0; i < 100000; i++) {
        uint64_t ns = (uint64_t)i * 1001;
        int n = snprintf(line, sizeof line, "%llu.%03u\n", (unsigned long long)(ns / 1000),
                         (unsigned)(ns % 1000));
        REQUIRE(memcmp(p, line, (size_t)n) == 0);
        p += n;
    }
    free(buf);
    unlink(path);
}

static void test_number_formatting(void)
{
    char buf[64];
    *dt__put_u64(buf, 0) = 0;
    REQUIRE_STR(buf, "0");
    *dt__put_u64(buf, UINT64_MAX) = 0;
    REQUIRE_STR(buf, "18446744073709551615");
    *dt__put_i64(buf, INT64_MIN) = 0;
    REQUIRE_STR(buf, "-9223372036854775808");
    *dt__put_i64(buf, -7) = 0;
    REQUIRE_STR(buf, "-7");
    *dt__put_us3(buf, 5) = 0;
    REQUIRE_STR(buf, "0.005");
    *dt__put_us3(buf, 1234567) = 0;
    REQUIRE_STR(buf, "1234.567");
    *dt__put_us3(buf, UINT64_MAX) = 0;
    REQUIRE_STR(buf, "18446744073709551.615");
    *dt__put_fixed(buf, 12500000, 6) = 0;
    REQUIRE_STR(buf, "12.5");
    *dt__put_fixed(buf, 3000000, 6) = 0;
    REQUIRE_STR(buf, "3");
    *dt__put_fixed(buf, 1, 6) = 0;
    REQUIRE_STR(buf, "0.000001");
}

/* Integers are written straight into place, their length known first:
   every length, both sides of each power of ten, and random values, as
   printf writes them. */
static void test_integers_match_printf(void)
{
    char got[32], want[32];
    uint64_t values[200];
    size_t n = 0;
    uint64_t p10 = 1;
    for (int k = 0; k < 20; k++) {
        values[n++] = p10 - 1;
        values[n++] = p10;
        values[n++] = p10 + 1;
        if (k < 19) p10 *= 10;
    }
    for (int k = 0; k < 64; k++) {
        values[n++] = (uint64_t)1 << k;
        values[n++] = ((uint64_t)1 << k) - 1;
    }
    values[n++] = UINT64_MAX;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = i < (int)n ? values[i] : x >> (x % 64);
        *dt__put_u64(got, v) = 0;
        snprintf(want, sizeof want, "%llu", (unsigned long long)v);
        REQUIRE_STR(got, want);
    }
}

/* Integers are written with scratch bytes past their end: never more than
   DT_PUT_NUMBER_SLACK of them (fixed-size buffers of cached text rely on it),
   and never before the start. */
static void test_integers_stay_within_their_slack(void)
{
    uint64_t p10 = 1;
    for (int k = 0; k < 20; k++) {
        uint64_t values[3] = {p10 - 1, p10, k < 19 ? p10 * 10 - 1 : UINT64_MAX};
        for (int j = 0; j < 3; j++) {
            char buf[64];
            memset(buf, '#', sizeof buf);
            char *start = buf + 8;
            char *end = dt__put_u64(start, values[j]);
            for (char *q = buf; q < start; q++)
                REQUIRE_EQ(*q, '#');
            for (char *q = end + DT_PUT_NUMBER_SLACK; q < buf + sizeof buf; q++)
                REQUIRE_EQ(*q, '#');
        }
        if (k < 19)
            p10 *= 10;
    }
}

/* A write that fails on the thread that drains full buffers ends in the
   error, never in silence, and the writer stops early. */
static void test_writer_reports_a_failed_write(void)
{
    int fds[2];
    REQUIRE_EQ(pipe(fds), 0);
    close(fds[0]); /* writes now fail with EPIPE */
    signal(SIGPIPE, SIG_IGN);
    for (int gzip = 0; gzip <= 1; gzip++) {
        dt_out o;
        REQUIRE_EQ(dt__out_init(&o, fds[1], gzip, 1, 4096), 0);
        for (int i = 0; i < 100000 && !o.err; i++) {
            char *p = dt__out_reserve(&o, 64);
            dt__out_commit(&o, dt__put_u64(p, (uint64_t)i * 2654435761u));
        }
        REQUIRE_EQ(dt__out_finish(&o), EPIPE);
        dt__out_free(&o);
    }
    close(fds[1]);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_escape_known_forms),
             DT_TEST(test_escape_random_bytes_always_parse),
             DT_TEST(test_writer_long_strings_match_escaper),
             DT_TEST(test_writer_gzip_round_trip),
             DT_TEST(test_number_formatting),
             DT_TEST(test_integers_match_printf),
             DT_TEST(test_integers_stay_within_their_slack),
             DT_TEST(test_writer_reports_a_failed_write))
