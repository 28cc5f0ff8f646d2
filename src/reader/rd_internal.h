/*
 * What the reader's parts share (the JSON reader's files, pf_read.c):
 * not part of the reader's interface (dt_reader.h).
 */
#ifndef DT_RD_INTERNAL_H
#define DT_RD_INTERNAL_H

#include <stdarg.h>

#include "reader/dt_reader.h"

/* The window's first size, and what a gzip source reads at a time. */
#define DT_RD_CHUNK (1u << 20)

/* ---- the source (source.c) ---- */
/* Up to cap bytes of the (decompressed) input: the count, 0 at the end,
   -1 with a message in err. */
long dt__rd_src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen);
/* Whether the input was gzip. */
bool dt__rd_src_gzip(const dt_rd_source *s);
/* Tells gzip from plain input and reads the first bytes (kept, to be read
   again): *binary is NULL for JSON (or what is not yet known to be
   anything else), "perfetto" for a Perfetto protobuf trace, or what other
   binary format the input is. 0, or -1 with a message ("byte 0: ...") in
   err. */
int dt__rd_src_start(dt_rd_source *s, const char **binary, char *err, size_t errlen);

/* ---- text (rd_text.c) ---- */
/* A line printf-style into (*lines)[at], the array grown (zeroed) to hold
   it: check's findings and merge's lines. 0 (the line NULL when it could
   not be formatted), or -1 when the array cannot grow. */
__attribute__((format(printf, 4, 0))) int dt__rd_line_at(char ***lines, size_t *cap, size_t at, const char *fmt, va_list ap);

/* ---- numbers (number.c) ---- */
/* An integer written as a string by a writer that uses strings for ids
   ("7", "0x1f", blanks around it allowed). */
bool dt__rd_parse_int_text(const char *s, size_t len, int64_t *out);
/* A finite double, the whole text. */
bool dt__rd_parse_double(const char *s, size_t len, double *out);
/* v as an int64, saturated (NaN: 0). */
int64_t dt__rd_clamp_i64(double v);

/* A sign and a magnitude as an int64, when it fits. */
static inline bool dt__rd_signed_value(bool neg, uint64_t mag, int64_t *out)
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

/* A number as the lexer read it while scanning it. */
typedef struct dt_rd_num {
    uint64_t mag;  /* integer part */
    uint32_t frac; /* first three decimals, as an integer */
    bool neg, fits, has_frac, has_exp, round_up;
} dt_rd_num;

/* The number as an int64, when it is an integer that fits. */
static inline bool dt__rd_num_i64(const dt_rd_num *n, int64_t *out)
{
    return n->fits && !n->has_frac && !n->has_exp && dt__rd_signed_value(n->neg, n->mag, out);
}

/* The number (its text s, len), as microseconds, in exact nanoseconds. */
static inline bool dt__rd_num_us_to_ns(const dt_rd_num *n, const char *s, size_t len, int64_t *out)
{
    if (n->has_exp || !n->fits)
        return dt__rd_parse_us_to_ns(s, len, out);
    if (n->mag > (uint64_t)INT64_MAX / 1000 - 1)
        return false;
    int64_t ns = (int64_t)(n->mag * 1000 + n->frac + n->round_up);
    *out = n->neg ? -ns : ns;
    return true;
}

/* ---- what the parts classify ---- */
/* enum dt_rd_cat of a category; s is NUL-terminated (event.c). */
int dt__rd_classify_cat(const char *s, size_t len);
/* One more event of a category with no kind (DT_RD_CAT_OTHER) into
   sum->unclassified; -1 when out of memory. */
int dt__rd_count_unclassified(dt_rd_summary *sum, const char *cat, size_t len);
/* Reads a Perfetto protobuf trace devtrace wrote (pf_read.c), feeding the
   visitor the events the JSON of the same session gives: dt__rd_read_opts
   with the same result conventions. */
int dt__rd_pf_read(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err,
                  size_t errlen);

#endif
