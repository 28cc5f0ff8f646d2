/*
 * `devtrace merge`: several traces of one job become one trace.
 *
 * Each input is read twice, one at a time, so that memory follows the
 * largest input's index, never the sum: a first pass keeps a small summary
 * of every input (rank, host, process, clock, loss, id ranges, time
 * extent: merge_inputs.c); then, group by group (the inputs of one process:
 * a devtrace trace and the torch.profiler trace of the same process), the
 * second pass copies each event's text as written (merge_events.c),
 * changing only what must change:
 *  - pids, so that every rank's processes and devices stay apart (rank 0
 *    keeps its own, rank k's numeric pids move by k * 2^23, above any Linux
 *    pid), and process names and labels, which say the rank ("rank 3 GPU 0");
 *  - flow ids and correlation ids, and External ids, moved per input past
 *    the ids of the inputs before it, so that none is ambiguous;
 *  - ts, when the inputs' baseTimeNanoseconds differ;
 *  - in a group with a torch.profiler trace, the External id of each
 *    devtrace runtime/driver call: the innermost cpu_op on the same thread
 *    whose span contains the call's start, passed on to the call's device
 *    work through the correlation id (what Kineto's own linking gives:
 *    merge_link.c).
 * Attribution is summed again from the written device events; loss counts,
 * notes and clock facts are kept per rank in devtrace.ranks
 * (merge_devtrace.c). merge.c reads, reviews and writes, for the command
 * (src/cli/merge.c), saying what it finds in the result's lines.
 *
 * What merge's files share; not part of the reader's interface.
 */
#ifndef DT_RD_MERGE_H
#define DT_RD_MERGE_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/out.h"
#include "format/json.h"
#include "base/vec.h"
#include "reader/dt_reader.h"
#include "reader/results.h"

#define RANGE_ID_BASE (UINT64_C(1) << 48)
#define PID_STRIDE (INT64_C(1) << 23)
#define MAX_INPUTS DT_MERGE_MAX_INPUTS
#define DEVICE_SORT_BASE 5000000

typedef struct input {
    const char *path;
    dt_rd_summary sum;
    bool devtrace; /* written by devtrace (its key, not the plugin's) */
    bool has_cpu_ops;
    int64_t main_pid; /* devtrace.pid, or the pid of most host events */
    bool has_main_pid;
    uint64_t max_flow, max_ext, max_range;
    bool has_flows, has_ext, has_range;
    int64_t min_ns, max_ns; /* X events' extent, absolute */
    bool has_extent;
    int group;
    /* offsets given in the second pass */
    uint64_t flow_off, ext_off, range_off;
    int64_t ts_delta_ns;
    /* deviceProperties entries as written, and where their "id" lies */
    char **devices;
    dt_rd_span *device_ids;
    size_t ndevices;
    /* what it holds that breaks the trace format, carried over as written */
    uint64_t negative_durations; /* complete events with "dur" < 0 */
    uint64_t broken_flows;       /* ac2g flow ids with more than one start or finish, or neither */
    uint64_t cut_flows;          /* ac2g flow ids with one side only: a start or a finish */
    dev_t dev; /* the file, to find it given twice or as the output */
    ino_t ino;
    /* an input that cannot be read twice (a pipe, "-"), copied once into
       an unlinked temporary file: its descriptor and the path both passes
       open ("" when none) */
    int spool_fd;
    char spool_path[32];
} input;

typedef struct group {
    int first_input;
    int count;
    int rank_pos;       /* position in the output, by rank */
    bool has_rank;
    int64_t rank;
    char label[64];     /* "rank 3" or "trace 2" */
    int host_sort;      /* host processes named so far */
} group;

/* A cpu_op of the torch.profiler trace of a group: its thread, span and id. */
typedef struct cpu_op {
    int64_t tid;
    int64_t start, end;
    uint64_t ext;
    size_t parent; /* SIZE_MAX: none */
} cpu_op;

typedef struct merger {
    input *in;
    int nin;
    group *groups;
    int ngroups;
    int64_t base_ns;
    int64_t window_start, window_end;
    dt_merge_result *said; /* what merge says, line by line (dt__rd_merge_say) */
    /* per group, while writing it */
    cpu_op *ops;
    size_t nops, ops_cap;
    dt_u64map corr_ext;   /* devtrace correlation -> cpu_op External id */
    dt_u64map attr;       /* final External id -> device ns */
    FILE *spill_attr, *spill_parents;
    uint64_t events_written;
    bool first_event;
    bool oom;
    /* per group: each pid and row the output uses, keyed by how it is
       written ("7", "\"rank 1 Spans\"", "7 8"), and whether metadata named
       it (ROW_*) */
    dt_strtab out_pids, out_rows;
    uint8_t *pid_flags, *row_flags;
    size_t pid_flags_cap, row_flags_cap;
} merger;

enum { ROW_USED = 1, ROW_NAMED = 2 };

#define out_text dt__out_text
#define out_u64 dt__out_u64
#define out_i64 dt__out_i64
#define out_str dt__json_cstr

/* Flows from runtime calls to device work: their ids are correlation ids,
   which merge moves per input. Other flows (torch's fwdbwd) keep theirs. */
static inline bool dt__rd_merge_is_ac2g_flow(const dt_rd_event *e)
{
    return (e->ph[0] == 's' || e->ph[0] == 'f' || e->ph[0] == 't') && !e->ph[1] && e->cat_kind == DT_RD_CAT_AC2G;
}

/* An External id as the output writes it: moved past the inputs' before. */
static inline uint64_t dt__rd_merge_remap_ext(const input *in, uint64_t id)
{
    return id >= RANGE_ID_BASE ? id + in->range_off : id + in->ext_off;
}

/* A line for the user (dt_merge_result.lines), printf-style. */
__attribute__((format(printf, 2, 3))) void dt__rd_merge_say(merger *m, const char *fmt, ...);

/* ---- the inputs (merge_inputs.c) ---- */
/* Reads the input with the visitor: 0, or -1 said (dt__rd_merge_say). */
int dt__rd_merge_read_input(merger *m, input *in, dt_rd_visitor visit, void *user, unsigned flags,
                           dt_rd_summary *sum);
/* An input that is no regular file (a FIFO, a pipe, a terminal, "-" for
   standard input) copied once, for both passes. 0, or -1 said. */
int dt__rd_merge_spool_input(merger *m, input *in);
/* The first pass over every input. 0, or -1 said. */
int dt__rd_merge_index_inputs(merger *m);
/* The host an input names, or NULL. */
const char *dt__rd_merge_input_host(const input *in);
/* The host every input that names one names (torch.profiler's top-level
   "host_name" kept as it wrote it), or NULL when none or several. */
const char *dt__rd_merge_common_host(const merger *m);
/* Two inputs are one process: the same pid, and no host or rank that differs. */
bool dt__rd_merge_same_process(const input *a, const input *b);
/* The inputs of one process together, groups in rank order. -1 when out of
   memory. */
int dt__rd_merge_make_groups(merger *m);
/* Id offsets and the common time base. */
void dt__rd_merge_plan_ids(merger *m);

/* ---- linking calls to cpu_ops (merge_link.c) ---- */
/* The torch trace's cpu_ops indexed, then each devtrace call of group gi
   given the External id of its innermost op (m->corr_ext). 0, or -1. */
int dt__rd_merge_link_group(merger *m, int gi, input *torch);

/* ---- writing events (merge_events.c) ---- */
/* ns as microseconds with three decimals. */
void dt__rd_merge_out_us3(dt_out *o, int64_t ns);
/* Forgets the pids and rows the output used. */
void dt__rd_merge_reset_rows(merger *m);
/* The events of group gi, as the output writes them. 0, or -1. */
int dt__rd_merge_write_group(merger *m, dt_out *o, int gi);

/* ---- the devtrace key and deviceProperties (merge_devtrace.c) ---- */
/* What the inputs allow us to say about how their clocks agree, into buf. */
void dt__rd_merge_clock_agreement(merger *m, char *buf, size_t n);
void dt__rd_merge_write_devtrace_key(merger *m, dt_out *o, const char *agreement);
/* Every input's deviceProperties, rank by rank, each "id" moved as its
   rank's pids are. */
void dt__rd_merge_write_devices(merger *m, dt_out *o);

#endif
