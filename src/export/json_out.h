/*
 * Streaming output for the trace writers: a fixed buffer drained to a file
 * descriptor, either as is or through gzip (zlib deflate), plus the integer
 * formatting and JSON string escaping used on the per-event path.
 */
#ifndef DT_JSON_OUT_H
#define DT_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dt_internal.h"

/* Bytes an event needs beyond its name (and a few fixed-size fields): the
   writer reserves this much before formatting an event so that the per-event
   path never checks for room field by field. */
#define DT_OUT_EVENT_ROOM 4096

typedef struct dt_out_drain dt_out_drain;

typedef struct dt_out {
    char *buf;             /* the fixed buffer being filled */
    size_t len, cap;
    int fd;
    int gzip;
    int err;               /* first errno seen; 0 while all is well */
    uint64_t bytes;        /* uncompressed bytes produced so far */
    void *zs;              /* z_stream when gzip */
    unsigned char *zbuf;   /* deflate output */
    size_t zcap;
    /* Full buffers are written (or compressed and written) by a second
       thread while this one fills the next: formatting and the kernel's
       write path (or deflate) overlap. Started at the first full buffer;
       NULL before that, or when no thread could be made (then the buffer is
       drained in place, as before). */
    dt_out_drain *drain;
} dt_out;

/* Open the writer on fd (owned by the caller). level: zlib level for gzip. */
DT_HIDDEN int dt_out_init(dt_out *o, int fd, int gzip, int level, size_t buffer_size);

/* Hand the buffer over to be written (and with gzip, compressed: the
   stream ends in dt_out_finish). */
DT_HIDDEN void dt_out_flush(dt_out *o);
/* Flush everything, end the gzip stream. Returns 0 or the first errno. */
DT_HIDDEN int dt_out_finish(dt_out *o);
DT_HIDDEN void dt_out_free(dt_out *o);
/* Append n bytes of any size. */
DT_HIDDEN void dt_out_write(dt_out *o, const void *p, size_t n);

/* Make room for n more bytes (n <= cap). */
static inline char *dt_out_reserve(dt_out *o, size_t n)
{
    if (o->cap - o->len < n)
        dt_out_flush(o);
    return o->buf + o->len;
}

static inline void dt_out_commit(dt_out *o, char *end)
{
    o->len = (size_t)(end - o->buf);
}

/* Constant fragments: the length is known at compile time. */
#define DT_PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

/* Decimal digits of v (1 for 0): the bit length times log10(2) estimates
   it (1233 / 4096), one too high at most; a table of powers of ten says. */
static inline unsigned dt_decimal_digits(uint64_t v)
{
    static const uint64_t powers_of_10[20] = {
        UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
        UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
        UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
        UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
        UINT64_C(10000000000000000), UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000)};
    uint64_t w = v | 1; /* 0 has the digits of 1; setting bit 0 crosses no power of ten */
    unsigned t = (64 - (unsigned)__builtin_clzll(w)) * 1233 >> 12;
    return t + 1 - (w < powers_of_10[t]);
}

/* Unsigned decimal, two digits per step, written from the end straight into
   place (its length known first): no copy through a scratch buffer, which
   cost a call to memcpy per number. Returns the end. */
DT_HIDDEN extern const char dt_digit_pairs[200];
static inline char *dt_put_u64(char *p, uint64_t v)
{
    /* device, stream and context ids, flags, small counts: most numbers */
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v < 100) {
        p[0] = dt_digit_pairs[2 * v];
        p[1] = dt_digit_pairs[2 * v + 1];
        return p + 2;
    }
    unsigned n = dt_decimal_digits(v);
    char *end = p + n, *t = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        *--t = dt_digit_pairs[2 * r + 1];
        *--t = dt_digit_pairs[2 * r];
    }
    if (v >= 10) {
        *--t = dt_digit_pairs[2 * v + 1];
        *--t = dt_digit_pairs[2 * v];
    } else {
        *--t = (char)('0' + v);
    }
    return end;
}

static inline char *dt_put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return dt_put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return dt_put_u64(p, (uint64_t)v);
}

/* Nanoseconds as microseconds with exactly three decimals: 1234567 -> 1234.567 */
static inline char *dt_put_us3(char *p, uint64_t ns)
{
    uint64_t us = ns / 1000;
    unsigned frac = (unsigned)(ns - us * 1000);
    p = dt_put_u64(p, us);
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    memcpy(p + 2, dt_digit_pairs + 2 * (frac % 100), 2);
    return p + 4;
}

/* A fixed-point value given as units of 10^-decimals, trailing zeros of the
   fraction dropped (12.500000 -> 12.5, 3.000000 -> 3). */
DT_HIDDEN char *dt_put_fixed(char *p, uint64_t scaled, unsigned decimals);

/* Largest escaped size of an n-byte string, quotes included. */
static inline size_t dt_json_escaped_max(size_t n)
{
    return 6 * n + 2;
}
/* Write s (n bytes, any content) as a JSON string literal with quotes into
   dst (room for dt_json_escaped_max(n)): ", \ and control characters escaped,
   invalid UTF-8 replaced by U+FFFD. Returns the end. */
DT_HIDDEN char *dt_json_escape(char *dst, const char *s, size_t n);
/* The same through the writer, for strings of any size. */
DT_HIDDEN void dt_out_string(dt_out *o, const char *s, size_t n);

/* Small, rare output (metadata, keys outside the event stream). */
static inline void dt_out_text(dt_out *o, const char *s)
{
    dt_out_write(o, s, strlen(s));
}

static inline void dt_out_u64(dt_out *o, uint64_t v)
{
    char *p = dt_out_reserve(o, 24);
    dt_out_commit(o, dt_put_u64(p, v));
}

static inline void dt_out_i64(dt_out *o, int64_t v)
{
    char *p = dt_out_reserve(o, 24);
    dt_out_commit(o, dt_put_i64(p, v));
}

static inline void dt_out_cstr(dt_out *o, const char *s)
{
    dt_out_string(o, s, strlen(s));
}

/* Writes path atomically: write(arg, out) fills a temporary file beside it
   (through gzip when asked), renamed to path when write returned 0 and
   everything reached the file. Returns 0 or an errno (ENOMEM included). */
DT_HIDDEN int dt_write_file_atomic(const char *path, int gzip, int (*write)(void *arg, dt_out *out), void *arg);

/* "distributedInfo": {...},\n when a launcher announced the rank
   (src/export/job_meta.c). */
DT_HIDDEN void dt_json_distributed_info(dt_out *o, const dt_session *s);
/* The devtrace key's host, pid and realtimeClock members, each after ",\n". */
DT_HIDDEN void dt_json_origin(dt_out *o, const dt_session *s);

#endif /* DT_JSON_OUT_H */
