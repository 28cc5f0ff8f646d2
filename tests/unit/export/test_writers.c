/* The trace formats (src/format/formats.h's table, through the public API
   too) and their writers (src/export/writers.h): their names, suffixes and
   numbers agree, a file name chooses the format its suffix names, a name is
   given the suffix of the format asked for, every format has a writer, and
   the lists that usage and messages print come from the table. */
#include "dt_check.h"

#include <stdio.h>
#include <string.h>

#include "core/event.h"
#include "devtrace/devtrace.h"
#include "export/writers.h"
#include "format/formats.h"
#include "format/names.h"

static void test_formats_are_listed_by_number_with_their_names_and_suffixes(void)
{
    static const char *const names[] = {"json", "json.gz", "perfetto", "perfetto.gz"};
    static const char *const suffixes[] = {".json", ".json.gz", ".pftrace", ".pftrace.gz"};
    int count = 0;
    while (dt_format_name((dt_format)count))
        count++;
    REQUIRE_EQ(count, 4);
    for (int f = 0; f < count; f++) {
        CHECK_STR(dt_format_name((dt_format)f), names[f]);
        CHECK_STR(dt_format_suffix((dt_format)f), suffixes[f]);
        CHECK_EQ(dt_format_by_name(names[f]), f);
        char path[64];
        snprintf(path, sizeof path, "trace%s", suffixes[f]);
        CHECK_EQ((int)dt_format_of_path(path, (dt_format)-1), f);
    }
    CHECK(dt_format_name((dt_format)-1) == NULL);
    CHECK(dt_format_suffix((dt_format)4) == NULL);
    CHECK_EQ(dt_format_by_name("pftrace"), -1);
    CHECK_EQ(dt_format_by_name(""), -1);
    CHECK_EQ(dt_format_available((dt_format)7), 0);
    CHECK_EQ(dt_format_available(DT_FORMAT_JSON), 1);
    CHECK_EQ(dt_format_available(DT_FORMAT_PERFETTO), 1);
}

static void test_the_longest_suffix_chooses(void)
{
    CHECK_EQ(dt_format_of_path("t.pftrace.gz", DT_FORMAT_JSON), DT_FORMAT_PERFETTO_GZ);
    CHECK_EQ(dt_format_of_path("t.gz", DT_FORMAT_JSON), DT_FORMAT_JSON_GZ);
    CHECK_EQ(dt_format_of_path("t.txt", DT_FORMAT_PERFETTO), DT_FORMAT_PERFETTO);
    /* a suffix is not the whole name */
    CHECK_EQ(dt_format_of_path(".pftrace", DT_FORMAT_JSON), DT_FORMAT_JSON);
    CHECK_EQ(dt_format_suffix_length("t.pftrace.gz"), strlen(".pftrace.gz"));
    CHECK_EQ(dt_format_suffix_length("t.json.gz"), strlen(".json.gz"));
    CHECK_EQ(dt_format_suffix_length("t.gz"), strlen(".gz"));
    CHECK_EQ(dt_format_suffix_length("t.json"), strlen(".json"));
    CHECK_EQ(dt_format_suffix_length("t.json.txt"), 0);
    CHECK_EQ(dt_format_suffix_length(".json"), 0);
}

static void check_path(const char *path, dt_format format, const char *want)
{
    char buf[256];
    CHECK_EQ(dt_format_path(path, format, buf, sizeof buf), strlen(want));
    CHECK_STR(buf, want);
    CHECK_EQ(dt_format_of_path(buf, DT_FORMAT_JSON), format);
}

static void test_a_name_gets_the_suffix_of_the_format_asked_for(void)
{
    check_path("t.json", DT_FORMAT_JSON, "t.json");
    check_path("t.pftrace.gz", DT_FORMAT_PERFETTO_GZ, "t.pftrace.gz");
    check_path("devtrace", DT_FORMAT_PERFETTO, "devtrace.pftrace");
    check_path("devtrace", DT_FORMAT_JSON, "devtrace.json");
    check_path("t.out", DT_FORMAT_JSON, "t.out.json");
    check_path("t.json", DT_FORMAT_JSON_GZ, "t.json.gz");
    check_path("t.out", DT_FORMAT_JSON_GZ, "t.out.gz");
    check_path("t.pftrace", DT_FORMAT_PERFETTO_GZ, "t.pftrace.gz");
    check_path("t.json", DT_FORMAT_PERFETTO_GZ, "t.json.pftrace.gz");
    check_path("t.json.gz", DT_FORMAT_PERFETTO, "t.json.gz.pftrace");
    /* ".gz" would make it Perfetto's */
    check_path("t.pftrace", DT_FORMAT_JSON_GZ, "t.pftrace.json.gz");
    /* snprintf's contract: the whole length, the text cut */
    char small[8];
    CHECK_EQ(dt_format_path("trace", DT_FORMAT_PERFETTO_GZ, small, sizeof small), strlen("trace.pftrace.gz"));
    CHECK_STR(small, "trace.p");
}

static void test_every_writer_is_the_one_its_name_number_and_suffixes_give(void)
{
    size_t cursor = 0, n = 0;
    for (const dt_fmt *w; (w = dt__fmt_next(&cursor)); n++) {
        CHECK(dt__fmt_by_name(w->name) == w);
        CHECK(dt__fmt_of((int)w->format) == w);
        char path[64];
        size_t len = 0;
        snprintf(path, sizeof path, "x%s", w->suffix);
        CHECK(dt__fmt_of_path(path, &len) == w);
        CHECK_EQ(len, strlen(w->suffix));
        if (w->also) {
            snprintf(path, sizeof path, "x%s", w->also);
            CHECK(dt__fmt_of_path(path, &len) == w);
        }
        const dt_fmt *plain = dt__fmt_of((int)w->plain);
        REQUIRE(plain != NULL);
        CHECK_EQ(plain->gzip, 0);
        REQUIRE(dt__wr_of_format((int)w->format) != NULL);
        CHECK(dt__wr_of_format((int)plain->format) == dt__wr_of_format((int)w->format));
        CHECK_EQ(dt__fmt_available(w), dt_format_available(w->format));
    }
    CHECK_EQ(n, 4);
    CHECK(dt__fmt_of_path("x.txt", NULL) == NULL);
    CHECK(dt__wr_of_format(4) == NULL);
}

static void test_the_lists_of_formats_come_from_the_table(void)
{
    char buf[256];
    CHECK_STR(dt__fmt_list(buf, sizeof buf, DT_FMT_NAME, -1, ", ", " or "), "json, json.gz, perfetto or perfetto.gz");
    CHECK_STR(dt__fmt_list(buf, sizeof buf, DT_FMT_NAME, -1, "|", "|"), "json|json.gz|perfetto|perfetto.gz");
    CHECK_STR(dt__fmt_list(buf, sizeof buf, DT_FMT_SUFFIX, -1, ", ", ", "), ".json, .json.gz, .pftrace, .pftrace.gz");
    /* the suffixes that choose a format other than the default */
    CHECK_STR(dt__fmt_list(buf, sizeof buf, DT_FMT_CHOOSER, DT_FORMAT_JSON, ", ", " or "), ".gz, .pftrace or .pftrace.gz");
    CHECK_STR(dt__fmt_list(buf, sizeof buf, DT_FMT_CONSTANT, -1, ", ", " or "),
              "DT_FORMAT_JSON, DT_FORMAT_JSON_GZ, DT_FORMAT_PERFETTO or DT_FORMAT_PERFETTO_GZ");
    /* cut to fit, terminated */
    char small[10];
    CHECK_STR(dt__fmt_list(small, sizeof small, DT_FMT_NAME, -1, ", ", " or "), "json, jso");
}

static void test_every_event_kind_and_loss_reason_has_its_name(void)
{
    static const char *const kinds[] = {NULL, "kernel", "memcpy", "memset", "runtime", "driver", "sync",
                                        "overhead", "range", "op", "collective", "memory"};
    REQUIRE_EQ(sizeof kinds / sizeof *kinds, (size_t)DT_EVENT_KIND_MAX + 1);
    for (int k = 1; k <= DT_EVENT_KIND_MAX; k++)
        CHECK_STR(dt__fmt_event_kind_name(k), kinds[k]);
    CHECK(dt__fmt_event_kind_name(0) == NULL);
    CHECK(dt__fmt_event_kind_name(DT_EVENT_KIND_MAX + 1) == NULL);
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *name = dt_loss_reason_name((dt_loss_reason)r);
        REQUIRE(name != NULL);
        CHECK(strcmp(name, "unknown") != 0);
        for (int q = 0; q < r; q++)
            CHECK(strcmp(name, dt_loss_reason_name((dt_loss_reason)q)) != 0);
    }
    CHECK_STR(dt_loss_reason_name(DT_LOSS_COUNT), "unknown");
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_formats_are_listed_by_number_with_their_names_and_suffixes),
             DT_TEST(test_the_longest_suffix_chooses),
             DT_TEST(test_a_name_gets_the_suffix_of_the_format_asked_for),
             DT_TEST(test_every_writer_is_the_one_its_name_number_and_suffixes_give),
             DT_TEST(test_the_lists_of_formats_come_from_the_table),
             DT_TEST(test_every_event_kind_and_loss_reason_has_its_name))
