/* The record protocol: every line the injection library writes comes back
   from the parser `devtrace record` reads it with, field for field, paths
   with tabs, newlines and backslashes whole. */
#include "protocol/record.h"
#include "dt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static dt_record_line *new_line(dt_record_state state, int pid)
{
    dt_record_line *line = malloc(sizeof *line);
    REQUIRE(line != NULL);
    dt__record_line_init(line, state, pid);
    return line;
}

/* format, then parse; the text in *text (DT_RECORD_LINE_MAX) */
static dt_record_line *round_trip(const dt_record_line *line, char *text)
{
    size_t len = dt__record_format(text, DT_RECORD_LINE_MAX, line);
    REQUIRE(len > 0, "the line does not fit");
    CHECK_EQ(strlen(text), len);
    /* one line: a single '\n', at its end */
    CHECK(strchr(text, '\n') == text + len - 1, "%s", text);
    CHECK(strchr(text, '\r') == NULL, "%s", text);
    dt_record_line *back = malloc(sizeof *back);
    REQUIRE(back != NULL);
    REQUIRE_EQ(dt__record_parse(text, back), 0);
    CHECK_EQ(back->pid, line->pid);
    CHECK_EQ(back->state, line->state);
    return back;
}

static void test_a_written_trace_comes_back_with_its_counts(void)
{
    dt_record_line *line = new_line(DT_RECORD_WROTE, 4242);
    dt_record_end *e = &line->u.end;
    e->has_counts = 1;
    snprintf(e->backend, sizeof e->backend, "null");
    e->events = 123456789012ull;
    e->loss[DT_LOSS_NO_BUFFER] = 7;
    e->loss[DT_LOSS_FORKED_CHILD] = UINT64_MAX;
    snprintf(e->path, sizeof e->path, "/tmp/out/t.4242.json");
    snprintf(e->message, sizeof e->message, "t.json was written by another process during this run");
    char *text = malloc(DT_RECORD_LINE_MAX);
    REQUIRE(text != NULL);
    dt_record_line *back = round_trip(line, text);
    /* the text as the log has always held it */
    CHECK(strncmp(text, "4242\twrote\tbackend=null\tevents=123456789012\tloss.timestamp_zero=0\t", 66) == 0, "%s", text);
    CHECK(strstr(text, "\tloss.no_buffer=7\t") != NULL, "%s", text);
    CHECK(strstr(text, "\tpath=/tmp/out/t.4242.json\tmessage=t.json was written") != NULL, "%s", text);
    CHECK_EQ(back->u.end.has_counts, 1);
    CHECK_STR(back->u.end.backend, "null");
    CHECK_EQ(back->u.end.events, 123456789012ull);
    for (int r = 0; r < DT_LOSS_COUNT; r++) CHECK(back->u.end.loss[r] == e->loss[r], "loss %d", r);
    CHECK_STR(back->u.end.path, e->path);
    CHECK_STR(back->u.end.message, e->message);
    free(back);
    free(text);
    free(line);
}

static void test_every_kind_comes_back(void)
{
    char *text = malloc(DT_RECORD_LINE_MAX);
    REQUIRE(text != NULL);
    for (int s = 0; s < DT_RECORD_STATE_COUNT; s++) {
        dt_record_line *line = new_line((dt_record_state)s, 100 + s);
        char *path = dt__record_path(line);
        if (path) snprintf(path, DT_RECORD_PATH_MAX, "/p/%s.json", dt__record_state_name((dt_record_state)s));
        snprintf(dt__record_message(line), DT_RECORD_MESSAGE_MAX, "say %d", s);
        dt_record_line *back = round_trip(line, text);
        CHECK_STR(dt__record_state_name(back->state), dt__record_state_name((dt_record_state)s));
        CHECK_EQ(dt__record_state_by_name(dt__record_state_name((dt_record_state)s)), s);
        CHECK_STR(dt__record_message(back), dt__record_message(line));
        if (path) CHECK_STR(dt__record_path(back), path);
        else CHECK(dt__record_path(back) == NULL);
        /* without counts, an end says none */
        if (s == DT_RECORD_FAILED) {
            CHECK_EQ(back->u.end.has_counts, 0);
            CHECK(strstr(text, "events=") == NULL, "%s", text);
        }
        free(back);
        free(line);
    }
    /* empty values are left out */
    dt_record_line *line = new_line(DT_RECORD_STARTED, 9);
    REQUIRE(dt__record_format(text, DT_RECORD_LINE_MAX, line) > 0);
    CHECK_STR(text, "9\tstarted\n");
    free(line);
    free(text);
}

static void test_a_path_with_tabs_newlines_and_backslashes_comes_back_whole(void)
{
    static const char *const paths[] = {
        "/tmp/a\tb.json", "/tmp/a\nb\nc.json", "/tmp/cr\r.json", "/tmp/back\\slash\\t.json", "/tmp/\\\\\t\\n",
        "/tmp/key=value\tmessage=forged.json", "/tmp/trailing\\",
    };
    char *text = malloc(DT_RECORD_LINE_MAX);
    REQUIRE(text != NULL);
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        dt_record_line *line = new_line(DT_RECORD_WROTE, 77);
        snprintf(line->u.end.path, DT_RECORD_PATH_MAX, "%s", paths[i]);
        snprintf(line->u.end.backend, DT_RECORD_BACKEND_MAX, "b\tk");
        line->u.end.has_counts = 1;
        dt_record_line *back = round_trip(line, text);
        CHECK_STR(back->u.end.path, paths[i]);
        CHECK_STR(back->u.end.backend, "b\tk");
        CHECK(back->u.end.message[0] == 0, "path %zu forged a field: %s", i, text);
        free(back);
        free(line);
    }
    free(text);
}

static void test_a_message_is_one_line_of_text(void)
{
    char *text = malloc(DT_RECORD_LINE_MAX);
    REQUIRE(text != NULL);
    dt_record_line *line = new_line(DT_RECORD_FAILED, 5);
    snprintf(line->u.end.message, DT_RECORD_MESSAGE_MAX, "cannot write\t/tmp/x\ny:\r\\n No space");
    dt_record_line *back = round_trip(line, text);
    /* tabs and line breaks are spaces, as they were always printed; a backslash stays */
    CHECK_STR(back->u.end.message, "cannot write /tmp/x y: \\n No space");
    free(back);
    char copy[] = "a\tb\nc\rd";
    dt__record_one_line(copy);
    CHECK_STR(copy, "a b c d");
    free(line);
    free(text);
}

static void test_the_longest_line_fits_and_comes_back(void)
{
    char *text = malloc(DT_RECORD_LINE_MAX);
    REQUIRE(text != NULL);
    dt_record_line *line = new_line(DT_RECORD_WROTE, INT32_MAX);
    dt_record_end *e = &line->u.end;
    e->has_counts = 1;
    memset(e->backend, '\\', DT_RECORD_BACKEND_MAX - 1); /* each written as two characters */
    e->events = UINT64_MAX;
    for (int r = 0; r < DT_LOSS_COUNT; r++) e->loss[r] = UINT64_MAX;
    memset(e->path, '\t', DT_RECORD_PATH_MAX - 1);
    memset(e->message, '\\', DT_RECORD_MESSAGE_MAX - 1);
    dt_record_line *back = round_trip(line, text);
    CHECK_EQ(strlen(back->u.end.path), (size_t)DT_RECORD_PATH_MAX - 1);
    CHECK(memcmp(back->u.end.path, e->path, DT_RECORD_PATH_MAX) == 0);
    CHECK(memcmp(back->u.end.message, e->message, DT_RECORD_MESSAGE_MAX) == 0);
    CHECK(memcmp(back->u.end.backend, e->backend, DT_RECORD_BACKEND_MAX) == 0);
    CHECK_EQ(back->u.end.events, UINT64_MAX);
    free(back);
    /* a buffer too small holds nothing rather than a cut line */
    char small[64] = "x";
    CHECK_EQ(dt__record_format(small, sizeof small, line), 0u);
    CHECK_STR(small, "");
    free(line);
    free(text);
}

static void test_a_long_value_in_the_log_is_cut_not_overflowed(void)
{
    size_t n = 3 * DT_RECORD_PATH_MAX;
    char *text = malloc(n + 64);
    REQUIRE(text != NULL);
    int k = snprintf(text, 64, "12\tfailed\tpath=");
    memset(text + k, 'p', n);
    snprintf(text + k + n, 64, "\tmessage=why\n");
    dt_record_line *line = new_line(DT_RECORD_NOTE, 0);
    REQUIRE_EQ(dt__record_parse(text, line), 0);
    CHECK_EQ(strlen(line->u.end.path), (size_t)DT_RECORD_PATH_MAX - 1);
    CHECK_STR(line->u.end.message, "why");
    free(line);
    free(text);
}

static void test_what_is_no_record_line_is_refused(void)
{
    static const char *const bad[] = {
        "", "\n", "12", "12\n", "abc\twrote", "-3\twrote", "0\twrote", "12x\twrote", "\twrote",
        "12\tbogus", "12\t", "99999999999\twrote", "12\twrote-ish\tpath=/x",
    };
    dt_record_line *line = new_line(DT_RECORD_NOTE, 0);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(dt__record_parse(bad[i], line) == -1, "\"%s\"", bad[i]);
    /* unknown keys, fields without '=' and bad numbers are skipped */
    REQUIRE_EQ(dt__record_parse("12\twrote\tfuture=1\tjunk\tevents=x1\tloss.nope=3\tpath=/t\n", line), 0);
    CHECK_EQ(line->pid, 12);
    CHECK_EQ(line->state, DT_RECORD_WROTE);
    CHECK_EQ(line->u.end.has_counts, 0);
    CHECK_EQ(line->u.end.events, 0u);
    CHECK_STR(line->u.end.path, "/t");
    /* a note has no path */
    REQUIRE_EQ(dt__record_parse("12\tnote\tpath=/t\tmessage=m", line), 0);
    CHECK_STR(line->u.note.message, "m");
    free(line);
}

static void test_lines_appended_by_several_writers_read_back_in_order(void)
{
    char log_path[] = "/tmp/devtrace-test-record-XXXXXX";
    int fd = mkstemp(log_path);
    REQUIRE(fd >= 0);
    close(fd);
    for (int i = 0; i < 50; i++) {
        dt_record_line *line = new_line(i % 2 ? DT_RECORD_WROTE : DT_RECORD_STARTED, 1000 + i);
        snprintf(dt__record_path(line), DT_RECORD_PATH_MAX, "/tmp/t\n%d.json", i);
        CHECK_EQ(dt__record_append(log_path, line), 0);
        free(line);
    }
    FILE *f = fopen(log_path, "r");
    REQUIRE(f != NULL);
    char *text = NULL;
    size_t cap = 0;
    int n = 0;
    dt_record_line *line = new_line(DT_RECORD_NOTE, 0);
    while (getline(&text, &cap, f) >= 0) {
        REQUIRE_EQ(dt__record_parse(text, line), 0);
        CHECK_EQ(line->pid, 1000 + n);
        char want[64];
        snprintf(want, sizeof want, "/tmp/t\n%d.json", n);
        CHECK_STR(dt__record_path(line), want);
        n++;
    }
    CHECK_EQ(n, 50);
    fclose(f);
    free(text);
    free(line);
    unlink(log_path);
    dt_record_line *missing = new_line(DT_RECORD_NOTE, 1);
    CHECK_NE(dt__record_append("/nonexistent/dir/log", missing), 0);
    free(missing);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_a_written_trace_comes_back_with_its_counts),
             DT_TEST(test_every_kind_comes_back),
             DT_TEST(test_a_path_with_tabs_newlines_and_backslashes_comes_back_whole),
             DT_TEST(test_a_message_is_one_line_of_text),
             DT_TEST(test_the_longest_line_fits_and_comes_back),
             DT_TEST(test_a_long_value_in_the_log_is_cut_not_overflowed),
             DT_TEST(test_what_is_no_record_line_is_refused),
             DT_TEST(test_lines_appended_by_several_writers_read_back_in_order))
