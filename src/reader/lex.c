/*
 * The lexer's slow paths, out of the hot loops of rd_lex.h: strings with
 * escapes or non-ASCII bytes, their decoding, and the parse's errors.
 */
#include "base/utf8.h"
#include "reader/rd_lex.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *dt__rd_vtype_name(int t)
{
    static const char *names[] = {"a number", "a string", "a boolean", "null", "an object", "an array"};
    return names[t];
}

static uint64_t error_offset(const dt_rd_ctx *c)
{
    return c->base + c->tok_end;
}

int dt__rd_fail(dt_rd_ctx *c, const char *fmt, ...)
{
    if (c->failed)
        return 0;
    c->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "byte %" PRIu64 ": %s", error_offset(c), msg);
    return 0;
}

/* got: the JSON type found; V_NUM means a number that does not fit. */
int dt__rd_event_fail(dt_rd_ctx *c, const char *what, int got)
{
    return dt__rd_fail(c, "traceEvents[%" PRIu64 "]: %s, not %s", c->ev.index, what,
                      got == V_NUM ? "this number" : dt__rd_vtype_name(got));
}

int dt__rd_lex_error(dt_rd_ctx *c, size_t at, const char *what)
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
int dt__rd_stop_at(dt_rd_ctx *c, const unsigned char *q, size_t need, const char *what)
{
    if (!c->eof && q + need > c->data + c->len)
        return T_MORE;
    return dt__rd_lex_error(c, (size_t)(q - c->data), what);
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

/* The rest of a string from p, a byte dt__rd_string_stop stopped at that is not
   its closing quote: escapes and UTF-8 validated. */
int dt__rd_scan_string_slow(dt_rd_ctx *c, const unsigned char *p, const unsigned char **close,
                           bool *escaped)
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
                    return dt__rd_stop_at(c, p, 6, "a \\u escape needs four hex digits");
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                       e == 't') {
                p += 2;
            } else {
                return dt__rd_stop_at(c, p, 2, "an unknown escape in a string");
            }
        } else if (ch < 0x20) {
            if (p >= c->data + c->len)
                return c->eof ? dt__rd_lex_error(c, c->len, "a string is not closed") : T_MORE;
            return dt__rd_lex_error(c, (size_t)(p - c->data), "a control character in a string (it must be escaped)");
        } else {
            int n = (int)dt__utf8_len(p, 4); /* the window's NUL ends any sequence */
            if (n == 0)
                return dt__rd_stop_at(c, p, 4, "invalid UTF-8 in a string");
            p += n;
        }
        p = dt__rd_string_stop(p);
    }
    *close = p;
    return T_OK;
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

size_t dt__rd_unescape(const char *text, size_t len, char *out)
{
    const unsigned char *q = (const unsigned char *)text;
    return (size_t)(unescape(q, q + len, out) - out);
}

/* The text of an escaped string [start, close) decoded into c->tmp, which
   keeps 16 readable bytes past it for word-wide key compares. */
int dt__rd_decode_string(dt_rd_ctx *c, const unsigned char *start, const unsigned char *close, const char **s,
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
            return dt__rd_lex_error(c, (size_t)(close - c->data), "out of memory");
        c->tmp = nb;
        c->tmp_cap = cap;
    }
    char *o = unescape(start, close, c->tmp);
    memset(o, 0, 16);
    *s = c->tmp;
    *len = (size_t)(o - c->tmp);
    return T_OK;
}
