/*
 * Chrome trace JSON in Kineto's schema (docs/trace-format.md), streamed
 * through a fixed buffer to a temporary file that is renamed into place.
 *
 * Before anything is written the exporter decides, per event, which row
 * (pid, tid) it goes on: events that would partially overlap another event of
 * their row are moved to overflow rows, because Perfetto drops them otherwise.
 * Events are then written row by row in start order (longer first on equal
 * starts), the order in which viewers build their nesting.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_out.h"
#include "layout.h"

#define OUT_BUFFER (1u << 20)
#define NAME_INLINE 2048            /* escaped names up to this go in place */
#define NEST_LEVELS 16              /* levels that keep nested events together */
#define BASE_TIME_UNIT_NS (UINT64_C(7889238) * UINT64_C(1000000000))
#define HOST_SORT_LIMIT 4999999     /* device rows sort from 5000000 up */
#define HOST_PID_SHIFT UINT64_C(4194304) /* above Linux's largest pid_max */
#define MAX_RANGE_DEPTH 4096
#define NONE UINT32_MAX
#define COPY_PAD 16                 /* readable bytes after copied fragments */

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

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

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
    size_t i = (size_t)mix64(key) & m->mask;
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
        size_t j = (size_t)mix64(m->e[i].key) & n.mask;
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
    size_t i = (size_t)mix64(key) & m->mask;
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

/* Growable array of fixed-size elements. */
static int vec_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = dt_realloc(*p, c * elem);
    if (!n)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Export state                                                        */
/* ------------------------------------------------------------------ */
enum row_class { ROW_HOST, ROW_DEVICE, ROW_ANNOT };

typedef struct base_row {
    uint8_t cls;
    uint32_t pid;              /* host pid or device id, as recorded */
    uint32_t lane;             /* host tid or stream */
    uint32_t count;            /* items on the row */
    uint32_t first;            /* offset of its items in perm */
    uint32_t levels;
    uint32_t first_final;
} base_row;

typedef struct final_row {
    uint32_t base;
    uint32_t level;
    uint64_t pid, tid;
    uint32_t prefix_off, prefix_len; /* "pid":P,"tid":T,"ts": */
} final_row;

typedef struct span {
    uint64_t start, end;
    uint64_t external_id;      /* the range's id */
    uint32_t range;            /* record index of the range */
    uint32_t row;              /* annotation base row */
    uint32_t name;             /* the range's name */
} span;

typedef struct corr_pair {
    uint32_t api, dev;
} corr_pair;

typedef struct attribution {
    uint64_t external_id;
    uint64_t ns;
} attribution;

typedef struct sort_item {
    uint64_t start, end;
    uint32_t idx;
} sort_item;

typedef struct ctx {
    const dt_session *s;
    size_t n;                  /* records */
    size_t items;              /* records + spans */

    uint32_t *row;             /* item -> base row, then final row; NONE: dropped */
    uint32_t *perm;            /* items grouped by row, sorted by start */
    uint8_t *flow;             /* record -> FLOW_* bits */

    base_row *brows;
    size_t nbrows, cap_brows;
    idmap rowmap[3];

    final_row *frows;
    size_t nfrows, cap_frows;
    char *prefix;
    size_t prefix_len, prefix_cap;

    span *spans;
    size_t nspans, cap_spans;

    idmap corrmap;
    int corr_direct;           /* pairs indexed by correlation - corr_min */
    uint64_t corr_min, corr_span;
    corr_pair *pairs;
    size_t npairs, cap_pairs;

    idmap attrmap;
    attribution *attr;
    size_t nattr, cap_attr;

    idmap rangemap;            /* range id -> record index */
    idmap parentmap;           /* external id -> index in parents */
    struct { uint64_t external_id, range_id; } *parents; /* written as externalParents */
    size_t nparents, cap_parents;
    int parents_incomplete;     /* out of memory recording devtrace.externalParents */

    /* escaped names, one per interned id */
    char *names;
    size_t names_len, names_cap;
    uint32_t *name_off, *name_len;
    uint32_t name_count;

    /* kernel args tail per (device slot, launch config) */
    uint32_t **kcache;         /* [DT_MAX_DEVICES + 1] arrays of offsets */
    char *kfrag;
    size_t kfrag_len, kfrag_cap;

    uint64_t base_ns, window_start, window_end;
    uint64_t kinds[DT_EVENT_KIND_MAX + 1];
    /* memory events: record index -> position in mem (their bytes, signed,
       and the running total of their memory) */
    idmap memmap;
    dt_layout_memory *mem;
    uint64_t flows;
    uint64_t launches;         /* API calls that launch device work */
    uint64_t dropped_window, dropped_kind, dropped_reversed;
    uint8_t device_pid[65536 / 8]; /* device ids in use, as a bitmap */
    small_cache row_cache[2];      /* host, device rows */
    small_cache annot_cache, span_cache;
    int host_pid_shifted;
    const char *api_prefix;
    const char *path;          /* written as traceName */
    uint64_t bytes;            /* JSON bytes written */
    uint64_t phase_ns[5];      /* where the time went, for DEVTRACE_LOG */

    /* Text repeated from event to event, formatted once: the External id
       (consecutive events share their operation's) and the device args
       (events are written row by row, a row is one stream). COPY_PAD bytes
       of room after each, for copy_padded. */
    struct { uint64_t id; int valid; uint32_t len; char text[48 + COPY_PAD]; } ext_text;
    struct { uint32_t device, context, lane; int valid; uint32_t len; char text[96 + COPY_PAD]; } dev_text;
} ctx;

enum { PHASE_CLASSIFY, PHASE_SPANS, PHASE_ROWS, PHASE_NAMES, PHASE_WRITE };

enum { FLOW_S = 1, FLOW_F = 2 };

static inline uint64_t rec_start(const ctx *c, const dt_rec *r)
{
    return (r->flags & DT_REC_REALTIME) ? r->start : dt_clock_map(&c->s->clock, r->start);
}

static inline uint64_t rec_end(const ctx *c, const dt_rec *r)
{
    return (r->flags & DT_REC_REALTIME) ? r->end : dt_clock_map(&c->s->clock, r->end);
}

static inline void item_times(const ctx *c, size_t i, uint64_t *start, uint64_t *end)
{
    if (i < c->n) {
        const dt_rec *r = dt_store_at(&c->s->store, i);
        *start = rec_start(c, r);
        *end = rec_end(c, r);
    } else {
        *start = c->spans[i - c->n].start;
        *end = c->spans[i - c->n].end;
    }
}

/* far enough ahead to cover a cache miss: loops with less work per item
   need to look further */
#define PREFETCH_AHEAD 32
#define PREFETCH_AHEAD_SHORT 48

static inline void prefetch_item(const ctx *c, uint32_t i)
{
    if (i < c->n) {
        __builtin_prefetch(dt_store_at(&c->s->store, i));
        __builtin_prefetch(&c->row[i]);
    } else {
        const char *sp = (const char *)&c->spans[i - c->n];
        __builtin_prefetch(sp);
        __builtin_prefetch(sp + sizeof(span) - 1);
    }
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

static uint32_t base_row_for(ctx *c, int cls, uint32_t pid, uint32_t lane)
{
    uint64_t key = (uint64_t)pid << 32 | lane;
    uint32_t *slot = idmap_slot(&c->rowmap[cls], key);
    if (!slot)
        return NONE;
    if (*slot != NONE)
        return *slot;
    if (vec_reserve((void **)&c->brows, &c->cap_brows, c->nbrows + 1, sizeof *c->brows) != 0)
        return NONE;
    base_row *b = &c->brows[c->nbrows];
    memset(b, 0, sizeof *b);
    b->cls = (uint8_t)cls;
    b->pid = pid;
    b->lane = lane;
    *slot = (uint32_t)c->nbrows;
    return (uint32_t)c->nbrows++;
}

/* ------------------------------------------------------------------ */
/* Pass 1: keep or drop, rows, flows, attribution, ranges              */
/* ------------------------------------------------------------------ */
static int has_flow_side(const dt_rec *r)
{
    return r->correlation != 0 &&
           ((r->kind >= DT_EVENT_KERNEL && r->kind <= DT_EVENT_DRIVER) || r->kind == DT_EVENT_COLLECTIVE);
}

/* Vendors hand out correlation ids densely (CUPTI counts up from 1): then a
   table indexed by id beats a hash map, whose probes miss the cache once
   the map outgrows it. Sparse ids fall back to the map. */
static int corr_plan(ctx *c)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        const dt_rec *r = dt_store_at(&c->s->store, i);
        if (!has_flow_side(r))
            continue;
        n++;
        if (r->correlation < lo)
            lo = r->correlation;
        if (r->correlation > hi)
            hi = r->correlation;
    }
    if (n > 0 && hi - lo < 4 * (uint64_t)n + 1024) {
        c->corr_direct = 1;
        c->corr_min = lo;
        c->corr_span = hi - lo + 1;
        c->pairs = dt_malloc(c->corr_span * sizeof *c->pairs);
        if (!c->pairs)
            return -1;
        memset(c->pairs, 0xff, c->corr_span * sizeof *c->pairs);
        return 0;
    }
    return idmap_init(&c->corrmap, n / 2 + 16);
}

static corr_pair *corr_pair_for(ctx *c, uint64_t corr)
{
    if (c->corr_direct)
        return &c->pairs[corr - c->corr_min];
    uint32_t *slot = idmap_slot(&c->corrmap, corr);
    if (!slot)
        return NULL;
    if (*slot == NONE) {
        if (vec_reserve((void **)&c->pairs, &c->cap_pairs, c->npairs + 1, sizeof *c->pairs) != 0)
            return NULL;
        c->pairs[c->npairs].api = NONE;
        c->pairs[c->npairs].dev = NONE;
        *slot = (uint32_t)c->npairs++;
    }
    return &c->pairs[*slot];
}

static int classify(ctx *c)
{
    const dt_session *s = c->s;
    int have_window = s->window_end_ns >= s->window_start_ns && s->window_start_ns > 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    small_cache *rows = c->row_cache;
    for (int k = 0; k < 2; k++)
        small_cache_init(&rows[k]);
    uint32_t last_attr = NONE;

    if (corr_plan(c) != 0)
        return -1;

    for (size_t i = 0; i < c->n; i++) {
        const dt_rec *r = dt_store_at(&s->store, i);
        uint64_t st = rec_start(c, r), en = rec_end(c, r);
        c->row[i] = NONE;
        if (r->kind < DT_EVENT_KERNEL || r->kind > DT_EVENT_KIND_MAX) {
            c->dropped_kind++;
            continue;
        }
        if (en < st) {
            c->dropped_reversed++;
            continue;
        }
        if (have_window && (st < s->window_start_ns || en > s->window_end_ns)) {
            c->dropped_window++;
            continue;
        }
        if (st < lo)
            lo = st;
        if (en > hi)
            hi = en;
        c->kinds[r->kind]++;
        c->launches += (r->flags & DT_REC_LAUNCH) != 0;

        int cls = is_device_kind(r->kind) ? ROW_DEVICE : ROW_HOST;
        uint32_t pid = cls == ROW_DEVICE ? r->device : r->context;
        int hit;
        uint32_t *row = small_cache_slot(&rows[cls], (uint64_t)pid << 32 | r->lane, &hit);
        if (!hit && (*row = base_row_for(c, cls, pid, r->lane)) == NONE)
            return -1;
        c->row[i] = *row;

        if (r->correlation != 0 &&
            (r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || is_attributed_kind(r->kind))) {
            corr_pair *p = corr_pair_for(c, r->correlation);
            if (!p)
                return -1;
            uint32_t *which = is_attributed_kind(r->kind) ? &p->dev : &p->api;
            /* the earliest event of each side gets the flow; store order breaks ties */
            if (*which == NONE || st < rec_start(c, dt_store_at(&s->store, *which)))
                *which = (uint32_t)i;
        }
        if (is_attributed_kind(r->kind) && (r->flags & DT_REC_HAS_EXTERNAL)) {
            if (last_attr == NONE || c->attr[last_attr].external_id != r->external_id) {
                uint32_t *slot = idmap_slot(&c->attrmap, r->external_id);
                if (!slot)
                    return -1;
                if (*slot == NONE) {
                    if (vec_reserve((void **)&c->attr, &c->cap_attr, c->nattr + 1, sizeof *c->attr) != 0)
                        return -1;
                    c->attr[c->nattr].external_id = r->external_id;
                    c->attr[c->nattr].ns = 0;
                    *slot = (uint32_t)c->nattr++;
                }
                last_attr = *slot;
            }
            c->attr[last_attr].ns += en - st;
        }
        if (r->kind == DT_EVENT_RANGE && (r->flags & DT_REC_HAS_EXTERNAL)) {
            uint32_t *slot = idmap_slot(&c->rangemap, r->external_id);
            if (!slot)
                return -1;
            if (*slot == NONE)
                *slot = (uint32_t)i;
        }
    }

    if (have_window) {
        c->window_start = s->window_start_ns;
        c->window_end = s->window_end_ns;
    } else if (lo <= hi) {
        c->window_start = lo;
        c->window_end = hi;
    } else {
        c->window_start = c->window_end = s->window_start_ns;
    }
    uint64_t first = c->window_start < lo ? c->window_start : lo;
    c->base_ns = first / BASE_TIME_UNIT_NS * BASE_TIME_UNIT_NS;

    size_t npairs = c->corr_direct ? c->corr_span : c->npairs;
    for (size_t k = 0; k < npairs; k++) {
        const corr_pair *p = &c->pairs[k];
        if (p->api != NONE && p->dev != NONE) {
            c->flow[p->api] |= FLOW_S;
            c->flow[p->dev] |= FLOW_F;
            c->flows++;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* gpu_user_annotation spans                                           */
/* ------------------------------------------------------------------ */
static uint32_t span_for(ctx *c, idmap *spanmap, uint32_t range, uint32_t row)
{
    uint32_t *slot = idmap_slot(spanmap, (uint64_t)range << 32 | row);
    if (!slot)
        return NONE;
    if (*slot == NONE) {
        if (vec_reserve((void **)&c->spans, &c->cap_spans, c->nspans + 1, sizeof *c->spans) != 0)
            return NONE;
        span *sp = &c->spans[c->nspans];
        sp->start = UINT64_MAX;
        sp->end = 0;
        const dt_rec *r = dt_store_at(&c->s->store, range);
        sp->range = range;
        sp->row = row;
        sp->name = r->name;
        sp->external_id = r->external_id;
        *slot = (uint32_t)c->nspans++;
    }
    return *slot;
}

static void span_widen(span *sp, uint64_t st, uint64_t en)
{
    if (st < sp->start)
        sp->start = st;
    if (en > sp->end)
        sp->end = en;
}

/* The range a device event with External id ext is attributed to: ext
   itself when it is a range, else the range the operation ext was pushed
   in. The second kind is written to devtrace.externalParents, so that
   readers (devtrace stats) attribute the same way. */
static uint32_t range_of_external(ctx *c, uint64_t ext)
{
    uint32_t r = idmap_get(&c->rangemap, ext);
    uint64_t range;
    if (r != NONE || !dt_external_parent_range(c->s, ext, &range))
        return r;
    r = idmap_get(&c->rangemap, range);
    if (r == NONE)
        return NONE;
    uint32_t *slot = idmap_slot(&c->parentmap, ext);
    if (!slot) {
        c->parents_incomplete = 1;
        return r;
    }
    if (*slot == NONE) {
        if (c->nparents == c->cap_parents) {
            size_t cap = c->cap_parents ? c->cap_parents * 2 : 64;
            void *p = dt_realloc(c->parents, cap * sizeof *c->parents);
            if (!p) {
                /* the slot stays claimed: fail the export rather than write
                   a trace whose readers cannot attribute ext */
                c->parents_incomplete = 1;
                return r;
            }
            c->parents = p;
            c->cap_parents = cap;
        }
        *slot = (uint32_t)c->nparents;
        c->parents[c->nparents].external_id = ext;
        c->parents[c->nparents].range_id = range;
        c->nparents++;
    }
    return r;
}

static int build_spans(ctx *c)
{
    if (c->rangemap.count == 0)
        return 0;
    const dt_session *s = c->s;
    idmap spanmap;
    if (idmap_init(&spanmap, 256) != 0) {
        idmap_free(&spanmap);
        return -1;
    }
    uint64_t last_ext = 0;
    uint32_t last_range = NONE;
    int have_last = 0;
    int rc = -1;
    small_cache_init(&c->annot_cache);
    small_cache_init(&c->span_cache);

    /* First the ranges that directly enclose device activity... */
    for (size_t i = 0; i < c->n; i++) {
        const dt_rec *r = dt_store_at(&s->store, i);
        if (c->row[i] == NONE || !is_attributed_kind(r->kind) || !(r->flags & DT_REC_HAS_EXTERNAL))
            continue;
        if (!have_last || r->external_id != last_ext) {
            last_ext = r->external_id;
            last_range = range_of_external(c, last_ext);
            have_last = 1;
        }
        if (last_range == NONE)
            continue;
        int hit;
        uint32_t *annot = small_cache_slot(&c->annot_cache, (uint64_t)r->device << 32 | r->lane, &hit);
        if (!hit && (*annot = base_row_for(c, ROW_ANNOT, r->device, r->lane)) == NONE)
            goto out;
        uint32_t *sp = small_cache_slot(&c->span_cache, (uint64_t)last_range << 32 | *annot, &hit);
        if (!hit && (*sp = span_for(c, &spanmap, last_range, *annot)) == NONE)
            goto out;
        span_widen(&c->spans[*sp], rec_start(c, r), rec_end(c, r));
    }
    /* ...then every range enclosing those, up the parent chain. */
    size_t direct = c->nspans;
    for (size_t k = 0; k < direct; k++) {
        uint32_t range = c->spans[k].range;
        for (int depth = 0; depth < MAX_RANGE_DEPTH; depth++) {
            const dt_rec *r = dt_store_at(&s->store, range);
            if (!(r->flags & DT_REC_HAS_PARENT))
                break;
            uint32_t parent = range_of_external(c, r->u.range.parent);
            if (parent == NONE || parent == range)
                break;
            uint32_t j = span_for(c, &spanmap, parent, c->spans[k].row);
            if (j == NONE)
                goto out;
            span_widen(&c->spans[j], c->spans[k].start, c->spans[k].end);
            range = parent;
        }
    }
    rc = c->parents_incomplete ? -1 : 0;
out:
    idmap_free(&spanmap);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Rows: group, sort, and move partial overlaps to overflow rows       */
/* ------------------------------------------------------------------ */
static int item_before(const sort_item *a, const sort_item *b)
{
    if (a->start != b->start)
        return a->start < b->start;
    if (a->end != b->end)
        return a->end > b->end;
    return a->idx < b->idx;
}

/* Stable bottom-up merge sort; a run already in order costs one compare. */
static void sort_items(sort_item *a, sort_item *tmp, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (item_before(&a[i + 1], &a[i])) {
            sort_item t = a[i];
            a[i] = a[i + 1];
            a[i + 1] = t;
        }
    }
    sort_item *src = a, *dst = tmp;
    for (size_t w = 2; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            if (mid == hi || !item_before(&src[mid], &src[mid - 1])) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
                continue;
            }
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = item_before(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        sort_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Rows come nearly in order: a range is stored after the operations inside
   it, so it belongs a few places back. Insertion sort puts such rows in
   order in one pass; it gives up (and the merge sort takes over from where
   it stopped) once it has moved more than `budget` items in all, so that no
   input costs more than O(n log n). Returns 0 when done. */
static int sort_nearly_sorted(sort_item *a, size_t n, size_t budget)
{
    for (size_t i = 1; i < n; i++) {
        if (!item_before(&a[i], &a[i - 1]))
            continue;
        sort_item cur = a[i];
        size_t j = i;
        do {
            a[j] = a[j - 1];
            j--;
        } while (j > 0 && item_before(&cur, &a[j - 1]));
        a[j] = cur;
        size_t moved = i - j;
        if (moved > budget)
            return -1;
        budget -= moved;
    }
    return 0;
}

typedef struct level_stack {
    uint64_t *ends;
    size_t n, cap;
} level_stack;

typedef struct heap_entry {
    uint64_t end;
    uint32_t level;
} heap_entry;

typedef struct leveler {
    level_stack st[NEST_LEVELS];
    uint32_t nest_used;
    heap_entry *heap;
    size_t heap_n, heap_cap;
    uint32_t extra_levels;     /* levels beyond NEST_LEVELS */
} leveler;

static void heap_push(leveler *l, heap_entry e)
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

static heap_entry heap_pop(leveler *l)
{
    heap_entry top = l->heap[0];
    heap_entry last = l->heap[--l->heap_n];
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

static void leveler_reset(leveler *l)
{
    for (uint32_t k = 0; k < l->nest_used; k++)
        l->st[k].n = 0;
    l->nest_used = 0;
    l->heap_n = 0;
    l->extra_levels = 0;
}

static uint32_t leveler_levels(const leveler *l)
{
    return l->extra_levels ? NEST_LEVELS + l->extra_levels : l->nest_used;
}

/* The level an event [st, en] goes on (events come sorted by start, longer
   first), or NONE when out of memory. On the first levels an event may nest
   inside the innermost open event; beyond them (pathological input) it takes
   a level that is free by its start, found through a heap, so that the work
   stays O(n log n) whatever the input. */
static uint32_t leveler_place(leveler *l, uint64_t st, uint64_t en)
{
    for (uint32_t k = 0; k < l->nest_used; k++) {
        level_stack *s = &l->st[k];
        while (s->n > 0 && s->ends[s->n - 1] <= st)
            s->n--;
        if (s->n == 0 || s->ends[s->n - 1] >= en) {
            if (vec_reserve((void **)&s->ends, &s->cap, s->n + 1, sizeof *s->ends) != 0)
                return NONE;
            s->ends[s->n++] = en;
            return k;
        }
    }
    if (l->nest_used < NEST_LEVELS) {
        level_stack *s = &l->st[l->nest_used];
        if (vec_reserve((void **)&s->ends, &s->cap, 1, sizeof *s->ends) != 0)
            return NONE;
        s->ends[0] = en;
        s->n = 1;
        return l->nest_used++;
    }
    if (vec_reserve((void **)&l->heap, &l->heap_cap, l->heap_n + 1, sizeof *l->heap) != 0)
        return NONE;
    heap_entry e;
    if (l->heap_n > 0 && l->heap[0].end <= st)
        e = heap_pop(l);
    else
        e.level = NEST_LEVELS + l->extra_levels++;
    e.end = en;
    heap_push(l, e);
    return e.level;
}

static void leveler_free(leveler *l)
{
    for (int k = 0; k < NEST_LEVELS; k++)
        dt_free(l->st[k].ends);
    dt_free(l->heap);
}

static uint64_t final_tid(const base_row *b, uint32_t level)
{
    uint64_t lane = b->lane;
    switch (b->cls) {
    case ROW_DEVICE:
        /* odd millions: stream overflow; even millions: annotations */
        return level == 0 ? lane : lane + UINT64_C(1000000) * (2 * (uint64_t)level - 1);
    case ROW_ANNOT:
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

static uint64_t host_pid(ctx *c, uint32_t pid)
{
    if (pid <= 0xffff && (c->device_pid[pid >> 3] & (1u << (pid & 7)))) {
        c->host_pid_shifted = 1;
        return pid + HOST_PID_SHIFT;
    }
    return pid;
}

static int add_final_row(ctx *c, uint32_t base, uint32_t level)
{
    if (vec_reserve((void **)&c->frows, &c->cap_frows, c->nfrows + 1, sizeof *c->frows) != 0 ||
        vec_reserve((void **)&c->prefix, &c->prefix_cap, c->prefix_len + 64 + COPY_PAD, 1) != 0)
        return -1;
    const base_row *b = &c->brows[base];
    final_row *f = &c->frows[c->nfrows++];
    f->base = base;
    f->level = level;
    f->pid = b->cls == ROW_HOST ? host_pid(c, b->pid) : b->pid;
    f->tid = final_tid(b, level);
    char *p = c->prefix + c->prefix_len, *p0 = p;
    DT_PUT_LIT(p, "\"pid\":");
    p = dt_put_u64(p, f->pid);
    DT_PUT_LIT(p, ",\"tid\":");
    p = dt_put_u64(p, f->tid);
    DT_PUT_LIT(p, ",\"ts\":");
    memset(p, 0, COPY_PAD);
    f->prefix_off = (uint32_t)c->prefix_len;
    f->prefix_len = (uint32_t)(p - p0);
    c->prefix_len += f->prefix_len;
    return 0;
}

static void mark_device_pids(ctx *c)
{
    /* A host pid equal to a device id (pid 1 in a container, device 1) would
       merge the host rows into the device's process: such host pids move. */
    for (size_t i = 0; i < c->nbrows; i++)
        if (c->brows[i].cls != ROW_HOST && c->brows[i].pid <= 0xffff)
            c->device_pid[c->brows[i].pid >> 3] |= (uint8_t)(1u << (c->brows[i].pid & 7));
}

static int assign_rows(ctx *c)
{
    size_t items = c->items;
    for (size_t k = 0; k < c->nspans; k++)
        c->row[c->n + k] = c->spans[k].row;
    for (size_t i = 0; i < items; i++)
        if (c->row[i] != NONE)
            c->brows[c->row[i]].count++;
    uint32_t off = 0;
    for (size_t b = 0; b < c->nbrows; b++) {
        c->brows[b].first = off;
        off += c->brows[b].count;
        c->brows[b].count = 0;
    }
    for (size_t i = 0; i < items; i++) {
        uint32_t b = c->row[i];
        if (b != NONE)
            c->perm[c->brows[b].first + c->brows[b].count++] = (uint32_t)i;
    }
    c->items = off; /* from here on: the number of items placed in perm */

    mark_device_pids(c);

    sort_item *si = NULL, *tmp = NULL;
    size_t si_cap = 0, tmp_cap = 0;
    leveler lv;
    memset(&lv, 0, sizeof lv);
    int rc = -1;
    for (size_t b = 0; b < c->nbrows; b++) {
        base_row *br = &c->brows[b];
        uint32_t *idx = c->perm + br->first;
        size_t n = br->count;
        /* rows are mostly in start order already (a stream's records come
           in order): check first, and sort a copy of the keys only if not */
        int sorted = 1;
        sort_item prev = {0, 0, 0}, cur;
        for (size_t k = 0; k < n && sorted; k++) {
            if (k + PREFETCH_AHEAD_SHORT < n)
                prefetch_item(c, idx[k + PREFETCH_AHEAD_SHORT]);
            cur.idx = idx[k];
            item_times(c, idx[k], &cur.start, &cur.end);
            if (k > 0 && item_before(&cur, &prev))
                sorted = 0;
            prev = cur;
        }
        if (!sorted) {
            if (vec_reserve((void **)&si, &si_cap, n, sizeof *si) != 0 ||
                vec_reserve((void **)&tmp, &tmp_cap, n, sizeof *tmp) != 0)
                goto out;
            for (size_t k = 0; k < n; k++) {
                if (k + PREFETCH_AHEAD_SHORT < n)
                    prefetch_item(c, idx[k + PREFETCH_AHEAD_SHORT]);
                si[k].idx = idx[k];
                item_times(c, idx[k], &si[k].start, &si[k].end);
            }
            if (sort_nearly_sorted(si, n, 8 * n) != 0)
                sort_items(si, tmp, n);
            for (size_t k = 0; k < n; k++)
                idx[k] = si[k].idx;
        }
        leveler_reset(&lv);
        br->first_final = (uint32_t)c->nfrows;
        for (size_t k = 0; k < n; k++) {
            uint64_t st, en;
            if (sorted) {
                if (k + PREFETCH_AHEAD_SHORT < n)
                    prefetch_item(c, idx[k + PREFETCH_AHEAD_SHORT]);
                item_times(c, idx[k], &st, &en);
            } else {
                st = si[k].start;
                en = si[k].end;
            }
            uint32_t level = leveler_place(&lv, st, en);
            if (level == NONE)
                goto out;
            /* the level for now; the final row once the rows exist */
            c->row[idx[k]] = level;
        }
        br->levels = leveler_levels(&lv);
        for (uint32_t l = 0; l < br->levels; l++)
            if (add_final_row(c, (uint32_t)b, l) != 0)
                goto out;
        for (size_t k = 0; k < n; k++)
            c->row[idx[k]] += br->first_final;
    }
    rc = 0;
out:
    dt_free(si);
    dt_free(tmp);
    leveler_free(&lv);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */
static int escape_names(ctx *c)
{
    const dt_intern *in = &c->s->names;
    c->name_count = in->count;
    c->name_off = dt_malloc((c->name_count + 1) * sizeof *c->name_off);
    c->name_len = dt_malloc((c->name_count + 1) * sizeof *c->name_len);
    if (!c->name_off || !c->name_len)
        return -1;
    for (uint32_t id = 0; id < c->name_count; id++) {
        size_t len = dt_intern_len(in, id);
        if (vec_reserve((void **)&c->names, &c->names_cap, c->names_len + dt_json_escaped_max(len), 1) != 0)
            return -1;
        char *p = c->names + c->names_len;
        char *e = dt_json_escape(p, dt_intern_get(in, id), len);
        c->name_off[id] = (uint32_t)c->names_len;
        c->name_len[id] = (uint32_t)(e - p);
        c->names_len += (size_t)(e - p);
        if (c->names_len > UINT32_MAX - 64)
            return -1;
    }
    if (vec_reserve((void **)&c->names, &c->names_cap, c->names_len + COPY_PAD, 1) != 0)
        return -1;
    memset(c->names + c->names_len, 0, COPY_PAD);
    return 0;
}

static const char *const copy_kind_names[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
static const char *const memory_kind_names[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed"};

static const char *copy_kind_name(unsigned k)
{
    return k < sizeof copy_kind_names / sizeof *copy_kind_names ? copy_kind_names[k] : "Unknown";
}

static const char *memory_kind_name(unsigned k)
{
    return k < sizeof memory_kind_names / sizeof *memory_kind_names ? memory_kind_names[k] : "Unknown";
}

static char *put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* ------------------------------------------------------------------ */
/* Kernel args: launch configuration and occupancy, once per config     */
/* ------------------------------------------------------------------ */
typedef struct occupancy {
    int valid;
    uint64_t blocks_per_sm_e6, warps_per_sm_e6; /* fixed point, 6 decimals */
    long occupancy_pct;
} occupancy;

/* As Kineto's torch-cuda path: blocks/warps per SM from the grid over all
   SMs; the occupancy is the resident fraction of the SM's threads, with the
   resident block count limited by threads, blocks, registers and shared
   memory per SM. */
static occupancy compute_occupancy(const dt_device_props *d, const dt_launch_config *lc)
{
    occupancy o = {0, 0, 0, 0};
    if (!d || !d->valid || d->num_sms <= 0 || d->warp_size <= 0 || d->max_threads_per_sm <= 0)
        return o;
    if (lc->block[0] <= 0 || lc->block[1] <= 0 || lc->block[2] <= 0 ||
        lc->grid[0] <= 0 || lc->grid[1] <= 0 || lc->grid[2] <= 0)
        return o;
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
        return o;
    o.valid = 1;
    o.blocks_per_sm_e6 = (uint64_t)llround(blocks_per_sm * 1e6);
    o.warps_per_sm_e6 = (uint64_t)llround(warps_per_sm * 1e6);
    o.occupancy_pct = lround(pct);
    return o;
}

static const char *kernel_tail(ctx *c, unsigned device, uint32_t config, uint32_t *len)
{
    uint32_t nconf = c->s->launches.count;
    unsigned slot = device < DT_MAX_DEVICES ? device : DT_MAX_DEVICES;
    uint32_t ci = config < nconf ? config : nconf; /* nconf: an unknown config */
    if (!c->kcache[slot]) {
        c->kcache[slot] = dt_malloc((size_t)(nconf + 1) * 2 * sizeof(uint32_t));
        if (!c->kcache[slot])
            return NULL;
        memset(c->kcache[slot], 0xff, (size_t)(nconf + 1) * 2 * sizeof(uint32_t));
    }
    uint32_t *e = c->kcache[slot] + 2 * (size_t)ci;
    if (e[0] == NONE) {
        dt_launch_config lc;
        memset(&lc, 0, sizeof lc);
        if (ci < nconf)
            lc = c->s->launches.configs[ci];
        const dt_device_props *d = slot < DT_MAX_DEVICES ? &c->s->devices[slot] : NULL;
        occupancy o = compute_occupancy(d, &lc);
        if (vec_reserve((void **)&c->kfrag, &c->kfrag_cap, c->kfrag_len + 512, 1) != 0)
            return NULL;
        char *p = c->kfrag + c->kfrag_len, *p0 = p;
        DT_PUT_LIT(p, ",\"registers per thread\":");
        p = dt_put_u64(p, lc.registers_per_thread);
        DT_PUT_LIT(p, ",\"shared memory\":");
        p = dt_put_u64(p, (uint64_t)lc.static_shared_memory + lc.dynamic_shared_memory);
        if (o.valid) {
            DT_PUT_LIT(p, ",\"blocks per SM\":");
            p = dt_put_fixed(p, o.blocks_per_sm_e6, 6);
            DT_PUT_LIT(p, ",\"warps per SM\":");
            p = dt_put_fixed(p, o.warps_per_sm_e6, 6);
            DT_PUT_LIT(p, ",\"est. achieved occupancy %\":");
            p = dt_put_i64(p, o.occupancy_pct);
        }
        DT_PUT_LIT(p, ",\"grid\":[");
        for (int k = 0; k < 3; k++) {
            if (k)
                *p++ = ',';
            p = dt_put_i64(p, lc.grid[k]);
        }
        DT_PUT_LIT(p, "],\"block\":[");
        for (int k = 0; k < 3; k++) {
            if (k)
                *p++ = ',';
            p = dt_put_i64(p, lc.block[k]);
        }
        DT_PUT_LIT(p, "]}}");
        memset(p, 0, COPY_PAD);
        e[0] = (uint32_t)c->kfrag_len;
        e[1] = (uint32_t)(p - p0);
        c->kfrag_len += e[1];
    }
    *len = e[1];
    return c->kfrag + e[0];
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */
/* Short variable-length copies in 16-byte blocks: faster than a memcpy
   call for the names and fragments of an event. The sources keep
   COPY_PAD readable bytes after their end, the destination has the room
   reserved for the event. */
static inline char *copy_padded(char *dst, const char *src, size_t n)
{
    for (size_t k = 0; k < n; k += 16)
        memcpy(dst + k, src + k, 16);
    return dst + n;
}

static inline char *put_name(dt_out *o, char *p, const char *name, size_t n)
{
    if (n <= NAME_INLINE) {
        return copy_padded(p, name, n);
    }
    dt_out_commit(o, p);
    dt_out_write(o, name, n);
    return dt_out_reserve(o, DT_OUT_EVENT_ROOM);
}

static inline char *put_bandwidth(char *p, uint64_t bytes, uint64_t dur)
{
    if (dur == 0)
        return p;
    DT_PUT_LIT(p, ",\"memory bandwidth (GB/s)\":");
    /* bytes per ns is GB/s; exact integer arithmetic, six decimals */
    __extension__ unsigned __int128 q = (unsigned __int128)bytes * 1000000u / dur;
    if (q > UINT64_MAX)
        q = UINT64_MAX;
    return dt_put_fixed(p, (uint64_t)q, 6);
}

static inline char *put_device_args(ctx *c, char *p, const dt_rec *r)
{
    __typeof__(c->dev_text) *t = &c->dev_text;
    if (!t->valid || t->device != r->device || t->context != r->context || t->lane != r->lane) {
        char *q = t->text;
        DT_PUT_LIT(q, "\"device\":");
        q = dt_put_u64(q, r->device);
        DT_PUT_LIT(q, ",\"context\":");
        q = dt_put_u64(q, r->context);
        DT_PUT_LIT(q, ",\"stream\":");
        q = dt_put_u64(q, r->lane);
        DT_PUT_LIT(q, ",\"correlation\":");
        t->len = (uint32_t)(q - t->text);
        t->device = r->device;
        t->context = r->context;
        t->lane = r->lane;
        t->valid = 1;
    }
    p = copy_padded(p, t->text, t->len);
    return dt_put_u64(p, r->correlation);
}

static inline char *put_external(ctx *c, char *p, const dt_rec *r)
{
    if (!(r->flags & DT_REC_HAS_EXTERNAL))
        return p;
    __typeof__(c->ext_text) *t = &c->ext_text;
    if (!t->valid || t->id != r->external_id) {
        char *q = t->text;
        DT_PUT_LIT(q, "\"External id\":");
        q = dt_put_u64(q, r->external_id);
        *q++ = ',';
        t->len = (uint32_t)(q - t->text);
        t->id = r->external_id;
        t->valid = 1;
    }
    return copy_padded(p, t->text, t->len);
}

static void write_op(ctx *c, dt_out *o, size_t i);

/* An interned name, escaped, as a JSON value of any length: a long one is
   streamed, so that several fit in one event's room. */
#define VALUE_INLINE 256
static char *put_name_value(ctx *c, dt_out *o, char *p, uint32_t name)
{
    if (name >= c->name_count) {
        DT_PUT_LIT(p, "\"\"");
        return p;
    }
    const char *text = c->names + c->name_off[name];
    size_t n = c->name_len[name];
    if (n <= VALUE_INLINE)
        return copy_padded(p, text, n);
    dt_out_commit(o, p);
    dt_out_write(o, text, n);
    return dt_out_reserve(o, DT_OUT_EVENT_ROOM);
}

/* The args Kineto gives NCCL kernels (the process group as "Process Group
   Name", the element count as "In msg nelems"), and devtrace's own where a
   vendor says more. The four names may each be long: room is made again
   after each. */
static char *put_collective_args(ctx *c, dt_out *o, char *p, const dt_rec *r, uint64_t dur)
{
    static const dt_collective none = {0};
    const dt_collective *k = r->u.collective.info < c->s->collective_count
                                 ? &c->s->collectives[r->u.collective.info] : &none;
    DT_PUT_LIT(p, ",\"Collective name\":");
    p = put_name_value(c, o, p, r->name);
    if (k->count) {
        DT_PUT_LIT(p, ",\"In msg nelems\":");
        p = dt_put_u64(p, k->count);
    }
    if (k->data_type) {
        DT_PUT_LIT(p, ",\"dtype\":");
        p = put_name_value(c, o, p, k->data_type);
    }
    if (k->group) {
        DT_PUT_LIT(p, ",\"Process Group Name\":");
        p = put_name_value(c, o, p, k->group);
    }
    if (k->algorithm) {
        DT_PUT_LIT(p, ",\"algorithm\":");
        p = put_name_value(c, o, p, k->algorithm);
    }
    if (k->bytes) {
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt_put_u64(p, k->bytes);
        p = put_bandwidth(p, k->bytes, dur);
    }
    if (k->bandwidth_gbps > 0 && k->bandwidth_gbps < 1e12) {
        DT_PUT_LIT(p, ",\"bandwidth (GB/s)\":");
        p = dt_put_fixed(p, (uint64_t)(k->bandwidth_gbps * 1e6 + 0.5), 6);
    }
    DT_PUT_LIT(p, "}}");
    return p;
}

/* ------------------------------------------------------------------ */
/* Memory events: torch's args, totals in time order                   */
/* ------------------------------------------------------------------ */
/* torch's c10::DeviceType of a device's memory: CUDA is 1, a backend
   registered as PrivateUse1 (Ascend's torch_npu, ...) 20; host memory CPU 0,
   device id -1, as torch writes a host allocation. */
static void memory_owner(const ctx *c, const dt_rec *r, int *type, int64_t *device)
{
    unsigned kind = r->context;
    if (kind == DT_MEM_PAGEABLE || kind == DT_MEM_PINNED) {
        *type = 0;
        *device = -1;
        return;
    }
    *type = strcmp(c->api_prefix, "cuda") == 0 ? 1 : 20;
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

/* Bytes and "Total Allocated" of every memory event kept: a free the vendor
   gives no size of frees what the allocation of its address in this trace
   allocated (0 when that was before the trace). Totals run per device (and
   one for host memory) in time order, from 0 at the trace's start. */
#define FREED (NONE - 1)
static int memory_totals(ctx *c)
{
    size_t m = c->kinds[DT_EVENT_MEMORY], k = 0;
    mem_order *ord = dt_malloc((m + 1) * sizeof *ord);
    c->mem = dt_calloc(m + 1, sizeof *c->mem);
    idmap live;
    if (!ord || !c->mem || idmap_init(&c->memmap, m) != 0 || idmap_init(&live, 64) != 0) {
        dt_free(ord);
        return -1;
    }
    for (size_t i = 0; i < c->n && k < m; i++) {
        const dt_rec *r = dt_store_at(&c->s->store, i);
        if (r->kind != DT_EVENT_MEMORY || c->row[i] == NONE) continue;
        int type;
        int64_t device;
        memory_owner(c, r, &type, &device);
        ord[k++] = (mem_order){rec_start(c, r), (uint32_t)i, device < 0 ? DT_MAX_DEVICES : (uint32_t)device};
    }
    qsort(ord, k, sizeof *ord, mem_before);
    int64_t total = 0;
    int rc = 0;
    for (size_t j = 0; j < k && rc == 0; j++) {
        if (j == 0 || ord[j].owner != ord[j - 1].owner) total = 0;
        const dt_rec *r = dt_store_at(&c->s->store, ord[j].idx);
        dt_layout_memory *mi = &c->mem[j];
        memory_owner(c, r, &mi->device_type, &mi->device_id);
        uint64_t key = r->u.memory.address ^ ((uint64_t)ord[j].owner << 48);
        uint32_t *alloc = idmap_slot(&live, key), *pos = idmap_slot(&c->memmap, ord[j].idx);
        if (!alloc || !pos) {
            rc = -1;
            break;
        }
        *pos = (uint32_t)j;
        uint64_t bytes = r->u.memory.bytes;
        if (r->flags & DT_REC_FREE) {
            if (!bytes && *alloc < FREED) bytes = (uint64_t)c->mem[*alloc].bytes;
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

static const dt_layout_memory *memory_of(const ctx *c, size_t i)
{
    static const dt_layout_memory none = {0};
    uint32_t v = c->memmap.e ? idmap_get(&c->memmap, i) : NONE;
    return v == NONE ? &none : &c->mem[v];
}

/* A memory event as torch.profiler writes one with profile_memory: an
   instant on its row, with the same args. */
static void write_memory(ctx *c, dt_out *o, size_t i)
{
    const dt_rec *r = dt_store_at(&c->s->store, i);
    const final_row *fr = &c->frows[c->row[i]];
    const dt_layout_memory *mi = memory_of(c, i);
    char *p = dt_out_reserve(o, DT_OUT_EVENT_ROOM);
    DT_PUT_LIT(p, ",\n{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",");
    p = copy_padded(p, c->prefix + fr->prefix_off, fr->prefix_len);
    p = dt_put_us3(p, rec_start(c, r) - c->base_ns);
    DT_PUT_LIT(p, ",\"args\":{\"Total Allocated\":");
    p = dt_put_i64(p, mi->total);
    DT_PUT_LIT(p, ",\"Bytes\":");
    p = dt_put_i64(p, mi->bytes);
    DT_PUT_LIT(p, ",\"Device Id\":");
    p = dt_put_i64(p, mi->device_id);
    DT_PUT_LIT(p, ",\"Device Type\":");
    p = dt_put_i64(p, mi->device_type);
    DT_PUT_LIT(p, ",\"Addr\":");
    p = dt_put_u64(p, r->u.memory.address);
    DT_PUT_LIT(p, ",\"memory kind\":\"");
    p = put_str(p, memory_kind_name(r->context));
    DT_PUT_LIT(p, "\",\"stream\":");
    p = dt_put_u64(p, r->lane);
    DT_PUT_LIT(p, ",\"correlation\":");
    p = dt_put_u64(p, r->correlation);
    DT_PUT_LIT(p, "}}");
    dt_out_commit(o, p);
}

static int write_record(ctx *c, dt_out *o, size_t i)
{
    const dt_session *s = c->s;
    const dt_rec *r = dt_store_at(&s->store, i);
    if (r->kind == DT_EVENT_OP) {
        write_op(c, o, i);
        return 0;
    }
    if (r->kind == DT_EVENT_MEMORY) {
        write_memory(c, o, i);
        return 0;
    }
    const final_row *fr = &c->frows[c->row[i]];
    uint64_t st = rec_start(c, r), en = rec_end(c, r);
    uint64_t ts = st - c->base_ns, dur = en - st;
    char *p = dt_out_reserve(o, DT_OUT_EVENT_ROOM);
    char *ts_at;

    DT_PUT_LIT(p, ",\n{\"ph\":\"X\",\"cat\":");
    switch (r->kind) {
    /* as Kineto writes NCCL's: tools that know collectives read the args,
       the others count them as device time */
    case DT_EVENT_COLLECTIVE:
    case DT_EVENT_KERNEL: DT_PUT_LIT(p, "\"kernel\""); break;
    case DT_EVENT_MEMCPY: DT_PUT_LIT(p, "\"gpu_memcpy\""); break;
    case DT_EVENT_MEMSET: DT_PUT_LIT(p, "\"gpu_memset\""); break;
    case DT_EVENT_RUNTIME:
        *p++ = '"';
        p = put_str(p, c->api_prefix);
        DT_PUT_LIT(p, "_runtime\"");
        break;
    case DT_EVENT_DRIVER:
        *p++ = '"';
        p = put_str(p, c->api_prefix);
        DT_PUT_LIT(p, "_driver\"");
        break;
    case DT_EVENT_SYNC: DT_PUT_LIT(p, "\"cuda_sync\""); break;
    case DT_EVENT_OVERHEAD: DT_PUT_LIT(p, "\"overhead\""); break;
    default: DT_PUT_LIT(p, "\"user_annotation\""); break;
    }
    DT_PUT_LIT(p, ",\"name\":");
    if (r->kind == DT_EVENT_MEMCPY) {
        DT_PUT_LIT(p, "\"Memcpy ");
        p = put_str(p, copy_kind_name(r->u.memcpy.copy_kind));
        DT_PUT_LIT(p, " (");
        p = put_str(p, memory_kind_name(r->u.memcpy.src_kind));
        DT_PUT_LIT(p, " -> ");
        p = put_str(p, memory_kind_name(r->u.memcpy.dst_kind));
        DT_PUT_LIT(p, ")\"");
    } else if (r->kind == DT_EVENT_MEMSET) {
        DT_PUT_LIT(p, "\"Memset (");
        p = put_str(p, memory_kind_name(r->u.memset.memory_kind));
        DT_PUT_LIT(p, ")\"");
    } else if (r->name < c->name_count) {
        p = put_name(o, p, c->names + c->name_off[r->name], c->name_len[r->name]);
    } else {
        DT_PUT_LIT(p, "\"\"");
    }
    *p++ = ',';
    p = copy_padded(p, c->prefix + fr->prefix_off, fr->prefix_len);
    ts_at = p;
    p = dt_put_us3(p, ts);
    size_t ts_len = (size_t)(p - ts_at);
    /* a fixed-size copy (the event's room covers it): no call per event */
    char ts_text[32];
    memcpy(ts_text, ts_at, sizeof ts_text);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt_put_us3(p, dur);
    DT_PUT_LIT(p, ",\"args\":{");

    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        p = put_external(c, p, r);
        DT_PUT_LIT(p, "\"queued\":");
        uint32_t qd = r->u.kernel.queued_delta;
        p = dt_put_u64(p, qd == DT_DELTA_UNKNOWN || qd > st ? 0 : st - qd);
        *p++ = ',';
        p = put_device_args(c, p, r);
        uint32_t tl;
        const char *tail = kernel_tail(c, r->device, r->u.kernel.config, &tl);
        if (!tail)
            return -1;
        p = copy_padded(p, tail, tl);
        break;
    }
    case DT_EVENT_MEMCPY:
        p = put_external(c, p, r);
        p = put_device_args(c, p, r);
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt_put_u64(p, r->u.memcpy.bytes);
        p = put_bandwidth(p, r->u.memcpy.bytes, dur);
        DT_PUT_LIT(p, ",\"copy kind\":\"");
        p = put_str(p, copy_kind_name(r->u.memcpy.copy_kind));
        DT_PUT_LIT(p, "\"}}");
        break;
    case DT_EVENT_MEMSET:
        p = put_external(c, p, r);
        p = put_device_args(c, p, r);
        DT_PUT_LIT(p, ",\"bytes\":");
        p = dt_put_u64(p, r->u.memset.bytes);
        p = put_bandwidth(p, r->u.memset.bytes, dur);
        DT_PUT_LIT(p, ",\"value\":");
        p = dt_put_u64(p, r->u.memset.value);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        p = put_external(c, p, r);
        DT_PUT_LIT(p, "\"cbid\":");
        p = dt_put_u64(p, r->u.api.cbid);
        DT_PUT_LIT(p, ",\"correlation\":");
        p = dt_put_u64(p, r->correlation);
        DT_PUT_LIT(p, ",\"return code\":");
        p = dt_put_i64(p, r->u.api.return_code);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_SYNC:
    case DT_EVENT_OVERHEAD:
        p = put_device_args(c, p, r);
        DT_PUT_LIT(p, "}}");
        break;
    case DT_EVENT_COLLECTIVE:
        p = put_external(c, p, r);
        p = put_device_args(c, p, r);
        p = put_collective_args(c, o, p, r, dur);
        break;
    default: /* range */
        if (r->flags & DT_REC_HAS_EXTERNAL) {
            DT_PUT_LIT(p, "\"External id\":");
            p = dt_put_u64(p, r->external_id);
            if (r->flags & DT_REC_HAS_PARENT)
                *p++ = ',';
        }
        if (r->flags & DT_REC_HAS_PARENT) {
            DT_PUT_LIT(p, "\"parent\":");
            p = dt_put_u64(p, r->u.range.parent);
        }
        DT_PUT_LIT(p, "}}");
        break;
    }

    if (c->flow[i]) {
        int finish = (c->flow[i] & FLOW_F) != 0;
        DT_PUT_LIT(p, ",\n{\"ph\":\"");
        *p++ = finish ? 'f' : 's';
        DT_PUT_LIT(p, "\",\"id\":");
        p = dt_put_u64(p, r->correlation);
        *p++ = ',';
        p = copy_padded(p, c->prefix + fr->prefix_off, fr->prefix_len);
        memcpy(p, ts_text, sizeof ts_text);
        p += ts_len;
        if (finish)
            DT_PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
        else
            DT_PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
    }
    dt_out_commit(o, p);
    return 0;
}

/* A named host-side span that carries an External id: an operation pushed
   with a name (cpu_op, the host event its device activity's External id
   resolves to) or a range's span on a device row (gpu_user_annotation). */
#define SPAN_HEAD(cat) ",\n{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":"
static void write_id_span(ctx *c, dt_out *o, const char *head, size_t head_len, uint32_t name,
                          const final_row *fr, uint64_t start, uint64_t end, uint64_t external_id)
{
    char *p = dt_out_reserve(o, DT_OUT_EVENT_ROOM);
    memcpy(p, head, head_len);
    p += head_len;
    if (name < c->name_count)
        p = put_name(o, p, c->names + c->name_off[name], c->name_len[name]);
    else
        DT_PUT_LIT(p, "\"\"");
    *p++ = ',';
    p = copy_padded(p, c->prefix + fr->prefix_off, fr->prefix_len);
    p = dt_put_us3(p, start - c->base_ns);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt_put_us3(p, end - start);
    DT_PUT_LIT(p, ",\"args\":{\"External id\":");
    p = dt_put_u64(p, external_id);
    DT_PUT_LIT(p, "}}");
    dt_out_commit(o, p);
}

static void write_op(ctx *c, dt_out *o, size_t i)
{
    const dt_rec *r = dt_store_at(&c->s->store, i);
    write_id_span(c, o, SPAN_HEAD("cpu_op"), sizeof SPAN_HEAD("cpu_op") - 1, r->name, &c->frows[c->row[i]],
                  rec_start(c, r), rec_end(c, r), r->external_id);
}

static void write_span(ctx *c, dt_out *o, size_t k)
{
    const span *sp = &c->spans[k];
    write_id_span(c, o, SPAN_HEAD("gpu_user_annotation"), sizeof SPAN_HEAD("gpu_user_annotation") - 1, sp->name,
                  &c->frows[c->row[c->n + k]], sp->start, sp->end, sp->external_id);
}

/* Small, rare output (metadata, the devtrace key) goes through these. */
#define put_lit dt_out_text
#define put_u64 dt_out_u64
#define put_i64 dt_out_i64
#define put_cstr dt_out_cstr

static void put_double(dt_out *o, double v)
{
    char tmp[40];
    if (!isfinite(v))
        v = 0;
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    dt_out_write(o, tmp, (size_t)n);
}

static void meta_begin(ctx *c, dt_out *o, const char *what, uint64_t pid, uint64_t tid)
{
    put_lit(o, "{\"ph\":\"M\",\"name\":\"");
    put_lit(o, what);
    put_lit(o, "\",\"pid\":");
    put_u64(o, pid);
    put_lit(o, ",\"tid\":");
    put_u64(o, tid);
    put_lit(o, ",\"ts\":");
    char *p = dt_out_reserve(o, 32);
    dt_out_commit(o, dt_put_us3(p, c->window_start - c->base_ns));
    put_lit(o, ",\"args\":{");
}

static void write_process_meta(ctx *c, dt_out *o, uint64_t pid, const char *name,
                               const char *label, uint64_t sort_index)
{
    meta_begin(c, o, "process_name", pid, 0);
    put_lit(o, "\"name\":");
    put_cstr(o, name);
    put_lit(o, "}},\n");
    if (label) {
        meta_begin(c, o, "process_labels", pid, 0);
        put_lit(o, "\"labels\":");
        put_cstr(o, label);
        put_lit(o, "}},\n");
    }
    meta_begin(c, o, "process_sort_index", pid, 0);
    put_lit(o, "\"sort_index\":");
    put_u64(o, sort_index);
    put_lit(o, "}},\n");
}

/* "thread <tid> (<name>)": the name the session captured while the thread
   lived, else, when the trace is written by the traced process itself and
   the thread still lives, its name now. */
static int host_thread_name(const dt_session *s, char *buf, size_t size, uint32_t pid, uint32_t tid)
{
    char comm[64] = "";
    const char *seen = pid == s->pid ? dt_session_thread_name(s, tid) : NULL;
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
   process first, other host pids, then devices. k counts from 0; 0 when
   there are no more. Shared by every writer (layout.h). */
static int trace_process(ctx *c, size_t *cursor, dt_layout_process *out)
{
    const dt_session *s = c->s;
    const char *pname = s->process_name[0] ? s->process_name : "process";
    if (*cursor == 0) {
        uint64_t main_pid = host_pid(c, s->pid);
        memset(out, 0, sizeof *out);
        out->pid = main_pid;
        out->sort_index = main_pid < HOST_SORT_LIMIT ? main_pid : HOST_SORT_LIMIT;
        snprintf(out->name, sizeof out->name, "%s", pname);
        (*cursor)++;
        return 1;
    }
    for (size_t b = *cursor - 1; b < c->nbrows; b++) {
        const base_row *br = &c->brows[b];
        *cursor = b + 2;
        int seen = 0;
        for (size_t k = 0; k < b && !seen; k++)
            seen = c->brows[k].cls == br->cls && c->brows[k].pid == br->pid;
        if (seen)
            continue;
        if (br->cls == ROW_HOST) {
            if (br->pid == s->pid)
                continue;
            uint64_t pid = host_pid(c, br->pid);
            memset(out, 0, sizeof *out);
            out->pid = pid;
            out->sort_index = pid < HOST_SORT_LIMIT ? pid : HOST_SORT_LIMIT;
            snprintf(out->name, sizeof out->name, "process %u", br->pid);
            return 1;
        }
        /* a device seen through both device and annotation rows once */
        int dup = 0;
        for (size_t k = 0; k < b && !dup; k++)
            dup = c->brows[k].cls != ROW_HOST && c->brows[k].pid == br->pid;
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

/* The name of final row f, as every writer names it. */
static void row_name(ctx *c, size_t f, char *buf, size_t size)
{
    const final_row *fr = &c->frows[f];
    const base_row *br = &c->brows[fr->base];
    int n;
    if (br->cls == ROW_HOST)
        n = host_thread_name(c->s, buf, size, br->pid, br->lane);
    else if (br->cls == ROW_DEVICE)
        n = snprintf(buf, size, "stream %u", br->lane);
    else
        n = snprintf(buf, size, "stream %u annotations", br->lane);
    if (n < 0 || (size_t)n >= size)
        n = (int)strlen(buf);
    if (fr->level > 0)
        snprintf(buf + n, size - (size_t)n, " (overlap %u)", fr->level);
}

/* Whether the capture window's own row (tid 0 of the recording process) is
   free for the "devtrace capture" event's name. */
static int capture_row_free(ctx *c)
{
    uint64_t main_pid = host_pid(c, c->s->pid);
    for (size_t f = 0; f < c->nfrows; f++)
        if (c->frows[f].pid == main_pid && c->frows[f].tid == 0)
            return 0;
    return 1;
}

static void write_metadata(ctx *c, dt_out *o)
{
    const dt_session *s = c->s;
    char buf[384];
    dt_layout_process proc;
    size_t cursor = 0;
    while (trace_process(c, &cursor, &proc))
        write_process_meta(c, o, proc.pid, proc.name, proc.label, proc.sort_index);
    for (size_t f = 0; f < c->nfrows; f++) {
        row_name(c, f, buf, sizeof buf);
        meta_begin(c, o, "thread_name", c->frows[f].pid, c->frows[f].tid);
        put_lit(o, "\"name\":");
        put_cstr(o, buf);
        put_lit(o, "}},\n");
    }
    uint64_t main_pid = host_pid(c, s->pid);
    if (capture_row_free(c)) {
        meta_begin(c, o, "thread_name", main_pid, 0);
        put_lit(o, "\"name\":\"devtrace capture\"}},\n");
    }
    /* the list is followed by events, each written with a leading comma */
    meta_begin(c, o, "thread_sort_index", main_pid, 0);
    put_lit(o, "\"sort_index\":0}}");
}

static void write_device_properties(const dt_session *s, dt_out *o)
{
    char buf[2048];
    int first = 1;
    put_lit(o, "[");
    for (int d = 0; d < DT_MAX_DEVICES; d++) {
        if (!s->devices[d].valid)
            continue;
        put_lit(o, first ? "\n  " : ",\n  ");
        first = 0;
        size_t n = dt_device_props_json(&s->devices[d], buf, sizeof buf);
        dt_out_write(o, buf, n < sizeof buf ? n : sizeof buf - 1);
    }
    put_lit(o, "]");
}

/* The session's count plus the records the exporter could not place,
   which count like the session's drops. */
static uint64_t loss_value(const ctx *c, dt_loss_reason r)
{
    uint64_t v = atomic_load_explicit((_Atomic uint64_t *)&c->s->loss[r], memory_order_relaxed);
    if (r == DT_LOSS_OUTSIDE_WINDOW)
        v += c->dropped_window;
    else if (r == DT_LOSS_UNKNOWN_KIND)
        v += c->dropped_kind;
    else if (r == DT_LOSS_TIMESTAMP_REVERSED)
        v += c->dropped_reversed;
    return v;
}

static void write_devtrace_key(ctx *c, dt_out *o)
{
    const dt_session *s = c->s;
    const dt_backend *be = s->backend;
    put_lit(o, "\"devtrace\": {\n  \"version\": ");
    put_cstr(o, DT_VERSION_STRING);
    put_lit(o, ",\n  \"backend\": ");
    put_cstr(o, be && be->name ? be->name : "none");
    put_lit(o, ",\n  \"vendor\": ");
    put_cstr(o, be && be->vendor ? be->vendor : "");
    put_lit(o, ",\n  \"library\": ");
    dt_out_string(o, s->backend_library, strnlen(s->backend_library, sizeof s->backend_library));
    put_lit(o, ",\n  \"libraryVersion\": ");
    dt_out_string(o, s->backend_version, strnlen(s->backend_version, sizeof s->backend_version));
    dt_json_origin(o, s);
    put_lit(o, ",\n  \"captureWindow\": {\"startNs\": ");
    put_u64(o, c->window_start);
    put_lit(o, ", \"endNs\": ");
    put_u64(o, c->window_end);
    put_lit(o, "},\n  \"clock\": {\"samples\": ");
    put_u64(o, s->clock.count);
    put_lit(o, ", \"segments\": ");
    put_u64(o, s->clock.segments);
    put_lit(o, ", \"slope\": ");
    put_double(o, s->clock.slope);
    put_lit(o, ", \"offsetNs\": ");
    put_double(o, s->clock.offset_ns);
    put_lit(o, ", \"errorBoundNs\": ");
    put_u64(o, s->clock.error_bound_ns);
    put_lit(o, ", \"identity\": ");
    put_lit(o, s->clock.identity ? "true" : "false");

    put_lit(o, "},\n  \"loss\": {");
    uint64_t total = 0;
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        uint64_t v = loss_value(c, (dt_loss_reason)r);
        total += v;
        put_lit(o, r ? ", \"" : "\"");
        put_lit(o, dt_loss_reason_name((dt_loss_reason)r));
        put_lit(o, "\": ");
        put_u64(o, v);
    }
    put_lit(o, ", \"total\": ");
    put_u64(o, total);

    static const char *const kind_keys[DT_EVENT_KIND_MAX + 1] = {
        NULL, "kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "range", "op", "collective", "memory"};
    put_lit(o, "},\n  \"counts\": {");
    for (int k = 1; k <= DT_EVENT_KIND_MAX; k++) {
        put_lit(o, k > 1 ? ", \"" : "\"");
        put_lit(o, kind_keys[k]);
        put_lit(o, "\": ");
        put_u64(o, c->kinds[k]);
    }
    put_lit(o, ", \"flows\": ");
    put_u64(o, c->flows);
    put_lit(o, ", \"launches\": ");
    put_u64(o, c->launches);

    put_lit(o, "},\n  \"notes\": {");
    int first = 1;
    for (int k = 0; k < s->note_count && k < DT_MAX_NOTES; k++) {
        int dup = 0;
        for (int j = 0; j < k && !dup; j++)
            dup = strncmp(s->notes[j].key, s->notes[k].key, sizeof s->notes[k].key) == 0;
        if (dup)
            continue;
        put_lit(o, first ? "\n    " : ",\n    ");
        first = 0;
        dt_out_string(o, s->notes[k].key, strnlen(s->notes[k].key, sizeof s->notes[k].key));
        put_lit(o, ": ");
        dt_out_string(o, s->notes[k].text, strnlen(s->notes[k].text, sizeof s->notes[k].text));
    }
    if (c->host_pid_shifted) {
        char buf[256];
        snprintf(buf, sizeof buf,
                 "a host process id equal to a device id is written as that id + %llu",
                 (unsigned long long)HOST_PID_SHIFT);
        put_lit(o, first ? "\n    " : ",\n    ");
        first = 0;
        put_lit(o, "\"hostPid\": ");
        put_cstr(o, buf);
    }
    put_lit(o, "},\n  \"attribution\": {");
    for (size_t k = 0; k < c->nattr; k++) {
        put_lit(o, k ? ",\n    \"" : "\n    \"");
        put_u64(o, c->attr[k].external_id);
        put_lit(o, "\": ");
        put_u64(o, c->attr[k].ns);
    }
    put_lit(o, "},\n  \"externalParents\": {");
    for (size_t k = 0; k < c->nparents; k++) {
        put_lit(o, k ? ",\n    \"" : "\n    \"");
        put_u64(o, c->parents[k].external_id);
        put_lit(o, "\": ");
        put_u64(o, c->parents[k].range_id);
    }
    put_lit(o, "}\n}");
}

static void write_trace(ctx *c, dt_out *o, const char *path)
{
    const dt_session *s = c->s;
    put_lit(o, "{\n\"schemaVersion\": 1,\n");
    dt_json_distributed_info(o, s);
    put_lit(o, "\"deviceProperties\": ");
    write_device_properties(s, o);
    put_lit(o, ",\n\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ");
    put_u64(o, c->base_ns);
    put_lit(o, ",\n\"traceEvents\": [\n");
    write_metadata(c, o);

    /* the capture window: the Trace event on its own row */
    char *p = dt_out_reserve(o, DT_OUT_EVENT_ROOM);
    DT_PUT_LIT(p, ",\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace capture\",\"pid\":");
    p = dt_put_u64(p, host_pid(c, s->pid));
    DT_PUT_LIT(p, ",\"tid\":0,\"ts\":");
    p = dt_put_us3(p, c->window_start - c->base_ns);
    DT_PUT_LIT(p, ",\"dur\":");
    p = dt_put_us3(p, c->window_end - c->window_start);
    DT_PUT_LIT(p, ",\"args\":{}}");
    dt_out_commit(o, p);

    for (size_t k = 0; k < c->items; k++) {
        uint32_t i = c->perm[k];
        /* rows gather events from all over the store: fetch ahead */
        if (k + PREFETCH_AHEAD < c->items)
            prefetch_item(c, c->perm[k + PREFETCH_AHEAD]);
        if (i < c->n) {
            if (write_record(c, o, i) != 0) {
                if (o->err == 0)
                    o->err = ENOMEM;
                return;
            }
        } else {
            write_span(c, o, i - c->n);
        }
        if (o->err)
            return;
    }
    put_lit(o, "\n],\n");
    write_devtrace_key(c, o);
    put_lit(o, ",\n\"traceName\": ");
    put_cstr(o, path);
    put_lit(o, "\n}\n");
}

static int write_file(void *arg, dt_out *o)
{
    ctx *c = arg;
    uint64_t t = dt_monotonic_ns();
    write_trace(c, o, c->path);
    c->bytes = o->bytes;
    c->phase_ns[PHASE_WRITE] = dt_monotonic_ns() - t;
    return o->err;
}

static void ctx_free(ctx *c)
{
    dt_free(c->row);
    dt_free(c->perm);
    dt_free(c->flow);
    dt_free(c->brows);
    for (int k = 0; k < 3; k++)
        idmap_free(&c->rowmap[k]);
    dt_free(c->frows);
    dt_free(c->prefix);
    dt_free(c->spans);
    idmap_free(&c->corrmap);
    dt_free(c->pairs);
    idmap_free(&c->attrmap);
    dt_free(c->attr);
    idmap_free(&c->rangemap);
    idmap_free(&c->parentmap);
    idmap_free(&c->memmap);
    dt_free(c->mem);
    dt_free(c->parents);
    dt_free(c->names);
    dt_free(c->name_off);
    dt_free(c->name_len);
    if (c->kcache)
        for (int k = 0; k <= DT_MAX_DEVICES; k++)
            dt_free(c->kcache[k]);
    dt_free(c->kcache);
    dt_free(c->kfrag);
}

static int prepare(ctx *c)
{
    c->n = c->s->store.count;
    if (c->n >= UINT32_MAX / 2)
        return -1;
    c->row = dt_malloc((c->n + 1) * sizeof *c->row);
    c->flow = dt_calloc(c->n + 1, 1);
    c->kcache = dt_calloc(DT_MAX_DEVICES + 1, sizeof *c->kcache);
    if (!c->row || !c->flow || !c->kcache)
        return -1;
    for (int k = 0; k < 3; k++)
        if (idmap_init(&c->rowmap[k], 64) != 0)
            return -1;
    if (idmap_init(&c->attrmap, 1024) != 0 ||
        idmap_init(&c->rangemap, 64) != 0 || idmap_init(&c->parentmap, 64) != 0)
        return -1;
    uint64_t t = dt_monotonic_ns();
    if (classify(c) != 0)
        return -1;
    if (c->kinds[DT_EVENT_MEMORY] && memory_totals(c) != 0)
        return -1;
    c->phase_ns[PHASE_CLASSIFY] = dt_monotonic_ns() - t;
    t += c->phase_ns[PHASE_CLASSIFY];
    if (build_spans(c) != 0)
        return -1;
    c->phase_ns[PHASE_SPANS] = dt_monotonic_ns() - t;
    /* both maps have served their purpose; free them before the big arrays */
    idmap_free(&c->corrmap);
    dt_free(c->pairs);
    c->pairs = NULL;
    c->items = c->n + c->nspans;
    uint32_t *row = dt_realloc(c->row, (c->items + 1) * sizeof *c->row);
    if (!row)
        return -1;
    c->row = row;
    c->perm = dt_malloc((c->items + 1) * sizeof *c->perm);
    if (!c->perm)
        return -1;
    t = dt_monotonic_ns();
    if (assign_rows(c) != 0)
        return -1;
    c->phase_ns[PHASE_ROWS] = dt_monotonic_ns() - t;
    t += c->phase_ns[PHASE_ROWS];
    if (escape_names(c) != 0)
        return -1;
    c->phase_ns[PHASE_NAMES] = dt_monotonic_ns() - t;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The layout for other writers (layout.h)                             */
/* ------------------------------------------------------------------ */
struct dt_layout {
    ctx c;
};

dt_layout *dt_layout_build(const dt_session *s)
{
    dt_layout *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->c.s = s;
    l->c.api_prefix = s->backend && s->backend->api_category ? s->backend->api_category : "privateuse1";
    if (prepare(&l->c) != 0) {
        dt_layout_free(l);
        return NULL;
    }
    return l;
}

void dt_layout_free(dt_layout *l)
{
    if (!l)
        return;
    ctx_free(&l->c);
    free(l);
}

size_t dt_layout_row_count(const dt_layout *l)
{
    return l->c.nfrows;
}

void dt_layout_row_get(dt_layout *l, size_t f, dt_layout_row *out)
{
    const final_row *fr = &l->c.frows[f];
    const base_row *br = &l->c.brows[fr->base];
    out->cls = br->cls == ROW_HOST ? DT_LAYOUT_HOST : br->cls == ROW_DEVICE ? DT_LAYOUT_DEVICE : DT_LAYOUT_ANNOT;
    out->id = br->pid;
    out->lane = br->lane;
    out->level = fr->level;
    out->pid = fr->pid;
    out->tid = fr->tid;
    row_name(&l->c, f, out->name, sizeof out->name);
}

int dt_layout_next_process(dt_layout *l, size_t *cursor, dt_layout_process *out)
{
    return trace_process(&l->c, cursor, out);
}

uint64_t dt_layout_main_pid(dt_layout *l)
{
    return host_pid(&l->c, l->c.s->pid);
}

int dt_layout_capture_row_free(dt_layout *l)
{
    return capture_row_free(&l->c);
}

size_t dt_layout_item_count(const dt_layout *l)
{
    return l->c.items;
}

void dt_layout_prefetch(const dt_layout *l, size_t k)
{
    if (k < l->c.items)
        prefetch_item(&l->c, l->c.perm[k]);
}

void dt_layout_item_get(const dt_layout *l, size_t k, dt_layout_item *out)
{
    const ctx *c = &l->c;
    uint32_t i = c->perm[k];
    out->row = c->row[i];
    item_times(c, i, &out->start, &out->end);
    if (i < c->n) {
        out->rec = dt_store_at(&c->s->store, i);
        out->flow = (c->flow[i] & FLOW_S ? DT_LAYOUT_FLOW_START : 0) | (c->flow[i] & FLOW_F ? DT_LAYOUT_FLOW_FINISH : 0);
        out->name = out->rec->name;
        out->external_id = out->rec->external_id;
    } else {
        const span *sp = &c->spans[i - c->n];
        out->rec = NULL;
        out->flow = 0;
        out->name = sp->name;
        out->external_id = sp->external_id;
    }
}

void dt_layout_window(const dt_layout *l, uint64_t *start, uint64_t *end)
{
    *start = l->c.window_start;
    *end = l->c.window_end;
}

uint64_t dt_layout_kind_count(const dt_layout *l, int kind)
{
    return kind >= 1 && kind <= DT_EVENT_KIND_MAX ? l->c.kinds[kind] : 0;
}

uint64_t dt_layout_flow_count(const dt_layout *l)
{
    return l->c.flows;
}

uint64_t dt_layout_loss(const dt_layout *l, dt_loss_reason reason)
{
    return loss_value(&l->c, reason);
}

size_t dt_layout_attribution_count(const dt_layout *l)
{
    return l->c.nattr;
}

void dt_layout_attribution_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *ns)
{
    *external_id = l->c.attr[k].external_id;
    *ns = l->c.attr[k].ns;
}

size_t dt_layout_parent_count(const dt_layout *l)
{
    return l->c.nparents;
}

void dt_layout_parent_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *range_id)
{
    *external_id = l->c.parents[k].external_id;
    *range_id = l->c.parents[k].range_id;
}

int dt_layout_host_pid_shifted(const dt_layout *l)
{
    return l->c.host_pid_shifted;
}

const char *dt_layout_api_prefix(const dt_layout *l)
{
    return l->c.api_prefix;
}

void dt_layout_kernel_get(dt_layout *l, unsigned device, uint32_t config, dt_layout_kernel *out)
{
    memset(out, 0, sizeof *out);
    if (config < l->c.s->launches.count)
        out->config = l->c.s->launches.configs[config];
    const dt_device_props *d = device < DT_MAX_DEVICES ? &l->c.s->devices[device] : NULL;
    occupancy o = compute_occupancy(d, &out->config);
    out->occupancy_valid = o.valid;
    out->blocks_per_sm_e6 = o.blocks_per_sm_e6;
    out->warps_per_sm_e6 = o.warps_per_sm_e6;
    out->occupancy_pct = o.occupancy_pct;
}

const char *dt_layout_copy_kind_name(unsigned kind)
{
    return copy_kind_name(kind);
}

const dt_layout_memory *dt_layout_memory_get(const dt_layout *l, size_t k)
{
    return memory_of(&l->c, l->c.perm[k]);
}

const char *dt_layout_memory_kind_name(unsigned kind)
{
    return memory_kind_name(kind);
}

dt_status dt_export_chrome(const dt_session *s, const char *path, dt_format format)
{
    if (!s || !path || !*path)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_export_chrome: %s is NULL or empty",
                        !s ? "session" : "path");
    if (format != DT_FORMAT_JSON && format != DT_FORMAT_JSON_GZ)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "unknown trace format %d", (int)format);
    if (s->state != DT_STATE_STOPPED)
        return dt_error(DT_ERR_STATE, "the session must be stopped before its trace is written");

    /* large (row caches, a bitmap): kept off the caller's stack */
    ctx *c = dt_calloc(1, sizeof *c);
    if (!c)
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    c->s = s;
    c->path = path;
    c->api_prefix = s->backend && s->backend->api_category ? s->backend->api_category : "privateuse1";
    if (prepare(c) != 0) {
        ctx_free(c);
        dt_free(c);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while preparing the trace %s", path);
    }
    int err = dt_write_file_atomic(path, format == DT_FORMAT_JSON_GZ, write_file, c);
    uint64_t bytes = c->bytes;
    if (err == 0)
        dt_log("wrote %s in %.3f s: classify %.3f, annotation spans %.3f, rows %.3f, names %.3f, "
               "format and write %.3f",
               path, (double)(c->phase_ns[0] + c->phase_ns[1] + c->phase_ns[2] + c->phase_ns[3] + c->phase_ns[4]) * 1e-9,
               (double)c->phase_ns[PHASE_CLASSIFY] * 1e-9, (double)c->phase_ns[PHASE_SPANS] * 1e-9,
               (double)c->phase_ns[PHASE_ROWS] * 1e-9, (double)c->phase_ns[PHASE_NAMES] * 1e-9,
               (double)c->phase_ns[PHASE_WRITE] * 1e-9);
    ctx_free(c);
    dt_free(c);
    if (err == ENOMEM)
        return dt_error(DT_ERR_NO_MEMORY, "out of memory while writing the trace %s", path);
    if (err != 0)
        return dt_error(DT_ERR_IO, "cannot write trace %s: %s", path, strerror(err));
    dt_log("wrote %s: %llu bytes of JSON, %llu events", path, (unsigned long long)bytes,
           (unsigned long long)s->store.count);
    return DT_OK;
}
