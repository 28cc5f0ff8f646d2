/*
 * `devtrace check`: verifies the invariants of docs/trace-format.md in one
 * streaming pass. Per-event checks run in the visitor; the checks that need
 * the whole trace keep only what they need:
 *  - nesting and the capture window: each complete event in its row's log,
 *    four varints (start as a difference from the row's previous start,
 *    duration, event number as a difference, name id), 6-10 bytes for a
 *    typical event. A row whose events arrived in start order (devtrace's
 *    own rows always do) is checked by reading its log once; another is
 *    decoded and sorted first;
 *  - flows: one 8-byte word per flow id (the id, its start and finish
 *    counts); a flow end is checked against its row's newest event at once
 *    (writers put it right after the event it starts or finishes on) and
 *    kept for the end only when it is not at that event's start;
 *  - attribution: the device time per External id, compared with
 *    devtrace.attribution as that is read;
 *  - tables keyed by distinct names, pids and rows.
 */
#include "base/hash.h"
#include "dt_reader.h"
#include "base/demangle.h"
#include "devtrace/devtrace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CK_EXAMPLES 5 /* lines shown per kind of finding, without --verbose */
#define CK_INVARIANTS 8

/* The kinds of finding, each under one invariant; printed grouped by kind,
   in this order. */
enum ck_kind {
    KD_UNREADABLE, KD_TOP_LEVEL, KD_NO_ROW, KD_NO_TIME, KD_ODD_ARGS,
    KD_FLOW_FIELDS, KD_FLOW_BP, KD_FLOW_NO_START, KD_FLOW_NO_FINISH, KD_FLOW_COUNT, KD_FLOW_UNBOUND,
    KD_ATTRIBUTION,
    KD_MANGLED, KD_GENERIC,
    KD_DURATION, KD_WINDOW, KD_OUTSIDE, KD_OVERLAP,
    KD_UNNAMED, KD_ORDER,
    KD_LOSS,
    KD_MEMORY,
    KD_COUNT
};

/* Who wrote the trace decides which invariants apply and which findings
   are known properties of the writer rather than defects. */
enum ck_writer {
    WR_DEVTRACE, /* devtrace's own (record, merge): every invariant, every finding a defect */
    WR_PLUGIN,   /* torch.profiler's trace with devtrace.torch's key in it */
    WR_FOREIGN   /* torch.profiler's own, or another writer's */
};

/* Kineto writes a flow's finish on a call whose launching side it did not
   keep, and a launch's start whose device work fell outside the window. */
#define KINETO_CUT_FLOWS "Kineto writes flows whose other side it did not record (cut at the capture window's " \
                         "edge, or an end it does not keep)"

static const struct {
    int inv;
    const char *title;
    const char *known; /* why it is a known property of torch.profiler's traces; NULL: a defect */
} ck_kinds[KD_COUNT] = {
    [KD_UNREADABLE] = {1, "the trace cannot be read", NULL},
    [KD_TOP_LEVEL] = {1, "top-level keys missing", NULL},
    [KD_NO_ROW] = {1, "events without pid or tid", NULL},
    [KD_NO_TIME] = {1, "complete events without ts or dur", NULL},
    [KD_ODD_ARGS] = {1, "args of the wrong type", NULL},
    [KD_FLOW_FIELDS] = {2, "flow events without id or ts", NULL},
    [KD_FLOW_BP] = {2, "flow finishes without \"bp\":\"e\"", NULL},
    [KD_FLOW_NO_START] = {2, "flows with a finish and no start", KINETO_CUT_FLOWS},
    [KD_FLOW_NO_FINISH] = {2, "flows with a start and no finish", KINETO_CUT_FLOWS},
    [KD_FLOW_COUNT] = {2, "flow ids started or finished more than once", NULL},
    [KD_FLOW_UNBOUND] = {2, "flow ends at no event's start on their row", NULL},
    [KD_ATTRIBUTION] = {3, "attribution that does not match the device events", NULL},
    [KD_MANGLED] = {4, "mangled kernel names", NULL},
    [KD_GENERIC] = {4, "generic API names", NULL},
    [KD_DURATION] = {5, "negative or unrepresentable durations", NULL},
    [KD_WINDOW] = {5, "the capture window", NULL},
    [KD_OUTSIDE] = {5, "events outside the capture window", NULL},
    [KD_OVERLAP] = {5, "partial overlaps on a row (rows that do not nest)", NULL},
    [KD_UNNAMED] = {6, "rows and pids without a name", NULL},
    [KD_ORDER] = {6, "device rows not sorted after host rows", NULL},
    [KD_LOSS] = {7, "loss counts", NULL},
    [KD_MEMORY] = {8, "torch memory events", NULL},
};

/* A complete event, as the row logs give them back. */
typedef struct ck_interval {
    int64_t start, end;
    uint64_t index;
    uint32_t name;
} ck_interval;

/* A piece of a row's log; pieces double up to CK_CHUNK_MAX bytes. */
typedef struct ck_chunk {
    struct ck_chunk *next;
    uint32_t len, cap;
    uint8_t bytes[];
} ck_chunk;

#define CK_CHUNK_MIN 240
#define CK_CHUNK_MAX (64u << 10)
#define CK_LOG_MAX 40 /* the longest entry: four varints */

typedef struct ck_row {
    ck_chunk *head, *tail;
    uint64_t n; /* events in the log */
    int64_t prev_start, prev_end;
    uint64_t prev_index;
    uint32_t pid;
    bool named, used, unordered;
} ck_row;

typedef struct ck_pid {
    bool named, used, has_sort, device, host, is_num;
    int64_t sort, num;
} ck_pid;

/* Flow ids and how often each was started and finished, one word a slot:
   (key + 1) << 6 | finishes << 3 | starts, counts saturating at 7; 0 is an
   empty slot. A key is a numeric id below CK_FLOW_NUMERIC, or
   CK_FLOW_NUMERIC + its id in the flows string table (string ids, and
   numbers too large to be keys). */
#define CK_FLOW_NUMERIC (UINT64_C(1) << 55)
typedef struct ck_flowtab {
    uint64_t *slots;
    size_t mask, count;
    bool mixed; /* keys crowded: a mixing hash */
} ck_flowtab;

/* A flow end not at the start of its row's newest event: looked for among
   the row's events at the end. */
typedef struct ck_flow_end {
    uint64_t key, index;
    int64_t ts;
    uint32_t row;
    uint32_t finish;
} ck_flow_end;

/* Recently seen numeric (pid, tid) pairs, so that most events skip
   formatting and hashing their row key. */
#define CK_ROW_CACHE 64
typedef struct ck_row_cache {
    int64_t pid, tid;
    uint32_t row;
    bool valid;
} ck_row_cache;

/* A [memory] instant, kept for the totals' check at the end. */
typedef struct ck_mem {
    int64_t ts, type, device, bytes, total;
    uint64_t index;
} ck_mem;

typedef struct ck {
    FILE *out;
    ck_row_cache row_cache[CK_ROW_CACHE];
    uint64_t findings[KD_COUNT];
    /* the first lines of each kind (every line with verbose) */
    char **lines[KD_COUNT];
    size_t lines_cap[KD_COUNT];
    bool verbose;
    int writer; /* enum ck_writer, known once the trace has been read */
    dt_strtab names, pids, rows, flows;
    ck_flowtab flowtab;
    ck_flow_end *pending;
    size_t npending, pending_cap;
    /* device time per External id (bit 63: listed in devtrace.attribution) */
    dt_u64map ext;
    ck_pid *pidv;
    size_t pid_cap;
    ck_row *rowv;
    size_t row_cap;
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
    ck_mem *mem;
    size_t nmem, mem_cap;
    bool oom;
} ck;

__attribute__((format(printf, 3, 4))) static void ck_finding(ck *c, int kind, const char *fmt, ...)
{
    uint64_t n = c->findings[kind]++;
    if (n >= CK_EXAMPLES && !c->verbose)
        return;
    if (dt_rd_grow((void **)&c->lines[kind], &c->lines_cap[kind], (size_t)n + 1, sizeof *c->lines[kind]) != 0) {
        c->oom = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    if (vasprintf(&line, fmt, ap) < 0)
        line = NULL;
    va_end(ap);
    c->lines[kind][n] = line;
}

static bool ck_is_known(const ck *c, int kind)
{
    return c->writer != WR_DEVTRACE && ck_kinds[kind].known;
}

/* Each kind of finding: a header with its count where there is more than
   one or it is a known property of the writer, then its first lines
   (every line with verbose), each as "invariant N: ...". */
static void ck_print(ck *c)
{
    for (int k = 0; k < KD_COUNT; k++) {
        uint64_t n = c->findings[k];
        int inv = ck_kinds[k].inv;
        if (n == 0)
            continue;
        if (ck_is_known(c, k))
            fprintf(c->out, "invariant %d, %s: %" PRIu64 ", a known property of torch.profiler's traces, not a "
                            "defect: %s\n", inv, ck_kinds[k].title, n, ck_kinds[k].known);
        else if (n > 1)
            fprintf(c->out, "invariant %d, %s: %" PRIu64 "\n", inv, ck_kinds[k].title, n);
        uint64_t shown = c->verbose || n < CK_EXAMPLES ? n : CK_EXAMPLES;
        for (uint64_t i = 0; i < shown; i++) {
            /* a name in a finding is the trace's bytes: one finding stays one line */
            fprintf(c->out, "invariant %d: ", inv);
            dt_rd_put_safe(c->out, c->lines[k][i] ? c->lines[k][i] : "(out of memory)");
            fputc('\n', c->out);
        }
        if (shown < n)
            fprintf(c->out, "invariant %d: ... %" PRIu64 " more of these not shown (--verbose shows every one)\n",
                    inv, n - shown);
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
    int64_t id = dt_strtab_intern(&c->pids, key, n, &added);
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
    int64_t id = dt_strtab_intern(&c->rows, key, (size_t)n, &added);
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

static inline bool str_is(const char *s, size_t len, const char *lit, size_t lit_len)
{
    return len == lit_len && memcmp(s, lit, len) == 0;
}

#define IS(s, len, lit) str_is(s, len, lit, sizeof(lit) - 1)

/* Rows of devices (invariant 6): what runs there. */
static bool is_device_cat(int cat)
{
    return dt_rd_cat_is_device_work(cat) || cat == DT_RD_CAT_GPU_USER_ANNOTATION || cat == DT_RD_CAT_SYNC ||
           cat == DT_RD_CAT_OVERHEAD;
}

/* Rows of hosts: what runs there. The capture window ("Trace") is neither:
   torch.profiler draws it on its own "Spans" process, sorted after the
   devices. */
static bool is_host_cat(int cat)
{
    return dt_rd_cat_is_api(cat) || cat == DT_RD_CAT_USER_ANNOTATION || cat == DT_RD_CAT_CPU_OP ||
           cat == DT_RD_CAT_PYTHON_FUNCTION;
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

/* A flow id written as a decimal integer below CK_FLOW_NUMERIC; other ids
   (strings, numbers that are not plain integers or are larger) are keyed
   by their text. */
static bool parse_flow_id(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s || (s[0] == '0' && s[1]))
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v >= CK_FLOW_NUMERIC / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v >= CK_FLOW_NUMERIC)
        return false;
    *out = v;
    return true;
}

/* ---- row logs ---- */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

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

/* Differences of starts wrap as u64 and are zigzagged: a row out of order
   has negative ones, and hostile times any. */
static inline uint64_t zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ ((uint64_t)0 - (z & 1));
}

static int ck_log(ck_row *r, int64_t start, int64_t end, uint64_t index, uint32_t name)
{
    ck_chunk *t = r->tail;
    if (!t || t->cap - t->len < CK_LOG_MAX) {
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
        r->tail = t = n;
    }
    if (r->n > 0 && (start < r->prev_start || (start == r->prev_start && end > r->prev_end)))
        r->unordered = true;
    uint8_t *p = t->bytes + t->len;
    p = put_varint(p, zigzag((uint64_t)start - (uint64_t)r->prev_start));
    p = put_varint(p, (uint64_t)(end - start));
    p = put_varint(p, index - r->prev_index);
    p = put_varint(p, name);
    t->len = (uint32_t)(p - t->bytes);
    r->prev_start = start;
    r->prev_end = end;
    r->prev_index = index;
    r->n++;
    return 0;
}

typedef struct ck_log_reader {
    const ck_chunk *chunk;
    uint32_t pos;
    int64_t start;
    uint64_t index;
} ck_log_reader;

static bool ck_log_next(ck_log_reader *lr, ck_interval *v)
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
    v->name = (uint32_t)get_varint(&p);
    lr->pos = (uint32_t)(p - lr->chunk->bytes);
    return true;
}

/* ---- flows ---- */
/* Where a key's probe starts. Flow ids are mostly consecutive numbers
   (correlation ids), met in order: the key itself keeps their slots
   together in memory, a cache line holding eight, where a mixing hash
   would send each lookup to another line (a third of check's time on a
   1 GB trace). Keys that crowd together, as hostile ones may, make a
   probe long; the table then mixes. */
static inline size_t flow_home(const ck_flowtab *t, uint64_t key)
{
    return (size_t)(t->mixed ? dt_mix64(key) : key) & t->mask;
}

#define CK_FLOW_PROBE_MAX 64

static int flow_rehash(ck_flowtab *t, size_t cap)
{
    uint64_t *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    size_t old_mask = t->mask;
    uint64_t *old = t->slots;
    t->slots = n;
    t->mask = cap - 1;
    for (size_t i = 0; old && i <= old_mask; i++) {
        if (!old[i])
            continue;
        size_t j = flow_home(t, (old[i] >> 6) - 1);
        while (n[j])
            j = (j + 1) & t->mask;
        n[j] = old[i];
    }
    free(old);
    return 0;
}

/* The slot of a flow key, inserted with no start or finish when new; NULL
   when out of memory. */
static uint64_t *ck_flow_slot(ck_flowtab *t, uint64_t key)
{
    if ((t->count + 1) * 4 > (t->slots ? t->mask + 1 : 0) * 3 &&
        flow_rehash(t, t->slots ? (t->mask + 1) * 2 : 1024) != 0)
        return NULL;
    for (;;) {
        size_t i = flow_home(t, key);
        for (size_t probe = 0; probe < CK_FLOW_PROBE_MAX || t->mixed; probe++, i = (i + 1) & t->mask) {
            uint64_t v = t->slots[i];
            if (!v) {
                t->slots[i] = (key + 1) << 6;
                t->count++;
                return &t->slots[i];
            }
            if ((v >> 6) - 1 == key)
                return &t->slots[i];
        }
        t->mixed = true;
        if (flow_rehash(t, t->mask + 1) != 0)
            return NULL;
    }
}

#define FLOW_STARTS(v) ((unsigned)((v) & 7))
#define FLOW_FINISHES(v) ((unsigned)((v) >> 3 & 7))

static int ck_flow(ck *c, const dt_rd_event *e, uint32_t row)
{
    char w[800];
    if (!(e->has & DT_RD_HAS_ID) || !(e->has & DT_RD_HAS_TS)) {
        where(w, sizeof w, e);
        ck_finding(c, KD_FLOW_FIELDS, "flow %s has no %s", w, (e->has & DT_RD_HAS_ID) ? "ts" : "id");
        return 0;
    }
    uint64_t key;
    if (e->id_is_str || !parse_flow_id(e->id, &key)) {
        int64_t sid = dt_strtab_intern(&c->flows, e->id, strlen(e->id), NULL);
        if (sid < 0)
            return -1;
        key = CK_FLOW_NUMERIC + (uint64_t)sid;
    }
    uint64_t *slot = ck_flow_slot(&c->flowtab, key);
    if (!slot)
        return -1;
    bool finish = e->ph[0] == 'f';
    unsigned shift = finish ? 3 : 0;
    if ((*slot >> shift & 7) < 7)
        *slot += UINT64_C(1) << shift;
    if (finish && strcmp(e->bp, "e") != 0) {
        where(w, sizeof w, e);
        ck_finding(c, KD_FLOW_BP, "flow finish id %s at %s has no \"bp\":\"e\"", e->id, w);
    }
    const ck_row *r = &c->rowv[row];
    if (r->n > 0 && r->prev_start == e->ts_ns)
        return 0;
    if (dt_rd_grow((void **)&c->pending, &c->pending_cap, c->npending + 1, sizeof *c->pending) != 0)
        return -1;
    c->pending[c->npending++] = (ck_flow_end){key, e->index, e->ts_ns, row, finish};
    return 0;
}

/* Invariant 8, per event: torch's memory args, integers. */
static int ck_memory(ck *c, const dt_rd_event *e)
{
    static const struct { uint32_t bit; const char *name; } args[] = {
        {DT_RD_HAS_MEM_BYTES, "Bytes"}, {DT_RD_HAS_MEM_TOTAL, "Total Allocated"},
        {DT_RD_HAS_MEM_DEVICE, "Device Id"}, {DT_RD_HAS_MEM_TYPE, "Device Type"}, {DT_RD_HAS_ADDR, "Addr"}};
    char w[800];
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
        if (!(e->has & args[i].bit)) {
            where(w, sizeof w, e);
            ck_finding(c, KD_MEMORY, "[memory] %s has no integer \"%s\"", w, args[i].name);
            return 0;
        }
    if (!(e->has & DT_RD_HAS_TS)) {
        where(w, sizeof w, e);
        ck_finding(c, KD_MEMORY, "[memory] %s has no ts", w);
        return 0;
    }
    if (e->mem_device < -1 || (e->mem_device == -1) != (e->mem_type == 0)) {
        where(w, sizeof w, e);
        ck_finding(c, KD_MEMORY, "[memory] %s has \"Device Id\" %" PRId64 " with \"Device Type\" %" PRId64
                     " (-1 is the host's, type 0, only)", w, e->mem_device, e->mem_type);
        return 0;
    }
    if (dt_rd_grow((void **)&c->mem, &c->mem_cap, c->nmem + 1, sizeof *c->mem) != 0)
        return -1;
    c->mem[c->nmem++] = (ck_mem){e->ts_ns, e->mem_type, e->mem_device, e->mem_bytes, e->mem_total, e->index};
    return 0;
}

static int cmp_mem(const void *a, const void *b)
{
    const ck_mem *x = a, *y = b;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Invariant 8, across events: per device, in time order, each "Total
   Allocated" is the one before plus its "Bytes". Allocations at one
   instant may come in any order: the chain restarts after them. */
static void check_memory(ck *c)
{
    if (c->nmem < 2)
        return;
    qsort(c->mem, c->nmem, sizeof *c->mem, cmp_mem);
    const ck_mem *prev = NULL;
    for (size_t i = 0; i < c->nmem;) {
        size_t j = i + 1;
        while (j < c->nmem && c->mem[j].type == c->mem[i].type &&
               c->mem[j].device == c->mem[i].device && c->mem[j].ts == c->mem[i].ts)
            j++;
        const ck_mem *m = &c->mem[i];
        if (prev && (prev->type != m->type || prev->device != m->device)) prev = NULL;
        if (j == i + 1 && prev && (int64_t)((uint64_t)prev->total + (uint64_t)m->bytes) != m->total)
            ck_finding(c, KD_MEMORY, "[memory] traceEvents[%" PRIu64 "]: \"Total Allocated\" %" PRId64 " is not %" PRId64
                         " (the one before, traceEvents[%" PRIu64 "]) plus \"Bytes\" %" PRId64, m->index, m->total,
                         prev->total, prev->index, m->bytes);
        prev = j == i + 1 ? m : NULL;
        i = j;
    }
}

static int ck_visit(void *user, const dt_rd_event *e)
{
    ck *c = user;
    char w[800];
    if (e->ph[0] == 'M' && !e->ph[1]) {
        if (!e->pid.present)
            return 0;
        int64_t pid = ck_pid_id(c, &e->pid);
        if (pid < 0)
            goto oom;
        if (IS(e->name, e->name_len, "process_name")) {
            c->pidv[pid].named = true;
        } else if (IS(e->name, e->name_len, "process_sort_index") && (e->has & DT_RD_HAS_SORT_INDEX)) {
            c->pidv[pid].has_sort = true;
            c->pidv[pid].sort = e->sort_index;
        } else if (IS(e->name, e->name_len, "thread_name") && e->tid.present) {
            int64_t row = ck_row_id(c, e);
            if (row < 0)
                goto oom;
            c->rowv[row].named = true;
        }
        return 0;
    }
    if (!e->pid.present || !e->tid.present) {
        where(w, sizeof w, e);
        ck_finding(c, KD_NO_ROW, "%s has no %s", w, e->pid.present ? "tid" : "pid");
        return 0;
    }
    int64_t row = ck_row_id(c, e);
    if (row < 0)
        goto oom;
    ck_pid *pid = &c->pidv[c->rowv[row].pid];
    c->rowv[row].used = true;
    pid->used = true;
    bool is_flow = (e->ph[0] == 's' || e->ph[0] == 'f') && !e->ph[1] && e->cat_kind == DT_RD_CAT_AC2G;
    if (is_device_cat(e->cat_kind) || (is_flow && e->ph[0] == 'f'))
        pid->device = true;
    else if (is_host_cat(e->cat_kind) || (is_flow && e->ph[0] == 's'))
        pid->host = true;

    if (is_flow)
        return ck_flow(c, e, (uint32_t)row) == 0 ? 0 : (c->oom = true, 1);
    if (e->ph[0] == 'i' && !e->ph[1] && IS(e->name, e->name_len, "[memory]"))
        return ck_memory(c, e) == 0 ? 0 : (c->oom = true, 1);
    if (e->ph[0] != 'X' || e->ph[1])
        return 0;
    if ((e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) != (DT_RD_HAS_TS | DT_RD_HAS_DUR)) {
        where(w, sizeof w, e);
        ck_finding(c, KD_NO_TIME, "complete event %s has no %s", w, (e->has & DT_RD_HAS_TS) ? "dur" : "ts");
        return 0;
    }
    if (e->dur_ns < 0) {
        where(w, sizeof w, e);
        ck_finding(c, KD_DURATION, "%s has a negative duration", w);
        return 0;
    }
    if (e->ts_ns > INT64_MAX - e->dur_ns) {
        where(w, sizeof w, e);
        ck_finding(c, KD_DURATION, "%s ends beyond any representable time", w);
        return 0;
    }
    int64_t name = dt_strtab_intern(&c->names, e->name, e->name_len, NULL);
    if (name < 0 || ck_log(&c->rowv[row], e->ts_ns, e->ts_ns + e->dur_ns, e->index, (uint32_t)name) != 0)
        goto oom;

    if (e->odd_args) {
        c->odd_args_events++;
        if (c->odd_args_events == 1) {
            where(w, sizeof w, e);
            snprintf(c->first_odd, sizeof c->first_odd, "%s", w);
        }
    }
    if (e->cat_kind == DT_RD_CAT_TRACE && IS(e->name, e->name_len, "devtrace capture") && c->trace_events++ == 0) {
        c->trace_start = e->ts_ns;
        c->trace_end = e->ts_ns + e->dur_ns;
        c->trace_index = e->index;
    }
    if (e->cat_kind == DT_RD_CAT_KERNEL && e->name[0] == '_' && e->name[1] == 'Z' &&
        ck_demangles(c, (size_t)name, e->name)) {
        where(w, sizeof w, e);
        ck_finding(c, KD_MANGLED, "kernel name is mangled: %s", w);
    }
    if (dt_rd_cat_is_api(e->cat_kind)) {
        c->api_events++;
        if (is_generic_name(e->name) && c->generic_api++ == 0) {
            snprintf(c->first_generic, sizeof c->first_generic, "%s", e->name);
            c->first_generic_index = e->index;
        }
    }
    if ((e->has & DT_RD_HAS_EXTERNAL_ID) && dt_rd_cat_is_device_work(e->cat_kind)) {
        uint64_t *sum = dt_u64map_slot(&c->ext, e->external_id, NULL);
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

static int cmp_flow_end(const void *a, const void *b)
{
    const ck_flow_end *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The text of a flow key: the number, or the string id as written. */
static const char *flow_id_text(const ck *c, uint64_t key, char *buf, size_t len)
{
    if (key >= CK_FLOW_NUMERIC)
        return dt_strtab_key(&c->flows, (size_t)(key - CK_FLOW_NUMERIC));
    snprintf(buf, len, "%" PRIu64, key);
    return buf;
}

static uint64_t flow_counts(const ck *c, uint64_t key)
{
    size_t i = flow_home(&c->flowtab, key);
    for (;; i = (i + 1) & c->flowtab.mask)
        if ((c->flowtab.slots[i] >> 6) - 1 == key)
            return c->flowtab.slots[i];
}

/* Flow ends that no event on their row starts at. Only flows with one
   start and one finish are looked at: the others are wrong already. */
static void flow_end_missing(ck *c, const ck_flow_end *fe)
{
    uint64_t v = flow_counts(c, fe->key);
    if (FLOW_STARTS(v) != 1 || FLOW_FINISHES(v) != 1)
        return;
    char a[32], idbuf[32];
    ck_finding(c, KD_FLOW_UNBOUND, "flow id %s %s (event #%" PRIu64 ", %s, ts %s us) is not at the start of an event on its row",
                 flow_id_text(c, fe->key, idbuf, sizeof idbuf), fe->finish ? "finish" : "start", fe->index,
                 dt_strtab_key(&c->rows, fe->row), fmt_us(a, sizeof a, fe->ts));
}

static void check_rows(ck *c, const dt_rd_summary *s, bool devtrace)
{
    bool window = devtrace && s->has_window_start && s->has_window_end && s->has_base_time;
    /* Relative to the base, like ts, so that nothing overflows. */
    int64_t neg_base = s->base_time_ns == INT64_MIN ? INT64_MAX : -s->base_time_ns;
    int64_t ws = dt_rd_add_sat(s->window_start_ns, neg_base), we = dt_rd_add_sat(s->window_end_ns, neg_base);
    if (devtrace && (!s->has_window_start || !s->has_window_end))
        ck_finding(c, KD_WINDOW, "devtrace.captureWindow with startNs and endNs is missing");
    ck_interval *stack = NULL, *sorted = NULL;
    size_t stack_cap = 0, sorted_cap = 0;
    char a[32], b[32], d[32];
    if (window && c->trace_events == 1 && (c->trace_start != ws || c->trace_end != we))
        ck_finding(c, KD_WINDOW, "the \"Trace\" event #%" PRIu64 " [%s, %s] us is not the capture window [%s, %s] us",
                     c->trace_index, fmt_us(a, sizeof a, c->trace_start), fmt_us(b, sizeof b, c->trace_end),
                     fmt_us(d, sizeof d, ws), fmt_us((char[32]){0}, 32, we));
    if (c->trace_events > 1)
        ck_finding(c, KD_WINDOW, "%" PRIu64 " \"Trace\" events; the capture window is drawn once", c->trace_events);
    if (c->npending > 1)
        qsort(c->pending, c->npending, sizeof *c->pending, cmp_flow_end);
    size_t fe = 0; /* the next pending flow end, in (row, ts) order */
    for (size_t ri = 0; ri < c->rows.count; ri++) {
        ck_row *r = &c->rowv[ri];
        const char *rowname = dt_strtab_key(&c->rows, ri);
        if (devtrace && !r->named && r->used)
            ck_finding(c, KD_UNNAMED, "row %s is not named by thread_name metadata", rowname);
        ck_log_reader lr = {r->head, 0, 0, 0};
        size_t nsorted = 0;
        if (r->unordered) {
            /* decoded and sorted, one row at a time */
            if (dt_rd_grow((void **)&sorted, &sorted_cap, r->n, sizeof *sorted) != 0) {
                c->oom = true;
                break;
            }
            for (ck_interval *v = sorted; ck_log_next(&lr, v); v++)
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
            } else if (!ck_log_next(&lr, &cur)) {
                break;
            }
            const ck_interval *v = &cur;
            for (; fe < c->npending && c->pending[fe].row == ri && c->pending[fe].ts <= v->start; fe++)
                if (c->pending[fe].ts < v->start)
                    flow_end_missing(c, &c->pending[fe]);
            if (window && (v->start < ws || v->end > we))
                ck_finding(c, KD_OUTSIDE, "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) is outside the "
                             "capture window [%s, %s] us",
                             v->index, dt_strtab_key(&c->names, v->name), rowname, fmt_us(a, sizeof a, v->start),
                             fmt_us(b, sizeof b, v->end), fmt_us(d, sizeof d, ws), fmt_us((char[32]){0}, 32, we));
            while (depth > 0 && stack[depth - 1].end <= v->start)
                depth--;
            if (depth > 0 && v->end > stack[depth - 1].end) {
                const ck_interval *o = &stack[depth - 1];
                ck_finding(c, KD_OVERLAP, "event #%" PRIu64 " \"%.200s\" (%s, ts %s us, end %s us) partially overlaps "
                             "event #%" PRIu64 " \"%.200s\" (ts %s us, end %s us)",
                             v->index, dt_strtab_key(&c->names, v->name), rowname, fmt_us(a, sizeof a, v->start),
                             fmt_us(b, sizeof b, v->end), o->index, dt_strtab_key(&c->names, o->name),
                             fmt_us(d, sizeof d, o->start), fmt_us((char[32]){0}, 32, o->end));
            }
            if (dt_rd_grow((void **)&stack, &stack_cap, depth + 1, sizeof *stack) != 0) {
                c->oom = true;
                break;
            }
            stack[depth++] = *v;
        }
        for (; fe < c->npending && c->pending[fe].row == ri; fe++)
            flow_end_missing(c, &c->pending[fe]);
    }
    for (; fe < c->npending; fe++) /* rows that hold no complete event */
        flow_end_missing(c, &c->pending[fe]);
    free(stack);
    free(sorted);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every flow id with one start and one finish, in id order. */
static void check_flows(ck *c)
{
    uint64_t *bad = NULL;
    size_t nbad = 0, cap = 0;
    for (size_t i = 0; c->flowtab.slots && i <= c->flowtab.mask; i++) {
        uint64_t v = c->flowtab.slots[i];
        if (!v || (FLOW_STARTS(v) == 1 && FLOW_FINISHES(v) == 1))
            continue;
        if (dt_rd_grow((void **)&bad, &cap, nbad + 1, sizeof *bad) != 0) {
            c->oom = true;
            break;
        }
        bad[nbad++] = v;
    }
    /* the packed word orders by key first */
    if (nbad > 1)
        qsort(bad, nbad, sizeof *bad, cmp_u64);
    char idbuf[32];
    for (size_t i = 0; i < nbad; i++) {
        uint64_t v = bad[i];
        unsigned starts = FLOW_STARTS(v), finishes = FLOW_FINISHES(v);
        int kind = starts == 0 && finishes == 1   ? KD_FLOW_NO_START
                   : starts == 1 && finishes == 0 ? KD_FLOW_NO_FINISH
                                                  : KD_FLOW_COUNT;
        ck_finding(c, kind, "flow id %s has %u%s start(s) and %u%s finish(es), not one each",
                     flow_id_text(c, (v >> 6) - 1, idbuf, sizeof idbuf), FLOW_STARTS(v),
                     FLOW_STARTS(v) == 7 ? " or more" : "", FLOW_FINISHES(v), FLOW_FINISHES(v) == 7 ? " or more" : "");
    }
    free(bad);
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
        ck_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] is not an External id", key);
        return 0;
    }
    uint64_t *slot = NULL;
    if (!dt_u64map_get(&c->ext, ext, &sum)) {
        ck_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but no device event carries "
                     "that External id",
                     key, value);
        return 0;
    }
    slot = dt_u64map_slot(&c->ext, ext, NULL);
    if (sum >> 63) {
        ck_finding(c, KD_ATTRIBUTION, "devtrace.attribution lists External id %.100s twice", key);
        return 0;
    }
    *slot = sum | UINT64_C(1) << 63;
    if ((int64_t)sum != value)
        ck_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but its device events sum to %" PRId64
                     " ns",
                     key, value, (int64_t)sum);
    return 0;
}

static void check_attribution(ck *c, const dt_rd_summary *s)
{
    if (!s->attribution.present) {
        ck_finding(c, KD_ATTRIBUTION, "devtrace.attribution is missing");
        return;
    }
    size_t cursor = 0;
    uint64_t key, value;
    while (dt_u64map_next(&c->ext, &cursor, &key, &value))
        if (!(value >> 63))
            ck_finding(c, KD_ATTRIBUTION, "External id %" PRIu64 " carries %" PRId64 " ns of device time but is missing from "
                         "devtrace.attribution",
                         key, (int64_t)value);
}

/* Invariant 4 on names, for any writer. */
static void check_generic_names(ck *c)
{
    if (c->generic_api * 100 > c->api_events * 5)
        ck_finding(c, KD_GENERIC, "%" PRIu64 " of %" PRIu64 " runtime/driver events (%.1f%%, more than 5%%) have a "
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
            ck_finding(c, KD_UNNAMED, "pid %s is not named by process_name metadata", dt_strtab_key(&c->pids, i));
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
            ck_finding(c, KD_ORDER, "device pid %s has no process_sort_index", dt_strtab_key(&c->pids, i));
            continue;
        }
        int64_t k = p->has_sort ? p->sort : p->num;
        if (k <= max_host)
            ck_finding(c, KD_ORDER, "device pid %s (sort index %" PRId64 "%s) does not sort after host pid %s (sort "
                         "index %" PRId64 ")",
                         dt_strtab_key(&c->pids, i), k, p->has_sort ? "" : ", by pid",
                         dt_strtab_key(&c->pids, max_host_id), max_host);
    }
}

static void check_loss(ck *c, const dt_rd_summary *s)
{
    if (!s->loss.present) {
        ck_finding(c, KD_LOSS, "devtrace.loss is missing");
        return;
    }
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *reason = dt_loss_reason_name((dt_loss_reason)r);
        bool found = false;
        for (size_t i = 0; i < s->loss.count && !found; i++)
            found = strcmp(s->loss.items[i].key, reason) == 0;
        if (!found)
            ck_finding(c, KD_LOSS, "devtrace.loss has no \"%s\" count", reason);
    }
    bool has_total = false;
    int64_t total = 0;
    uint64_t sum = 0;
    bool overflow = false;
    for (size_t i = 0; i < s->loss.count; i++) {
        const dt_rd_kv *kv = &s->loss.items[i];
        if (kv->value < 0)
            ck_finding(c, KD_LOSS, "devtrace.loss[\"%.100s\"] is negative (%" PRId64 ")", kv->key, kv->value);
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
        ck_finding(c, KD_LOSS, "devtrace.loss has no \"total\"");
    else if (overflow || total < 0 || (uint64_t)total != sum)
        ck_finding(c, KD_LOSS, "devtrace.loss.total is %" PRId64 " but the reasons sum to %" PRIu64, total, sum);
}

static void ck_free(ck *c)
{
    for (int k = 0; k < KD_COUNT; k++) {
        uint64_t kept = c->findings[k] < c->lines_cap[k] ? c->findings[k] : c->lines_cap[k];
        for (uint64_t i = 0; c->lines[k] && i < kept; i++)
            free(c->lines[k][i]);
        free(c->lines[k]);
    }
    for (size_t i = 0; i < c->rows.count; i++) {
        for (ck_chunk *k = c->rowv[i].head, *next; k; k = next) {
            next = k->next;
            free(k);
        }
    }
    free(c->rowv);
    free(c->pidv);
    free(c->flowtab.slots);
    free(c->pending);
    dt_u64map_free(&c->ext);
    free(c->mem);
    free(c->demangles);
    dt_strtab_free(&c->names);
    dt_strtab_free(&c->pids);
    dt_strtab_free(&c->rows);
    dt_strtab_free(&c->flows);
}

static int ck_writer_of(const dt_rd_summary *s)
{
    if (!s->has_devtrace)
        return WR_FOREIGN;
    return s->writer && strcmp(s->writer, DT_RD_WRITER_PLUGIN) == 0 ? WR_PLUGIN : WR_DEVTRACE;
}

int dt_check_source_ex(dt_rd_source *src, const char *label, unsigned flags, FILE *out, FILE *err)
{
    ck c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.verbose = (flags & DT_CHECK_VERBOSE) != 0;
    dt_strtab_init(&c.names);
    dt_strtab_init(&c.pids);
    dt_strtab_init(&c.rows);
    dt_strtab_init(&c.flows);
    dt_rd_summary s;
    char msg[512];
    dt_rd_options opts = {.visit = ck_visit, .user = &c, .entry = ck_attribution_entry};
    int rc = dt_rd_read_opts(src, &opts, &s, msg, sizeof msg);
    if (rc == 0)
        c.writer = ck_writer_of(&s);
    if (rc != 0 && !c.oom) {
        /* What the events seen so far broke is reported too; the checks
           over the whole trace would only repeat that it is incomplete. */
        ck_finding(&c, KD_UNREADABLE, "%s: %s", label, msg);
    } else if (rc == 0 && c.writer != WR_DEVTRACE) {
        /* torch.profiler's trace, with or without devtrace.torch's key:
           what every trace must satisfy is checked; what only devtrace's
           own writer promises is not, save the plugin's loss counts. */
        check_rows(&c, &s, false);
        check_flows(&c);
        check_generic_names(&c);
        check_memory(&c);
        if (c.writer == WR_PLUGIN)
            check_loss(&c, &s);
    } else if (rc == 0 && s.format == DT_RD_FORMAT_PERFETTO) {
        /* devtrace's Perfetto trace: no JSON top level, no attribution */
        check_rows(&c, &s, true);
        check_flows(&c);
        check_memory(&c);
        check_names(&c);
        check_loss(&c, &s);
    } else if (rc == 0) {
        if (!s.has_schema_version)
            ck_finding(&c, KD_TOP_LEVEL, "no \"schemaVersion\" at the top level");
        if (!s.has_display_time_unit)
            ck_finding(&c, KD_TOP_LEVEL, "no \"displayTimeUnit\" at the top level");
        if (!s.has_base_time)
            ck_finding(&c, KD_TOP_LEVEL, "no \"baseTimeNanoseconds\" at the top level");
        if (!s.has_device_properties)
            ck_finding(&c, KD_TOP_LEVEL, "no \"deviceProperties\" at the top level");
        if (c.odd_args_events)
            ck_finding(&c, KD_ODD_ARGS, "%" PRIu64 " event(s) carry args of the wrong type (e.g. a string where Kineto "
                         "writes an integer), first %s", c.odd_args_events, c.first_odd);
        check_rows(&c, &s, true);
        check_flows(&c);
        check_memory(&c);
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
    uint64_t defects = 0, known = 0;
    for (int k = 0; k < KD_COUNT; k++) {
        if (ck_is_known(&c, k))
            known += c.findings[k];
        else
            defects += c.findings[k];
    }
    if (rc == 0 && c.writer == WR_FOREIGN && s.format == DT_RD_FORMAT_PERFETTO)
        fprintf(out, "check: a Perfetto trace whose capture slice carries no devtrace args (merge's): checked 1 "
                     "(protobuf), 2 (flows), 4 (names), 5 (rows nest), 8 (memory); not applicable: 3 (attribution), "
                     "5 (capture window), 6 (row names and order), 7 (loss counts)\n");
    else if (rc == 0 && c.writer == WR_FOREIGN)
        fprintf(out, "check: a trace of another writer (no devtrace key): checked 1 (JSON), 2 (flows), "
                     "4 (names), 5 (rows nest), 8 (memory); not applicable: 3 (attribution), 5 (capture window), "
                     "6 (row names and order), 7 (loss counts)\n");
    else if (rc == 0 && s.format == DT_RD_FORMAT_PERFETTO)
        fprintf(out, "check: a Perfetto protobuf trace devtrace wrote: checked 1 (protobuf), 2 (flows), 4 (names), "
                     "5 (window, rows nest), 6 (row names and order), 7 (loss counts), 8 (memory); not applicable: "
                     "3 (attribution, which only the JSON carries)\n");
    else if (rc == 0 && c.writer == WR_PLUGIN)
        fprintf(out, "check: a torch.profiler trace with devtrace.torch's device activity (devtrace.writer \"%s\"): "
                     "checked 1 (JSON), 2 (flows), 4 (names), 5 (rows nest), 7 (loss counts), 8 (memory); not "
                     "applicable: 3 (attribution), 5 (capture window), 6 (row names and order)\n",
                DT_RD_WRITER_PLUGIN);
    char also[160] = "";
    if (known)
        snprintf(also, sizeof also, "; %" PRIu64 " finding%s that %s known properties of torch.profiler's traces, "
                 "not defects", known, known == 1 ? "" : "s", known == 1 ? "is one of the" : "are");
    if (defects == 0)
        fprintf(out, "check: OK (%" PRIu64 " events, %zu flows)%s\n", s.event_count, c.flowtab.count, also);
    else
        fprintf(out, "check: FAILED: %" PRIu64 " violation%s%s\n", defects, defects == 1 ? "" : "s", also);
    dt_rd_summary_free(&s);
    ck_free(&c);
    return defects == 0 ? 0 : 1;
}

int dt_check_source(dt_rd_source *src, const char *label, FILE *out, FILE *err)
{
    return dt_check_source_ex(src, label, 0, out, err);
}

static void check_usage(FILE *f)
{
    fprintf(f, "usage: devtrace check [--verbose] FILE\n"
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
               "  8 torch's [memory] events carry their args and consistent totals\n"
               "Who wrote the trace decides what applies: devtrace's own traces get\n"
               "every invariant; torch.profiler's (with or without devtrace.torch)\n"
               "those every trace must satisfy, and findings that are known properties\n"
               "of torch.profiler's traces (flows with one side cut) are reported but\n"
               "do not fail the check.\n"
               "Findings are grouped by kind, each with its count and first %d lines.\n"
               "  --verbose, -v  every line of every kind\n"
               "Exit status: 0 no defect, 1 defects or unreadable file, 2 usage.\n",
            CK_EXAMPLES);
}

int dt_check_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            check_usage(out);
            return 0;
        }
        if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
            flags |= DT_CHECK_VERBOSE;
            continue;
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
    int rc = dt_check_source_ex(src, path, flags, out, err);
    dt_rd_close(src);
    return rc;
}
