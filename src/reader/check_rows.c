/* `devtrace check`: rows and pids, each complete event kept in its row's
   log (varints), and the invariants over rows (the capture window, names
   and order, nesting). */
#include "reader/check.h"

#include <inttypes.h>
#include <stdlib.h>

int64_t dt__rd_check_pid_id(ck *c, const dt_rd_id *pid)
{
    char key[256];
    size_t n = dt__rd_check_id_key(key, sizeof key, pid);
    bool added;
    int64_t id = dt__strtab_intern(&c->pids, key, n, &added);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&c->pidv, &c->pid_cap, (size_t)id + 1, sizeof *c->pidv) != 0)
        return -1;
    if (added) {
        c->pidv[id].is_num = !pid->is_str;
        c->pidv[id].num = pid->num;
    }
    return id;
}

int64_t dt__rd_check_row_id(ck *c, const dt_rd_event *e)
{
    ck_row_cache *slot = NULL;
    if (e->pid.present && e->tid.present && !e->pid.is_str && !e->tid.is_str) {
        uint64_t h = ((uint64_t)e->pid.num * 0x9E3779B97F4A7C15ull) ^ (uint64_t)e->tid.num;
        slot = &c->row_cache[(h ^ (h >> 29)) % CK_ROW_CACHE];
        if (slot->valid && slot->pid == e->pid.num && slot->tid == e->tid.num)
            return slot->row;
    }
    char p[256], t[256], key[540];
    dt__rd_check_id_key(p, sizeof p, &e->pid);
    dt__rd_check_id_key(t, sizeof t, &e->tid);
    int n = snprintf(key, sizeof key, "pid %s, tid %s", p, t);
    bool added;
    int64_t id = dt__strtab_intern(&c->rows, key, (size_t)n, &added);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&c->rowv, &c->row_cap, (size_t)id + 1, sizeof *c->rowv) != 0)
        return -1;
    if (added) {
        int64_t pid = dt__rd_check_pid_id(c, &e->pid);
        if (pid < 0)
            return -1;
        c->rowv[id].pid = (uint32_t)pid;
    }
    if (slot)
        *slot = (ck_row_cache){e->pid.num, e->tid.num, (uint32_t)id, true};
    return id;
}

/* ---- row logs ---- */
static inline uint64_t get_varint(const uint8_t **pp)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
    }
    *pp = p;
    return v;
}

/* zigzag (check.h) undone. */
static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ ((uint64_t)0 - (z & 1));
}

int dt__rd_check_log_chunk(ck_row *r)
{
    ck_chunk *t = r->tail;
    uint32_t cap = t ? (t->cap < CK_CHUNK_MAX / 2 ? t->cap * 2 : CK_CHUNK_MAX) : CK_CHUNK_MIN;
    ck_chunk *n = malloc(sizeof *n + cap);
    if (!n)
        return -1;
    n->next = NULL;
    n->len = 0;
    n->cap = cap;
    if (t)
        t->next = n;
    else
        r->head = n;
    r->tail = n;
    return 0;
}

typedef struct log_reader {
    const ck_chunk *chunk;
    uint32_t pos;
    int64_t start;
    uint64_t index;
} log_reader;

static bool log_next(log_reader *lr, ck_interval *v)
{
    while (lr->chunk && lr->pos >= lr->chunk->len) {
        lr->chunk = lr->chunk->next;
        lr->pos = 0;
    }
    if (!lr->chunk)
        return false;
    const uint8_t *p = lr->chunk->bytes + lr->pos;
    lr->start = (int64_t)((uint64_t)lr->start + unzigzag(get_varint(&p)));
    uint64_t dur = get_varint(&p);
    lr->index += get_varint(&p);
    v->start = lr->start;
    v->end = (int64_t)((uint64_t)lr->start + dur);
    v->index = lr->index;
    uint64_t name = get_varint(&p);
    v->name = (uint32_t)(name >> 2);
    v->cls = (uint8_t)(name & 3);
    lr->pos = (uint32_t)(p - lr->chunk->bytes);
    return true;
}


static int cmp_interval(const void *a, const void *b)
{
    const ck_interval *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the enclosing one first */
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The kind of a partial overlap, by what the two events are: those Kineto
   writes on its rows (a synchronisation record over work, device work over
   device work, host ranges over host ranges) apart from the rest. */
static int overlap_kind(const ck_interval *o, const ck_interval *v)
{
    if ((o->cls == CL_SYNC || v->cls == CL_SYNC) && o->cls != CL_HOST && o->cls != CL_OTHER &&
        v->cls != CL_HOST && v->cls != CL_OTHER)
        return KD_OVERLAP_SYNC;
    if (o->cls == v->cls && o->cls == CL_WORK)
        return KD_OVERLAP_DEVICE;
    if (o->cls == v->cls && o->cls == CL_HOST)
        return KD_OVERLAP_HOST;
    return KD_OVERLAP;
}

void dt__rd_check_rows(ck *c, const dt_rd_summary *s, bool devtrace)
{
    bool window = devtrace && s->has_window_start && s->has_window_end && s->has_base_time;
    /* Relative to the base, like ts, so that nothing overflows. */
    int64_t neg_base = s->base_time_ns == INT64_MIN ? INT64_MAX : -s->base_time_ns;
    int64_t ws = dt__rd_add_sat(s->window_start_ns, neg_base), we = dt__rd_add_sat(s->window_end_ns, neg_base);
    if (devtrace && (!s->has_window_start || !s->has_window_end))
        dt__rd_check_finding(c, KD_WINDOW, "devtrace.captureWindow with startNs and endNs is missing");
    ck_interval *stack = NULL, *sorted = NULL;
    size_t stack_cap = 0, sorted_cap = 0;
    char a[32], b[32], d[32];
    if (window && c->trace_events == 1 && (c->trace_start != ws || c->trace_end != we))
        dt__rd_check_finding(c, KD_WINDOW, "the \"Trace\" event #%" PRIu64 " [%s, %s] us is not the capture window [%s, %s] us",
                     c->trace_index, dt__rd_check_fmt_us(a, sizeof a, c->trace_start), dt__rd_check_fmt_us(b, sizeof b, c->trace_end),
                     dt__rd_check_fmt_us(d, sizeof d, ws), dt__rd_check_fmt_us((char[32]){0}, 32, we));
    if (c->trace_events > 1)
        dt__rd_check_finding(c, KD_WINDOW, "%" PRIu64 " \"Trace\" events; the capture window is drawn once", c->trace_events);
    dt__rd_check_sort_flow_ends(c);
    size_t fe = 0; /* the next pending flow end, in (row, ts) order */
    for (size_t ri = 0; ri < c->rows.count; ri++) {
        ck_row *r = &c->rowv[ri];
        const char *rowname = dt__strtab_key(&c->rows, ri);
        if (devtrace && !r->named && r->used)
            dt__rd_check_finding(c, KD_UNNAMED, "row %s is not named by thread_name metadata", rowname);
        log_reader lr = {r->head, 0, 0, 0};
        size_t nsorted = 0;
        if (r->unordered) {
            /* decoded and sorted, one row at a time */
            if (dt__vec_reserve_zeroed((void **)&sorted, &sorted_cap, r->n, sizeof *sorted) != 0) {
                c->oom = true;
                break;
            }
            for (ck_interval *v = sorted; log_next(&lr, v); v++)
                nsorted++;
            qsort(sorted, nsorted, sizeof *sorted, cmp_interval);
        }
        size_t depth = 0;
        ck_interval cur;
        for (size_t i = 0;; i++) {
            if (r->unordered) {
                if (i >= nsorted)
                    break;
                cur = sorted[i];
            } else if (!log_next(&lr, &cur)) {
                break;
            }
            const ck_interval *v = &cur;
            for (; fe < c->npending && c->pending[fe].row == ri && c->pending[fe].ts <= v->start; fe++)
                if (c->pending[fe].ts < v->start)
                    dt__rd_check_flow_end_missing(c, &c->pending[fe]);
            if (window && (v->start < ws || v->end > we))
                dt__rd_check_finding(c, KD_OUTSIDE, "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) is outside the "
                             "capture window [%s, %s] us",
                             v->index, dt__strtab_key(&c->names, v->name), rowname, dt__rd_check_fmt_us(a, sizeof a, v->start),
                             dt__rd_check_fmt_us(b, sizeof b, v->end), dt__rd_check_fmt_us(d, sizeof d, ws), dt__rd_check_fmt_us((char[32]){0}, 32, we));
            while (depth > 0 && stack[depth - 1].end <= v->start)
                depth--;
            if (depth > 0 && v->end > stack[depth - 1].end) {
                const ck_interval *o = &stack[depth - 1];
                dt__rd_check_finding(c, overlap_kind(o, v), "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) partially overlaps "
                             "event #%" PRIu64 " \"%.200s\" (ts %s us, end %s us)",
                             v->index, dt__strtab_key(&c->names, v->name), rowname, dt__rd_check_fmt_us(a, sizeof a, v->start),
                             dt__rd_check_fmt_us(b, sizeof b, v->end), o->index, dt__strtab_key(&c->names, o->name),
                             dt__rd_check_fmt_us(d, sizeof d, o->start), dt__rd_check_fmt_us((char[32]){0}, 32, o->end));
            }
            if (dt__vec_reserve_zeroed((void **)&stack, &stack_cap, depth + 1, sizeof *stack) != 0) {
                c->oom = true;
                break;
            }
            stack[depth++] = *v;
        }
        for (; fe < c->npending && c->pending[fe].row == ri; fe++)
            dt__rd_check_flow_end_missing(c, &c->pending[fe]);
    }
    for (; fe < c->npending; fe++) /* rows that hold no complete event */
        dt__rd_check_flow_end_missing(c, &c->pending[fe]);
    free(stack);
    free(sorted);
}

void dt__rd_check_names(ck *c)
{
    dt__rd_check_generic_names(c);
    bool any_host = false;
    int64_t max_host = 0;
    size_t max_host_id = 0;
    for (size_t i = 0; i < c->pids.count; i++) {
        const ck_pid *p = &c->pidv[i];
        if (p->used && !p->named)
            dt__rd_check_finding(c, KD_UNNAMED, "pid %s is not named by process_name metadata", dt__strtab_key(&c->pids, i));
        if (p->host && !p->device && (p->has_sort || p->is_num)) {
            int64_t k = p->has_sort ? p->sort : p->num;
            if (!any_host || k > max_host) {
                max_host = k;
                max_host_id = i;
            }
            any_host = true;
        }
    }
    if (!any_host)
        return;
    for (size_t i = 0; i < c->pids.count; i++) {
        const ck_pid *p = &c->pidv[i];
        if (!p->device || p->host)
            continue;
        if (!p->has_sort && !p->is_num) {
            dt__rd_check_finding(c, KD_ORDER, "device pid %s has no process_sort_index", dt__strtab_key(&c->pids, i));
            continue;
        }
        int64_t k = p->has_sort ? p->sort : p->num;
        if (k <= max_host)
            dt__rd_check_finding(c, KD_ORDER, "device pid %s (sort index %" PRId64 "%s) does not sort after host pid %s (sort "
                         "index %" PRId64 ")",
                         dt__strtab_key(&c->pids, i), k, p->has_sort ? "" : ", by pid",
                         dt__strtab_key(&c->pids, max_host_id), max_host);
    }
}
