/*
 * Streaming output: a fixed buffer drained to a file descriptor, either as
 * is or through gzip (zlib deflate), formatted on one thread or several,
 * plus the integer formatting used on the per-record path. What it writes
 * is the caller's: the trace formats' encoders are src/format/'s (json.h,
 * pf_trace.h).
 */
#ifndef DT_BASE_OUT_H
#define DT_BASE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/atomic_file.h"
#include "base/common.h"
#include "base/log.h"

#include "base/gzip.h"

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
    /* Which of the drain's producers this output is (0: the file's own, 1:
       a second formatting thread of dt__out_units), and the segment of the
       file its bytes belong to: the drain writes segments in order. */
    int producer;
    uint32_t segment;
    /* Plain output formatted on several lanes (dt__out_units): each lane
       writes its own units' bytes itself, the unit's turn come, while the
       others format (out.c). NULL otherwise. */
    struct dt_out_turn *turn;
    size_t unit;           /* the unit being formatted */
    int holding;           /* the unit's turn is this lane's */
} dt_out;

/* Open the writer on fd (owned by the caller). level: zlib level for gzip. */
DT_HIDDEN int dt__out_init(dt_out *o, int fd, int gzip, int level, size_t buffer_size);

/* Hand the buffer over to be written (and with gzip, compressed: the
   stream ends in dt__out_finish). */
DT_HIDDEN void dt__out_flush(dt_out *o);
/* Flush everything, end the gzip stream. Returns 0 or the first errno. */
DT_HIDDEN int dt__out_finish(dt_out *o);
DT_HIDDEN void dt__out_free(dt_out *o);
/* Append n bytes of any size. */
DT_HIDDEN void dt__out_write(dt_out *o, const void *p, size_t n);

/* Formats a body in units on up to `lanes` threads (the caller's among
   them) and writes the units' bytes in unit order after what o holds:
   unit u is formatted by lane u % lanes, through format(arg, out, u, lane)
   into out (for lane 0, o's buffer). format returns 0 or an errno
   (which fails the output); it should stop early once out->err is set.
   Plain output: each lane writes the units it formatted itself, in unit
   order, while the others format (no writing thread besides them: the
   bytes leave from the cache of the core that made them). gzip: the drain thread
   compresses and writes the lanes' buffers in order. Where no second
   thread can be had the units are formatted in order on the caller's.
   Returns 0 or the first error. */
#define DT_OUT_MAX_LANES 4
/* The lanes worth starting: one per processor this thread may run on, up
   to DT_OUT_MAX_LANES (past a few lanes the file's writes, one at a time,
   would bound the export: not measured, the development machine has two
   cores; gzip takes two, deflate bounds it);
   dt__out_lane_limit (1 to DT_OUT_MAX_LANES) when set, whatever the
   machine (tests compare them). */
DT_HIDDEN int dt__out_lanes(void);
DT_HIDDEN extern int dt__out_lane_limit;
DT_HIDDEN int dt__out_units(dt_out *o, size_t units, int lanes,
                           int (*format)(void *arg, dt_out *out, size_t unit, int lane), void *arg);

/* Make room for n more bytes (n <= cap). */
static inline char *dt__out_reserve(dt_out *o, size_t n)
{
    if (o->cap - o->len < n)
        dt__out_flush(o);
    return o->buf + o->len;
}

static inline void dt__out_commit(dt_out *o, char *end)
{
    o->len = (size_t)(end - o->buf);
}

/* Constant fragments: the length is known at compile time. */
#define DT_PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

/* Decimal digits of v (1 for 0): the bit length times log10(2) estimates
   it (1233 / 4096), one too high at most; a table of powers of ten says. */
static inline unsigned dt__decimal_digits(uint64_t v)
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

/* Decimal integers are written straight into place with up to
   DT_PUT_NUMBER_SLACK bytes of scratch past their end: the caller's room
   must allow that (the JSON writer reserves DT_JSON_EVENT_ROOM per event). */
#define DT_PUT_NUMBER_SLACK 8

DT_HIDDEN extern const char dt__digit_pairs[200];

/* v < 10^8 as eight ASCII digits, leading zeros kept, in memory order:
   four digit pairs from multiplies, no loop. */
static inline uint64_t dt__8digits(uint32_t v)
{
    uint32_t hi = v / 10000, lo = v - hi * 10000;
    uint32_t a = hi / 100, b = hi - a * 100, c = lo / 100, d = lo - c * 100;
    uint16_t pa, pb, pc, pd;
    memcpy(&pa, dt__digit_pairs + 2 * a, 2);
    memcpy(&pb, dt__digit_pairs + 2 * b, 2);
    memcpy(&pc, dt__digit_pairs + 2 * c, 2);
    memcpy(&pd, dt__digit_pairs + 2 * d, 2);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint64_t)pa << 48 | (uint64_t)pb << 32 | (uint64_t)pc << 16 | (uint64_t)pd;
#else
    /* little-endian: the first digit is the lowest byte */
    return (uint64_t)pa | (uint64_t)pb << 16 | (uint64_t)pc << 32 | (uint64_t)pd << 48;
#endif
}

/* Exactly eight digits, leading zeros kept (v < 10^8). */
static inline char *dt__put_8digits(char *p, uint32_t v)
{
    uint64_t x = dt__8digits(v);
    memcpy(p, &x, 8);
    return p + 8;
}

/* v < 10^8: its digits without the leading zeros, shifted out of the eight
   (eight bytes written, n of them kept). */
static inline char *dt__put_u27(char *p, uint32_t v)
{
    unsigned n = dt__decimal_digits(v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint64_t x = dt__8digits(v) << (8 * (8 - n));
#else
    uint64_t x = dt__8digits(v) >> (8 * (8 - n));
#endif
    memcpy(p, &x, 8);
    return p + n;
}

static inline char *dt__put_u32(char *p, uint32_t v)
{
    if (v < 100000000)
        return dt__put_u27(p, v);
    uint32_t top = v / 100000000; /* 1..42 */
    p = dt__put_u27(p, top);
    return dt__put_8digits(p, v - top * 100000000);
}

static inline char *dt__put_u64(char *p, uint64_t v)
{
    /* device, stream and context ids, flags, small counts: most numbers */
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v < 100) {
        p[0] = dt__digit_pairs[2 * v];
        p[1] = dt__digit_pairs[2 * v + 1];
        return p + 2;
    }
    if (v < 100000000)
        return dt__put_u27(p, (uint32_t)v);
    /* eight digits at a time: at most three pieces */
    uint64_t hi = v / 100000000;
    uint32_t lo = (uint32_t)(v - hi * 100000000);
    if (hi < 100000000) {
        p = dt__put_u27(p, (uint32_t)hi);
    } else {
        uint64_t top = hi / 100000000; /* at most 1844 */
        p = dt__put_u27(p, (uint32_t)top);
        p = dt__put_8digits(p, (uint32_t)(hi - top * 100000000));
    }
    return dt__put_8digits(p, lo);
}

static inline char *dt__put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return dt__put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return dt__put_u64(p, (uint64_t)v);
}

/* Nanoseconds as microseconds with exactly three decimals: 1234567 -> 1234.567 */
static inline char *dt__put_us3(char *p, uint64_t ns)
{
    uint64_t us = ns / 1000;
    unsigned frac = (unsigned)(ns - us * 1000);
    p = dt__put_u64(p, us);
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    memcpy(p + 2, dt__digit_pairs + 2 * (frac % 100), 2);
    return p + 4;
}

/* A fixed-point value given as units of 10^-decimals, trailing zeros of the
   fraction dropped (12.500000 -> 12.5, 3.000000 -> 3). */
DT_HIDDEN char *dt__put_fixed(char *p, uint64_t scaled, unsigned decimals);

/* Small, rare output (metadata, keys outside the event stream). */
static inline void dt__out_text(dt_out *o, const char *s)
{
    dt__out_write(o, s, strlen(s));
}

static inline void dt__out_u64(dt_out *o, uint64_t v)
{
    char *p = dt__out_reserve(o, 24);
    dt__out_commit(o, dt__put_u64(p, v));
}

static inline void dt__out_i64(dt_out *o, int64_t v)
{
    char *p = dt__out_reserve(o, 24);
    dt__out_commit(o, dt__put_i64(p, v));
}

/* Writes path atomically: write(arg, out) fills a temporary file beside it
   (through gzip when asked), renamed to path when write returned 0 and
   everything reached the file. A character device or a FIFO is written in
   place, and any other path that is not a regular file is refused
   (dt__output_kind_of). Returns 0 or an errno (ENOMEM included). */
DT_HIDDEN int dt__write_file_atomic(const char *path, int gzip, int (*write)(void *arg, dt_out *out), void *arg);
/* The same to an open descriptor when fd >= 0 (from where it stands; it
   stays open, nothing is renamed), else dt__write_file_atomic to path. */
DT_HIDDEN int dt__write_output(const char *path, int fd, int gzip, int (*write)(void *arg, dt_out *out), void *arg);

#endif /* DT_BASE_OUT_H */
