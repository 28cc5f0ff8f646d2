/*
 * The layout's build (layout.h), shared by the files that make it: the
 * state its passes fill, and what one pass hands the next.
 *
 *   layout.c           the passes in order; the counts, losses and
 *                      attribution of the result
 *   layout_classify.c  pass 1: keep or drop each record, its base row and
 *                      times, the flow pairs, the device-time attribution
 *                      and annotation candidates, the ranges
 *   layout_spans.c     pass 2: the gpu_user_annotation spans
 *   layout_rows.c      pass 3: each base row sorted and leveled into final
 *                      rows, the positions, where rows may be cut
 *   layout_memory.c    memory events: torch's args, totals in time order
 *   layout_names.c     the names of processes and rows
 *   layout_kernel.c    kernel args: launch configuration and occupancy
 */
#ifndef DT_EXPORT_LAYOUT_BUILD_H
#define DT_EXPORT_LAYOUT_BUILD_H

#include <stdint.h>

#include "base/hash.h"
#include "base/vec.h"
#include "export/layout/layout.h"
#include "export/layout/leveler.h"

#define NONE UINT32_MAX
/* Records (or positions) from which a second thread pays for its start */
#define CLASSIFY_THREAD_RECORDS 16384

/* Device time per External id, and the device rows its activity ran on. */
typedef struct attribution {
    uint64_t external_id;
    uint64_t ns;
    uint32_t candidates;       /* its first candidate, most recently used first */
    uint32_t range;            /* its range's number; UNRESOLVED until asked */
} attribution;

#define UNRESOLVED (NONE - 1)

/* The extent of one External id's device activity on one device row: the
   annotation span of its range there, or part of it. */
typedef struct candidate {
    uint64_t start, end;
    uint32_t attr;             /* its External id's attribution entry */
    uint32_t row;              /* the device base row */
    uint32_t next;             /* the External id's next candidate */
} candidate;

/* A base row's events as classify finds them: their times, to sort and
   level the row without reading the store again. */
typedef struct row_items {
    dt_row_item *v;
    size_t n, cap;
} row_items;

/* A range, as classify found it: what the spans need of its record, kept
   so that they need not read it from the store again. */
typedef struct range_info {
    uint64_t external_id;
    uint64_t parent_id;        /* valid iff parent is not NONE */
    uint32_t name;
    uint32_t spans;            /* its first span */
    uint32_t parent;           /* its parent's number, NONE, or UNRESOLVED */
} range_info;

typedef struct dt__wr_layout_build {
    row_items *rows;           /* per base row */
    size_t cap_rows;
    uint8_t *flow;             /* record -> DT_LAYOUT_FLOW_* */
    size_t cap_brows, cap_frows, cap_spans, cap_cuts;
    dt_u64map annot_rows;          /* (device, stream) -> its annotation row */

    dt_u64map attrmap;
    attribution *attr;
    size_t nattr, cap_attr;
    candidate *cands;
    size_t ncands, cap_cands;

    dt_u64map rangemap;            /* range id -> range number */
    range_info *ranges;        /* by range number */
    size_t nranges, cap_ranges;
    dt_u64map parentmap;           /* external id -> index in parents */
    struct { uint64_t external_id, range_id; } *parents; /* written as externalParents */
    size_t nparents, cap_parents;
    int parents_incomplete;     /* out of memory recording devtrace.externalParents */

    uint64_t kinds[DT_EVENT_KIND_MAX + 1];
    uint64_t flows;
    uint64_t launches;         /* API calls that launch device work */
    uint64_t dropped_window, dropped_kind, dropped_reversed;
    uint8_t device_pid[65536 / 8]; /* device ids in use, as a bitmap */
    int host_pid_shifted;
    uint64_t phase_ns[3];
    /* memory events: record address -> position in mem */
    dt_u64map memmap;
    dt_layout_memory *mem;
} build;

static inline uint64_t rec_start(const dt_layout *l, const dt_rec *r)
{
    return dt__wr_layout_rec_start(l, r);
}

static inline uint64_t rec_end(const dt_layout *l, const dt_rec *r)
{
    return dt__wr_layout_rec_end(l, r);
}

static inline int row_append(row_items *ri, uint64_t st, uint64_t en, uint32_t idx)
{
    if (__builtin_expect(ri->n == ri->cap, 0) &&
        dt__vec_reserve((void **)&ri->v, &ri->cap, ri->n + 1, sizeof *ri->v) != 0)
        return -1;
    ri->v[ri->n++] = (dt_row_item){st, en, idx};
    return 0;
}

/* The passes (layout.c runs them in order); each returns 0, or -1 when out
   of memory. */
DT_HIDDEN int dt__wr_layout_classify(dt_layout *l);
/* Passes 2 and 3 (the spans built beside the rows' leveling). */
DT_HIDDEN int dt__wr_layout_spans_and_rows(dt_layout *l);
DT_HIDDEN int dt__wr_layout_spans(dt_layout *l);
DT_HIDDEN int dt__wr_layout_memory_totals(dt_layout *l);

#endif /* DT_EXPORT_LAYOUT_BUILD_H */
