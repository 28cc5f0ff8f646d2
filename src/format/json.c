/* The JSON encoder (json.h). */
#include "format/json.h"

#include "base/utf8.h"

char *dt__json_escape(char *dst, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    char *p = dst;
    *p++ = '"';
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *p++ = (char)c;
            i++;
            continue;
        }
        if (c < 0x80) {
            *p++ = '\\';
            switch (c) {
            case '"': *p++ = '"'; break;
            case '\\': *p++ = '\\'; break;
            case '\n': *p++ = 'n'; break;
            case '\r': *p++ = 'r'; break;
            case '\t': *p++ = 't'; break;
            case '\b': *p++ = 'b'; break;
            case '\f': *p++ = 'f'; break;
            default:
                *p++ = 'u';
                *p++ = '0';
                *p++ = '0';
                *p++ = hex[c >> 4];
                *p++ = hex[c & 15];
                break;
            }
            i++;
            continue;
        }
        size_t k = dt__utf8_len(s + i, n - i);
        if (k == 0) {
            /* U+FFFD for each byte that starts no valid sequence */
            *p++ = (char)0xEF;
            *p++ = (char)0xBF;
            *p++ = (char)0xBD;
            i++;
        } else {
            memcpy(p, s + i, k);
            p += k;
            i += k;
        }
    }
    *p++ = '"';
    return p;
}

void dt__json_string(dt_out *o, const char *s, size_t n)
{
    /* Escape in slices that fit the buffer; a slice boundary may not split a
       UTF-8 sequence, so slices end before a continuation byte. */
    const size_t slice_max = (o->cap - 16) / 6;
    dt__out_write(o, "\"", 1);
    while (n > 0) {
        size_t k = n < slice_max ? n : slice_max;
        if (k < n) {
            size_t back = 0;
            while (back < 3 && k - back > 1 &&
                   (((unsigned char)s[k - back]) & 0xC0) == 0x80)
                back++;
            k -= back;
        }
        char *p = dt__out_reserve(o, dt__json_escaped_max(k));
        char *e = dt__json_escape(p, s, k);
        /* drop the quotes the escaper added around the slice */
        memmove(p, p + 1, (size_t)(e - p - 2));
        dt__out_commit(o, e - 2);
        s += k;
        n -= k;
    }
    dt__out_write(o, "\"", 1);
}
