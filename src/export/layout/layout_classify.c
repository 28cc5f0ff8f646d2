/*
 * The layout's pass 1 (layout_build.h), over the store in store order as
 * two sides on two threads (device activity and host side): keep or drop
 * each record, its base row and its times, the flow pairs, the device-time
 * attribution per External id, and per External id the device rows its
 * activity ran on with their extents (the candidates of the annotation
 * spans); the ranges.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "base/out.h"
#include "export/layout/layout_build.h"

#define BASE_TIME_UNIT_NS (UINT64_C(7889238) * UINT64_C(1000000000))

/* A small direct-mapped cache in front of a hash map: the keys in use at any
   moment (a few streams, the current range) are few, the maps may be large. */
#define SMALL_CACHE_BITS 8
typedef struct small_cache {
    uint64_t key[1u << SMALL_CACHE_BITS];
    uint32_t val[1u << SMALL_CACHE_BITS];  /* NONE: empty */
} small_cache;

static void small_cache_init(small_cache *sc)
{
    memset(sc->val, 0xff, sizeof sc->val);
}

static inline uint32_t *small_cache_slot(small_cache *sc, uint64_t key, int *hit)
{
    size_t i = dt__hash_slot(key, SMALL_CACHE_BITS);
    *hit = sc->val[i] != NONE && sc->key[i] == key;
    sc->key[i] = key;
    return &sc->val[i];
}

/* The kind sets of core/event.h (dt_event_kind_class's), tested on a kind
   known to be one (1 to DT_EVENT_KIND_MAX): the pass drops the others
   first. */
static inline int known_kind_in(unsigned kinds, unsigned k)
{
    return kinds >> k & 1u;
}

/* Vendors hand out correlation ids densely (CUPTI counts up from 1): then a
   table indexed by id beats a hash map, whose probes miss the cache once
   the map outgrows it. The table covers the ids seen so far and grows as
   new ones come (mostly above); ids spread wider than a few per record
   move everything to the map. One side's: the earliest API call, or the
   earliest device activity, of each correlation id. */
typedef struct corr_side {
    int sparse;                /* the map holds them */
    uint64_t min, span;
    uint32_t *first;           /* record index by id - min; NONE: none */
    dt_u64map map;             /* id -> record index */
} corr_side;

static int corr_to_map(corr_side *c)
{
    if (dt__u64map_reserve(&c->map, 1024) != 0)
        return -1;
    for (uint64_t k = 0; k < c->span; k++) {
        if (c->first[k] == NONE)
            continue;
        uint64_t *slot = dt__u64map_slot(&c->map, c->min + k, NULL);
        if (!slot)
            return -1;
        *slot = c->first[k];
    }
    dt__free(c->first);
    c->first = NULL;
    c->sparse = 1;
    return 0;
}

/* Makes the table cover corr; 0, 1 when the ids are too sparse for it, -1
   when out of memory. */
static int corr_cover(corr_side *c, uint64_t corr, uint64_t limit)
{
    uint64_t lo = c->span ? c->min : corr, hi = c->span ? c->min + c->span - 1 : corr;
    if (corr < lo)
        lo = corr;
    if (corr > hi)
        hi = corr;
    if (hi - lo >= limit)
        return 1;
    /* room ahead for the ids to come, as they mostly count up */
    uint64_t want = hi - lo + 1, cap = c->span ? c->span : 1024;
    while (cap < want)
        cap *= 2;
    if (cap > limit)
        cap = limit;
    if (cap < want)
        cap = want;
    uint32_t *n = dt__malloc(cap * sizeof *n);
    if (!n)
        return -1;
    memset(n, 0xff, cap * sizeof *n);
    if (c->span)
        memcpy(n + (c->min - lo), c->first, c->span * sizeof *n);
    dt__free(c->first);
    c->first = n;
    c->min = lo;
    c->span = cap;
    return 0;
}

/* Notes record i, starting at st, for corr: kept when it is the side's
   earliest (store order breaks ties). -1 when out of memory. */
static inline int corr_note(const dt_layout *l, corr_side *c, uint64_t corr, uint64_t limit, uint32_t i, uint64_t st)
{
    uint32_t *first = NULL;
    if (!c->sparse) {
        if (__builtin_expect(corr - c->min < c->span, 1)) {
            first = &c->first[corr - c->min];
        } else {
            int rc = corr_cover(c, corr, limit);
            if (rc < 0)
                return -1;
            if (rc == 0)
                first = &c->first[corr - c->min];
            else if (corr_to_map(c) != 0)
                return -1;
        }
    }
    if (first) {
        if (*first == NONE || st < rec_start(l, dt__store_at(l->store, *first)))
            *first = i;
        return 0;
    }
    bool added;
    uint64_t *v = dt__u64map_slot(&c->map, corr, &added);
    if (!v)
        return -1;
    if (added || st < rec_start(l, dt__store_at(l->store, (size_t)*v)))
        *v = i;
    return 0;
}

static uint32_t corr_get(const corr_side *c, uint64_t corr)
{
    if (!c->sparse)
        return corr - c->min < c->span ? c->first[corr - c->min] : NONE;
    uint64_t v;
    return dt__u64map_get(&c->map, corr, &v) ? (uint32_t)v : NONE;
}

static void corr_free(corr_side *c)
{
    dt__free(c->first);
    dt__u64map_free(&c->map);
}

/* classify runs as two sides, each over the whole store and each on a
   thread of its own where there are two: the device activity (device rows,
   the device side of the flows, attribution and annotation candidates) and
   the host side (host rows, API calls' side of the flows, ranges, and the
   records of no kind). They share nothing until they are merged. */
typedef struct side_row {
    uint32_t pid, lane;
    uint32_t first;            /* the record that made it */
} side_row;

typedef struct side {
    dt_layout *l;
    int device;
    side_row *rows;
    row_items *items;
    size_t nrows, cap_rows, cap_items;
    dt_u64map rowmap;
    small_cache cache;
    corr_side corr;
    uint64_t kinds[DT_EVENT_KIND_MAX + 1];
    uint64_t launches;
    uint64_t dropped_window, dropped_kind, dropped_reversed;
    uint64_t lo, hi;
    int failed;
} side;

static uint32_t side_row_for(side *sd, uint32_t pid, uint32_t lane, uint32_t first)
{
    bool added;
    uint64_t *slot = dt__u64map_slot(&sd->rowmap, (uint64_t)pid << 32 | lane, &added);
    if (!slot)
        return NONE;
    if (!added)
        return (uint32_t)*slot;
    size_t cap = sd->cap_rows;
    if (dt__vec_reserve((void **)&sd->rows, &cap, sd->nrows + 1, sizeof *sd->rows) != 0 ||
        dt__vec_reserve((void **)&sd->items, &sd->cap_items, sd->nrows + 1, sizeof *sd->items) != 0)
        return NONE;
    sd->cap_rows = cap;
    sd->rows[sd->nrows] = (side_row){pid, lane, first};
    memset(&sd->items[sd->nrows], 0, sizeof *sd->items);
    *slot = (uint32_t)sd->nrows;
    return (uint32_t)sd->nrows++;
}

/* The attribution entry of an External id; NONE when out of memory. */
static uint32_t attribution_for(build *b, uint64_t external_id)
{
    bool added;
    uint64_t *slot = dt__u64map_slot(&b->attrmap, external_id, &added);
    if (!slot)
        return NONE;
    if (added) {
        if (dt__vec_reserve((void **)&b->attr, &b->cap_attr, b->nattr + 1, sizeof *b->attr) != 0)
            return NONE;
        b->attr[b->nattr].external_id = external_id;
        b->attr[b->nattr].ns = 0;
        b->attr[b->nattr].candidates = NONE;
        b->attr[b->nattr].range = UNRESOLVED;
        *slot = b->nattr++;
    }
    return (uint32_t)*slot;
}

/* Widens the candidate of (attribution a, device row) by [st, en]. An
   External id's activity runs on a few streams: its list is short, and the
   row found is moved to its front, where the next event likely looks. */
static int candidate_widen(build *b, uint32_t a, uint32_t row, uint64_t st, uint64_t en)
{
    uint32_t *link = &b->attr[a].candidates;
    for (uint32_t k = *link; k != NONE; link = &b->cands[k].next, k = *link) {
        candidate *c = &b->cands[k];
        if (c->row != row)
            continue;
        if (st < c->start)
            c->start = st;
        if (en > c->end)
            c->end = en;
        if (link != &b->attr[a].candidates) {
            *link = c->next;
            c->next = b->attr[a].candidates;
            b->attr[a].candidates = k;
        }
        return 0;
    }
    if (dt__vec_reserve((void **)&b->cands, &b->cap_cands, b->ncands + 1, sizeof *b->cands) != 0)
        return -1;
    candidate *c = &b->cands[b->ncands];
    c->start = st;
    c->end = en;
    c->attr = a;
    c->row = row;
    c->next = b->attr[a].candidates;
    b->attr[a].candidates = (uint32_t)b->ncands++;
    return 0;
}

static int classify_side(side *sd)
{
    dt_layout *l = sd->l;
    build *b = l->build;
    const dt_recording *rec = l->rec;
    int have_window = rec->window_end_ns >= rec->window_start_ns && rec->window_start_ns > 0;
    uint32_t last_attr = NONE;
    /* a table of flow pairs for ids spread up to this wide */
    uint64_t corr_limit = 4 * (uint64_t)l->n + 1024;
    small_cache_init(&sd->cache);
    if (dt__u64map_reserve(&sd->rowmap, 64) != 0)
        return -1;
    sd->lo = UINT64_MAX;
    const dt_store *store = l->store;

    for (size_t i = 0; i < l->n; i++) {
        const dt_rec *r = dt__store_at(store, i);
        /* the hardware's prefetcher stops at each page's end: a page ahead */
        if (i + 64 < l->n)
            __builtin_prefetch(dt__store_at(store, i + 64));
        int known = r->kind >= DT_EVENT_KERNEL && r->kind <= DT_EVENT_KIND_MAX;
        if ((known && known_kind_in(DT_KINDS_DEVICE, r->kind)) != sd->device)
            continue;
        if (!known) {
            sd->dropped_kind++;
            continue;
        }
        uint64_t st = rec_start(l, r), en = rec_end(l, r);
        if (en < st) {
            sd->dropped_reversed++;
            continue;
        }
        if (have_window && (st < rec->window_start_ns || en > rec->window_end_ns)) {
            sd->dropped_window++;
            continue;
        }
        if (st < sd->lo)
            sd->lo = st;
        if (en > sd->hi)
            sd->hi = en;
        sd->kinds[r->kind]++;
        sd->launches += (r->flags & DT_REC_LAUNCH) != 0;

        uint32_t pid = sd->device ? r->device : r->context;
        int hit;
        uint32_t *row = small_cache_slot(&sd->cache, (uint64_t)pid << 32 | r->lane, &hit);
        if (!hit && (*row = side_row_for(sd, pid, r->lane, (uint32_t)i)) == NONE)
            return -1;
        if (row_append(&sd->items[*row], st, en, (uint32_t)i) != 0)
            return -1;

        if (r->correlation != 0 && known_kind_in(DT_KINDS_API | DT_KINDS_LAUNCHED, r->kind)) {
            /* the earliest event of each side gets the flow */
            if (corr_note(l, &sd->corr, r->correlation, corr_limit, (uint32_t)i, st) != 0)
                return -1;
        }
        /* device work an operation launched: its time is the operation's */
        if (known_kind_in(DT_KINDS_LAUNCHED, r->kind) && (r->flags & DT_REC_HAS_EXTERNAL)) {
            if (last_attr == NONE || b->attr[last_attr].external_id != r->external_id) {
                last_attr = attribution_for(b, r->external_id);
                if (last_attr == NONE)
                    return -1;
            }
            b->attr[last_attr].ns += en - st;
            if (candidate_widen(b, last_attr, *row, st, en) != 0)
                return -1;
        }
        if (r->kind == DT_EVENT_RANGE && (r->flags & DT_REC_HAS_EXTERNAL)) {
            bool added;
            uint64_t *slot = dt__u64map_slot(&b->rangemap, r->external_id, &added);
            if (!slot)
                return -1;
            if (added) {
                if (dt__vec_reserve((void **)&b->ranges, &b->cap_ranges, b->nranges + 1, sizeof *b->ranges) != 0)
                    return -1;
                int parent = (r->flags & DT_REC_HAS_PARENT) != 0;
                b->ranges[b->nranges] = (range_info){r->external_id, parent ? r->u.range.parent : 0, r->name, NONE,
                                                     parent ? UNRESOLVED : NONE};
                *slot = b->nranges++;
            }
        }
    }
    return 0;
}

static void *classify_side_main(void *arg)
{
    side *sd = arg;
    sd->failed = classify_side(sd) != 0;
    return NULL;
}

static void side_free(side *sd)
{
    if (sd->items)
        for (size_t r = 0; r < sd->nrows; r++)
            dt__free(sd->items[r].v);
    dt__free(sd->items);
    dt__free(sd->rows);
    dt__u64map_free(&sd->rowmap);
    corr_free(&sd->corr);
}

/* The two sides' rows as the layout's base rows, in the order of the
   records that made them (the order one pass over the store makes them
   in); device rows' candidates renumbered. Their items move over. */
static int merge_rows(dt_layout *l, side *host, side *dev)
{
    build *b = l->build;
    size_t total = host->nrows + dev->nrows;
    uint32_t *dev_global = dt__malloc((dev->nrows + 1) * sizeof *dev_global);
    if (!dev_global || dt__vec_reserve((void **)&l->brows, &b->cap_brows, total + 1, sizeof *l->brows) != 0 ||
        dt__vec_reserve((void **)&b->rows, &b->cap_rows, total + 1, sizeof *b->rows) != 0) {
        dt__free(dev_global);
        return -1;
    }
    size_t h = 0, d = 0;
    while (h < host->nrows || d < dev->nrows) {
        int take_dev = h == host->nrows || (d < dev->nrows && dev->rows[d].first < host->rows[h].first);
        side *sd = take_dev ? dev : host;
        size_t k = take_dev ? d++ : h++;
        uint32_t g = (uint32_t)l->nbrows++;
        dt_layout_base_row *br = &l->brows[g];
        memset(br, 0, sizeof *br);
        br->cls = (uint8_t)(take_dev ? DT_LAYOUT_DEVICE : DT_LAYOUT_HOST);
        br->pid = sd->rows[k].pid;
        br->lane = sd->rows[k].lane;
        b->rows[g] = sd->items[k];
        sd->items[k] = (row_items){NULL, 0, 0};
        if (take_dev)
            dev_global[k] = g;
    }
    for (size_t k = 0; k < b->ncands; k++)
        b->cands[k].row = dev_global[b->cands[k].row];
    dt__free(dev_global);
    return 0;
}

/* A flow for each correlation id with an API call and device activity. */
static void pair_flows(build *b, const side *host, const side *dev)
{
    const corr_side *c = &dev->corr;
    if (!c->sparse) {
        for (uint64_t k = 0; k < c->span; k++) {
            uint32_t d = c->first[k], a;
            if (d != NONE && (a = corr_get(&host->corr, c->min + k)) != NONE) {
                b->flow[a] |= DT_LAYOUT_FLOW_START;
                b->flow[d] |= DT_LAYOUT_FLOW_FINISH;
                b->flows++;
            }
        }
        return;
    }
    size_t cursor = 0;
    uint64_t corr, d;
    while (dt__u64map_next(&c->map, &cursor, &corr, &d)) {
        uint32_t a = corr_get(&host->corr, corr);
        if (a != NONE) {
            b->flow[a] |= DT_LAYOUT_FLOW_START;
            b->flow[d] |= DT_LAYOUT_FLOW_FINISH;
            b->flows++;
        }
    }
}

int dt__wr_layout_classify(dt_layout *l)
{
    build *b = l->build;
    const dt_recording *rec = l->rec;
    side sides[2];
    memset(sides, 0, sizeof sides);
    side *host = &sides[0], *dev = &sides[1];
    host->l = dev->l = l;
    dev->device = 1;
    pthread_t thread;
    int threaded = dt__out_lanes() > 1 && l->n >= CLASSIFY_THREAD_RECORDS &&
                   dt__thread_create(&thread, classify_side_main, dev) == 0;
    host->failed = classify_side(host) != 0;
    if (threaded)
        pthread_join(thread, NULL);
    else if (!host->failed)
        dev->failed = classify_side(dev) != 0;
    int rc = -1;
    if (host->failed || dev->failed || merge_rows(l, host, dev) != 0)
        goto out;

    uint64_t lo = host->lo < dev->lo ? host->lo : dev->lo, hi = host->hi > dev->hi ? host->hi : dev->hi;
    for (int k = 0; k <= DT_EVENT_KIND_MAX; k++)
        b->kinds[k] = host->kinds[k] + dev->kinds[k];
    b->launches = host->launches + dev->launches;
    b->dropped_kind = host->dropped_kind + dev->dropped_kind;
    b->dropped_reversed = host->dropped_reversed + dev->dropped_reversed;
    b->dropped_window = host->dropped_window + dev->dropped_window;
    int have_window = rec->window_end_ns >= rec->window_start_ns && rec->window_start_ns > 0;
    if (have_window) {
        l->window_start = rec->window_start_ns;
        l->window_end = rec->window_end_ns;
    } else if (lo <= hi) {
        l->window_start = lo;
        l->window_end = hi;
    } else {
        l->window_start = l->window_end = rec->window_start_ns;
    }
    uint64_t first = l->window_start < lo ? l->window_start : lo;
    l->base_ns = first / BASE_TIME_UNIT_NS * BASE_TIME_UNIT_NS;
    pair_flows(b, host, dev);
    rc = 0;
out:
    side_free(host);
    side_free(dev);
    return rc;
}
