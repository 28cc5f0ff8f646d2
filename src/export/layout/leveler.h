/*
 * Row leveling: the events of one row (a host thread, a device stream)
 * sorted by start, longer first on equal starts, and each placed on a level
 * so that the events of a level nest: no two partially overlap. Level 0 is
 * the row itself, higher levels are its overflow rows. Perfetto drops
 * complete events that partially overlap another on their row; the trace
 * writers move them instead (src/export/layout.c).
 *
 * Pure algorithms over (start, end, index) triples, with no session behind
 * them: tests/unit/export/test_leveler.c drives them directly.
 */
#ifndef DT_LEVELER_H
#define DT_LEVELER_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

typedef struct dt_row_item {
    uint64_t start, end;
    uint32_t idx;              /* the caller's, breaks ties */
} dt_row_item;

/* The order the writers write a row in: by start, then longer first, then
   by idx. */
static inline int dt__wr_row_item_before(const dt_row_item *a, const dt_row_item *b)
{
    if (a->start != b->start)
        return a->start < b->start;
    if (a->end != b->end)
        return a->end > b->end;
    return a->idx < b->idx;
}

/* Sorts a[0..n) in that order; tmp has room for n. Rows come nearly in
   order (a range is stored after the operations inside it): those cost
   one pass; any input costs O(n log n). */
DT_HIDDEN void dt__wr_row_items_sort(dt_row_item *a, dt_row_item *tmp, size_t n);

#define DT_LEVELER_NEST 16     /* levels that keep nested events together */

typedef struct dt_leveler_heap_entry {
    uint64_t end;
    uint32_t level;
} dt_leveler_heap_entry;

typedef struct dt_leveler {
    struct {
        uint64_t *ends;        /* open events of the level, innermost last */
        size_t n, cap;
    } st[DT_LEVELER_NEST];
    uint32_t nest_used;
    dt_leveler_heap_entry *heap;
    size_t heap_n, heap_cap;
    uint32_t extra_levels;     /* levels beyond DT_LEVELER_NEST */
} dt_leveler;

#define DT_LEVELER_NONE UINT32_MAX

/* A zeroed dt_leveler is ready; reset starts a new row. */
DT_HIDDEN void dt__wr_leveler_reset(dt_leveler *l);
DT_HIDDEN void dt__wr_leveler_free(dt_leveler *l);
/* The level of the next event [start, end] of the row (events come in
   dt_row_item_before order), or DT_LEVELER_NONE when out of memory. On
   the first DT_LEVELER_NEST levels an event nests inside the innermost
   open event of the lowest level where it fits; beyond them (pathological
   input) it takes a level free by its start, so that the work stays
   O(n log n) whatever the input. */
DT_HIDDEN uint32_t dt__wr_leveler_place_slow(dt_leveler *l, uint64_t start, uint64_t end);

/* Most events nest on level 0 (or follow its events): that much inline. */
static inline uint32_t dt__wr_leveler_place(dt_leveler *l, uint64_t start, uint64_t end)
{
    if (l->nest_used > 0) {
        __typeof__(l->st[0]) *s = &l->st[0];
        while (s->n > 0 && s->ends[s->n - 1] <= start)
            s->n--;
        if ((s->n == 0 || s->ends[s->n - 1] >= end) && s->n < s->cap) {
            s->ends[s->n++] = end;
            return 0;
        }
    }
    return dt__wr_leveler_place_slow(l, start, end);
}
/* Levels used since the reset. */
DT_HIDDEN uint32_t dt__wr_leveler_levels(const dt_leveler *l);

#endif /* DT_LEVELER_H */
