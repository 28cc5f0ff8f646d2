/*
 * Perfetto protobuf writer (pf_trace.h). Field numbers are those of
 * protos/perfetto/trace/trace_packet.proto, clock_snapshot.proto and the
 * track_event protos, which Perfetto keeps stable by contract; the tests
 * read the output back with the classes generated from those files (the
 * `perfetto` Python package) and decode it as trace_processor does.
 *
 * Layout of the stream:
 *  - sequence 1: a ClockSnapshot that makes CLOCK_REALTIME the trace's
 *    clock, then every TrackDescriptor;
 *  - per track, a sequence of its own (ids from 2): its first packet clears
 *    the incremental state, sets the defaults (every packet's timestamp on
 *    the sequence-scoped clock 64, every TrackEvent on this track) and
 *    ties clock 64, incremental, to CLOCK_REALTIME at t0. Each later
 *    packet's timestamp is then the nanoseconds since the previous one, a
 *    varint of one to three bytes instead of nine.
 * Strings are interned per sequence, so their ids stay small.
 */
#include "format/pf_trace.h"
#include "base/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WT_VARINT PF_WT_VARINT
#define WT_I64 PF_WT_I64
#define WT_LEN PF_WT_LEN
#define TAG PF_TAG

/* TracePacket */
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP PF_TP_TIMESTAMP
#define TP_SEQUENCE_ID PF_TP_SEQUENCE_ID
#define TP_TRACK_EVENT PF_TP_TRACK_EVENT
#define TP_INTERNED_DATA 12
#define TP_SEQUENCE_FLAGS 13
#define TP_TIMESTAMP_CLOCK_ID 58
#define TP_DEFAULTS 59
#define TP_TRACK_DESCRIPTOR 60
#define TP_FIRST_ON_SEQUENCE 87
#define SEQ_INCREMENTAL_STATE_CLEARED 1
/* TracePacketDefaults, TrackEventDefaults */
#define DEF_TIMESTAMP_CLOCK_ID 58
#define DEF_TRACK_EVENT_DEFAULTS 11
#define TED_TRACK_UUID 11
/* ClockSnapshot / Clock */
#define CS_CLOCKS 1
#define CS_PRIMARY_TRACE_CLOCK 2
#define CLOCK_ID 1
#define CLOCK_TIMESTAMP 2
#define CLOCK_IS_INCREMENTAL 3
#define BUILTIN_CLOCK_REALTIME 1
#define BUILTIN_CLOCK_BOOTTIME 6
/* a sequence-scoped clock (ids 64-127 are the writer's own) */
#define SEQUENCE_CLOCK 64
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define TD_UUID 1
#define TD_PROCESS 3
#define TD_THREAD 4
#define PD_PID 1
#define PD_LEGACY_SORT_INDEX 3
#define PD_PROCESS_NAME 6
#define PD_PROCESS_LABELS 8
#define THD_PID 1
#define THD_TID 2
#define THD_THREAD_NAME 5
/* TrackEvent */
#define TE_CATEGORY_IIDS 3
#define TE_TYPE PF_TE_TYPE
#define TE_NAME_IID 10
#define TYPE_SLICE_BEGIN 1
/* InternedData: event_categories, event_names, debug_annotation_names,
   debug_annotation_string_values (an InternedString: iid 1, str 2, the
   same shape) */
static const unsigned interned_field[PF_TABLES] = {[PF_NAME] = 2, [PF_CATEGORY] = 1, [PF_ARG] = 3, [PF_VALUE] = 29};

/* The sequence of the descriptors; tracks' sequences follow. */
#define DESCRIPTOR_SEQUENCE 1
/* A packet up to this size is written in place in the output buffer. */
#define PACKET_IN_PLACE 4096

/* ------------------------------------------------------------------ */
/* Wire helpers                                                        */
/* ------------------------------------------------------------------ */
#define vsize dt__pf_vsize
#define put_varint dt__pf_put_varint

static inline uint8_t *put_tag_varint(uint8_t *p, unsigned field, uint64_t v)
{
    p = put_varint(p, TAG(field, WT_VARINT));
    return put_varint(p, v);
}

static inline uint8_t *put_tag_bytes(uint8_t *p, unsigned field, const void *s, size_t len)
{
    p = put_varint(p, TAG(field, WT_LEN));
    p = put_varint(p, len);
    memcpy(p, s, len);
    return p + len;
}

static inline size_t field_len_size(unsigned field, size_t len)
{
    return vsize(TAG(field, WT_LEN)) + vsize(len) + len;
}

static int buf_reserve(pf_trace *t, pf_buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *np = dt__realloc(b->p, cap);
    if (!np) {
        if (!t->err)
            t->err = ENOMEM;
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Packets                                                             */
/* ------------------------------------------------------------------ */
/* A TracePacket of the already encoded fields head (and, when te, the
   pending interned strings and the TrackEvent in t->te). */
static void emit_packet(pf_trace *t, const uint8_t *head, size_t head_len, int te)
{
    if (t->err)
        return;
    size_t ilen = te ? t->interned_len : 0;
    if (te)
        t->interned_len = 0;
    size_t pkt = head_len + (ilen ? field_len_size(TP_INTERNED_DATA, ilen) : 0) +
                 (te ? field_len_size(TP_TRACK_EVENT, t->te.len) : 0);
    uint8_t pre[32], *q = pre;
    q = put_varint(q, TAG(1, WT_LEN));
    q = put_varint(q, pkt);
    dt_out *o = t->out;
    if (pkt + 16 <= PACKET_IN_PLACE) {
        uint8_t *p = (uint8_t *)dt__out_reserve(o, pkt + 16);
        memcpy(p, pre, (size_t)(q - pre));
        p += q - pre;
        memcpy(p, head, head_len);
        p += head_len;
        if (ilen) {
            p = put_varint(p, TAG(TP_INTERNED_DATA, WT_LEN));
            p = put_varint(p, ilen);
            for (int k = 0; k < PF_TABLES; k++) {
                if (!t->interned[k].len)
                    continue;
                memcpy(p, t->interned[k].p, t->interned[k].len);
                p += t->interned[k].len;
                t->interned[k].len = 0;
            }
        }
        if (te)
            p = put_tag_bytes(p, TP_TRACK_EVENT, t->te.p, t->te.len);
        dt__out_commit(o, (char *)p);
    } else {
        /* long interned names: piece by piece */
        dt__out_write(o, pre, (size_t)(q - pre));
        dt__out_write(o, head, head_len);
        if (ilen) {
            q = put_varint(pre, TAG(TP_INTERNED_DATA, WT_LEN));
            q = put_varint(q, ilen);
            dt__out_write(o, pre, (size_t)(q - pre));
            for (int k = 0; k < PF_TABLES; k++) {
                if (t->interned[k].len)
                    dt__out_write(o, t->interned[k].p, t->interned[k].len);
                t->interned[k].len = 0;
            }
        }
        if (te) {
            q = put_varint(pre, TAG(TP_TRACK_EVENT, WT_LEN));
            q = put_varint(q, t->te.len);
            dt__out_write(o, pre, (size_t)(q - pre));
            dt__out_write(o, t->te.p, t->te.len);
        }
    }
    if (o->err && !t->err)
        t->err = o->err;
}

/* A clock of a ClockSnapshot. */
static uint8_t *put_clock(uint8_t *p, unsigned id, uint64_t ts, int incremental)
{
    uint8_t c[32], *q = c;
    q = put_tag_varint(q, CLOCK_ID, id);
    q = put_tag_varint(q, CLOCK_TIMESTAMP, ts);
    if (incremental)
        q = put_tag_varint(q, CLOCK_IS_INCREMENTAL, 1);
    return put_tag_bytes(p, CS_CLOCKS, c, (size_t)(q - c));
}

pf_trace *dt__pf_trace_new(dt_out *out, uint64_t t0_ns)
{
    pf_trace *t = dt__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->out = out;
    t->t0 = t0_ns;
    t->next_uuid = 1;
    return t;
}

pf_trace *dt__pf_trace_open(dt_out *out, uint64_t t0_ns)
{
    pf_trace *t = dt__pf_trace_new(out, t0_ns);
    if (!t)
        return NULL;
    /* CLOCK_REALTIME is the trace's clock: timestamps are epoch ns, as in
       the JSON; BOOTTIME is tied to it so that tools that expect it convert
       without an offset. */
    uint8_t cs[96], *p = cs;
    p = put_clock(p, BUILTIN_CLOCK_REALTIME, t0_ns, 0);
    p = put_clock(p, BUILTIN_CLOCK_BOOTTIME, t0_ns, 0);
    p = put_tag_varint(p, CS_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_REALTIME);
    uint8_t head[160], *h = head;
    h = put_tag_bytes(h, TP_CLOCK_SNAPSHOT, cs, (size_t)(p - cs));
    h = put_tag_varint(h, TP_TIMESTAMP, t0_ns);
    h = put_tag_varint(h, TP_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_REALTIME);
    h = put_tag_varint(h, TP_SEQUENCE_ID, DESCRIPTOR_SEQUENCE);
    emit_packet(t, head, (size_t)(h - head), 0);
    if (t->err) {
        dt__pf_trace_close(t);
        return NULL;
    }
    return t;
}

int dt__pf_trace_error(const pf_trace *t)
{
    return t->err;
}

int dt__pf_trace_close(pf_trace *t)
{
    int err = t->err;
    dt__free(t->te.p);
    for (int k = 0; k < PF_TABLES; k++) {
        dt__free(t->interned[k].p);
        dt__free(t->maps[k].slots);
        dt__free(t->maps[k].keys.p);
    }
    dt__free(t);
    return err;
}

/* ------------------------------------------------------------------ */
/* Tracks                                                              */
/* ------------------------------------------------------------------ */
static uint64_t emit_descriptor(pf_trace *t, const uint8_t *desc, size_t desc_len, unsigned kind_field)
{
    uint64_t uuid = t->next_uuid++;
    size_t inner = 1 + vsize(uuid) + field_len_size(kind_field, desc_len);
    uint8_t *head = dt__malloc(inner + 32);
    if (!head) {
        t->err = ENOMEM;
        return 0;
    }
    uint8_t *p = head;
    p = put_varint(p, TAG(TP_TRACK_DESCRIPTOR, WT_LEN));
    p = put_varint(p, inner);
    p = put_tag_varint(p, TD_UUID, uuid);
    p = put_tag_bytes(p, kind_field, desc, desc_len);
    p = put_tag_varint(p, TP_SEQUENCE_ID, DESCRIPTOR_SEQUENCE);
    emit_packet(t, head, (size_t)(p - head), 0);
    dt__free(head);
    return t->err ? 0 : uuid;
}

uint64_t dt__pf_process(pf_trace *t, int64_t pid, const char *name, const char *labels, int64_t sort_index)
{
    size_t nlen = strlen(name), llen = labels ? strlen(labels) : 0;
    uint8_t *d = dt__malloc(64 + nlen + llen);
    if (!d) {
        t->err = ENOMEM;
        return 0;
    }
    uint8_t *p = d;
    p = put_tag_varint(p, PD_PID, (uint64_t)pid);
    p = put_tag_bytes(p, PD_PROCESS_NAME, name, nlen);
    if (labels)
        p = put_tag_bytes(p, PD_PROCESS_LABELS, labels, llen);
    p = put_tag_varint(p, PD_LEGACY_SORT_INDEX, (uint64_t)sort_index);
    uint64_t uuid = emit_descriptor(t, d, (size_t)(p - d), TD_PROCESS);
    dt__free(d);
    return uuid;
}

uint64_t dt__pf_thread(pf_trace *t, int64_t pid, int64_t tid, const char *name)
{
    size_t nlen = strlen(name);
    uint8_t *d = dt__malloc(48 + nlen);
    if (!d) {
        t->err = ENOMEM;
        return 0;
    }
    uint8_t *p = d;
    p = put_tag_varint(p, THD_PID, (uint64_t)pid);
    p = put_tag_varint(p, THD_TID, (uint64_t)tid);
    p = put_tag_bytes(p, THD_THREAD_NAME, name, nlen);
    uint64_t uuid = emit_descriptor(t, d, (size_t)(p - d), TD_THREAD);
    dt__free(d);
    return uuid;
}

void dt__pf_track_begin(pf_trace *t, uint64_t track)
{
    dt__pf_sequence_begin(t, t->seq ? t->seq + 1 : DESCRIPTOR_SEQUENCE + 1, track);
}

void dt__pf_sequence_begin(pf_trace *t, uint32_t seq, uint64_t track)
{
    t->seq = seq;
    t->seq_field_len = (uint8_t)(put_tag_varint(t->seq_field, TP_SEQUENCE_ID, seq) - t->seq_field);
    t->gen++;
    for (int k = 0; k < PF_TABLES; k++) {
        t->next_iid[k] = 1;
        t->maps[k].count = 0;
        t->maps[k].keys.len = 0;
        t->interned[k].len = 0;
    }
    t->interned_len = 0;
    t->last_ts = t->t0;
    uint8_t ted[16], *e = put_tag_varint(ted, TED_TRACK_UUID, track);
    uint8_t def[48], *d = def;
    d = put_tag_varint(d, DEF_TIMESTAMP_CLOCK_ID, SEQUENCE_CLOCK);
    d = put_tag_bytes(d, DEF_TRACK_EVENT_DEFAULTS, ted, (size_t)(e - ted));
    uint8_t cs[64], *c = cs;
    c = put_clock(c, BUILTIN_CLOCK_REALTIME, t->t0, 0);
    c = put_clock(c, SEQUENCE_CLOCK, t->t0, 1);
    uint8_t head[192], *h = head;
    h = put_tag_varint(h, TP_TIMESTAMP, t->t0);
    h = put_tag_varint(h, TP_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_REALTIME);
    h = put_tag_varint(h, TP_SEQUENCE_ID, t->seq);
    h = put_tag_varint(h, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    h = put_tag_varint(h, TP_FIRST_ON_SEQUENCE, 1);
    h = put_tag_bytes(h, TP_DEFAULTS, def, (size_t)(d - def));
    h = put_tag_bytes(h, TP_CLOCK_SNAPSHOT, cs, (size_t)(c - cs));
    emit_packet(t, head, (size_t)(h - head), 0);
}

/* ------------------------------------------------------------------ */
/* Interning                                                           */
/* ------------------------------------------------------------------ */
static uint64_t new_iid(pf_trace *t, int table, const char *s, size_t len)
{
    uint64_t iid = t->next_iid[table]++;
    pf_buf *b = &t->interned[table];
    size_t inner = 1 + vsize(iid) + field_len_size(2, len);
    if (buf_reserve(t, b, field_len_size(interned_field[table], inner) + 8) != 0)
        return 0;
    uint8_t *p = b->p + b->len;
    p = put_varint(p, TAG(interned_field[table], WT_LEN));
    p = put_varint(p, inner);
    p = put_tag_varint(p, 1, iid);
    p = put_tag_bytes(p, 2, s, len);
    t->interned_len += (size_t)(p - (b->p + b->len));
    b->len = (size_t)(p - b->p);
    return iid;
}

uint64_t dt__pf_intern(pf_trace *t, int table, const char *s, size_t len)
{
    pf_strmap *m = &t->maps[table];
    if ((m->count + 1) * 2 > (m->slots ? m->mask + 1 : 0)) {
        size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
        pf_slot *ns = dt__calloc(cap, sizeof *ns);
        if (!ns) {
            t->err = ENOMEM;
            return 0;
        }
        for (size_t i = 0; m->slots && i <= m->mask; i++) {
            if (m->slots[i].gen != t->gen || !m->slots[i].iid)
                continue;
            size_t j = m->slots[i].hash & (cap - 1);
            while (ns[j].iid)
                j = (j + 1) & (cap - 1);
            ns[j] = m->slots[i];
        }
        dt__free(m->slots);
        m->slots = ns;
        m->mask = cap - 1;
    }
    uint64_t h = dt__hash_bytes(s, len);
    size_t i = h & m->mask;
    for (;; i = (i + 1) & m->mask) {
        pf_slot *sl = &m->slots[i];
        if (sl->gen != t->gen || !sl->iid)
            break;
        if (sl->hash == h && sl->len == len && memcmp(m->keys.p + sl->off, s, len) == 0)
            return sl->iid;
    }
    if (len > UINT32_MAX || buf_reserve(t, &m->keys, len + 1) != 0)
        return 0;
    memcpy(m->keys.p + m->keys.len, s, len);
    uint64_t iid = new_iid(t, table, s, len);
    if (!iid)
        return 0;
    m->slots[i] = (pf_slot){h, iid, t->gen, (uint32_t)len, m->keys.len};
    m->keys.len += len;
    m->count++;
    return iid;
}

/* ------------------------------------------------------------------ */
/* Slices                                                              */
/* ------------------------------------------------------------------ */
/* The packet's timestamp: on the sequence's clock, the nanoseconds since
   its previous packet; a time before that (never, for slices that nest)
   goes as CLOCK_REALTIME, which leaves the sequence's clock as it was. */
static uint8_t *put_timestamp(pf_trace *t, uint8_t *p, uint64_t ts)
{
    if (ts >= t->last_ts) {
        p = put_tag_varint(p, TP_TIMESTAMP, ts - t->last_ts);
        t->last_ts = ts;
        return p;
    }
    p = put_tag_varint(p, TP_TIMESTAMP, ts);
    return put_tag_varint(p, TP_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_REALTIME);
}

void dt__pf_begin(pf_trace *t, uint64_t ts_ns, uint64_t name_iid, uint64_t category_iid)
{
    pf_buf *b = &t->te;
    b->len = 0;
    t->ts = ts_ns;
    if (b->cap < 512 && buf_reserve(t, b, 512) != 0)
        return;
    uint8_t *p = b->p;
    p = put_tag_varint(p, TE_TYPE, TYPE_SLICE_BEGIN);
    p = put_tag_varint(p, TE_NAME_IID, name_iid);
    p = put_tag_varint(p, TE_CATEGORY_IIDS, category_iid);
    b->len = (size_t)(p - b->p);
}

int dt__pf_te_grow(pf_trace *t, size_t n)
{
    return buf_reserve(t, &t->te, n);
}

#define te_room dt__pf_te_room

/* A DebugAnnotation of inner bytes: room for it, its framing and name
   written; NULL when out of memory. */
static uint8_t *annotation_head(pf_trace *t, uint64_t name_iid, size_t inner)
{
    uint8_t *p = te_room(t, inner + 16);
    if (!p)
        return NULL;
    p = put_varint(p, TAG(TE_DEBUG_ANNOTATIONS, WT_LEN));
    p = put_varint(p, inner);
    return put_tag_varint(p, DA_NAME_IID, name_iid);
}

void dt__pf_arg_string(pf_trace *t, uint64_t name_iid, const char *s, size_t len)
{
    uint8_t *p = annotation_head(t, name_iid, 1 + vsize(name_iid) + field_len_size(DA_STRING, len));
    if (!p)
        return;
    p = put_tag_bytes(p, DA_STRING, s, len);
    t->te.len = (size_t)(p - t->te.p);
}

void dt__pf_arg_ints(pf_trace *t, uint64_t name_iid, const int64_t *v, size_t n)
{
    if (n > 16)
        n = 16;
    size_t inner = 1 + vsize(name_iid);
    for (size_t i = 0; i < n; i++)
        inner += 2 + 1 + vsize((uint64_t)v[i]);
    uint8_t *p = annotation_head(t, name_iid, inner);
    if (!p)
        return;
    for (size_t i = 0; i < n; i++) {
        *p++ = (uint8_t)TAG(DA_ARRAY, WT_LEN);
        *p++ = (uint8_t)(1 + vsize((uint64_t)v[i]));
        p = put_tag_varint(p, DA_INT, (uint64_t)v[i]);
    }
    t->te.len = (size_t)(p - t->te.p);
}

/* A slice's packet the inline paths (pf_trace.h) leave: pending interned
   strings, a time going backwards, a long TrackEvent. */
void dt__pf_emit_slow(pf_trace *t, uint64_t ts)
{
    if (t->err)
        return;
    uint8_t head[32], *p = put_timestamp(t, head, ts);
    p = put_tag_varint(p, TP_SEQUENCE_ID, t->seq);
    emit_packet(t, head, (size_t)(p - head), 1);
}

void dt__pf_begin_done(pf_trace *t)
{
    dt__pf_emit(t, t->ts);
}
