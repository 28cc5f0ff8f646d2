/* The reader as a library: check, stats and merge return what they find
   (src/reader/results.h), printed by nobody, so that a caller other than
   the command (a test, a tool) gets figures rather than text. */
#include "dt_check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "reader/results.h"

static const char *data_path(const char *rel)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", DT_SOURCE_DIR, rel);
    return path;
}

static dt_rd_source *open_data(const char *rel)
{
    char err[512];
    dt_rd_source *src = dt__rd_open_file(data_path(rel), err, sizeof err);
    if (!src)
        fprintf(stderr, "%s\n", err);
    return src;
}

static void test_check_returns_findings_by_kind(void)
{
    dt_rd_source *src = open_data("good.json");
    REQUIRE(src != NULL);
    dt_check_result r;
    dt__rd_check(src, "good", 0, &r);
    dt__rd_close(src);
    REQUIRE(!r.oom);
    CHECK_EQ(r.defects, 0);
    CHECK_EQ(r.known, 0);
    CHECK_EQ(r.events, 39);
    CHECK_EQ(r.flows, 6);
    CHECK(r.scope == NULL);
    dt__rd_check_free(&r);

    src = open_data("bad2_flow_unpaired.json");
    REQUIRE(src != NULL);
    dt__rd_check(src, "bad", 0, &r);
    dt__rd_close(src);
    REQUIRE(!r.oom);
    CHECK_EQ(r.defects, 1);
    int found = 0;
    for (int k = 0; k < DT_CHECK_KINDS; k++) {
        if (!r.kinds[k].count)
            continue;
        found++;
        CHECK_EQ(r.kinds[k].invariant, 2);
        CHECK_EQ(r.kinds[k].count, 1);
        REQUIRE_EQ(r.kinds[k].shown, 1);
        CHECK_STR(r.kinds[k].lines[0], "flow id 13 has 1 start(s) and 0 finish(es), not one each");
        CHECK(r.kinds[k].known == NULL);
    }
    CHECK_EQ(found, 1);
    dt__rd_check_free(&r);
}

static void test_stats_returns_rows_by_total_time(void)
{
    dt_rd_source *src = open_data("good.json");
    REQUIRE(src != NULL);
    dt_stats_result r;
    char err[512];
    unsigned reports = 1u << DT_STATS_KERNELS | 1u << DT_STATS_RANGES;
    REQUIRE_EQ(dt__rd_stats(src, reports, &r, err, sizeof err), 0);
    dt__rd_close(src);
    const dt_stats_table *k = &r.tables[DT_STATS_KERNELS];
    REQUIRE_EQ(k->count, 2);
    CHECK_EQ(k->total, 70750);
    CHECK_STR(k->rows[0].name, "relu_kernel");
    CHECK_EQ(k->rows[0].count, 3);
    CHECK_EQ(k->rows[0].total, 50500);
    CHECK_EQ(k->rows[0].min, 9500);
    CHECK_EQ(k->rows[0].max, 30500);
    CHECK(k->rows[0].median == 10500.0);
    CHECK_STR(k->rows[1].name, "void gemm<float>(float*, int)");
    const dt_stats_table *ranges = &r.tables[DT_STATS_RANGES];
    REQUIRE_EQ(ranges->count, 2);
    CHECK_STR(ranges->rows[0].name, "step");
    CHECK_EQ(ranges->rows[0].device_ns, 75250);
    CHECK_EQ(ranges->rows[1].device_ns, 30250);
    /* reports not asked for are empty */
    CHECK_EQ(r.tables[DT_STATS_API].count, 0);
    CHECK_EQ(r.summary.event_count, 39);
    CHECK(r.summary.loss.present);
    dt__rd_stats_free(&r);
    CHECK_STR(dt__rd_stats_report_name(DT_STATS_COLLECTIVES), "collectives");
    CHECK_EQ(dt__rd_stats_report_by_name("memcpy,api", 6), DT_STATS_MEMCPY);
    CHECK_EQ(dt__rd_stats_report_by_name("kernel", 6), -1);
}

static void test_merge_says_and_returns_counts(void)
{
    char out[] = "/tmp/devtrace-results-XXXXXX.json";
    int fd = mkstemps(out, 5);
    REQUIRE(fd >= 0);
    close(fd);
    const char *inputs[] = {data_path("good.json"), NULL};
    char same[1024];
    snprintf(same, sizeof same, "%s", inputs[0]);
    inputs[1] = same;
    dt_merge_request req = {.out_path = out, .inputs = inputs, .ninputs = 2};
    dt_merge_result r;
    dt_merge *m;
    REQUIRE_EQ(dt__rd_merge_open(&req, &m, &r), 0);
    CHECK_EQ(r.warnings, 1);
    REQUIRE_EQ(r.nlines, 1);
    CHECK(strncmp(r.lines[0], "warning: ", 9) == 0);
    CHECK(strstr(r.lines[0], "is given twice") != NULL);
    REQUIRE_EQ(dt__rd_merge_write(m, &r), 0);
    CHECK_EQ(r.traces, 2);
    CHECK_EQ(r.processes, 2);
    CHECK_EQ(r.events, 64);
    CHECK(strstr(r.agreement, "no trace names its host") != NULL);
    dt__rd_merge_close(m);
    dt__rd_merge_result_free(&r);
    /* the output may not be an input */
    req.inputs = (const char *const[]){out};
    req.ninputs = 1;
    CHECK_EQ(dt__rd_merge_open(&req, &m, &r), 2);
    REQUIRE(r.nlines >= 1);
    CHECK(strstr(r.lines[r.nlines - 1], "is also an input") != NULL);
    dt__rd_merge_close(m);
    dt__rd_merge_result_free(&r);
    unlink(out);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_check_returns_findings_by_kind),
             DT_TEST(test_stats_returns_rows_by_total_time),
             DT_TEST(test_merge_says_and_returns_counts))
