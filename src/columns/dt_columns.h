/*
 * A trace's events as batches of columns, for columnar formats (Parquet)
 * and the engines that query them: the streaming reader (src/reader) runs
 * over the trace once and, every `rows` events, hands the caller a batch of
 * plain arrays, one value per event in each, which the caller copies out
 * before returning. Memory is the batch's arrays plus the distinct strings
 * (names, categories, ...), whatever the trace's size.
 *
 * This is libdevtrace_columns' whole interface; devtrace.analysis binds it
 * with ctypes. Strings are given as dictionary codes: each batch says
 * which entries its dictionaries gained (keys[first_new .. count - 1]),
 * valid during the sink's call only.
 */
#ifndef DT_COLUMNS_H
#define DT_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_COL_API __attribute__((visibility("default")))

/* Bumped when dt_col_batch's layout changes; the binding checks it. */
#define DT_COL_ABI 1

/* Which optional value an event has: bits of dt_col_batch.valid. */
enum {
    DT_COL_V_TS = 1u << 0,
    DT_COL_V_DUR = 1u << 1,
    DT_COL_V_PID = 1u << 2,   /* pid written as a number */
    DT_COL_V_TID = 1u << 3,   /* tid written as a number */
    DT_COL_V_DEVICE = 1u << 4,
    DT_COL_V_STREAM = 1u << 5,
    DT_COL_V_CORR = 1u << 6,
    DT_COL_V_EXT = 1u << 7,
    DT_COL_V_BYTES = 1u << 8,
    DT_COL_V_FLOW = 1u << 9,  /* a numeric "id" (flow events) */
    DT_COL_V_GRID = 1u << 10, /* args grid [x, y, z] */
    DT_COL_V_BLOCK = 1u << 11 /* args block [x, y, z] */
};

/* The dictionaries, indexes of dt_col_batch.dict. */
enum {
    DT_COL_D_NAME,
    DT_COL_D_CAT,
    DT_COL_D_PH,
    DT_COL_D_COLLECTIVE, /* args "Collective name" */
    DT_COL_D_GROUP,      /* args "Process Group Name" */
    DT_COL_D_LABEL,      /* metadata args name (process_name, thread_name) */
    DT_COL_D_THREAD,     /* pid or tid written as a string */
    DT_COL_D_COUNT
};

typedef struct dt_col_dict {
    size_t first_new, count; /* this batch added keys[first_new .. count - 1] */
    char *const *keys;
    const size_t *lens;
} dt_col_dict;

typedef struct dt_col_batch {
    size_t rows;
    uint64_t first_index; /* traceEvents index of the batch's first row */
    uint32_t *valid;      /* DT_COL_V_* */
    int32_t *kind;        /* enum dt_rd_cat */
    /* the merged trace's rank an event belongs to (its pid moved by
       rank * 2^23, or a string pid "rank K ..."); 0 in an unmerged trace */
    int32_t *part;
    int32_t *dict[DT_COL_D_COUNT]; /* codes; -1: no value */
    int64_t *ts, *dur;             /* ns */
    int64_t *pid, *tid;
    int64_t *device, *stream;
    int64_t *correlation, *external_id, *bytes, *flow_id;
    int32_t *grid, *block; /* 3 a row */
    dt_col_dict dicts[DT_COL_D_COUNT];
} dt_col_batch;

/* Return 0 to go on, non-zero to stop (dt_col_read returns it). */
typedef int (*dt_col_sink)(void *user, const dt_col_batch *batch);

/*
 * Reads the trace at path (JSON or gzip'd JSON: devtrace's, torch.profiler's,
 * merged) and calls sink with every `rows` events (0: 65536), the last
 * batch possibly shorter. *meta receives the trace's metadata as a JSON
 * object (free it with dt_col_free), also when the reading fails partway.
 * Returns 0; -1 with a message in err when the trace cannot be read; or the
 * sink's non-zero value.
 */
DT_COL_API int dt_col_read(const char *path, size_t rows, dt_col_sink sink, void *user, char **meta, char *err,
                size_t errlen);
DT_COL_API void dt_col_free(void *p);
DT_COL_API int dt_col_abi(void);

#ifdef __cplusplus
}
#endif

#endif
