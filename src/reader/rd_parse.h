/*
 * The JSON reader's shared state: what its parts (lex.c, keys.c, event.c,
 * document.c, read.c) pass between them. Not part of the reader's
 * interface.
 *
 * Why not a library: yajl, the parser this reader used first, tokenizes
 * these traces at about 160-290 MB/s with no callbacks at all (bench/reader
 * prints it beside this reader), below the 300 MB/s a 1 GB trace needs with
 * the checks on top; the faster parsers are not in Debian (yyjson, simdjson)
 * or are C++ (RapidJSON), and the C DOM parsers in Debian (json-c, jansson,
 * cJSON) hold the document. Trace JSON is mostly short keys, short strings
 * and numbers in flat objects, which a parser that knows the shape of an
 * event reads several times faster, while validating as strictly (RFC 8259
 * grammar, UTF-8 without overlongs or surrogates).
 *
 * Two parsers share the lexers (rd_lex.h, lex.c):
 *  - the document's outer structure (document.c, its keys in keys.c) goes
 *    through a small state machine with an explicit stack of frames that
 *    can stop between any two tokens: a token that does not end inside the
 *    window is scanned again once more input is in;
 *  - each traceEvents entry is parsed whole (event.c). An event that does
 *    not end inside the window is parsed again from its '{' once more input
 *    is in; the window grows (doubling, so that the rescans cost at most as
 *    much again) to hold an event of up to 256 MiB (read.c).
 */
#ifndef DT_RD_PARSE_H
#define DT_RD_PARSE_H

#include "reader/rd_internal.h"

/* What a frame (an open object or array of the outer structure) holds. */
enum role {
    R_TOP, /* before the root value */
    R_ROOT,
    R_EVENTS,
    R_DEVPROPS,
    R_DIST,
    R_DT,
    R_DT_WINDOW,
    R_DT_CLOCK,
    R_DT_RTC,
    R_DT_LOSS,
    R_DT_COUNTS,
    R_DT_ATTR,
    R_DT_PARENTS,
    R_DT_NOTES,
    R_SKIP
};

enum key {
    K_OTHER = 0,
    K_ANY, /* every key of a map (loss, counts, attribution, notes) */
    K_SCHEMA, K_DISPLAY, K_BASE, K_DEVPROPS, K_EVENTS, K_DEVTRACE, K_TRACENAME, K_DIST, K_HOST_NAME,
    K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS,
    K_EXT, K_CORR, K_BYTES, K_PARENT, K_DEVICE, K_STREAM, K_CBID, K_ANAME, K_LABELS, K_SORT, K_COLLECTIVE,
    K_MEM_BYTES, K_MEM_TOTAL, K_MEM_DEVICE, K_MEM_TYPE, K_ADDR,
    K_VERSION, K_BACKEND, K_VENDOR, K_LIBRARY, K_LIBVER, K_WINDOW, K_CLOCK, K_LOSS, K_COUNTS, K_ATTR, K_PARENTS,
    K_HOST, K_DTPID, K_RTC, K_NOTES, K_WRITER,
    K_START, K_END,
    K_SAMPLES, K_SEGMENTS, K_SLOPE, K_OFFSET, K_ERRB, K_IDENTITY,
    K_RANK, K_LOCAL_RANK, K_WORLD, K_LAUNCHER,
    K_CLOCKSOURCE, K_SYNC, K_MAXERR, K_ESTERR
};
/* Where the grammar is inside an open object or array. */
enum gstate {
    G_KEY_OR_END,   /* after '{' */
    G_KEY,          /* after ',' in an object */
    G_COLON,
    G_VALUE,        /* after ':' or after ',' in an array */
    G_VALUE_OR_END, /* after '[' */
    G_COMMA_OR_END
};

typedef struct dt_rd_frame {
    unsigned char role;
    unsigned char is_map;
    unsigned char key;
    unsigned char state;
} dt_rd_frame;

/* An event's strings, in the order of dt_rd_event's pointers. */
enum { S_PH, S_CAT, S_NAME, S_BP, S_ID, S_PID, S_TID, S_ANAME, S_LABELS, S_COUNT };

enum vtype { V_NUM, V_STR, V_BOOL, V_NULL, V_MAP, V_ARRAY };

typedef struct dt_rd_ctx {
    dt_rd_source *src;
    /* the JSON text window: data[0] is byte `base` of the input; data[len]
       is always NUL */
    unsigned char *data;
    size_t len, cap, pos;
    uint64_t base;
    bool eof;
    size_t tok_start; /* where the token (or event) being scanned starts */
    size_t tok_end;   /* just after the last complete token (for messages) */
    dt_rd_num num;    /* the number just scanned by the dt_rd_frame machine */
    /* decoded strings with escapes */
    char *tmp;
    size_t tmp_cap;

    dt_rd_frame stack[DT_RD_MAX_DEPTH + 1];
    int depth;
    bool root_seen, root_done;
    dt_rd_event ev;
    /* the event's strings: where they lie in the window (ptr, len), or,
       decoded or copied, at an offset in sb (the bit in in_sb) */
    const unsigned char *slot_ptr[S_COUNT];
    size_t slot_off[S_COUNT];
    uint32_t slot_len[S_COUNT];
    unsigned slot_set, slot_in_sb;
    char *sb;
    size_t sb_len, sb_cap;
    char *keybuf; /* key of the current map-of-values entry */
    size_t keybuf_cap, keybuf_len;
    dt_rd_summary *sum;
    const dt_rd_options *opt;
    bool raw; /* capture events' text */
    bool src_failed; /* the source failed after the text in the window */
    char src_err[480];
    int visit_rc;
    bool failed;
    char *err;
    size_t errlen;
} dt_rd_ctx;

enum { T_OK = 0, T_MORE = 1, T_ERR = -1 };

/* ---- errors (lex.c) ---- */
/* The JSON type t (enum vtype) in words, for messages. */
const char *dt__rd_vtype_name(int t);
/* Fails the parse with the message at the last complete token's offset
   (the first failure wins); returns 0. */
__attribute__((format(printf, 2, 3))) int dt__rd_fail(dt_rd_ctx *c, const char *fmt, ...);
/* An event key's value of the wrong type got (V_NUM: a number that does
   not fit); returns 0. */
int dt__rd_event_fail(dt_rd_ctx *c, const char *what, int got);
/* Invalid JSON at window offset at: T_ERR. */
int dt__rd_lex_error(dt_rd_ctx *c, size_t at, const char *what);
/* A scan stopped at q on what it found there. When the bytes it needed
   from q run past the window and the input goes on, that may be the
   window's NUL: T_MORE, to scan again with more text. Otherwise an error. */
int dt__rd_stop_at(dt_rd_ctx *c, const unsigned char *q, size_t need, const char *what);

/* ---- strings (lex.c) ---- */
/* The rest of a string from p, a byte the fast scan stopped at that is not
   its closing quote: escapes and UTF-8 validated. */
__attribute__((noinline)) int dt__rd_scan_string_slow(dt_rd_ctx *c, const unsigned char *p,
                                                     const unsigned char **close, bool *escaped);
/* The text of an escaped string [start, close) decoded into c->tmp, which
   keeps 16 readable bytes past it for word-wide key compares. */
int dt__rd_decode_string(dt_rd_ctx *c, const unsigned char *start, const unsigned char *close, const char **s,
                        size_t *len);

/* ---- the outer structure's values and keys (keys.c) ---- */
/* A value of the document's outer structure at the current position:
   scalars carry text, containers are announced with V_MAP / V_ARRAY (and
   then pushed by the caller). Returns the role of a container about to
   open, R_SKIP for an ignored one, or -1 after an error. */
int dt__rd_value(dt_rd_ctx *c, int type, const char *s, size_t len);
/* A container of type V_MAP or V_ARRAY opens: its frame pushed. 0 after an
   error. */
int dt__rd_open_value(dt_rd_ctx *c, int type);
/* The key of the innermost open object. 0 after an error. */
int dt__rd_key(dt_rd_ctx *c, const char *key, size_t len);

/* ---- entries parsed whole (event.c) ---- */
/* The traceEvents entry whose '{' is at c->pos, parsed whole and handed to
   the visitor: T_OK with c->pos past it; T_MORE with nothing changed but
   the event struct, when it does not end inside the window; T_ERR. */
int dt__rd_parse_event(dt_rd_ctx *c);
/* A deviceProperties entry whose '{' is at c->pos, read whole for the
   device callback: as dt__rd_parse_event. */
int dt__rd_parse_device(dt_rd_ctx *c);

/* ---- the outer structure (document.c) ---- */
/* Tokens until the window is exhausted (T_MORE), the input ends (T_OK) or
   an error (T_ERR). */
int dt__rd_parse(dt_rd_ctx *c);

#endif
