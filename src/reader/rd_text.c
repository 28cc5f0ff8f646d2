/* Text from a trace shown on a terminal or written as CSV: names are the
   vendor's or the program's bytes, and an ESC, CR or LF in one must not
   move the cursor, rewrite the screen or split one report line in two.
   Also the lines check and merge keep for the command (dt__rd_line_at). */
#include "base/utf8.h"
#include "base/vec.h"
#include "reader/dt_reader.h"
#include "reader/rd_internal.h"

#include <stdio.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (NUL-terminated), or 0
   for one that is a C1 control. */
static size_t utf8_sequence(const unsigned char *s)
{
    size_t n = dt__utf8_len(s, 4);
    return dt__utf8_is_c1(s, n) ? 0 : n;
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

size_t dt__rd_safe_len(const char *s)
{
    size_t len = 0, used;
    char buf[8];
    for (; *s; s += used)
        len += escape_unit(s, buf, &used);
    return len;
}

void dt__rd_put_safe(FILE *out, const char *s)
{
    size_t used;
    char buf[8];
    for (; *s; s += used)
        fwrite(buf, 1, escape_unit(s, buf, &used), out);
}

void dt__rd_put_csv(FILE *out, const char *s)
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

int dt__rd_line_at(char ***lines, size_t *cap, size_t at, const char *fmt, va_list ap)
{
    if (dt__vec_reserve_zeroed((void **)lines, cap, at + 1, sizeof **lines) != 0)
        return -1;
    char *line = NULL;
    if (vasprintf(&line, fmt, ap) < 0)
        line = NULL;
    (*lines)[at] = line;
    return 0;
}
