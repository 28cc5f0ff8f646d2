/*
 * Streaming trace reader: its own validating JSON tokenizer over chunks of
 * plain or gzip JSON.
 *
 * Why not a library: yajl, the parser this reader used first, tokenizes at
 * about 250 MB/s on this kind of trace with no callbacks at all (bench/reader
 * prints it beside this reader), below the 300 MB/s a 1 GB trace needs; the
 * faster parsers are not in Debian (yyjson, simdjson) or are C++ (RapidJSON),
 * and the C DOM parsers in Debian (json-c, jansson, cJSON) hold the document.
 * Trace JSON is mostly short keys, short strings and numbers, which a
 * tokenizer that scans strings eight bytes at a time and does not copy what
 * it does not keep reads several times faster, while validating as strictly
 * (RFC 8259 grammar, UTF-8 without overlongs or surrogates).
 *
 * The tokenizer only ever stops between tokens: when a token (or, for raw
 * capture, an event) does not end inside the buffer, the unread tail moves to
 * the front, more input is read, and the token is scanned again.
 *
 * A small explicit stack of frames (one per open object/array, bounded by
 * DT_RD_MAX_DEPTH) knows where the parser is: at the top level, inside
 * traceEvents, inside one event or its args, inside the devtrace object, or
 * in a subtree nobody needs (validated, nothing stored).
 */
#include "dt_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define RD_CHUNK (1u << 20)
/* A token or captured event larger than this is refused rather than held. */
#define RD_MAX_TOKEN (256u << 20)

/* ------------------------------------------------------------------ */
/* Sources                                                             */
/* ------------------------------------------------------------------ */
struct dt_rd_source {
    FILE *fp;
    bool own_fp;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    /* raw (compressed) input window, for gzip */
    unsigned char *inbuf;
    const unsigned char *in;
    size_t in_len, in_pos;
    bool in_eof;
    bool checked, gzip;
    bool zs_init, z_ended;
    z_stream zs;
};

dt_rd_source *dt_rd_open_file(const char *path, char *err, size_t errlen)
{
    dt_rd_source *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        s->fp = stdin;
    } else {
        s->fp = fopen(path, "rb");
        if (!s->fp) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            free(s);
            return NULL;
        }
        s->own_fp = true;
    }
    s->inbuf = malloc(RD_CHUNK);
    if (!s->inbuf) {
        snprintf(err, errlen, "out of memory");
        dt_rd_close(s);
        return NULL;
    }
    return s;
}

dt_rd_source *dt_rd_open_memory(const void *data, size_t len)
{
    dt_rd_source *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->mem = data;
    s->mem_len = len;
    return s;
}

void dt_rd_close(dt_rd_source *s)
{
    if (!s)
        return;
    if (s->own_fp && s->fp)
        fclose(s->fp);
    if (s->zs_init)
        inflateEnd(&s->zs);
    free(s->inbuf);
    free(s);
}

/* Makes raw input available in s->in[in_pos..in_len); -1 on read error. */
static int src_fill(dt_rd_source *s, char *err, size_t errlen)
{
    if (s->in_pos < s->in_len || s->in_eof)
        return 0;
    if (s->mem) {
        size_t n = s->mem_len - s->mem_pos;
        if (n > RD_CHUNK)
            n = RD_CHUNK;
        s->in = s->mem + s->mem_pos;
        s->mem_pos += n;
        s->in_len = n;
        s->in_pos = 0;
        if (n == 0)
            s->in_eof = true;
        return 0;
    }
    if (!s->fp) {
        s->in_eof = true;
        s->in_len = s->in_pos = 0;
        return 0;
    }
    size_t n = fread(s->inbuf, 1, RD_CHUNK, s->fp);
    if (n == 0 && ferror(s->fp)) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    s->in = s->inbuf;
    s->in_len = n;
    s->in_pos = 0;
    if (n == 0)
        s->in_eof = true;
    return 0;
}

static int src_detect(dt_rd_source *s, char *err, size_t errlen)
{
    if (s->checked)
        return 0;
    if (src_fill(s, err, errlen) != 0)
        return -1;
    s->checked = true;
    /* A gzip member starts with 1f 8b; JSON never does. */
    if (s->in_len - s->in_pos >= 2 && s->in[s->in_pos] == 0x1f && s->in[s->in_pos + 1] == 0x8b) {
        s->gzip = true;
        memset(&s->zs, 0, sizeof s->zs);
        if (inflateInit2(&s->zs, 15 + 16) != Z_OK) {
            snprintf(err, errlen, "cannot initialise zlib");
            return -1;
        }
        s->zs_init = true;
    }
    return 0;
}

/* Up to cap bytes of JSON text into dst: the count, 0 at the end, -1 on
   error. */
static long src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    if (src_detect(s, err, errlen) != 0)
        return -1;
    if (!s->gzip) {
        if (s->fp && s->in_pos >= s->in_len && !s->in_eof) {
            /* nothing pending: read straight into the caller's window */
            size_t n = fread(dst, 1, cap, s->fp);
            if (n == 0 && ferror(s->fp)) {
                snprintf(err, errlen, "read error: %s", strerror(errno));
                return -1;
            }
            if (n == 0)
                s->in_eof = true;
            return (long)n;
        }
        if (src_fill(s, err, errlen) != 0)
            return -1;
        size_t n = s->in_len - s->in_pos;
        if (n > cap)
            n = cap;
        memcpy(dst, s->in + s->in_pos, n);
        s->in_pos += n;
        return (long)n;
    }
    for (;;) {
        if (s->z_ended) {
            /* Concatenated members are one stream (what `cat a.gz b.gz` gives). */
            if (src_fill(s, err, errlen) != 0)
                return -1;
            if (s->in_pos >= s->in_len)
                return 0;
            if (s->in[s->in_pos] != 0x1f) {
                snprintf(err, errlen, "gzip: unexpected data after the compressed stream");
                return -1;
            }
            inflateReset(&s->zs);
            s->z_ended = false;
        }
        if (src_fill(s, err, errlen) != 0)
            return -1;
        s->zs.next_in = (unsigned char *)(uintptr_t)(s->in + s->in_pos);
        s->zs.avail_in = (uInt)(s->in_len - s->in_pos);
        s->zs.next_out = dst;
        s->zs.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
        size_t before = s->zs.avail_out;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        s->in_pos = s->in_len - s->zs.avail_in;
        size_t produced = before - s->zs.avail_out;
        if (rc == Z_STREAM_END) {
            s->z_ended = true;
        } else if (rc == Z_BUF_ERROR && s->in_eof) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip: corrupt data (%s)", s->zs.msg ? s->zs.msg : "inflate failed");
            return -1;
        }
        if (produced > 0)
            return (long)produced;
        if (s->in_eof && !s->z_ended) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */
/* Short compares: a call to memcmp costs more than comparing the short keys
   and words traces use. */
static inline bool bytes_equal(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_i64(const char *s, size_t len, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint64_t u;
    if (!parse_u64(s + neg, len - neg, &u))
        return false;
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1)
            return false;
        *out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
    } else {
        if (u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)u;
    }
    return true;
}

/* An integer written as a string by a writer that uses strings for ids
   ("7", "0x1f"), as Kineto's ROCm path does for streams. */
static bool parse_int_text(const char *s, size_t len, int64_t *out)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        uint64_t v = 0;
        if (len - 2 > 16)
            return false;
        for (size_t i = 2; i < len; i++) {
            char ch = s[i];
            unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                         : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                         : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10)
                                                  : 16u;
            if (d == 16)
                return false;
            v = v << 4 | d;
        }
        if (v > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)v;
        return true;
    }
    return parse_i64(s, len, out);
}

static bool parse_double(const char *s, size_t len, double *out)
{
    char tmp[64];
    if (len == 0 || len >= sizeof tmp)
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    if (*end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static int64_t clamp_i64(double v)
{
    if (!(v > -9.2e18))
        return v != v ? 0 : INT64_MIN;
    if (!(v < 9.2e18))
        return INT64_MAX;
    return (int64_t)v;
}

bool dt_rd_parse_us_to_ns(const char *s, size_t len, int64_t *out_ns)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && s[i] == '-') {
        neg = true;
        i++;
    }
    size_t int_start = i;
    uint64_t us = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        unsigned d = (unsigned)(s[i] - '0');
        if (us > (UINT64_MAX - d) / 10)
            return false;
        us = us * 10 + d;
        i++;
    }
    if (i == int_start)
        return false;
    uint64_t frac = 0;
    int round_up = 0;
    if (i < len && s[i] == '.') {
        i++;
        size_t fstart = i, nd = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (nd < 3)
                frac = frac * 10 + (unsigned)(s[i] - '0');
            else if (nd == 3)
                round_up = s[i] >= '5';
            nd++;
            i++;
        }
        if (i == fstart)
            return false;
        for (; nd < 3; nd++)
            frac *= 10;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        /* Exponent notation is not what devtrace writes; a double is as
           exact as the text can be then. */
        double v;
        if (!parse_double(s, len, &v))
            return false;
        double ns = v * 1000.0;
        if (!(ns > -9.2e18 && ns < 9.2e18))
            return false;
        *out_ns = llround(ns);
        return true;
    }
    if (i != len)
        return false;
    if (us > (uint64_t)INT64_MAX / 1000 - 1)
        return false;
    int64_t ns = (int64_t)(us * 1000 + frac + (uint64_t)round_up);
    *out_ns = neg ? -ns : ns;
    return true;
}

/* ------------------------------------------------------------------ */
/* Parser state                                                        */
/* ------------------------------------------------------------------ */
enum role {
    R_TOP, /* before the root value */
    R_ROOT,
    R_EVENTS,
    R_EVENT,
    R_ARGS,
    R_DEVPROPS,
    R_DIST,
    R_DT,
    R_DT_WINDOW,
    R_DT_CLOCK,
    R_DT_RTC,
    R_DT_LOSS,
    R_DT_COUNTS,
    R_DT_ATTR,
    R_DT_PARENTS,
    R_DT_NOTES,
    R_SKIP
};

enum key {
    K_OTHER = 0,
    K_ANY, /* every key of a map (loss, counts, attribution, notes) */
    K_SCHEMA, K_DISPLAY, K_BASE, K_DEVPROPS, K_EVENTS, K_DEVTRACE, K_TRACENAME, K_DIST,
    K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS,
    K_EXT, K_CORR, K_BYTES, K_PARENT, K_DEVICE, K_STREAM, K_CBID, K_ANAME, K_LABELS, K_SORT, K_COLLECTIVE,
    K_VERSION, K_BACKEND, K_VENDOR, K_LIBRARY, K_LIBVER, K_WINDOW, K_CLOCK, K_LOSS, K_COUNTS, K_ATTR, K_PARENTS,
    K_HOST, K_DTPID, K_RTC, K_NOTES,
    K_START, K_END,
    K_SAMPLES, K_SEGMENTS, K_SLOPE, K_OFFSET, K_ERRB, K_IDENTITY,
    K_RANK, K_LOCAL_RANK, K_WORLD, K_LAUNCHER,
    K_CLOCKSOURCE, K_SYNC, K_MAXERR, K_ESTERR
};

typedef struct key_entry {
    unsigned char key;
    unsigned char len;
    const char *name;
} key_entry;

#define KEY(key, name) {key, sizeof(name) - 1, name}

static const key_entry keys_root[] = {
    KEY(K_SCHEMA, "schemaVersion"), KEY(K_DISPLAY, "displayTimeUnit"), KEY(K_BASE, "baseTimeNanoseconds"),
    KEY(K_DEVPROPS, "deviceProperties"), KEY(K_EVENTS, "traceEvents"), KEY(K_DEVTRACE, "devtrace"),
    KEY(K_TRACENAME, "traceName"), KEY(K_DIST, "distributedInfo"),
};

static const key_entry keys_dist[] = {
    KEY(K_RANK, "rank"), KEY(K_LOCAL_RANK, "local_rank"), KEY(K_WORLD, "world_size"), KEY(K_HOST, "host"),
    KEY(K_LAUNCHER, "launcher"),
};

static const key_entry keys_dt[] = {
    KEY(K_VERSION, "version"), KEY(K_BACKEND, "backend"), KEY(K_VENDOR, "vendor"), KEY(K_LIBRARY, "library"),
    KEY(K_LIBVER, "libraryVersion"), KEY(K_WINDOW, "captureWindow"), KEY(K_CLOCK, "clock"), KEY(K_LOSS, "loss"),
    KEY(K_COUNTS, "counts"), KEY(K_ATTR, "attribution"), KEY(K_PARENTS, "externalParents"), KEY(K_HOST, "host"),
    KEY(K_DTPID, "pid"), KEY(K_RTC, "realtimeClock"), KEY(K_NOTES, "notes"),
};

static const key_entry keys_dt_window[] = {
    KEY(K_START, "startNs"),
    KEY(K_END, "endNs"),
};

static const key_entry keys_dt_clock[] = {
    KEY(K_SAMPLES, "samples"), KEY(K_SEGMENTS, "segments"), KEY(K_SLOPE, "slope"),
    KEY(K_OFFSET, "offsetNs"), KEY(K_ERRB, "errorBoundNs"), KEY(K_IDENTITY, "identity"),
};

static const key_entry keys_dt_rtc[] = {
    KEY(K_CLOCKSOURCE, "clocksource"), KEY(K_SYNC, "synchronized"), KEY(K_MAXERR, "maxErrorUs"),
    KEY(K_ESTERR, "estErrorUs"),
};

#undef KEY

#define KEYS(a) {a, sizeof a / sizeof a[0]}
/* The keys that matter, per kind of object; every other key is skipped.
   Events and their args, read millions of times, have their own lookups
   (event_key, args_key). */
static const struct {
    const key_entry *keys;
    size_t count;
} role_keys[R_SKIP + 1] = {
    [R_ROOT] = KEYS(keys_root),
    [R_DIST] = KEYS(keys_dist),
    [R_DT] = KEYS(keys_dt),
    [R_DT_WINDOW] = KEYS(keys_dt_window),
    [R_DT_CLOCK] = KEYS(keys_dt_clock),
    [R_DT_RTC] = KEYS(keys_dt_rtc),
};
#undef KEYS

/* Where the grammar is inside an open object or array. */
enum gstate {
    G_KEY_OR_END,   /* after '{' */
    G_KEY,          /* after ',' in an object */
    G_COLON,
    G_VALUE,        /* after ':' or after ',' in an array */
    G_VALUE_OR_END, /* after '[' */
    G_COMMA_OR_END
};

typedef struct frame {
    unsigned char role;
    unsigned char is_map;
    unsigned char key;
    unsigned char state;
} frame;

/* Event string slots, stored as offsets into one buffer that may move. */
enum { S_PH, S_CAT, S_NAME, S_BP, S_ID, S_PID, S_TID, S_ANAME, S_LABELS, S_COUNT };

enum vtype { V_NUM, V_STR, V_BOOL, V_NULL, V_MAP, V_ARRAY };

typedef struct rd_ctx {
    dt_rd_source *src;
    /* the JSON text window: data[0] is byte `base` of the input */
    unsigned char *data;
    size_t len, cap, pos;
    uint64_t base;
    bool borrowed; /* data is the caller's memory */
    bool eof;
    size_t tok_start; /* where the token being scanned starts */
    size_t tok_end;   /* just after the last complete token (for messages) */
    /* the number just scanned, read while scanning it */
    struct {
        uint64_t mag;       /* integer part */
        uint32_t frac;      /* first three decimals, as an integer */
        bool neg, fits, has_frac, has_exp, round_up;
    } num;
    /* decoded strings with escapes */
    char *tmp;
    size_t tmp_cap;

    frame stack[DT_RD_MAX_DEPTH + 1];
    int depth;
    bool root_seen, root_done;
    dt_rd_event ev;
    char *sb;
    size_t sb_len, sb_cap;
    size_t soff[S_COUNT];
    char *keybuf; /* key of the current map-of-values entry */
    size_t keybuf_cap, keybuf_len;
    dt_rd_summary *sum;
    const dt_rd_options *opt;
    bool raw;             /* capture events' text */
    uint64_t ev_start;    /* absolute offset of the event's '{' */
    uint64_t at_abs[DT_RD_AT_COUNT];
    int visit_rc;
    bool failed;
    char *err;
    size_t errlen;
} rd_ctx;

static const char *vtype_name(int t)
{
    static const char *names[] = {"a number", "a string", "a boolean", "null", "an object", "an array"};
    return names[t];
}

static uint64_t rd_offset(const rd_ctx *c)
{
    return c->base + c->tok_end;
}

/* The number just scanned as an int64, when it is an integer that fits. */
static inline bool num_i64(const rd_ctx *c, int64_t *out)
{
    if (!c->num.fits || c->num.has_frac || c->num.has_exp)
        return false;
    uint64_t m = c->num.mag;
    if (c->num.neg) {
        if (m > (uint64_t)INT64_MAX + 1)
            return false;
        *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)m;
    }
    return true;
}

/* The number just scanned, as microseconds, in exact nanoseconds. */
static inline bool num_us_to_ns(const rd_ctx *c, const char *s, size_t len, int64_t *out)
{
    if (c->num.has_exp || !c->num.fits)
        return dt_rd_parse_us_to_ns(s, len, out);
    if (c->num.mag > (uint64_t)INT64_MAX / 1000 - 1)
        return false;
    int64_t ns = (int64_t)(c->num.mag * 1000 + c->num.frac + c->num.round_up);
    *out = c->num.neg ? -ns : ns;
    return true;
}

__attribute__((format(printf, 2, 3))) static int rd_fail(rd_ctx *c, const char *fmt, ...)
{
    if (c->failed)
        return 0;
    c->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "byte %" PRIu64 ": %s", rd_offset(c), msg);
    return 0;
}

/* got: the JSON type found; V_NUM means a number that does not fit. */
static int rd_event_fail(rd_ctx *c, const char *what, int got)
{
    return rd_fail(c, "traceEvents[%" PRIu64 "]: %s, not %s", c->ev.index, what,
                   got == V_NUM ? "this number" : vtype_name(got));
}

static char *dupn(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static int set_summary_str(rd_ctx *c, char **dst, const char *s, size_t len)
{
    free(*dst);
    *dst = dupn(s, len);
    if (!*dst)
        return rd_fail(c, "out of memory");
    return 1;
}

static int ev_str(rd_ctx *c, int slot, const char *s, size_t len)
{
    if (c->sb_len + len + 1 > c->sb_cap) {
        size_t cap = c->sb_cap ? c->sb_cap : 256;
        while (cap < c->sb_len + len + 1)
            cap *= 2;
        char *nb = realloc(c->sb, cap);
        if (!nb)
            return rd_fail(c, "out of memory");
        c->sb = nb;
        c->sb_cap = cap;
    }
    c->soff[slot] = c->sb_len;
    memcpy(c->sb + c->sb_len, s, len);
    c->sb_len += len;
    c->sb[c->sb_len++] = '\0';
    return 1;
}

static int kv_add(rd_ctx *c, dt_rd_kvlist *l, int64_t v)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        dt_rd_kv *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return rd_fail(c, "out of memory");
        l->items = items;
        l->cap = cap;
    }
    char *k = dupn(c->keybuf ? c->keybuf : "", c->keybuf_len);
    if (!k)
        return rd_fail(c, "out of memory");
    l->items[l->count].key = k;
    l->items[l->count].value = v;
    l->count++;
    return 1;
}

static int note_add(rd_ctx *c, const char *s, size_t len)
{
    dt_rd_notes *l = &c->sum->notes;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        dt_rd_note *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return rd_fail(c, "out of memory");
        l->items = items;
        l->cap = cap;
    }
    char *k = dupn(c->keybuf ? c->keybuf : "", c->keybuf_len), *v = dupn(s, len);
    if (!k || !v) {
        free(k);
        free(v);
        return rd_fail(c, "out of memory");
    }
    l->items[l->count].key = k;
    l->items[l->count].text = v;
    l->count++;
    return 1;
}

/* Records where a value of interest lies, for raw capture. */
static inline void rd_at(rd_ctx *c, int which)
{
    c->at_abs[which] = c->base + c->tok_start;
    c->ev.at[which].len = (uint32_t)(c->tok_end - c->tok_start);
}

/* A lenient integer arg: numbers and integer strings count; anything else is
   noted in odd_args and otherwise ignored. */
static int rd_int_arg(rd_ctx *c, int type, const char *s, size_t len, bool is_unsigned, int64_t *out)
{
    int64_t v;
    bool ok = false;
    if (type == V_NUM)
        ok = num_i64(c, &v);
    else if (type == V_STR)
        ok = parse_int_text(s, len, &v);
    if (ok && is_unsigned && v < 0)
        ok = false;
    if (!ok)
        return 0;
    if (type == V_STR)
        c->ev.string_args++;
    *out = v;
    return 1;
}

/* A value at the current position: scalars carry text, containers are
   announced with V_MAP / V_ARRAY (and then pushed by the caller). Returns
   the role of a container about to open, R_SKIP for an ignored one, or -1
   after an error. */
static int rd_value(rd_ctx *c, int type, const char *s, size_t len)
{
    if (c->depth == 0) {
        if (type != V_MAP) {
            rd_fail(c, "the top level is %s, not an object", vtype_name(type));
            return -1;
        }
        c->root_seen = true;
        return R_ROOT;
    }
    frame *f = &c->stack[c->depth - 1];
    dt_rd_summary *sum = c->sum;
    dt_rd_event *ev = &c->ev;
    int container = type == V_MAP || type == V_ARRAY;
    switch (f->role) {
    case R_SKIP:
        return R_SKIP;
    case R_ROOT:
        switch (f->key) {
        case K_SCHEMA:
            if (type != V_NUM || !num_i64(c, &sum->schema_version)) {
                rd_fail(c, "\"schemaVersion\" must be an integer");
                return -1;
            }
            sum->has_schema_version = true;
            return R_SKIP;
        case K_DISPLAY:
            if (type != V_STR) {
                rd_fail(c, "\"displayTimeUnit\" must be a string, not %s", vtype_name(type));
                return -1;
            }
            sum->has_display_time_unit = true;
            return set_summary_str(c, &sum->display_time_unit, s, len) ? R_SKIP : -1;
        case K_BASE:
            if (type != V_NUM || !num_i64(c, &sum->base_time_ns)) {
                rd_fail(c, "\"baseTimeNanoseconds\" must be an integer");
                return -1;
            }
            sum->has_base_time = true;
            return R_SKIP;
        case K_DEVPROPS:
            if (type != V_ARRAY) {
                rd_fail(c, "\"deviceProperties\" must be an array, not %s", vtype_name(type));
                return -1;
            }
            sum->has_device_properties = true;
            return R_DEVPROPS;
        case K_EVENTS:
            if (type != V_ARRAY) {
                rd_fail(c, "\"traceEvents\" must be an array, not %s", vtype_name(type));
                return -1;
            }
            if (sum->has_trace_events) {
                rd_fail(c, "\"traceEvents\" appears twice");
                return -1;
            }
            sum->has_trace_events = true;
            return R_EVENTS;
        case K_DEVTRACE:
            if (type != V_MAP) {
                rd_fail(c, "\"devtrace\" must be an object, not %s", vtype_name(type));
                return -1;
            }
            sum->has_devtrace = true;
            return R_DT;
        case K_DIST:
            /* Kineto's own distributedInfo has other keys; a foreign shape is
               skipped rather than refused. */
            if (type != V_MAP)
                return R_SKIP;
            sum->has_distributed_info = true;
            return R_DIST;
        case K_TRACENAME:
            if (type != V_STR) {
                rd_fail(c, "\"traceName\" must be a string, not %s", vtype_name(type));
                return -1;
            }
            return set_summary_str(c, &sum->trace_name, s, len) ? R_SKIP : -1;
        default:
            return R_SKIP;
        }
    case R_EVENTS:
        if (type != V_MAP) {
            rd_fail(c, "traceEvents[%" PRIu64 "] must be an object, not %s", sum->event_count,
                    vtype_name(type));
            return -1;
        }
        memset(ev, 0, sizeof *ev);
        for (int i = 0; i < S_COUNT; i++)
            c->soff[i] = SIZE_MAX;
        c->sb_len = 0;
        ev->index = sum->event_count;
        ev->offset = c->base + c->tok_start;
        c->ev_start = ev->offset;
        return R_EVENT;
    case R_EVENT:
        switch (f->key) {
        case K_PH:
        case K_CAT:
        case K_NAME:
        case K_BP: {
            static const char *const names[] = {[K_PH] = "\"ph\"", [K_CAT] = "\"cat\"",
                                                [K_NAME] = "\"name\"", [K_BP] = "\"bp\""};
            static const int slots[] = {[K_PH] = S_PH, [K_CAT] = S_CAT, [K_NAME] = S_NAME, [K_BP] = S_BP};
            if (type != V_STR) {
                char what[64];
                snprintf(what, sizeof what, "%s must be a string", names[f->key]);
                rd_event_fail(c, what, type);
                return -1;
            }
            return ev_str(c, slots[f->key], s, len) ? R_SKIP : -1;
        }
        case K_PID:
        case K_TID: {
            dt_rd_id *id = f->key == K_PID ? &ev->pid : &ev->tid;
            const char *what = f->key == K_PID ? "\"pid\" must be an integer or a string"
                                               : "\"tid\" must be an integer or a string";
            id->present = true;
            if (c->raw && !container)
                rd_at(c, f->key == K_PID ? DT_RD_AT_PID : DT_RD_AT_TID);
            if (type == V_STR) {
                id->is_str = true;
                return ev_str(c, f->key == K_PID ? S_PID : S_TID, s, len) ? R_SKIP : -1;
            }
            id->is_str = false;
            if (type != V_NUM || !num_i64(c, &id->num)) {
                rd_event_fail(c, what, type);
                return -1;
            }
            return R_SKIP;
        }
        case K_TS:
        case K_DUR: {
            int64_t *dst = f->key == K_TS ? &ev->ts_ns : &ev->dur_ns;
            if (type != V_NUM || !num_us_to_ns(c, s, len, dst)) {
                rd_event_fail(c, f->key == K_TS ? "\"ts\" must be a number of microseconds that fits"
                                                : "\"dur\" must be a number of microseconds that fits",
                              type);
                return -1;
            }
            ev->has |= f->key == K_TS ? DT_RD_HAS_TS : DT_RD_HAS_DUR;
            if (c->raw)
                rd_at(c, f->key == K_TS ? DT_RD_AT_TS : DT_RD_AT_DUR);
            return R_SKIP;
        }
        case K_ID:
            if (type != V_NUM && type != V_STR) {
                rd_event_fail(c, "\"id\" must be a number or a string", type);
                return -1;
            }
            ev->has |= DT_RD_HAS_ID;
            ev->id_is_str = type == V_STR;
            if (c->raw)
                rd_at(c, DT_RD_AT_ID);
            return ev_str(c, S_ID, s, len) ? R_SKIP : -1;
        case K_ARGS:
            if (type != V_MAP) {
                rd_event_fail(c, "\"args\" must be an object", type);
                return -1;
            }
            if (c->raw) {
                c->at_abs[DT_RD_AT_ARGS] = c->base + c->tok_start;
                ev->at[DT_RD_AT_ARGS].len = 1;
            }
            return R_ARGS;
        default:
            return R_SKIP;
        }
    case R_ARGS: {
        uint64_t *u = NULL;
        int64_t *i = NULL;
        uint32_t bit = 0;
        int at = -1;
        switch (f->key) {
        case K_EXT: u = &ev->external_id; bit = DT_RD_HAS_EXTERNAL_ID; at = DT_RD_AT_EXT; break;
        case K_CORR: u = &ev->correlation; bit = DT_RD_HAS_CORRELATION; at = DT_RD_AT_CORR; break;
        case K_BYTES: u = &ev->bytes; bit = DT_RD_HAS_BYTES; break;
        case K_PARENT: u = &ev->parent; bit = DT_RD_HAS_PARENT; at = DT_RD_AT_PARENT; break;
        case K_DEVICE: i = &ev->device; bit = DT_RD_HAS_DEVICE; break;
        case K_STREAM: i = &ev->stream; bit = DT_RD_HAS_STREAM; break;
        case K_CBID: i = &ev->cbid; bit = DT_RD_HAS_CBID; break;
        case K_SORT: i = &ev->sort_index; bit = DT_RD_HAS_SORT_INDEX; break;
        case K_COLLECTIVE:
            /* a collective, whatever the writer typed its name as */
            ev->has |= DT_RD_HAS_COLLECTIVE;
            return R_SKIP;
        case K_ANAME:
        case K_LABELS:
            /* Only metadata events' name/labels matter; elsewhere any type goes. */
            if (type == V_STR) {
                ev->has |= f->key == K_ANAME ? DT_RD_HAS_ARG_NAME : DT_RD_HAS_ARG_LABELS;
                return ev_str(c, f->key == K_ANAME ? S_ANAME : S_LABELS, s, len) ? R_SKIP : -1;
            }
            return R_SKIP;
        default:
            return R_SKIP;
        }
        int64_t v;
        if (container || !rd_int_arg(c, type, s, len, u != NULL, &v)) {
            ev->odd_args |= bit;
            return R_SKIP;
        }
        if (u)
            *u = (uint64_t)v;
        else
            *i = v;
        ev->has |= bit;
        if (c->raw && at >= 0)
            rd_at(c, at);
        return R_SKIP;
    }
    case R_DEVPROPS:
        if (type != V_MAP) {
            rd_fail(c, "deviceProperties[%zu] must be an object, not %s", sum->device_count,
                    vtype_name(type));
            return -1;
        }
        sum->device_count++;
        return R_SKIP;
    case R_DIST: {
        int64_t v;
        switch (f->key) {
        case K_RANK:
        case K_LOCAL_RANK:
        case K_WORLD:
            if (type != V_NUM && type != V_STR)
                return R_SKIP;
            if (!(type == V_NUM ? num_i64(c, &v) : parse_int_text(s, len, &v)))
                return R_SKIP;
            if (f->key == K_RANK) {
                sum->has_rank = true;
                sum->rank = v;
            } else if (f->key == K_LOCAL_RANK) {
                sum->local_rank = v;
            } else {
                sum->world_size = v;
            }
            return R_SKIP;
        case K_HOST:
        case K_LAUNCHER:
            if (type != V_STR)
                return R_SKIP;
            return set_summary_str(c, f->key == K_HOST ? &sum->rank_host : &sum->launcher, s, len) ? R_SKIP : -1;
        default:
            return R_SKIP;
        }
    }
    case R_DT:
        switch (f->key) {
        case K_VERSION:
        case K_BACKEND:
        case K_VENDOR:
        case K_LIBRARY:
        case K_LIBVER:
        case K_HOST: {
            char **dst = f->key == K_VERSION   ? &sum->version
                         : f->key == K_BACKEND ? &sum->backend
                         : f->key == K_VENDOR  ? &sum->vendor
                         : f->key == K_LIBRARY ? &sum->library
                         : f->key == K_HOST    ? &sum->host
                                               : &sum->library_version;
            if (type != V_STR) {
                if (container)
                    return R_SKIP;
                /* e.g. libraryVersion written as a number: keep its text */
                if (type != V_NUM)
                    return R_SKIP;
            }
            return set_summary_str(c, dst, s, len) ? R_SKIP : -1;
        }
        case K_DTPID:
            if (type == V_NUM && num_i64(c, &sum->pid))
                sum->has_pid = true;
            return R_SKIP;
        case K_RTC:
            if (type != V_MAP)
                return R_SKIP;
            sum->has_realtime_clock = true;
            return R_DT_RTC;
        case K_NOTES:
            return type == V_MAP ? R_DT_NOTES : R_SKIP;
        case K_WINDOW:
        case K_CLOCK:
        case K_LOSS:
        case K_COUNTS:
        case K_ATTR:
        case K_PARENTS:
            if (type != V_MAP) {
                static const char *const names[] = {[K_WINDOW] = "captureWindow", [K_CLOCK] = "clock",
                                                    [K_LOSS] = "loss", [K_COUNTS] = "counts",
                                                    [K_ATTR] = "attribution", [K_PARENTS] = "externalParents"};
                rd_fail(c, "\"devtrace.%s\" must be an object, not %s", names[f->key], vtype_name(type));
                return -1;
            }
            switch (f->key) {
            case K_WINDOW: return R_DT_WINDOW;
            case K_CLOCK: sum->has_clock = true; return R_DT_CLOCK;
            case K_LOSS: sum->loss.present = true; return R_DT_LOSS;
            case K_COUNTS: sum->counts.present = true; return R_DT_COUNTS;
            case K_PARENTS: sum->external_parents.present = true; return R_DT_PARENTS;
            default: sum->attribution.present = true; return R_DT_ATTR;
            }
        default:
            return R_SKIP;
        }
    case R_DT_WINDOW:
        if (f->key == K_START || f->key == K_END) {
            int64_t *dst = f->key == K_START ? &sum->window_start_ns : &sum->window_end_ns;
            if (type != V_NUM || !num_i64(c, dst)) {
                rd_fail(c, "\"devtrace.captureWindow.%s\" must be an integer",
                        f->key == K_START ? "startNs" : "endNs");
                return -1;
            }
            if (f->key == K_START)
                sum->has_window_start = true;
            else
                sum->has_window_end = true;
        }
        return R_SKIP;
    case R_DT_CLOCK: {
        if (type == V_BOOL && f->key == K_IDENTITY) {
            sum->clock_identity = len == 1;
            return R_SKIP;
        }
        double v;
        if (type != V_NUM || !parse_double(s, len, &v))
            return R_SKIP;
        switch (f->key) {
        case K_SAMPLES: sum->clock_samples = clamp_i64(v); break;
        case K_SEGMENTS: sum->clock_segments = clamp_i64(v); break;
        case K_SLOPE: sum->clock_slope = v; break;
        case K_OFFSET: sum->clock_offset_ns = v; break;
        case K_ERRB: sum->clock_error_bound_ns = v; break;
        default: break;
        }
        return R_SKIP;
    }
    case R_DT_RTC:
        switch (f->key) {
        case K_CLOCKSOURCE:
            return type == V_STR ? (set_summary_str(c, &sum->clocksource, s, len) ? R_SKIP : -1) : R_SKIP;
        case K_SYNC:
            if (type == V_BOOL) {
                sum->has_host_sync = true;
                sum->host_synchronized = len == 1;
            }
            return R_SKIP;
        case K_MAXERR:
        case K_ESTERR: {
            int64_t v;
            if (type == V_NUM && num_i64(c, &v)) {
                if (f->key == K_MAXERR) {
                    sum->has_host_max_error = true;
                    sum->host_max_error_us = v;
                } else {
                    sum->host_est_error_us = v;
                }
            }
            return R_SKIP;
        }
        default:
            return R_SKIP;
        }
    case R_DT_NOTES:
        if (type != V_STR)
            return R_SKIP;
        return note_add(c, s, len) ? R_SKIP : -1;
    case R_DT_LOSS:
    case R_DT_COUNTS:
    case R_DT_ATTR:
    case R_DT_PARENTS: {
        static const char *const names[] = {[R_DT_LOSS] = "loss", [R_DT_COUNTS] = "counts",
                                            [R_DT_ATTR] = "attribution", [R_DT_PARENTS] = "externalParents"};
        int64_t v;
        if (type != V_NUM || !num_i64(c, &v)) {
            rd_fail(c, "\"devtrace.%s\" values must be integers (\"%s\" is %s)", names[f->role],
                    c->keybuf ? c->keybuf : "", type == V_NUM ? "not an integer" : vtype_name(type));
            return -1;
        }
        if ((f->role == R_DT_ATTR || f->role == R_DT_PARENTS) && c->opt && c->opt->entry) {
            int rc = c->opt->entry(c->opt->user, f->role == R_DT_ATTR ? DT_RD_ATTRIBUTION : DT_RD_EXTERNAL_PARENTS,
                                   c->keybuf ? c->keybuf : "", c->keybuf_len, v);
            if (rc != 0) {
                c->visit_rc = rc;
                rd_fail(c, "stopped by the caller");
                return -1;
            }
            return R_SKIP;
        }
        dt_rd_kvlist *l = f->role == R_DT_LOSS     ? &sum->loss
                          : f->role == R_DT_COUNTS ? &sum->counts
                          : f->role == R_DT_ATTR   ? &sum->attribution
                                                   : &sum->external_parents;
        return kv_add(c, l, v) ? R_SKIP : -1;
    }
    default:
        return R_SKIP;
    }
}

static int rd_open(rd_ctx *c, int type)
{
    int role = rd_value(c, type, NULL, 0);
    if (role < 0)
        return 0;
    if (c->depth >= DT_RD_MAX_DEPTH)
        return rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH);
    frame *f = &c->stack[c->depth++];
    f->role = (unsigned char)role;
    f->is_map = type == V_MAP;
    f->key = K_OTHER;
    f->state = type == V_MAP ? G_KEY_OR_END : G_VALUE_OR_END;
    return 1;
}

static bool is_map_of_values(int role)
{
    return role == R_DT_LOSS || role == R_DT_COUNTS || role == R_DT_ATTR || role == R_DT_PARENTS ||
           role == R_DT_NOTES;
}

#define KEY_IS(lit) bytes_equal(k, lit, sizeof(lit) - 1)

/* The keys of every event, by length: these run for each of millions. */
static int event_key(const char *k, size_t len)
{
    switch (len) {
    case 2:
        if (KEY_IS("ph")) return K_PH;
        if (KEY_IS("ts")) return K_TS;
        if (KEY_IS("id")) return K_ID;
        if (KEY_IS("bp")) return K_BP;
        break;
    case 3:
        if (KEY_IS("cat")) return K_CAT;
        if (KEY_IS("pid")) return K_PID;
        if (KEY_IS("tid")) return K_TID;
        if (KEY_IS("dur")) return K_DUR;
        break;
    case 4:
        if (KEY_IS("name")) return K_NAME;
        if (KEY_IS("args")) return K_ARGS;
        break;
    default:
        break;
    }
    return K_OTHER;
}

static int args_key(const char *k, size_t len)
{
    switch (len) {
    case 4:
        if (KEY_IS("cbid")) return K_CBID;
        if (KEY_IS("name")) return K_ANAME;
        break;
    case 5:
        if (KEY_IS("bytes")) return K_BYTES;
        break;
    case 6:
        if (KEY_IS("stream")) return K_STREAM;
        if (KEY_IS("device")) return K_DEVICE;
        if (KEY_IS("parent")) return K_PARENT;
        if (KEY_IS("labels")) return K_LABELS;
        break;
    case 10:
        if (KEY_IS("sort_index")) return K_SORT;
        break;
    case 11:
        if (KEY_IS("External id")) return K_EXT;
        if (KEY_IS("correlation")) return K_CORR;
        break;
    case 15:
        if (KEY_IS("Collective name")) return K_COLLECTIVE;
        break;
    default:
        break;
    }
    return K_OTHER;
}
#undef KEY_IS

static int rd_key(rd_ctx *c, const char *key, size_t len)
{
    frame *f = &c->stack[c->depth - 1];
    f->key = K_OTHER;
    if (f->role == R_SKIP)
        return 1;
    if (is_map_of_values(f->role)) {
        if (len + 1 > c->keybuf_cap) {
            char *nb = realloc(c->keybuf, len + 1);
            if (!nb)
                return rd_fail(c, "out of memory");
            c->keybuf = nb;
            c->keybuf_cap = len + 1;
        }
        memcpy(c->keybuf, key, len);
        c->keybuf[len] = '\0';
        c->keybuf_len = len;
        f->key = K_ANY;
        return 1;
    }
    if (f->role == R_EVENT) {
        f->key = (unsigned char)event_key(key, len);
        return 1;
    }
    if (f->role == R_ARGS) {
        f->key = (unsigned char)args_key(key, len);
        return 1;
    }
    const key_entry *keys = role_keys[f->role].keys;
    size_t n = role_keys[f->role].count;
    for (size_t i = 0; i < n; i++) {
        /* length and first byte first: a call to memcmp per key costs more
           than the whole comparison of the short keys traces use */
        if (keys[i].len == len && len > 0 && keys[i].name[0] == key[0] && bytes_equal(keys[i].name, key, len)) {
            f->key = keys[i].key;
            break;
        }
    }
    return 1;
}

static const char *slot_str(const rd_ctx *c, int slot)
{
    return c->soff[slot] == SIZE_MAX ? "" : c->sb + c->soff[slot];
}

static int rd_event_done(rd_ctx *c)
{
    dt_rd_event *ev = &c->ev;
    ev->ph = slot_str(c, S_PH);
    ev->cat = slot_str(c, S_CAT);
    ev->name = slot_str(c, S_NAME);
    ev->bp = slot_str(c, S_BP);
    ev->id = slot_str(c, S_ID);
    ev->pid.str = ev->pid.is_str ? slot_str(c, S_PID) : NULL;
    ev->tid.str = ev->tid.is_str ? slot_str(c, S_TID) : NULL;
    ev->arg_name = slot_str(c, S_ANAME);
    ev->arg_labels = slot_str(c, S_LABELS);
    if (c->raw) {
        ev->raw = (const char *)c->data + (c->ev_start - c->base);
        ev->raw_len = (size_t)(c->base + c->tok_end - c->ev_start);
        for (int k = 0; k < DT_RD_AT_COUNT; k++)
            if (ev->at[k].len)
                ev->at[k].off = (uint32_t)(c->at_abs[k] - c->ev_start);
    }
    c->sum->event_count++;
    if (c->opt && c->opt->visit) {
        int rc = c->opt->visit(c->opt->user, ev);
        if (rc != 0) {
            c->visit_rc = rc;
            return 0;
        }
    }
    return 1;
}

static int rd_close(rd_ctx *c)
{
    frame *f = &c->stack[--c->depth];
    if (f->role == R_EVENT)
        return rd_event_done(c);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Tokenizer                                                           */
/* ------------------------------------------------------------------ */
enum { T_OK = 0, T_MORE = 1, T_ERR = -1 };

/* Bytes that end the fast scan of a string: '"', '\\', controls, non-ASCII. */
static inline uint64_t special_bytes(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t quote = x ^ (ones * '"'), bslash = x ^ (ones * '\\');
    uint64_t zero_quote = (quote - ones) & ~quote;
    uint64_t zero_bslash = (bslash - ones) & ~bslash;
    uint64_t control = (x - ones * 0x20) & ~x;
    return (zero_quote | zero_bslash | control | x) & high;
}

/* Length of a valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid,
   -1 when it may continue past end. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F; /* no UTF-16 surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if (p + i >= end)
            return -1;
        unsigned cb = p[i];
        if (cb < (i == 1 ? lo : 0x80) || cb > (i == 1 ? hi : 0xBF))
            return 0;
    }
    return n;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned ch = p[i], d;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            d = ch - 'A' + 10;
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | cp >> 12);
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | cp >> 18);
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

static int lex_error(rd_ctx *c, size_t at, const char *what)
{
    c->tok_end = at;
    if (!c->failed) {
        c->failed = true;
        snprintf(c->err, c->errlen, "byte %" PRIu64 ": invalid JSON: %s", c->base + at, what);
    }
    return T_ERR;
}

/* A string starting at the quote at data[pos]: its text (decoded when it
   has escapes) in *s, *len (s NULL: only validate it); pos moves past the
   closing quote. */
static int lex_string(rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos + 1, *p = start, *end = c->data + c->len;
    bool escaped = false;
    for (;;) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t m = special_bytes(x);
            if (m) {
                p += __builtin_ctzll(m) >> 3;
                goto special;
            }
            p += 8;
        }
#endif
        while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
            p++;
        if (p >= end)
            return c->eof ? lex_error(c, c->len, "a string is not closed") : T_MORE;
    special:
        if (*p == '"')
            break;
        if (*p == '\\') {
            escaped = true;
            if (p + 1 >= end)
                return c->eof ? lex_error(c, c->len, "a string is not closed") : T_MORE;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6)
                    return c->eof ? lex_error(c, c->len, "a string is not closed") : T_MORE;
                unsigned cp;
                if (!hex4(p + 2, &cp))
                    return lex_error(c, (size_t)(p - c->data), "a \\u escape needs four hex digits");
                p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p += 2;
            } else {
                return lex_error(c, (size_t)(p - c->data), "an unknown escape in a string");
            }
            continue;
        }
        if (*p < 0x20)
            return lex_error(c, (size_t)(p - c->data), "a control character in a string (it must be escaped)");
        int n = utf8_len(p, end);
        if (n < 0)
            return c->eof ? lex_error(c, c->len, "invalid UTF-8 in a string") : T_MORE;
        if (n == 0)
            return lex_error(c, (size_t)(p - c->data), "invalid UTF-8 in a string");
        p += n;
    }
    size_t raw_len = (size_t)(p - start);
    c->pos = (size_t)(p + 1 - c->data);
    if (!s)
        return T_OK; /* only validated */
    if (!escaped) {
        *s = (const char *)start;
        *len = raw_len;
        return T_OK;
    }
    /* Decoding never makes a string longer than its escaped form. */
    if (raw_len + 1 > c->tmp_cap) {
        size_t cap = c->tmp_cap ? c->tmp_cap : 256;
        while (cap < raw_len + 1)
            cap *= 2;
        char *nb = realloc(c->tmp, cap);
        if (!nb)
            return lex_error(c, c->pos, "out of memory");
        c->tmp = nb;
        c->tmp_cap = cap;
    }
    char *o = c->tmp;
    for (const unsigned char *q = start; q < p;) {
        if (*q != '\\') {
            *o++ = (char)*q++;
            continue;
        }
        unsigned char e = q[1];
        q += 2;
        switch (e) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            hex4(q, &cp);
            q += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && p - q >= 6 && q[0] == '\\' && q[1] == 'u') {
                unsigned lo;
                if (hex4(q + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    q += 6;
                }
            }
            /* A lone surrogate is valid JSON but no character. */
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD;
            o = put_utf8(o, cp);
            break;
        }
        default: *o++ = (char)e; break;
        }
    }
    *o = '\0';
    *s = c->tmp;
    *len = (size_t)(o - c->tmp);
    return T_OK;
}

static int lex_number(rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos, *p = start, *end = c->data + c->len;
    uint64_t mag = 0;
    bool fits = true;
    c->num.neg = false;
    c->num.has_frac = c->num.has_exp = c->num.round_up = false;
    c->num.frac = 0;
#define NEED()                                                                                                 \
    do {                                                                                                       \
        if (p >= end)                                                                                          \
            goto at_end;                                                                                       \
    } while (0)
    if (*p == '-') {
        c->num.neg = true;
        p++;
        NEED();
    }
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            fits &= !__builtin_mul_overflow(mag, 10u, &mag);
            fits &= !__builtin_add_overflow(mag, (unsigned)(*p - '0'), &mag);
            p++;
        }
    } else {
        return lex_error(c, (size_t)(p - c->data), "a number needs a digit");
    }
    if (p < end && *p == '.') {
        p++;
        NEED();
        if (*p < '0' || *p > '9')
            return lex_error(c, (size_t)(p - c->data), "a number needs a digit after its point");
        unsigned nd = 0, frac = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (nd < 3)
                frac = frac * 10 + (unsigned)(*p - '0');
            else if (nd == 3)
                c->num.round_up = *p >= '5';
            nd++;
            p++;
        }
        for (; nd < 3; nd++)
            frac *= 10;
        c->num.frac = frac;
        c->num.has_frac = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        NEED();
        if (*p == '+' || *p == '-') {
            p++;
            NEED();
        }
        if (*p < '0' || *p > '9')
            return lex_error(c, (size_t)(p - c->data), "a number needs a digit in its exponent");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        c->num.has_exp = true;
    }
    if (p >= end && !c->eof)
        return T_MORE; /* the number may go on in the next chunk */
    c->num.mag = mag;
    c->num.fits = fits;
    *s = (const char *)start;
    *len = (size_t)(p - start);
    c->pos = (size_t)(p - c->data);
    return T_OK;
at_end:
    return c->eof ? lex_error(c, c->len, "a number is cut short") : T_MORE;
#undef NEED
}

/* true, false or null at data[pos]. */
static int lex_word(rd_ctx *c, unsigned char ch)
{
    const char *word = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
    size_t n = ch == 'f' ? 5 : 4;
    size_t have = c->len - c->pos;
    if (!bytes_equal((const char *)c->data + c->pos, word, have < n ? have : n))
        return lex_error(c, c->pos, "an unknown word");
    if (have < n)
        return c->eof ? lex_error(c, c->len, "a word is cut short") : T_MORE;
    c->pos += n;
    return T_OK;
}

/* The value a frame holds completed: what may follow. */
static inline void value_done(rd_ctx *c)
{
    if (c->depth > 0)
        c->stack[c->depth - 1].state = G_COMMA_OR_END;
    else
        c->root_done = true;
}

static int scalar(rd_ctx *c, int type, const char *s, size_t len)
{
    c->tok_end = c->pos;
    if (rd_value(c, type, s, len) < 0)
        return T_ERR;
    value_done(c);
    return T_OK;
}

static inline bool is_ws(unsigned char ch)
{
    return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

/* At the end of the buffer: T_MORE, or at the end of the input what it
   means there. */
static int at_end(rd_ctx *c)
{
    if (!c->eof)
        return T_MORE;
    if (c->root_done)
        return T_OK;
    if (!c->root_seen) {
        c->tok_end = c->pos;
        if (!c->failed) {
            c->failed = true;
            snprintf(c->err, c->errlen, "byte %" PRIu64 ": empty input: no JSON value", c->base + c->pos);
        }
        return T_ERR;
    }
    return lex_error(c, c->pos, "the input ends inside an object or array");
}

/* Tokens until the buffer is exhausted (T_MORE), the input ends (T_OK) or
   an error (T_ERR). The grammar state of each open container is kept in its
   frame so that the parse can stop between any two tokens; within the
   buffer, each state jumps straight to the one that follows, so the common
   path (key, colon, value, comma) dispatches on the state once, and the
   position stays in a register between the calls that need it in c. */
static int rd_parse(rd_ctx *c)
{
    const unsigned char *p = c->data + c->pos;
    const unsigned char *const end = c->data + c->len;
    frame *f;
    unsigned char ch;
    const char *s;
    size_t len;
    int rc;
/* position -> c (before a call that reads or moves it), and back */
#define SYNC() (c->tok_start = c->pos = (size_t)(p - c->data))
#define RELOAD() (p = c->data + c->pos)
#define SKIP_WS()                                                                                              \
    do {                                                                                                       \
        while (p < end && is_ws(*p))                                                                           \
            p++;                                                                                               \
        if (__builtin_expect(p >= end, 0)) {                                                                   \
            SYNC();                                                                                            \
            return at_end(c);                                                                                  \
        }                                                                                                      \
    } while (0)
#define ERROR(what) (SYNC(), lex_error(c, c->pos, what))

dispatch:
    if (c->depth == 0) {
        SKIP_WS();
        if (c->root_done)
            return ERROR("text after the top-level value");
        f = NULL;
        goto value;
    }
    f = &c->stack[c->depth - 1];
    switch (f->state) {
    case G_KEY_OR_END: goto key_or_end;
    case G_KEY: goto key;
    case G_COLON: goto colon;
    case G_VALUE: goto value;
    case G_VALUE_OR_END: goto value_or_end;
    default: goto comma_or_end;
    }

key_or_end:
    SKIP_WS();
    if (*p == '}')
        goto close;
key:
    SKIP_WS();
    if (*p != '"')
        return ERROR(f->state == G_KEY ? "an object key must follow ','" : "an object key or '}' expected");
    SYNC();
    rc = lex_string(c, &s, &len);
    if (rc != T_OK)
        return rc;
    RELOAD();
    c->tok_end = c->pos;
    if (!rd_key(c, s, len))
        return T_ERR;
    f->state = G_COLON;
colon:
    SKIP_WS();
    if (*p != ':')
        return ERROR("':' expected after an object key");
    p++;
    f->state = G_VALUE;
    goto value;

value_or_end:
    SKIP_WS();
    if (*p == ']')
        goto close;
value:
    SKIP_WS();
    ch = *p;
    SYNC();
    if (f && (f->role == R_SKIP || (f->is_map && f->key == K_OTHER))) {
        /* a value nobody reads: validated, nothing computed */
        switch (ch) {
        case '{':
        case '[':
            c->pos++;
            c->tok_end = c->pos;
            f->state = G_COMMA_OR_END;
            if (c->depth >= DT_RD_MAX_DEPTH)
                return rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH), T_ERR;
            f = &c->stack[c->depth++];
            f->role = R_SKIP;
            f->is_map = ch == '{';
            f->key = K_OTHER;
            f->state = ch == '{' ? G_KEY_OR_END : G_VALUE_OR_END;
            RELOAD();
            if (ch == '{')
                goto key_or_end;
            goto value_or_end;
        case '"':
            rc = lex_string(c, NULL, NULL);
            break;
        case 't':
        case 'f':
        case 'n':
            rc = lex_word(c, ch);
            break;
        default:
            if (ch != '-' && (ch < '0' || ch > '9'))
                return lex_error(c, c->pos, "a value expected");
            rc = lex_number(c, &s, &len);
            break;
        }
        if (rc != T_OK)
            return rc;
        RELOAD();
        f->state = G_COMMA_OR_END;
        goto comma_or_end;
    }
    switch (ch) {
    case '{':
    case '[':
        c->pos++;
        c->tok_end = c->pos;
        if (f)
            f->state = G_COMMA_OR_END;
        if (!rd_open(c, ch == '{' ? V_MAP : V_ARRAY))
            return T_ERR;
        RELOAD();
        f = &c->stack[c->depth - 1];
        if (ch == '{')
            goto key_or_end;
        goto value_or_end;
    case '"':
        rc = lex_string(c, &s, &len);
        if (rc != T_OK)
            return rc;
        if (scalar(c, V_STR, s, len) != T_OK)
            return T_ERR;
        break;
    case 't':
    case 'f':
    case 'n':
        rc = lex_word(c, ch);
        if (rc != T_OK)
            return rc;
        if (scalar(c, ch == 'n' ? V_NULL : V_BOOL, ch == 't' ? "1" : "", ch == 't' ? 1 : 0) != T_OK)
            return T_ERR;
        break;
    default:
        if (ch != '-' && (ch < '0' || ch > '9'))
            return lex_error(c, c->pos, "a value expected");
        rc = lex_number(c, &s, &len);
        if (rc != T_OK)
            return rc;
        if (scalar(c, V_NUM, s, len) != T_OK)
            return T_ERR;
        break;
    }
    RELOAD();
    if (!f)
        goto dispatch; /* the root was a scalar: rd_value refused it */
comma_or_end:
    SKIP_WS();
    ch = *p;
    if (ch == ',') {
        p++;
        if (f->is_map) {
            f->state = G_KEY;
            goto key;
        }
        f->state = G_VALUE;
        goto value;
    }
    if ((ch == '}' && f->is_map) || (ch == ']' && !f->is_map))
        goto close;
    return ERROR(f->is_map ? "',' or '}' expected" : "',' or ']' expected");

close:
    p++;
    SYNC();
    c->tok_end = c->pos;
    if (!rd_close(c))
        return T_ERR;
    value_done(c);
    if (c->depth == 0)
        goto dispatch;
    f = &c->stack[c->depth - 1];
    goto comma_or_end;
#undef SYNC
#undef RELOAD
#undef SKIP_WS
#undef ERROR
}

/* Makes room and reads more input after T_MORE: keeps what the token (or
   the captured event) still needs. -1 on error. */
static int rd_refill(rd_ctx *c)
{
    if (c->borrowed) {
        c->eof = true;
        return 0;
    }
    size_t keep = c->tok_start;
    if (c->raw && c->depth > 0 && c->stack[c->depth - 1].role != R_EVENTS) {
        /* inside an event (or deeper): keep it from its '{' */
        for (int d = 0; d < c->depth; d++) {
            if (c->stack[d].role == R_EVENT) {
                keep = (size_t)(c->ev_start - c->base);
                break;
            }
        }
    }
    if (keep > 0) {
        memmove(c->data, c->data + keep, c->len - keep);
        c->len -= keep;
        c->pos -= keep;
        c->tok_start -= keep;
        c->tok_end = c->tok_end >= keep ? c->tok_end - keep : 0;
        c->base += keep;
    }
    if (c->len == c->cap) {
        if (c->cap >= RD_MAX_TOKEN) {
            c->tok_end = c->pos;
            return rd_fail(c, "a value longer than %u MiB", RD_MAX_TOKEN >> 20), -1;
        }
        unsigned char *nb = realloc(c->data, c->cap * 2 + 8);
        if (!nb)
            return rd_fail(c, "out of memory"), -1;
        c->data = nb;
        c->cap *= 2;
    }
    /* Several reads until the window is full: fewer rescans of long tokens. */
    while (c->len < c->cap) {
        char msg[400];
        long n = src_read(c->src, c->data + c->len, c->cap - c->len, msg, sizeof msg);
        if (n < 0) {
            if (!c->failed) {
                c->failed = true;
                snprintf(c->err, c->errlen, "byte %" PRIu64 ": %s", c->base + c->len, msg);
            }
            return -1;
        }
        if (n == 0) {
            c->eof = true;
            break;
        }
        c->len += (size_t)n;
        if (c->len - c->pos >= RD_CHUNK / 2)
            break;
    }
    return 0;
}

void dt_rd_summary_free(dt_rd_summary *s)
{
    if (!s)
        return;
    free(s->display_time_unit);
    free(s->trace_name);
    free(s->version);
    free(s->backend);
    free(s->vendor);
    free(s->library);
    free(s->library_version);
    free(s->host);
    free(s->clocksource);
    free(s->rank_host);
    free(s->launcher);
    dt_rd_kvlist *lists[] = {&s->loss, &s->counts, &s->attribution, &s->external_parents};
    for (size_t l = 0; l < 4; l++) {
        for (size_t i = 0; i < lists[l]->count; i++)
            free(lists[l]->items[i].key);
        free(lists[l]->items);
    }
    for (size_t i = 0; i < s->notes.count; i++) {
        free(s->notes.items[i].key);
        free(s->notes.items[i].text);
    }
    free(s->notes.items);
    memset(s, 0, sizeof *s);
}

int dt_rd_read_opts(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err,
                    size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    memset(summary, 0, sizeof *summary);
    summary->local_rank = summary->world_size = -1;
    if (!src) {
        snprintf(err, errlen, "no input");
        return -1;
    }
    rd_ctx c;
    memset(&c, 0, sizeof c);
    c.src = src;
    c.sum = summary;
    c.opt = opts;
    c.raw = opts && (opts->flags & DT_RD_RAW);
    c.err = err;
    c.errlen = errlen;
    int rc = 0;
    if (src_detect(src, err, errlen) != 0) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "byte 0: %s", tmp);
        return -1;
    }
    if (src->mem && !src->gzip) {
        /* the whole text is in memory already: no copy */
        c.data = (unsigned char *)(uintptr_t)src->mem;
        c.len = src->mem_len;
        c.borrowed = true;
        c.eof = true;
        src->mem_pos = src->mem_len;
    } else {
        c.cap = RD_CHUNK;
        c.data = malloc(c.cap + 8);
        if (!c.data) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    for (;;) {
        int t = rd_parse(&c);
        if (t == T_OK)
            break;
        if (t == T_ERR) {
            rc = c.visit_rc ? c.visit_rc : -1;
            break;
        }
        if (rd_refill(&c) != 0) {
            rc = -1;
            break;
        }
    }
    summary->bytes = c.base + (rc == 0 ? c.len : c.pos);
    summary->compressed = src->gzip;
    if (rc == 0 && !summary->has_trace_events) {
        snprintf(err, errlen, "byte %" PRIu64 ": no \"traceEvents\" array at the top level", summary->bytes);
        rc = -1;
    }
    if (!c.borrowed)
        free(c.data);
    free(c.tmp);
    free(c.sb);
    free(c.keybuf);
    return rc;
}

int dt_rd_read(dt_rd_source *src, dt_rd_visitor visit, void *user, dt_rd_summary *summary, char *err,
               size_t errlen)
{
    dt_rd_options o = {.visit = visit, .user = user};
    return dt_rd_read_opts(src, &o, summary, err, errlen);
}
