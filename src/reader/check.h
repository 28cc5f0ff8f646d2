/*
 * `devtrace check`: verifies the invariants of docs/trace-format.md in one
 * streaming pass. Per-event checks run in the visitor (check.c); the
 * checks that need the whole trace keep only what they need:
 *  - nesting and the capture window: each complete event in its row's log,
 *    four varints (start as a difference from the row's previous start,
 *    duration, event number as a difference, name id with the event's
 *    class in two bits: device work, sync, host, other, which tell the
 *    overlaps Kineto writes apart), 6-10 bytes for a typical event. A row whose events arrived in start order (devtrace's
 *    own rows always do) is checked by reading its log once; another is
 *    decoded and sorted first (check_rows.c, with the rows' and pids' names
 *    and order);
 *  - flows: a count of starts and finishes per flow id; a flow end is
 *    checked against its row's newest event at once (writers put it right
 *    after the event it starts or finishes on) and kept for the end only
 *    when it is not at that event's start (check_flows.c);
 *  - attribution: the device time per External id, compared with
 *    devtrace.attribution as that is read (check_values.c, with names,
 *    loss counts and memory);
 *  - tables keyed by distinct names, pids and rows.
 *
 * What check's files share; not part of the reader's interface.
 */
#ifndef DT_RD_CHECK_H
#define DT_RD_CHECK_H

#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "base/vec.h"
#include "reader/dt_reader.h"
#include "reader/results.h"

/* The kinds of finding, each under one invariant; printed grouped by kind,
   in this order (check.c names them). */
enum ck_kind {
    KD_UNREADABLE, KD_TOP_LEVEL, KD_NO_ROW, KD_NO_TIME, KD_ODD_ARGS,
    KD_FLOW_FIELDS, KD_FLOW_BP, KD_FLOW_NO_START, KD_FLOW_NO_FINISH, KD_FLOW_FANOUT, KD_FLOW_COUNT,
    KD_FLOW_UNBOUND,
    KD_ATTRIBUTION,
    KD_MANGLED, KD_GENERIC,
    KD_WINDOW, KD_OUTSIDE,
    KD_UNNAMED, KD_ORDER,
    KD_LOSS,
    KD_MEMORY,
    /* rows that do not nest, by what overlaps (ck_class) */
    KD_DURATION, KD_OVERLAP, KD_OVERLAP_SYNC, KD_OVERLAP_DEVICE, KD_OVERLAP_HOST,
    KD_COUNT
};

/* What a complete event is, for telling the overlaps Kineto writes apart:
   kept with each event in its row's log (two bits). */
enum ck_class { CL_OTHER, CL_WORK, CL_SYNC, CL_HOST };

/* Who wrote the trace decides which invariants apply and which findings
   are known properties of the writer rather than defects. */
enum ck_writer {
    WR_DEVTRACE, /* devtrace's own (record, merge): every invariant, every finding a defect */
    WR_PLUGIN,   /* torch.profiler's trace with devtrace.torch's key in it */
    WR_FOREIGN   /* torch.profiler's own, or another writer's */
};

/* A complete event, as the row logs give them back. */
typedef struct ck_interval {
    int64_t start, end;
    uint64_t index;
    uint32_t name;
    uint8_t cls; /* enum ck_class */
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
    /* the last flow finished at the row's newest event: a second finish of
       it there is one flow finished twice on one event */
    uint64_t finish_key, finish_index;
    uint32_t pid;
    bool named, used, unordered, finished;
} ck_row;

typedef struct ck_pid {
    bool named, used, has_sort, device, host, is_num;
    int64_t sort, num;
} ck_pid;

/* Flow ids and how often each was started and finished, one word a slot:
   (key + 1) << 6 | finishes << 3 | starts, counts saturating at 7; 0 is an
   empty slot. A key is a numeric id below CK_FLOW_NUMERIC, or
   CK_FLOW_NUMERIC + its id in the flows string table (string ids, and
   numbers too large to be keys).
   Not base/hash.h's dt_u64map, on purpose: its 16-byte slots and mixing
   hash cost check about 6 bytes per event (over the 16 it is held to)
   and a quarter of its speed on bench_reader's trace; flow ids, mostly
   consecutive, keep eight to a cache line here (check_flows.c). */
#define CK_FLOW_NUMERIC (UINT64_C(1) << 55)
typedef struct ck_flowtab {
    uint64_t *slots;
    size_t mask, count;
    bool mixed; /* keys crowded: a mixing hash */
} ck_flowtab;

#define FLOW_STARTS(v) ((unsigned)((v) & 7))
#define FLOW_FINISHES(v) ((unsigned)((v) >> 3 & 7))

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
    /* flow keys finished twice on one event: malformed, not Kineto's fan-out */
    dt_u64map twice;
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

static inline bool str_is(const char *s, size_t len, const char *lit, size_t lit_len)
{
    return len == lit_len && memcmp(s, lit, len) == 0;
}

#define IS(s, len, lit) str_is(s, len, lit, sizeof(lit) - 1)

/* ---- findings and their text (check.c) ---- */
/* A finding of a kind (enum ck_kind): counted, its line kept when shown. */
__attribute__((format(printf, 3, 4))) void dt__rd_check_finding(ck *c, int kind, const char *fmt, ...);
/* ns as microseconds with three decimals, in buf. */
const char *dt__rd_check_fmt_us(char *buf, size_t len, int64_t ns);
/* Key text that doubles as the human-readable form: 7 or "Spans". */
size_t dt__rd_check_id_key(char *buf, size_t len, const dt_rd_id *id);
/* The event, for a finding: its number, name, row and ts. */
void dt__rd_check_where(char *buf, size_t len, const dt_rd_event *e);

/* ---- rows and pids (check_rows.c) ---- */
/* The id of a pid or a row, added when new; -1 when out of memory. */
int64_t dt__rd_check_pid_id(ck *c, const dt_rd_id *pid);
int64_t dt__rd_check_row_id(ck *c, const dt_rd_event *e);
/* A new piece at the end of the row's log; -1 when out of memory. */
int dt__rd_check_log_chunk(ck_row *r);

static inline uint8_t *dt__rd_check_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Differences of starts wrap as u64 and are zigzagged: a row out of order
   has negative ones, and hostile times any. */
static inline uint64_t dt__rd_check_zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

/* A complete event into its row's log (inline: once per event); -1 when
   out of memory. */
static inline int dt__rd_check_log(ck_row *r, int64_t start, int64_t end, uint64_t index, uint32_t name, int cls)
{
    if ((!r->tail || r->tail->cap - r->tail->len < CK_LOG_MAX) && dt__rd_check_log_chunk(r) != 0)
        return -1;
    ck_chunk *t = r->tail;
    if (r->n > 0 && (start < r->prev_start || (start == r->prev_start && end > r->prev_end)))
        r->unordered = true;
    uint8_t *p = t->bytes + t->len;
    p = dt__rd_check_put_varint(p, dt__rd_check_zigzag((uint64_t)start - (uint64_t)r->prev_start));
    p = dt__rd_check_put_varint(p, (uint64_t)(end - start));
    p = dt__rd_check_put_varint(p, index - r->prev_index);
    p = dt__rd_check_put_varint(p, (uint64_t)name << 2 | (unsigned)cls);
    t->len = (uint32_t)(p - t->bytes);
    r->prev_start = start;
    r->prev_end = end;
    r->prev_index = index;
    r->n++;
    return 0;
}
/* Invariants 5 (the capture window), 9 (nesting), 6 (row names) and the
   flow ends not at an event's start (2), over every row. */
void dt__rd_check_rows(ck *c, const dt_rd_summary *s, bool devtrace);
/* Invariant 6: pids named, device pids sorted after host pids. */
void dt__rd_check_names(ck *c);

/* ---- flows (check_flows.c) ---- */
/* A flow event (ph s or f) on row; -1 when out of memory. */
int dt__rd_check_flow(ck *c, const dt_rd_event *e, uint32_t row);
/* The pending flow ends in (row, ts) order. */
void dt__rd_check_sort_flow_ends(ck *c);
/* A pending flow end that no event on its row starts at. */
void dt__rd_check_flow_end_missing(ck *c, const ck_flow_end *fe);
/* Every flow id with one start and one finish, in id order. */
void dt__rd_check_flows(ck *c);

/* ---- names, attribution, loss, memory (check_values.c) ---- */
/* Whether a kernel name demangles (asked once per name id). */
bool dt__rd_check_demangles(ck *c, size_t name_id, const char *name);
/* The fallback name a backend gives an API it cannot name: <word>#<digits>. */
bool dt__rd_check_is_generic_name(const char *s);
/* Invariant 8, per event; -1 when out of memory. */
int dt__rd_check_memory(ck *c, const dt_rd_event *e);
/* Invariant 8, across events. */
void dt__rd_check_memory_totals(ck *c);
/* An entry of devtrace.attribution, as the reader meets it (dt_rd_options.entry). */
int dt__rd_check_attribution_entry(void *user, int which, const char *key, size_t len, int64_t value);
void dt__rd_check_attribution(ck *c, const dt_rd_summary *s);
void dt__rd_check_generic_names(ck *c);
void dt__rd_check_loss(ck *c, const dt_rd_summary *s);

#endif
