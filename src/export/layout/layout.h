/*
 * What every trace writer shares (src/export/layout.c): which events are
 * kept, the row each goes on (overflow rows for partial overlaps), the flow
 * pairs, the gpu_user_annotation spans, the device-time attribution, and
 * the names of processes and rows. The writers (chrome.c, perfetto.c) ask
 * for them here rather than deciding them again, so both formats show the
 * same rows and events.
 *
 * Events are laid out in positions 0..items-1, the order the JSON writes
 * them: base row by base row (a host thread, a device stream, a stream's
 * annotations), each by start, longer first on equal starts. A base row's
 * events are spread over its levels (leveler.h): the final rows, which the
 * writers write as rows of their own. Per position the layout keeps the
 * event (a record of the store, or an annotation span) and its final row
 * and flow sides, which the writers' per-event loops read through the
 * inline accessors below.
 */
#ifndef DT_LAYOUT_H
#define DT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "core/recording.h"

typedef struct dt_layout dt_layout;

enum { DT_LAYOUT_HOST, DT_LAYOUT_DEVICE, DT_LAYOUT_ANNOT };
enum { DT_LAYOUT_FLOW_START = 1, DT_LAYOUT_FLOW_FINISH = 2 };

typedef struct dt_layout_process {
    uint64_t pid;              /* as written */
    char name[256];
    const char *label;         /* "GPU <n>" for devices, else NULL */
    uint64_t sort_index;
    int device;
    char label_buf[32];
} dt_layout_process;

typedef struct dt_layout_row {
    int cls;                   /* DT_LAYOUT_* */
    uint32_t id;               /* host pid or device id, as recorded */
    uint32_t lane;             /* host tid or stream */
    uint32_t level;            /* 0, or k for "(overlap k)" */
    uint64_t pid, tid;         /* as written */
    char name[384];
} dt_layout_row;

/* A gpu_user_annotation span: a range's extent on one device stream. */
typedef struct dt_layout_span {
    uint64_t start, end;       /* realtime ns */
    uint64_t external_id;      /* the range's id */
    uint32_t range;            /* the range's number (layout.c's) */
    uint32_t row;              /* annotation base row */
    uint32_t name;             /* the range's interned name */
    uint32_t next;             /* the next span of the same range */
} dt_layout_span;

typedef struct dt_layout_base_row {
    uint8_t cls;               /* DT_LAYOUT_* */
    uint32_t pid;              /* host pid or device id, as recorded */
    uint32_t lane;             /* host tid or stream */
    uint32_t count;            /* positions of the row */
    uint32_t first;            /* its first position */
    uint32_t levels;
    uint32_t first_final;
} dt_layout_base_row;

typedef struct dt_layout_final_row {
    uint32_t base;
    uint32_t level;
    uint64_t pid, tid;         /* as written */
    uint32_t count;            /* its events */
    /* its positions: first.. when its base row has one level, else
       l->row_pos[first..] */
    uint32_t first;
    int contiguous;
} dt_layout_final_row;

/* A row may be written in parts (by two threads at once) where every
   earlier event of the row ends before the next one starts: the layout
   notes such places at least this many events apart. */
#define DT_LAYOUT_CUT_EVENTS 16384

/* Added to a host pid equal to a device id (the hostPid note): above
   Linux's largest pid_max. */
#define DT_LAYOUT_HOST_PID_SHIFT UINT64_C(4194304)

/* Per position: the final row, and the flow sides above it. */
#define DT_LAYOUT_ROW_MASK 0x3fffffffu
#define DT_LAYOUT_FLOW_SHIFT 30

struct dt_layout {
    const dt_recording *rec;
    const dt_store *store;     /* rec's, at hand */
    const dt_clock *clock;
    size_t n;                  /* records in the store */
    size_t items;              /* positions */
    uint32_t *perm;            /* position -> record index, or n + span index */
    uint32_t *pos_info;        /* position -> final row | flow sides << 30 */
    dt_layout_span *spans;
    size_t nspans;
    dt_layout_base_row *brows;
    size_t nbrows;
    dt_layout_final_row *frows;
    size_t nfrows;
    uint32_t *row_pos;         /* positions grouped by final row, for rows of several levels */
    uint32_t *cuts;            /* positions where a row of one level may be cut, ascending */
    size_t ncuts;
    uint64_t window_start, window_end;
    uint64_t base_ns;          /* the JSON's baseTimeNanoseconds */
    const char *api_prefix;    /* "cuda" or "privateuse1" */
    struct dt__wr_layout_build *build; /* the rest: layout.c's */
};

/* NULL when out of memory. */
DT_HIDDEN dt_layout *dt__wr_layout_build(const dt_recording *rec);
DT_HIDDEN void dt__wr_layout_free(dt_layout *l);

static inline uint64_t dt__wr_layout_rec_start(const dt_layout *l, const dt_rec *r)
{
    return (r->flags & DT_REC_REALTIME) ? r->start : dt__clock_map(l->clock, r->start);
}

static inline uint64_t dt__wr_layout_rec_end(const dt_layout *l, const dt_rec *r)
{
    return (r->flags & DT_REC_REALTIME) ? r->end : dt__clock_map(l->clock, r->end);
}

/* The record at position k, or NULL for a span (dt__wr_layout_pos_span). */
static inline const dt_rec *dt__wr_layout_pos_rec(const dt_layout *l, size_t k)
{
    uint32_t i = l->perm[k];
    return i < l->n ? dt__store_at(l->store, i) : NULL;
}

static inline const dt_layout_span *dt__wr_layout_pos_span(const dt_layout *l, size_t k)
{
    return &l->spans[l->perm[k] - l->n];
}

static inline uint32_t dt__wr_layout_pos_row(const dt_layout *l, size_t k)
{
    return l->pos_info[k] & DT_LAYOUT_ROW_MASK;
}

/* DT_LAYOUT_FLOW_* of the event at position k. */
static inline unsigned dt__wr_layout_pos_flow(const dt_layout *l, size_t k)
{
    return l->pos_info[k] >> DT_LAYOUT_FLOW_SHIFT;
}

/* Positions an exporter touches at once (dt__wr_layout_touch) before it
   formats them: their records take 128 KiB, well within a core's cache. */
#define DT_LAYOUT_WARM 2048

/* Loads what the formatting of position k reads first, and returns a value
   of it (kept by the caller, so that the loads stay). Rows gather their
   events from all over the store: each position's record is a cache miss,
   and a page walk where the store is larger than the TLB covers. Touched in
   a loop of loads that depend on nothing, a block of positions has its
   misses overlap; formatted straight away, each waits for its own. A
   prefetch some positions ahead did not help (measured with bench/export:
   the user CPU of the JSON export fell by a third with the touch). */
static inline uint64_t dt__wr_layout_touch(const dt_layout *l, size_t k)
{
    uint32_t i = l->perm[k];
    if (i < l->n)
        return dt__store_at(l->store, i)->kind;
    const dt_layout_span *sp = &l->spans[i - l->n];
    return sp->start + sp->name; /* its first and last line */
}

/* The j-th position of final row f. */
static inline size_t dt__wr_layout_row_position(const dt_layout *l, const dt_layout_final_row *f, size_t j)
{
    return f->contiguous ? f->first + j : l->row_pos[f->first + j];
}

DT_HIDDEN void dt__wr_layout_row_get(dt_layout *l, size_t row, dt_layout_row *out);
/* Processes in naming order; *cursor starts at 0. 0 when done. */
DT_HIDDEN int dt__wr_layout_next_process(dt_layout *l, size_t *cursor, dt_layout_process *out);
/* The recording process as written, and whether its tid 0 row is free for
   the capture window's event. */
DT_HIDDEN uint64_t dt__wr_layout_main_pid(dt_layout *l);
DT_HIDDEN int dt__wr_layout_capture_row_free(dt_layout *l);

/* Events kept per dt_event_kind (index 1..9), flow pairs, and API calls
   kept that launch device work. */
DT_HIDDEN uint64_t dt__wr_layout_kind_count(const dt_layout *l, int kind);
DT_HIDDEN uint64_t dt__wr_layout_flow_count(const dt_layout *l);
DT_HIDDEN uint64_t dt__wr_layout_launch_count(const dt_layout *l);
/* The recording's loss plus what the writer could not place. */
DT_HIDDEN uint64_t dt__wr_layout_loss(const dt_layout *l, dt_loss_reason reason);
DT_HIDDEN size_t dt__wr_layout_attribution_count(const dt_layout *l);
DT_HIDDEN void dt__wr_layout_attribution_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *ns);
DT_HIDDEN size_t dt__wr_layout_parent_count(const dt_layout *l);
DT_HIDDEN void dt__wr_layout_parent_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *range_id);
/* 1 when a host pid equal to a device id was moved (the hostPid note). */
DT_HIDDEN int dt__wr_layout_host_pid_shifted(const dt_layout *l);
/* The pid a host pid is written as. */
DT_HIDDEN uint64_t dt__wr_layout_host_pid(const dt_layout *l, uint32_t pid);
/* How long each phase of the build took, for DEVTRACE_LOG: classify, the
   annotation spans (the other rows leveled beside them), the annotation
   rows and the rest. */
DT_HIDDEN void dt__wr_layout_phases(const dt_layout *l, double *classify_s, double *spans_s, double *rows_s);

typedef struct dt_layout_kernel {
    int has_config;            /* the backend reported the launch configuration */
    int has_resources;         /* ... and the vendor's records carry registers and shared memory */
    dt_launch_config config;
    int occupancy_valid;
    uint64_t blocks_per_sm_e6, warps_per_sm_e6; /* six decimals */
    long occupancy_pct;
} dt_layout_kernel;

/* What a kernel's args can say, as the JSON args give them: its launch
   configuration when the backend reported one, its resources (and so the
   occupancy estimate) when the vendor's records carry them; what is not
   known is left out. */
DT_HIDDEN void dt__wr_layout_kernel_get(const dt_layout *l, unsigned device, uint32_t config, dt_layout_kernel *out);
/* "HtoD" ..., "Pageable" ...: the words of copy and memset names. */
/* A memory event's args as torch writes them. */
typedef struct dt_layout_memory {
    int64_t bytes;             /* negative for a free */
    int64_t total;             /* "Total Allocated" after it, per device */
    int64_t device_id;         /* -1: host memory */
    int device_type;           /* torch's c10::DeviceType */
} dt_layout_memory;
/* The args of r, a DT_EVENT_MEMORY record the layout kept (zeros else). */
DT_HIDDEN const dt_layout_memory *dt__wr_layout_memory_of(const dt_layout *l, const dt_rec *r);
DT_HIDDEN const char *dt__wr_layout_copy_kind_name(unsigned kind);
DT_HIDDEN const char *dt__wr_layout_memory_kind_name(unsigned kind);

#endif /* DT_LAYOUT_H */
