/*
 * Where the reader's JSON comes from: a file, standard input or memory,
 * plain or gzip (told by its magic bytes; concatenated members are one
 * stream), and what its first bytes say it is.
 */
#include "reader/rd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if DT_HAVE_ZLIB
#include <zlib.h>
#endif

struct dt_rd_source {
    int fd;
    bool own_fd;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    /* raw (compressed) input window, for gzip */
    unsigned char *inbuf;
    const unsigned char *in;
    size_t in_len, in_pos;
    bool in_eof;
    bool checked, gzip;
    bool zs_init, z_ended, z_failed;
    /* the first bytes of the (decompressed) input, read to tell its format */
    unsigned char peek[16];
    size_t peek_len, peek_pos;
#if DT_HAVE_ZLIB
    z_stream zs;
#endif
};

dt_rd_source *dt__rd_open_file(const char *path, char *err, size_t errlen)
{
    dt_rd_source *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            free(s);
            return NULL;
        }
        s->own_fd = true;
#ifdef POSIX_FADV_SEQUENTIAL
        posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    }
    s->inbuf = malloc(DT_RD_CHUNK);
    if (!s->inbuf) {
        snprintf(err, errlen, "out of memory");
        dt__rd_close(s);
        return NULL;
    }
    return s;
}

dt_rd_source *dt__rd_open_memory(const void *data, size_t len)
{
    dt_rd_source *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    s->mem = data;
    s->mem_len = len;
    return s;
}

void dt__rd_close(dt_rd_source *s)
{
    if (!s)
        return;
    if (s->own_fd && s->fd >= 0)
        close(s->fd);
#if DT_HAVE_ZLIB
    if (s->zs_init)
        inflateEnd(&s->zs);
#endif
    free(s->inbuf);
    free(s);
}

/* read(2) without EINTR: the count, 0 at the end, -1 on error. */
static ssize_t read_some(int fd, void *dst, size_t cap)
{
    for (;;) {
        ssize_t n = read(fd, dst, cap);
        if (n >= 0 || errno != EINTR)
            return n;
    }
}

/* Makes raw input available in s->in[in_pos..in_len); -1 on read error. */
static int src_fill(dt_rd_source *s, char *err, size_t errlen)
{
    if (s->in_pos < s->in_len || s->in_eof)
        return 0;
    if (s->mem) {
        size_t n = s->mem_len - s->mem_pos;
        if (n > DT_RD_CHUNK)
            n = DT_RD_CHUNK;
        s->in = s->mem + s->mem_pos;
        s->mem_pos += n;
        s->in_len = n;
        s->in_pos = 0;
        if (n == 0)
            s->in_eof = true;
        return 0;
    }
    if (s->fd < 0) {
        s->in_eof = true;
        s->in_len = s->in_pos = 0;
        return 0;
    }
    ssize_t n = read_some(s->fd, s->inbuf, DT_RD_CHUNK);
    if (n < 0) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    s->in = s->inbuf;
    s->in_len = (size_t)n;
    s->in_pos = 0;
    if (n == 0)
        s->in_eof = true;
    return 0;
}

static int src_detect(dt_rd_source *s, char *err, size_t errlen)
{
    if (s->checked)
        return 0;
    if (src_fill(s, err, errlen) != 0)
        return -1;
    s->checked = true;
    /* A gzip member starts with 1f 8b; JSON never does. */
    if (s->in_len - s->in_pos >= 2 && s->in[s->in_pos] == 0x1f && s->in[s->in_pos + 1] == 0x8b) {
        s->gzip = true;
#if !DT_HAVE_ZLIB
        snprintf(err, errlen, "a gzip trace, and this devtrace was built without zlib: gunzip it first, or "
                              "rebuild devtrace with zlib (zlib1g-dev or zlib-devel)");
        return -1;
#else
        memset(&s->zs, 0, sizeof s->zs);
        if (inflateInit2(&s->zs, 15 + 16) != Z_OK) {
            snprintf(err, errlen, "cannot initialise zlib");
            return -1;
        }
        s->zs_init = true;
#endif
    }
    return 0;
}

/* Up to cap bytes of JSON text into dst: the count, 0 at the end, -1 on
   error. */
static long src_read_raw(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    if (src_detect(s, err, errlen) != 0)
        return -1;
    if (!s->gzip) {
        if (s->fd >= 0 && s->in_pos >= s->in_len && !s->in_eof) {
            /* nothing pending: read straight into the caller's window */
            ssize_t n = read_some(s->fd, dst, cap);
            if (n < 0) {
                snprintf(err, errlen, "read error: %s", strerror(errno));
                return -1;
            }
            if (n == 0)
                s->in_eof = true;
            return (long)n;
        }
        if (src_fill(s, err, errlen) != 0)
            return -1;
        size_t n = s->in_len - s->in_pos;
        if (n > cap)
            n = cap;
        memcpy(dst, s->in + s->in_pos, n);
        s->in_pos += n;
        return (long)n;
    }
#if !DT_HAVE_ZLIB
    return -1; /* src_detect refused gzip input */
#else
    if (s->z_failed) {
        snprintf(err, errlen, "gzip: corrupt data (%s)", s->zs.msg ? s->zs.msg : "inflate failed");
        return -1;
    }
    for (;;) {
        if (s->z_ended) {
            /* Concatenated members are one stream (what `cat a.gz b.gz` gives). */
            if (src_fill(s, err, errlen) != 0)
                return -1;
            if (s->in_pos >= s->in_len)
                return 0;
            if (s->in[s->in_pos] != 0x1f) {
                snprintf(err, errlen, "gzip: unexpected data after the compressed stream");
                return -1;
            }
            inflateReset(&s->zs);
            s->z_ended = false;
        }
        if (src_fill(s, err, errlen) != 0)
            return -1;
        s->zs.next_in = (unsigned char *)(uintptr_t)(s->in + s->in_pos);
        s->zs.avail_in = (uInt)(s->in_len - s->in_pos);
        s->zs.next_out = dst;
        s->zs.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
        size_t before = s->zs.avail_out;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        s->in_pos = s->in_len - s->zs.avail_in;
        size_t produced = before - s->zs.avail_out;
        if (produced > 0 && rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
            /* the text before the damage first, whatever the window's size:
               the error comes with the next call */
            s->z_failed = true;
            return (long)produced;
        }
        if (rc == Z_STREAM_END) {
            s->z_ended = true;
        } else if (rc == Z_BUF_ERROR && s->in_eof) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip: corrupt data (%s)", s->zs.msg ? s->zs.msg : "inflate failed");
            return -1;
        }
        if (produced > 0)
            return (long)produced;
        if (s->in_eof && !s->z_ended) {
            snprintf(err, errlen, "gzip: the compressed stream is truncated");
            return -1;
        }
    }
#endif
}

/* src_read_raw after the bytes src_peek kept. */
long dt__rd_src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen)
{
    if (s->peek_pos < s->peek_len) {
        size_t n = s->peek_len - s->peek_pos;
        if (n > cap)
            n = cap;
        memcpy(dst, s->peek + s->peek_pos, n);
        s->peek_pos += n;
        return (long)n;
    }
    return src_read_raw(s, dst, cap, err, errlen);
}

bool dt__rd_src_gzip(const dt_rd_source *s)
{
    return s->gzip;
}

/* The first bytes of the input, kept to be read again: their count, or -1. */
static long src_peek(dt_rd_source *s, char *err, size_t errlen)
{
    while (s->peek_len < sizeof s->peek) {
        long n = src_read_raw(s, s->peek + s->peek_len, sizeof s->peek - s->peek_len, err, errlen);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        s->peek_len += (size_t)n;
    }
    return (long)s->peek_len;
}

/* What the first bytes say the input is, when it is not JSON (NULL): a
   Perfetto trace (a TracePacket, field 1, length-delimited, where JSON has
   a '{' after any whitespace), or another binary format named by its magic. */
static const char *sniff_binary(const unsigned char *p, size_t n)
{
    static const struct {
        const char *magic;
        size_t len;
        const char *what;
    } magics[] = {
        {"\x7f" "ELF", 4, "an ELF executable or library"}, {"PK\x03\x04", 4, "a zip archive"},
        {"BZh", 3, "bzip2 data"}, {"\xfd" "7zXZ", 5, "xz data"}, {"\x28\xb5\x2f\xfd", 4, "zstd data"},
        {"\x1f\x8b", 2, "gzip data"}, {"\x89PNG", 4, "a PNG image"}, {"SQLite format 3", 15, "an SQLite database"},
    };
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i == n || p[i] == '{' || p[i] == '[')
        return NULL; /* JSON, or whitespace so far: the JSON reader says which */
    if (n >= 2 && p[0] == 0x0a)
        return "perfetto";
    for (size_t k = 0; k < sizeof magics / sizeof *magics; k++)
        if (n >= magics[k].len && memcmp(p, magics[k].magic, magics[k].len) == 0)
            return magics[k].what;
    return NULL;
}

int dt__rd_src_start(dt_rd_source *s, const char **binary, char *err, size_t errlen)
{
    *binary = NULL;
    long peeked = src_detect(s, err, errlen) != 0 ? -1 : src_peek(s, err, errlen);
    if (peeked < 0) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "byte 0: %s", tmp);
        return -1;
    }
    *binary = sniff_binary(s->peek, (size_t)peeked);
    return 0;
}
