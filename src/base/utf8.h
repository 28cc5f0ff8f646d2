/*
 * UTF-8, validated once for the whole code base: the JSON writers escape
 * by it, the reader checks strings by it, the terminal output of stats
 * and check quotes by it.
 */
#ifndef DT_BASE_UTF8_H
#define DT_BASE_UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at s (of at most n bytes), or
   0 when the bytes there do not form one: overlong forms, UTF-16
   surrogates and code points above U+10FFFF are not UTF-8 (RFC 3629).
   The bytes are read in order and no further than the first that fails,
   so a NUL-terminated string may be given any n. ASCII (below 0x80) is
   the caller's: this returns 0 for it. */
static inline size_t dt__utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF) {
        if (n >= 2 && (s[1] & 0xC0) == 0x80)
            return 2;
        return 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) ||
            (s[2] & 0xC0) != 0x80)
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90) ||
            (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0;
}

/* Whether the valid sequence of len bytes at s is a C1 control
   (U+0080..U+009F), which some terminals act on. */
static inline int dt__utf8_is_c1(const unsigned char *s, size_t len)
{
    return len == 2 && s[0] == 0xC2 && s[1] < 0xA0;
}

#endif
