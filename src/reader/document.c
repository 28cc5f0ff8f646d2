/*
 * The document's outer structure (the root object, the traceEvents array,
 * the devtrace object and its maps, deviceProperties, keys nobody reads):
 * a small state machine with an explicit stack of frames (bounded by
 * DT_RD_MAX_DEPTH) that can stop between any two tokens. A token that does
 * not end inside the window is scanned again once more input is in; each
 * traceEvents entry goes to dt__rd_parse_event whole.
 */
#include "reader/rd_lex.h"

#include <inttypes.h>
#include <string.h>

/* The frame machine's forms: the token at c->pos, which moves past it. */
static int lex_string(dt_rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos + 1, *close;
    bool escaped;
    int rc = dt__rd_scan_string(c, start, &close, &escaped);
    if (rc != T_OK)
        return rc;
    c->pos = (size_t)(close + 1 - c->data);
    if (!s)
        return T_OK; /* only validated */
    if (!escaped) {
        *s = (const char *)start;
        *len = (size_t)(close - start);
        return T_OK;
    }
    return dt__rd_decode_string(c, start, close, s, len);
}

static int lex_number(dt_rd_ctx *c, const char **s, size_t *len)
{
    const unsigned char *start = c->data + c->pos, *after;
    int rc = dt_rd_scan_number(c, start, &after, &c->num);
    if (rc != T_OK)
        return rc;
    *s = (const char *)start;
    *len = (size_t)(after - start);
    c->pos = (size_t)(after - c->data);
    return T_OK;
}

static int lex_word(dt_rd_ctx *c)
{
    const unsigned char *after;
    int rc = dt__rd_scan_word(c, c->data + c->pos, &after);
    if (rc == T_OK)
        c->pos = (size_t)(after - c->data);
    return rc;
}

/* The value a frame holds completed: what may follow. */
static inline void value_done(dt_rd_ctx *c)
{
    if (c->depth > 0)
        c->stack[c->depth - 1].state = G_COMMA_OR_END;
    else
        c->root_done = true;
}

static int scalar(dt_rd_ctx *c, int type, const char *s, size_t len)
{
    c->tok_end = c->pos;
    if (dt__rd_value(c, type, s, len) < 0)
        return T_ERR;
    value_done(c);
    return T_OK;
}

/* At the end of the buffer: T_MORE, or at the end of the input what it
   means there. */
static int at_end(dt_rd_ctx *c)
{
    if (!c->eof)
        return T_MORE;
    if (c->root_done)
        return T_OK;
    if (!c->root_seen) {
        c->tok_end = c->pos;
        if (!c->failed) {
            c->failed = true;
            snprintf(c->err, c->errlen, "byte %" PRIu64 ": empty input: no JSON value", c->base + c->pos);
        }
        return T_ERR;
    }
    return dt__rd_lex_error(c, c->pos, "the input ends inside an object or array");
}

/* Tokens until the window is exhausted (T_MORE), the input ends (T_OK) or
   an error (T_ERR). The grammar state of each open container is kept in its
   frame so that the parse can stop between any two tokens; within the
   window, each state jumps straight to the one that follows. Each element
   of traceEvents goes to dt__rd_parse_event whole. */
int dt__rd_parse(dt_rd_ctx *c)
{
    const unsigned char *p = c->data + c->pos;
    const unsigned char *const end = c->data + c->len;
    dt_rd_frame *f;
    unsigned char ch;
    const char *s;
    size_t len;
    int rc;
/* position -> c (before a call that reads or moves it), and back */
#define SYNC() (c->tok_start = c->pos = (size_t)(p - c->data))
#define RELOAD() (p = c->data + c->pos)
#define SKIP_WS()                                                                                              \
    do {                                                                                                       \
        p = dt__rd_skip_ws(p);                                                                                        \
        if (__builtin_expect(p >= end, 0)) {                                                                   \
            SYNC();                                                                                            \
            return at_end(c);                                                                                  \
        }                                                                                                      \
    } while (0)
#define ERROR(what) (SYNC(), dt__rd_lex_error(c, c->pos, what))

dispatch:
    if (c->depth == 0) {
        SKIP_WS();
        if (c->root_done)
            return ERROR("text after the top-level value");
        f = NULL;
        goto value;
    }
    f = &c->stack[c->depth - 1];
    switch (f->state) {
    case G_KEY_OR_END: goto key_or_end;
    case G_KEY: goto key;
    case G_COLON: goto colon;
    case G_VALUE: goto value;
    case G_VALUE_OR_END: goto value_or_end;
    default: goto comma_or_end;
    }

key_or_end:
    SKIP_WS();
    if (*p == '}')
        goto close;
key:
    SKIP_WS();
    if (*p != '"')
        return ERROR(f->state == G_KEY ? "an object key must follow ','" : "an object key or '}' expected");
    SYNC();
    rc = lex_string(c, &s, &len);
    if (rc != T_OK)
        return rc;
    RELOAD();
    c->tok_end = c->pos;
    if (!dt__rd_key(c, s, len))
        return T_ERR;
    f->state = G_COLON;
colon:
    SKIP_WS();
    if (*p != ':')
        return ERROR("':' expected after an object key");
    p++;
    f->state = G_VALUE;
    goto value;

value_or_end:
    SKIP_WS();
    if (*p == ']')
        goto close;
value:
    SKIP_WS();
    ch = *p;
    SYNC();
    if (f && ch == '{' && (f->role == R_EVENTS || (f->role == R_DEVPROPS && c->opt && c->opt->device))) {
        rc = f->role == R_EVENTS ? dt__rd_parse_event(c) : dt__rd_parse_device(c);
        if (rc != T_OK)
            return rc;
        RELOAD();
        f->state = G_COMMA_OR_END;
        goto comma_or_end;
    }
    if (f && (f->role == R_SKIP || (f->is_map && f->key == K_OTHER))) {
        /* a value nobody reads: validated, nothing computed */
        switch (ch) {
        case '{':
        case '[':
            c->pos++;
            c->tok_end = c->pos;
            f->state = G_COMMA_OR_END;
            if (c->depth >= DT_RD_MAX_DEPTH)
                return dt__rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH), T_ERR;
            f = &c->stack[c->depth++];
            f->role = R_SKIP;
            f->is_map = ch == '{';
            f->key = K_OTHER;
            f->state = ch == '{' ? G_KEY_OR_END : G_VALUE_OR_END;
            RELOAD();
            if (ch == '{')
                goto key_or_end;
            goto value_or_end;
        case '"':
            rc = lex_string(c, NULL, NULL);
            break;
        case 't':
        case 'f':
        case 'n':
            rc = lex_word(c);
            break;
        default:
            if (ch != '-' && (ch < '0' || ch > '9'))
                return dt__rd_lex_error(c, c->pos, "a value expected");
            rc = lex_number(c, &s, &len);
            break;
        }
        if (rc != T_OK)
            return rc;
        RELOAD();
        f->state = G_COMMA_OR_END;
        goto comma_or_end;
    }
    switch (ch) {
    case '{':
    case '[':
        c->pos++;
        c->tok_end = c->pos;
        if (f)
            f->state = G_COMMA_OR_END;
        if (!dt__rd_open_value(c, ch == '{' ? V_MAP : V_ARRAY))
            return T_ERR;
        RELOAD();
        f = &c->stack[c->depth - 1];
        if (ch == '{')
            goto key_or_end;
        goto value_or_end;
    case '"':
        rc = lex_string(c, &s, &len);
        if (rc != T_OK)
            return rc;
        if (scalar(c, V_STR, s, len) != T_OK)
            return T_ERR;
        break;
    case 't':
    case 'f':
    case 'n':
        rc = lex_word(c);
        if (rc != T_OK)
            return rc;
        if (scalar(c, ch == 'n' ? V_NULL : V_BOOL, ch == 't' ? "1" : "", ch == 't' ? 1 : 0) != T_OK)
            return T_ERR;
        break;
    default:
        if (ch != '-' && (ch < '0' || ch > '9'))
            return dt__rd_lex_error(c, c->pos, "a value expected");
        rc = lex_number(c, &s, &len);
        if (rc != T_OK)
            return rc;
        if (scalar(c, V_NUM, s, len) != T_OK)
            return T_ERR;
        break;
    }
    RELOAD();
    if (!f)
        goto dispatch; /* the root was a scalar: dt__rd_value refused it */
comma_or_end:
    SKIP_WS();
    ch = *p;
    if (ch == ',') {
        p++;
        if (f->is_map) {
            f->state = G_KEY;
            goto key;
        }
        f->state = G_VALUE;
        goto value;
    }
    if ((ch == '}' && f->is_map) || (ch == ']' && !f->is_map))
        goto close;
    return ERROR(f->is_map ? "',' or '}' expected" : "',' or ']' expected");

close:
    p++;
    SYNC();
    c->tok_end = c->pos;
    c->depth--;
    value_done(c);
    if (c->depth == 0)
        goto dispatch;
    f = &c->stack[c->depth - 1];
    goto comma_or_end;
#undef SYNC
#undef RELOAD
#undef SKIP_WS
#undef ERROR
}
