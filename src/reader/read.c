/*
 * dt__rd_read: the window over the source, refilled and grown as the parse
 * asks (document.c), or a Perfetto trace handed to pf_read.c.
 */
#include "reader/rd_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Readable bytes past the window's end (the NUL, then room for the 16-byte
   loads that find it). */
#define RD_SLACK 64
/* A token or event larger than this is refused rather than held. */
#define RD_MAX_TOKEN (256u << 20)

/* Makes room and reads more input after T_MORE, keeping the token (or
   event) being scanned. When what is kept fills half the window or more,
   the window doubles first, so that each scan again sees at least twice
   the text of the one before: a long token or event costs at most twice
   its length in rescans. -1 on error. */
static int refill(dt_rd_ctx *c)
{
    size_t keep = c->tok_start;
    if (keep > 0) {
        memmove(c->data, c->data + keep, c->len - keep);
        c->len -= keep;
        c->pos -= keep;
        c->tok_start -= keep;
        c->tok_end = c->tok_end >= keep ? c->tok_end - keep : 0;
        c->base += keep;
    }
    if (c->len >= c->cap / 2) {
        if (c->cap >= RD_MAX_TOKEN) {
            c->tok_end = c->pos;
            return dt__rd_fail(c, "a value or event longer than %u MiB", RD_MAX_TOKEN >> 20), -1;
        }
        unsigned char *nb = realloc(c->data, c->cap * 2 + RD_SLACK);
        if (!nb)
            return dt__rd_fail(c, "out of memory"), -1;
        c->data = nb;
        c->cap *= 2;
        memset(c->data + c->cap, 0, RD_SLACK);
    }
    if (c->src_failed) {
        /* the text before the source's error has been parsed: now it counts */
        if (!c->failed) {
            c->failed = true;
            snprintf(c->err, c->errlen, "%s", c->src_err);
        }
        return -1;
    }
    size_t before = c->len;
    while (c->len < c->cap) {
        char msg[400];
        long n = dt__rd_src_read(c->src, c->data + c->len, c->cap - c->len, msg, sizeof msg);
        if (n < 0) {
            snprintf(c->src_err, sizeof c->src_err, "byte %" PRIu64 ": %s", c->base + c->len, msg);
            c->src_failed = true;
            if (c->len > before) {
                /* what came before the error is parsed first, whatever
                   the window's size */
                break;
            }
            if (!c->failed) {
                c->failed = true;
                snprintf(c->err, c->errlen, "%s", c->src_err);
            }
            return -1;
        }
        if (n == 0) {
            c->eof = true;
            break;
        }
        c->len += (size_t)n;
    }
    c->data[c->len] = '\0';
    return 0;
}

int dt__rd_read_opts(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err,
                    size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    memset(summary, 0, sizeof *summary);
    summary->local_rank = summary->world_size = -1;
    if (!src) {
        snprintf(err, errlen, "no input");
        return -1;
    }
    dt_rd_ctx c;
    memset(&c, 0, sizeof c);
    c.src = src;
    c.sum = summary;
    c.opt = opts;
    c.raw = opts && (opts->flags & (DT_RD_RAW | DT_RD_RAW_IF_JSON));
    c.err = err;
    c.errlen = errlen;
    int rc = 0;
    const char *binary;
    if (dt__rd_src_start(src, &binary, err, errlen) != 0)
        return -1;
    if (binary && strcmp(binary, "perfetto") == 0)
        return dt__rd_pf_read(src, opts, summary, err, errlen);
    if (binary) {
        snprintf(err, errlen, "byte 0: not a trace: %s%s, neither JSON nor a Perfetto protobuf trace",
                 dt__rd_src_gzip(src) ? "gzip of " : "", binary);
        return -1;
    }
    c.cap = opts && opts->window ? opts->window : DT_RD_CHUNK;
    if (c.cap > RD_MAX_TOKEN)
        c.cap = RD_MAX_TOKEN;
    c.data = malloc(c.cap + RD_SLACK);
    if (!c.data) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(c.data, 0, c.cap + RD_SLACK);
    for (;;) {
        int t = dt__rd_parse(&c);
        if (t == T_OK)
            break;
        if (t == T_ERR) {
            rc = c.visit_rc ? c.visit_rc : -1;
            break;
        }
        if (refill(&c) != 0) {
            rc = -1;
            break;
        }
    }
    summary->bytes = c.base + (rc == 0 ? c.len : c.pos);
    summary->compressed = dt__rd_src_gzip(src);
    if (rc == 0 && !summary->has_trace_events) {
        snprintf(err, errlen, "byte %" PRIu64 ": no \"traceEvents\" array at the top level", summary->bytes);
        rc = -1;
    }
    free(c.data);
    free(c.tmp);
    free(c.sb);
    free(c.keybuf);
    return rc;
}

int dt__rd_read(dt_rd_source *src, dt_rd_visitor visit, void *user, dt_rd_summary *summary, char *err,
               size_t errlen)
{
    dt_rd_options o = {.visit = visit, .user = user};
    return dt__rd_read_opts(src, &o, summary, err, errlen);
}
