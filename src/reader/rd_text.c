/* Text from a trace shown on a terminal or written as CSV: names are the
   vendor's or the program's bytes, and an ESC, CR or LF in one must not
   move the cursor, rewrite the screen or split one report line in two. */
#include "dt_reader.h"

#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0. */
static size_t utf8_sequence(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t min, cp;
    if (c >= 0xc2 && c <= 0xdf) { n = 2; min = 0x80; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 3; min = 0x800; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; min = 0x10000; cp = c & 0x07; }
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    /* C1 controls (U+0080..U+009F): some terminals act on them */
    if (cp <= 0x9f)
        return 0;
    return n;
}

/* The escaped form of the unit at s into buf (at least 5 bytes), with
   *used set to the bytes of s consumed; returns the length written. */
static size_t escape_unit(const char *s, char *buf, size_t *used)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = u[0] < 0x80 ? (u[0] >= 0x20 && u[0] != 0x7f) : utf8_sequence(u);
    if (n) {
        memcpy(buf, s, n);
        *used = n;
        return n;
    }
    static const char hex[] = "0123456789abcdef";
    buf[0] = '\\';
    buf[1] = 'x';
    buf[2] = hex[u[0] >> 4];
    buf[3] = hex[u[0] & 15];
    *used = 1;
    return 4;
}

size_t dt_rd_safe_len(const char *s)
{
    size_t len = 0, used;
    char buf[8];
    for (; *s; s += used)
        len += escape_unit(s, buf, &used);
    return len;
}

void dt_rd_put_safe(FILE *out, const char *s)
{
    size_t used;
    char buf[8];
    for (; *s; s += used)
        fwrite(buf, 1, escape_unit(s, buf, &used), out);
}

void dt_rd_put_csv(FILE *out, const char *s)
{
    bool quote = strpbrk(s, ",\"") != NULL;
    size_t used;
    char buf[8];
    if (quote)
        fputc('"', out);
    for (; *s; s += used) {
        if (*s == '"') {
            fputs("\"\"", out);
            used = 1;
            continue;
        }
        fwrite(buf, 1, escape_unit(s, buf, &used), out);
    }
    if (quote)
        fputc('"', out);
}
