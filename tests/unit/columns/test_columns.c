/* A trace's events as batches of columns (src/columns/dt_columns.h): every
   event in exactly one batch, its values where they belong, the rank of a
   merged trace's process, the metadata, and errors. */
#include "dt_check.h"

/* the library is one file: compiled into the test, as into libdevtrace_columns */
#include "columns/columns.c"
#include "columns/meta.c"

#include "dt_internal.h"
#include "dt_test_session.h"

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
    int stop_after; /* stop after this many batches (0: never) */
} seen;

/* Which of a row's values are there (not null in their Arrow column). */
enum {
    DT_COL_V_PID = 1u << 0,
    DT_COL_V_CORR = 1u << 1,
    DT_COL_V_EXT = 1u << 2,
    DT_COL_V_GRID = 1u << 3,
    DT_COL_V_BLOCK = 1u << 4,
    DT_COL_V_FLOW = 1u << 5,
};

static const struct ArrowArray *column(const dt_col_batch *b, int c)
{
    REQUIRE_EQ(b->array->n_children, DT_COL_C_COUNT);
    return b->array->children[c];
}

static int has_value(const dt_col_batch *b, int c, size_t r)
{
    const uint8_t *bits = column(b, c)->buffers[0];
    return !bits || ((bits[r >> 3] >> (r & 7)) & 1);
}

static int64_t i64_at(const dt_col_batch *b, int c, size_t r)
{
    return ((const int64_t *)column(b, c)->buffers[1])[r];
}

static int32_t i32_at(const dt_col_batch *b, int c, size_t r)
{
    return ((const int32_t *)column(b, c)->buffers[1])[r];
}

/* A dictionary column's string at row r ("" where null). */
static void string_at(const dt_col_batch *b, int c, size_t r, char *out)
{
    out[0] = '\0';
    if (!has_value(b, c, r))
        return;
    const struct ArrowArray *a = column(b, c), *d = a->dictionary;
    REQUIRE(d != NULL);
    int32_t code = ((const int32_t *)a->buffers[1])[r];
    REQUIRE(code >= 0 && code < d->length);
    const int32_t *offsets = d->buffers[1];
    const char *chars = d->buffers[2];
    snprintf(out, 32, "%.*s", (int)(offsets[code + 1] - offsets[code]), chars + offsets[code]);
}

static int sink(void *user, const dt_col_batch *b)
{
    seen *s = user;
    CHECK_EQ(b->first_index, s->rows);
    s->sizes[s->batches++] = b->rows;
    for (size_t r = 0; r < b->rows; r++) {
        size_t i = s->rows++;
        REQUIRE(i < 8);
        string_at(b, DT_COL_C_NAME, r, s->names[i]);
        string_at(b, DT_COL_C_COLLECTIVE, r, s->collective[i]);
        string_at(b, DT_COL_C_GROUP, r, s->group[i]);
        string_at(b, DT_COL_C_LABEL, r, s->label[i]);
        string_at(b, DT_COL_C_THREAD, r, s->thread[i]);
        s->part[i] = i32_at(b, DT_COL_C_PART, r);
        s->kind[i] = i32_at(b, DT_COL_C_KIND, r); /* the kinds' dictionary is enum dt_rd_cat's order */
        s->valid[i] = (has_value(b, DT_COL_C_PID, r) ? DT_COL_V_PID : 0) |
                      (has_value(b, DT_COL_C_CORRELATION, r) ? DT_COL_V_CORR : 0) |
                      (has_value(b, DT_COL_C_EXTERNAL_ID, r) ? DT_COL_V_EXT : 0) |
                      (has_value(b, DT_COL_C_GRID_X, r) ? DT_COL_V_GRID : 0) |
                      (has_value(b, DT_COL_C_BLOCK_X, r) ? DT_COL_V_BLOCK : 0) |
                      (has_value(b, DT_COL_C_FLOW_ID, r) ? DT_COL_V_FLOW : 0);
        s->ts[i] = i64_at(b, DT_COL_C_TS, r);
        s->dur[i] = i64_at(b, DT_COL_C_DUR, r);
        s->correlation[i] = i64_at(b, DT_COL_C_CORRELATION, r);
        s->flow[i] = i64_at(b, DT_COL_C_FLOW_ID, r);
        for (int k = 0; k < 3; k++) {
            s->grid[i][k] = i32_at(b, DT_COL_C_GRID_X + k, r);
            s->block[i][k] = i32_at(b, DT_COL_C_BLOCK_X + k, r);
        }
    }
    return s->stop_after && (int)s->batches == s->stop_after ? 7 : 0;
}

static void free_seen(seen *s)
{
    (void)s;
}

static void every_event_once_in_batches_of_the_size_asked(void)
{
    write_trace(TRACE);
    seen s = {0};
    char *meta = NULL, err[256] = "";
    int rc = dt_col_read(trace_path, 2, 0, sink, &s, &meta, err, sizeof err);
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
    int rc = dt_col_read(trace_path, 0, 0, sink, &s, &meta, err, sizeof err);
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
    int rc = dt_col_read(trace_path, 2, 0, sink, &s, NULL, err, sizeof err);
    unlink(trace_path);
    CHECK_EQ(rc, 7);
    CHECK_EQ(s.batches, 1);
    free_seen(&s);
}

/* Device work's rows of a trace: name, grid and block (or their absence),
   collective and process group ("" where null). */
typedef struct work_rows {
    size_t n;
    struct {
        char name[32], collective[32], group[32];
        bool has_grid, has_block;
        int32_t grid[3], block[3];
    } row[8];
} work_rows;

static int work_sink(void *user, const dt_col_batch *b)
{
    work_rows *w = user;
    for (size_t r = 0; r < b->rows; r++) {
        if (!dt__rd_cat_is_device_work(i32_at(b, DT_COL_C_KIND, r)))
            continue;
        REQUIRE(w->n < 8);
        __typeof__(w->row[0]) *o = &w->row[w->n++];
        string_at(b, DT_COL_C_NAME, r, o->name);
        string_at(b, DT_COL_C_COLLECTIVE, r, o->collective);
        string_at(b, DT_COL_C_GROUP, r, o->group);
        o->has_grid = has_value(b, DT_COL_C_GRID_X, r);
        o->has_block = has_value(b, DT_COL_C_BLOCK_X, r);
        for (int k = 0; k < 3; k++) {
            CHECK_EQ(has_value(b, DT_COL_C_GRID_X + k, r), o->has_grid);
            CHECK_EQ(has_value(b, DT_COL_C_BLOCK_X + k, r), o->has_block);
            o->grid[k] = i32_at(b, DT_COL_C_GRID_X + k, r);
            o->block[k] = i32_at(b, DT_COL_C_BLOCK_X + k, r);
        }
    }
    return 0;
}

/* One session devtrace writes as JSON and as Perfetto: the same grid,
   block, collective and process group from both, in one pass or two
   (steps). */
static void perfetto_gives_the_args_of_its_json(void)
{
    const uint64_t t0 = UINT64_C(1764000000000000000);
    dt_session *s = dt_test_written_session(t0, t0 + 1000000);
    dt_test_kernel(s, "gemm", t0 + 1000, 7, (dt_launch_config){{64, 2, 1}, {256, 1, 1}, 32, 1024, 0});
    dt_test_collective(s, "ncclDevKernel_AllReduce", "default_pg", t0 + 3000);
    dt_test_collective(s, "ncclDevKernel_Broadcast", NULL, t0 + 6000);
    char dir[] = "/tmp/dt_test_columns_XXXXXX", path[2][64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path[0], sizeof path[0], "%s/t.json", dir);
    snprintf(path[1], sizeof path[1], "%s/t.pftrace", dir);
    REQUIRE_EQ(dt_session_write(s, path[0], DT_FORMAT_JSON), DT_OK);
    REQUIRE_EQ(dt_session_write(s, path[1], DT_FORMAT_PERFETTO), DT_OK);
    dt_session_destroy(s);
    work_rows w[2][2];
    for (int f = 0; f < 2; f++) {
        for (int steps = 0; steps < 2; steps++) {
            memset(&w[f][steps], 0, sizeof w[f][steps]);
            char *meta = NULL, err[256] = "";
            int rc = dt_col_read(path[f], 2, steps ? DT_COL_STEPS : 0, work_sink, &w[f][steps], &meta, err,
                                 sizeof err);
            REQUIRE(rc == 0, "%s: %s", path[f], err);
            REQUIRE(meta != NULL);
            CHECK(strstr(meta, f ? "\"format\": \"perfetto\"" : "\"format\": \"json\""), "%s", meta);
            dt_col_free(meta);
        }
        unlink(path[f]);
    }
    rmdir(dir);
    const work_rows *json = &w[0][0];
    REQUIRE_EQ(json->n, 3);
    CHECK_STR(json->row[0].name, "gemm");
    CHECK(json->row[0].has_grid && json->row[0].has_block);
    CHECK(memcmp(json->row[0].grid, ((int32_t[]){64, 2, 1}), 12) == 0);
    CHECK(memcmp(json->row[0].block, ((int32_t[]){256, 1, 1}), 12) == 0);
    CHECK_STR(json->row[0].collective, "");
    CHECK(!json->row[1].has_grid && !json->row[1].has_block);
    CHECK_STR(json->row[1].collective, "ncclDevKernel_AllReduce");
    CHECK_STR(json->row[1].group, "default_pg");
    CHECK_STR(json->row[2].collective, "ncclDevKernel_Broadcast");
    CHECK_STR(json->row[2].group, "");
    for (int f = 0; f < 2; f++)
        for (int steps = 0; steps < 2; steps++)
            CHECK(memcmp(&w[f][steps], json, sizeof *json) == 0, "%s%s: other rows", f ? "Perfetto" : "JSON",
                  steps ? ", steps" : "");
}

/* The steps of rows, by their names ("" where the step is null). */
static int step_sink(void *user, const dt_col_batch *b)
{
    seen *s = user;
    for (size_t r = 0; r < b->rows; r++) {
        size_t i = s->rows++;
        REQUIRE(i < 8);
        string_at(b, DT_COL_C_NAME, r, s->names[i]);
        s->ts[i] = has_value(b, DT_COL_C_STEP, r) ? i64_at(b, DT_COL_C_STEP, r) : -1;
    }
    return 0;
}

/* The step column, whether the step's name is written plainly, through a
   JSON escape (which a scan of the bytes for the name would miss), or not
   at all (no step: every step null). */
static void steps_are_found_however_their_name_is_written(void)
{
    static const char *const steps[] = {"ProfilerStep#3", "Profiler\\u0053tep#3", "Forward#3"};
    for (int k = 0; k < 3; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"traceEvents\": [\n"
                 "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, \"ts\": 0,"
                 " \"dur\": 100},\n"
                 "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launch\", \"pid\": 1, \"tid\": 1, \"ts\": 10,"
                 " \"dur\": 5, \"args\": {\"correlation\": 7}},\n"
                 "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 200, \"dur\": 5,"
                 " \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 7}}\n"
                 "]}\n",
                 steps[k]);
        write_trace(text);
        seen s = {0};
        char err[256] = "";
        int rc = dt_col_read(trace_path, 0, DT_COL_STEPS, step_sink, &s, NULL, err, sizeof err);
        unlink(trace_path);
        REQUIRE_EQ(rc, 0);
        REQUIRE_EQ(s.rows, 3);
        int64_t want = k < 2 ? 3 : -1;
        CHECK_EQ(s.ts[0], want); /* the step itself */
        CHECK_EQ(s.ts[1], want); /* a call inside it */
        CHECK_EQ(s.ts[2], want); /* the work that call launched, after the step's end */
    }
}

/* What a row holds of the synchronisation and memory columns: -1 where null. */
typedef struct sync_seen {
    size_t rows;
    int64_t wait_stream[4], wait_corr[4], allocated[4], bytes[4], device[4];
} sync_seen;

static int64_t or_null(const dt_col_batch *b, int c, size_t r)
{
    return has_value(b, c, r) ? i64_at(b, c, r) : -1;
}

static int sync_sink(void *user, const dt_col_batch *b)
{
    sync_seen *s = user;
    for (size_t r = 0; r < b->rows; r++) {
        size_t i = s->rows++;
        REQUIRE(i < 4);
        s->wait_stream[i] = or_null(b, DT_COL_C_WAIT_STREAM, r);
        s->wait_corr[i] = or_null(b, DT_COL_C_WAIT_CORRELATION, r);
        s->allocated[i] = or_null(b, DT_COL_C_ALLOCATED, r);
        s->bytes[i] = or_null(b, DT_COL_C_BYTES, r);
        s->device[i] = or_null(b, DT_COL_C_DEVICE, r);
    }
    return 0;
}

/* Kineto's event syncs name the stream and the cudaEventRecord call of the
   event they wait for; torch's [memory] instants their size, total and
   device (Bytes, Total Allocated, Device Id); other events have none of
   these: a copy keeps its own bytes and device. */
static void event_waits_and_memory_events_give_their_args(void)
{
    write_trace("{\"traceEvents\": [\n"
                "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", \"pid\": 0, \"tid\": 24,"
                " \"ts\": 5, \"dur\": 2, \"args\": {\"wait_on_stream\": 20, \"wait_on_cuda_event_record_corr_id\": 1385,"
                " \"stream\": 24, \"correlation\": 1389, \"device\": 0}},\n"
                "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1,"
                " \"tid\": 1, \"ts\": 6, \"args\": {\"Total Reserved\": 0, \"Total Allocated\": 3145728,"
                " \"Bytes\": -1048576, \"Addr\": 4096, \"Device Type\": 1, \"Device Id\": 2}},\n"
                "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \"tid\": 7,"
                " \"ts\": 7, \"dur\": 1, \"args\": {\"device\": 1, \"stream\": 7, \"bytes\": 512}},\n"
                "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Context Sync\", \"pid\": 0, \"tid\": -1,"
                " \"ts\": 9, \"dur\": 1, \"args\": {\"stream\": -1, \"correlation\": 1424}}\n"
                "]}\n");
    sync_seen s = {0};
    char err[256] = "";
    int rc = dt_col_read(trace_path, 0, 0, sync_sink, &s, NULL, err, sizeof err);
    unlink(trace_path);
    REQUIRE(rc == 0, "%s", err);
    REQUIRE_EQ(s.rows, 4);
    CHECK_EQ(s.wait_stream[0], 20);
    CHECK_EQ(s.wait_corr[0], 1385);
    CHECK_EQ(s.allocated[0], -1);
    CHECK_EQ(s.bytes[1], -1048576);
    CHECK_EQ(s.allocated[1], 3145728);
    CHECK_EQ(s.device[1], 2);
    CHECK_EQ(s.wait_stream[1], -1);
    CHECK_EQ(s.bytes[2], 512);
    CHECK_EQ(s.device[2], 1);
    CHECK_EQ(s.allocated[2], -1);
    CHECK_EQ(s.wait_stream[3], -1);
    CHECK_EQ(s.wait_corr[3], -1);
}

static void a_missing_file_is_named(void)
{
    char *meta = (char *)1, err[256] = "";
    seen s = {0};
    CHECK_EQ(dt_col_read("/nonexistent/trace.json", 0, 0, sink, &s, &meta, err, sizeof err), -1);
    CHECK(strstr(err, "/nonexistent/trace.json"), "%s", err);
    CHECK(meta == NULL);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(every_event_once_in_batches_of_the_size_asked),
             DT_TEST(a_cut_trace_is_an_error_with_its_metadata),
             DT_TEST(the_sink_can_stop),
             DT_TEST(a_missing_file_is_named),
             DT_TEST(event_waits_and_memory_events_give_their_args),
             DT_TEST(perfetto_gives_the_args_of_its_json),
             DT_TEST(steps_are_found_however_their_name_is_written))
