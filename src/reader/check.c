/*
 * `devtrace check`: verifies the invariants of docs/trace-format.md in one
 * streaming pass. Per-event checks run in the visitor; the checks that need
 * the whole trace (flows, nesting, window, names, attribution) keep only
 * what they need: one (start, end) pair per complete event, grouped by row,
 * and tables keyed by distinct flow ids, pids, rows and External ids.
 */
#include "dt_reader.h"
#include "dt_demangle.h"
#include "devtrace/devtrace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CK_MAX_LINES 20
#define CK_INVARIANTS 7

/* 24 bytes per complete event: the one thing check keeps per event. Event
   numbers past 2^32 wrap in messages. */
typedef struct ck_interval {
    int64_t start, end;
    uint32_t index;
    uint32_t name;
} ck_interval;

typedef struct ck_row {
    ck_interval *v;
    size_t n, cap;
    uint32_t pid;
    bool named, used;
} ck_row;

typedef struct ck_pid {
    bool named, used, has_sort, device, host, is_num;
    int64_t sort, num;
} ck_pid;

typedef struct ck_flow_end {
    uint32_t row;
    int64_t ts;
    uint64_t index;
} ck_flow_end;

typedef struct ck_flow {
    uint32_t starts, finishes;
    ck_flow_end s, f;
    uint64_t num;    /* the id when it is a number */
    int64_t str;     /* else its id in the flows string table */
} ck_flow;

/* Recently seen numeric (pid, tid) pairs, so that most events skip
   formatting and hashing their row key. */
#define CK_ROW_CACHE 64
typedef struct ck_row_cache {
    int64_t pid, tid;
    uint32_t row;
    bool valid;
} ck_row_cache;

typedef struct ck {
    FILE *out;
    ck_row_cache row_cache[CK_ROW_CACHE];
    uint64_t violations[CK_INVARIANTS + 1];
    /* the first lines of each invariant, printed in invariant order */
    char *lines[CK_INVARIANTS + 1][CK_MAX_LINES];
    dt_rd_strtab names, pids, rows, flows;
    /* numeric flow ids -> index in flowv: no string per flow */
    dt_rd_u64map flow_ids;
    size_t nflows;
    /* device time per External id (bit 63: listed in devtrace.attribution) */
    dt_rd_u64map ext;
    ck_pid *pidv;
    size_t pid_cap;
    ck_row *rowv;
    size_t row_cap;
    ck_flow *flowv;
    size_t flow_cap;
    uint8_t *demangles; /* by name id: 0 not asked yet, 1 no, 2 yes */
    size_t demangles_cap;
    uint64_t api_events, generic_api;
    uint64_t trace_events; /* cat "Trace": the capture window drawn as an event */
    int64_t trace_start, trace_end;
    uint64_t trace_index;
    char first_generic[128];
    uint64_t odd_args_events; /* args of a type Kineto does not write */
    char first_odd[800];
    uint64_t first_generic_index;
    bool oom;
} ck;

__attribute__((format(printf, 3, 4))) static void ck_violation(ck *c, int inv, const char *fmt, ...)
{
    if (++c->violations[inv] > CK_MAX_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    if (vasprintf(&line, fmt, ap) < 0)
        line = NULL;
    va_end(ap);
    c->lines[inv][c->violations[inv] - 1] = line;
}

static void ck_print(ck *c)
{
    for (int inv = 1; inv <= CK_INVARIANTS; inv++) {
        for (uint64_t i = 0; i < c->violations[inv] && i < CK_MAX_LINES; i++) {
            /* a name in a violation is the trace's bytes: one violation stays one line */
            fprintf(c->out, "invariant %d: ", inv);
            dt_rd_put_safe(c->out, c->lines[inv][i] ? c->lines[inv][i] : "(out of memory)");
            fputc('\n', c->out);
        }
        if (c->violations[inv] > CK_MAX_LINES)
            fprintf(c->out, "invariant %d: ... %" PRIu64 " more violations not shown\n", inv,
                    c->violations[inv] - CK_MAX_LINES);
    }
}

static const char *fmt_us(char *buf, size_t len, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
    return buf;
}

/* Key text that doubles as the human-readable form: 7 or "Spans". */
static size_t id_key(char *buf, size_t len, const dt_rd_id *id)
{
    int n;
    if (!id->present)
        n = snprintf(buf, len, "(none)");
    else if (id->is_str)
        n = snprintf(buf, len, "\"%.200s\"", id->str);
    else
        n = snprintf(buf, len, "%" PRId64, id->num);
    return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

/* Invariant 4 asks for a name that demangles to be demangled; a name that
   merely starts with _Z, or that the demangler refuses for its length, is
   kept as the vendor gave it (the writer's demangler is the same). Asked
   once per name. */
static bool ck_demangles(ck *c, size_t name_id, const char *name)
{
    if (dt_rd_grow((void **)&c->demangles, &c->demangles_cap, name_id + 1, 1) != 0) {
        c->oom = true;
        return false;
    }
    if (!c->demangles[name_id]) {
        dt_demangle_result result;
        char *d = dt_demangle(name, &result);
        free(d);
        if (result == DT_DEMANGLE_NO_MEMORY)
            c->oom = true;
        c->demangles[name_id] = d ? 2 : 1;
    }
    return c->demangles[name_id] == 2;
}

static int64_t ck_pid_id(ck *c, const dt_rd_id *pid)
{
    char key[256];
    size_t n = id_key(key, sizeof key, pid);
    bool added;
    int64_t id = dt_rd_strtab_intern(&c->pids, key, n, &added);
    if (id < 0 || dt_rd_grow((void **)&c->pidv, &c->pid_cap, (size_t)id + 1, sizeof *c->pidv) != 0)
        return -1;
    if (added) {
        c->pidv[id].is_num = !pid->is_str;
        c->pidv[id].num = pid->num;
    }
    return id;
}

static int64_t ck_row_id(ck *c, const dt_rd_event *e)
{
    ck_row_cache *slot = NULL;
    if (e->pid.present && e->tid.present && !e->pid.is_str && !e->tid.is_str) {
        uint64_t h = ((uint64_t)e->pid.num * 0x9E3779B97F4A7C15ull) ^ (uint64_t)e->tid.num;
        slot = &c->row_cache[(h ^ (h >> 29)) % CK_ROW_CACHE];
        if (slot->valid && slot->pid == e->pid.num && slot->tid == e->tid.num)
            return slot->row;
    }
    char p[256], t[256], key[540];
    id_key(p, sizeof p, &e->pid);
    id_key(t, sizeof t, &e->tid);
    int n = snprintf(key, sizeof key, "pid %s, tid %s", p, t);
    bool added;
    int64_t id = dt_rd_strtab_intern(&c->rows, key, (size_t)n, &added);
    if (id < 0 || dt_rd_grow((void **)&c->rowv, &c->row_cap, (size_t)id + 1, sizeof *c->rowv) != 0)
        return -1;
    if (added) {
        int64_t pid = ck_pid_id(c, &e->pid);
        if (pid < 0)
            return -1;
        c->rowv[id].pid = (uint32_t)pid;
    }
    if (slot)
        *slot = (ck_row_cache){e->pid.num, e->tid.num, (uint32_t)id, true};
    return id;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_api_cat(const char *cat)
{
    return ends_with(cat, "_runtime") || ends_with(cat, "_driver");
}

static bool is_device_cat(const char *cat)
{
    return strcmp(cat, "kernel") == 0 || strcmp(cat, "gpu_memcpy") == 0 || strcmp(cat, "gpu_memset") == 0 ||
           strcmp(cat, "gpu_user_annotation") == 0 || strcmp(cat, "cuda_sync") == 0 ||
           strcmp(cat, "overhead") == 0;
}

static bool is_host_cat(const char *cat)
{
    return is_api_cat(cat) || strcmp(cat, "user_annotation") == 0 || strcmp(cat, "Trace") == 0 ||
           strcmp(cat, "cpu_op") == 0 || strcmp(cat, "python_function") == 0;
}

/* The fallback name a backend gives an API it cannot name: <word>#<digits>. */
static bool is_generic_name(const char *s)
{
    const char *hash = strchr(s, '#');
    if (!hash || hash == s || hash[1] == '\0')
        return false;
    for (const char *p = s; p < hash; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    for (const char *p = hash + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

static void where(char *buf, size_t len, const dt_rd_event *e)
{
    char p[256], t[256], ts[32];
    id_key(p, sizeof p, &e->pid);
    id_key(t, sizeof t, &e->tid);
    snprintf(buf, len, "event #%" PRIu64 " \"%.200s\" (pid %s, tid %s, ts %s us)", e->index, e->name, p, t,
             fmt_us(ts, sizeof ts, e->ts_ns));
}

/* A flow id written as a decimal integer; string ids (and numbers that are
   not plain integers) are keyed by their text. Ids as large as 2^63 and
   beyond are text too, so that they never meet a string's key. */
static bool parse_flow_id(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s || (s[0] == '0' && s[1]))
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_C(1) << 59))
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v >> 63)
        return false;
    *out = v;
    return true;
}

static int ck_visit(void *user, const dt_rd_event *e)
{
    ck *c = user;
    char w[800];
    if (strcmp(e->ph, "M") == 0) {
        if (!e->pid.present)
            return 0;
        int64_t pid = ck_pid_id(c, &e->pid);
        if (pid < 0)
            goto oom;
        if (strcmp(e->name, "process_name") == 0) {
            c->pidv[pid].named = true;
        } else if (strcmp(e->name, "process_sort_index") == 0 && (e->has & DT_RD_HAS_SORT_INDEX)) {
            c->pidv[pid].has_sort = true;
            c->pidv[pid].sort = e->sort_index;
        } else if (strcmp(e->name, "thread_name") == 0 && e->tid.present) {
            int64_t row = ck_row_id(c, e);
            if (row < 0)
                goto oom;
            c->rowv[row].named = true;
        }
        return 0;
    }
    if (!e->pid.present || !e->tid.present) {
        where(w, sizeof w, e);
        ck_violation(c, 1, "%s has no %s", w, e->pid.present ? "tid" : "pid");
        return 0;
    }
    int64_t row = ck_row_id(c, e);
    if (row < 0)
        goto oom;
    ck_pid *pid = &c->pidv[c->rowv[row].pid];
    c->rowv[row].used = true;
    pid->used = true;
    bool is_flow = (strcmp(e->ph, "s") == 0 || strcmp(e->ph, "f") == 0) && strcmp(e->cat, "ac2g") == 0;
    if (is_device_cat(e->cat) || (is_flow && e->ph[0] == 'f'))
        pid->device = true;
    else if (is_host_cat(e->cat) || (is_flow && e->ph[0] == 's'))
        pid->host = true;

    if (is_flow) {
        if (!(e->has & DT_RD_HAS_ID) || !(e->has & DT_RD_HAS_TS)) {
            where(w, sizeof w, e);
            ck_violation(c, 2, "flow %s has no %s", w, (e->has & DT_RD_HAS_ID) ? "ts" : "id");
            return 0;
        }
        /* numbers by value; other ids by their text's id, on the high half */
        uint64_t num = 0, key;
        int64_t sid = -1;
        bool added;
        if (!e->id_is_str && parse_flow_id(e->id, &num)) {
            key = num;
        } else {
            sid = dt_rd_strtab_intern(&c->flows, e->id, strlen(e->id), &added);
            if (sid < 0)
                goto oom;
            key = (uint64_t)sid | UINT64_C(1) << 63;
        }
        uint64_t *slot = dt_rd_u64map_slot(&c->flow_ids, key, &added);
        if (!slot)
            goto oom;
        if (added)
            *slot = c->nflows++;
        int64_t id = (int64_t)*slot;
        if (dt_rd_grow((void **)&c->flowv, &c->flow_cap, (size_t)id + 1, sizeof *c->flowv) != 0)
            goto oom;
        if (added) {
            c->flowv[id].num = num;
            c->flowv[id].str = sid;
        }
        ck_flow *f = &c->flowv[id];
        ck_flow_end end = {(uint32_t)row, e->ts_ns, e->index};
        if (e->ph[0] == 's') {
            if (f->starts++ == 0)
                f->s = end;
        } else {
            if (f->finishes++ == 0)
                f->f = end;
            if (strcmp(e->bp, "e") != 0) {
                where(w, sizeof w, e);
                ck_violation(c, 2, "flow finish id %s at %s has no \"bp\":\"e\"", e->id, w);
            }
        }
        return 0;
    }
    if (strcmp(e->ph, "X") != 0)
        return 0;
    if ((e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) != (DT_RD_HAS_TS | DT_RD_HAS_DUR)) {
        where(w, sizeof w, e);
        ck_violation(c, 1, "complete event %s has no %s", w, (e->has & DT_RD_HAS_TS) ? "dur" : "ts");
        return 0;
    }
    if (e->dur_ns < 0) {
        where(w, sizeof w, e);
        ck_violation(c, 5, "%s has a negative duration", w);
        return 0;
    }
    if (e->ts_ns > INT64_MAX - e->dur_ns) {
        where(w, sizeof w, e);
        ck_violation(c, 5, "%s ends beyond any representable time", w);
        return 0;
    }
    int64_t name = dt_rd_strtab_intern(&c->names, e->name, strlen(e->name), NULL);
    if (name < 0)
        goto oom;
    ck_row *r = &c->rowv[row];
    if (dt_rd_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v) != 0)
        goto oom;
    r->v[r->n++] = (ck_interval){e->ts_ns, e->ts_ns + e->dur_ns, (uint32_t)e->index, (uint32_t)name};

    if (e->odd_args) {
        c->odd_args_events++;
        if (c->odd_args_events == 1) {
            where(w, sizeof w, e);
            snprintf(c->first_odd, sizeof c->first_odd, "%s", w);
        }
    }
    if (strcmp(e->cat, "Trace") == 0 && strcmp(e->name, "devtrace capture") == 0 && c->trace_events++ == 0) {
        c->trace_start = e->ts_ns;
        c->trace_end = e->ts_ns + e->dur_ns;
        c->trace_index = e->index;
    }
    if (strcmp(e->cat, "kernel") == 0 && strncmp(e->name, "_Z", 2) == 0 && ck_demangles(c, (size_t)name, e->name)) {
        where(w, sizeof w, e);
        ck_violation(c, 4, "kernel name is mangled: %s", w);
    }
    if (is_api_cat(e->cat)) {
        c->api_events++;
        if (is_generic_name(e->name) && c->generic_api++ == 0) {
            snprintf(c->first_generic, sizeof c->first_generic, "%s", e->name);
            c->first_generic_index = e->index;
        }
    }
    if ((e->has & DT_RD_HAS_EXTERNAL_ID) &&
        (strcmp(e->cat, "kernel") == 0 || strcmp(e->cat, "gpu_memcpy") == 0 || strcmp(e->cat, "gpu_memset") == 0)) {
        uint64_t *sum = dt_rd_u64map_slot(&c->ext, e->external_id, NULL);
        if (!sum)
            goto oom;
        *sum = (uint64_t)dt_rd_add_sat((int64_t)*sum, e->dur_ns);
    }
    return 0;
oom:
    c->oom = true;
    return 1;
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

static bool row_has_start(const ck_row *r, int64_t ts)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].start < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->v[lo].start == ts;
}

static void check_rows(ck *c, const dt_rd_summary *s, bool devtrace)
{
    bool window = devtrace && s->has_window_start && s->has_window_end && s->has_base_time;
    /* Relative to the base, like ts, so that nothing overflows. */
    int64_t neg_base = s->base_time_ns == INT64_MIN ? INT64_MAX : -s->base_time_ns;
    int64_t ws = dt_rd_add_sat(s->window_start_ns, neg_base), we = dt_rd_add_sat(s->window_end_ns, neg_base);
    if (devtrace && (!s->has_window_start || !s->has_window_end))
        ck_violation(c, 5, "devtrace.captureWindow with startNs and endNs is missing");
    size_t *stack = NULL, stack_cap = 0;
    char a[32], b[32], d[32];
    if (window && c->trace_events == 1 && (c->trace_start != ws || c->trace_end != we))
        ck_violation(c, 5, "the \"Trace\" event #%" PRIu64 " [%s, %s] us is not the capture window [%s, %s] us",
                     c->trace_index, fmt_us(a, sizeof a, c->trace_start), fmt_us(b, sizeof b, c->trace_end),
                     fmt_us(d, sizeof d, ws), fmt_us((char[32]){0}, 32, we));
    if (c->trace_events > 1)
        ck_violation(c, 5, "%" PRIu64 " \"Trace\" events; the capture window is drawn once", c->trace_events);
    for (size_t ri = 0; ri < c->rows.count; ri++) {
        ck_row *r = &c->rowv[ri];
        const char *rowname = dt_rd_strtab_key(&c->rows, ri);
        if (devtrace && !r->named && r->used)
            ck_violation(c, 6, "row %s is not named by thread_name metadata", rowname);
        if (r->n > 1)
            qsort(r->v, r->n, sizeof *r->v, cmp_interval);
        size_t depth = 0;
        if (dt_rd_grow((void **)&stack, &stack_cap, r->n, sizeof *stack) != 0) {
            c->oom = true;
            break;
        }
        for (size_t i = 0; i < r->n; i++) {
            const ck_interval *v = &r->v[i];
            if (window) {
                if (v->start < ws || v->end > we)
                    ck_violation(c, 5, "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) is outside the "
                                 "capture window [%s, %s] us",
                                 (uint64_t)v->index, dt_rd_strtab_key(&c->names, v->name), rowname,
                                 fmt_us(a, sizeof a, v->start), fmt_us(b, sizeof b, v->end),
                                 fmt_us(d, sizeof d, ws), fmt_us((char[32]){0}, 32, we));
            }
            while (depth > 0 && r->v[stack[depth - 1]].end <= v->start)
                depth--;
            if (depth > 0 && v->end > r->v[stack[depth - 1]].end) {
                const ck_interval *o = &r->v[stack[depth - 1]];
                ck_violation(c, 5, "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) partially overlaps "
                             "event #%" PRIu64 " \"%.200s\" (ts %s us, end %s us)",
                             (uint64_t)v->index, dt_rd_strtab_key(&c->names, v->name), rowname,
                             fmt_us(a, sizeof a, v->start), fmt_us(b, sizeof b, v->end), (uint64_t)o->index,
                             dt_rd_strtab_key(&c->names, o->name), fmt_us(d, sizeof d, o->start),
                             fmt_us((char[32]){0}, 32, o->end));
            }
            stack[depth++] = i;
        }
    }
    free(stack);
}

static void check_flows(ck *c)
{
    char a[32], idtext[48];
    for (size_t i = 0; i < c->nflows; i++) {
        const ck_flow *f = &c->flowv[i];
        const char *id = idtext;
        if (f->str >= 0)
            id = dt_rd_strtab_key(&c->flows, (size_t)f->str);
        else
            snprintf(idtext, sizeof idtext, "%" PRIu64, f->num);
        if (f->starts != 1 || f->finishes != 1) {
            ck_violation(c, 2, "flow id %s has %" PRIu32 " start(s) and %" PRIu32 " finish(es), not one each", id,
                         f->starts, f->finishes);
            continue;
        }
        const ck_flow_end *ends[2] = {&f->s, &f->f};
        for (int k = 0; k < 2; k++) {
            const ck_row *r = &c->rowv[ends[k]->row];
            if (!row_has_start(r, ends[k]->ts))
                ck_violation(c, 2, "flow id %s %s (event #%" PRIu64 ", %s, ts %s us) is not at the start of an "
                             "event on its row",
                             id, k == 0 ? "start" : "finish", ends[k]->index,
                             dt_rd_strtab_key(&c->rows, ends[k]->row), fmt_us(a, sizeof a, ends[k]->ts));
        }
    }
}

/* An entry of devtrace.attribution, as the reader meets it: compared with
   the device events' sum at once, nothing kept. */
static int ck_attribution_entry(void *user, int which, const char *key, size_t len, int64_t value)
{
    ck *c = user;
    if (which != DT_RD_ATTRIBUTION)
        return 0;
    uint64_t ext, sum = 0;
    char text[40];
    snprintf(text, sizeof text, "%.*s", (int)(len < 30 ? len : 30), key);
    if (len == 0 || len > 20 || strspn(key, "0123456789") != len || sscanf(text, "%" SCNu64, &ext) != 1) {
        ck_violation(c, 3, "devtrace.attribution[\"%.100s\"] is not an External id", key);
        return 0;
    }
    uint64_t *slot = NULL;
    if (!dt_rd_u64map_get(&c->ext, ext, &sum)) {
        ck_violation(c, 3, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but no device event carries "
                     "that External id",
                     key, value);
        return 0;
    }
    slot = dt_rd_u64map_slot(&c->ext, ext, NULL);
    if (sum >> 63) {
        ck_violation(c, 3, "devtrace.attribution lists External id %.100s twice", key);
        return 0;
    }
    *slot = sum | UINT64_C(1) << 63;
    if ((int64_t)sum != value)
        ck_violation(c, 3, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but its device events sum to %" PRId64
                     " ns",
                     key, value, (int64_t)sum);
    return 0;
}

static void check_attribution(ck *c, const dt_rd_summary *s)
{
    if (!s->attribution.present) {
        ck_violation(c, 3, "devtrace.attribution is missing");
        return;
    }
    for (size_t i = 0; c->ext.slots && i <= c->ext.mask; i++) {
        const dt_rd_u64slot *sl = &c->ext.slots[i];
        if (sl->used && !(sl->value >> 63))
            ck_violation(c, 3, "External id %" PRIu64 " carries %" PRId64 " ns of device time but is missing from "
                         "devtrace.attribution",
                         sl->key, (int64_t)sl->value);
    }
}

/* Invariant 4 on names, for any writer. */
static void check_generic_names(ck *c)
{
    if (c->generic_api * 100 > c->api_events * 5)
        ck_violation(c, 4, "%" PRIu64 " of %" PRIu64 " runtime/driver events (%.1f%%, more than 5%%) have a "
                     "generic fallback name, e.g. \"%s\" (event #%" PRIu64 ")",
                     c->generic_api, c->api_events, 100.0 * (double)c->generic_api / (double)c->api_events,
                     c->first_generic, c->first_generic_index);
}

static void check_names(ck *c)
{
    check_generic_names(c);
    bool any_host = false;
    int64_t max_host = 0;
    size_t max_host_id = 0;
    for (size_t i = 0; i < c->pids.count; i++) {
        const ck_pid *p = &c->pidv[i];
        if (p->used && !p->named)
            ck_violation(c, 6, "pid %s is not named by process_name metadata", dt_rd_strtab_key(&c->pids, i));
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
            ck_violation(c, 6, "device pid %s has no process_sort_index", dt_rd_strtab_key(&c->pids, i));
            continue;
        }
        int64_t k = p->has_sort ? p->sort : p->num;
        if (k <= max_host)
            ck_violation(c, 6, "device pid %s (sort index %" PRId64 "%s) does not sort after host pid %s (sort "
                         "index %" PRId64 ")",
                         dt_rd_strtab_key(&c->pids, i), k, p->has_sort ? "" : ", by pid",
                         dt_rd_strtab_key(&c->pids, max_host_id), max_host);
    }
}

static void check_loss(ck *c, const dt_rd_summary *s)
{
    if (!s->loss.present) {
        ck_violation(c, 7, "devtrace.loss is missing");
        return;
    }
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *reason = dt_loss_reason_name((dt_loss_reason)r);
        bool found = false;
        for (size_t i = 0; i < s->loss.count && !found; i++)
            found = strcmp(s->loss.items[i].key, reason) == 0;
        if (!found)
            ck_violation(c, 7, "devtrace.loss has no \"%s\" count", reason);
    }
    bool has_total = false;
    int64_t total = 0;
    uint64_t sum = 0;
    bool overflow = false;
    for (size_t i = 0; i < s->loss.count; i++) {
        const dt_rd_kv *kv = &s->loss.items[i];
        if (kv->value < 0)
            ck_violation(c, 7, "devtrace.loss[\"%.100s\"] is negative (%" PRId64 ")", kv->key, kv->value);
        if (strcmp(kv->key, "total") == 0) {
            has_total = true;
            total = kv->value;
        } else if (kv->value > 0) {
            if (sum + (uint64_t)kv->value < sum)
                overflow = true;
            sum += (uint64_t)kv->value;
        }
    }
    if (!has_total)
        ck_violation(c, 7, "devtrace.loss has no \"total\"");
    else if (overflow || total < 0 || (uint64_t)total != sum)
        ck_violation(c, 7, "devtrace.loss.total is %" PRId64 " but the reasons sum to %" PRIu64, total, sum);
}

static void ck_free(ck *c)
{
    for (int inv = 1; inv <= CK_INVARIANTS; inv++)
        for (int i = 0; i < CK_MAX_LINES; i++)
            free(c->lines[inv][i]);
    for (size_t i = 0; i < c->rows.count; i++)
        free(c->rowv[i].v);
    free(c->rowv);
    free(c->pidv);
    free(c->flowv);
    dt_rd_u64map_free(&c->ext);
    dt_rd_u64map_free(&c->flow_ids);
    free(c->demangles);
    dt_rd_strtab_free(&c->names);
    dt_rd_strtab_free(&c->pids);
    dt_rd_strtab_free(&c->rows);
    dt_rd_strtab_free(&c->flows);
}

int dt_check_source(dt_rd_source *src, const char *label, FILE *out, FILE *err)
{
    ck c;
    memset(&c, 0, sizeof c);
    c.out = out;
    dt_rd_strtab_init(&c.names);
    dt_rd_strtab_init(&c.pids);
    dt_rd_strtab_init(&c.rows);
    dt_rd_strtab_init(&c.flows);
    dt_rd_summary s;
    char msg[512];
    bool foreign = false;
    dt_rd_options opts = {.visit = ck_visit, .user = &c, .entry = ck_attribution_entry};
    int rc = dt_rd_read_opts(src, &opts, &s, msg, sizeof msg);
    if (rc != 0 && !c.oom) {
        /* What the events seen so far broke is reported too; the checks
           over the whole trace would only repeat that it is incomplete. */
        ck_violation(&c, 1, "%s: %s", label, msg);
        if (c.violations[1] > CK_MAX_LINES) { /* always shown, whatever the cap */
            fprintf(out, "invariant 1: %s: ", label);
            dt_rd_put_safe(out, msg);
            fputc('\n', out);
        }
    } else if (rc == 0 && !s.has_devtrace) {
        /* Another writer's trace (torch.profiler's own): what every trace
           must satisfy is checked; what only devtrace writes is not. */
        foreign = true;
        check_rows(&c, &s, false);
        check_flows(&c);
        check_generic_names(&c);
    } else if (rc == 0) {
        if (!s.has_schema_version)
            ck_violation(&c, 1, "no \"schemaVersion\" at the top level");
        if (!s.has_display_time_unit)
            ck_violation(&c, 1, "no \"displayTimeUnit\" at the top level");
        if (!s.has_base_time)
            ck_violation(&c, 1, "no \"baseTimeNanoseconds\" at the top level");
        if (!s.has_device_properties)
            ck_violation(&c, 1, "no \"deviceProperties\" at the top level");
        if (c.odd_args_events)
            ck_violation(&c, 1, "%" PRIu64 " event(s) carry args of the wrong type (e.g. a string where Kineto "
                         "writes an integer), first %s", c.odd_args_events, c.first_odd);
        check_rows(&c, &s, true);
        check_flows(&c);
        check_attribution(&c, &s);
        check_names(&c);
        check_loss(&c, &s);
    }
    if (c.oom) {
        fprintf(err, "check: %s: out of memory\n", label);
        dt_rd_summary_free(&s);
        ck_free(&c);
        return 1;
    }
    ck_print(&c);
    uint64_t total = 0;
    for (int i = 1; i <= CK_INVARIANTS; i++)
        total += c.violations[i];
    if (foreign)
        fprintf(out, "check: a trace of another writer (no devtrace key): checked 1 (JSON), 2 (flows), "
                     "4 (names), 5 (rows nest); not applicable: 3 (attribution), 5 (capture window), "
                     "6 (row names and order), 7 (loss counts)\n");
    if (total == 0)
        fprintf(out, "check: OK (%" PRIu64 " events, %zu flows)\n", s.event_count, c.nflows);
    else
        fprintf(out, "check: FAILED: %" PRIu64 " violation%s\n", total, total == 1 ? "" : "s");
    dt_rd_summary_free(&s);
    ck_free(&c);
    return total == 0 ? 0 : 1;
}

static void check_usage(FILE *f)
{
    fprintf(f, "usage: devtrace check FILE\n"
               "\n"
               "Verifies that a trace (JSON or gzip JSON; - reads standard input)\n"
               "satisfies the devtrace trace invariants (docs/trace-format.md):\n"
               "  1 valid UTF-8 JSON in the Kineto object shape\n"
               "  2 every ac2g flow has one start and one finish (bp \"e\")\n"
               "  3 devtrace.attribution matches the device event durations\n"
               "  4 kernel names that demangle are demangled, at most 5%% generic API names\n"
               "  5 events inside the capture window, no partial overlap on a row\n"
               "  6 every pid and tid named, device rows sorted after host rows\n"
               "  7 devtrace.loss lists every reason and a correct total\n"
               "Prints each violation (at most %d per invariant) and a summary line.\n"
               "Exit status: 0 all hold, 1 violations or unreadable file, 2 usage.\n",
            CK_MAX_LINES);
}

int dt_check_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            check_usage(out);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "check: unknown option %s\n", argv[i]);
            check_usage(err);
            return 2;
        }
        if (path) {
            fprintf(err, "check: one FILE only\n");
            check_usage(err);
            return 2;
        }
        path = argv[i];
    }
    if (!path) {
        check_usage(err);
        return 2;
    }
    char msg[512];
    dt_rd_source *src = dt_rd_open_file(path, msg, sizeof msg);
    if (!src) {
        fprintf(err, "check: %s\n", msg);
        return 1;
    }
    int rc = dt_check_source(src, path, out, err);
    dt_rd_close(src);
    return rc;
}
