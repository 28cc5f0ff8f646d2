/* Row sorting and leveling (leveler.h). */
#include "export/layout/leveler.h"

#include <string.h>

#include "base/vec.h"

/* Stable bottom-up merge sort; a run already in order costs one compare. */
static void merge_sort(dt_row_item *a, dt_row_item *tmp, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (dt__wr_row_item_before(&a[i + 1], &a[i])) {
            dt_row_item t = a[i];
            a[i] = a[i + 1];
            a[i + 1] = t;
        }
    }
    dt_row_item *src = a, *dst = tmp;
    for (size_t w = 2; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            if (mid == hi || !dt__wr_row_item_before(&src[mid], &src[mid - 1])) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
                continue;
            }
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = dt__wr_row_item_before(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        dt_row_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Insertion sort puts a nearly sorted row in order in one pass; it gives up
   (and the merge sort takes over from where it stopped) once it has moved
   more than `budget` items in all, so that no input costs more than
   O(n log n). Returns 0 when done. */
static int sort_nearly_sorted(dt_row_item *a, size_t n, size_t budget)
{
    for (size_t i = 1; i < n; i++) {
        if (!dt__wr_row_item_before(&a[i], &a[i - 1]))
            continue;
        dt_row_item cur = a[i];
        size_t j = i;
        do {
            a[j] = a[j - 1];
            j--;
        } while (j > 0 && dt__wr_row_item_before(&cur, &a[j - 1]));
        a[j] = cur;
        size_t moved = i - j;
        if (moved > budget)
            return -1;
        budget -= moved;
    }
    return 0;
}

void dt__wr_row_items_sort(dt_row_item *a, dt_row_item *tmp, size_t n)
{
    if (sort_nearly_sorted(a, n, 8 * n) != 0)
        merge_sort(a, tmp, n);
}

static void heap_push(dt_leveler *l, dt_leveler_heap_entry e)
{
    size_t i = l->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (l->heap[p].end <= e.end)
            break;
        l->heap[i] = l->heap[p];
        i = p;
    }
    l->heap[i] = e;
}

static dt_leveler_heap_entry heap_pop(dt_leveler *l)
{
    dt_leveler_heap_entry top = l->heap[0];
    dt_leveler_heap_entry last = l->heap[--l->heap_n];
    size_t i = 0, n = l->heap_n;
    for (;;) {
        size_t ch = 2 * i + 1;
        if (ch >= n)
            break;
        if (ch + 1 < n && l->heap[ch + 1].end < l->heap[ch].end)
            ch++;
        if (last.end <= l->heap[ch].end)
            break;
        l->heap[i] = l->heap[ch];
        i = ch;
    }
    if (n > 0)
        l->heap[i] = last;
    return top;
}

void dt__wr_leveler_reset(dt_leveler *l)
{
    for (uint32_t k = 0; k < l->nest_used; k++)
        l->st[k].n = 0;
    l->nest_used = 0;
    l->heap_n = 0;
    l->extra_levels = 0;
}

uint32_t dt__wr_leveler_levels(const dt_leveler *l)
{
    return l->extra_levels ? DT_LEVELER_NEST + l->extra_levels : l->nest_used;
}

uint32_t dt__wr_leveler_place_slow(dt_leveler *l, uint64_t st, uint64_t en)
{
    for (uint32_t k = 0; k < l->nest_used; k++) {
        __typeof__(l->st[0]) *s = &l->st[k];
        while (s->n > 0 && s->ends[s->n - 1] <= st)
            s->n--;
        if (s->n == 0 || s->ends[s->n - 1] >= en) {
            if (dt__vec_reserve((void **)&s->ends, &s->cap, s->n + 1, sizeof *s->ends) != 0)
                return DT_LEVELER_NONE;
            s->ends[s->n++] = en;
            return k;
        }
    }
    if (l->nest_used < DT_LEVELER_NEST) {
        __typeof__(l->st[0]) *s = &l->st[l->nest_used];
        if (dt__vec_reserve((void **)&s->ends, &s->cap, 1, sizeof *s->ends) != 0)
            return DT_LEVELER_NONE;
        s->ends[0] = en;
        s->n = 1;
        return l->nest_used++;
    }
    if (dt__vec_reserve((void **)&l->heap, &l->heap_cap, l->heap_n + 1, sizeof *l->heap) != 0)
        return DT_LEVELER_NONE;
    dt_leveler_heap_entry e;
    if (l->heap_n > 0 && l->heap[0].end <= st)
        e = heap_pop(l);
    else
        e.level = DT_LEVELER_NEST + l->extra_levels++;
    e.end = en;
    heap_push(l, e);
    return e.level;
}

void dt__wr_leveler_free(dt_leveler *l)
{
    for (int k = 0; k < DT_LEVELER_NEST; k++)
        dt__free(l->st[k].ends);
    dt__free(l->heap);
    memset(l, 0, sizeof *l);
}
