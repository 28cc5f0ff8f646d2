/* A trace's events as batches of columns (src/columns/dt_columns.h): every
   event in exactly one batch, its values where they belong, the rank of a
   merged trace's process, the metadata, and errors. */
#include "dt_check.h"

/* the library is one file: compiled into the test, as into libdevtrace_columns */
#include "columns/columns.c"

#include <unistd.h>

static char trace_path[64];

static void write_trace(const char *text)
{
    strcpy(trace_path, "/tmp/dt_test_columns_XXXXXX");
    int fd = mkstemp(trace_path);
    REQUIRE(fd >= 0);
    size_t len = strlen(text);
    REQUIRE_EQ(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static const char *TRACE =
    "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"local_rank\": 1, \"world_size\": 8},\n"
    "\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 10.5, \"dur\": 2.25,"
    " \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 41, \"External id\": 9, \"grid\": [64, 2, 1],"
    " \"block\": [256, 1, 1]}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"hcom_allReduce_\", \"pid\": 25165829, \"tid\": 3, \"ts\": 20,"
    " \"dur\": 400, \"args\": {\"device\": 0, \"stream\": 3, \"Collective name\": \"allreduce\","
    " \"Process Group Name\": \"hccl_world_group\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"window\", \"pid\": \"rank 2 Spans\", \"tid\": \"P\", \"ts\": 1,"
    " \"dur\": 1000},\n"
    "{\"ph\": \"s\", \"id\": 41, \"pid\": 10, \"tid\": 10, \"ts\": 9, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 10, \"args\": {\"name\": \"python\"}}\n"
    "],\n"
    "\"devtrace\": {\"version\": \"0.1.0\", \"backend\": \"mspti\", \"host\": \"node7\","
    " \"loss\": {\"buffer_full\": 2, \"total\": 2}}}\n";

typedef struct seen {
    size_t batches, rows;
    size_t sizes[8];
    char names[8][32];
    int32_t part[8], kind[8];
    uint32_t valid[8];
    int64_t ts[8], dur[8], correlation[8], flow[8];
    int32_t grid[8][3], block[8][3];
    char collective[8][32], group[8][32], label[8][32], thread[8][32];
    char *keys[DT_COL_D_COUNT][16];
    int stop_after; /* stop after this many batches (0: never) */
} seen;

static void copy_key(const seen *s, int d, int32_t code, char *out)
{
    out[0] = '\0';
    if (code >= 0 && s->keys[d][code])
        snprintf(out, 32, "%s", s->keys[d][code]);
}

static int sink(void *user, const dt_col_batch *b)
{
    seen *s = user;
    CHECK_EQ(b->first_index, s->rows);
    for (int d = 0; d < DT_COL_D_COUNT; d++) {
        for (size_t k = b->dicts[d].first_new; k < b->dicts[d].count; k++) {
            REQUIRE(k < 16 && !s->keys[d][k]);
            s->keys[d][k] = strndup(b->dicts[d].keys[k], b->dicts[d].lens[k]);
        }
    }
    s->sizes[s->batches++] = b->rows;
    for (size_t r = 0; r < b->rows; r++) {
        size_t i = s->rows++;
        REQUIRE(i < 8);
        copy_key(s, DT_COL_D_NAME, b->dict[DT_COL_D_NAME][r], s->names[i]);
        copy_key(s, DT_COL_D_COLLECTIVE, b->dict[DT_COL_D_COLLECTIVE][r], s->collective[i]);
        copy_key(s, DT_COL_D_GROUP, b->dict[DT_COL_D_GROUP][r], s->group[i]);
        copy_key(s, DT_COL_D_LABEL, b->dict[DT_COL_D_LABEL][r], s->label[i]);
        copy_key(s, DT_COL_D_THREAD, b->dict[DT_COL_D_THREAD][r], s->thread[i]);
        s->part[i] = b->part[r];
        s->kind[i] = b->kind[r];
        s->valid[i] = b->valid[r];
        s->ts[i] = b->ts[r];
        s->dur[i] = b->dur[r];
        s->correlation[i] = b->correlation[r];
        s->flow[i] = b->flow_id[r];
        memcpy(s->grid[i], &b->grid[3 * r], sizeof s->grid[i]);
        memcpy(s->block[i], &b->block[3 * r], sizeof s->block[i]);
    }
    return s->stop_after && (int)s->batches == s->stop_after ? 7 : 0;
}

static void free_seen(seen *s)
{
    for (int d = 0; d < DT_COL_D_COUNT; d++)
        for (int k = 0; k < 16; k++)
            free(s->keys[d][k]);
}

static void every_event_once_in_batches_of_the_size_asked(void)
{
    write_trace(TRACE);
    seen s = {0};
    char *meta = NULL, err[256] = "";
    int rc = dt_col_read(trace_path, 2, sink, &s, &meta, err, sizeof err);
    unlink(trace_path);
    REQUIRE(rc == 0, "%s", err);
    CHECK_EQ(s.batches, 3);
    CHECK_EQ(s.sizes[0], 2);
    CHECK_EQ(s.sizes[1], 2);
    CHECK_EQ(s.sizes[2], 1);
    CHECK_EQ(s.rows, 5);
    /* a kernel's values, in exact nanoseconds */
    CHECK_STR(s.names[0], "gemm");
    CHECK_EQ(s.kind[0], DT_RD_CAT_KERNEL);
    CHECK_EQ(s.ts[0], 10500);
    CHECK_EQ(s.dur[0], 2250);
    CHECK_EQ(s.correlation[0], 41);
    CHECK_EQ(s.valid[0] & (DT_COL_V_GRID | DT_COL_V_BLOCK | DT_COL_V_CORR | DT_COL_V_EXT),
             DT_COL_V_GRID | DT_COL_V_BLOCK | DT_COL_V_CORR | DT_COL_V_EXT);
    CHECK_EQ(s.grid[0][0], 64);
    CHECK_EQ(s.grid[0][1], 2);
    CHECK_EQ(s.block[0][0], 256);
    CHECK_EQ(s.part[0], 0);
    CHECK_STR(s.collective[0], "");
    /* a collective, in a merged trace's rank 3 process (pid 3 * 2^23 + 5) */
    CHECK_STR(s.collective[1], "allreduce");
    CHECK_STR(s.group[1], "hccl_world_group");
    CHECK_EQ(s.part[1], 3);
    CHECK_EQ(s.valid[1] & (DT_COL_V_GRID | DT_COL_V_CORR), 0);
    /* a string pid names its rank */
    CHECK_EQ(s.part[2], 2);
    CHECK_STR(s.thread[2], "P");
    CHECK_EQ(s.valid[2] & DT_COL_V_PID, 0);
    /* a flow's id; a metadata event's name */
    CHECK_EQ(s.valid[3] & DT_COL_V_FLOW, DT_COL_V_FLOW);
    CHECK_EQ(s.flow[3], 41);
    CHECK_STR(s.label[4], "python");
    REQUIRE(meta);
    CHECK(strstr(meta, "\"distributedInfo\": {\"rank\": 3, \"local_rank\": 1, \"world_size\": 8}"), "%s", meta);
    CHECK(strstr(meta, "\"loss\": {\"buffer_full\": 2, \"total\": 2}"), "%s", meta);
    CHECK(strstr(meta, "\"backend\": \"mspti\""), "%s", meta);
    CHECK(strstr(meta, "\"host\": \"node7\""), "%s", meta);
    CHECK(strstr(meta, "\"events\": 5"), "%s", meta);
    CHECK(!strstr(meta, "{,"), "%s", meta);
    dt_col_free(meta);
    free_seen(&s);
}

static void a_cut_trace_is_an_error_with_its_metadata(void)
{
    char cut[2048];
    snprintf(cut, sizeof cut, "%.*s", (int)(strstr(TRACE, "{\"ph\": \"s\"") - TRACE), TRACE);
    write_trace(cut);
    seen s = {0};
    char *meta = NULL, err[256] = "";
    int rc = dt_col_read(trace_path, 0, sink, &s, &meta, err, sizeof err);
    unlink(trace_path);
    CHECK_EQ(rc, -1);
    CHECK(err[0] != '\0');
    REQUIRE(meta);
    CHECK(strstr(meta, "\"error\": "), "%s", meta);
    dt_col_free(meta);
    free_seen(&s);
}

static void the_sink_can_stop(void)
{
    write_trace(TRACE);
    seen s = {.stop_after = 1};
    char err[256] = "";
    int rc = dt_col_read(trace_path, 2, sink, &s, NULL, err, sizeof err);
    unlink(trace_path);
    CHECK_EQ(rc, 7);
    CHECK_EQ(s.batches, 1);
    free_seen(&s);
}

static void a_missing_file_is_named(void)
{
    char *meta = (char *)1, err[256] = "";
    seen s = {0};
    CHECK_EQ(dt_col_read("/nonexistent/trace.json", 0, sink, &s, &meta, err, sizeof err), -1);
    CHECK(strstr(err, "/nonexistent/trace.json"), "%s", err);
    CHECK(meta == NULL);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(every_event_once_in_batches_of_the_size_asked),
             DT_TEST(a_cut_trace_is_an_error_with_its_metadata),
             DT_TEST(the_sink_can_stop),
             DT_TEST(a_missing_file_is_named))
