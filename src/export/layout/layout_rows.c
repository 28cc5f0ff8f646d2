/*
 * The layout's pass 3 (layout_build.h): events grouped by base row (a
 * counting sort), each row sorted and leveled (leveler.h) in one pass over
 * it into its final rows; the positions, their final rows and flow sides,
 * and where rows may be cut. The rows classify made are leveled beside the
 * annotation spans (pass 2), then the annotation rows.
 */
#include <pthread.h>
#include <string.h>

#include "base/out.h"
#include "base/os.h"
#include "export/layout/layout_build.h"

static uint64_t final_tid(const dt_layout_base_row *b, uint32_t level)
{
    uint64_t lane = b->lane;
    switch (b->cls) {
    case DT_LAYOUT_DEVICE:
        /* odd millions: stream overflow; even millions: annotations */
        return level == 0 ? lane : lane + UINT64_C(1000000) * (2 * (uint64_t)level - 1);
    case DT_LAYOUT_ANNOT:
        return lane + UINT64_C(1000000) * (2 * (uint64_t)level + 2);
    default:
        if (level == 0)
            return lane;
        /* Linux tids stay below 2^22; keep synthetic tids within 32 bits */
        if (lane < (UINT64_C(1) << 22) && level < 1024)
            return lane | (uint64_t)level << 22;
        return lane + ((uint64_t)level << 32);
    }
}

uint64_t dt__wr_layout_host_pid(const dt_layout *l, uint32_t pid)
{
    if (pid <= 0xffff && (l->build->device_pid[pid >> 3] & (1u << (pid & 7))))
        return pid + DT_LAYOUT_HOST_PID_SHIFT;
    return pid;
}

static void mark_device_pids(dt_layout *l)
{
    /* A host pid equal to a device id (pid 1 in a container, device 1) would
       merge the host rows into the device's process: such host pids move. */
    build *b = l->build;
    for (size_t i = 0; i < l->nbrows; i++)
        if (l->brows[i].cls != DT_LAYOUT_HOST && l->brows[i].pid <= 0xffff)
            b->device_pid[l->brows[i].pid >> 3] |= (uint8_t)(1u << (l->brows[i].pid & 7));
    for (size_t i = 0; i < l->nbrows; i++)
        if (l->brows[i].cls == DT_LAYOUT_HOST && dt__wr_layout_host_pid(l, l->brows[i].pid) != l->brows[i].pid)
            b->host_pid_shifted = 1;
    if (dt__wr_layout_host_pid(l, (uint32_t)l->rec->pid) != (uint64_t)(uint32_t)l->rec->pid)
        b->host_pid_shifted = 1;
}

static int add_final_rows(dt_layout *l, uint32_t base)
{
    dt_layout_base_row *br = &l->brows[base];
    if (dt__vec_reserve((void **)&l->frows, &l->build->cap_frows, l->nfrows + br->levels, sizeof *l->frows) != 0)
        return -1;
    br->first_final = (uint32_t)l->nfrows;
    for (uint32_t level = 0; level < br->levels; level++) {
        dt_layout_final_row *f = &l->frows[l->nfrows++];
        f->base = base;
        f->level = level;
        f->pid = br->cls == DT_LAYOUT_HOST ? dt__wr_layout_host_pid(l, br->pid) : br->pid;
        f->tid = final_tid(br, level);
        f->count = br->levels == 1 ? br->count : 0;
        f->first = br->first;
        f->contiguous = br->levels == 1;
    }
    return 0;
}

/* Where rows may be cut (DT_LAYOUT_CUT_EVENTS): each row's events come
   to note_cut in order. */
typedef struct cutter {
    uint64_t max_end;          /* of the row's events so far */
    uint32_t since;            /* events since the last cut */
} cutter;

static int add_cut(dt_layout *l, uint32_t pos)
{
    if (dt__vec_reserve((void **)&l->cuts, &l->build->cap_cuts, l->ncuts + 1, sizeof *l->cuts) != 0)
        return -1;
    l->cuts[l->ncuts++] = pos;
    return 0;
}

static inline int note_cut(dt_layout *l, cutter *c, uint32_t pos, uint64_t st, uint64_t en)
{
    if (__builtin_expect(c->since >= DT_LAYOUT_CUT_EVENTS, 0) && st > c->max_end) {
        if (add_cut(l, pos) != 0)
            return -1;
        c->since = 0;
    }
    c->since++;
    if (en > c->max_end)
        c->max_end = en;
    return 0;
}

/* Levels one base row, given its events in the order classify found them:
   in one pass when that is their start order, else after sorting them.
   Its positions get their events, final rows and flow sides. */
static int level_row(dt_layout *l, uint32_t r, dt_leveler *lv, dt_row_item **tmp, size_t *tmp_cap)
{
    build *b = l->build;
    dt_layout_base_row *br = &l->brows[r];
    dt_row_item *a = b->rows[r].v;
    size_t n = b->rows[r].n;
    size_t row_cuts = l->ncuts;
    for (int pass = 0; pass < 2; pass++) {
        dt__wr_leveler_reset(lv);
        cutter cut = {0, 0};
        l->ncuts = row_cuts;
        uint32_t first_final = (uint32_t)l->nfrows;
        uint32_t *info = l->pos_info + br->first, *perm = l->perm + br->first;
        size_t k = 0;
        for (; k < n; k++) {
            if (k > 0 && dt__wr_row_item_before(&a[k], &a[k - 1]))
                break;
            uint32_t level = dt__wr_leveler_place(lv, a[k].start, a[k].end);
            if (level == DT_LEVELER_NONE || note_cut(l, &cut, (uint32_t)(br->first + k), a[k].start, a[k].end) != 0)
                return -1;
            uint32_t i = a[k].idx;
            unsigned flow = i < l->n ? b->flow[i] : 0;
            perm[k] = i;
            info[k] = (first_final + level) | (uint32_t)flow << DT_LAYOUT_FLOW_SHIFT;
        }
        if (k == n)
            break;
        if (pass > 0 || dt__vec_reserve((void **)tmp, tmp_cap, n, sizeof **tmp) != 0)
            return -1;
        dt__wr_row_items_sort(a, *tmp, n);
    }
    br->levels = dt__wr_leveler_levels(lv);
    if (br->levels > 1)
        l->ncuts = row_cuts; /* its final rows are written whole */
    return 0;
}

/* For base rows of several levels: their positions grouped by final row,
   in order (a counting sort by level). */
static int group_by_final_row(dt_layout *l)
{
    size_t need = 0;
    for (size_t b = 0; b < l->nbrows; b++)
        if (l->brows[b].levels > 1)
            need += l->brows[b].count;
    if (need == 0)
        return 0;
    l->row_pos = dt__malloc(need * sizeof *l->row_pos);
    if (!l->row_pos)
        return -1;
    size_t at = 0;
    for (size_t b = 0; b < l->nbrows; b++) {
        const dt_layout_base_row *br = &l->brows[b];
        if (br->levels <= 1)
            continue;
        dt_layout_final_row *f = &l->frows[br->first_final];
        for (size_t k = 0; k < br->count; k++)
            f[(l->pos_info[br->first + k] & DT_LAYOUT_ROW_MASK) - br->first_final].count++;
        for (uint32_t v = 0; v < br->levels; v++) {
            f[v].first = (uint32_t)at;
            at += f[v].count;
            f[v].count = 0;
        }
        for (size_t k = 0; k < br->count; k++) {
            dt_layout_final_row *fv = &f[(l->pos_info[br->first + k] & DT_LAYOUT_ROW_MASK) - br->first_final];
            l->row_pos[fv->first + fv->count++] = (uint32_t)(br->first + k);
        }
    }
    return 0;
}

/* Rows [from, to): their positions (after those of the rows before), in
   perm and pos_info grown to hold them. */
static int place_rows(dt_layout *l, size_t from, size_t to)
{
    build *b = l->build;
    size_t items = l->items;
    for (size_t r = from; r < to; r++) {
        l->brows[r].first = (uint32_t)items;
        l->brows[r].count = (uint32_t)b->rows[r].n;
        items += b->rows[r].n;
    }
    uint32_t *perm = dt__realloc(l->perm, (items + 1) * sizeof *perm);
    if (perm)
        l->perm = perm;
    uint32_t *info = dt__realloc(l->pos_info, (items + 1) * sizeof *info);
    if (info)
        l->pos_info = info;
    if (!perm || !info)
        return -1;
    l->items = items;
    return 0;
}

/* Levels rows [from, to), in order: their final rows and cuts follow
   those of the rows before. */
static int level_rows(dt_layout *l, size_t from, size_t to)
{
    build *b = l->build;
    dt_row_item *tmp = NULL;
    size_t tmp_cap = 0;
    dt_leveler lv;
    memset(&lv, 0, sizeof lv);
    int rc = -1;
    for (size_t r = from; r < to; r++) {
        if (level_row(l, (uint32_t)r, &lv, &tmp, &tmp_cap) != 0 || add_final_rows(l, (uint32_t)r) != 0)
            goto out;
        /* the row's keys have served */
        dt__free(b->rows[r].v);
        b->rows[r].v = NULL;
    }
    rc = 0;
out:
    dt__free(tmp);
    dt__wr_leveler_free(&lv);
    return rc;
}

/* level_rows on a thread of its own */
typedef struct row_run {
    dt_layout *l;
    size_t from, to;
    int failed;
} row_run;

static void *level_rows_main(void *arg)
{
    row_run *rr = arg;
    rr->failed = level_rows(rr->l, rr->from, rr->to) != 0;
    return NULL;
}

/* Passes 2 and 3. The rows classify made are placed first; where there is
   a second core they are leveled on a thread of their own while this one
   builds the annotation spans, whose rows come after them (the spans touch
   none of what leveling does: the rows they add have room reserved). */
int dt__wr_layout_spans_and_rows(dt_layout *l)
{
    build *b = l->build;
    size_t classified = l->nbrows, device_rows = 0;
    for (size_t r = 0; r < classified; r++)
        device_rows += l->brows[r].cls == DT_LAYOUT_DEVICE;
    /* an annotation row per device row at most */
    if (dt__vec_reserve((void **)&l->brows, &b->cap_brows, classified + device_rows + 1, sizeof *l->brows) != 0 ||
        dt__vec_reserve((void **)&b->rows, &b->cap_rows, classified + device_rows + 1, sizeof *b->rows) != 0 ||
        place_rows(l, 0, classified) != 0)
        return -1;
    /* annotation rows share their devices' pids, which their device rows
       mark */
    mark_device_pids(l);

    uint64_t t = dt__monotonic_ns();
    row_run rr = {l, 0, classified, 0};
    pthread_t thread;
    int threaded = dt__out_lanes() > 1 && l->items >= CLASSIFY_THREAD_RECORDS &&
                   dt__thread_create(&thread, level_rows_main, &rr) == 0;
    int spans_failed = dt__wr_layout_spans(l) != 0;
    if (threaded)
        pthread_join(thread, NULL);
    else if (!spans_failed)
        rr.failed = level_rows(l, 0, classified) != 0;
    b->phase_ns[1] = dt__monotonic_ns() - t;
    if (spans_failed || rr.failed)
        return -1;
    /* the candidates have served; free them before the positions grow for
       the annotation rows */
    dt__free(b->cands);
    b->cands = NULL;
    if (l->n + l->nspans >= DT_LAYOUT_ROW_MASK || place_rows(l, classified, l->nbrows) != 0 ||
        level_rows(l, classified, l->nbrows) != 0)
        return -1;
    return group_by_final_row(l);
}
