/*
 * Perfetto protobuf writer (pf_trace.h). Field numbers are those of
 * protos/perfetto/trace/trace_packet.proto and the track_event protos, which
 * Perfetto keeps stable by contract; the tests read the output back with the
 * classes generated from those files (the `perfetto` Python package).
 */
#include "pf_trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if DT_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
/* no compression: bundles are written as plain packets (pf_trace_open) */
struct libdeflate_compressor;
#endif

/* Wire types */
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2
#define TAG(field, wt) ((uint64_t)(field) << 3 | (wt))

/* TracePacket */
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP 8
#define TP_SEQUENCE_ID 10
#define TP_TRACK_EVENT 11
#define TP_INTERNED_DATA 12
#define TP_SEQUENCE_FLAGS 13
#define TP_COMPRESSED_PACKETS 50
#define TP_DEFAULTS 59
#define TP_TRACK_DESCRIPTOR 60
#define TP_FIRST_ON_SEQUENCE 87
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
/* TracePacketDefaults */
#define DEF_TIMESTAMP_CLOCK_ID 58
/* ClockSnapshot / Clock */
#define CS_CLOCKS 1
#define CS_PRIMARY_TRACE_CLOCK 2
#define CLOCK_ID 1
#define CLOCK_TIMESTAMP 2
#define BUILTIN_CLOCK_REALTIME 1
#define BUILTIN_CLOCK_BOOTTIME 6
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
#define TE_DEBUG_ANNOTATIONS 4
#define TE_TYPE 9
#define TE_NAME_IID 10
#define TE_TRACK_UUID 11
#define TE_FLOW_IDS 47
#define TE_TERMINATING_FLOW_IDS 48
#define TYPE_SLICE_BEGIN 1
#define TYPE_SLICE_END 2
/* DebugAnnotation */
#define DA_NAME_IID 1
#define DA_BOOL 2
#define DA_UINT 3
#define DA_INT 4
#define DA_DOUBLE 5
#define DA_STRING 6
#define DA_ARRAY 12
/* InternedData: event_categories, event_names, debug_annotation_names */
static const unsigned interned_field[PF_TABLES] = {[PF_NAME] = 2, [PF_CATEGORY] = 1, [PF_ARG] = 3};

#define SEQUENCE_ID 1
#define CHUNK_TARGET (256u << 10) /* uncompressed packets per bundle */

typedef struct pf_buf {
    uint8_t *p;
    size_t len, cap;
} pf_buf;

typedef struct pf_strmap {
    /* open addressing: hash and iid side by side, the key bytes in keys */
    struct slot {
        uint64_t hash;
        uint64_t iid; /* 0: empty */
        size_t off, len;
    } *slots;
    size_t mask, count;
    pf_buf keys;
} pf_strmap;

struct pf_trace {
    dt_out *out;
    int compress;
    int err;
    pf_buf chunk;   /* framed packets not yet written */
    pf_buf te;      /* the TrackEvent being built */
    pf_buf interned[PF_TABLES]; /* framed entries for the next packet */
    pf_buf zbuf;
    struct libdeflate_compressor *z;
    /* Compression runs on a thread of its own while the next bundle is
       encoded: the chunk full of packets is swapped with `pending`. */
    pthread_t worker;
    int worker_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pf_buf pending;
    int has_pending, stop, worker_err;
    uint64_t next_iid[PF_TABLES];
    pf_strmap maps[PF_TABLES];
    uint64_t *by_key[PF_TABLES]; /* pf_intern_key: key -> iid (0: none) */
    size_t by_key_cap[PF_TABLES];
    uint64_t next_uuid;
    uint64_t ts;    /* of the slice being built */
};

/* ------------------------------------------------------------------ */
/* Wire helpers                                                        */
/* ------------------------------------------------------------------ */
static inline size_t vsize(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static int buf_reserve(pf_trace *t, pf_buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *np = dt_realloc(b->p, cap);
    if (!np) {
        if (!t->err)
            t->err = ENOMEM;
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

/* Writers into a buffer with room reserved by the caller. */
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

static inline size_t field_varint_size(unsigned field, uint64_t v)
{
    return vsize(TAG(field, WT_VARINT)) + vsize(v);
}

static inline size_t field_len_size(unsigned field, size_t len)
{
    return vsize(TAG(field, WT_LEN)) + vsize(len) + len;
}

/* ------------------------------------------------------------------ */
/* Packets                                                             */
/* ------------------------------------------------------------------ */
/* Compresses and writes one bundle of packets. */
static int write_bundle(pf_trace *t, const pf_buf *c)
{
#if !DT_HAVE_LIBDEFLATE
    (void)t, (void)c;
    return ENOTSUP;
#else
    size_t bound = libdeflate_zlib_compress_bound(t->z, c->len);
    if (t->zbuf.cap < bound) {
        uint8_t *n = dt_realloc(t->zbuf.p, bound);
        if (!n)
            return ENOMEM;
        t->zbuf.p = n;
        t->zbuf.cap = bound;
    }
    uint8_t *z = t->zbuf.p;
    size_t zlen = libdeflate_zlib_compress(t->z, c->p, c->len, z, bound);
    if (zlen == 0)
        return ENOMEM;
    uint8_t head[32], *h = head;
    size_t inner = field_len_size(TP_COMPRESSED_PACKETS, zlen);
    h = put_varint(h, TAG(1, WT_LEN));
    h = put_varint(h, inner);
    h = put_varint(h, TAG(TP_COMPRESSED_PACKETS, WT_LEN));
    h = put_varint(h, zlen);
    dt_out_write(t->out, head, (size_t)(h - head));
    dt_out_write(t->out, z, zlen);
    return t->out->err;
#endif
}

static void *compress_worker(void *arg)
{
    pf_trace *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->has_pending && !t->stop)
            pthread_cond_wait(&t->cv, &t->mu);
        if (!t->has_pending)
            break;
        pthread_mutex_unlock(&t->mu);
        int err = t->worker_err ? 0 : write_bundle(t, &t->pending);
        pthread_mutex_lock(&t->mu);
        if (err && !t->worker_err)
            t->worker_err = err;
        t->pending.len = 0;
        t->has_pending = 0;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void flush_chunk(pf_trace *t)
{
    pf_buf *c = &t->chunk;
    if (c->len == 0 || t->err)
        return;
    if (!t->compress) {
        dt_out_write(t->out, c->p, c->len);
        c->len = 0;
        return;
    }
    if (!t->worker_on) {
        int err = write_bundle(t, c);
        if (err && !t->err)
            t->err = err;
        c->len = 0;
        return;
    }
    pthread_mutex_lock(&t->mu);
    while (t->has_pending)
        pthread_cond_wait(&t->cv, &t->mu);
    pf_buf full = *c;
    *c = t->pending; /* the worker's emptied buffer comes back */
    t->pending = full;
    t->has_pending = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static size_t interned_size(const pf_trace *t)
{
    size_t n = 0;
    for (int k = 0; k < PF_TABLES; k++)
        n += t->interned[k].len;
    return n;
}

/* Appends one TracePacket: the fields in body (already encoded), the
   pending interned strings, and the TrackEvent in t->te when te is set. */
static void emit_packet(pf_trace *t, const uint8_t *body, size_t body_len, int te)
{
    if (t->err)
        return;
    size_t ilen = interned_size(t);
    size_t pkt = body_len + field_varint_size(TP_SEQUENCE_ID, SEQUENCE_ID) +
                 field_varint_size(TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    if (ilen)
        pkt += field_len_size(TP_INTERNED_DATA, ilen);
    if (te)
        pkt += field_len_size(TP_TRACK_EVENT, t->te.len);
    if (buf_reserve(t, &t->chunk, pkt + 16) != 0)
        return;
    uint8_t *p = t->chunk.p + t->chunk.len;
    p = put_varint(p, TAG(1, WT_LEN));
    p = put_varint(p, pkt);
    memcpy(p, body, body_len);
    p += body_len;
    p = put_tag_varint(p, TP_SEQUENCE_ID, SEQUENCE_ID);
    p = put_tag_varint(p, TP_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    if (ilen) {
        p = put_varint(p, TAG(TP_INTERNED_DATA, WT_LEN));
        p = put_varint(p, ilen);
        for (int k = 0; k < PF_TABLES; k++) {
            if (t->interned[k].len == 0)
                continue;
            memcpy(p, t->interned[k].p, t->interned[k].len);
            p += t->interned[k].len;
            t->interned[k].len = 0;
        }
    }
    if (te)
        p = put_tag_bytes(p, TP_TRACK_EVENT, t->te.p, t->te.len);
    t->chunk.len = (size_t)(p - t->chunk.p);
    if (t->chunk.len >= CHUNK_TARGET)
        flush_chunk(t);
}

/* A packet written as is (no sequence fields added). */
static void emit_raw_packet(pf_trace *t, const uint8_t *body, size_t len)
{
    if (t->err || buf_reserve(t, &t->chunk, len + 16) != 0)
        return;
    uint8_t *p = t->chunk.p + t->chunk.len;
    p = put_varint(p, TAG(1, WT_LEN));
    p = put_varint(p, len);
    memcpy(p, body, len);
    t->chunk.len = (size_t)(p + len - t->chunk.p);
}

pf_trace *pf_trace_open(dt_out *out, int compress)
{
    pf_trace *t = dt_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->out = out;
    t->compress = compress && DT_HAVE_LIBDEFLATE;
    /* libdeflate at its fastest level: zlib's deflate costs twice the time
       for the same ratio on these packets (bench/export prints both sizes) */
#if DT_HAVE_LIBDEFLATE
    if (t->compress && !(t->z = libdeflate_alloc_compressor(1))) {
        dt_free(t);
        return NULL;
    }
#endif
    if (t->compress) {
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->cv, NULL);
        /* without a thread, bundles are compressed in line */
        t->worker_on = pthread_create(&t->worker, NULL, compress_worker, t) == 0;
    }
    t->next_uuid = 1;
    for (int k = 0; k < PF_TABLES; k++)
        t->next_iid[k] = 1;

    /* CLOCK_REALTIME is the trace's clock: every timestamp is epoch ns, as
       in the JSON; BOOTTIME is tied to it so that tools that expect it
       convert without an offset. */
    uint8_t b[128], *p = b, clk[32], *q;
    for (int k = 0; k < 2; k++) {
        q = clk;
        q = put_tag_varint(q, CLOCK_ID, k == 0 ? BUILTIN_CLOCK_REALTIME : BUILTIN_CLOCK_BOOTTIME);
        q = put_tag_varint(q, CLOCK_TIMESTAMP, 1);
        p = put_tag_bytes(p, CS_CLOCKS, clk, (size_t)(q - clk));
    }
    p = put_tag_varint(p, CS_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_REALTIME);
    uint8_t pkt[160], *r = pkt;
    r = put_tag_bytes(r, TP_CLOCK_SNAPSHOT, b, (size_t)(p - b));
    r = put_tag_varint(r, TP_SEQUENCE_ID, SEQUENCE_ID);
    emit_raw_packet(t, pkt, (size_t)(r - pkt));

    /* the sequence starts: its packets' timestamps are CLOCK_REALTIME */
    uint8_t def[16], *d = put_tag_varint(def, DEF_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_REALTIME);
    r = pkt;
    r = put_tag_varint(r, TP_SEQUENCE_ID, SEQUENCE_ID);
    r = put_tag_varint(r, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    r = put_tag_varint(r, TP_FIRST_ON_SEQUENCE, 1);
    r = put_tag_bytes(r, TP_DEFAULTS, def, (size_t)(d - def));
    emit_raw_packet(t, pkt, (size_t)(r - pkt));
    if (t->err) {
        pf_trace_close(t);
        return NULL;
    }
    return t;
}

int pf_trace_error(const pf_trace *t)
{
    return t->err;
}

int pf_trace_close(pf_trace *t)
{
    flush_chunk(t);
    if (t->worker_on) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->worker, NULL);
        if (!t->err)
            t->err = t->worker_err;
    }
    if (t->compress) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
    }
    dt_free(t->pending.p);
    int err = t->err;
    dt_free(t->chunk.p);
    dt_free(t->te.p);
    dt_free(t->zbuf.p);
#if DT_HAVE_LIBDEFLATE
    if (t->z)
        libdeflate_free_compressor(t->z);
#endif
    for (int k = 0; k < PF_TABLES; k++) {
        dt_free(t->interned[k].p);
        dt_free(t->maps[k].slots);
        dt_free(t->maps[k].keys.p);
        dt_free(t->by_key[k]);
    }
    dt_free(t);
    return err;
}

/* ------------------------------------------------------------------ */
/* Tracks                                                              */
/* ------------------------------------------------------------------ */
static uint64_t emit_descriptor(pf_trace *t, const uint8_t *desc, size_t desc_len, unsigned kind_field)
{
    uint64_t uuid = t->next_uuid++;
    size_t inner = field_varint_size(TD_UUID, uuid) + field_len_size(kind_field, desc_len);
    pf_buf *b = &t->te; /* scratch; no event is being built between slices */
    b->len = 0;
    if (buf_reserve(t, b, field_len_size(TP_TRACK_DESCRIPTOR, inner) + 16) != 0)
        return 0;
    uint8_t *p = b->p;
    p = put_varint(p, TAG(TP_TRACK_DESCRIPTOR, WT_LEN));
    p = put_varint(p, inner);
    p = put_tag_varint(p, TD_UUID, uuid);
    p = put_tag_bytes(p, kind_field, desc, desc_len);
    emit_packet(t, b->p, (size_t)(p - b->p), 0);
    b->len = 0;
    return t->err ? 0 : uuid;
}

uint64_t pf_process(pf_trace *t, int64_t pid, const char *name, const char *labels, int64_t sort_index)
{
    size_t nlen = strlen(name), llen = labels ? strlen(labels) : 0;
    size_t n = 64 + nlen + llen;
    uint8_t *d = dt_malloc(n);
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
    dt_free(d);
    return uuid;
}

uint64_t pf_thread(pf_trace *t, int64_t pid, int64_t tid, const char *name)
{
    size_t nlen = strlen(name);
    uint8_t *d = dt_malloc(48 + nlen);
    if (!d) {
        t->err = ENOMEM;
        return 0;
    }
    uint8_t *p = d;
    p = put_tag_varint(p, THD_PID, (uint64_t)pid);
    p = put_tag_varint(p, THD_TID, (uint64_t)tid);
    p = put_tag_bytes(p, THD_THREAD_NAME, name, nlen);
    uint64_t uuid = emit_descriptor(t, d, (size_t)(p - d), TD_THREAD);
    dt_free(d);
    return uuid;
}

/* ------------------------------------------------------------------ */
/* Interning                                                           */
/* ------------------------------------------------------------------ */
static uint64_t new_iid(pf_trace *t, int table, const char *s, size_t len)
{
    uint64_t iid = t->next_iid[table]++;
    pf_buf *b = &t->interned[table];
    size_t inner = field_varint_size(1, iid) + field_len_size(2, len);
    if (buf_reserve(t, b, field_len_size(interned_field[table], inner) + 8) != 0)
        return 0;
    uint8_t *p = b->p + b->len;
    p = put_varint(p, TAG(interned_field[table], WT_LEN));
    p = put_varint(p, inner);
    p = put_tag_varint(p, 1, iid);
    p = put_tag_bytes(p, 2, s, len);
    b->len = (size_t)(p - b->p);
    return iid;
}

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t pf_intern(pf_trace *t, int table, const char *s, size_t len)
{
    pf_strmap *m = &t->maps[table];
    if ((m->count + 1) * 2 > (m->slots ? m->mask + 1 : 0)) {
        size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
        struct slot *ns = dt_calloc(cap, sizeof *ns);
        if (!ns) {
            t->err = ENOMEM;
            return 0;
        }
        for (size_t i = 0; m->slots && i <= m->mask; i++) {
            if (!m->slots[i].iid)
                continue;
            size_t j = m->slots[i].hash & (cap - 1);
            while (ns[j].iid)
                j = (j + 1) & (cap - 1);
            ns[j] = m->slots[i];
        }
        dt_free(m->slots);
        m->slots = ns;
        m->mask = cap - 1;
    }
    uint64_t h = str_hash(s, len);
    size_t i = h & m->mask;
    while (m->slots[i].iid) {
        struct slot *sl = &m->slots[i];
        if (sl->hash == h && sl->len == len && memcmp(m->keys.p + sl->off, s, len) == 0)
            return sl->iid;
        i = (i + 1) & m->mask;
    }
    if (buf_reserve(t, &m->keys, len + 1) != 0)
        return 0;
    memcpy(m->keys.p + m->keys.len, s, len);
    uint64_t iid = new_iid(t, table, s, len);
    if (!iid)
        return 0;
    m->slots[i] = (struct slot){h, iid, m->keys.len, len};
    m->keys.len += len;
    m->count++;
    return iid;
}

uint64_t pf_intern_key(pf_trace *t, int table, uint32_t key, const char *s, size_t len)
{
    if (key < t->by_key_cap[table] && t->by_key[table][key])
        return t->by_key[table][key];
    if (key >= t->by_key_cap[table]) {
        size_t cap = t->by_key_cap[table] ? t->by_key_cap[table] : 256;
        while (cap <= key)
            cap *= 2;
        uint64_t *n = dt_realloc(t->by_key[table], cap * sizeof *n);
        if (!n) {
            t->err = ENOMEM;
            return 0;
        }
        memset(n + t->by_key_cap[table], 0, (cap - t->by_key_cap[table]) * sizeof *n);
        t->by_key[table] = n;
        t->by_key_cap[table] = cap;
    }
    /* the same text under two keys still gets one iid */
    uint64_t iid = pf_intern(t, table, s, len);
    t->by_key[table][key] = iid;
    return iid;
}

/* ------------------------------------------------------------------ */
/* Slices                                                              */
/* ------------------------------------------------------------------ */
void pf_begin(pf_trace *t, uint64_t track, uint64_t ts_ns, uint64_t name_iid, uint64_t category_iid)
{
    pf_buf *b = &t->te;
    b->len = 0;
    t->ts = ts_ns;
    if (buf_reserve(t, b, 64) != 0)
        return;
    uint8_t *p = b->p;
    p = put_tag_varint(p, TE_TYPE, TYPE_SLICE_BEGIN);
    p = put_tag_varint(p, TE_TRACK_UUID, track);
    p = put_tag_varint(p, TE_NAME_IID, name_iid);
    p = put_tag_varint(p, TE_CATEGORY_IIDS, category_iid);
    b->len = (size_t)(p - b->p);
}

/* One DebugAnnotation: its name and one value field already encoded. */
static void put_annotation(pf_trace *t, uint64_t name_iid, const uint8_t *value, size_t value_len)
{
    size_t inner = field_varint_size(DA_NAME_IID, name_iid) + value_len;
    pf_buf *b = &t->te;
    if (buf_reserve(t, b, inner + 16) != 0)
        return;
    uint8_t *p = b->p + b->len;
    p = put_varint(p, TAG(TE_DEBUG_ANNOTATIONS, WT_LEN));
    p = put_varint(p, inner);
    p = put_tag_varint(p, DA_NAME_IID, name_iid);
    memcpy(p, value, value_len);
    b->len = (size_t)(p + value_len - b->p);
}

void pf_arg_uint(pf_trace *t, uint64_t name_iid, uint64_t v)
{
    uint8_t val[16], *p = put_tag_varint(val, DA_UINT, v);
    put_annotation(t, name_iid, val, (size_t)(p - val));
}

void pf_arg_int(pf_trace *t, uint64_t name_iid, int64_t v)
{
    uint8_t val[16], *p = put_tag_varint(val, DA_INT, (uint64_t)v);
    put_annotation(t, name_iid, val, (size_t)(p - val));
}

void pf_arg_bool(pf_trace *t, uint64_t name_iid, int v)
{
    uint8_t val[4], *p = put_tag_varint(val, DA_BOOL, v ? 1 : 0);
    put_annotation(t, name_iid, val, (size_t)(p - val));
}

void pf_arg_double(pf_trace *t, uint64_t name_iid, double v)
{
    uint8_t val[16], *p = put_varint(val, TAG(DA_DOUBLE, WT_I64));
    memcpy(p, &v, 8); /* little-endian, as the wire format */
    put_annotation(t, name_iid, val, (size_t)(p + 8 - val));
}

void pf_arg_string(pf_trace *t, uint64_t name_iid, const char *s, size_t len)
{
    size_t n = field_len_size(DA_STRING, len);
    uint8_t small[256];
    uint8_t *val = n <= sizeof small ? small : dt_malloc(n);
    if (!val) {
        t->err = ENOMEM;
        return;
    }
    uint8_t *p = put_tag_bytes(val, DA_STRING, s, len);
    put_annotation(t, name_iid, val, (size_t)(p - val));
    if (val != small)
        dt_free(val);
}

void pf_arg_ints(pf_trace *t, uint64_t name_iid, const int64_t *v, size_t n)
{
    uint8_t val[256], *p = val;
    if (n > 16)
        n = 16;
    for (size_t i = 0; i < n; i++) {
        uint8_t item[16], *q = put_tag_varint(item, DA_INT, (uint64_t)v[i]);
        p = put_tag_bytes(p, DA_ARRAY, item, (size_t)(q - item));
    }
    put_annotation(t, name_iid, val, (size_t)(p - val));
}

void pf_flow(pf_trace *t, uint64_t id, int terminating)
{
    pf_buf *b = &t->te;
    if (buf_reserve(t, b, 16) != 0)
        return;
    uint8_t *p = b->p + b->len;
    p = put_varint(p, TAG(terminating ? TE_TERMINATING_FLOW_IDS : TE_FLOW_IDS, WT_I64));
    memcpy(p, &id, 8);
    b->len = (size_t)(p + 8 - b->p);
}

void pf_begin_done(pf_trace *t)
{
    uint8_t ts[16], *p = put_tag_varint(ts, TP_TIMESTAMP, t->ts);
    emit_packet(t, ts, (size_t)(p - ts), 1);
}

void pf_end(pf_trace *t, uint64_t track, uint64_t ts_ns)
{
    pf_buf *b = &t->te;
    b->len = 0;
    if (buf_reserve(t, b, 32) != 0)
        return;
    uint8_t *p = b->p;
    p = put_tag_varint(p, TE_TYPE, TYPE_SLICE_END);
    p = put_tag_varint(p, TE_TRACK_UUID, track);
    b->len = (size_t)(p - b->p);
    uint8_t ts[16], *q = put_tag_varint(ts, TP_TIMESTAMP, ts_ns);
    emit_packet(t, ts, (size_t)(q - ts), 1);
}
