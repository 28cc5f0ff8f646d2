/*
 * Numbers as traces write them, from their text: integers (also written as
 * strings, "7" or "0x1f"), doubles, and microseconds as exact nanoseconds.
 * The lexer reads most numbers on the way (dt_rd_num, rd_internal.h); these
 * take the rest.
 */
#include "reader/rd_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    return parse_u64(s + neg, len - neg, &u) && dt__rd_signed_value(neg, u, out);
}

/* An integer written as a string by a writer that uses strings for ids
   ("7", "0x1f"), as Kineto's ROCm path does for streams. */
bool dt__rd_parse_int_text(const char *s, size_t len, int64_t *out)
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

bool dt__rd_parse_double(const char *s, size_t len, double *out)
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

int64_t dt__rd_clamp_i64(double v)
{
    if (!(v > -9.2e18))
        return v != v ? 0 : INT64_MIN;
    if (!(v < 9.2e18))
        return INT64_MAX;
    return (int64_t)v;
}

bool dt__rd_parse_us_to_ns(const char *s, size_t len, int64_t *out_ns)
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
        if (!dt__rd_parse_double(s, len, &v))
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
