/*
 * Streaming trace reader: its own validating JSON tokenizer over a window
 * of plain or gzip JSON.
 *
 * Why not a library: yajl, the parser this reader used first, tokenizes
 * these traces at about 160-290 MB/s with no callbacks at all (bench/reader
 * prints it beside this reader), below the 300 MB/s a 1 GB trace needs with
 * the checks on top; the faster parsers are not in Debian (yyjson, simdjson)
 * or are C++ (RapidJSON), and the C DOM parsers in Debian (json-c, jansson,
 * cJSON) hold the document. Trace JSON is mostly short keys, short strings
 * and numbers in flat objects, which a parser that knows the shape of an
 * event reads several times faster, while validating as strictly (RFC 8259
 * grammar, UTF-8 without overlongs or surrogates).
 *
 * Two parsers share the lexers:
 *  - the document's outer structure (the root object, the traceEvents
 *    array, the devtrace object and its maps, deviceProperties, keys nobody
 *    reads) goes through a small state machine with an explicit stack of
 *    frames (bounded by DT_RD_MAX_DEPTH) that can stop between any two
 *    tokens: a token that does not end inside the window is scanned again
 *    once more input is in;
 *  - each traceEvents entry is parsed whole, by recursive descent over the
 *    window straight into the event struct, its keys recognised by length
 *    and one word compare. An event that does not end inside the window is
 *    parsed again from its '{' once more input is in; the window grows
 *    (doubling, so that the rescans cost at most as much again) to hold an
 *    event of up to 256 MiB.
 *
 * The window always ends with a NUL byte, which no scan passes: the hot
 * loops compare no positions with the end, and only a scan that stops at
 * the NUL asks whether the input goes on. Strings are scanned 16 bytes at a
 * time (SSE2; 8 with SWAR on other targets) for '"', '\\', control bytes and
 * non-ASCII bytes, which alone take the slow path (escapes; UTF-8 validated
 * sequence by sequence). The strings an event hands its visitor are
 * NUL-terminated where they lie, over their closing quote, once the event
 * has been parsed; with DT_RD_RAW, where the visitor gets the event's text
 * as written, they are copied instead.
 */
#include "base/utf8.h"
#include "dt_reader.h"
#include "rd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if DT_HAVE_ZLIB
#include <zlib.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The window's size, and what a gzip source reads at a time. */
#define RD_CHUNK (1u << 20)
/* Readable bytes past the window's end (the NUL, then room for the 16-byte
   loads that find it). */
#define RD_SLACK 64
/* A token or event larger than this is refused rather than held. */
#define RD_MAX_TOKEN (256u << 20)

/* ------------------------------------------------------------------ */
/* Sources                                                             */
/* ------------------------------------------------------------------ */
struct dt_rd_source {
    int fd;
    bool own_fd;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    /* raw (compressed) input window, for gzip */
    unsigned char *inbuf;
    const unsigned char *in;
    size_t in_len, in_pos;
    bool in_eof;
    bool checked, gzip;
    bool zs_init, z_ended, z_failed;
    /* the first bytes of the (decompressed) input, read to tell its format */
    unsigned char peek[16];
    size_t peek_len, peek_pos;
#if DT_HAVE_ZLIB
    z_stream zs;
#endif
};

dt_rd_source *dt_rd_open_file(const char *path, char *err, size_t errlen)
{
    dt_rd_source *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            free(s);
            return NULL;
        }
        s->own_fd = true;
#ifdef POSIX_FADV_SEQUENTIAL
        posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
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
    s->fd = -1;
    s->mem = data;
    s->mem_len = len;
    return s;
}

void dt_rd_close(dt_rd_source *s)
{
    if (!s)
        return;
    if (s->own_fd && s->fd >= 0)
        close(s->fd);
#if DT_HAVE_ZLIB
    if (s->zs_init)
        inflateEnd(&s->zs);
#endif
    free(s->inbuf);
    free(s);
}

/* read(2) without EINTR: the count, 0 at the end, -1 on error. */
static ssize_t read_some(int fd, void *dst, size_t cap)
{
    for (;;) {
        ssize_t n = read(fd, dst, cap);
        if (n >= 0 || errno != EINTR)
            return n;
    }
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
    if (s->fd < 0) {
        s->in_eof = true;
        s->in_len = s->in_pos = 0;
        return 0;
    }
    ssize_t n = read_some(s->fd, s->inbuf, RD_CHUNK);
    if (n < 0) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    s->in = s->inbuf;
    s->in_len = (size_t)n;
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
#if !DT_HAVE_ZLIB
        snprintf(err, errlen, "a gzip trace, and this devtrace was built without zlib: gunzip it first, or "
                              "rebuild devtrace with zlib (zlib1g-dev or zlib-devel)");
        return -1;
#else
        memset(&s->zs, 0, sizeof s->zs);
        if (inflateInit2(&s->zs, 15 + 16) != Z_OK) {
            snprintf(err, errlen, "cannot initialise zlib");
            return -1;
        }
        s->zs_init = true;
#endif
    }
    return 0;
}

/* Up to cap bytes of JSON text into dst: the count, 0 at the end, -1 on
   error. */
static long src_read_raw(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    if (src_detect(s, err, errlen) != 0)
        return -1;
    if (!s->gzip) {
        if (s->fd >= 0 && s->in_pos >= s->in_len && !s->in_eof) {
            /* nothing pending: read straight into the caller's window */
            ssize_t n = read_some(s->fd, dst, cap);
            if (n < 0) {
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
#if !DT_HAVE_ZLIB
    return -1; /* src_detect refused gzip input */
#else
    if (s->z_failed) {
        snprintf(err, errlen, "gzip: corrupt data (%s)", s->zs.msg ? s->zs.msg : "inflate failed");
        return -1;
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
        if (produced > 0 && rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
            /* the text before the damage first, whatever the window's size:
               the error comes with the next call */
            s->z_failed = true;
            return (long)produced;
        }
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
#endif
}

/* src_read_raw after the bytes src_peek kept. */
static long src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    if (s->peek_pos < s->peek_len) {
        size_t n = s->peek_len - s->peek_pos;
        if (n > cap)
            n = cap;
        memcpy(dst, s->peek + s->peek_pos, n);
        s->peek_pos += n;
        return (long)n;
    }
    return src_read_raw(s, dst, cap, err, errlen);
}

long dt_rd_src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    return src_read(s, dst, cap, err, errlen);
}

bool dt_rd_src_gzip(const dt_rd_source *s)
{
    return s->gzip;
}

/* The first bytes of the input, kept to be read again: their count, or -1. */
static long src_peek(dt_rd_source *s, char *err, size_t errlen)
{
    while (s->peek_len < sizeof s->peek) {
        long n = src_read_raw(s, s->peek + s->peek_len, sizeof s->peek - s->peek_len, err, errlen);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        s->peek_len += (size_t)n;
    }
    return (long)s->peek_len;
}

/* What the first bytes say the input is, when it is not JSON (NULL): a
   Perfetto trace (a TracePacket, field 1, length-delimited, where JSON has
   a '{' after any whitespace), or another binary format named by its magic. */
static const char *sniff_binary(const unsigned char *p, size_t n)
{
    static const struct {
        const char *magic;
        size_t len;
        const char *what;
    } magics[] = {
        {"\x7f" "ELF", 4, "an ELF executable or library"}, {"PK\x03\x04", 4, "a zip archive"},
        {"BZh", 3, "bzip2 data"}, {"\xfd" "7zXZ", 5, "xz data"}, {"\x28\xb5\x2f\xfd", 4, "zstd data"},
        {"\x1f\x8b", 2, "gzip data"}, {"\x89PNG", 4, "a PNG image"}, {"SQLite format 3", 15, "an SQLite database"},
    };
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i == n || p[i] == '{' || p[i] == '[')
        return NULL; /* JSON, or whitespace so far: the JSON reader says which */
    if (n >= 2 && p[0] == 0x0a)
        return "perfetto";
    for (size_t k = 0; k < sizeof magics / sizeof *magics; k++)
        if (n >= magics[k].len && memcmp(p, magics[k].magic, magics[k].len) == 0)
            return magics[k].what;
    return NULL;
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

/* A sign and a magnitude as an int64, when it fits. */
static inline bool signed_value(bool neg, uint64_t mag, int64_t *out)
{
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return false;
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)mag;
    }
    return true;
}

static bool parse_i64(const char *s, size_t len, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint64_t u;
    return parse_u64(s + neg, len - neg, &u) && signed_value(neg, u, out);
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

/* A number as the lexer read it while scanning it. */
typedef struct rd_num {
    uint64_t mag;  /* integer part */
    uint32_t frac; /* first three decimals, as an integer */
    bool neg, fits, has_frac, has_exp, round_up;
} rd_num;

/* The number as an int64, when it is an integer that fits. */
static inline bool num_i64(const rd_num *n, int64_t *out)
{
    return n->fits && !n->has_frac && !n->has_exp && signed_value(n->neg, n->mag, out);
}

/* The number (its text s, len), as microseconds, in exact nanoseconds. */
static inline bool num_us_to_ns(const rd_num *n, const char *s, size_t len, int64_t *out)
{
    if (n->has_exp || !n->fits)
        return dt_rd_parse_us_to_ns(s, len, out);
    if (n->mag > (uint64_t)INT64_MAX / 1000 - 1)
        return false;
    int64_t ns = (int64_t)(n->mag * 1000 + n->frac + n->round_up);
    *out = n->neg ? -ns : ns;
    return true;
}

/* ------------------------------------------------------------------ */
/* Parser state                                                        */
/* ------------------------------------------------------------------ */
enum role {
    R_TOP, /* before the root value */
    R_ROOT,
    R_EVENTS,
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
    K_SCHEMA, K_DISPLAY, K_BASE, K_DEVPROPS, K_EVENTS, K_DEVTRACE, K_TRACENAME, K_DIST, K_HOST_NAME,
    K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS,
    K_EXT, K_CORR, K_BYTES, K_PARENT, K_DEVICE, K_STREAM, K_CBID, K_ANAME, K_LABELS, K_SORT, K_COLLECTIVE,
    K_MEM_BYTES, K_MEM_TOTAL, K_MEM_DEVICE, K_MEM_TYPE, K_ADDR,
    K_VERSION, K_BACKEND, K_VENDOR, K_LIBRARY, K_LIBVER, K_WINDOW, K_CLOCK, K_LOSS, K_COUNTS, K_ATTR, K_PARENTS,
    K_HOST, K_DTPID, K_RTC, K_NOTES, K_WRITER,
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
    KEY(K_TRACENAME, "traceName"), KEY(K_DIST, "distributedInfo"), KEY(K_HOST_NAME, "host_name"),
};

static const key_entry keys_dist[] = {
    KEY(K_RANK, "rank"), KEY(K_LOCAL_RANK, "local_rank"), KEY(K_WORLD, "world_size"), KEY(K_HOST, "host"),
    KEY(K_LAUNCHER, "launcher"),
};

static const key_entry keys_dt[] = {
    KEY(K_VERSION, "version"), KEY(K_BACKEND, "backend"), KEY(K_VENDOR, "vendor"), KEY(K_LIBRARY, "library"),
    KEY(K_LIBVER, "libraryVersion"), KEY(K_WINDOW, "captureWindow"), KEY(K_CLOCK, "clock"), KEY(K_LOSS, "loss"),
    KEY(K_COUNTS, "counts"), KEY(K_ATTR, "attribution"), KEY(K_PARENTS, "externalParents"), KEY(K_HOST, "host"),
    KEY(K_DTPID, "pid"), KEY(K_RTC, "realtimeClock"), KEY(K_NOTES, "notes"), KEY(K_WRITER, "writer"),
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

/* An event's strings, in the order of dt_rd_event's pointers. */
enum { S_PH, S_CAT, S_NAME, S_BP, S_ID, S_PID, S_TID, S_ANAME, S_LABELS, S_COUNT };

enum vtype { V_NUM, V_STR, V_BOOL, V_NULL, V_MAP, V_ARRAY };

typedef struct rd_ctx {
    dt_rd_source *src;
    /* the JSON text window: data[0] is byte `base` of the input; data[len]
       is always NUL */
    unsigned char *data;
    size_t len, cap, pos;
    uint64_t base;
    bool eof;
    size_t tok_start; /* where the token (or event) being scanned starts */
    size_t tok_end;   /* just after the last complete token (for messages) */
    rd_num num;       /* the number just scanned by the frame machine */
    /* decoded strings with escapes */
    char *tmp;
    size_t tmp_cap;

    frame stack[DT_RD_MAX_DEPTH + 1];
    int depth;
    bool root_seen, root_done;
    dt_rd_event ev;
    /* the event's strings: where they lie in the window (ptr, len), or,
       decoded or copied, at an offset in sb (the bit in in_sb) */
    const unsigned char *slot_ptr[S_COUNT];
    size_t slot_off[S_COUNT];
    uint32_t slot_len[S_COUNT];
    unsigned slot_set, slot_in_sb;
    char *sb;
    size_t sb_len, sb_cap;
    char *keybuf; /* key of the current map-of-values entry */
    size_t keybuf_cap, keybuf_len;
    dt_rd_summary *sum;
    const dt_rd_options *opt;
    bool raw; /* capture events' text */
    bool src_failed; /* the source failed after the text in the window */
    char src_err[480];
    int visit_rc;
    bool failed;
    char *err;
    size_t errlen;
} rd_ctx;

enum { T_OK = 0, T_MORE = 1, T_ERR = -1 };

static const char *vtype_name(int t)
{
    static const char *names[] = {"a number", "a string", "a boolean", "null", "an object", "an array"};
    return names[t];
}

static uint64_t rd_offset(const rd_ctx *c)
{
    return c->base + c->tok_end;
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

static int lex_error(rd_ctx *c, size_t at, const char *what)
{
    c->tok_end = at;
    if (!c->failed) {
        c->failed = true;
        snprintf(c->err, c->errlen, "byte %" PRIu64 ": invalid JSON: %s", c->base + at, what);
    }
    return T_ERR;
}

/* A scan stopped at q on what it found there. When the bytes it needed
   from q run past the window and the input goes on, that may be the
   window's NUL: T_MORE, to scan again with more text. Otherwise an error. */
static int stop_at(rd_ctx *c, const unsigned char *q, size_t need, const char *what)
{
    if (!c->eof && q + need > c->data + c->len)
        return T_MORE;
    return lex_error(c, (size_t)(q - c->data), what);
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

/* A value of the document's outer structure at the current position:
   scalars carry text, containers are announced with V_MAP / V_ARRAY (and
   then pushed by the caller). Returns the role of a container about to
   open, R_SKIP for an ignored one, or -1 after an error. Events are parsed
   by parse_event, not here. */
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
    int container = type == V_MAP || type == V_ARRAY;
    const rd_num *num = &c->num;
    switch (f->role) {
    case R_SKIP:
        return R_SKIP;
    case R_ROOT:
        switch (f->key) {
        case K_SCHEMA:
            if (type != V_NUM || !num_i64(num, &sum->schema_version)) {
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
            if (type != V_NUM || !num_i64(num, &sum->base_time_ns)) {
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
        case K_HOST_NAME: /* torch.profiler's */
            if (type != V_STR)
                return R_SKIP;
            return set_summary_str(c, &sum->host_name, s, len) ? R_SKIP : -1;
        default:
            return R_SKIP;
        }
    case R_EVENTS:
        /* an object goes to parse_event */
        rd_fail(c, "traceEvents[%" PRIu64 "] must be an object, not %s", sum->event_count, vtype_name(type));
        return -1;
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
            if (!(type == V_NUM ? num_i64(num, &v) : parse_int_text(s, len, &v)))
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
        case K_WRITER:
        case K_HOST: {
            char **dst = f->key == K_VERSION   ? &sum->version
                         : f->key == K_WRITER  ? &sum->writer
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
            if (type == V_NUM && num_i64(num, &sum->pid))
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
            if (type != V_NUM || !num_i64(num, dst)) {
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
            if (type == V_NUM && num_i64(num, &v)) {
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
        if (type != V_NUM || !num_i64(num, &v)) {
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
    const key_entry *keys = role_keys[f->role].keys;
    size_t n = role_keys[f->role].count;
    for (size_t i = 0; i < n; i++) {
        if (keys[i].len == len && len > 0 && keys[i].name[0] == key[0] && bytes_equal(keys[i].name, key, len)) {
            f->key = keys[i].key;
            break;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Lexers                                                              */
/* ------------------------------------------------------------------ */
/* The lexers work on pointers into the window and rely on its NUL: none
   reads past it except by loads that end inside the slack. */

static inline bool is_ws(unsigned char ch)
{
    /* ' ', '\t', '\n', '\r' */
    return ch <= ' ' && ((UINT64_C(1) << ch) & ((UINT64_C(1) << ' ') | (1u << '\t') | (1u << '\n') | (1u << '\r')));
}

static inline const unsigned char *skip_ws(const unsigned char *p)
{
    /* compact JSON has none: one compare (the NUL and controls are not
       whitespace either, and stop the loop) */
    if (__builtin_expect(*p > ' ', 1))
        return p;
    while (is_ws(*p))
        p++;
    return p;
}

/* The first byte at or after p that ends a string's fast scan: '"', '\\',
   a control byte (the window's NUL among them) or a non-ASCII byte. */
static inline const unsigned char *string_stop(const unsigned char *p)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(' ');
    for (;;) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* signed: bytes >= 0x80 are negative, so below ' ' as well */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmplt_epi8(x, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return p + __builtin_ctz(bits);
        p += 16;
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    for (;;) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t quote = x ^ (ones * '"'), bslash = x ^ (ones * '\\');
        uint64_t m = (((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) | ((x - ones * 0x20) & ~x) | x) & high;
        if (m)
            return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
#else
    while (*p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
        p++;
    return p;
#endif
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

/* The rest of a string from p, a byte string_stop stopped at that is not
   its closing quote: escapes and UTF-8 validated. */
static __attribute__((noinline)) int scan_string_slow(rd_ctx *c, const unsigned char *p,
                                                      const unsigned char **close, bool *escaped)
{
    for (;;) {
        unsigned char ch = *p;
        if (ch == '"')
            break;
        if (ch == '\\') {
            *escaped = true;
            unsigned char e = p[1];
            unsigned cp;
            if (e == 'u') {
                if (!hex4(p + 2, &cp))
                    return stop_at(c, p, 6, "a \\u escape needs four hex digits");
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                       e == 't') {
                p += 2;
            } else {
                return stop_at(c, p, 2, "an unknown escape in a string");
            }
        } else if (ch < 0x20) {
            if (p >= c->data + c->len)
                return c->eof ? lex_error(c, c->len, "a string is not closed") : T_MORE;
            return lex_error(c, (size_t)(p - c->data), "a control character in a string (it must be escaped)");
        } else {
            int n = (int)dt_utf8_len(p, 4); /* the window's NUL ends any sequence */
            if (n == 0)
                return stop_at(c, p, 4, "invalid UTF-8 in a string");
            p += n;
        }
        p = string_stop(p);
    }
    *close = p;
    return T_OK;
}

/* The string whose text starts at p (just after its opening quote):
   *close is its closing quote, *escaped whether it holds escapes. */
static inline int scan_string(rd_ctx *c, const unsigned char *p, const unsigned char **close, bool *escaped)
{
    p = string_stop(p);
    *escaped = false;
    if (__builtin_expect(*p == '"', 1)) {
        *close = p;
        return T_OK;
    }
    return scan_string_slow(c, p, close, escaped);
}

/* The escaped text [q, close) of a valid JSON string, decoded into o
   (never longer than the text); the end of the decoded bytes. */
static char *unescape(const unsigned char *q, const unsigned char *close, char *o)
{
    while (q < close) {
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
            unsigned cp = 0xFFFD;
            if (close - q < 4 || !hex4(q, &cp))
                return o; /* not valid JSON: the caller's text was not checked */
            q += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && close - q >= 6 && q[0] == '\\' && q[1] == 'u') {
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
    return o;
}

size_t dt_rd_unescape(const char *text, size_t len, char *out)
{
    const unsigned char *q = (const unsigned char *)text;
    return (size_t)(unescape(q, q + len, out) - out);
}

/* The text of an escaped string [start, close) decoded into c->tmp, which
   keeps 16 readable bytes past it for word-wide key compares. */
static int decode_string(rd_ctx *c, const unsigned char *start, const unsigned char *close, const char **s,
                         size_t *len)
{
    size_t raw_len = (size_t)(close - start);
    /* Decoding never makes a string longer than its escaped form. */
    if (raw_len + 16 > c->tmp_cap) {
        size_t cap = c->tmp_cap ? c->tmp_cap : 256;
        while (cap < raw_len + 16)
            cap *= 2;
        char *nb = realloc(c->tmp, cap);
        if (!nb)
            return lex_error(c, (size_t)(close - c->data), "out of memory");
        c->tmp = nb;
        c->tmp_cap = cap;
    }
    char *o = unescape(start, close, c->tmp);
    memset(o, 0, 16);
    *s = c->tmp;
    *len = (size_t)(o - c->tmp);
    return T_OK;
}

static inline bool is_digit(unsigned char ch)
{
    return (unsigned)(ch - '0') < 10;
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The digits leading the 8 bytes x (little-endian, as loaded): their count,
   and in *digits the bytes with '0' taken off (digits first, 0-9). */
static inline unsigned leading_digits(uint64_t x, uint64_t *digits)
{
    uint64_t t = x ^ UINT64_C(0x3030303030303030);
    /* high bit of a byte: not a digit (>= 10 after the xor); the & 0x7f
       keeps the add from carrying into the next byte */
    uint64_t not_digit =
        (((t & UINT64_C(0x7F7F7F7F7F7F7F7F)) + UINT64_C(0x7676767676767676)) | t) & UINT64_C(0x8080808080808080);
    *digits = t;
    return not_digit ? (unsigned)__builtin_ctzll(not_digit) >> 3 : 8;
}

/* The value of the first n (1-8) digits of t (leading_digits' bytes). */
static inline uint64_t digits_value(uint64_t t, unsigned n)
{
    uint64_t v = t << (64 - 8 * n); /* the n digits at the top, zeros below */
    v = (v * 10 + (v >> 8)) & UINT64_C(0x00FF00FF00FF00FF);
    v = (v * 100 + (v >> 16)) & UINT64_C(0x0000FFFF0000FFFF);
    return (v * 10000 + (v >> 32)) & UINT64_C(0xFFFFFFFF);
}

/* The number at p: its value read on the way (8 digits per step), *after
   just past it. */
static inline __attribute__((always_inline)) int scan_number(rd_ctx *c, const unsigned char *p,
                                                               const unsigned char **after, rd_num *n)
{
    uint64_t mag = 0, t;
    bool neg = *p == '-';
    *after = p; /* for the compiler: set again on success */
    n->mag = 0;
    p += neg;
    n->neg = neg;
    n->fits = true;
    n->has_frac = n->has_exp = n->round_up = false;
    n->frac = 0;
    unsigned k = leading_digits(load64(p), &t);
    if (k == 0)
        return stop_at(c, p, 1, "a number needs a digit");
    if ((t & 0xFF) == 0) {
        p++; /* a leading 0 is the whole integer part */
    } else {
        mag = digits_value(t, k);
        p += k;
        if (k == 8) {
            /* timestamps have 10 to 16 digits */
            static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
            k = leading_digits(load64(p), &t);
            if (k > 0 && k < 8) {
                mag = mag * pow10[k] + digits_value(t, k);
                p += k;
            } else if (k == 8) {
                /* 16 digits or more: a u64 may overflow, so again, with the checks */
                const unsigned char *d0 = p - 8;
                while (is_digit(*p))
                    p++;
                bool fits = true;
                mag = 0;
                for (const unsigned char *q = d0; q < p; q++) {
                    fits &= !__builtin_mul_overflow(mag, 10u, &mag);
                    fits &= !__builtin_add_overflow(mag, (unsigned)(*q - '0'), &mag);
                }
                n->fits = fits;
            }
        }
    }
    if (*p == '.') {
        p++;
        k = leading_digits(load64(p), &t);
        if (k == 0)
            return stop_at(c, p, 1, "a number needs a digit after its point");
        /* the first three decimals are exact nanoseconds of a microsecond;
           the fourth rounds */
        uint64_t d = k < 8 ? t & ((UINT64_C(1) << (8 * k)) - 1) : t;
        n->frac = (uint32_t)((d & 0xFF) * 100 + (d >> 8 & 0xFF) * 10 + (d >> 16 & 0xFF));
        n->round_up = k >= 4 && (d >> 24 & 0xFF) >= 5;
        n->has_frac = true;
        p += k;
        if (k == 8)
            while (is_digit(*p))
                p++;
    }
    if ((*p | 0x20) == 'e') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return stop_at(c, p, 1, "a number needs a digit in its exponent");
        while (is_digit(*p))
            p++;
        n->has_exp = true;
    }
    /* a number that reaches the window's end may go on in the next one */
    if (__builtin_expect(p >= c->data + c->len, 0) && !c->eof)
        return T_MORE;
    n->mag = mag;
    *after = p;
    return T_OK;
}

static inline uint32_t load32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* true, false or null at p. */
static int scan_word(rd_ctx *c, const unsigned char *p, const unsigned char **after)
{
    uint32_t w = load32(p);
    static const char t[4] = {'t', 'r', 'u', 'e'}, f[4] = {'f', 'a', 'l', 's'}, n[4] = {'n', 'u', 'l', 'l'};
    if (w == load32((const unsigned char *)t) || w == load32((const unsigned char *)n)) {
        *after = p + 4;
        return T_OK;
    }
    if (w == load32((const unsigned char *)f) && p[4] == 'e') {
        *after = p + 5;
        return T_OK;
    }
    return stop_at(c, p, 5, "an unknown word");
}

/* The frame machine's forms: the token at c->pos, which moves past it. */
static int lex_string(rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos + 1, *close;
    bool escaped;
    int rc = scan_string(c, start, &close, &escaped);
    if (rc != T_OK)
        return rc;
    c->pos = (size_t)(close + 1 - c->data);
    if (!s)
        return T_OK; /* only validated */
    if (!escaped) {
        *s = (const char *)start;
        *len = (size_t)(close - start);
        return T_OK;
    }
    return decode_string(c, start, close, s, len);
}

static int lex_number(rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos, *after;
    int rc = scan_number(c, start, &after, &c->num);
    if (rc != T_OK)
        return rc;
    *s = (const char *)start;
    *len = (size_t)(after - start);
    c->pos = (size_t)(after - c->data);
    return T_OK;
}

static int lex_word(rd_ctx *c)
{
    const unsigned char *after;
    int rc = scan_word(c, c->data + c->pos, &after);
    if (rc == T_OK)
        c->pos = (size_t)(after - c->data);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */
static inline uint16_t load16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The little-endian word of a literal's first bytes (up to 8): a constant
   expression, so that a key compares with one instruction. */
#define W_BYTE(lit, i) ((i) < sizeof(lit) - 1 ? (uint64_t)(unsigned char)(lit)[(i) < sizeof(lit) - 1 ? (i) : 0] << (8 * (i)) : 0)
#define W(lit)                                                                                                 \
    (W_BYTE(lit, 0) | W_BYTE(lit, 1) | W_BYTE(lit, 2) | W_BYTE(lit, 3) | W_BYTE(lit, 4) | W_BYTE(lit, 5) |    \
     W_BYTE(lit, 6) | W_BYTE(lit, 7))
#define LOW_BYTES(v, n) ((v) & (((uint64_t)1 << (8 * (n))) - 1))

/* The keys of every event, by length and one word compare (the key's
   bytes are followed by at least its closing quote and the slack). */
static inline int event_key(const unsigned char *k, size_t len)
{
    switch (len) {
    case 2: {
        uint64_t w = load16(k);
        if (w == W("ph")) return K_PH;
        if (w == W("ts")) return K_TS;
        if (w == W("id")) return K_ID;
        if (w == W("bp")) return K_BP;
        break;
    }
    case 3: {
        uint64_t w = LOW_BYTES((uint64_t)load32(k), 3);
        if (w == W("cat")) return K_CAT;
        if (w == W("pid")) return K_PID;
        if (w == W("tid")) return K_TID;
        if (w == W("dur")) return K_DUR;
        break;
    }
    case 4: {
        uint64_t w = load32(k);
        if (w == W("name")) return K_NAME;
        if (w == W("args")) return K_ARGS;
        break;
    }
    default:
        break;
    }
    return K_OTHER;
}

static inline int args_key(const unsigned char *k, size_t len)
{
    switch (len) {
    case 4: {
        uint64_t w = load32(k);
        if (w == W("cbid")) return K_CBID;
        if (w == W("name")) return K_ANAME;
        if (w == W("Addr")) return K_ADDR;
        break;
    }
    case 5: {
        uint64_t w = LOW_BYTES(load64(k), 5);
        if (w == W("bytes")) return K_BYTES;
        if (w == W("Bytes")) return K_MEM_BYTES;
        break;
    }
    case 9:
        if (load64(k) == W("Device I") && k[8] == 'd') return K_MEM_DEVICE;
        break;
    case 6: {
        uint64_t w = LOW_BYTES(load64(k), 6);
        if (w == W("stream")) return K_STREAM;
        if (w == W("device")) return K_DEVICE;
        if (w == W("parent")) return K_PARENT;
        if (w == W("labels")) return K_LABELS;
        break;
    }
    case 10:
        if (load64(k) == W("sort_ind") && load16(k + 8) == W("ex")) return K_SORT;
        break;
    case 11: {
        uint64_t w = load64(k), tail = LOW_BYTES((uint64_t)load32(k + 8), 3);
        if (w == W("External") && tail == W(" id")) return K_EXT;
        if (w == W("correlat") && tail == W("ion")) return K_CORR;
        if (w == W("Device T") && tail == W("ype")) return K_MEM_TYPE;
        break;
    }
    case 15:
        if (load64(k) == W("Collecti") && load64(k + 7) == W("ive name")) return K_COLLECTIVE;
        if (load64(k) == W("Total Al") && load64(k + 7) == W("llocated")) return K_MEM_TOTAL;
        break;
    default:
        break;
    }
    return K_OTHER;
}
#undef LOW_BYTES

/* Inside an event: a byte that the grammar does not allow at p. At the
   window's NUL that is the end of the text so far. */
static int ev_expected(rd_ctx *c, const unsigned char *p, const char *what)
{
    if (p >= c->data + c->len)
        return c->eof ? lex_error(c, c->len, "the input ends inside an object or array") : T_MORE;
    return lex_error(c, (size_t)(p - c->data), what);
}

static int nesting_error(rd_ctx *c, const unsigned char *p)
{
    c->tok_end = (size_t)(p + 1 - c->data);
    rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH);
    return T_ERR;
}

/* The object key at *pp (its opening quote expected there, else the error
   `what`) and the ':' after it: the key's text, decoded when it has
   escapes, in *k and *len; *pp moves to the value. */
static inline __attribute__((always_inline)) int object_key(rd_ctx *c, const unsigned char **pp,
                                                              const char *what, const unsigned char **k, size_t *len)
{
    const unsigned char *p = *pp, *close;
    bool escaped;
    *k = p; /* for the compiler: set again on success */
    *len = 0;
    if (*p != '"')
        return ev_expected(c, p, what);
    int rc = scan_string(c, p + 1, &close, &escaped);
    if (rc != T_OK)
        return rc;
    *k = p + 1;
    *len = (size_t)(close - p - 1);
    if (__builtin_expect(escaped, 0)) {
        const char *s;
        if (decode_string(c, p + 1, close, &s, len) != T_OK)
            return T_ERR;
        *k = (const unsigned char *)s;
    }
    p = skip_ws(close + 1);
    if (*p != ':')
        return ev_expected(c, p, "':' expected after an object key");
    *pp = skip_ws(p + 1);
    return T_OK;
}

/* A scalar at p, validated: *after just past it. */
static inline __attribute__((always_inline)) int skip_scalar(rd_ctx *c, const unsigned char *p,
                                                               const unsigned char **after)
{
    const unsigned char *close;
    bool escaped;
    rd_num n;
    int rc;
    switch (*p) {
    case '"':
        rc = scan_string(c, p + 1, &close, &escaped);
        if (rc == T_OK)
            *after = close + 1;
        return rc;
    case 't':
    case 'f':
    case 'n':
        return scan_word(c, p, after);
    default:
        if (*p == '-' || is_digit(*p))
            return scan_number(c, p, after, &n);
        return ev_expected(c, p, "a value expected");
    }
}

/* Any value at *pp, at nesting level `level` when it is a container:
   validated, nothing kept; *pp moves past it. */
static int skip_value(rd_ctx *c, const unsigned char **pp, int level)
{
    const unsigned char *p = *pp;
    int rc;
    if (*p != '{' && *p != '[') {
        rc = skip_scalar(c, p, pp);
        return rc;
    }
    /* bit d of objects: whether the container open at depth d is an object */
    uint64_t objects = 0;
    int d = 0;
open:
    if (level + d > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    if (*p == '{')
        objects |= UINT64_C(1) << d;
    else
        objects &= ~(UINT64_C(1) << d);
    d++;
    p = skip_ws(p + 1);
    if (objects >> (d - 1) & 1) {
        if (*p == '}')
            goto close;
        goto key;
    }
    if (*p == ']')
        goto close;
    goto value;
key: {
    const unsigned char *k;
    size_t klen;
    if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
        return rc;
}
value:
    if (*p == '{' || *p == '[')
        goto open;
    rc = skip_scalar(c, p, &p);
    if (rc != T_OK)
        return rc;
after_value:
    p = skip_ws(p);
    if (*p == ',') {
        p = skip_ws(p + 1);
        if (objects >> (d - 1) & 1)
            goto key;
        goto value;
    }
    if (*p == ((objects >> (d - 1) & 1) ? '}' : ']'))
        goto close;
    return ev_expected(c, p, (objects >> (d - 1) & 1) ? "',' or '}' expected" : "',' or ']' expected");
close:
    p++;
    if (--d > 0)
        goto after_value;
    *pp = p;
    return T_OK;
}

/* The JSON type of the value at p, for messages; for a scalar, tok_end
   moves past it (the offset a type error names). */
static int value_type(rd_ctx *c, const unsigned char *p, int *type)
{
    const unsigned char *after = p;
    switch (*p) {
    case '{':
    case '[':
        *type = *p == '{' ? V_MAP : V_ARRAY;
        c->tok_end = (size_t)(p + 1 - c->data);
        return T_OK;
    case '"': *type = V_STR; break;
    case 't':
    case 'f': *type = V_BOOL; break;
    case 'n': *type = V_NULL; break;
    default: *type = V_NUM; break;
    }
    int rc = skip_scalar(c, p, &after);
    if (rc == T_OK)
        c->tok_end = (size_t)(after - c->data);
    return rc;
}

/* A value of the wrong type for an event key: named with the type found
   (after the lexer had its say on the value itself). */
static int ev_type_error(rd_ctx *c, const unsigned char *p, const char *what)
{
    int type, rc = value_type(c, p, &type);
    if (rc != T_OK)
        return rc;
    rd_event_fail(c, what, type);
    return T_ERR;
}

static inline void set_slot(rd_ctx *c, int slot, const unsigned char *s, size_t len)
{
    c->slot_ptr[slot] = s;
    c->slot_len[slot] = (uint32_t)len;
    c->slot_set |= 1u << slot;
    c->slot_in_sb &= ~(1u << slot);
}

/* Appends a string to sb; its offset in *off. */
static int sb_append(rd_ctx *c, const void *s, size_t len, size_t *off)
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
    *off = c->sb_len;
    memcpy(c->sb + c->sb_len, s, len);
    c->sb_len += len;
    c->sb[c->sb_len++] = '\0';
    return 1;
}

/* A string value's text into a slot: where it lies when it has no
   escapes, else decoded into sb. */
static int string_slot(rd_ctx *c, int slot, const unsigned char *start, const unsigned char *close, bool escaped)
{
    if (!escaped) {
        set_slot(c, slot, start, (size_t)(close - start));
        return T_OK;
    }
    const char *s;
    size_t len;
    if (decode_string(c, start, close, &s, &len) != T_OK || !sb_append(c, s, len, &c->slot_off[slot]))
        return T_ERR;
    c->slot_len[slot] = (uint32_t)len;
    c->slot_set |= 1u << slot;
    c->slot_in_sb |= 1u << slot;
    return T_OK;
}

static inline void raw_span(rd_ctx *c, const unsigned char *open, int which, const unsigned char *v,
                            const unsigned char *after)
{
    c->ev.at[which].off = (uint32_t)(v - open);
    c->ev.at[which].len = (uint32_t)(after - v);
}

/* One arg read leniently: a number, or a string holding an integer. */
static int int_arg(rd_ctx *c, const unsigned char **pp, bool is_unsigned, int64_t *out, bool *ok)
{
    const unsigned char *p = *pp, *after;
    int rc;
    *ok = false;
    if (*p == '"') {
        const unsigned char *close;
        bool escaped;
        rc = scan_string(c, p + 1, &close, &escaped);
        if (rc != T_OK)
            return rc;
        const char *s = (const char *)p + 1;
        size_t len = (size_t)(close - p - 1);
        if (escaped && decode_string(c, p + 1, close, &s, &len) != T_OK)
            return T_ERR;
        *ok = parse_int_text(s, len, out);
        if (*ok)
            c->ev.string_args++;
        after = close + 1;
    } else if (*p == '-' || is_digit(*p)) {
        rd_num n;
        rc = scan_number(c, p, &after, &n);
        if (rc != T_OK)
            return rc;
        *ok = num_i64(&n, out);
    } else {
        return skip_value(c, pp, 0);
    }
    if (*ok && is_unsigned && *out < 0)
        *ok = false;
    *pp = after;
    return T_OK;
}

/* The args object at *pp ('{'), at nesting level `level`. */
static int parse_args(rd_ctx *c, const unsigned char *open, const unsigned char **pp, int level)
{
    dt_rd_event *ev = &c->ev;
    const unsigned char *p = *pp;
    int rc;
    if (level > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    p = skip_ws(p + 1);
    if (*p == '}') {
        *pp = p + 1;
        return T_OK;
    }
    for (;;) {
        const unsigned char *k, *close;
        size_t klen;
        bool escaped;
        if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
            return rc;
        int key = args_key(k, klen);
        const unsigned char *v = p;
        uint64_t *u = NULL;
        int64_t *i = NULL;
        uint32_t bit = 0;
        int at = -1;
        switch (key) {
        case K_EXT: u = &ev->external_id; bit = DT_RD_HAS_EXTERNAL_ID; at = DT_RD_AT_EXT; break;
        case K_CORR: u = &ev->correlation; bit = DT_RD_HAS_CORRELATION; at = DT_RD_AT_CORR; break;
        case K_BYTES: u = &ev->bytes; bit = DT_RD_HAS_BYTES; break;
        case K_PARENT: u = &ev->parent; bit = DT_RD_HAS_PARENT; at = DT_RD_AT_PARENT; break;
        case K_DEVICE: i = &ev->device; bit = DT_RD_HAS_DEVICE; break;
        case K_STREAM: i = &ev->stream; bit = DT_RD_HAS_STREAM; break;
        case K_CBID: i = &ev->cbid; bit = DT_RD_HAS_CBID; break;
        case K_SORT: i = &ev->sort_index; bit = DT_RD_HAS_SORT_INDEX; break;
        case K_MEM_BYTES: i = &ev->mem_bytes; bit = DT_RD_HAS_MEM_BYTES; break;
        case K_MEM_TOTAL: i = &ev->mem_total; bit = DT_RD_HAS_MEM_TOTAL; break;
        case K_MEM_DEVICE: i = &ev->mem_device; bit = DT_RD_HAS_MEM_DEVICE; break;
        case K_MEM_TYPE: i = &ev->mem_type; bit = DT_RD_HAS_MEM_TYPE; break;
        case K_ADDR: u = &ev->addr; bit = DT_RD_HAS_ADDR; break;
        case K_ANAME:
        case K_LABELS:
            /* Only metadata events' name/labels matter; elsewhere any type goes. */
            if (*p == '"') {
                rc = scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, key == K_ANAME ? S_ANAME : S_LABELS, p + 1, close,
                                                    escaped)) != T_OK)
                    return rc;
                ev->has |= key == K_ANAME ? DT_RD_HAS_ARG_NAME : DT_RD_HAS_ARG_LABELS;
                p = close + 1;
            } else if ((rc = skip_value(c, &p, level + 1)) != T_OK) {
                return rc;
            }
            break;
        case K_COLLECTIVE:
            /* a collective, whatever the writer typed its name as */
            ev->has |= DT_RD_HAS_COLLECTIVE;
            /* fall through */
        default:
            if (*p == '{' || *p == '[')
                rc = skip_value(c, &p, level + 1);
            else
                rc = skip_scalar(c, p, &p);
            if (rc != T_OK)
                return rc;
            break;
        }
        if (bit) {
            int64_t val;
            bool ok;
            if (*p == '{' || *p == '[') {
                if ((rc = skip_value(c, &p, level + 1)) != T_OK)
                    return rc;
                ok = false;
            } else if ((rc = int_arg(c, &p, u != NULL, &val, &ok)) != T_OK) {
                return rc;
            }
            if (ok) {
                if (u)
                    *u = (uint64_t)val;
                else
                    *i = val;
                ev->has |= bit;
                if (c->raw && at >= 0)
                    raw_span(c, open, at, v, p);
            } else {
                ev->odd_args |= bit;
            }
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == '}')
            break;
        return ev_expected(c, p, "',' or '}' expected");
    }
    *pp = p + 1;
    return T_OK;
}

/* The category of a "cat", by length and word compares. */
static int classify_cat(const unsigned char *s, size_t len);

int dt_rd_classify_cat(const char *s, size_t len)
{
    return classify_cat((const unsigned char *)s, len);
}

static int classify_cat(const unsigned char *s, size_t len)
{
#define CAT_IS(lit) (len == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)
    /* (the text is NUL-terminated: the eighth byte read is there) */
    if (len >= 7 && (load64(s + len - 7) & UINT64_C(0x00FFFFFFFFFFFFFF)) == W("_driver"))
        return DT_RD_CAT_DRIVER;
    if (len >= 8 && load64(s + len - 8) == W("_runtime"))
        return DT_RD_CAT_RUNTIME;
    switch (len) {
    case 4: return CAT_IS("ac2g") ? DT_RD_CAT_AC2G : DT_RD_CAT_OTHER;
    case 5: return CAT_IS("Trace") ? DT_RD_CAT_TRACE : DT_RD_CAT_OTHER;
    case 6: return CAT_IS("kernel") ? DT_RD_CAT_KERNEL : CAT_IS("cpu_op") ? DT_RD_CAT_CPU_OP : DT_RD_CAT_OTHER;
    case 8: return CAT_IS("overhead") ? DT_RD_CAT_OVERHEAD : DT_RD_CAT_OTHER;
    case 9: return CAT_IS("cuda_sync") ? DT_RD_CAT_SYNC : DT_RD_CAT_OTHER;
    case 10:
        return CAT_IS("gpu_memcpy") ? DT_RD_CAT_MEMCPY : CAT_IS("gpu_memset") ? DT_RD_CAT_MEMSET : DT_RD_CAT_OTHER;
    case 15:
        return CAT_IS("user_annotation") ? DT_RD_CAT_USER_ANNOTATION
               : CAT_IS("python_function") ? DT_RD_CAT_PYTHON_FUNCTION
                                           : DT_RD_CAT_OTHER;
    case 17: return CAT_IS("cpu_instant_event") ? DT_RD_CAT_CPU_INSTANT : DT_RD_CAT_OTHER;
    case 19: return CAT_IS("gpu_user_annotation") ? DT_RD_CAT_GPU_USER_ANNOTATION : DT_RD_CAT_OTHER;
    default: return DT_RD_CAT_OTHER;
    }
#undef CAT_IS
}

/* The event's strings, NUL-terminated, into its pointers: where they lie
   (over their closing quote), or, with DT_RD_RAW, copied to sb. */
static int finish_strings(rd_ctx *c)
{
    dt_rd_event *ev = &c->ev;
    if (c->raw) {
        for (int k = 0; k < S_COUNT; k++) {
            unsigned bit = 1u << k;
            if ((c->slot_set & bit) && !(c->slot_in_sb & bit)) {
                if (!sb_append(c, c->slot_ptr[k], c->slot_len[k], &c->slot_off[k]))
                    return T_ERR;
                c->slot_in_sb |= bit;
            }
        }
    }
    const char *s[S_COUNT] = {"", "", "", "", "", "", "", "", ""};
    for (unsigned bits = c->slot_set; bits; bits &= bits - 1) {
        int k = __builtin_ctz(bits);
        if (c->slot_in_sb & (1u << k)) {
            s[k] = c->sb + c->slot_off[k];
        } else {
            /* the byte after the text is its closing quote, or the
               delimiter after a number: parsed already */
            unsigned char *t = (unsigned char *)(uintptr_t)c->slot_ptr[k];
            t[c->slot_len[k]] = '\0';
            s[k] = (const char *)t;
        }
    }
    ev->ph = s[S_PH];
    ev->cat = s[S_CAT];
    ev->name = s[S_NAME];
    ev->bp = s[S_BP];
    ev->id = s[S_ID];
    ev->pid.str = ev->pid.is_str ? s[S_PID] : NULL;
    ev->tid.str = ev->tid.is_str ? s[S_TID] : NULL;
    ev->arg_name = s[S_ANAME];
    ev->arg_labels = s[S_LABELS];
    ev->cat_len = (c->slot_set & (1u << S_CAT)) ? c->slot_len[S_CAT] : 0;
    ev->cat_kind = classify_cat((const unsigned char *)ev->cat, ev->cat_len);
    ev->name_len = (c->slot_set & (1u << S_NAME)) ? c->slot_len[S_NAME] : 0;
    return T_OK;
}

#undef W
#undef W_BYTE

/* The traceEvents entry whose '{' is at c->pos, parsed whole and handed to
   the visitor: T_OK with c->pos past it; T_MORE with nothing changed but
   the event struct, when it does not end inside the window; T_ERR. */
static int parse_event(rd_ctx *c)
{
    const unsigned char *const open = c->data + c->pos;
    const unsigned char *p = open, *close;
    dt_rd_event *ev = &c->ev;
    const int level = c->depth + 1;
    bool escaped, after_comma = false;
    int rc;
    memset(ev, 0, c->raw ? sizeof *ev : offsetof(dt_rd_event, raw));
    c->slot_set = c->slot_in_sb = 0;
    c->sb_len = 0;
    ev->index = c->sum->event_count;
    ev->offset = c->base + c->pos;
    if (level > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    p = skip_ws(p + 1);
    if (*p == '}')
        goto done;
    for (;;) {
        const unsigned char *k;
        size_t klen;
        if ((rc = object_key(c, &p, after_comma ? "an object key must follow ','" : "an object key or '}' expected",
                             &k, &klen)) != T_OK)
            return rc;
        int key = event_key(k, klen);
        const unsigned char *v = p, *after;
        switch (key) {
        case K_PH:
        case K_CAT:
        case K_NAME:
        case K_BP: {
            static const char *const what[] = {[K_PH] = "\"ph\" must be a string", [K_CAT] = "\"cat\" must be a string",
                                               [K_NAME] = "\"name\" must be a string", [K_BP] = "\"bp\" must be a string"};
            static const unsigned char slot[] = {[K_PH] = S_PH, [K_CAT] = S_CAT, [K_NAME] = S_NAME, [K_BP] = S_BP};
            if (*p != '"')
                return ev_type_error(c, p, what[key]);
            rc = scan_string(c, p + 1, &close, &escaped);
            if (rc != T_OK || (rc = string_slot(c, slot[key], p + 1, close, escaped)) != T_OK)
                return rc;
            p = close + 1;
            break;
        }
        case K_PID:
        case K_TID: {
            dt_rd_id *id = key == K_PID ? &ev->pid : &ev->tid;
            const char *what = key == K_PID ? "\"pid\" must be an integer or a string"
                                            : "\"tid\" must be an integer or a string";
            id->present = true;
            if (*p == '"') {
                rc = scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, key == K_PID ? S_PID : S_TID, p + 1, close, escaped)) != T_OK)
                    return rc;
                id->is_str = true;
                after = close + 1;
            } else if (*p == '-' || is_digit(*p)) {
                rd_num n;
                rc = scan_number(c, p, &after, &n);
                if (rc != T_OK)
                    return rc;
                if (!num_i64(&n, &id->num)) {
                    c->tok_end = (size_t)(after - c->data);
                    rd_event_fail(c, what, V_NUM);
                    return T_ERR;
                }
                id->is_str = false;
            } else {
                return ev_type_error(c, p, what);
            }
            if (c->raw)
                raw_span(c, open, key == K_PID ? DT_RD_AT_PID : DT_RD_AT_TID, v, after);
            p = after;
            break;
        }
        case K_TS:
        case K_DUR: {
            const char *what = key == K_TS ? "\"ts\" must be a number of microseconds that fits"
                                           : "\"dur\" must be a number of microseconds that fits";
            if (*p != '-' && !is_digit(*p))
                return ev_type_error(c, p, what);
            rd_num n;
            rc = scan_number(c, p, &after, &n);
            if (rc != T_OK)
                return rc;
            if (!num_us_to_ns(&n, (const char *)p, (size_t)(after - p), key == K_TS ? &ev->ts_ns : &ev->dur_ns)) {
                c->tok_end = (size_t)(after - c->data);
                rd_event_fail(c, what, V_NUM);
                return T_ERR;
            }
            ev->has |= key == K_TS ? DT_RD_HAS_TS : DT_RD_HAS_DUR;
            if (c->raw)
                raw_span(c, open, key == K_TS ? DT_RD_AT_TS : DT_RD_AT_DUR, v, after);
            p = after;
            break;
        }
        case K_ID:
            if (*p == '"') {
                rc = scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, S_ID, p + 1, close, escaped)) != T_OK)
                    return rc;
                ev->id_is_str = true;
                after = close + 1;
            } else if (*p == '-' || is_digit(*p)) {
                rd_num n;
                rc = scan_number(c, p, &after, &n);
                if (rc != T_OK)
                    return rc;
                /* the number's text; the byte after it is a delimiter */
                set_slot(c, S_ID, p, (size_t)(after - p));
                ev->id_is_str = false;
            } else {
                return ev_type_error(c, p, "\"id\" must be a number or a string");
            }
            ev->has |= DT_RD_HAS_ID;
            if (c->raw)
                raw_span(c, open, DT_RD_AT_ID, v, after);
            p = after;
            break;
        case K_ARGS:
            if (*p != '{')
                return ev_type_error(c, p, "\"args\" must be an object");
            if (c->raw) {
                ev->at[DT_RD_AT_ARGS].off = (uint32_t)(p - open);
                ev->at[DT_RD_AT_ARGS].len = 1;
            }
            rc = parse_args(c, open, &p, level + 1);
            if (rc != T_OK)
                return rc;
            break;
        default:
            rc = skip_value(c, &p, level + 1);
            if (rc != T_OK)
                return rc;
            break;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            after_comma = true;
            continue;
        }
        if (*p == '}')
            break;
        return ev_expected(c, p, "',' or '}' expected");
    }
done:
    p++;
    if (c->raw) {
        ev->raw = (const char *)open;
        ev->raw_len = (size_t)(p - open);
    }
    if (finish_strings(c) != T_OK)
        return T_ERR;
    c->pos = c->tok_end = (size_t)(p - c->data);
    c->sum->event_count++;
    if (c->opt && c->opt->visit) {
        rc = c->opt->visit(c->opt->user, ev);
        if (rc != 0) {
            c->visit_rc = rc;
            return T_ERR;
        }
    }
    return T_OK;
}

/* A deviceProperties entry whose '{' is at c->pos, read whole for the
   device callback: validated, its top-level "id" located. T_OK with c->pos
   past it, T_MORE with nothing changed, T_ERR. */
static int parse_device(rd_ctx *c)
{
    const unsigned char *const open = c->data + c->pos;
    const unsigned char *p = skip_ws(open + 1);
    dt_rd_span id = {0, 0};
    int rc;
    if (c->depth + 1 > DT_RD_MAX_DEPTH)
        return nesting_error(c, open);
    if (*p != '}') {
        for (;;) {
            const unsigned char *k;
            size_t klen;
            if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
                return rc;
            bool is_id = klen == 2 && k[0] == 'i' && k[1] == 'd';
            const unsigned char *v = p;
            if ((rc = skip_value(c, &p, c->depth + 2)) != T_OK)
                return rc;
            if (is_id && (*v == '-' || is_digit(*v))) {
                id.off = (uint32_t)(v - open);
                id.len = (uint32_t)(p - v);
            }
            p = skip_ws(p);
            if (*p == ',') {
                p = skip_ws(p + 1);
                continue;
            }
            if (*p == '}')
                break;
            return ev_expected(c, p, "',' or '}' expected");
        }
    }
    p++;
    c->pos = c->tok_end = (size_t)(p - c->data);
    c->sum->device_count++;
    rc = c->opt->device(c->opt->user, (const char *)open, (size_t)(p - open), id);
    if (rc != 0) {
        c->visit_rc = rc;
        return T_ERR;
    }
    return T_OK;
}

/* ------------------------------------------------------------------ */
/* The document's outer structure                                      */
/* ------------------------------------------------------------------ */
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

/* Tokens until the window is exhausted (T_MORE), the input ends (T_OK) or
   an error (T_ERR). The grammar state of each open container is kept in its
   frame so that the parse can stop between any two tokens; within the
   window, each state jumps straight to the one that follows. Each element
   of traceEvents goes to parse_event whole. */
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
        p = skip_ws(p);                                                                                        \
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
    if (f && ch == '{' && (f->role == R_EVENTS || (f->role == R_DEVPROPS && c->opt && c->opt->device))) {
        rc = f->role == R_EVENTS ? parse_event(c) : parse_device(c);
        if (rc != T_OK)
            return rc;
        RELOAD();
        f->state = G_COMMA_OR_END;
        goto comma_or_end;
    }
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
            rc = lex_word(c);
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
        rc = lex_word(c);
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
    c->depth--;
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

/* Makes room and reads more input after T_MORE, keeping the token (or
   event) being scanned. When what is kept fills half the window or more,
   the window doubles first, so that each scan again sees at least twice
   the text of the one before: a long token or event costs at most twice
   its length in rescans. -1 on error. */
static int rd_refill(rd_ctx *c)
{
    size_t keep = c->tok_start;
    if (keep > 0) {
        memmove(c->data, c->data + keep, c->len - keep);
        c->len -= keep;
        c->pos -= keep;
        c->tok_start -= keep;
        c->tok_end = c->tok_end >= keep ? c->tok_end - keep : 0;
        c->base += keep;
    }
    if (c->len >= c->cap / 2) {
        if (c->cap >= RD_MAX_TOKEN) {
            c->tok_end = c->pos;
            return rd_fail(c, "a value or event longer than %u MiB", RD_MAX_TOKEN >> 20), -1;
        }
        unsigned char *nb = realloc(c->data, c->cap * 2 + RD_SLACK);
        if (!nb)
            return rd_fail(c, "out of memory"), -1;
        c->data = nb;
        c->cap *= 2;
        memset(c->data + c->cap, 0, RD_SLACK);
    }
    if (c->src_failed) {
        /* the text before the source's error has been parsed: now it counts */
        if (!c->failed) {
            c->failed = true;
            snprintf(c->err, c->errlen, "%s", c->src_err);
        }
        return -1;
    }
    size_t before = c->len;
    while (c->len < c->cap) {
        char msg[400];
        long n = src_read(c->src, c->data + c->len, c->cap - c->len, msg, sizeof msg);
        if (n < 0) {
            snprintf(c->src_err, sizeof c->src_err, "byte %" PRIu64 ": %s", c->base + c->len, msg);
            c->src_failed = true;
            if (c->len > before) {
                /* what came before the error is parsed first, whatever
                   the window's size */
                break;
            }
            if (!c->failed) {
                c->failed = true;
                snprintf(c->err, c->errlen, "%s", c->src_err);
            }
            return -1;
        }
        if (n == 0) {
            c->eof = true;
            break;
        }
        c->len += (size_t)n;
    }
    c->data[c->len] = '\0';
    return 0;
}

void dt_rd_summary_free(dt_rd_summary *s)
{
    if (!s)
        return;
    free(s->display_time_unit);
    free(s->trace_name);
    free(s->host_name);
    free(s->writer);
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
    long peeked = src_peek(src, err, errlen);
    if (peeked < 0) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "byte 0: %s", tmp);
        return -1;
    }
    const char *binary = sniff_binary(src->peek, (size_t)peeked);
    if (binary && strcmp(binary, "perfetto") == 0)
        return dt_rd_pf_read(src, opts, summary, err, errlen);
    if (binary) {
        snprintf(err, errlen, "byte 0: not a trace: %s%s, neither JSON nor a Perfetto protobuf trace",
                 src->gzip ? "gzip of " : "", binary);
        return -1;
    }
    c.cap = opts && opts->window ? opts->window : RD_CHUNK;
    if (c.cap > RD_MAX_TOKEN)
        c.cap = RD_MAX_TOKEN;
    c.data = malloc(c.cap + RD_SLACK);
    if (!c.data) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(c.data, 0, c.cap + RD_SLACK);
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
