/*
 * The layout every trace writer writes (layout.h), built in three passes
 * (layout_build.h lists the files that make them):
 *
 *  1. classify (over the store in store order, as two sides on two threads:
 *     device activity and host side): keep or drop each record, its base
 *     row and its times, the flow pairs, the device-time attribution per
 *     External id, and per External id the device rows its activity ran on
 *     with their extents (the candidates of the annotation spans);
 *  2. spans: the candidates become gpu_user_annotation spans of the range
 *     each External id belongs to, then of every range enclosing that one;
 *  3. rows: events grouped by base row (a counting sort), each row sorted
 *     and leveled (leveler.h) in one pass over it.
 *
 * Every pass reads the store in order or a row's events in order: the
 * store is far larger than the caches, and a probe into a large map per
 * event (the annotation spans once were) costs a cache miss per event.
 */
#include <stdlib.h>
#include <string.h>

#include "base/os.h"
#include "export/layout/layout_build.h"

static int prepare(dt_layout *l)
{
    build *b = l->build;
    l->n = l->store->count;
    if (l->n >= UINT32_MAX / 2)
        return -1;
    b->flow = dt__calloc(l->n + 1, 1);
    if (!b->flow)
        return -1;
    if (dt__u64map_reserve(&b->attrmap, 1024) != 0)
        return -1;
    uint64_t t = dt__monotonic_ns();
    if (dt__wr_layout_classify(l) != 0)
        return -1;
    b->phase_ns[0] = dt__monotonic_ns() - t;
    t += b->phase_ns[0];
    if (dt__wr_layout_spans_and_rows(l) != 0)
        return -1;
    t += b->phase_ns[1];
    if (b->kinds[DT_EVENT_MEMORY] && dt__wr_layout_memory_totals(l) != 0)
        return -1;
    b->phase_ns[2] = dt__monotonic_ns() - t;
    return 0;
}

dt_layout *dt__wr_layout_build(const dt_recording *rec)
{
    dt_layout *l = dt__calloc(1, sizeof *l);
    if (!l)
        return NULL;
    /* large (row caches, a bitmap): kept off the caller's stack */
    l->build = dt__calloc(1, sizeof *l->build);
    if (!l->build) {
        dt__free(l);
        return NULL;
    }
    l->rec = rec;
    l->store = rec->store;
    l->clock = rec->clock;
    l->api_prefix = rec->api_category ? rec->api_category : "privateuse1";
    if (prepare(l) != 0) {
        dt__wr_layout_free(l);
        return NULL;
    }
    return l;
}

void dt__wr_layout_free(dt_layout *l)
{
    if (!l)
        return;
    build *b = l->build;
    if (b) {
        for (size_t r = 0; r < l->nbrows; r++)
            dt__free(b->rows[r].v);
        dt__free(b->rows);
        dt__free(b->flow);
        dt__u64map_free(&b->annot_rows);
        dt__u64map_free(&b->attrmap);
        dt__free(b->attr);
        dt__free(b->cands);
        dt__u64map_free(&b->rangemap);
        dt__free(b->ranges);
        dt__u64map_free(&b->parentmap);
        dt__free(b->parents);
        dt__u64map_free(&b->memmap);
        dt__free(b->mem);
        dt__free(b);
    }
    dt__free(l->perm);
    dt__free(l->pos_info);
    dt__free(l->spans);
    dt__free(l->brows);
    dt__free(l->frows);
    dt__free(l->row_pos);
    dt__free(l->cuts);
    dt__free(l);
}

uint64_t dt__wr_layout_kind_count(const dt_layout *l, int kind)
{
    return kind >= 1 && kind <= DT_EVENT_KIND_MAX ? l->build->kinds[kind] : 0;
}

uint64_t dt__wr_layout_flow_count(const dt_layout *l)
{
    return l->build->flows;
}

uint64_t dt__wr_layout_launch_count(const dt_layout *l)
{
    return l->build->launches;
}

/* The recording's count plus the records the layout could not place, which
   count like its drops. */
uint64_t dt__wr_layout_loss(const dt_layout *l, dt_loss_reason r)
{
    const build *b = l->build;
    uint64_t v = l->rec->loss[r];
    if (r == DT_LOSS_OUTSIDE_WINDOW)
        v += b->dropped_window;
    else if (r == DT_LOSS_UNKNOWN_KIND)
        v += b->dropped_kind;
    else if (r == DT_LOSS_TIMESTAMP_REVERSED)
        v += b->dropped_reversed;
    return v;
}

size_t dt__wr_layout_attribution_count(const dt_layout *l)
{
    return l->build->nattr;
}

void dt__wr_layout_attribution_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *ns)
{
    *external_id = l->build->attr[k].external_id;
    *ns = l->build->attr[k].ns;
}

size_t dt__wr_layout_parent_count(const dt_layout *l)
{
    return l->build->nparents;
}

void dt__wr_layout_parent_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *range_id)
{
    *external_id = l->build->parents[k].external_id;
    *range_id = l->build->parents[k].range_id;
}

int dt__wr_layout_host_pid_shifted(const dt_layout *l)
{
    return l->build->host_pid_shifted;
}

void dt__wr_layout_phases(const dt_layout *l, double *classify_s, double *spans_s, double *rows_s)
{
    *classify_s = (double)l->build->phase_ns[0] * 1e-9;
    *spans_s = (double)l->build->phase_ns[1] * 1e-9;
    *rows_s = (double)l->build->phase_ns[2] * 1e-9;
}
