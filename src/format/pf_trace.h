/*
 * A Perfetto trace (protobuf TracePacket stream) written straight in the
 * wire format from the public field numbers (docs/trace-format.md says why
 * not protobuf-c): track descriptors for processes and rows, and per row
 * one packet sequence of TrackEvent slices (BEGIN/END pairs) whose track,
 * clock and interned strings are the sequence's state, so that an event
 * carries only what changes: a timestamp as the nanoseconds since the
 * sequence's previous packet (an incremental clock tied to
 * CLOCK_REALTIME), a name, a category and argument names as small interning
 * ids, its args as debug annotations, and its flows.
 *
 * Used by the session exporter (perfetto.c).
 */
#ifndef DT_PF_TRACE_H
#define DT_PF_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/out.h"

/* Wire types and the fields the per-arg writers below use. */
#define PF_WT_VARINT 0
#define PF_WT_I64 1
#define PF_WT_LEN 2
#define PF_TAG(field, wt) ((uint64_t)(field) << 3 | (wt))
/* TracePacket and TrackEvent fields of the inline paths */
#define PF_TP_TIMESTAMP 8
#define PF_TP_SEQUENCE_ID 10
#define PF_TP_TRACK_EVENT 11
#define PF_TE_TYPE 9
#define PF_TYPE_SLICE_END 2
#define TE_DEBUG_ANNOTATIONS 4
/* flow ids as varints (flow_ids_old, terminating_flow_ids_old), which
   trace_processor reads as it reads the fixed64 fields 47 and 48 when
   those are absent: correlation ids are small, 2-4 bytes instead of 8 */
#define TE_FLOW_IDS_VARINT 36
#define TE_TERMINATING_FLOW_IDS_VARINT 42
#define DA_NAME_IID 1
#define DA_BOOL 2
#define DA_UINT 3
#define DA_INT 4
#define DA_DOUBLE 5
#define DA_STRING 6
#define DA_ARRAY 12
#define DA_STRING_IID 17

/* Interning tables: event names, categories, debug annotation names and
   debug annotation string values. */
enum pf_table { PF_NAME, PF_CATEGORY, PF_ARG, PF_VALUE, PF_TABLES };

/* The writer's state is visible so that the per-arg writers inline: an
   event's args cost a few stores each. */
typedef struct pf_buf {
    uint8_t *p;
    size_t len, cap;
} pf_buf;

/* Interned strings of the current sequence: open addressing; a slot of an
   older sequence (gen) counts as empty, so a new sequence starts with no
   clearing. */
typedef struct pf_slot {
    uint64_t hash;
    uint64_t iid;
    uint32_t gen;
    uint32_t len;
    size_t off;
} pf_slot;

typedef struct pf_strmap {
    pf_slot *slots;
    size_t mask, count;
    pf_buf keys;
} pf_strmap;

typedef struct pf_trace {
    dt_out *out;
    int err;
    uint64_t t0;
    uint32_t seq;     /* the current track's sequence (0: none yet) */
    uint8_t seq_field[8]; /* its trusted_packet_sequence_id field, encoded */
    uint8_t seq_field_len;
    uint32_t gen;     /* interning generation: one per sequence */
    uint64_t last_ts; /* the sequence clock's value */
    pf_buf te;        /* the TrackEvent being built */
    uint64_t ts;      /* of the slice being built */
    pf_buf interned[PF_TABLES]; /* framed entries for the next packet */
    size_t interned_len;        /* their total */
    uint64_t next_iid[PF_TABLES];
    pf_strmap maps[PF_TABLES];
    uint64_t next_uuid;
} pf_trace;

/* Writes to out (which it does not own): first a ClockSnapshot that makes
   CLOCK_REALTIME the trace's clock. t0_ns: CLOCK_REALTIME at or before
   every timestamp of the trace. NULL when out of memory. */
DT_HIDDEN pf_trace *dt__pf_trace_open(dt_out *out, uint64_t t0_ns);
/* A writer of packet sequences for a trace another writer opened with the
   same t0_ns (a second formatting thread): it writes no ClockSnapshot of
   its own. t->out may change between sequences. */
DT_HIDDEN pf_trace *dt__pf_trace_new(dt_out *out, uint64_t t0_ns);
/* Frees the writer. 0, or ENOMEM / an errno of the output. */
DT_HIDDEN int dt__pf_trace_close(pf_trace *t);

/* Track descriptors; each returns the track's uuid (0 when out of memory).
   All come before the first dt__pf_track_begin. */
DT_HIDDEN uint64_t dt__pf_process(pf_trace *t, int64_t pid, const char *name, const char *labels, int64_t sort_index);
DT_HIDDEN uint64_t dt__pf_thread(pf_trace *t, int64_t pid, int64_t tid, const char *name);

/* The slices that follow go on this track, as a sequence of their own:
   interning starts afresh. */
DT_HIDDEN void dt__pf_track_begin(pf_trace *t, uint64_t track);
/* The same on sequence seq (from 2): a sequence may begin again (a long
   row in parts), each time with its incremental state cleared. */
DT_HIDDEN void dt__pf_sequence_begin(pf_trace *t, uint32_t seq, uint64_t track);

/* The interning id of a string on the current track's sequence (emitted
   with the next event that uses it); 0 when out of memory. Callers keep
   the ids they use often, until their next dt__pf_track_begin. */
DT_HIDDEN uint64_t dt__pf_intern(pf_trace *t, int table, const char *s, size_t len);

/* A slice: dt__pf_begin, then its args and flows, then dt__pf_begin_done; later
   dt__pf_end. Slices on a track nest and come in the order of their
   timestamps (BEGIN/END interleaved as they happen). */
DT_HIDDEN void dt__pf_begin(pf_trace *t, uint64_t ts_ns, uint64_t name_iid, uint64_t category_iid);
DT_HIDDEN void dt__pf_arg_string(pf_trace *t, uint64_t name_iid, const char *s, size_t len);
/* An array of integers ("grid": [x, y, z]); at most 16 are written. */
DT_HIDDEN void dt__pf_arg_ints(pf_trace *t, uint64_t name_iid, const int64_t *v, size_t n);
DT_HIDDEN void dt__pf_begin_done(pf_trace *t);
static inline void dt__pf_end(pf_trace *t, uint64_t ts_ns);

/* The error that stopped the writer (ENOMEM, an errno), 0 while all is well. */
DT_HIDDEN int dt__pf_trace_error(const pf_trace *t);
/* Stops the writer with err (its caller's own allocation failed). */
static inline void dt__pf_fail(pf_trace *t, int err)
{
    if (!t->err)
        t->err = err;
}

DT_HIDDEN int dt__pf_te_grow(pf_trace *t, size_t n);
DT_HIDDEN void dt__pf_emit_slow(pf_trace *t, uint64_t ts);

static inline size_t dt__pf_vsize(uint64_t v)
{
    return v < 0x80 ? 1 : (size_t)(64 - __builtin_clzll(v) + 6) / 7;
}

static inline uint8_t *dt__pf_put_varint(uint8_t *p, uint64_t v)
{
    /* ids, lengths and time steps: mostly one or two bytes */
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < 0x200000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)((v >> 7) | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Where the next n bytes of the slice's TrackEvent go; NULL when out of
   memory. */
static inline uint8_t *dt__pf_te_room(pf_trace *t, size_t n)
{
    if (__builtin_expect(t->te.cap - t->te.len < n, 0) && dt__pf_te_grow(t, n) != 0)
        return NULL;
    return t->te.p + t->te.len;
}

/* Room for n bytes of a new slice's TrackEvent, written by the caller
   (who then sets t->ts and t->te.len and calls dt__pf_begin_done); NULL when
   out of memory. */
static inline uint8_t *dt__pf_event_room(pf_trace *t, size_t n)
{
    t->te.len = 0;
    return dt__pf_te_room(t, n);
}

/* A DebugAnnotation with a varint value: at most 24 bytes, a one-byte
   length. */
static inline void dt__pf_arg_varint(pf_trace *t, uint64_t name_iid, unsigned field, uint64_t v)
{
    uint8_t *p = dt__pf_te_room(t, 32);
    if (!p)
        return;
    *p++ = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    *p++ = (uint8_t)(2 + dt__pf_vsize(name_iid) + dt__pf_vsize(v));
    *p++ = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p = dt__pf_put_varint(p, name_iid);
    *p++ = (uint8_t)PF_TAG(field, PF_WT_VARINT);
    p = dt__pf_put_varint(p, v);
    t->te.len = (size_t)(p - t->te.p);
}

static inline void dt__pf_arg_uint(pf_trace *t, uint64_t name_iid, uint64_t v)
{
    dt__pf_arg_varint(t, name_iid, DA_UINT, v);
}

static inline void dt__pf_arg_int(pf_trace *t, uint64_t name_iid, int64_t v)
{
    dt__pf_arg_varint(t, name_iid, DA_INT, (uint64_t)v);
}

static inline void dt__pf_arg_bool(pf_trace *t, uint64_t name_iid, int v)
{
    dt__pf_arg_varint(t, name_iid, DA_BOOL, v ? 1 : 0);
}

static inline void dt__pf_arg_double(pf_trace *t, uint64_t name_iid, double v)
{
    uint8_t *p = dt__pf_te_room(t, 32);
    if (!p)
        return;
    *p++ = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    *p++ = (uint8_t)(10 + dt__pf_vsize(name_iid));
    *p++ = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p = dt__pf_put_varint(p, name_iid);
    *p++ = (uint8_t)PF_TAG(DA_DOUBLE, PF_WT_I64);
    memcpy(p, &v, 8); /* little-endian, as the wire format */
    t->te.len = (size_t)(p + 8 - t->te.p);
}

/* A flow leaving this slice (terminating 0) or ending in it (1), at p;
   returns the end. */
static inline uint8_t *dt__pf_put_flow(uint8_t *p, uint64_t id, int terminating)
{
    p = dt__pf_put_varint(p, PF_TAG(terminating ? TE_TERMINATING_FLOW_IDS_VARINT : TE_FLOW_IDS_VARINT, PF_WT_VARINT));
    return dt__pf_put_varint(p, id);
}

static inline void dt__pf_flow(pf_trace *t, uint64_t id, int terminating)
{
    uint8_t *p = dt__pf_te_room(t, 16);
    if (!p)
        return;
    t->te.len = (size_t)(dt__pf_put_flow(p, id, terminating) - t->te.p);
}

/* A DebugAnnotation whose value is an interned string (PF_VALUE). */
static inline void dt__pf_arg_string_iid(pf_trace *t, uint64_t name_iid, uint64_t value_iid)
{
    uint8_t *p = dt__pf_te_room(t, 32);
    if (!p)
        return;
    *p++ = (uint8_t)PF_TAG(TE_DEBUG_ANNOTATIONS, PF_WT_LEN);
    *p++ = (uint8_t)(3 + dt__pf_vsize(name_iid) + dt__pf_vsize(value_iid));
    *p++ = (uint8_t)PF_TAG(DA_NAME_IID, PF_WT_VARINT);
    p = dt__pf_put_varint(p, name_iid);
    p = dt__pf_put_varint(p, PF_TAG(DA_STRING_IID, PF_WT_VARINT));
    p = dt__pf_put_varint(p, value_iid);
    t->te.len = (size_t)(p - t->te.p);
}

/* Args encoded once and written again: the encoded args written since
   mark (dt__pf_args_mark, after dt__pf_begin) stay valid until the next pf_* call;
   dt__pf_args_raw appends such bytes to the slice being built. Their interning
   ids belong to the current sequence. */
static inline size_t dt__pf_args_mark(const pf_trace *t)
{
    return t->te.len;
}

static inline const uint8_t *dt__pf_args_since(const pf_trace *t, size_t mark, size_t *len)
{
    *len = t->te.len - mark;
    return t->te.p + mark;
}

static inline void dt__pf_args_raw(pf_trace *t, const uint8_t *bytes, size_t len)
{
    uint8_t *p = dt__pf_te_room(t, len);
    if (!p)
        return;
    memcpy(p, bytes, len);
    t->te.len += len;
}

/* The TrackEvent in t->te as a packet at ts. The common case (nothing to
   intern, time going forward, a short event) is written in place here:
   two packets per slice, most of the writer's work. */
static inline void dt__pf_emit(pf_trace *t, uint64_t ts)
{
    size_t tel = t->te.len;
    if (__builtin_expect(t->interned_len != 0 || ts < t->last_ts || tel >= 2048 || t->err, 0)) {
        dt__pf_emit_slow(t, ts);
        return;
    }
    uint64_t delta = ts - t->last_ts;
    t->last_ts = ts;
    size_t pkt = 2 + dt__pf_vsize(delta) + t->seq_field_len + dt__pf_vsize(tel) + tel;
    uint8_t *p = (uint8_t *)dt__out_reserve(t->out, pkt + 32);
    *p++ = (uint8_t)PF_TAG(1, PF_WT_LEN);
    p = dt__pf_put_varint(p, pkt);
    *p++ = (uint8_t)PF_TAG(PF_TP_TIMESTAMP, PF_WT_VARINT);
    p = dt__pf_put_varint(p, delta);
    memcpy(p, t->seq_field, 8);
    p += t->seq_field_len;
    *p++ = (uint8_t)PF_TAG(PF_TP_TRACK_EVENT, PF_WT_LEN);
    p = dt__pf_put_varint(p, tel);
    if (t->te.cap - tel >= 16) {
        /* 16-byte blocks: the te buffer and the output have the slack */
        for (size_t k = 0; k < tel; k += 16)
            memcpy(p + k, t->te.p + k, 16);
    } else {
        memcpy(p, t->te.p, tel);
    }
    dt__out_commit(t->out, (char *)p + tel);
}

/* Ends the innermost open slice of the sequence's track at ts. */
static inline void dt__pf_end(pf_trace *t, uint64_t ts)
{
    if (__builtin_expect(ts < t->last_ts || t->interned_len != 0 || t->err, 0)) {
        uint8_t *p = dt__pf_te_room(t, 16);
        if (!p)
            return;
        p[0] = (uint8_t)PF_TAG(PF_TE_TYPE, PF_WT_VARINT);
        p[1] = PF_TYPE_SLICE_END;
        t->te.len = 2;
        dt__pf_emit_slow(t, ts);
        return;
    }
    uint64_t delta = ts - t->last_ts;
    t->last_ts = ts;
    uint8_t *p = (uint8_t *)dt__out_reserve(t->out, 32);
    *p++ = (uint8_t)PF_TAG(1, PF_WT_LEN);
    *p++ = (uint8_t)(5 + dt__pf_vsize(delta) + t->seq_field_len);
    *p++ = (uint8_t)PF_TAG(PF_TP_TIMESTAMP, PF_WT_VARINT);
    p = dt__pf_put_varint(p, delta);
    memcpy(p, t->seq_field, 8);
    p += t->seq_field_len;
    p[0] = (uint8_t)PF_TAG(PF_TP_TRACK_EVENT, PF_WT_LEN);
    p[1] = 2;
    p[2] = (uint8_t)PF_TAG(PF_TE_TYPE, PF_WT_VARINT);
    p[3] = PF_TYPE_SLICE_END;
    dt__out_commit(t->out, (char *)p + 4);
}

#endif /* DT_PF_TRACE_H */
