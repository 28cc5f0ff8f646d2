/* A trace's events as batches of columns (dt_columns.h): the streaming
   reader's visitor fills the columns of an Arrow record batch in place,
   and the dictionary columns' per-batch dictionaries. */
#include "dt_columns.h"
#include "columns/meta.h"

#include "format/json.h"
#include "base/vec.h"
#include "reader/dt_reader.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_COL_DEFAULT_ROWS 65536
/* A merged trace moves rank k's numeric pids by k * 2^23 (docs/trace-format.md). */
#define DT_COL_RANK_SHIFT 23

/* The string dictionaries, and the column each fills. */
enum { SD_PH, SD_CAT, SD_NAME, SD_THREAD, SD_COLLECTIVE, SD_GROUP, SD_LABEL, SD_COUNT };
static const int sd_column[SD_COUNT] = {DT_COL_C_PH,         DT_COL_C_CAT,   DT_COL_C_NAME, DT_COL_C_THREAD,
                                        DT_COL_C_COLLECTIVE, DT_COL_C_GROUP, DT_COL_C_LABEL};

enum { T_I64, T_I32, T_U8, T_DICT, T_KIND };
static const struct {
    unsigned char type, nullable;
} col_type[DT_COL_C_COUNT] = {
    [DT_COL_C_INDEX] = {T_I64, 0},       [DT_COL_C_PH] = {T_DICT, 0},         [DT_COL_C_CAT] = {T_DICT, 0},
    [DT_COL_C_KIND] = {T_KIND, 0},       [DT_COL_C_NAME] = {T_DICT, 0},       [DT_COL_C_PID] = {T_I64, 1},
    [DT_COL_C_TID] = {T_I64, 1},         [DT_COL_C_THREAD] = {T_DICT, 1},     [DT_COL_C_TS] = {T_I64, 1},
    [DT_COL_C_DUR] = {T_I64, 1},         [DT_COL_C_DEVICE] = {T_I64, 1},      [DT_COL_C_STREAM] = {T_I64, 1},
    [DT_COL_C_CORRELATION] = {T_I64, 1}, [DT_COL_C_EXTERNAL_ID] = {T_I64, 1}, [DT_COL_C_BYTES] = {T_I64, 1},
    [DT_COL_C_GRID_X] = {T_I32, 1},      [DT_COL_C_GRID_Y] = {T_I32, 1},      [DT_COL_C_GRID_Z] = {T_I32, 1},
    [DT_COL_C_BLOCK_X] = {T_I32, 1},     [DT_COL_C_BLOCK_Y] = {T_I32, 1},     [DT_COL_C_BLOCK_Z] = {T_I32, 1},
    [DT_COL_C_COLLECTIVE] = {T_DICT, 1}, [DT_COL_C_GROUP] = {T_DICT, 1},      [DT_COL_C_LABEL] = {T_DICT, 1},
    [DT_COL_C_WAIT_STREAM] = {T_I64, 1}, [DT_COL_C_WAIT_CORRELATION] = {T_I64, 1},
    [DT_COL_C_ALLOCATED] = {T_I64, 1},
    [DT_COL_C_STEP] = {T_I64, 1},        [DT_COL_C_FLOW_ID] = {T_I64, 1},     [DT_COL_C_PART] = {T_I32, 0},
    [DT_COL_C_FLOW] = {T_U8, 0},
};

static size_t col_width(int c)
{
    switch (col_type[c].type) {
    case T_I64: return 8;
    case T_U8: return 1;
    default: return 4;
    }
}

/* ---- one batch, as Arrow arrays ------------------------------------------ */

/* A batch's memory: the arrays the Arrow structs point at. It lives until
   the consumer releases the batch, which may be after dt_col_read. */
typedef struct col_export {
    struct ArrowArray cols[DT_COL_C_COUNT], dicts[SD_COUNT + 1];
    struct ArrowArray *children[DT_COL_C_COUNT];
    const void *bufs[DT_COL_C_COUNT][2];
    const void *dict_bufs[SD_COUNT + 1][3];
    const void *root_bufs[1];
    uint8_t *validity[DT_COL_C_COUNT];
    void *data[DT_COL_C_COUNT];
    /* each dictionary's strings in this batch: Arrow utf8 offsets and bytes */
    int32_t *offsets[SD_COUNT + 1];
    char *chars[SD_COUNT + 1];
    size_t chars_len[SD_COUNT + 1], chars_cap[SD_COUNT + 1];
    int32_t nlocal[SD_COUNT + 1]; /* [SD_COUNT]: the kinds */
} col_export;

static void exp_free(col_export *x)
{
    if (!x)
        return;
    for (int c = 0; c < DT_COL_C_COUNT; c++) {
        free(x->validity[c]);
        free(x->data[c]);
    }
    for (int d = 0; d <= SD_COUNT; d++) {
        free(x->offsets[d]);
        free(x->chars[d]);
    }
    free(x);
}

static void exp_release_root(struct ArrowArray *a)
{
    exp_free(a->private_data);
    a->release = NULL;
}

/* The children are the root's: released with it. */
static void exp_release_child(struct ArrowArray *a)
{
    a->release = NULL;
}

static const char col_kinds[] = DT_COL_KINDS;

static col_export *exp_new(size_t rows)
{
    col_export *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    for (int c = 0; c < DT_COL_C_COUNT; c++) {
        if (!(x->data[c] = malloc(rows * col_width(c))))
            goto fail;
        if (col_type[c].nullable && !(x->validity[c] = calloc((rows + 7) / 8, 1)))
            goto fail;
    }
    for (int d = 0; d <= SD_COUNT; d++) {
        /* a batch's strings are at most its rows; the kinds, all of them */
        size_t n = d == SD_COUNT ? sizeof col_kinds : rows;
        if (!(x->offsets[d] = malloc((n + 1) * sizeof *x->offsets[d])))
            goto fail;
        x->offsets[d][0] = 0;
    }
    /* the kinds' dictionary, whole (enum dt_rd_cat's order) */
    if (!(x->chars[SD_COUNT] = malloc(sizeof col_kinds)))
        goto fail;
    int32_t k = 0;
    for (size_t i = 0; i < sizeof col_kinds; i++) {
        if (col_kinds[i] == ',' || col_kinds[i] == '\0')
            x->offsets[SD_COUNT][++k] = (int32_t)x->chars_len[SD_COUNT];
        else
            x->chars[SD_COUNT][x->chars_len[SD_COUNT]++] = col_kinds[i];
    }
    x->nlocal[SD_COUNT] = k;
    return x;
fail:
    exp_free(x);
    return NULL;
}

/* Row r of column c has a value (columns that always have one keep no bitmap). */
static inline void exp_valid(col_export *x, int c, size_t r)
{
    if (x->validity[c])
        x->validity[c][r >> 3] |= (uint8_t)(1u << (r & 7));
}

static inline void exp_i64(col_export *x, int c, size_t r, bool ok, int64_t v)
{
    ((int64_t *)x->data[c])[r] = ok ? v : 0;
    if (ok)
        exp_valid(x, c, r);
}

static inline void exp_i32(col_export *x, int c, size_t r, bool ok, int32_t v)
{
    ((int32_t *)x->data[c])[r] = ok ? v : 0;
    if (ok)
        exp_valid(x, c, r);
}

static int64_t exp_nulls(const col_export *x, int c, size_t rows)
{
    if (!col_type[c].nullable)
        return 0;
    int64_t set = 0;
    for (size_t i = 0; i < rows / 8; i++)
        set += __builtin_popcount(x->validity[c][i]);
    for (size_t r = rows / 8 * 8; r < rows; r++)
        set += (x->validity[c][r >> 3] >> (r & 7)) & 1;
    return (int64_t)rows - set;
}

static void exp_utf8(struct ArrowArray *a, const void **bufs, int64_t n, const int32_t *offsets,
                     const char *chars)
{
    bufs[0] = NULL;
    bufs[1] = offsets;
    bufs[2] = chars ? chars : "";
    *a = (struct ArrowArray){.length = n, .n_buffers = 3, .buffers = bufs, .release = exp_release_child};
}

/* Points the Arrow structs at the batch's arrays: root, its columns, their
   dictionaries. */
static void exp_finish(col_export *x, size_t rows, struct ArrowArray *root)
{
    int dict_of[DT_COL_C_COUNT];
    for (int c = 0; c < DT_COL_C_COUNT; c++)
        dict_of[c] = -1;
    for (int d = 0; d < SD_COUNT; d++)
        dict_of[sd_column[d]] = d;
    dict_of[DT_COL_C_KIND] = SD_COUNT;
    for (int c = 0; c < DT_COL_C_COUNT; c++) {
        x->bufs[c][0] = x->validity[c];
        x->bufs[c][1] = x->data[c];
        x->cols[c] = (struct ArrowArray){.length = (int64_t)rows, .null_count = exp_nulls(x, c, rows),
                                         .n_buffers = 2, .buffers = x->bufs[c], .release = exp_release_child};
        int d = dict_of[c];
        if (d >= 0) {
            exp_utf8(&x->dicts[d], x->dict_bufs[d], x->nlocal[d], x->offsets[d], x->chars[d]);
            x->cols[c].dictionary = &x->dicts[d];
        }
        x->children[c] = &x->cols[c];
    }
    x->root_bufs[0] = NULL;
    *root = (struct ArrowArray){.length = (int64_t)rows, .n_buffers = 1, .buffers = x->root_bufs,
                                .n_children = DT_COL_C_COUNT, .children = x->children,
                                .release = exp_release_root, .private_data = x};
}

/* ---- the reading --------------------------------------------------------- */

/* A string dictionary: every string so far, with the batch that last used
   each and its code there. */
typedef struct col_dict {
    dt_strtab tab;
    struct col_seen {
        uint64_t serial; /* the batch that last used the string (0: none) */
        int32_t code;    /* its code there */
    } *seen;             /* by the string's id */
    size_t cap;
    int64_t last; /* the string met last (-1: none): runs of one category or phase skip the hash */
} col_dict;

/* A step: a ProfilerStep#N range of part (rank). */
typedef struct col_step {
    int32_t part;
    int64_t s, e, n;
} col_step;

/* Launch calls and operators of one part: correlation / External id ->
   their start. */
typedef struct col_launches {
    dt_u64map corr, ext;
} col_launches;

typedef struct col_state {
    size_t cap;
    size_t rows;
    uint64_t first_index;
    int32_t part_min, part_max;
    size_t flows;
    uint64_t serial; /* the batch's, from 1 */
    bool unopened; /* the trace could not be opened: no metadata */
    col_export *x;
    struct ArrowArray out;
    col_dict dict[SD_COUNT];
    dt_col_sink sink;
    void *user;
    char *scratch; /* decoded string args */
    size_t scratch_cap;
    col_counts counts; /* what the metadata says of the reading */
    int failed;               /* 1: out of memory; 2: a batch's strings past 2 GiB */
    /* steps (DT_COL_STEPS) */
    col_step *steps;
    size_t steps_cap;
    dt_u64map part_index; /* part -> index in launches */
    col_launches *launches;
    size_t nlaunches, launches_cap;
    uint64_t steps_found;
} col_state;

int dt_col_abi(void)
{
    return DT_COL_ABI;
}

void dt_col_free(void *p)
{
    free(p);
}

static void col_release(col_state *s)
{
    if (s->out.release)
        s->out.release(&s->out);
    exp_free(s->x);
    for (int d = 0; d < SD_COUNT; d++) {
        dt__strtab_free(&s->dict[d].tab);
        free(s->dict[d].seen);
    }
    free(s->scratch);
    free(s->steps);
    for (size_t i = 0; i < s->nlaunches; i++) {
        dt__u64map_free(&s->launches[i].corr);
        dt__u64map_free(&s->launches[i].ext);
    }
    free(s->launches);
    dt__u64map_free(&s->part_index);
}

static int col_begin(col_state *s)
{
    s->x = exp_new(s->cap);
    if (!s->x) {
        s->failed = 1;
        return -1;
    }
    s->serial++;
    s->part_min = INT32_MAX;
    s->part_max = INT32_MIN;
    s->flows = 0;
    return 0;
}

static int col_flush(col_state *s)
{
    if (s->rows == 0)
        return 0;
    exp_finish(s->x, s->rows, &s->out);
    s->x = NULL; /* the batch's memory is the root's now */
    dt_col_batch b = {.rows = s->rows, .first_index = s->first_index, .part_min = s->part_min,
                      .part_max = s->part_max, .flows = s->flows, .array = &s->out};
    int rc = s->sink(s->user, &b);
    if (s->out.release)
        s->out.release(&s->out);
    s->first_index += s->rows;
    s->rows = 0;
    if (rc == 0 && col_begin(s) != 0)
        return 1;
    return rc;
}

/* The code of text in dictionary d's batch dictionary, added there when the
   batch has not used it yet; -1 when out of memory. */
static int32_t col_code(col_state *s, int d, const char *text, size_t len)
{
    col_dict *t = &s->dict[d];
    int64_t id = t->last;
    if (id < 0 || t->tab.lens[id] != len || memcmp(t->tab.keys[id], text, len) != 0)
        id = t->last = dt__strtab_intern(&t->tab, text, len, NULL);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&t->seen, &t->cap, (size_t)id + 1, sizeof *t->seen) != 0) {
        s->failed = 1;
        return -1;
    }
    if (t->seen[id].serial == s->serial)
        return t->seen[id].code;
    col_export *x = s->x;
    if (x->chars_len[d] + len > INT32_MAX) {
        s->failed = 2;
        return -1;
    }
    if (dt__vec_reserve_zeroed((void **)&x->chars[d], &x->chars_cap[d], x->chars_len[d] + len + 1, 1) != 0) {
        s->failed = 1;
        return -1;
    }
    memcpy(x->chars[d] + x->chars_len[d], text, len);
    x->chars_len[d] += len;
    int32_t code = x->nlocal[d]++;
    x->offsets[d][code + 1] = (int32_t)x->chars_len[d];
    t->seen[id] = (struct col_seen){s->serial, code};
    return code;
}

static inline void col_string(col_state *s, int d, size_t r, const char *text, size_t len)
{
    int32_t code = col_code(s, d, text, len);
    exp_i32(s->x, sd_column[d], r, code >= 0, code);
}

/* The value after key "K" in the args text [p, end): where it starts, or NULL. */
static const char *col_arg(const char *p, const char *end, const char *key)
{
    size_t klen = strlen(key);
    while (p < end) {
        const char *hit = memmem(p, (size_t)(end - p), key, klen);
        if (!hit)
            return NULL;
        const char *v = hit + klen;
        while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
            v++;
        if (v < end && *v == ':') {
            v++;
            while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
                v++;
            return v;
        }
        p = hit + 1;
    }
    return NULL;
}

/* [x, y, z] of integers at v into out; false when it is not that. */
static bool col_triple(const char *v, const char *end, int32_t *out)
{
    if (!v || v >= end || *v != '[')
        return false;
    v++;
    for (int i = 0; i < 3; i++) {
        while (v < end && (*v == ' ' || *v == ','))
            v++;
        char *e;
        long long x = strtoll(v, &e, 10);
        if (e == v || e > end || x < INT32_MIN || x > INT32_MAX)
            return false;
        out[i] = (int32_t)x;
        v = e;
    }
    while (v < end && *v == ' ')
        v++;
    return v < end && *v == ']';
}

/* The JSON string at v, decoded, into row r of dictionary d's column; null
   when v is no string. The reader validated the text: a string's quotes
   are balanced. */
static void col_string_arg(col_state *s, int d, size_t r, const char *v, const char *end)
{
    const char *q = v && v < end && *v == '"' ? v + 1 : end;
    while (q < end && *q != '"')
        q += *q == '\\' ? 2 : 1;
    if (q >= end) {
        exp_i32(s->x, sd_column[d], r, false, 0);
        return;
    }
    size_t len = (size_t)(q - v - 1);
    if (len > s->scratch_cap) {
        char *n = realloc(s->scratch, len);
        if (!n) {
            s->failed = 1;
            return;
        }
        s->scratch = n;
        s->scratch_cap = len;
    }
    col_string(s, d, r, s->scratch, dt__rd_unescape(v + 1, len, s->scratch));
}

/* Grid or block of device work: the reader's value where the event carries
   it typed (bit: a Perfetto trace's), else the JSON text's at key (args:
   the event's args text, NULL when it has none). */
static bool col_triple_of(const dt_rd_event *ev, uint32_t bit, const int32_t typed[3], const char *args,
                          const char *end, const char *key, int32_t *out)
{
    if (ev->has & bit) {
        memcpy(out, typed, 3 * sizeof *out);
        return true;
    }
    return args && col_triple(col_arg(args, end, key), end, out);
}

/* A collective's string arg into row r of dictionary d's column, from where
   col_triple_of takes grid and block; null for anything but device work
   that is a collective. */
static void col_string_of(col_state *s, int d, size_t r, bool work, const dt_rd_event *ev, uint32_t bit,
                          const char *typed, size_t typed_len, const char *args, const char *end, const char *key)
{
    if (!work || !(ev->has & DT_RD_HAS_COLLECTIVE))
        exp_i32(s->x, sd_column[d], r, false, 0);
    else if (ev->has & bit)
        col_string(s, d, r, typed, typed_len);
    else
        col_string_arg(s, d, r, args ? col_arg(args, end, key) : NULL, end);
}

/* The args the reader gives only as text in JSON and typed in Perfetto:
   device work's grid, block, collective and process group, into row r. */
static void col_work_args(col_state *s, const dt_rd_event *ev, size_t r)
{
    col_export *x = s->x;
    bool work = dt__rd_cat_is_device_work(ev->cat_kind);
    const char *args = NULL, *end = NULL;
    if (work && ev->raw && ev->at[DT_RD_AT_ARGS].len) {
        args = ev->raw + ev->at[DT_RD_AT_ARGS].off;
        end = ev->raw + ev->raw_len;
    }
    int32_t grid[3] = {0}, block[3] = {0};
    bool has_grid = work && col_triple_of(ev, DT_RD_HAS_GRID, ev->grid, args, end, "\"grid\"", grid);
    bool has_block = work && col_triple_of(ev, DT_RD_HAS_BLOCK, ev->block, args, end, "\"block\"", block);
    for (int i = 0; i < 3; i++) {
        exp_i32(x, DT_COL_C_GRID_X + i, r, has_grid, grid[i]);
        exp_i32(x, DT_COL_C_BLOCK_X + i, r, has_block, block[i]);
    }
    col_string_of(s, SD_COLLECTIVE, r, work, ev, DT_RD_HAS_COLLECTIVE_NAME, ev->collective, ev->collective_len,
                  args, end, "\"Collective name\"");
    col_string_of(s, SD_GROUP, r, work, ev, DT_RD_HAS_GROUP, ev->group, ev->group_len, args, end,
                  "\"Process Group Name\"");
}

/* The integer at v (JSON text); false when it is none. */
static bool col_int(const char *v, const char *end, int64_t *out)
{
    if (!v || v >= end)
        return false;
    char *e;
    long long x = strtoll(v, &e, 10);
    if (e == v || e > end)
        return false;
    *out = (int64_t)x;
    return true;
}

/* A synchronisation's event args (Kineto's cuda_sync: the stream an event
   was recorded on and its cudaEventRecord's correlation), into row r; null
   for other events and in a Perfetto trace, which does not carry them. */
static void col_sync_args(col_state *s, const dt_rd_event *ev, size_t r)
{
    const char *args = NULL, *end = NULL;
    if (ev->cat_kind == DT_RD_CAT_SYNC && ev->raw && ev->at[DT_RD_AT_ARGS].len) {
        args = ev->raw + ev->at[DT_RD_AT_ARGS].off;
        end = ev->raw + ev->raw_len;
    }
    int64_t stream = 0, corr = 0;
    bool has_stream = args && col_int(col_arg(args, end, "\"wait_on_stream\""), end, &stream);
    bool has_corr = args && col_int(col_arg(args, end, "\"wait_on_cuda_event_record_corr_id\""), end, &corr);
    exp_i64(s->x, DT_COL_C_WAIT_STREAM, r, has_stream, stream);
    exp_i64(s->x, DT_COL_C_WAIT_CORRELATION, r, has_corr, corr);
}

/* The merged trace's rank of the event (0 in an unmerged trace). */
static int32_t col_part(const dt_rd_event *ev)
{
    if (ev->pid.present && !ev->pid.is_str) {
        if (ev->pid.num >= (int64_t)1 << DT_COL_RANK_SHIFT)
            return (int32_t)(ev->pid.num >> DT_COL_RANK_SHIFT);
    } else if (ev->pid.present && strncmp(ev->pid.str, "rank ", 5) == 0) {
        return (int32_t)strtol(ev->pid.str + 5, NULL, 10);
    }
    return 0;
}

/* ---- steps (DT_COL_STEPS) ------------------------------------------------- */

/* N of a host range named ProfilerStep#N (spaces allowed around '#'), as the
   steps report reads it; false for any other event. */
static bool col_step_number(const dt_rd_event *ev, int64_t *n)
{
    static const char prefix[] = "ProfilerStep";
    if (ev->name_len < sizeof prefix || memcmp(ev->name, prefix, sizeof prefix - 1) != 0 ||
        dt__rd_cat_is_device_work(ev->cat_kind) || ev->cat_kind == DT_RD_CAT_GPU_USER_ANNOTATION ||
        !(ev->has & DT_RD_HAS_TS) || !(ev->has & DT_RD_HAS_DUR))
        return false;
    const char *p = ev->name + sizeof prefix - 1, *end = ev->name + ev->name_len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '#')
        return false;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p < '0' || *p > '9')
        return false;
    int64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && v < INT64_MAX / 10)
        v = v * 10 + (*p++ - '0');
    *n = v;
    return true;
}

static col_launches *col_launches_of(col_state *s, int32_t part, bool add)
{
    bool added = false;
    uint64_t key = (uint64_t)(uint32_t)part;
    if (!add) {
        uint64_t i;
        return dt__u64map_get(&s->part_index, key, &i) ? &s->launches[i] : NULL;
    }
    uint64_t *slot = dt__u64map_slot(&s->part_index, key, &added);
    if (!slot || (added && dt__vec_reserve_zeroed((void **)&s->launches, &s->launches_cap, s->nlaunches + 1,
                                      sizeof *s->launches) != 0)) {
        s->failed = 1;
        return NULL;
    }
    if (added)
        *slot = s->nlaunches++;
    return &s->launches[*slot];
}

/* The first pass: the steps, and where each launch call and operator
   started. */
static int col_steps_visit(void *user, const dt_rd_event *ev)
{
    col_state *s = user;
    int32_t part = col_part(ev);
    int64_t n;
    if (col_step_number(ev, &n)) {
        if (dt__vec_reserve_zeroed((void **)&s->steps, &s->steps_cap, s->counts.nsteps + 1, sizeof *s->steps) != 0)
            return s->failed = 1;
        s->steps[s->counts.nsteps++] = (col_step){part, ev->ts_ns, dt__rd_add_sat(ev->ts_ns, ev->dur_ns), n};
    }
    if (!(ev->has & DT_RD_HAS_TS) || dt__rd_cat_is_device_work(ev->cat_kind))
        return 0;
    bool api = dt__rd_cat_is_api(ev->cat_kind) && (ev->has & DT_RD_HAS_CORRELATION);
    bool op = ev->cat_kind == DT_RD_CAT_CPU_OP && (ev->has & DT_RD_HAS_EXTERNAL_ID);
    if (!api && !op)
        return 0;
    col_launches *l = col_launches_of(s, part, true);
    bool added;
    uint64_t *slot = !l ? NULL : api ? dt__u64map_slot(&l->corr, ev->correlation, &added)
                                     : dt__u64map_slot(&l->ext, ev->external_id, &added);
    if (!slot)
        return s->failed = 1;
    if (added || (int64_t)*slot > ev->ts_ns)
        *slot = (uint64_t)ev->ts_ns;
    return 0;
}

static int col_step_cmp(const void *a, const void *b)
{
    const col_step *x = a, *y = b;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* The step of part enclosing ts: the latest to start at or before ts, when
   it has not ended. */
static bool col_step_at(const col_state *s, int32_t part, int64_t ts, int64_t *n)
{
    size_t lo = 0, hi = s->counts.nsteps; /* the first step after (part, ts) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const col_step *m = &s->steps[mid];
        if (m->part < part || (m->part == part && m->s <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    const col_step *st = &s->steps[lo - 1];
    if (st->part != part || ts >= st->e)
        return false;
    *n = st->n;
    return true;
}

static bool col_event_step(col_state *s, const dt_rd_event *ev, int32_t part, int64_t *n)
{
    if (!s->counts.nsteps || !(ev->has & DT_RD_HAS_TS))
        return false;
    if (!dt__rd_cat_is_device_work(ev->cat_kind))
        return col_step_at(s, part, ev->ts_ns, n);
    /* device work: the step of the call that launched it */
    const col_launches *l = col_launches_of(s, part, false);
    uint64_t at;
    if (l && (((ev->has & DT_RD_HAS_CORRELATION) && dt__u64map_get(&l->corr, ev->correlation, &at)) ||
              ((ev->has & DT_RD_HAS_EXTERNAL_ID) && dt__u64map_get(&l->ext, ev->external_id, &at))))
        return col_step_at(s, part, (int64_t)at, n);
    s->counts.device_unlaunched++;
    return false;
}

/* ---- the second pass: the rows ------------------------------------------- */

static int col_visit(void *user, const dt_rd_event *ev)
{
    col_state *s = user;
    col_export *x = s->x;
    size_t r = s->rows;
    int32_t part = col_part(ev);
    ((int64_t *)x->data[DT_COL_C_INDEX])[r] = (int64_t)ev->index;
    ((int32_t *)x->data[DT_COL_C_KIND])[r] = ev->cat_kind;
    ((int32_t *)x->data[DT_COL_C_PART])[r] = part;
    if (part < s->part_min) s->part_min = part;
    if (part > s->part_max) s->part_max = part;
    col_string(s, SD_NAME, r, ev->name, ev->name_len);
    col_string(s, SD_CAT, r, ev->cat, ev->cat_len);
    col_string(s, SD_PH, r, ev->ph, strlen(ev->ph));
    if (ev->has & DT_RD_HAS_ARG_NAME)
        col_string(s, SD_LABEL, r, ev->arg_name, strlen(ev->arg_name));
    else
        exp_i32(x, DT_COL_C_LABEL, r, false, 0);
    const dt_rd_id *named = ev->tid.present && ev->tid.is_str ? &ev->tid
                            : ev->pid.present && ev->pid.is_str ? &ev->pid : NULL;
    if (named)
        col_string(s, SD_THREAD, r, named->str, strlen(named->str));
    else
        exp_i32(x, DT_COL_C_THREAD, r, false, 0);
    exp_i64(x, DT_COL_C_TS, r, ev->has & DT_RD_HAS_TS, ev->ts_ns);
    exp_i64(x, DT_COL_C_DUR, r, ev->has & DT_RD_HAS_DUR, ev->dur_ns);
    if ((ev->has & DT_RD_HAS_DUR) && ev->dur_ns < 0 && s->counts.negative_durations++ == 0)
        s->counts.first_negative = ev->index;
    exp_i64(x, DT_COL_C_PID, r, ev->pid.present && !ev->pid.is_str, ev->pid.num);
    exp_i64(x, DT_COL_C_TID, r, ev->tid.present && !ev->tid.is_str, ev->tid.num);
    /* a [memory] instant's device and size are its "Device Id" and "Bytes" */
    bool mem_device = !(ev->has & DT_RD_HAS_DEVICE) && (ev->has & DT_RD_HAS_MEM_DEVICE);
    exp_i64(x, DT_COL_C_DEVICE, r, (ev->has & DT_RD_HAS_DEVICE) || mem_device,
            mem_device ? ev->mem_device : ev->device);
    exp_i64(x, DT_COL_C_STREAM, r, ev->has & DT_RD_HAS_STREAM, ev->stream);
    exp_i64(x, DT_COL_C_CORRELATION, r, ev->has & DT_RD_HAS_CORRELATION, (int64_t)ev->correlation);
    exp_i64(x, DT_COL_C_EXTERNAL_ID, r, ev->has & DT_RD_HAS_EXTERNAL_ID, (int64_t)ev->external_id);
    if (ev->has & DT_RD_HAS_BYTES)
        exp_i64(x, DT_COL_C_BYTES, r, true, (int64_t)ev->bytes);
    else
        exp_i64(x, DT_COL_C_BYTES, r, ev->has & DT_RD_HAS_MEM_BYTES, ev->mem_bytes);
    exp_i64(x, DT_COL_C_ALLOCATED, r, ev->has & DT_RD_HAS_MEM_TOTAL, ev->mem_total);
    int64_t step = 0;
    bool in_step = s->counts.steps_on && col_event_step(s, ev, part, &step);
    exp_i64(x, DT_COL_C_STEP, r, in_step, step);
    bool flow_id = false;
    int64_t id = 0;
    if (ev->has & DT_RD_HAS_ID) {
        char *e;
        unsigned long long v = strtoull(ev->id, &e, 10);
        flow_id = !ev->id_is_str && *e == '\0' && v <= INT64_MAX;
        id = (int64_t)v;
        if (!flow_id)
            s->counts.string_flow_ids++;
    }
    exp_i64(x, DT_COL_C_FLOW_ID, r, flow_id, id);
    bool flow = (ev->ph[0] == 's' || ev->ph[0] == 't' || ev->ph[0] == 'f') && ev->ph[1] == '\0';
    ((uint8_t *)x->data[DT_COL_C_FLOW])[r] = flow;
    s->flows += flow;
    col_work_args(s, ev, r);
    col_sync_args(s, ev, r);
    if (s->failed)
        return 1;
    if (++s->rows == s->cap)
        return col_flush(s);
    return 0;
}

static int col_pass(const char *path, dt_rd_visitor visit, unsigned flags, col_state *s,
                    dt_rd_summary *summary, char *err, size_t errlen)
{
    dt_rd_source *src = dt__rd_open_file(path, err, errlen);
    if (!src) {
        s->unopened = true;
        return -1;
    }
    dt_rd_options opts = {.visit = visit, .user = s, .flags = flags};
    int rc = dt__rd_read_opts(src, &opts, summary, err, errlen);
    dt__rd_close(src);
    if (s->failed) {
        snprintf(err, errlen, "%s", s->failed == 2 ? "a batch's distinct strings exceed 2 GiB: convert with fewer rows"
                                                   : "out of memory for the trace's distinct strings and ids");
        rc = -1;
    }
    return rc;
}

/* False when the file at path cannot name a ProfilerStep: uncompressed, it
   holds neither those bytes nor a JSON \u escape (the only way a JSON
   string can spell a letter otherwise; a Perfetto trace's names are its
   bytes). Then the step pass would find no step, and is skipped. True when
   unsure (gzip'd, unreadable: the pass says what is wrong). */
static bool col_may_have_steps(const char *path)
{
    static const char word[] = "ProfilerStep", escape[] = "\\u";
    enum { CHUNK = 1 << 20, KEEP = sizeof word - 2 };
    FILE *f = fopen(path, "rb");
    if (!f)
        return true;
    char *buf = malloc(CHUNK + KEEP);
    bool maybe = !buf;
    size_t have = 0, n;
    bool first = true;
    while (!maybe && (n = fread(buf + have, 1, CHUNK, f)) > 0) {
        if (first && have + n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)
            maybe = true; /* gzip */
        first = false;
        have += n;
        if (memmem(buf, have, word, sizeof word - 1) || memmem(buf, have, escape, sizeof escape - 1))
            maybe = true;
        /* what a match across the next chunk's start needs */
        size_t keep = have < KEEP ? have : KEEP;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    if (ferror(f))
        maybe = true;
    free(buf);
    fclose(f);
    return maybe;
}

int dt_col_read(const char *path, size_t rows, unsigned flags, dt_col_sink sink, void *user, char **meta,
                char *err, size_t errlen)
{
    if (meta)
        *meta = NULL;
    col_state s;
    memset(&s, 0, sizeof s);
    s.sink = sink;
    s.user = user;
    s.cap = rows ? rows : DT_COL_DEFAULT_ROWS;
    for (int d = 0; d < SD_COUNT; d++) {
        dt__strtab_init(&s.dict[d].tab);
        s.dict[d].last = -1;
    }
    dt_rd_summary summary;
    memset(&summary, 0, sizeof summary);
    int rc = 0;
    if (flags & DT_COL_STEPS) {
        s.counts.steps_on = true;
        if (col_may_have_steps(path))
            rc = col_pass(path, col_steps_visit, 0, &s, &summary, err, errlen);
        if (s.counts.nsteps)
            qsort(s.steps, s.counts.nsteps, sizeof *s.steps, col_step_cmp);
        if (rc == 0) {
            dt__rd_summary_free(&summary);
            memset(&summary, 0, sizeof summary);
        }
    }
    if (rc == 0 && col_begin(&s) != 0) {
        snprintf(err, errlen, "out of memory for a batch of %zu rows", s.cap);
        rc = -1;
    }
    if (rc == 0) {
        /* a Perfetto trace has no text: the reader gives its args typed */
        rc = col_pass(path, col_visit, DT_RD_RAW_IF_JSON, &s, &summary, err, errlen);
        if (rc == 0)
            rc = col_flush(&s);
    }
    /* a trace that could not be opened has no metadata */
    if (meta && !s.unopened)
        *meta = dt__col_meta(&summary, &s.counts, rc == -1 ? err : NULL);
    dt__rd_summary_free(&summary);
    col_release(&s);
    return rc;
}
