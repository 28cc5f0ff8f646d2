#include "json_out.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

const char dt_digit_pairs[200] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

/* zlib's own allocations go through the library's, like every other. */
static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return dt_calloc(items, size);
}

static void zlib_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    dt_free(p);
}

static void write_all(dt_out *o, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0 && o->err == 0) {
        ssize_t w = write(o->fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            o->err = errno;
            return;
        }
        if (w == 0) {
            o->err = EIO;
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

static void deflate_some(dt_out *o, const void *p, size_t n, int flush)
{
    z_stream *zs = o->zs;
    zs->next_in = (Bytef *)(uintptr_t)p;
    zs->avail_in = (uInt)n;
    for (;;) {
        zs->next_out = o->zbuf;
        zs->avail_out = (uInt)o->zcap;
        int rc = deflate(zs, flush);
        if (rc == Z_STREAM_ERROR) {
            o->err = EIO;
            return;
        }
        size_t have = o->zcap - zs->avail_out;
        if (have)
            write_all(o, o->zbuf, have);
        if (o->err)
            return;
        if (flush == Z_FINISH) {
            if (rc == Z_STREAM_END)
                return;
        } else if (zs->avail_in == 0 && zs->avail_out != 0) {
            return;
        }
    }
}

int dt_out_init(dt_out *o, int fd, int gzip, int level, size_t buffer_size)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->gzip = gzip;
    o->cap = buffer_size;
    o->buf = dt_malloc(buffer_size);
    if (!o->buf)
        return -1;
    if (gzip) {
        z_stream *zs = dt_calloc(1, sizeof *zs);
        o->zcap = buffer_size / 2;
        o->zbuf = dt_malloc(o->zcap);
        if (!zs || !o->zbuf) {
            dt_free(zs);
            dt_out_free(o);
            return -1;
        }
        zs->zalloc = zlib_alloc;
        zs->zfree = zlib_free;
        /* windowBits 15 + 16: a gzip wrapper, which gzip and browsers read. */
        if (deflateInit2(zs, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            dt_free(zs);
            dt_out_free(o);
            return -1;
        }
        o->zs = zs;
    }
    return 0;
}

void dt_out_flush(dt_out *o)
{
    if (o->len == 0)
        return;
    o->bytes += o->len;
    if (o->err == 0) {
        if (o->gzip)
            deflate_some(o, o->buf, o->len, Z_NO_FLUSH);
        else
            write_all(o, o->buf, o->len);
    }
    o->len = 0;
}

void dt_out_write(dt_out *o, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        if (o->len == o->cap)
            dt_out_flush(o);
        size_t room = o->cap - o->len;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->len, c, k);
        o->len += k;
        c += k;
        n -= k;
    }
}

int dt_out_finish(dt_out *o)
{
    dt_out_flush(o);
    if (o->gzip && o->err == 0)
        deflate_some(o, "", 0, Z_FINISH);
    return o->err;
}

void dt_out_free(dt_out *o)
{
    if (o->zs) {
        deflateEnd(o->zs);
        dt_free(o->zs);
    }
    dt_free(o->zbuf);
    dt_free(o->buf);
    o->zs = NULL;
    o->zbuf = NULL;
    o->buf = NULL;
}

char *dt_put_fixed(char *p, uint64_t scaled, unsigned decimals)
{
    uint64_t div = 1;
    for (unsigned i = 0; i < decimals; i++)
        div *= 10;
    uint64_t ip = scaled / div, frac = scaled % div;
    p = dt_put_u64(p, ip);
    if (frac == 0)
        return p;
    *p++ = '.';
    char digits[20];
    for (unsigned i = decimals; i > 0; i--) {
        digits[i - 1] = (char)('0' + frac % 10);
        frac /= 10;
    }
    unsigned n = decimals;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    memcpy(p, digits, n);
    return p + n;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when the
   bytes there do not form one (overlong forms, surrogates and code points
   above U+10FFFF are invalid too, as RFC 3629 says). */
static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF) {
        if (n >= 2 && (s[1] & 0xC0) == 0x80)
            return 2;
        return 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && s[1] < 0xA0)
            return 0;
        if (c == 0xED && s[1] >= 0xA0)
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90)
            return 0;
        if (c == 0xF4 && s[1] >= 0x90)
            return 0;
        return 4;
    }
    return 0;
}

char *dt_json_escape(char *dst, const char *str, size_t n)
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
        size_t k = utf8_valid_len(s + i, n - i);
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

void dt_out_string(dt_out *o, const char *s, size_t n)
{
    /* Escape in slices that fit the buffer; a slice boundary may not split a
       UTF-8 sequence, so slices end before a continuation byte. */
    const size_t slice_max = (o->cap - 16) / 6;
    dt_out_write(o, "\"", 1);
    while (n > 0) {
        size_t k = n < slice_max ? n : slice_max;
        if (k < n) {
            size_t back = 0;
            while (back < 3 && k - back > 1 &&
                   (((unsigned char)s[k - back]) & 0xC0) == 0x80)
                back++;
            k -= back;
        }
        char *p = dt_out_reserve(o, dt_json_escaped_max(k));
        char *e = dt_json_escape(p, s, k);
        /* drop the quotes the escaper added around the slice */
        memmove(p, p + 1, (size_t)(e - p - 2));
        dt_out_commit(o, e - 2);
        s += k;
        n -= k;
    }
    dt_out_write(o, "\"", 1);
}
