/* Correlation: the per-thread external-correlation stack (host operations
   and user ranges), the links from vendor correlation ids to external ids,
   and the map that resolves them at stop. */
#include "dt_internal.h"
#include "backends/backend.h"

#include <stdlib.h>
#include <string.h>

/* ---- u64 -> u64 map ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

int dt_corr_map_init(dt_corr_map *m, size_t hint)
{
    size_t cap = 64;
    while (cap < hint * 2) cap *= 2;
    memset(m, 0, sizeof *m);
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) return -1;
    m->mask = cap - 1;
    return 0;
}

void dt_corr_map_free(dt_corr_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static void corr_map_insert(dt_corr_map *m, uint64_t key, uint64_t value)
{
    size_t i = mix64(key) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) { m->slots[i].value = value; return; }
        i = (i + 1) & m->mask;
    }
    m->slots[i].key = key;
    m->slots[i].value = value;
    m->count++;
}

int dt_corr_map_reserve(dt_corr_map *m, size_t entries)
{
    if (m->slots && (entries + 1) * 4 <= (m->mask + 1) * 3) return 0;
    dt_corr_map n;
    if (dt_corr_map_init(&n, entries) != 0) return -1;
    for (size_t i = 0; m->slots && i <= m->mask; i++)
        if (m->slots[i].key) corr_map_insert(&n, m->slots[i].key, m->slots[i].value);
    dt_corr_map_free(m);
    *m = n;
    return 0;
}

int dt_corr_map_put(dt_corr_map *m, uint64_t key, uint64_t value)
{
    if (!m->slots) return -1;
    if (key == 0) return 0;
    if ((m->count + 1) * 4 > (m->mask + 1) * 3 && dt_corr_map_reserve(m, (m->mask + 1)) != 0) return -1;
    corr_map_insert(m, key, value);
    return 0;
}

int dt_corr_map_get(const dt_corr_map *m, uint64_t key, uint64_t *value)
{
    if (!m->slots || key == 0) return 0;
    size_t i = mix64(key) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) { *value = m->slots[i].value; return 1; }
        i = (i + 1) & m->mask;
    }
    return 0;
}

/* ---- the per-thread stack ---- */

typedef struct stack_entry {
    uint64_t id;
    uint64_t range;          /* innermost range at or below this entry */
    uint64_t start_ns;       /* ranges */
    uint64_t generation;     /* session that saw the push, 0 if none */
    uint32_t name;           /* ranges: interned in that session */
    uint8_t is_range;
    uint8_t has_range;       /* range is valid */
    uint8_t vendor_pushed;   /* the backend's push_external succeeded */
} stack_entry;

#define STACK_INLINE 32
static _Thread_local stack_entry tls_inline[STACK_INLINE];
static _Thread_local stack_entry *tls_stack = NULL;
static _Thread_local size_t tls_depth, tls_cap;

static int stack_push(stack_entry e)
{
    if (e.is_range) {
        e.range = e.id;
        e.has_range = 1;
    } else if (tls_depth) {
        e.range = tls_stack[tls_depth - 1].range;
        e.has_range = tls_stack[tls_depth - 1].has_range;
    }
    if (!tls_stack) { tls_stack = tls_inline; tls_cap = STACK_INLINE; }
    if (tls_depth == tls_cap) {
        size_t cap = tls_cap * 2;
        stack_entry *n = malloc(cap * sizeof *n);
        if (!n) return -1;
        memcpy(n, tls_stack, tls_depth * sizeof *n);
        if (tls_stack != tls_inline) free(tls_stack);
        tls_stack = n;
        tls_cap = cap;
    }
    tls_stack[tls_depth++] = e;
    return 0;
}

static _Atomic uint64_t next_range_id = DT_RANGE_ID_BASE;

dt_status dt_external_top(uint64_t *id)
{
    if (tls_depth == 0) return dt_error(DT_ERR_EMPTY_STACK, "the external-correlation stack of this thread is empty");
    if (id) *id = tls_stack[tls_depth - 1].id;
    return DT_OK;
}

/* Give the id to the vendor's own stack too, where it has one. When the
   vendor refuses it (its stack is shallower than devtrace's, or it failed),
   its records would carry the enclosing id for work launched at this depth:
   the backend attributes that work through the API-enter callback instead
   (dt_corr_link_current then links it), or, where it cannot, the trace says
   that External ids are missing for such work. */
static void vendor_push(stack_entry *e)
{
    dt_session *s = dt_active_session();
    if (!s) return;
    e->generation = s->generation;
    const dt_backend *b = s->backend;
    if (!b || !b->push_external) return;
    dt_status st = b->push_external(e->id);
    if (st == DT_OK) {
        e->vendor_pushed = 1;
        return;
    }
    if (st == DT_ERR_BACKEND_UNAVAILABLE) return; /* no stack of its own: API-enter links only */
    if (b->attribute_by_api_enter && b->attribute_by_api_enter() == DT_OK) return;
    dt_session_note(s, "external_ids",
                    "the %s library refused External ids that devtrace could not attribute otherwise "
                    "(no API callbacks): device work launched inside them carries no External id",
                    b->name);
    /* Work launched now would carry the vendor's innermost id, which is not
       the innermost one: nothing is better than a wrong id. */
    atomic_store_explicit(&s->external_unreliable, 1, memory_order_relaxed);
}

static void vendor_pop(const stack_entry *e)
{
    if (!e->vendor_pushed) return;
    dt_session *s = dt_active_session();
    if (s && s->generation == e->generation && s->backend && s->backend->pop_external)
        s->backend->pop_external();
}

static void note_parent_range(uint64_t id);

dt_status dt_external_push(uint64_t id)
{
    stack_entry e = {.id = id};
    vendor_push(&e);
    if (stack_push(e) != 0) {
        vendor_pop(&e);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory growing the external-correlation stack");
    }
    note_parent_range(id);
    return DT_OK;
}

dt_status dt_external_pop(uint64_t *id)
{
    if (tls_depth == 0) return dt_error(DT_ERR_EMPTY_STACK, "dt_external_pop: the external-correlation stack of this thread is empty");
    stack_entry e = tls_stack[--tls_depth];
    vendor_pop(&e);
    if (id) *id = e.id;
    return DT_OK;
}

dt_status dt_range_push(const char *name, uint64_t *range_id)
{
    stack_entry e = {.id = atomic_fetch_add(&next_range_id, 1), .is_range = 1};
    dt_session *s = dt_active_session();
    if (s) {
        dt_session_lock(s);
        uint32_t nid = dt_intern_str(&s->names, name ? name : "");
        dt_session_unlock(s);
        if (nid != UINT32_MAX) {
            e.name = nid;
            e.start_ns = dt_realtime_ns();
        }
    }
    vendor_push(&e);
    if (e.start_ns == 0) e.generation = 0; /* not recordable: no name */
    if (stack_push(e) != 0) {
        vendor_pop(&e);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory growing the external-correlation stack");
    }
    if (range_id) *range_id = e.id;
    return DT_OK;
}

dt_status dt_range_pop(void)
{
    if (tls_depth == 0) return dt_error(DT_ERR_EMPTY_STACK, "dt_range_pop: no range is open on this thread");
    if (!tls_stack[tls_depth - 1].is_range)
        return dt_error(DT_ERR_STATE, "dt_range_pop: the innermost entry is an external id pushed with dt_external_push; pop it with dt_external_pop first");
    uint64_t end = dt_realtime_ns();
    stack_entry e = tls_stack[--tls_depth];
    vendor_pop(&e);
    dt_session *s = dt_active_session();
    if (!s || e.generation == 0 || s->generation != e.generation) return DT_OK;
    dt_session_lock(s);
    dt_rec *r = dt_session_add(s);
    if (r) {
        r->kind = DT_EVENT_RANGE;
        r->flags = DT_REC_REALTIME | DT_REC_HAS_EXTERNAL;
        r->start = e.start_ns;
        r->end = end;
        r->external_id = e.id;
        r->name = e.name;
        r->lane = dt_thread_id();
        r->context = s->pid;
        if (tls_depth) {
            r->flags |= DT_REC_HAS_PARENT;
            r->u.range.parent = tls_stack[tls_depth - 1].id;
        }
    }
    dt_session_unlock(s);
    return DT_OK;
}

/* ---- links from the API-enter path, per thread, merged at stop ---- */

#define CORR_CHUNK 4096
struct dt_corr_chunk {
    dt_corr_chunk *next;
    _Atomic uint32_t n;
    uint64_t pairs[2 * CORR_CHUNK];
};

/* A per-thread log of pairs: appended without locks, chained onto a list
   of the session's, read at stop. */
typedef struct pair_log {
    dt_corr_chunk *chunk;
    uint64_t generation;
} pair_log;

static void log_pair(pair_log *log, dt_corr_chunk **session_head, uint64_t generation, uint64_t a,
                     uint64_t b)
{
    dt_corr_chunk *c = log->chunk;
    uint32_t n;
    if (!c || log->generation != generation ||
        (n = atomic_load_explicit(&c->n, memory_order_relaxed)) == CORR_CHUNK) {
        c = malloc(sizeof *c);
        if (!c) return;
        atomic_init(&c->n, 0);
        n = 0;
        _Atomic(dt_corr_chunk *) *head = (_Atomic(dt_corr_chunk *) *)session_head;
        dt_corr_chunk *old = atomic_load(head);
        do { c->next = old; } while (!atomic_compare_exchange_weak(head, &old, c));
        log->chunk = c;
        log->generation = generation;
    }
    c->pairs[2 * n] = a;
    c->pairs[2 * n + 1] = b;
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

static _Thread_local pair_log tls_links, tls_parents;

void dt_corr_link_current(uint64_t correlation)
{
    if (tls_depth == 0) return;
    const stack_entry *top = &tls_stack[tls_depth - 1];
    if (top->vendor_pushed) return;
    uint64_t id = top->id;
    dt_session *s = dt_active_session();
    if (!s) return;
    log_pair(&tls_links, &s->corr_chunks, s->generation, correlation, id);
}

/* An operation pushed inside a user range: remember the range, so that the
   range's device time includes the operation's. */
static void note_parent_range(uint64_t id)
{
    const stack_entry *e = &tls_stack[tls_depth - 1];
    if (!e->has_range) return;
    dt_session *s = dt_active_session();
    if (!s) return;
    log_pair(&tls_parents, &s->parent_chunks, s->generation, id + 1, e->range);
}

int dt_external_parent_range(const dt_session *s, uint64_t id, uint64_t *range)
{
    return id != UINT64_MAX && dt_corr_map_get(&s->ext_parents, id + 1, range);
}

void dt_corr_link(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    if (s->corr_log_count == s->corr_log_cap) {
        size_t cap = s->corr_log_cap ? s->corr_log_cap * 2 : 65536;
        uint64_t *p = realloc(s->corr_log, cap * 2 * sizeof *p);
        if (!p) {
            if (dt_corr_map_put(&s->corr, correlation, external_id) != 0)
                dt_session_note(s, "correlation", "out of memory: some External ids are missing");
            return;
        }
        s->corr_log = p;
        s->corr_log_cap = cap;
    }
    s->corr_log[2 * s->corr_log_count] = correlation;
    s->corr_log[2 * s->corr_log_count + 1] = external_id;
    s->corr_log_count++;
}

static void corr_put(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    if (dt_corr_map_put(&s->corr, correlation, external_id) != 0)
        dt_session_note(s, "correlation", "out of memory: some External ids are missing");
}

static void merge_parents(dt_session *s, int keep)
{
    _Atomic(dt_corr_chunk *) *head = (_Atomic(dt_corr_chunk *) *)&s->parent_chunks;
    dt_corr_chunk *c = atomic_exchange(head, NULL);
    while (c) {
        dt_corr_chunk *next = c->next;
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; keep && i < n; i++)
            if (dt_corr_map_put(&s->ext_parents, c->pairs[2 * i], c->pairs[2 * i + 1]) != 0)
                dt_session_note(s, "correlation", "out of memory: some ranges miss their operations' device time");
        free(c);
        c = next;
    }
}

/* Called by the session at stop (lock held), and at destroy. */
DT_HIDDEN void dt_corr_merge_chunks(dt_session *s, int keep);
void dt_corr_merge_chunks(dt_session *s, int keep)
{
    merge_parents(s, keep);
    _Atomic(dt_corr_chunk *) *head = (_Atomic(dt_corr_chunk *) *)&s->corr_chunks;
    dt_corr_chunk *c = atomic_exchange(head, NULL);
    if (keep) {
        /* size the map once rather than rehashing as it grows */
        size_t total = s->corr.count + s->corr_log_count;
        for (dt_corr_chunk *k = c; k; k = k->next) total += atomic_load(&k->n);
        dt_corr_map_reserve(&s->corr, total);
        if (atomic_load_explicit(&s->external_unreliable, memory_order_relaxed)) {
            if (s->corr_log_count)
                dt_session_note(s, "external_ids", "%zu External ids the vendor reported were not used",
                                s->corr_log_count);
        } else {
            for (size_t i = 0; i < s->corr_log_count; i++)
                corr_put(s, s->corr_log[2 * i], s->corr_log[2 * i + 1]);
        }
    }
    /* The links of the API-enter path come last: where both exist, devtrace's
       own stack was the truth. */
    free(s->corr_log);
    s->corr_log = NULL;
    s->corr_log_count = s->corr_log_cap = 0;
    while (c) {
        dt_corr_chunk *next = c->next;
        if (keep) {
            uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++)
                corr_put(s, c->pairs[2 * i], c->pairs[2 * i + 1]);
        }
        free(c);
        c = next;
    }
}
