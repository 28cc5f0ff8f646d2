/*
 * Streaming reader for devtrace / Kineto Chrome trace JSON (plain or gzip),
 * and what `devtrace stats`, `check` and `merge` compute from it.
 *
 * The reader never holds the whole trace: it parses the JSON in a window
 * of text (its own validating parser, see rd_parse.h) and hands each
 * traceEvents entry, as a small flat struct, to a visitor. Memory grows
 * with the number of distinct names and ids kept by the caller, not with
 * the number of events. An event may be up to 256 MiB of text. The
 * top-level scalars and the `devtrace` object are collected into a
 * dt_rd_summary, complete once the whole input has been read (the
 * `devtrace` key follows traceEvents).
 *
 * Layout: this header is the reader's interface; rd_internal.h is what its
 * parts share, rd_parse.h and rd_lex.h the JSON parser's state and lexers.
 * The JSON reader: source.c (file, memory, gzip), number.c, lex.c, keys.c
 * (the keys outside traceEvents), event.c, document.c (the outer
 * structure), read.c (dt__rd_read); pf_read.c reads Perfetto traces.
 * Built on it, each returning its results for the command to print
 * (src/cli/; results.h declares them): stats.c, check*.c, merge*.c
 * (pf_convert.c for its Perfetto output); rd_text.c writes a trace's text
 * for terminals and CSV.
 *
 * Naming: functions one file of the reader gives another are dt_rd_<name>,
 * declared here (the interface) or in rd_internal.h / rd_parse.h /
 * rd_lex.h / the command's own internal header (the parts); functions of
 * one file are static, with no prefix.
 *
 * The reader includes base/, format/ (the format table, the JSON and
 * Perfetto encoders of merge's output), reader/ and the public header:
 * never the core.
 */
#ifndef DT_READER_H
#define DT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest JSON nesting accepted; hostile inputs ([[[[...) stop here. */
#define DT_RD_MAX_DEPTH 64

/* A pid or tid: an integer, or a string where the writer used one
   (Kineto writes e.g. "Spans" or ""). */
typedef struct dt_rd_id {
    bool present;
    bool is_str;
    int64_t num;
    const char *str; /* valid during the visitor call only */
} dt_rd_id;

enum {
    DT_RD_HAS_TS = 1u << 0,
    DT_RD_HAS_DUR = 1u << 1,
    DT_RD_HAS_ID = 1u << 2,
    DT_RD_HAS_EXTERNAL_ID = 1u << 3,
    DT_RD_HAS_CORRELATION = 1u << 4,
    DT_RD_HAS_BYTES = 1u << 5,
    DT_RD_HAS_DEVICE = 1u << 6,
    DT_RD_HAS_STREAM = 1u << 7,
    DT_RD_HAS_CBID = 1u << 8,
    DT_RD_HAS_PARENT = 1u << 9,
    DT_RD_HAS_SORT_INDEX = 1u << 10,
    DT_RD_HAS_ARG_NAME = 1u << 11,
    DT_RD_HAS_ARG_LABELS = 1u << 12,
    /* args "Collective name": a collective (devtrace's, or an NCCL kernel
       Kineto linked to its process group) */
    DT_RD_HAS_COLLECTIVE = 1u << 13,
    /* torch's memory args ("[memory]" instants): "Bytes", "Total
       Allocated", "Device Id", "Device Type", "Addr" */
    DT_RD_HAS_MEM_BYTES = 1u << 14,
    DT_RD_HAS_MEM_TOTAL = 1u << 15,
    DT_RD_HAS_MEM_DEVICE = 1u << 16,
    DT_RD_HAS_MEM_TYPE = 1u << 17,
    DT_RD_HAS_ADDR = 1u << 18,
    /* Args the JSON reader leaves in the event's text (DT_RD_RAW) and a
       Perfetto trace carries typed: its device work's "grid" and "block"
       ([x, y, z], each an int32) and its collectives' "Collective name" and
       "Process Group Name" (strings). Only the Perfetto reader sets them. */
    DT_RD_HAS_GRID = 1u << 19,
    DT_RD_HAS_BLOCK = 1u << 20,
    DT_RD_HAS_COLLECTIVE_NAME = 1u << 21,
    DT_RD_HAS_GROUP = 1u << 22
};

/* What an event's "cat" is, among the categories the trace format names
   and the ones Kineto writes (docs/trace-format.md), decided once by the
   reader. */
enum dt_rd_cat {
    DT_RD_CAT_OTHER,               /* none of these: dt_rd_summary.unclassified counts them */
    DT_RD_CAT_KERNEL,              /* kernel; Kineto's Kernel (before PyTorch 1.10) and mtia_ccp_events */
    DT_RD_CAT_MEMCPY,              /* gpu_memcpy; Memcpy */
    DT_RD_CAT_MEMSET,              /* gpu_memset; Memset */
    DT_RD_CAT_RUNTIME,             /* <vendor>_runtime; Runtime */
    DT_RD_CAT_DRIVER,              /* <vendor>_driver */
    DT_RD_CAT_SYNC,                /* cuda_sync, xpu_sync */
    DT_RD_CAT_OVERHEAD,
    DT_RD_CAT_USER_ANNOTATION,
    DT_RD_CAT_GPU_USER_ANNOTATION, /* gpu_user_annotation; User */
    DT_RD_CAT_TRACE,               /* the capture window */
    DT_RD_CAT_CPU_OP,              /* torch.profiler's operators: cpu_op; Operator */
    DT_RD_CAT_PYTHON_FUNCTION,
    DT_RD_CAT_AC2G,                /* flows from API calls to device work: ac2g; async_gpu, async_cpu_to_gpu */
    DT_RD_CAT_CPU_INSTANT          /* cpu_instant_event: torch's [memory] */
};

/* Kernels, copies and memsets: the events whose time is device time. */
static inline bool dt__rd_cat_is_device_work(int cat)
{
    return cat == DT_RD_CAT_KERNEL || cat == DT_RD_CAT_MEMCPY || cat == DT_RD_CAT_MEMSET;
}

static inline bool dt__rd_cat_is_api(int cat)
{
    return cat == DT_RD_CAT_RUNTIME || cat == DT_RD_CAT_DRIVER;
}

/* What runs on a host's rows. The capture window ("Trace") is neither
   host nor device work: torch.profiler draws it on its own "Spans"
   process, sorted after the devices. */
static inline bool dt__rd_cat_is_host(int cat)
{
    return dt__rd_cat_is_api(cat) || cat == DT_RD_CAT_USER_ANNOTATION || cat == DT_RD_CAT_CPU_OP ||
           cat == DT_RD_CAT_PYTHON_FUNCTION;
}

/* Where a value lies in an event's text (DT_RD_RAW): offset from its '{'
   and length; len 0 when the event has no such value. */
typedef struct dt_rd_span {
    uint32_t off, len;
} dt_rd_span;

enum {
    DT_RD_AT_PID, DT_RD_AT_TID, DT_RD_AT_TS, DT_RD_AT_DUR, DT_RD_AT_ID,
    DT_RD_AT_EXT,    /* args "External id" */
    DT_RD_AT_CORR,   /* args "correlation" */
    DT_RD_AT_PARENT, /* args "parent" */
    DT_RD_AT_ARGS,   /* the '{' of args (len 1) */
    DT_RD_AT_COUNT
};

/* One traceEvents entry. Strings are NUL-terminated ("" when absent) and
   valid only during the visitor call. */
typedef struct dt_rd_event {
    uint64_t index;  /* position in traceEvents, from 0 */
    uint64_t offset; /* byte offset of its '{' in the (decompressed) JSON */
    uint32_t has;    /* DT_RD_HAS_* */
    const char *ph, *cat, *name, *bp;
    uint32_t cat_len, name_len; /* strlen of cat and name */
    int cat_kind;               /* enum dt_rd_cat */
    dt_rd_id pid, tid;
    int64_t ts_ns;  /* "ts" in ns, exact for decimal microseconds */
    int64_t dur_ns; /* "dur" in ns */
    const char *id; /* flow id as written (number text or string) */
    bool id_is_str;
    /* args */
    uint64_t external_id, correlation, bytes, parent;
    int64_t device, stream, cbid;
    int64_t mem_bytes, mem_total, mem_device, mem_type; /* DT_RD_HAS_MEM_* */
    uint64_t addr;
    /* metadata (ph "M") args */
    const char *arg_name;   /* args.name */
    const char *arg_labels; /* args.labels */
    int64_t sort_index;     /* args.sort_index */
    /* Args read leniently, as other writers type them: an integer written as
       a string ("7", "0x1f") counts, and string_args says how many were. An
       arg of the wrong type is left out: its DT_RD_HAS_* bit is in odd_args. */
    uint32_t odd_args;
    uint32_t string_args;
    /* With DT_RD_RAW: the event's JSON text as written (valid during the
       visitor call) and where its values of interest lie in it. */
    const char *raw;
    size_t raw_len;
    dt_rd_span at[DT_RD_AT_COUNT];
    /* The args of DT_RD_HAS_GRID ... DT_RD_HAS_GROUP, valid only with their
       bit (the JSON reader leaves them as they were). The strings are not
       NUL-terminated, and are valid during the visitor call. */
    int32_t grid[3], block[3];
    const char *collective, *group;
    size_t collective_len, group_len;
} dt_rd_event;

/* Return 0 to go on, or a positive value to stop reading (dt__rd_read then
   returns that value). */
typedef int (*dt_rd_visitor)(void *user, const dt_rd_event *event);

typedef struct dt_rd_kv {
    char *key;
    int64_t value;
} dt_rd_kv;

typedef struct dt_rd_kvlist {
    bool present;
    dt_rd_kv *items;
    size_t count, cap;
} dt_rd_kvlist;

typedef struct dt_rd_note {
    char *key, *text;
} dt_rd_note;

typedef struct dt_rd_notes {
    dt_rd_note *items;
    size_t count, cap;
} dt_rd_notes;

enum { DT_RD_FORMAT_JSON, DT_RD_FORMAT_PERFETTO };

typedef struct dt_rd_summary {
    bool compressed;         /* the input was gzip */
    int format;              /* DT_RD_FORMAT_*: what the (decompressed) input is */
    uint64_t bytes;          /* JSON bytes parsed (decompressed) */
    uint64_t event_count;    /* traceEvents entries */
    bool has_trace_events;
    bool has_schema_version;
    int64_t schema_version;
    bool has_display_time_unit;
    char *display_time_unit;
    bool has_base_time;
    int64_t base_time_ns;
    bool has_device_properties;
    size_t device_count;
    char *trace_name;
    char *host_name; /* torch.profiler's top-level "host_name" */

    bool has_devtrace;
    /* devtrace.writer: who wrote the devtrace key; NULL for devtrace's own
       traces, DT_RD_WRITER_PLUGIN inside torch.profiler's trace */
    char *writer;
    char *version, *backend, *vendor, *library, *library_version;
    bool has_window_start, has_window_end;
    int64_t window_start_ns, window_end_ns;
    bool has_clock;
    double clock_slope, clock_offset_ns, clock_error_bound_ns;
    int64_t clock_samples, clock_segments;
    bool clock_identity;
    dt_rd_kvlist loss;        /* devtrace.loss, in file order */
    dt_rd_kvlist counts;      /* devtrace.counts */
    dt_rd_kvlist attribution; /* devtrace.attribution: External id text -> ns */
    dt_rd_kvlist external_parents; /* devtrace.externalParents: External id text -> range id */
    dt_rd_notes notes;        /* devtrace.notes */
    char *host;               /* devtrace.host */
    bool has_pid;
    int64_t pid;              /* devtrace.pid: the recording process */
    bool has_realtime_clock;  /* devtrace.realtimeClock */
    char *clocksource;
    bool has_host_sync, host_synchronized;
    bool has_host_max_error;
    int64_t host_max_error_us, host_est_error_us;

    /* The categories of events the reader has no kind for (DT_RD_CAT_OTHER,
       a "cat" present and not empty), with their counts, in the order met;
       at most DT_RD_UNCLASSIFIED_MAX of them, the events of any more in
       unclassified_more. */
    dt_rd_kvlist unclassified;
    uint64_t unclassified_more;

    /* distributedInfo (Kineto's, or devtrace's) */
    bool has_distributed_info, has_rank;
    int64_t rank, local_rank, world_size; /* -1 when absent */
    char *rank_host, *launcher;
    /* a "rank" that is no integer of int64 (0.5, 1e30, 2^63, true, an
       object), as written or named; NULL when none (has_rank is false) */
    char *unusable_rank;
} dt_rd_summary;

#define DT_RD_WRITER_PLUGIN "devtrace.torch"
#define DT_RD_UNCLASSIFIED_MAX 32

void dt__rd_summary_free(dt_rd_summary *summary);

/* Where the JSON comes from. gzip is recognised by its magic bytes. */
typedef struct dt_rd_source dt_rd_source;
/* NULL with a message in err (errlen bytes) when the file cannot be opened.
   "-" reads standard input. */
dt_rd_source *dt__rd_open_file(const char *path, char *err, size_t errlen);
/* The buffer must outlive the source. */
dt_rd_source *dt__rd_open_memory(const void *data, size_t len);
void dt__rd_close(dt_rd_source *src);

/*
 * Reads the whole source, calling visit for each traceEvents entry and
 * filling *summary (which the caller frees with dt__rd_summary_free, also
 * on failure). Returns 0 on success; -1 on a format or I/O error, with a
 * message naming the byte offset in err; or the visitor's non-zero value.
 */
int dt__rd_read(dt_rd_source *src, dt_rd_visitor visit, void *user, dt_rd_summary *summary,
               char *err, size_t errlen);

enum {
    DT_RD_RAW = 1u << 0, /* fill dt_rd_event.raw and .at (JSON only: a Perfetto trace is refused by name) */
    DT_RD_JSON = 1u << 1, /* JSON only: a Perfetto trace is refused by name */
    /* DT_RD_RAW where the input is JSON; a Perfetto trace is read, its events
       without text (raw NULL) but with its args typed (DT_RD_HAS_GRID ...) */
    DT_RD_RAW_IF_JSON = 1u << 2
};
enum { DT_RD_ATTRIBUTION, DT_RD_EXTERNAL_PARENTS };

typedef struct dt_rd_options {
    dt_rd_visitor visit;
    void *user;
    unsigned flags; /* DT_RD_* */
    /* When set, the entries of devtrace.attribution and
       devtrace.externalParents (which = DT_RD_ATTRIBUTION or
       DT_RD_EXTERNAL_PARENTS) come here, as they are read, instead of being
       kept in the summary: a caller that only compares them holds nothing.
       Non-zero stops reading, as from the visitor. */
    int (*entry)(void *user, int which, const char *key, size_t len, int64_t value);
    /* When set, each deviceProperties entry comes here as written (valid
       during the call), with where its numeric "id" lies in it (len 0:
       none). Non-zero stops reading, as from the visitor. */
    int (*device)(void *user, const char *raw, size_t len, dt_rd_span id);
    /* The text window's first size in bytes (0: 1 MiB). The result never
       depends on it; tests make it small so that every token and event
       crosses the window's end somewhere. */
    size_t window;
} dt_rd_options;

/* dt__rd_read with options (NULL: none). */
int dt__rd_read_opts(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err,
                    size_t errlen);

/* The text between the quotes of a valid JSON string literal, its escapes
   decoded into out (room for len bytes: decoding never lengthens it).
   Returns the decoded length; out is not NUL-terminated. */
size_t dt__rd_unescape(const char *text, size_t len, char *out);

/* Parses a JSON number as written into exact nanoseconds, treating it as
   microseconds (ts/dur). Returns false when it is not a number or does not
   fit. */
bool dt__rd_parse_us_to_ns(const char *text, size_t len, int64_t *out_ns);

/* a + b, saturated at the int64 limits: hostile traces may carry
   durations whose sums do not fit. */
static inline int64_t dt__rd_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* Text from a trace for a terminal: control bytes (C0, DEL, C1) and bytes
   that are not UTF-8 are written as \xNN, everything else as it is.
   dt__rd_safe_len is the number of bytes dt__rd_put_safe writes. */
size_t dt__rd_safe_len(const char *s);
void dt__rd_put_safe(FILE *out, const char *s);
/* The same text as one CSV field: escaped as dt__rd_put_safe does (so a
   field never spans lines), quoted when it holds a comma or a quote. */
void dt__rd_put_csv(FILE *out, const char *s);

#ifdef __cplusplus
}
#endif

#endif
