/*
 * Streaming trace reader: yajl callbacks over chunks of plain or gzip JSON.
 *
 * A small explicit stack of frames (one per open object/array, bounded by
 * DT_RD_MAX_DEPTH) knows where the parser is: at the top level, inside
 * traceEvents, inside one event or its args, inside the devtrace object, or
 * in a subtree nobody needs (skipped without storing anything).
 */
#include "dt_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define RD_CHUNK (256u * 1024u)

/* ------------------------------------------------------------------ */
/* Sources                                                             */
/* ------------------------------------------------------------------ */
struct dt_rd_source {
    FILE *fp;
    bool own_fp;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    /* raw input window */
    unsigned char *inbuf;
    const unsigned char *in;
    size_t in_len, in_pos;
    bool in_eof;
    bool checked, gzip;
    bool zs_init, z_ended;
    z_stream zs;
    unsigned char *outbuf;
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
    free(s->outbuf);
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

/* Next chunk of JSON text: 1 with *p and *n set, 0 at the end, -1 on error. */
static int src_next(dt_rd_source *s, const unsigned char **p, size_t *n, char *err, size_t errlen)
{
    if (src_fill(s, err, errlen) != 0)
        return -1;
    if (!s->checked) {
        s->checked = true;
        /* A gzip member starts with 1f 8b; JSON never does. */
        if (s->in_len - s->in_pos >= 2 && s->in[s->in_pos] == 0x1f && s->in[s->in_pos + 1] == 0x8b) {
            s->gzip = true;
            s->outbuf = malloc(RD_CHUNK);
            if (!s->outbuf) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            memset(&s->zs, 0, sizeof s->zs);
            if (inflateInit2(&s->zs, 15 + 16) != Z_OK) {
                snprintf(err, errlen, "cannot initialise zlib");
                return -1;
            }
            s->zs_init = true;
        }
    }
    if (!s->gzip) {
        if (s->in_pos >= s->in_len)
            return 0;
        *p = s->in + s->in_pos;
        *n = s->in_len - s->in_pos;
        s->in_pos = s->in_len;
        return 1;
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
        s->zs.next_out = s->outbuf;
        s->zs.avail_out = RD_CHUNK;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        s->in_pos = s->in_len - s->zs.avail_in;
        size_t produced = RD_CHUNK - s->zs.avail_out;
        if (rc == Z_STREAM_END) {
            s->z_ended = true;
        } else if (rc == Z_BUF_ERROR && s->in_eof) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip: corrupt data (%s)", s->zs.msg ? s->zs.msg : "inflate failed");
            return -1;
        }
        if (produced > 0) {
            *p = s->outbuf;
            *n = produced;
            return 1;
        }
        if (s->in_eof && !s->z_ended) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */
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
    R_DT,
    R_DT_WINDOW,
    R_DT_CLOCK,
    R_DT_LOSS,
    R_DT_COUNTS,
    R_DT_ATTR,
    R_DT_PARENTS,
    R_SKIP
};

enum key {
    K_OTHER = 0,
    K_ANY, /* every key of a map of numbers (loss, counts, attribution) */
    K_SCHEMA, K_DISPLAY, K_BASE, K_DEVPROPS, K_EVENTS, K_DEVTRACE, K_TRACENAME,
    K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS,
    K_EXT, K_CORR, K_BYTES, K_PARENT, K_DEVICE, K_STREAM, K_CBID, K_ANAME, K_LABELS, K_SORT,
    K_VERSION, K_BACKEND, K_VENDOR, K_LIBRARY, K_LIBVER, K_WINDOW, K_CLOCK, K_LOSS, K_COUNTS, K_ATTR, K_PARENTS,
    K_START, K_END,
    K_SAMPLES, K_SEGMENTS, K_SLOPE, K_OFFSET, K_ERRB, K_IDENTITY
};

typedef struct key_entry {
    unsigned char key;
    unsigned char len;
    const char *name;
} key_entry;

#define KEY(key, name) {key, sizeof(name) - 1, name}

static const key_entry keys_root[] = {
    KEY(K_SCHEMA, "schemaVersion"),
    KEY(K_DISPLAY, "displayTimeUnit"),
    KEY(K_BASE, "baseTimeNanoseconds"),
    KEY(K_DEVPROPS, "deviceProperties"),
    KEY(K_EVENTS, "traceEvents"),
    KEY(K_DEVTRACE, "devtrace"),
    KEY(K_TRACENAME, "traceName"),
};

static const key_entry keys_event[] = {
    KEY(K_PH, "ph"),
    KEY(K_CAT, "cat"),
    KEY(K_NAME, "name"),
    KEY(K_PID, "pid"),
    KEY(K_TID, "tid"),
    KEY(K_TS, "ts"),
    KEY(K_DUR, "dur"),
    KEY(K_ID, "id"),
    KEY(K_BP, "bp"),
    KEY(K_ARGS, "args"),
};

static const key_entry keys_args[] = {
    KEY(K_EXT, "External id"),
    KEY(K_CORR, "correlation"),
    KEY(K_BYTES, "bytes"),
    KEY(K_PARENT, "parent"),
    KEY(K_DEVICE, "device"),
    KEY(K_STREAM, "stream"),
    KEY(K_CBID, "cbid"),
    KEY(K_ANAME, "name"),
    KEY(K_LABELS, "labels"),
    KEY(K_SORT, "sort_index"),
};

static const key_entry keys_dt[] = {
    KEY(K_VERSION, "version"),
    KEY(K_BACKEND, "backend"),
    KEY(K_VENDOR, "vendor"),
    KEY(K_LIBRARY, "library"),
    KEY(K_LIBVER, "libraryVersion"),
    KEY(K_WINDOW, "captureWindow"),
    KEY(K_CLOCK, "clock"),
    KEY(K_LOSS, "loss"),
    KEY(K_COUNTS, "counts"),
    KEY(K_ATTR, "attribution"),
    KEY(K_PARENTS, "externalParents"),
};

static const key_entry keys_dt_window[] = {
    KEY(K_START, "startNs"),
    KEY(K_END, "endNs"),
};

static const key_entry keys_dt_clock[] = {
    KEY(K_SAMPLES, "samples"),
    KEY(K_SEGMENTS, "segments"),
    KEY(K_SLOPE, "slope"),
    KEY(K_OFFSET, "offsetNs"),
    KEY(K_ERRB, "errorBoundNs"),
    KEY(K_IDENTITY, "identity"),
};

#undef KEY

/* The keys that matter, per kind of object; every other key is skipped. */
static const struct {
    const key_entry *keys;
    size_t count;
} role_keys[R_SKIP + 1] = {
    [R_ROOT] = {keys_root, sizeof keys_root / sizeof keys_root[0]},
    [R_EVENT] = {keys_event, sizeof keys_event / sizeof keys_event[0]},
    [R_ARGS] = {keys_args, sizeof keys_args / sizeof keys_args[0]},
    [R_DT] = {keys_dt, sizeof keys_dt / sizeof keys_dt[0]},
    [R_DT_WINDOW] = {keys_dt_window, sizeof keys_dt_window / sizeof keys_dt_window[0]},
    [R_DT_CLOCK] = {keys_dt_clock, sizeof keys_dt_clock / sizeof keys_dt_clock[0]},
};

typedef struct frame {
    unsigned char role;
    unsigned char is_map;
    unsigned char key;
} frame;

/* Event string slots, stored as offsets into one buffer that may move. */
enum { S_PH, S_CAT, S_NAME, S_BP, S_ID, S_PID, S_TID, S_ANAME, S_LABELS, S_COUNT };

typedef struct rd_ctx {
    yajl_handle h;
    uint64_t base; /* bytes handed to yajl before the current chunk */
    frame stack[DT_RD_MAX_DEPTH + 1];
    int depth;
    bool root_seen;
    dt_rd_event ev;
    char *sb;
    size_t sb_len, sb_cap;
    size_t soff[S_COUNT];
    char *keybuf; /* key of the current loss/counts/attribution entry */
    size_t keybuf_cap;
    dt_rd_summary *sum;
    dt_rd_visitor visit;
    void *user;
    int visit_rc;
    bool failed;
    char *err;
    size_t errlen;
} rd_ctx;

enum vtype { V_NUM, V_STR, V_BOOL, V_NULL, V_MAP, V_ARRAY };

static const char *vtype_name(int t)
{
    static const char *names[] = {"a number", "a string", "a boolean", "null", "an object", "an array"};
    return names[t];
}

static uint64_t rd_offset(const rd_ctx *c)
{
    return c->base + yajl_get_bytes_consumed(c->h);
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
    char *k = strdup(c->keybuf ? c->keybuf : "");
    if (!k)
        return rd_fail(c, "out of memory");
    l->items[l->count].key = k;
    l->items[l->count].value = v;
    l->count++;
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
            if (type != V_NUM || !parse_i64(s, len, &sum->schema_version)) {
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
            if (type != V_NUM || !parse_i64(s, len, &sum->base_time_ns)) {
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
        ev->offset = rd_offset(c) - 1;
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
            if (type == V_STR) {
                id->is_str = true;
                return ev_str(c, f->key == K_PID ? S_PID : S_TID, s, len) ? R_SKIP : -1;
            }
            id->is_str = false;
            if (type != V_NUM || !parse_i64(s, len, &id->num)) {
                rd_event_fail(c, what, type);
                return -1;
            }
            return R_SKIP;
        }
        case K_TS:
        case K_DUR: {
            int64_t *dst = f->key == K_TS ? &ev->ts_ns : &ev->dur_ns;
            if (type != V_NUM || !dt_rd_parse_us_to_ns(s, len, dst)) {
                rd_event_fail(c, f->key == K_TS ? "\"ts\" must be a number of microseconds that fits"
                                                : "\"dur\" must be a number of microseconds that fits",
                              type);
                return -1;
            }
            ev->has |= f->key == K_TS ? DT_RD_HAS_TS : DT_RD_HAS_DUR;
            return R_SKIP;
        }
        case K_ID:
            if (type != V_NUM && type != V_STR) {
                rd_event_fail(c, "\"id\" must be a number or a string", type);
                return -1;
            }
            ev->has |= DT_RD_HAS_ID;
            return ev_str(c, S_ID, s, len) ? R_SKIP : -1;
        case K_ARGS:
            if (type != V_MAP) {
                rd_event_fail(c, "\"args\" must be an object", type);
                return -1;
            }
            return R_ARGS;
        default:
            return R_SKIP;
        }
    case R_ARGS: {
        uint64_t *u = NULL;
        int64_t *i = NULL;
        uint32_t bit = 0;
        const char *what = NULL;
        switch (f->key) {
        case K_EXT: u = &ev->external_id; bit = DT_RD_HAS_EXTERNAL_ID; what = "\"External id\""; break;
        case K_CORR: u = &ev->correlation; bit = DT_RD_HAS_CORRELATION; what = "\"correlation\""; break;
        case K_BYTES: u = &ev->bytes; bit = DT_RD_HAS_BYTES; what = "\"bytes\""; break;
        case K_PARENT: u = &ev->parent; bit = DT_RD_HAS_PARENT; what = "\"parent\""; break;
        case K_DEVICE: i = &ev->device; bit = DT_RD_HAS_DEVICE; what = "\"device\""; break;
        case K_STREAM: i = &ev->stream; bit = DT_RD_HAS_STREAM; what = "\"stream\""; break;
        case K_CBID: i = &ev->cbid; bit = DT_RD_HAS_CBID; what = "\"cbid\""; break;
        case K_SORT: i = &ev->sort_index; bit = DT_RD_HAS_SORT_INDEX; what = "\"sort_index\""; break;
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
        bool ok = type == V_NUM && (u ? parse_u64(s, len, u) : parse_i64(s, len, i));
        if (!ok) {
            char msg[96];
            snprintf(msg, sizeof msg, "args %s must be %s integer", what,
                     u ? "a non-negative" : "an");
            rd_event_fail(c, msg, type);
            return -1;
        }
        ev->has |= bit;
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
    case R_DT:
        switch (f->key) {
        case K_VERSION:
        case K_BACKEND:
        case K_VENDOR:
        case K_LIBRARY:
        case K_LIBVER: {
            char **dst = f->key == K_VERSION   ? &sum->version
                         : f->key == K_BACKEND ? &sum->backend
                         : f->key == K_VENDOR  ? &sum->vendor
                         : f->key == K_LIBRARY ? &sum->library
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
            if (type != V_NUM || !parse_i64(s, len, dst)) {
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
    case R_DT_LOSS:
    case R_DT_COUNTS:
    case R_DT_ATTR:
    case R_DT_PARENTS: {
        static const char *const names[] = {[R_DT_LOSS] = "loss", [R_DT_COUNTS] = "counts",
                                            [R_DT_ATTR] = "attribution", [R_DT_PARENTS] = "externalParents"};
        int64_t v;
        if (type != V_NUM || !parse_i64(s, len, &v)) {
            rd_fail(c, "\"devtrace.%s\" values must be integers (\"%s\" is %s)", names[f->role],
                    c->keybuf ? c->keybuf : "", type == V_NUM ? "not an integer" : vtype_name(type));
            return -1;
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

static int rd_scalar(rd_ctx *c, int type, const char *s, size_t len)
{
    return rd_value(c, type, s, len) < 0 ? 0 : 1;
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
    return 1;
}

static int cb_null(void *u)
{
    return rd_scalar(u, V_NULL, "", 0);
}

static int cb_bool(void *u, int b)
{
    return rd_scalar(u, V_BOOL, b ? "1" : "", b ? 1 : 0);
}

static int cb_number(void *u, const char *s, size_t len)
{
    return rd_scalar(u, V_NUM, s, len);
}

static int cb_string(void *u, const unsigned char *s, size_t len)
{
    return rd_scalar(u, V_STR, (const char *)s, len);
}

static int cb_start_map(void *u)
{
    return rd_open(u, V_MAP);
}

static int cb_start_array(void *u)
{
    return rd_open(u, V_ARRAY);
}

static int cb_map_key(void *u, const unsigned char *key, size_t len)
{
    rd_ctx *c = u;
    frame *f = &c->stack[c->depth - 1];
    f->key = K_OTHER;
    if (f->role == R_SKIP)
        return 1;
    if (f->role == R_DT_LOSS || f->role == R_DT_COUNTS || f->role == R_DT_ATTR || f->role == R_DT_PARENTS) {
        if (len + 1 > c->keybuf_cap) {
            char *nb = realloc(c->keybuf, len + 1);
            if (!nb)
                return rd_fail(c, "out of memory");
            c->keybuf = nb;
            c->keybuf_cap = len + 1;
        }
        memcpy(c->keybuf, key, len);
        c->keybuf[len] = '\0';
        f->key = K_ANY;
        return 1;
    }
    const key_entry *keys = role_keys[f->role].keys;
    for (size_t i = 0; i < role_keys[f->role].count; i++) {
        if (keys[i].len == len && memcmp(keys[i].name, key, len) == 0) {
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
    c->sum->event_count++;
    if (c->visit) {
        int rc = c->visit(c->user, ev);
        if (rc != 0) {
            c->visit_rc = rc;
            return 0;
        }
    }
    return 1;
}

static int cb_end(void *u)
{
    rd_ctx *c = u;
    frame *f = &c->stack[--c->depth];
    if (f->role == R_EVENT)
        return rd_event_done(c);
    return 1;
}

static const yajl_callbacks rd_callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

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
    dt_rd_kvlist *lists[] = {&s->loss, &s->counts, &s->attribution, &s->external_parents};
    for (size_t l = 0; l < 4; l++) {
        for (size_t i = 0; i < lists[l]->count; i++)
            free(lists[l]->items[i].key);
        free(lists[l]->items);
    }
    memset(s, 0, sizeof *s);
}

static void yajl_message(rd_ctx *c, const unsigned char *chunk, size_t n, uint64_t base)
{
    unsigned char *msg = yajl_get_error(c->h, 0, chunk, n);
    const char *text = msg ? (const char *)msg : "parse error";
    size_t len = strlen(text);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
        len--;
    snprintf(c->err, c->errlen, "byte %" PRIu64 ": invalid JSON: %.*s", base + yajl_get_bytes_consumed(c->h),
             (int)len, text);
    if (msg)
        yajl_free_error(c->h, msg);
}

int dt_rd_read(dt_rd_source *src, dt_rd_visitor visit, void *user, dt_rd_summary *summary, char *err,
               size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    memset(summary, 0, sizeof *summary);
    if (!src) {
        snprintf(err, errlen, "no input");
        return -1;
    }
    rd_ctx c;
    memset(&c, 0, sizeof c);
    c.sum = summary;
    c.visit = visit;
    c.user = user;
    c.err = err;
    c.errlen = errlen;
    c.h = yajl_alloc(&rd_callbacks, NULL, &c);
    if (!c.h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (;;) {
        const unsigned char *p = NULL;
        size_t n = 0;
        int got = src_next(src, &p, &n, err, errlen);
        if (got < 0) {
            char tmp[400];
            snprintf(tmp, sizeof tmp, "%s", err);
            snprintf(err, errlen, "byte %" PRIu64 ": %s", c.base, tmp);
            rc = -1;
            break;
        }
        yajl_status st = got == 0 ? yajl_complete_parse(c.h) : yajl_parse(c.h, p, n);
        if (st == yajl_status_client_canceled) {
            rc = c.visit_rc ? c.visit_rc : -1;
            break;
        }
        if (st == yajl_status_error) {
            if (got == 0 && !c.root_seen)
                snprintf(err, errlen, "byte %" PRIu64 ": empty input: no JSON value", c.base);
            else
                yajl_message(&c, p, n, c.base);
            rc = -1;
            break;
        }
        if (got == 0)
            break;
        c.base += n;
    }
    summary->bytes = c.base;
    summary->compressed = src->gzip;
    if (rc == 0 && !c.root_seen) {
        snprintf(err, errlen, "byte 0: empty input");
        rc = -1;
    }
    if (rc == 0 && !summary->has_trace_events) {
        snprintf(err, errlen, "byte %" PRIu64 ": no \"traceEvents\" array at the top level", c.base);
        rc = -1;
    }
    yajl_free(c.h);
    free(c.sb);
    free(c.keybuf);
    return rc;
}
