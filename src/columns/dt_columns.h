/*
 * A trace's events as batches of columns, for columnar formats (Parquet)
 * and the engines that query them: the streaming reader (src/reader) runs
 * over the trace and, every `rows` events, hands the caller a batch as an
 * Arrow record batch (the Arrow C data interface: a struct array, one child
 * per DT_COL_C_* column), which pyarrow imports without copying. Strings
 * are dictionary columns built here, each batch's dictionary holding the
 * strings its rows use. Memory is one batch plus the distinct strings
 * (names, categories, ...), whatever the trace's size.
 *
 * This is libdevtrace_columns' whole interface; devtrace.analysis binds it
 * with ctypes.
 */
#ifndef DT_COLUMNS_H
#define DT_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_COL_API __attribute__((visibility("default")))

/* Bumped when the batch's layout or its columns change; the binding checks it. */
#define DT_COL_ABI 3

/* The Arrow C data interface's array (arrow.apache.org/docs/format/CDataInterface.html). */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

/* The batch's columns, in order, with their Arrow types (d: dictionary of
   int32 codes to utf8 strings; ?: null where the event has no value). */
enum {
    DT_COL_C_INDEX,        /* int64: position in traceEvents */
    DT_COL_C_PH,           /* d */
    DT_COL_C_CAT,          /* d: as written */
    DT_COL_C_KIND,         /* d: enum dt_rd_cat's names (DT_COL_KINDS) */
    DT_COL_C_NAME,         /* d */
    DT_COL_C_PID,          /* int64?: written as a number */
    DT_COL_C_TID,          /* int64? */
    DT_COL_C_THREAD,       /* d?: the tid, else the pid, written as a string */
    DT_COL_C_TS,           /* int64? ns */
    DT_COL_C_DUR,          /* int64? ns */
    DT_COL_C_DEVICE,       /* int64? */
    DT_COL_C_STREAM,       /* int64? */
    DT_COL_C_CORRELATION,  /* int64? */
    DT_COL_C_EXTERNAL_ID,  /* int64? */
    DT_COL_C_BYTES,        /* int64? */
    DT_COL_C_GRID_X,       /* int32? args grid [x, y, z] of device work */
    DT_COL_C_GRID_Y,
    DT_COL_C_GRID_Z,
    DT_COL_C_BLOCK_X,      /* int32? args block */
    DT_COL_C_BLOCK_Y,
    DT_COL_C_BLOCK_Z,
    DT_COL_C_COLLECTIVE,   /* d?: args "Collective name" */
    DT_COL_C_GROUP,        /* d?: args "Process Group Name" */
    DT_COL_C_LABEL,        /* d?: metadata args name (process_name, thread_name) */
    /* a CUDA event synchronisation (Kineto's cuda_sync "Event Sync" and
       "Stream Wait Event"): args wait_on_stream, the stream the event was
       recorded on, and wait_on_cuda_event_record_corr_id, the correlation of
       the cudaEventRecord call that recorded it */
    DT_COL_C_WAIT_STREAM,      /* int64? */
    DT_COL_C_WAIT_CORRELATION, /* int64? */
    DT_COL_C_ALLOCATED,    /* int64?: a [memory] instant's "Total Allocated" */
    DT_COL_C_STEP,         /* int64?: the ProfilerStep#N enclosing the event's start (see dt_col_read) */
    DT_COL_C_FLOW_ID,      /* int64?: a numeric "id" (flow events) */
    /* the merged trace's rank an event belongs to (its pid moved by
       rank * 2^23, or a string pid "rank K ..."); 0 in an unmerged trace */
    DT_COL_C_PART,         /* int32 */
    DT_COL_C_FLOW,         /* uint8: 1 for a flow event (ph s, t, f) */
    DT_COL_C_COUNT
};

/* DT_COL_C_KIND's strings, by enum dt_rd_cat, separated by commas. */
#define DT_COL_KINDS                                                                                          \
    "other,kernel,memcpy,memset,runtime,driver,sync,overhead,user_annotation,gpu_user_annotation,trace,"     \
    "cpu_op,python_function,ac2g,cpu_instant"

typedef struct dt_col_batch {
    size_t rows;
    uint64_t first_index; /* traceEvents index of the batch's first row */
    int32_t part_min, part_max; /* of the rows' DT_COL_C_PART */
    size_t flows;               /* rows that are flow events */
    /* The rows, as a struct array of DT_COL_C_COUNT children. The sink
       takes it by moving it out (pyarrow's import does) or releasing it;
       what it leaves is released when it returns. */
    struct ArrowArray *array;
} dt_col_batch;

/* Return 0 to go on, non-zero to stop (dt_col_read returns it). */
typedef int (*dt_col_sink)(void *user, const dt_col_batch *batch);

enum {
    /* Fill DT_COL_C_STEP: a first pass over the trace finds its steps and
       launch calls, the second gives each event the step (ProfilerStep#N, a
       host range of its rank) enclosing its start; device work takes the
       step of the call that launched it (same correlation, else the
       operator with the same External id). */
    DT_COL_STEPS = 1u << 0
};

/*
 * Reads the trace at path (JSON or gzip'd JSON: devtrace's, torch.profiler's,
 * merged) and calls sink with every `rows` events (0: 65536), the last
 * batch possibly shorter. flags: DT_COL_*. *meta receives the trace's
 * metadata as a JSON object (free it with dt_col_free), also when the
 * reading fails partway. Returns 0; -1 with a message in err when the trace
 * cannot be read; or the sink's non-zero value.
 */
DT_COL_API int dt_col_read(const char *path, size_t rows, unsigned flags, dt_col_sink sink, void *user,
                           char **meta, char *err, size_t errlen);
DT_COL_API void dt_col_free(void *p);
DT_COL_API int dt_col_abi(void);

#ifdef __cplusplus
}
#endif

#endif
