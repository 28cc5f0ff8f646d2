/*
 * The layout's pass 2 (layout_build.h): the candidates become
 * gpu_user_annotation spans of the range each External id belongs to, then
 * of every range enclosing that one, on an annotation row per device
 * stream.
 */
#include <stdbool.h>
#include <string.h>

#include "export/layout/layout_build.h"

#define MAX_RANGE_DEPTH 4096

/* The annotation row of a device's stream, made when new (after every
   host and device row). */
static uint32_t annot_row_for(dt_layout *l, uint32_t device, uint32_t stream)
{
    build *b = l->build;
    bool added;
    uint64_t *slot = dt__u64map_slot(&b->annot_rows, (uint64_t)device << 32 | stream, &added);
    if (!slot)
        return NONE;
    if (!added)
        return (uint32_t)*slot;
    if (dt__vec_reserve((void **)&l->brows, &b->cap_brows, l->nbrows + 1, sizeof *l->brows) != 0 ||
        dt__vec_reserve((void **)&b->rows, &b->cap_rows, l->nbrows + 1, sizeof *b->rows) != 0)
        return NONE;
    memset(&b->rows[l->nbrows], 0, sizeof *b->rows);
    dt_layout_base_row *br = &l->brows[l->nbrows];
    memset(br, 0, sizeof *br);
    br->cls = DT_LAYOUT_ANNOT;
    br->pid = device;
    br->lane = stream;
    *slot = l->nbrows;
    return (uint32_t)l->nbrows++;
}

/* The span of range number rno on annotation row `row`, made when new.
   A range's spans are a list: it has one per stream its activity ran on,
   a few. */
static uint32_t span_for(dt_layout *l, uint32_t rno, uint32_t row)
{
    build *b = l->build;
    range_info *ri = &b->ranges[rno];
    for (uint32_t k = ri->spans; k != NONE; k = l->spans[k].next)
        if (l->spans[k].row == row)
            return k;
    if (dt__vec_reserve((void **)&l->spans, &b->cap_spans, l->nspans + 1, sizeof *l->spans) != 0)
        return NONE;
    dt_layout_span *sp = &l->spans[l->nspans];
    sp->start = UINT64_MAX;
    sp->end = 0;
    sp->range = rno;
    sp->row = row;
    sp->name = ri->name;
    sp->external_id = ri->external_id;
    sp->next = ri->spans;
    ri->spans = (uint32_t)l->nspans;
    return (uint32_t)l->nspans++;
}

static void span_widen(dt_layout_span *sp, uint64_t st, uint64_t en)
{
    if (st < sp->start)
        sp->start = st;
    if (en > sp->end)
        sp->end = en;
}

/* The number of range id, or NONE. */
static uint32_t range_number(const build *b, uint64_t id)
{
    uint64_t v;
    return dt__u64map_get(&b->rangemap, id, &v) ? (uint32_t)v : NONE;
}

/* The range (its number) a device event with External id ext is
   attributed to: ext itself when it is a range, else the range the
   operation ext was pushed in. The second kind is written to devtrace.externalParents, so that
   readers (devtrace stats) attribute the same way. */
static uint32_t range_of_external(build *b, const dt_recording *rec, uint64_t ext)
{
    uint32_t r = range_number(b, ext);
    uint64_t range;
    if (r != NONE || !dt__recording_external_range(rec, ext, &range))
        return r;
    r = range_number(b, range);
    if (r == NONE)
        return NONE;
    bool added;
    uint64_t *slot = dt__u64map_slot(&b->parentmap, ext, &added);
    if (!slot) {
        b->parents_incomplete = 1;
        return r;
    }
    if (added) {
        if (b->nparents == b->cap_parents) {
            size_t cap = b->cap_parents ? b->cap_parents * 2 : 64;
            void *p = dt__realloc(b->parents, cap * sizeof *b->parents);
            if (!p) {
                /* the slot stays claimed: fail the export rather than write
                   a trace whose readers cannot attribute ext */
                b->parents_incomplete = 1;
                return r;
            }
            b->parents = p;
            b->cap_parents = cap;
        }
        *slot = b->nparents;
        b->parents[b->nparents].external_id = ext;
        b->parents[b->nparents].range_id = range;
        b->nparents++;
    }
    return r;
}

/* The number of the range enclosing range number rno, or NONE: looked up
   once per range. */
static uint32_t parent_range(dt_layout *l, uint32_t rno)
{
    range_info *ri = &l->build->ranges[rno];
    if (ri->parent == UNRESOLVED) {
        uint32_t parent = range_of_external(l->build, l->rec, ri->parent_id);
        ri->parent = parent == rno ? NONE : parent;
    }
    return ri->parent;
}

/* The candidates come in the order of the device event that started each,
   so the spans and annotation rows are made in the store order of their
   first device event. */
int dt__wr_layout_spans(dt_layout *l)
{
    build *b = l->build;
    if (b->rangemap.count == 0)
        return 0;
    /* device base row -> its annotation row, made in the order first needed */
    size_t nrows = l->nbrows;
    uint32_t *annot_of = dt__malloc((nrows + 1) * sizeof *annot_of);
    if (!annot_of)
        return -1;
    memset(annot_of, 0xff, (nrows + 1) * sizeof *annot_of);
    int rc = -1;
    for (size_t k = 0; k < b->ncands; k++) {
        const candidate *c = &b->cands[k];
        attribution *a = &b->attr[c->attr];
        if (a->range == UNRESOLVED)
            a->range = range_of_external(b, l->rec, a->external_id);
        if (a->range == NONE)
            continue;
        if (annot_of[c->row] == NONE) {
            const dt_layout_base_row *dev = &l->brows[c->row];
            annot_of[c->row] = annot_row_for(l, dev->pid, dev->lane);
            if (annot_of[c->row] == NONE)
                goto out;
        }
        uint32_t sp = span_for(l, a->range, annot_of[c->row]);
        if (sp == NONE)
            goto out;
        span_widen(&l->spans[sp], c->start, c->end);
    }
    /* ...then every range enclosing those, up the parent chain. */
    size_t direct = l->nspans;
    for (size_t k = 0; k < direct; k++) {
        uint32_t range = l->spans[k].range;
        for (int depth = 0; depth < MAX_RANGE_DEPTH; depth++) {
            uint32_t parent = parent_range(l, range);
            if (parent == NONE)
                break;
            uint32_t j = span_for(l, parent, l->spans[k].row);
            if (j == NONE)
                goto out;
            span_widen(&l->spans[j], l->spans[k].start, l->spans[k].end);
            range = parent;
        }
    }
    for (size_t k = 0; k < l->nspans; k++)
        if (row_append(&b->rows[l->spans[k].row], l->spans[k].start, l->spans[k].end, (uint32_t)(l->n + k)) != 0)
            goto out;
    rc = b->parents_incomplete ? -1 : 0;
out:
    dt__free(annot_of);
    return rc;
}
