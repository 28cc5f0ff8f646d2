/*
 * The layout every trace writer writes (layout.h), built in three passes:
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <pthread.h>

#include "base/hash.h"
#include "base/json_out.h"
#include "export/layout.h"
#include "export/leveler.h"
#include "base/vec.h"

#define BASE_TIME_UNIT_NS (UINT64_C(7889238) * UINT64_C(1000000000))
#define HOST_SORT_LIMIT 4999999     /* device rows sort from 5000000 up */
#define MAX_RANGE_DEPTH 4096
/* Records from which classify's second thread pays for its start */
#define CLASSIFY_THREAD_RECORDS 16384
#define NONE UINT32_MAX

/* ------------------------------------------------------------------ */
/* u64 -> u32 open-addressing map                                      */
/* ------------------------------------------------------------------ */
/* Key and value side by side: a probe into a large map costs one cache
   miss, not two. */
typedef struct idmap_entry {
    uint64_t key;
    uint32_t val;              /* NONE: empty slot */
} idmap_entry;

typedef struct idmap {
    idmap_entry *e;
    size_t mask, count;
} idmap;

static int idmap_init(idmap *m, size_t hint)
{
    size_t cap = 64;
    while (cap < hint * 2)
        cap <<= 1;
    m->e = dt_malloc(cap * sizeof *m->e);
    if (!m->e)
        return -1;
    for (size_t i = 0; i < cap; i++)
        m->e[i].val = NONE;
    m->mask = cap - 1;
    m->count = 0;
    return 0;
}

static void idmap_free(idmap *m)
{
    dt_free(m->e);
    m->e = NULL;
}

static uint32_t idmap_get(const idmap *m, uint64_t key)
{
    size_t i = (size_t)dt_mix64(key) & m->mask;
    while (m->e[i].val != NONE) {
        if (m->e[i].key == key)
            return m->e[i].val;
        i = (i + 1) & m->mask;
    }
    return NONE;
}

static int idmap_grow(idmap *m)
{
    idmap n;
    if (idmap_init(&n, (m->mask + 1)) != 0)
        return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        if (m->e[i].val == NONE)
            continue;
        size_t j = (size_t)dt_mix64(m->e[i].key) & n.mask;
        while (n.e[j].val != NONE)
            j = (j + 1) & n.mask;
        n.e[j] = m->e[i];
    }
    n.count = m->count;
    idmap_free(m);
    *m = n;
    return 0;
}

/* The value slot for key; a new slot holds NONE. NULL when out of memory.
   The pointer is good until the next idmap_slot on the same map. */
static uint32_t *idmap_slot(idmap *m, uint64_t key)
{
    if ((m->count + 1) * 4 > (m->mask + 1) * 3 && idmap_grow(m) != 0)
        return NULL;
    size_t i = (size_t)dt_mix64(key) & m->mask;
    while (m->e[i].val != NONE) {
        if (m->e[i].key == key)
            return &m->e[i].val;
        i = (i + 1) & m->mask;
    }
    m->e[i].key = key;
    m->count++;
    return &m->e[i].val;
}

/* A small direct-mapped cache in front of an idmap: the keys in use at any
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
    size_t i = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - SMALL_CACHE_BITS));
    *hit = sc->val[i] != NONE && sc->key[i] == key;
    sc->key[i] = key;
    return &sc->val[i];
}

/* ------------------------------------------------------------------ */
/* Build state                                                         */
/* ------------------------------------------------------------------ */
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

typedef struct dt_layout_build {
    row_items *rows;           /* per base row */
    size_t cap_rows;
    uint8_t *flow;             /* record -> DT_LAYOUT_FLOW_* */
    size_t cap_brows, cap_frows, cap_spans, cap_cuts;
    idmap annot_rows;          /* (device, stream) -> its annotation row */

    idmap attrmap;
    attribution *attr;
    size_t nattr, cap_attr;
    candidate *cands;
    size_t ncands, cap_cands;

    idmap rangemap;            /* range id -> range number */
    range_info *ranges;        /* by range number */
    size_t nranges, cap_ranges;
    idmap parentmap;           /* external id -> index in parents */
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
    idmap memmap;
    dt_layout_memory *mem;
} build;

static inline uint64_t rec_start(const dt_layout *l, const dt_rec *r)
{
    return dt_layout_rec_start(l, r);
}

static inline uint64_t rec_end(const dt_layout *l, const dt_rec *r)
{
    return dt_layout_rec_end(l, r);
}

static int is_device_kind(int k)
{
    return k == DT_EVENT_KERNEL || k == DT_EVENT_MEMCPY || k == DT_EVENT_MEMSET ||
           k == DT_EVENT_SYNC || k == DT_EVENT_OVERHEAD || k == DT_EVENT_COLLECTIVE || k == DT_EVENT_MEMORY;
}

/* Device work an operation launched: its time is the operation's. */
static int is_attributed_kind(int k)
{
    return k == DT_EVENT_KERNEL || k == DT_EVENT_MEMCPY || k == DT_EVENT_MEMSET || k == DT_EVENT_COLLECTIVE;
}

/* The annotation row of a device's stream, made when new (after every
   host and device row). */
static uint32_t annot_row_for(dt_layout *l, uint32_t device, uint32_t stream)
{
    build *b = l->build;
    uint32_t *slot = idmap_slot(&b->annot_rows, (uint64_t)device << 32 | stream);
    if (!slot)
        return NONE;
    if (*slot != NONE)
        return *slot;
    if (dt_vec_reserve((void **)&l->brows, &b->cap_brows, l->nbrows + 1, sizeof *l->brows) != 0 ||
        dt_vec_reserve((void **)&b->rows, &b->cap_rows, l->nbrows + 1, sizeof *b->rows) != 0)
        return NONE;
    memset(&b->rows[l->nbrows], 0, sizeof *b->rows);
    dt_layout_base_row *br = &l->brows[l->nbrows];
    memset(br, 0, sizeof *br);
    br->cls = DT_LAYOUT_ANNOT;
    br->pid = device;
    br->lane = stream;
    *slot = (uint32_t)l->nbrows;
    return (uint32_t)l->nbrows++;
}

/* ------------------------------------------------------------------ */
/* Pass 1: keep or drop, rows, flows, attribution, ranges              */
/* ------------------------------------------------------------------ */
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
    idmap map;                 /* id -> record index */
} corr_side;

static int corr_to_map(corr_side *c)
{
    if (idmap_init(&c->map, 1024) != 0)
        return -1;
    for (uint64_t k = 0; k < c->span; k++) {
        if (c->first[k] == NONE)
            continue;
        uint32_t *slot = idmap_slot(&c->map, c->min + k);
        if (!slot)
            return -1;
        *slot = c->first[k];
    }
    dt_free(c->first);
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
    uint32_t *n = dt_malloc(cap * sizeof *n);
    if (!n)
        return -1;
    memset(n, 0xff, cap * sizeof *n);
    if (c->span)
        memcpy(n + (c->min - lo), c->first, c->span * sizeof *n);
    dt_free(c->first);
    c->first = n;
    c->min = lo;
    c->span = cap;
    return 0;
}

/* The slot of corr (NONE when new); NULL when out of memory. */
static uint32_t *corr_slot(corr_side *c, uint64_t corr, uint64_t limit)
{
    if (!c->sparse) {
        if (__builtin_expect(corr - c->min < c->span, 1))
            return &c->first[corr - c->min];
        int rc = corr_cover(c, corr, limit);
        if (rc < 0)
            return NULL;
        if (rc == 0)
            return &c->first[corr - c->min];
        if (corr_to_map(c) != 0)
            return NULL;
    }
    return idmap_slot(&c->map, corr);
}

static uint32_t corr_get(const corr_side *c, uint64_t corr)
{
    if (!c->sparse)
        return corr - c->min < c->span ? c->first[corr - c->min] : NONE;
    return c->map.e ? idmap_get(&c->map, corr) : NONE;
}

static void corr_free(corr_side *c)
{
    dt_free(c->first);
    idmap_free(&c->map);
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
    idmap rowmap;
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
    uint32_t *slot = idmap_slot(&sd->rowmap, (uint64_t)pid << 32 | lane);
    if (!slot)
        return NONE;
    if (*slot != NONE)
        return *slot;
    size_t cap = sd->cap_rows;
    if (dt_vec_reserve((void **)&sd->rows, &cap, sd->nrows + 1, sizeof *sd->rows) != 0 ||
        dt_vec_reserve((void **)&sd->items, &sd->cap_items, sd->nrows + 1, sizeof *sd->items) != 0)
        return NONE;
    sd->cap_rows = cap;
    sd->rows[sd->nrows] = (side_row){pid, lane, first};
    memset(&sd->items[sd->nrows], 0, sizeof *sd->items);
    *slot = (uint32_t)sd->nrows;
    return (uint32_t)sd->nrows++;
}

static inline int row_append(row_items *ri, uint64_t st, uint64_t en, uint32_t idx)
{
    if (__builtin_expect(ri->n == ri->cap, 0) &&
        dt_vec_reserve((void **)&ri->v, &ri->cap, ri->n + 1, sizeof *ri->v) != 0)
        return -1;
    ri->v[ri->n++] = (dt_row_item){st, en, idx};
    return 0;
}

/* The attribution entry of an External id; NONE when out of memory. */
static uint32_t attribution_for(build *b, uint64_t external_id)
{
    uint32_t *slot = idmap_slot(&b->attrmap, external_id);
    if (!slot)
        return NONE;
    if (*slot == NONE) {
        if (dt_vec_reserve((void **)&b->attr, &b->cap_attr, b->nattr + 1, sizeof *b->attr) != 0)
            return NONE;
        b->attr[b->nattr].external_id = external_id;
        b->attr[b->nattr].ns = 0;
        b->attr[b->nattr].candidates = NONE;
        b->attr[b->nattr].range = UNRESOLVED;
        *slot = (uint32_t)b->nattr++;
    }
    return *slot;
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
    if (dt_vec_reserve((void **)&b->cands, &b->cap_cands, b->ncands + 1, sizeof *b->cands) != 0)
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
    if (idmap_init(&sd->rowmap, 64) != 0)
        return -1;
    sd->lo = UINT64_MAX;

    for (size_t i = 0; i < l->n; i++) {
        const dt_rec *r = dt_store_at(l->store, i);
        /* the hardware's prefetcher stops at each page's end: a page ahead */
        if (i + 64 < l->n)
            __builtin_prefetch(dt_store_at(l->store, i + 64));
        int known = r->kind >= DT_EVENT_KERNEL && r->kind <= DT_EVENT_KIND_MAX;
        if ((known && is_device_kind(r->kind)) != sd->device)
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

        if (r->correlation != 0 &&
            (r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || is_attributed_kind(r->kind))) {
            uint32_t *first = corr_slot(&sd->corr, r->correlation, corr_limit);
            if (!first)
                return -1;
            /* the earliest event of each side gets the flow; store order breaks ties */
            if (*first == NONE || st < rec_start(l, dt_store_at(l->store, *first)))
                *first = (uint32_t)i;
        }
        if (is_attributed_kind(r->kind) && (r->flags & DT_REC_HAS_EXTERNAL)) {
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
            uint32_t *slot = idmap_slot(&b->rangemap, r->external_id);
            if (!slot)
                return -1;
            if (*slot == NONE) {
                if (dt_vec_reserve((void **)&b->ranges, &b->cap_ranges, b->nranges + 1, sizeof *b->ranges) != 0)
                    return -1;
                int parent = (r->flags & DT_REC_HAS_PARENT) != 0;
                b->ranges[b->nranges] = (range_info){r->external_id, parent ? r->u.range.parent : 0, r->name, NONE,
                                                     parent ? UNRESOLVED : NONE};
                *slot = (uint32_t)b->nranges++;
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
            dt_free(sd->items[r].v);
    dt_free(sd->items);
    dt_free(sd->rows);
    idmap_free(&sd->rowmap);
    corr_free(&sd->corr);
}

/* The two sides' rows as the layout's base rows, in the order of the
   records that made them (the order one pass over the store makes them
   in); device rows' candidates renumbered. Their items move over. */
static int merge_rows(dt_layout *l, side *host, side *dev)
{
    build *b = l->build;
    size_t total = host->nrows + dev->nrows;
    uint32_t *dev_global = dt_malloc((dev->nrows + 1) * sizeof *dev_global);
    if (!dev_global || dt_vec_reserve((void **)&l->brows, &b->cap_brows, total + 1, sizeof *l->brows) != 0 ||
        dt_vec_reserve((void **)&b->rows, &b->cap_rows, total + 1, sizeof *b->rows) != 0) {
        dt_free(dev_global);
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
    dt_free(dev_global);
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
    for (size_t k = 0; c->map.e && k <= c->map.mask; k++) {
        uint32_t d = c->map.e[k].val, a;
        if (d != NONE && (a = corr_get(&host->corr, c->map.e[k].key)) != NONE) {
            b->flow[a] |= DT_LAYOUT_FLOW_START;
            b->flow[d] |= DT_LAYOUT_FLOW_FINISH;
            b->flows++;
        }
    }
}

static int classify(dt_layout *l)
{
    build *b = l->build;
    const dt_recording *rec = l->rec;
    side sides[2];
    memset(sides, 0, sizeof sides);
    side *host = &sides[0], *dev = &sides[1];
    host->l = dev->l = l;
    dev->device = 1;
    pthread_t thread;
    int threaded = dt_out_lanes() > 1 && l->n >= CLASSIFY_THREAD_RECORDS &&
                   dt_thread_create(&thread, classify_side_main, dev) == 0;
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

/* ------------------------------------------------------------------ */
/* Pass 2: gpu_user_annotation spans                                   */
/* ------------------------------------------------------------------ */
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
    if (dt_vec_reserve((void **)&l->spans, &b->cap_spans, l->nspans + 1, sizeof *l->spans) != 0)
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

/* The range (its number) a device event with External id ext is
   attributed to: ext itself when it is a range, else the range the
   operation ext was pushed in. The second kind is written to devtrace.externalParents, so that
   readers (devtrace stats) attribute the same way. */
static uint32_t range_of_external(build *b, const dt_recording *rec, uint64_t ext)
{
    uint32_t r = idmap_get(&b->rangemap, ext);
    uint64_t range;
    if (r != NONE || !dt_recording_external_range(rec, ext, &range))
        return r;
    r = idmap_get(&b->rangemap, range);
    if (r == NONE)
        return NONE;
    uint32_t *slot = idmap_slot(&b->parentmap, ext);
    if (!slot) {
        b->parents_incomplete = 1;
        return r;
    }
    if (*slot == NONE) {
        if (b->nparents == b->cap_parents) {
            size_t cap = b->cap_parents ? b->cap_parents * 2 : 64;
            void *p = dt_realloc(b->parents, cap * sizeof *b->parents);
            if (!p) {
                /* the slot stays claimed: fail the export rather than write
                   a trace whose readers cannot attribute ext */
                b->parents_incomplete = 1;
                return r;
            }
            b->parents = p;
            b->cap_parents = cap;
        }
        *slot = (uint32_t)b->nparents;
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
static int build_spans(dt_layout *l)
{
    build *b = l->build;
    if (b->rangemap.count == 0)
        return 0;
    /* device base row -> its annotation row, made in the order first needed */
    size_t nrows = l->nbrows;
    uint32_t *annot_of = dt_malloc((nrows + 1) * sizeof *annot_of);
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
    dt_free(annot_of);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Pass 3: rows                                                        */
/* ------------------------------------------------------------------ */
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

uint64_t dt_layout_host_pid(const dt_layout *l, uint32_t pid)
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
        if (l->brows[i].cls == DT_LAYOUT_HOST && dt_layout_host_pid(l, l->brows[i].pid) != l->brows[i].pid)
            b->host_pid_shifted = 1;
    if (dt_layout_host_pid(l, (uint32_t)l->rec->pid) != (uint64_t)(uint32_t)l->rec->pid)
        b->host_pid_shifted = 1;
}

static int add_final_rows(dt_layout *l, uint32_t base)
{
    dt_layout_base_row *br = &l->brows[base];
    if (dt_vec_reserve((void **)&l->frows, &l->build->cap_frows, l->nfrows + br->levels, sizeof *l->frows) != 0)
        return -1;
    br->first_final = (uint32_t)l->nfrows;
    for (uint32_t level = 0; level < br->levels; level++) {
        dt_layout_final_row *f = &l->frows[l->nfrows++];
        f->base = base;
        f->level = level;
        f->pid = br->cls == DT_LAYOUT_HOST ? dt_layout_host_pid(l, br->pid) : br->pid;
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
    if (dt_vec_reserve((void **)&l->cuts, &l->build->cap_cuts, l->ncuts + 1, sizeof *l->cuts) != 0)
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
        dt_leveler_reset(lv);
        cutter cut = {0, 0};
        l->ncuts = row_cuts;
        uint32_t first_final = (uint32_t)l->nfrows;
        uint32_t *info = l->pos_info + br->first, *perm = l->perm + br->first;
        size_t k = 0;
        for (; k < n; k++) {
            if (k > 0 && dt_row_item_before(&a[k], &a[k - 1]))
                break;
            uint32_t level = dt_leveler_place(lv, a[k].start, a[k].end);
            if (level == DT_LEVELER_NONE || note_cut(l, &cut, (uint32_t)(br->first + k), a[k].start, a[k].end) != 0)
                return -1;
            uint32_t i = a[k].idx;
            unsigned flow = i < l->n ? b->flow[i] : 0;
            perm[k] = i;
            info[k] = (first_final + level) | (uint32_t)flow << DT_LAYOUT_FLOW_SHIFT;
        }
        if (k == n)
            break;
        if (pass > 0 || dt_vec_reserve((void **)tmp, tmp_cap, n, sizeof **tmp) != 0)
            return -1;
        dt_row_items_sort(a, *tmp, n);
    }
    br->levels = dt_leveler_levels(lv);
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
    l->row_pos = dt_malloc(need * sizeof *l->row_pos);
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
    uint32_t *perm = dt_realloc(l->perm, (items + 1) * sizeof *perm);
    if (perm)
        l->perm = perm;
    uint32_t *info = dt_realloc(l->pos_info, (items + 1) * sizeof *info);
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
        dt_free(b->rows[r].v);
        b->rows[r].v = NULL;
    }
    rc = 0;
out:
    dt_free(tmp);
    dt_leveler_free(&lv);
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
static int spans_and_rows(dt_layout *l)
{
    build *b = l->build;
    size_t classified = l->nbrows, device_rows = 0;
    for (size_t r = 0; r < classified; r++)
        device_rows += l->brows[r].cls == DT_LAYOUT_DEVICE;
    /* an annotation row per device row at most */
    if (dt_vec_reserve((void **)&l->brows, &b->cap_brows, classified + device_rows + 1, sizeof *l->brows) != 0 ||
        dt_vec_reserve((void **)&b->rows, &b->cap_rows, classified + device_rows + 1, sizeof *b->rows) != 0 ||
        place_rows(l, 0, classified) != 0)
        return -1;
    /* annotation rows share their devices' pids, which their device rows
       mark */
    mark_device_pids(l);

    uint64_t t = dt_monotonic_ns();
    row_run rr = {l, 0, classified, 0};
    pthread_t thread;
    int threaded = dt_out_lanes() > 1 && l->items >= CLASSIFY_THREAD_RECORDS &&
                   dt_thread_create(&thread, level_rows_main, &rr) == 0;
    int spans_failed = build_spans(l) != 0;
    if (threaded)
        pthread_join(thread, NULL);
    else if (!spans_failed)
        rr.failed = level_rows(l, 0, classified) != 0;
    b->phase_ns[1] = dt_monotonic_ns() - t;
    if (spans_failed || rr.failed)
        return -1;
    /* the candidates have served; free them before the positions grow for
       the annotation rows */
    dt_free(b->cands);
    b->cands = NULL;
    if (l->n + l->nspans >= DT_LAYOUT_ROW_MASK || place_rows(l, classified, l->nbrows) != 0 ||
        level_rows(l, classified, l->nbrows) != 0)
        return -1;
    return group_by_final_row(l);
}

/* ------------------------------------------------------------------ */
/* Memory events: torch's args, totals in time order                   */
/* ------------------------------------------------------------------ */
/* torch's c10::DeviceType of a device's memory: CUDA is 1, a backend
   registered as PrivateUse1 (Ascend's torch_npu, ...) 20; host memory CPU 0,
   device id -1, as torch writes a host allocation. */
static void memory_owner(const dt_layout *l, const dt_rec *r, int *type, int64_t *device)
{
    unsigned kind = r->context;
    if (kind == DT_MEM_PAGEABLE || kind == DT_MEM_PINNED) {
        *type = 0;
        *device = -1;
        return;
    }
    *type = strcmp(l->api_prefix, "cuda") == 0 ? 1 : 20;
    *device = r->device;
}

typedef struct mem_order {
    uint64_t start;
    uint32_t idx;
    uint32_t owner; /* device, or DT_MAX_DEVICES for host memory */
} mem_order;

static int mem_before(const void *pa, const void *pb)
{
    const mem_order *a = pa, *b = pb;
    if (a->owner != b->owner) return a->owner < b->owner ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

#define FREED (NONE - 1)

/* Bytes and "Total Allocated" of every memory event kept: a free the vendor
   gives no size of frees what the allocation of its address in this trace
   allocated (0 when that was before the trace). Totals run per device (and
   one for host memory) in time order, from 0 at the trace's start. */
static int memory_totals(dt_layout *l)
{
    build *b = l->build;
    size_t m = b->kinds[DT_EVENT_MEMORY], k = 0;
    mem_order *ord = dt_malloc((m + 1) * sizeof *ord);
    b->mem = dt_calloc(m + 1, sizeof *b->mem);
    idmap live;
    if (!ord || !b->mem || idmap_init(&b->memmap, m) != 0 || idmap_init(&live, 64) != 0) {
        dt_free(ord);
        return -1;
    }
    for (size_t pos = 0; pos < l->items && k < m; pos++) {
        uint32_t i = l->perm[pos];
        if (i >= l->n) continue;
        const dt_rec *r = dt_store_at(l->store, i);
        if (r->kind != DT_EVENT_MEMORY) continue;
        int type;
        int64_t device;
        memory_owner(l, r, &type, &device);
        ord[k++] = (mem_order){rec_start(l, r), i, device < 0 ? DT_MAX_DEVICES : (uint32_t)device};
    }
    qsort(ord, k, sizeof *ord, mem_before);
    int64_t total = 0;
    int rc = 0;
    for (size_t j = 0; j < k; j++) {
        if (j == 0 || ord[j].owner != ord[j - 1].owner) total = 0;
        const dt_rec *r = dt_store_at(l->store, ord[j].idx);
        dt_layout_memory *mi = &b->mem[j];
        memory_owner(l, r, &mi->device_type, &mi->device_id);
        uint64_t key = r->u.memory.address ^ ((uint64_t)ord[j].owner << 48);
        uint32_t *alloc = idmap_slot(&live, key), *pos = idmap_slot(&b->memmap, (uint64_t)(uintptr_t)r);
        if (!alloc || !pos) {
            rc = -1;
            break;
        }
        *pos = (uint32_t)j;
        uint64_t bytes = r->u.memory.bytes;
        if (r->flags & DT_REC_FREE) {
            if (!bytes && *alloc < FREED) bytes = (uint64_t)b->mem[*alloc].bytes;
            *alloc = FREED; /* (NONE would end the map's probe chains) */
            mi->bytes = -(int64_t)(bytes & INT64_MAX);
        } else {
            *alloc = (uint32_t)j;
            mi->bytes = (int64_t)(bytes & INT64_MAX);
        }
        total = (int64_t)((uint64_t)total + (uint64_t)mi->bytes);
        mi->total = total;
    }
    idmap_free(&live);
    dt_free(ord);
    return rc;
}

const dt_layout_memory *dt_layout_memory_of(const dt_layout *l, const dt_rec *r)
{
    static const dt_layout_memory none = {0};
    const build *b = l->build;
    uint32_t v = b->memmap.e ? idmap_get(&b->memmap, (uint64_t)(uintptr_t)r) : NONE;
    return v == NONE ? &none : &b->mem[v];
}

/* ------------------------------------------------------------------ */
/* Build                                                               */
/* ------------------------------------------------------------------ */
static int prepare(dt_layout *l)
{
    build *b = l->build;
    l->n = l->store->count;
    if (l->n >= UINT32_MAX / 2)
        return -1;
    b->flow = dt_calloc(l->n + 1, 1);
    if (!b->flow)
        return -1;
    if (idmap_init(&b->annot_rows, 64) != 0)
        return -1;
    if (idmap_init(&b->attrmap, 1024) != 0 || idmap_init(&b->rangemap, 64) != 0 ||
        idmap_init(&b->parentmap, 64) != 0)
        return -1;
    uint64_t t = dt_monotonic_ns();
    if (classify(l) != 0)
        return -1;
    b->phase_ns[0] = dt_monotonic_ns() - t;
    t += b->phase_ns[0];
    if (spans_and_rows(l) != 0)
        return -1;
    t += b->phase_ns[1];
    if (b->kinds[DT_EVENT_MEMORY] && memory_totals(l) != 0)
        return -1;
    b->phase_ns[2] = dt_monotonic_ns() - t;
    return 0;
}

dt_layout *dt_layout_build(const dt_recording *rec)
{
    dt_layout *l = dt_calloc(1, sizeof *l);
    if (!l)
        return NULL;
    /* large (row caches, a bitmap): kept off the caller's stack */
    l->build = dt_calloc(1, sizeof *l->build);
    if (!l->build) {
        dt_free(l);
        return NULL;
    }
    l->rec = rec;
    l->store = rec->store;
    l->clock = rec->clock;
    l->api_prefix = rec->api_category ? rec->api_category : "privateuse1";
    if (prepare(l) != 0) {
        dt_layout_free(l);
        return NULL;
    }
    return l;
}

void dt_layout_free(dt_layout *l)
{
    if (!l)
        return;
    build *b = l->build;
    if (b) {
        for (size_t r = 0; r < l->nbrows; r++)
            dt_free(b->rows[r].v);
        dt_free(b->rows);
        dt_free(b->flow);
        idmap_free(&b->annot_rows);
        idmap_free(&b->attrmap);
        dt_free(b->attr);
        dt_free(b->cands);
        idmap_free(&b->rangemap);
        dt_free(b->ranges);
        idmap_free(&b->parentmap);
        dt_free(b->parents);
        idmap_free(&b->memmap);
        dt_free(b->mem);
        dt_free(b);
    }
    dt_free(l->perm);
    dt_free(l->pos_info);
    dt_free(l->spans);
    dt_free(l->brows);
    dt_free(l->frows);
    dt_free(l->row_pos);
    dt_free(l->cuts);
    dt_free(l);
}

/* ------------------------------------------------------------------ */
/* Names of processes and rows                                         */
/* ------------------------------------------------------------------ */
/* "thread <tid> (<name>)": the name the session captured while the thread
   lived, else, when the trace is written by the traced process itself and
   the thread still lives, its name now. */
static int host_thread_name(const dt_recording *rec, char *buf, size_t size, uint32_t pid, uint32_t tid)
{
    char comm[64] = "";
    const char *seen = pid == rec->pid ? dt_recording_thread_name(rec, tid) : NULL;
    if (seen) {
        snprintf(comm, sizeof comm, "%s", seen);
    } else if (pid == (uint32_t)getpid()) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, comm, sizeof comm - 1);
            close(fd);
            comm[n > 0 ? n : 0] = 0;
            comm[strcspn(comm, "\n")] = 0;
        }
    }
    if (comm[0])
        return snprintf(buf, size, "thread %u (%s)", tid, comm);
    return snprintf(buf, size, "thread %u", tid);
}

/* The processes of the trace, in the order they are named: the recording
   process first, other host pids, then devices. */
int dt_layout_next_process(dt_layout *l, size_t *cursor, dt_layout_process *out)
{
    const dt_recording *rec = l->rec;
    const char *pname = rec->process_name[0] ? rec->process_name : "process";
    if (*cursor == 0) {
        uint64_t main_pid = dt_layout_host_pid(l, rec->pid);
        memset(out, 0, sizeof *out);
        out->pid = main_pid;
        out->sort_index = main_pid < HOST_SORT_LIMIT ? main_pid : HOST_SORT_LIMIT;
        snprintf(out->name, sizeof out->name, "%s", pname);
        (*cursor)++;
        return 1;
    }
    for (size_t b = *cursor - 1; b < l->nbrows; b++) {
        const dt_layout_base_row *br = &l->brows[b];
        *cursor = b + 2;
        int seen = 0;
        for (size_t k = 0; k < b && !seen; k++)
            seen = l->brows[k].cls == br->cls && l->brows[k].pid == br->pid;
        if (seen)
            continue;
        if (br->cls == DT_LAYOUT_HOST) {
            if (br->pid == rec->pid)
                continue;
            uint64_t pid = dt_layout_host_pid(l, br->pid);
            memset(out, 0, sizeof *out);
            out->pid = pid;
            out->sort_index = pid < HOST_SORT_LIMIT ? pid : HOST_SORT_LIMIT;
            snprintf(out->name, sizeof out->name, "process %u", br->pid);
            return 1;
        }
        /* a device seen through both device and annotation rows once */
        int dup = 0;
        for (size_t k = 0; k < b && !dup; k++)
            dup = l->brows[k].cls != DT_LAYOUT_HOST && l->brows[k].pid == br->pid;
        if (dup)
            continue;
        memset(out, 0, sizeof *out);
        out->pid = br->pid;
        out->label = out->label_buf;
        out->sort_index = UINT64_C(5000000) + br->pid;
        out->device = 1;
        snprintf(out->name, sizeof out->name, "%s", pname);
        snprintf(out->label_buf, sizeof out->label_buf, "GPU %u", br->pid);
        return 1;
    }
    return 0;
}

void dt_layout_row_get(dt_layout *l, size_t f, dt_layout_row *out)
{
    const dt_layout_final_row *fr = &l->frows[f];
    const dt_layout_base_row *br = &l->brows[fr->base];
    out->cls = br->cls;
    out->id = br->pid;
    out->lane = br->lane;
    out->level = fr->level;
    out->pid = fr->pid;
    out->tid = fr->tid;
    size_t size = sizeof out->name;
    char *buf = out->name;
    int n;
    if (br->cls == DT_LAYOUT_HOST)
        n = host_thread_name(l->rec, buf, size, br->pid, br->lane);
    else if (br->cls == DT_LAYOUT_DEVICE)
        n = snprintf(buf, size, "stream %u", br->lane);
    else
        n = snprintf(buf, size, "stream %u annotations", br->lane);
    if (n < 0 || (size_t)n >= size)
        n = (int)strlen(buf);
    if (fr->level > 0)
        snprintf(buf + n, size - (size_t)n, " (overlap %u)", fr->level);
}

uint64_t dt_layout_main_pid(dt_layout *l)
{
    return dt_layout_host_pid(l, l->rec->pid);
}

/* Whether the capture window's own row (tid 0 of the recording process) is
   free for the "devtrace capture" event's name. */
int dt_layout_capture_row_free(dt_layout *l)
{
    uint64_t main_pid = dt_layout_main_pid(l);
    for (size_t f = 0; f < l->nfrows; f++)
        if (l->frows[f].pid == main_pid && l->frows[f].tid == 0)
            return 0;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Counts, loss, attribution                                           */
/* ------------------------------------------------------------------ */
uint64_t dt_layout_kind_count(const dt_layout *l, int kind)
{
    return kind >= 1 && kind <= DT_EVENT_KIND_MAX ? l->build->kinds[kind] : 0;
}

uint64_t dt_layout_flow_count(const dt_layout *l)
{
    return l->build->flows;
}

uint64_t dt_layout_launch_count(const dt_layout *l)
{
    return l->build->launches;
}

/* The recording's count plus the records the layout could not place, which
   count like its drops. */
uint64_t dt_layout_loss(const dt_layout *l, dt_loss_reason r)
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

size_t dt_layout_attribution_count(const dt_layout *l)
{
    return l->build->nattr;
}

void dt_layout_attribution_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *ns)
{
    *external_id = l->build->attr[k].external_id;
    *ns = l->build->attr[k].ns;
}

size_t dt_layout_parent_count(const dt_layout *l)
{
    return l->build->nparents;
}

void dt_layout_parent_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *range_id)
{
    *external_id = l->build->parents[k].external_id;
    *range_id = l->build->parents[k].range_id;
}

int dt_layout_host_pid_shifted(const dt_layout *l)
{
    return l->build->host_pid_shifted;
}

void dt_layout_phases(const dt_layout *l, double *classify_s, double *spans_s, double *rows_s)
{
    *classify_s = (double)l->build->phase_ns[0] * 1e-9;
    *spans_s = (double)l->build->phase_ns[1] * 1e-9;
    *rows_s = (double)l->build->phase_ns[2] * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Kernel args: launch configuration and occupancy                     */
/* ------------------------------------------------------------------ */
/* As Kineto's torch-cuda path: blocks/warps per SM from the grid over all
   SMs; the occupancy is the resident fraction of the SM's threads, with the
   resident block count limited by threads, blocks, registers and shared
   memory per SM. */
static void compute_occupancy(const dt_device_props *d, const dt_launch_config *lc, dt_layout_kernel *o)
{
    o->occupancy_valid = 0;
    if (!d || !d->valid || d->num_sms <= 0 || d->warp_size <= 0 || d->max_threads_per_sm <= 0)
        return;
    if (lc->block[0] <= 0 || lc->block[1] <= 0 || lc->block[2] <= 0 ||
        lc->grid[0] <= 0 || lc->grid[1] <= 0 || lc->grid[2] <= 0)
        return;
    double threads = (double)lc->block[0] * lc->block[1] * lc->block[2];
    double blocks = (double)lc->grid[0] * lc->grid[1] * lc->grid[2];
    double blocks_per_sm = blocks / d->num_sms;
    double warps_per_sm = blocks_per_sm * threads / d->warp_size;

    double warps_per_block = ceil(threads / d->warp_size);
    double limit = floor((double)d->max_threads_per_sm / d->warp_size / warps_per_block);
    if (d->max_threads_per_block > 0 && threads > d->max_threads_per_block)
        limit = 0;
    if (d->max_blocks_per_sm > 0 && d->max_blocks_per_sm < limit)
        limit = d->max_blocks_per_sm;
    if (lc->registers_per_thread > 0 && d->regs_per_sm > 0) {
        /* registers are allocated per warp in units of 256 */
        double per_warp = ceil((double)lc->registers_per_thread * d->warp_size / 256.0) * 256.0;
        double by_regs = floor(floor(d->regs_per_sm / per_warp) / warps_per_block);
        if (d->regs_per_block > 0 && per_warp * warps_per_block > d->regs_per_block)
            by_regs = 0;
        if (by_regs < limit)
            limit = by_regs;
    }
    uint64_t smem = (uint64_t)lc->static_shared_memory + lc->dynamic_shared_memory;
    if (smem > 0 && d->shared_mem_per_sm > 0) {
        double by_smem = floor((double)d->shared_mem_per_sm / (double)smem);
        if (by_smem < limit)
            limit = by_smem;
    }
    double resident = blocks_per_sm < limit ? blocks_per_sm : limit;
    double pct = resident * threads / d->max_threads_per_sm * 100.0;
    if (!(blocks_per_sm < 1e12) || !(warps_per_sm < 1e12) || !(pct >= 0 && pct < 1e9))
        return;
    o->occupancy_valid = 1;
    o->blocks_per_sm_e6 = (uint64_t)llround(blocks_per_sm * 1e6);
    o->warps_per_sm_e6 = (uint64_t)llround(warps_per_sm * 1e6);
    o->occupancy_pct = lround(pct);
}

void dt_layout_kernel_get(const dt_layout *l, unsigned device, uint32_t config, dt_layout_kernel *out)
{
    const dt_recording *rec = l->rec;
    memset(out, 0, sizeof *out);
    out->has_config = config < rec->launches->count;
    if (out->has_config)
        out->config = rec->launches->configs[config];
    out->has_resources = out->has_config && rec->kernel_resources;
    if (!out->has_resources)
        return;
    const dt_device_props *d = device < DT_MAX_DEVICES ? &rec->devices[device] : NULL;
    compute_occupancy(d, &out->config, out);
}

static const char *const copy_kind_names[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
static const char *const memory_kind_names[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed"};

const char *dt_layout_copy_kind_name(unsigned k)
{
    return k < sizeof copy_kind_names / sizeof *copy_kind_names ? copy_kind_names[k] : "Unknown";
}

const char *dt_layout_memory_kind_name(unsigned k)
{
    return k < sizeof memory_kind_names / sizeof *memory_kind_names ? memory_kind_names[k] : "Unknown";
}
