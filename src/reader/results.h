/*
 * What `devtrace check`, `stats` and `merge` compute from traces through
 * the reader (dt_reader.h), returned as results for the command to print
 * (src/cli/check.c, stats.c, merge.c): check*.c, stats.c and merge*.c of
 * the reader.
 */
#ifndef DT_READER_RESULTS_H
#define DT_READER_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/dt_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- check: the invariants of docs/trace-format.md ---- */

/* The kinds of finding check reports, and the lines it keeps of each kind
   (every line with DT_CHECK_VERBOSE). */
#define DT_CHECK_KINDS 26
#define DT_CHECK_EXAMPLES 5
enum { DT_CHECK_VERBOSE = 1u << 0 /* every line of every kind of finding */ };

typedef struct dt_check_kind {
    int invariant;     /* 1..9 (docs/trace-format.md) */
    const char *title; /* "flows with a start and no finish" */
    /* Why findings of this kind are a known property of the trace's writer
       (torch.profiler's) rather than defects; NULL: they are defects. */
    const char *known;
    uint64_t count;    /* findings of this kind */
    uint64_t shown;    /* lines kept: the first DT_CHECK_EXAMPLES, or all */
    char **lines;      /* shown lines, each one finding (NULL: out of memory); trace bytes as written */
} dt_check_kind;

typedef struct dt_check_result {
    bool oom;                              /* out of memory: nothing below holds */
    dt_check_kind kinds[DT_CHECK_KINDS];   /* in the order they are reported */
    uint64_t defects, known;               /* findings that are defects, and known properties */
    /* What was checked, when not every invariant applied (a trace of
       another writer, a Perfetto trace); NULL when every one did. */
    const char *scope;
    uint64_t events;                       /* traceEvents read */
    size_t flows;                          /* flow ids */
} dt_check_result;

/* Checks a trace, findings grouped by kind; for a trace devtrace did not
   write (torch.profiler's, with or without the plugin's key), findings
   that are known properties of that writer are counted apart from defects.
   label names the trace in the finding that it cannot be read. flags:
   DT_CHECK_*. Free the result with dt__rd_check_free (also when oom). */
void dt__rd_check(dt_rd_source *src, const char *label, unsigned flags, dt_check_result *result);
void dt__rd_check_free(dt_check_result *result);

/* ---- stats: summary tables in the manner of `nsys stats` ---- */

/* The reports, in the order they are listed and printed. */
enum { DT_STATS_KERNELS, DT_STATS_MEMCPY, DT_STATS_MEMSET, DT_STATS_API, DT_STATS_RANGES, DT_STATS_COLLECTIVES,
       DT_STATS_MEMORY, DT_STATS_REPORTS };
/* A report's name as --report takes it ("kernels"), or NULL. */
const char *dt__rd_stats_report_name(int report);
/* The report a name (len bytes) names, or -1. */
int dt__rd_stats_report_by_name(const char *name, size_t len);

/* The events of one name in a report of durations. */
typedef struct dt_stats_row {
    const char *name;
    uint64_t count;
    int64_t total, min, max;     /* ns; total saturated */
    double avg, median, stddev;  /* ns; stddev of a sample (0 for one event) */
    uint64_t bytes;              /* memcpy, memset, collectives */
    int64_t device_ns;           /* ranges: device time attributed to the range and those it encloses */
} dt_stats_row;

typedef struct dt_stats_table {
    dt_stats_row *rows;          /* by total time, longest first, then by name */
    size_t count;
    int64_t total;               /* of every row, saturated */
} dt_stats_table;

/* One device's memory, from torch's [memory] instants. */
typedef struct dt_stats_memory {
    int64_t type, device;        /* "Device Type" (c10::DeviceType), "Device Id" (-1: none) */
    uint64_t allocations, frees, allocated, freed;
    int64_t total, peak;         /* allocated at the end ("Total Allocated" as written, else summed), and at most */
} dt_stats_memory;

typedef struct dt_stats_result {
    unsigned reports;                          /* bit per DT_STATS_* asked for */
    dt_stats_table tables[DT_STATS_REPORTS];   /* the reports of durations (not DT_STATS_MEMORY) */
    dt_stats_memory *memory;                   /* DT_STATS_MEMORY */
    size_t memory_count;
    /* The trace's summary: its events, backend, loss counts and the
       categories the reader has no kind for. */
    dt_rd_summary summary;
    void *state;                               /* what the rows' names live in */
} dt_stats_result;

/* Reads a trace into the reports asked for (reports: bit per DT_STATS_*).
   0; -1 when the trace cannot be read (or memory ran out reading it), -2
   when memory ran out after, with a message in err. Free the result with
   dt__rd_stats_free, also on failure. */
int dt__rd_stats(dt_rd_source *src, unsigned reports, dt_stats_result *result, char *err, size_t errlen);
void dt__rd_stats_free(dt_stats_result *result);

/* ---- merge: several traces of one job become one (merge.h says how) ---- */

#define DT_MERGE_MAX_INPUTS 512

typedef struct dt_merge_request {
    const char *out_path;      /* written atomically (a device or a FIFO in place) */
    const char *const *inputs; /* paths; "-" reads standard input */
    int ninputs;               /* 1 to DT_MERGE_MAX_INPUTS */
    bool gzip, perfetto;       /* the output's format */
} dt_merge_request;

typedef struct dt_merge_result {
    /* What merge says as it goes, in order, each line for the user as it
       stands: what it accepts but a user should hear of (warnings, counted
       in warnings, and notes) and, when it fails, why. */
    char **lines;
    size_t nlines, lines_cap;
    int warnings;
    /* Once written: the traces merged, the processes they hold, the events
       written, what the inputs tell of how far their clocks may be apart,
       and, for Perfetto output, what it carries and leaves out. */
    int traces, processes;
    uint64_t events;
    char agreement[1024];
    uint64_t pf_slices, pf_left_out, pf_flows_left_out;
} dt_merge_result;

typedef struct dt_merge dt_merge;

/* Reads every input once, and reviews them (what it says goes to result's
   lines). 0 when the merge can be written; 1 when an input cannot be read
   or OUT cannot be written; 2 when OUT is one of the inputs; the reason is
   the last line. *merge is set in every case, for dt__rd_merge_close. */
int dt__rd_merge_open(const dt_merge_request *request, dt_merge **merge, dt_merge_result *result);
/* Writes the merged trace. 0, or 1 with the reason as the last line. */
int dt__rd_merge_write(dt_merge *merge, dt_merge_result *result);
void dt__rd_merge_close(dt_merge *merge);
void dt__rd_merge_result_free(dt_merge_result *result);

#ifdef __cplusplus
}
#endif

#endif /* DT_READER_RESULTS_H */
