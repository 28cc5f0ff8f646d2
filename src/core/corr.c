/* Correlation: the per-thread external-correlation stack (host operations
   and user ranges), the links from vendor correlation ids to external ids,
   and the map that resolves them at stop. */
#include "base/alloc.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/os.h"
#include "core/contract.h"
#include "core/corr.h"
#include "core/session_impl.h"
#include "core/steps.h"

#include <stdlib.h>
#include <string.h>

/* Link key to value in a map of the session's; key 0 means "no
   correlation" and is never stored. -1 when out of memory. */
static int map_put(dt_u64map *m, uint64_t key, uint64_t value)
{
    if (key == 0) return 0;
    uint64_t *slot = dt__u64map_slot(m, key, NULL);
    if (!slot) return -1;
    *slot = value;
    return 0;
}

/* ---- the per-thread stack ---- */

typedef struct stack_entry {
    uint64_t id;
    uint64_t range;          /* innermost range at or below this entry */
    uint64_t start_ns;       /* ranges */
    uint64_t generation;     /* session that saw the push, 0 if none */
    uint32_t name;           /* ranges and ops: interned in that session */
    uint8_t is_range;
    uint8_t is_op;           /* pushed with a name by dt_op_push */
    uint8_t has_range;       /* range is valid */
    uint8_t vendor_pushed;   /* the backend's push_external succeeded */
    uint8_t unheld;          /* pushed while the session waited for its vendor */
} stack_entry;

#define STACK_INLINE 32

/* A per-thread log of pairs: appended without locks, chained onto a list
   of the session's, read at stop. */
typedef struct pair_log {
    dt_corr_chunk *chunk;
    uint64_t generation;
} pair_log;

/* All of a thread's state in one thread-local object: in a shared library
   each thread-local variable costs a call to find it, on every API call. */
typedef struct thread_state {
    stack_entry *stack;
    size_t depth, cap;
    pair_log links, parents;
    uint64_t noted_generation;   /* session whose dt__thread_note this thread made */
    stack_entry inline_entries[STACK_INLINE];
} thread_state;
static _Thread_local thread_state tls;

/* The address once per call: the compiler would otherwise look it up again
   (a call into the dynamic loader) at each use across a call. */
__attribute__((noinline)) static thread_state *thread_state_get(void)
{
    return &tls;
}

/* dt__thread_note, called once per session from here (its own check costs
   another thread-local lookup). */
static inline void thread_note(thread_state *t, dt_session *s)
{
    if (t->noted_generation == s->sink.generation) return;
    t->noted_generation = s->sink.generation;
    dt__thread_note(s);
}

static int stack_push(thread_state *t, const stack_entry *src)
{
    if (!t->stack) { t->stack = t->inline_entries; t->cap = STACK_INLINE; }
    if (t->depth == t->cap) {
        size_t cap = t->cap * 2;
        stack_entry *n = dt__malloc(cap * sizeof *n);
        if (!n) return -1;
        memcpy(n, t->stack, t->depth * sizeof *n);
        if (t->stack != t->inline_entries) dt__free(t->stack);
        t->stack = n;
        t->cap = cap;
    }
    /* written in place: the entry is larger than a few registers */
    stack_entry *e = &t->stack[t->depth];
    *e = *src;
    if (e->is_range) {
        e->range = e->id;
        e->has_range = 1;
    } else if (t->depth) {
        e->range = e[-1].range;
        e->has_range = e[-1].has_range;
    }
    t->depth++;
    return 0;
}

static _Atomic uint64_t next_range_id = DT_RANGE_ID_BASE;

uint64_t dt__corr_range_id_next(void)
{
    return atomic_fetch_add(&next_range_id, 1);
}

dt_status dt_external_top(uint64_t *id)
{
    thread_state *t = thread_state_get();
    if (t->depth == 0) return dt__error(DT_ERR_EMPTY_STACK, "the external-correlation stack of this thread is empty");
    if (id) *id = t->stack[t->depth - 1].id;
    return DT_OK;
}

/* Give the id to the vendor's own stack too, where it has one. When the
   vendor refuses it (its stack is shallower than devtrace's, or it failed),
   its records would carry the enclosing id for work launched at this depth:
   the backend attributes that work through the API-enter callback instead
   (dt__corr_link_current then links it), or, where it cannot, the trace says
   that External ids are missing for such work. */
static void vendor_push(dt_session *s, stack_entry *e)
{
    if (!s) return;
    e->generation = s->sink.generation;
    if (atomic_load_explicit(&s->awaiting_vendor, memory_order_relaxed)) {
        /* counted before the second look, so that an attach either sees
           the count or this push sees the attached backend */
        atomic_fetch_add(&s->unheld_entries, 1);
        if (atomic_load(&s->awaiting_vendor)) {
            e->unheld = 1;
            return;
        }
        atomic_fetch_sub(&s->unheld_entries, 1);
    }
    const dt_backend *b = s->backend;
    if (!b || !b->push_external) return;
    dt_status st = b->push_external(b, e->id);
    if (st == DT_OK) {
        e->vendor_pushed = 1;
        return;
    }
    if (st == DT_ERR_BACKEND_UNAVAILABLE) return; /* no stack of its own: API-enter links only */
    if (b->attribute_by_api_enter && b->attribute_by_api_enter(b) == DT_OK) return;
    dt__core_note(s, "external_ids",
                    "the %s library refused External ids that devtrace could not attribute otherwise "
                    "(no API callbacks): device work launched inside them carries no External id",
                    b->name);
    /* Work launched now would carry the vendor's innermost id, which is not
       the innermost one: nothing is better than a wrong id. */
    atomic_store_explicit(&s->external_unreliable, 1, memory_order_relaxed);
}

static void vendor_pop(const stack_entry *e)
{
    if (e->unheld) {
        dt_session *s = dt__active_session();
        if (s && s->sink.generation == e->generation) atomic_fetch_sub(&s->unheld_entries, 1);
    }
    if (!e->vendor_pushed) return;
    dt_session *s = dt__active_session();
    const dt_backend *b = s && s->sink.generation == e->generation ? s->backend : NULL;
    if (b && b->pop_external) b->pop_external(b);
}

static void log_parent_range(thread_state *t, dt_session *s, uint64_t id, uint64_t range);

/* An operation pushed inside a user range: remember the range, so that the
   range's device time includes the operation's. */
static inline void note_parent_range(thread_state *t, dt_session *s, uint64_t id)
{
    const stack_entry *e = &t->stack[t->depth - 1];
    if (e->has_range && s) log_parent_range(t, s, id, e->range);
}

dt_status dt_external_push(uint64_t id)
{
    thread_state *t = thread_state_get();
    dt_session *s = dt__active_session();
    if (s) thread_note(t, s);
    if (t->depth < t->cap) {
        /* room on the stack (the common case): the entry is made in place */
        stack_entry *e = &t->stack[t->depth];
        *e = (stack_entry){.id = id};
        vendor_push(s, e);
        if (t->depth) {
            e->range = e[-1].range;
            e->has_range = e[-1].has_range;
        }
        t->depth++;
        note_parent_range(t, s, id);
        return DT_OK;
    }
    stack_entry e = {.id = id};
    vendor_push(s, &e);
    if (stack_push(t, &e) != 0) {
        vendor_pop(&e);
        return dt__error(DT_ERR_NO_MEMORY, "out of memory growing the external-correlation stack");
    }
    note_parent_range(t, s, id);
    return DT_OK;
}

/* A named entry (range or op) remembers its name and start when a session
   runs; one that cannot (no session, no memory) is not recorded. */
static void name_entry(stack_entry *e, const char *name)
{
    dt_session *s = dt__active_session();
    if (!s) return;
    dt__thread_note(s);
    dt__core_lock(s);
    uint32_t nid = dt__intern_str(&s->names, name ? name : "");
    dt__core_unlock(s);
    if (nid != UINT32_MAX) {
        e->name = nid;
        e->start_ns = dt__realtime_ns();
    } else {
        dt__loss_add(s, DT_LOSS_STORE_FULL, 1); /* out of memory: the entry is not recorded */
    }
}

static dt_status push_named(thread_state *t, stack_entry e, const char *name)
{
    name_entry(&e, name);
    vendor_push(dt__active_session(), &e);
    if (stack_push(t, &e) != 0) {
        vendor_pop(&e);
        return dt__error(DT_ERR_NO_MEMORY, "out of memory growing the external-correlation stack");
    }
    return DT_OK;
}

/* An entry a session saw pushed and named (a name the store could not
   hold leaves start_ns 0): a span when popped. */
static bool recordable(const stack_entry *e)
{
    return e->generation != 0 && e->start_ns != 0;
}

/* Record a popped range or op as a span of its thread, if the session that
   saw its push is still the running one. */
static void record_entry(const thread_state *t, const stack_entry *e, uint64_t end)
{
    dt_session *s = dt__active_session();
    if (!s || !recordable(e) || s->sink.generation != e->generation) return;
    dt__core_lock(s);
    /* again under the lock: the session may have been restarted since */
    dt_rec *r = s->sink.generation == e->generation ? dt__sink_add(s) : NULL;
    if (r) {
        r->kind = e->is_range ? DT_EVENT_RANGE : DT_EVENT_OP;
        r->flags = DT_REC_REALTIME | DT_REC_HAS_EXTERNAL;
        r->start = e->start_ns;
        r->end = end;
        r->external_id = e->id;
        r->name = e->name;
        r->lane = dt__thread_id();
        r->context = s->pid;
        if (t->depth) {
            r->flags |= DT_REC_HAS_PARENT;
            r->u.range.parent = t->stack[t->depth - 1].id;
        }
    }
    dt__core_unlock(s);
}

dt_status dt_external_pop(uint64_t *id)
{
    thread_state *t = thread_state_get();
    if (t->depth == 0) return dt__error(DT_ERR_EMPTY_STACK, "dt_external_pop: the external-correlation stack of this thread is empty");
    /* the clock only for an entry a session can record (see record_entry) */
    const stack_entry *top = &t->stack[t->depth - 1];
    uint64_t end = top->is_op && recordable(top) ? dt__realtime_ns() : 0;
    /* the popped entry stays where it was until the next push */
    const stack_entry *e = &t->stack[--t->depth];
    vendor_pop(e);
    if (e->is_op) record_entry(t, e, end);
    if (id) *id = e->id;
    return DT_OK;
}

dt_status dt_op_push(const char *name, uint64_t id)
{
    thread_state *t = thread_state_get();
    dt_status st = push_named(t, (stack_entry){.id = id, .is_op = 1}, name);
    if (st == DT_OK) note_parent_range(t, dt__active_session(), id);
    return st;
}

dt_status dt_op_pop(uint64_t *id)
{
    thread_state *t = thread_state_get();
    if (t->depth == 0) return dt__error(DT_ERR_EMPTY_STACK, "dt_op_pop: no operation is open on this thread");
    if (t->stack[t->depth - 1].is_range)
        return dt__error(DT_ERR_STATE, "dt_op_pop: the innermost entry is a user range; pop it with dt_range_pop first");
    return dt_external_pop(id);
}

dt_status dt_range_push(const char *name, uint64_t *range_id)
{
    if (dt__core_steps_watched()) dt__core_step_range(name, 0);
    stack_entry e = {.id = dt__corr_range_id_next(), .is_range = 1};
    dt_status st = push_named(thread_state_get(), e, name);
    if (st == DT_OK && range_id) *range_id = e.id;
    return st;
}

void dt__corr_range_add(dt_session *s, const char *name, uint64_t start_ns, uint64_t end_ns, uint32_t tid)
{
    if (dt__core_steps_watched()) dt__core_step_range(name, start_ns);
    dt__core_lock(s);
    uint32_t nid = dt__intern_str(&s->names, name ? name : "");
    dt_rec *r = nid == UINT32_MAX ? NULL : dt__sink_add(s);
    if (nid == UINT32_MAX) dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
    if (r) {
        r->kind = DT_EVENT_RANGE;
        r->flags = DT_REC_REALTIME | DT_REC_HAS_EXTERNAL;
        r->start = start_ns;
        r->end = end_ns;
        r->external_id = dt__corr_range_id_next();
        r->name = nid;
        r->lane = tid;
        r->context = s->pid;
    }
    dt__core_unlock(s);
}

dt_status dt_range_pop(void)
{
    thread_state *t = thread_state_get();
    if (t->depth == 0) return dt__error(DT_ERR_EMPTY_STACK, "dt_range_pop: no range is open on this thread");
    if (!t->stack[t->depth - 1].is_range)
        return dt__error(DT_ERR_STATE, "dt_range_pop: the innermost entry is an external id pushed with dt_external_push; pop it with dt_external_pop first");
    /* the clock only for an entry a session can record */
    uint64_t end = recordable(&t->stack[t->depth - 1]) ? dt__realtime_ns() : 0;
    stack_entry e = t->stack[--t->depth];
    vendor_pop(&e);
    record_entry(t, &e, end);
    return DT_OK;
}

/* ---- links from the API-enter path, per thread, merged at stop ---- */

#define CORR_CHUNK 4096
struct dt_corr_chunk {
    dt_corr_chunk *next;
    _Atomic uint32_t n;
    uint64_t pairs[2 * CORR_CHUNK];
};

/* -1 when out of memory: the pair is lost and the caller counts it. */
static int log_pair(pair_log *log, dt_corr_chunk **session_head, uint64_t generation, uint64_t a,
                    uint64_t b)
{
    dt_corr_chunk *c = log->chunk;
    uint32_t n;
    if (!c || log->generation != generation ||
        (n = atomic_load_explicit(&c->n, memory_order_relaxed)) == CORR_CHUNK) {
        c = dt__malloc(sizeof *c);
        if (!c) return -1;
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
    return 0;
}

void dt__corr_link_current(uint64_t correlation)
{
    dt_session *s = dt__active_session();
    if (!s) return;
    thread_state *t = thread_state_get();
    /* the API-enter callback runs on the calling thread: name it while it lives */
    thread_note(t, s);
    if (t->depth == 0) return;
    const stack_entry *top = &t->stack[t->depth - 1];
    /* the vendor holds this id on its own stack and reports the link itself */
    if (top->vendor_pushed) return;
    if (log_pair(&t->links, &s->corr_chunks, s->sink.generation, correlation, top->id) != 0)
        atomic_fetch_add_explicit(&s->links_lost, 1, memory_order_relaxed);
}

static void log_parent_range(thread_state *t, dt_session *s, uint64_t id, uint64_t range)
{
    if (log_pair(&t->parents, &s->parent_chunks, s->sink.generation, id + 1, range) != 0)
        atomic_fetch_add_explicit(&s->parents_lost, 1, memory_order_relaxed);
}

int dt__corr_map_get(const dt_session *s, uint64_t correlation, uint64_t *external_id)
{
    return dt__u64map_get(&s->corr, correlation, external_id);
}

int dt__corr_parent_range(const dt_session *s, uint64_t id, uint64_t *range)
{
    return id != UINT64_MAX && dt__u64map_get(&s->ext_parents, id + 1, range);
}

void dt__corr_link_grow(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    size_t cap = s->sink.corr_log_cap ? s->sink.corr_log_cap * 2 : 65536;
    uint64_t *p = dt__realloc(s->sink.corr_log, cap * 2 * sizeof *p);
    if (!p) {
        if (map_put(&s->corr, correlation, external_id) != 0)
            atomic_fetch_add_explicit(&s->links_lost, 1, memory_order_relaxed);
        return;
    }
    s->sink.corr_log = p;
    s->sink.corr_log_cap = cap;
    s->sink.corr_log[2 * s->sink.corr_log_count] = correlation;
    s->sink.corr_log[2 * s->sink.corr_log_count + 1] = external_id;
    s->sink.corr_log_count++;
}

static void corr_put(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    if (map_put(&s->corr, correlation, external_id) != 0)
        atomic_fetch_add_explicit(&s->links_lost, 1, memory_order_relaxed);
}

static void merge_parents(dt_session *s, int keep)
{
    _Atomic(dt_corr_chunk *) *head = (_Atomic(dt_corr_chunk *) *)&s->parent_chunks;
    dt_corr_chunk *c = atomic_exchange(head, NULL);
    while (c) {
        dt_corr_chunk *next = c->next;
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; keep && i < n; i++)
            if (map_put(&s->ext_parents, c->pairs[2 * i], c->pairs[2 * i + 1]) != 0)
                atomic_fetch_add_explicit(&s->parents_lost, 1, memory_order_relaxed);
        dt__free(c);
        c = next;
    }
}

/* A link goes to the dense table when its id falls inside it (and its
   External id can be stored + 1), else to the map. */
__attribute__((always_inline)) static inline void link_put(dt_session *s, uint64_t correlation,
                                                         uint64_t external_id)
{
    uint64_t at = correlation - s->corr_dense_base;
    if (correlation != 0 && at < s->corr_dense_len) {
        if (external_id != UINT64_MAX) {
            s->corr_dense_count += s->corr_dense[at] == 0;
            s->corr_dense[at] = external_id + 1;
            return;
        }
        /* the map holds it; an earlier link in the table must not win */
        s->corr_dense_count -= s->corr_dense[at] != 0;
        s->corr_dense[at] = 0;
    }
    corr_put(s, correlation, external_id);
}

static void widen(uint64_t correlation, uint64_t *lo, uint64_t *hi, size_t *n)
{
    if (correlation == 0) return;
    if (correlation < *lo) *lo = correlation;
    if (correlation > *hi) *hi = correlation;
    (*n)++;
}

/* Vendors count correlation ids up from a start, so the links of a session
   usually cover a range not much wider than their number: a table indexed
   by id is then filled and read in order, where a hash map would miss the
   cache on every probe once it outgrows it. */
static void plan_dense(dt_session *s, const dt_corr_chunk *chunks)
{
    if (s->corr_dense) return; /* made by an earlier merge: links fill it or the map */
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->sink.corr_log_count; i++) widen(s->sink.corr_log[2 * i], &lo, &hi, &n);
    for (const dt_corr_chunk *c = chunks; c; c = c->next) {
        uint32_t k = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; i < k; i++) widen(c->pairs[2 * i], &lo, &hi, &n);
    }
    if (n == 0) return;
    /* at most 32 bytes per link, as the map would take; ids above go there */
    uint64_t len = hi - lo < 4 * (uint64_t)n + 1024 ? hi - lo + 1 : 4 * (uint64_t)n + 1024;
    s->corr_dense = dt__calloc((size_t)len, sizeof *s->corr_dense);
    if (!s->corr_dense) return; /* the map takes them all */
    s->corr_dense_base = lo;
    s->corr_dense_len = (size_t)len;
}

void dt__corr_merge_chunks(dt_session *s, int keep)
{
    merge_parents(s, keep);
    _Atomic(dt_corr_chunk *) *head = (_Atomic(dt_corr_chunk *) *)&s->corr_chunks;
    dt_corr_chunk *c = atomic_exchange(head, NULL);
    if (keep) {
        plan_dense(s, c);
        if (!s->corr_dense) {
            /* size the map once rather than rehashing as it grows */
            size_t total = s->corr.count + s->sink.corr_log_count;
            for (dt_corr_chunk *k = c; k; k = k->next) total += atomic_load(&k->n);
            dt__u64map_reserve(&s->corr, total);
        }
        if (atomic_load_explicit(&s->external_unreliable, memory_order_relaxed)) {
            if (s->sink.corr_log_count)
                dt__core_note(s, "external_ids", "%zu External ids the vendor reported were not used",
                                s->sink.corr_log_count);
        } else {
            for (size_t i = 0; i < s->sink.corr_log_count; i++)
                link_put(s, s->sink.corr_log[2 * i], s->sink.corr_log[2 * i + 1]);
        }
    }
    /* The links of the API-enter path come last: where both exist, devtrace's
       own stack was the truth. */
    dt__free(s->sink.corr_log);
    s->sink.corr_log = NULL;
    s->sink.corr_log_count = s->sink.corr_log_cap = 0;
    while (c) {
        dt_corr_chunk *next = c->next;
        if (keep) {
            uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++)
                link_put(s, c->pairs[2 * i], c->pairs[2 * i + 1]);
        }
        dt__free(c);
        c = next;
    }
}

/* A copy of a list of chunks onto *dst (a session of the caller's own). */
static int copy_chunks(dt_corr_chunk **dst, dt_corr_chunk *const *src)
{
    for (const dt_corr_chunk *c = atomic_load((_Atomic(dt_corr_chunk *) *)src); c; c = c->next) {
        dt_corr_chunk *k = dt__malloc(sizeof *k);
        if (!k) return -1;
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        memcpy(k->pairs, c->pairs, (size_t)n * 2 * sizeof k->pairs[0]);
        atomic_init(&k->n, n);
        k->next = *dst;
        *dst = k;
    }
    return 0;
}

int dt__corr_copy_links(dt_session *dst, const dt_session *src)
{
    const dt_sink *from = &src->sink;
    for (size_t i = 0; i < from->corr_log_count; i++) dt__corr_link(dst, from->corr_log[2 * i], from->corr_log[2 * i + 1]);
    return copy_chunks(&dst->corr_chunks, &src->corr_chunks) | copy_chunks(&dst->parent_chunks, &src->parent_chunks);
}

int dt_session_external_range(const dt_session *s, uint64_t id, uint64_t *range_id)
{
    uint64_t range;
    if (!s || s->state != DT_STATE_STOPPED || !dt__corr_parent_range(s, id, &range)) return 0;
    if (range_id) *range_id = range;
    return 1;
}

size_t dt__corr_count(const dt_session *s)
{
    return s->corr_dense_count + s->corr.count;
}

void dt__corr_forget(dt_session *s)
{
    dt__free(s->corr_dense);
    s->corr_dense = NULL;
    s->corr_dense_base = 0;
    s->corr_dense_len = s->corr_dense_count = 0;
}
