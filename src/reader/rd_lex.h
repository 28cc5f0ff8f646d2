/*
 * The lexers' fast paths, inlined into both parsers (event.c, document.c);
 * the slow ones are in lex.c.
 *
 * The window always ends with a NUL byte, which no scan passes: the hot
 * loops compare no positions with the end, and only a scan that stops at
 * the NUL asks whether the input goes on. None reads past it except by
 * loads that end inside the slack. Strings are scanned 16 bytes at a time
 * (SSE2; 8 with SWAR on other targets) for '"', '\\', control bytes and
 * non-ASCII bytes, which alone take the slow path (escapes; UTF-8
 * validated sequence by sequence).
 */
#ifndef DT_RD_LEX_H
#define DT_RD_LEX_H

#include <string.h>

#include "reader/rd_parse.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline bool dt__rd_is_ws(unsigned char ch)
{
    /* ' ', '\t', '\n', '\r' */
    return ch <= ' ' && ((UINT64_C(1) << ch) & ((UINT64_C(1) << ' ') | (1u << '\t') | (1u << '\n') | (1u << '\r')));
}

static inline const unsigned char *dt__rd_skip_ws(const unsigned char *p)
{
    /* compact JSON has none: one compare (the NUL and controls are not
       whitespace either, and stop the loop) */
    if (__builtin_expect(*p > ' ', 1))
        return p;
    while (dt__rd_is_ws(*p))
        p++;
    return p;
}

/* The first byte at or after p that ends a string's fast scan: '"', '\\',
   a control byte (the window's NUL among them) or a non-ASCII byte. */
static inline const unsigned char *dt__rd_string_stop(const unsigned char *p)
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

/* The string whose text starts at p (just after its opening quote):
   *close is its closing quote, *escaped whether it holds escapes. */
static inline int dt__rd_scan_string(dt_rd_ctx *c, const unsigned char *p, const unsigned char **close, bool *escaped)
{
    p = dt__rd_string_stop(p);
    *escaped = false;
    if (__builtin_expect(*p == '"', 1)) {
        *close = p;
        return T_OK;
    }
    return dt__rd_scan_string_slow(c, p, close, escaped);
}
static inline bool dt__rd_is_digit(unsigned char ch)
{
    return (unsigned)(ch - '0') < 10;
}

static inline uint64_t dt__rd_load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The digits leading the 8 bytes x (little-endian, as loaded): their count,
   and in *digits the bytes with '0' taken off (digits first, 0-9). */
static inline unsigned dt__rd_leading_digits(uint64_t x, uint64_t *digits)
{
    uint64_t t = x ^ UINT64_C(0x3030303030303030);
    /* high bit of a byte: not a digit (>= 10 after the xor); the & 0x7f
       keeps the add from carrying into the next byte */
    uint64_t not_digit =
        (((t & UINT64_C(0x7F7F7F7F7F7F7F7F)) + UINT64_C(0x7676767676767676)) | t) & UINT64_C(0x8080808080808080);
    *digits = t;
    return not_digit ? (unsigned)__builtin_ctzll(not_digit) >> 3 : 8;
}

/* The value of the first n (1-8) digits of t (dt__rd_leading_digits' bytes). */
static inline uint64_t dt__rd_digits_value(uint64_t t, unsigned n)
{
    uint64_t v = t << (64 - 8 * n); /* the n digits at the top, zeros below */
    v = (v * 10 + (v >> 8)) & UINT64_C(0x00FF00FF00FF00FF);
    v = (v * 100 + (v >> 16)) & UINT64_C(0x0000FFFF0000FFFF);
    return (v * 10000 + (v >> 32)) & UINT64_C(0xFFFFFFFF);
}

/* The number at p: its value read on the way (8 digits per step), *after
   just past it. */
static inline __attribute__((always_inline)) int dt_rd_scan_number(dt_rd_ctx *c, const unsigned char *p,
                                                               const unsigned char **after, dt_rd_num *n)
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
    unsigned k = dt__rd_leading_digits(dt__rd_load64(p), &t);
    if (k == 0)
        return dt__rd_stop_at(c, p, 1, "a number needs a digit");
    if ((t & 0xFF) == 0) {
        p++; /* a leading 0 is the whole integer part */
    } else {
        mag = dt__rd_digits_value(t, k);
        p += k;
        if (k == 8) {
            /* timestamps have 10 to 16 digits */
            static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
            k = dt__rd_leading_digits(dt__rd_load64(p), &t);
            if (k > 0 && k < 8) {
                mag = mag * pow10[k] + dt__rd_digits_value(t, k);
                p += k;
            } else if (k == 8) {
                /* 16 digits or more: a u64 may overflow, so again, with the checks */
                const unsigned char *d0 = p - 8;
                while (dt__rd_is_digit(*p))
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
        k = dt__rd_leading_digits(dt__rd_load64(p), &t);
        if (k == 0)
            return dt__rd_stop_at(c, p, 1, "a number needs a digit after its point");
        /* the first three decimals are exact nanoseconds of a microsecond;
           the fourth rounds */
        uint64_t d = k < 8 ? t & ((UINT64_C(1) << (8 * k)) - 1) : t;
        n->frac = (uint32_t)((d & 0xFF) * 100 + (d >> 8 & 0xFF) * 10 + (d >> 16 & 0xFF));
        n->round_up = k >= 4 && (d >> 24 & 0xFF) >= 5;
        n->has_frac = true;
        p += k;
        if (k == 8)
            while (dt__rd_is_digit(*p))
                p++;
    }
    if ((*p | 0x20) == 'e') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!dt__rd_is_digit(*p))
            return dt__rd_stop_at(c, p, 1, "a number needs a digit in its exponent");
        while (dt__rd_is_digit(*p))
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

static inline uint32_t dt__rd_load32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t dt__rd_load16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* true, false or null at p. */
static inline int dt__rd_scan_word(dt_rd_ctx *c, const unsigned char *p, const unsigned char **after)
{
    uint32_t w = dt__rd_load32(p);
    *after = p; /* for the compiler: set again on success */
    static const char t[4] = {'t', 'r', 'u', 'e'}, f[4] = {'f', 'a', 'l', 's'}, n[4] = {'n', 'u', 'l', 'l'};
    if (w == dt__rd_load32((const unsigned char *)t) || w == dt__rd_load32((const unsigned char *)n)) {
        *after = p + 4;
        return T_OK;
    }
    if (w == dt__rd_load32((const unsigned char *)f) && p[4] == 'e') {
        *after = p + 5;
        return T_OK;
    }
    return dt__rd_stop_at(c, p, 5, "an unknown word");
}


#endif
