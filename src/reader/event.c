/*
 * A traceEvents entry parsed whole, by recursive descent over the window
 * straight into the event struct, its keys recognised by length and one
 * word compare; and a deviceProperties entry read whole for its callback.
 * An entry that does not end inside the window is parsed again from its
 * '{' once more input is in (T_MORE).
 */
#include "base/vec.h"
#include "reader/rd_lex.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The little-endian word of a literal's first bytes (up to 8): a constant
   expression, so that a key compares with one instruction. */
#define W_BYTE(lit, i) ((i) < sizeof(lit) - 1 ? (uint64_t)(unsigned char)(lit)[(i) < sizeof(lit) - 1 ? (i) : 0] << (8 * (i)) : 0)
#define W(lit)                                                                                                 \
    (W_BYTE(lit, 0) | W_BYTE(lit, 1) | W_BYTE(lit, 2) | W_BYTE(lit, 3) | W_BYTE(lit, 4) | W_BYTE(lit, 5) |    \
     W_BYTE(lit, 6) | W_BYTE(lit, 7))
#define LOW_BYTES(v, n) ((v) & (((uint64_t)1 << (8 * (n))) - 1))

/* The keys of every event, by length and one word compare (the key's
   bytes are followed by at least its closing quote and the slack). */
static inline int event_key(const unsigned char *k, size_t len)
{
    switch (len) {
    case 2: {
        uint64_t w = dt__rd_load16(k);
        if (w == W("ph")) return K_PH;
        if (w == W("ts")) return K_TS;
        if (w == W("id")) return K_ID;
        if (w == W("bp")) return K_BP;
        break;
    }
    case 3: {
        uint64_t w = LOW_BYTES((uint64_t)dt__rd_load32(k), 3);
        if (w == W("cat")) return K_CAT;
        if (w == W("pid")) return K_PID;
        if (w == W("tid")) return K_TID;
        if (w == W("dur")) return K_DUR;
        break;
    }
    case 4: {
        uint64_t w = dt__rd_load32(k);
        if (w == W("name")) return K_NAME;
        if (w == W("args")) return K_ARGS;
        break;
    }
    default:
        break;
    }
    return K_OTHER;
}

static inline int args_key(const unsigned char *k, size_t len)
{
    switch (len) {
    case 4: {
        uint64_t w = dt__rd_load32(k);
        if (w == W("cbid")) return K_CBID;
        if (w == W("name")) return K_ANAME;
        if (w == W("Addr")) return K_ADDR;
        break;
    }
    case 5: {
        uint64_t w = LOW_BYTES(dt__rd_load64(k), 5);
        if (w == W("bytes")) return K_BYTES;
        if (w == W("Bytes")) return K_MEM_BYTES;
        break;
    }
    case 9:
        if (dt__rd_load64(k) == W("Device I") && k[8] == 'd') return K_MEM_DEVICE;
        break;
    case 6: {
        uint64_t w = LOW_BYTES(dt__rd_load64(k), 6);
        if (w == W("stream")) return K_STREAM;
        if (w == W("device")) return K_DEVICE;
        if (w == W("parent")) return K_PARENT;
        if (w == W("labels")) return K_LABELS;
        break;
    }
    case 10:
        if (dt__rd_load64(k) == W("sort_ind") && dt__rd_load16(k + 8) == W("ex")) return K_SORT;
        break;
    case 11: {
        uint64_t w = dt__rd_load64(k), tail = LOW_BYTES((uint64_t)dt__rd_load32(k + 8), 3);
        if (w == W("External") && tail == W(" id")) return K_EXT;
        if (w == W("correlat") && tail == W("ion")) return K_CORR;
        if (w == W("Device T") && tail == W("ype")) return K_MEM_TYPE;
        break;
    }
    case 15:
        if (dt__rd_load64(k) == W("Collecti") && dt__rd_load64(k + 7) == W("ive name")) return K_COLLECTIVE;
        if (dt__rd_load64(k) == W("Total Al") && dt__rd_load64(k + 7) == W("llocated")) return K_MEM_TOTAL;
        break;
    default:
        break;
    }
    return K_OTHER;
}
#undef LOW_BYTES

/* Inside an event: a byte that the grammar does not allow at p. At the
   window's NUL that is the end of the text so far. */
static int ev_expected(dt_rd_ctx *c, const unsigned char *p, const char *what)
{
    if (p >= c->data + c->len)
        return c->eof ? dt__rd_lex_error(c, c->len, "the input ends inside an object or array") : T_MORE;
    return dt__rd_lex_error(c, (size_t)(p - c->data), what);
}

static int nesting_error(dt_rd_ctx *c, const unsigned char *p)
{
    c->tok_end = (size_t)(p + 1 - c->data);
    dt__rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH);
    return T_ERR;
}

/* The object key at *pp (its opening quote expected there, else the error
   `what`) and the ':' after it: the key's text, decoded when it has
   escapes, in *k and *len; *pp moves to the value. */
static inline __attribute__((always_inline)) int object_key(dt_rd_ctx *c, const unsigned char **pp,
                                                              const char *what, const unsigned char **k, size_t *len)
{
    const unsigned char *p = *pp, *close;
    bool escaped;
    *k = p; /* for the compiler: set again on success */
    *len = 0;
    if (*p != '"')
        return ev_expected(c, p, what);
    int rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
    if (rc != T_OK)
        return rc;
    *k = p + 1;
    *len = (size_t)(close - p - 1);
    if (__builtin_expect(escaped, 0)) {
        const char *s;
        if (dt__rd_decode_string(c, p + 1, close, &s, len) != T_OK)
            return T_ERR;
        *k = (const unsigned char *)s;
    }
    p = dt__rd_skip_ws(close + 1);
    if (*p != ':')
        return ev_expected(c, p, "':' expected after an object key");
    *pp = dt__rd_skip_ws(p + 1);
    return T_OK;
}

/* A scalar at p, validated: *after just past it. */
static inline __attribute__((always_inline)) int skip_scalar(dt_rd_ctx *c, const unsigned char *p,
                                                               const unsigned char **after)
{
    const unsigned char *close;
    bool escaped;
    dt_rd_num n;
    int rc;
    switch (*p) {
    case '"':
        rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
        if (rc == T_OK)
            *after = close + 1;
        return rc;
    case 't':
    case 'f':
    case 'n':
        return dt__rd_scan_word(c, p, after);
    default:
        if (*p == '-' || dt__rd_is_digit(*p))
            return dt_rd_scan_number(c, p, after, &n);
        return ev_expected(c, p, "a value expected");
    }
}

/* Any value at *pp, at nesting level `level` when it is a container:
   validated, nothing kept; *pp moves past it. */
static int skip_value(dt_rd_ctx *c, const unsigned char **pp, int level)
{
    const unsigned char *p = *pp;
    int rc;
    if (*p != '{' && *p != '[') {
        rc = skip_scalar(c, p, pp);
        return rc;
    }
    /* bit d of objects: whether the container open at depth d is an object */
    uint64_t objects = 0;
    int d = 0;
open:
    if (level + d > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    if (*p == '{')
        objects |= UINT64_C(1) << d;
    else
        objects &= ~(UINT64_C(1) << d);
    d++;
    p = dt__rd_skip_ws(p + 1);
    if (objects >> (d - 1) & 1) {
        if (*p == '}')
            goto close;
        goto key;
    }
    if (*p == ']')
        goto close;
    goto value;
key: {
    const unsigned char *k;
    size_t klen;
    if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
        return rc;
}
value:
    if (*p == '{' || *p == '[')
        goto open;
    rc = skip_scalar(c, p, &p);
    if (rc != T_OK)
        return rc;
after_value:
    p = dt__rd_skip_ws(p);
    if (*p == ',') {
        p = dt__rd_skip_ws(p + 1);
        if (objects >> (d - 1) & 1)
            goto key;
        goto value;
    }
    if (*p == ((objects >> (d - 1) & 1) ? '}' : ']'))
        goto close;
    return ev_expected(c, p, (objects >> (d - 1) & 1) ? "',' or '}' expected" : "',' or ']' expected");
close:
    p++;
    if (--d > 0)
        goto after_value;
    *pp = p;
    return T_OK;
}

/* The JSON type of the value at p, for messages; for a scalar, tok_end
   moves past it (the offset a type error names). */
static int value_type(dt_rd_ctx *c, const unsigned char *p, int *type)
{
    const unsigned char *after = p;
    switch (*p) {
    case '{':
    case '[':
        *type = *p == '{' ? V_MAP : V_ARRAY;
        c->tok_end = (size_t)(p + 1 - c->data);
        return T_OK;
    case '"': *type = V_STR; break;
    case 't':
    case 'f': *type = V_BOOL; break;
    case 'n': *type = V_NULL; break;
    default: *type = V_NUM; break;
    }
    int rc = skip_scalar(c, p, &after);
    if (rc == T_OK)
        c->tok_end = (size_t)(after - c->data);
    return rc;
}

/* A value of the wrong type for an event key: named with the type found
   (after the lexer had its say on the value itself). */
static int ev_type_error(dt_rd_ctx *c, const unsigned char *p, const char *what)
{
    int type, rc = value_type(c, p, &type);
    if (rc != T_OK)
        return rc;
    dt__rd_event_fail(c, what, type);
    return T_ERR;
}

static inline void set_slot(dt_rd_ctx *c, int slot, const unsigned char *s, size_t len)
{
    c->slot_ptr[slot] = s;
    c->slot_len[slot] = (uint32_t)len;
    c->slot_set |= 1u << slot;
    c->slot_in_sb &= ~(1u << slot);
}

/* Appends a string to sb; its offset in *off. */
static int sb_append(dt_rd_ctx *c, const void *s, size_t len, size_t *off)
{
    if (c->sb_len + len + 1 > c->sb_cap) {
        size_t cap = c->sb_cap ? c->sb_cap : 256;
        while (cap < c->sb_len + len + 1)
            cap *= 2;
        char *nb = realloc(c->sb, cap);
        if (!nb)
            return dt__rd_fail(c, "out of memory");
        c->sb = nb;
        c->sb_cap = cap;
    }
    *off = c->sb_len;
    memcpy(c->sb + c->sb_len, s, len);
    c->sb_len += len;
    c->sb[c->sb_len++] = '\0';
    return 1;
}

/* A string value's text into a slot: where it lies when it has no
   escapes, else decoded into sb. */
static int string_slot(dt_rd_ctx *c, int slot, const unsigned char *start, const unsigned char *close, bool escaped)
{
    if (!escaped) {
        set_slot(c, slot, start, (size_t)(close - start));
        return T_OK;
    }
    const char *s;
    size_t len;
    if (dt__rd_decode_string(c, start, close, &s, &len) != T_OK || !sb_append(c, s, len, &c->slot_off[slot]))
        return T_ERR;
    c->slot_len[slot] = (uint32_t)len;
    c->slot_set |= 1u << slot;
    c->slot_in_sb |= 1u << slot;
    return T_OK;
}

static inline void raw_span(dt_rd_ctx *c, const unsigned char *open, int which, const unsigned char *v,
                            const unsigned char *after)
{
    c->ev.at[which].off = (uint32_t)(v - open);
    c->ev.at[which].len = (uint32_t)(after - v);
}

/* One arg read leniently: a number, or a string holding an integer. */
static int int_arg(dt_rd_ctx *c, const unsigned char **pp, bool is_unsigned, int64_t *out, bool *ok)
{
    const unsigned char *p = *pp, *after;
    int rc;
    *ok = false;
    if (*p == '"') {
        const unsigned char *close;
        bool escaped;
        rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
        if (rc != T_OK)
            return rc;
        const char *s = (const char *)p + 1;
        size_t len = (size_t)(close - p - 1);
        if (escaped && dt__rd_decode_string(c, p + 1, close, &s, &len) != T_OK)
            return T_ERR;
        *ok = dt__rd_parse_int_text(s, len, out);
        if (*ok)
            c->ev.string_args++;
        after = close + 1;
    } else if (*p == '-' || dt__rd_is_digit(*p)) {
        dt_rd_num n;
        rc = dt_rd_scan_number(c, p, &after, &n);
        if (rc != T_OK)
            return rc;
        *ok = dt__rd_num_i64(&n, out);
    } else {
        return skip_value(c, pp, 0);
    }
    if (*ok && is_unsigned && *out < 0)
        *ok = false;
    *pp = after;
    return T_OK;
}

/* The args object at *pp ('{'), at nesting level `level`. */
static int parse_args(dt_rd_ctx *c, const unsigned char *open, const unsigned char **pp, int level)
{
    dt_rd_event *ev = &c->ev;
    const unsigned char *p = *pp;
    int rc;
    if (level > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    p = dt__rd_skip_ws(p + 1);
    if (*p == '}') {
        *pp = p + 1;
        return T_OK;
    }
    for (;;) {
        const unsigned char *k, *close;
        size_t klen;
        bool escaped;
        if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
            return rc;
        int key = args_key(k, klen);
        const unsigned char *v = p;
        uint64_t *u = NULL;
        int64_t *i = NULL;
        uint32_t bit = 0;
        int at = -1;
        switch (key) {
        case K_EXT: u = &ev->external_id; bit = DT_RD_HAS_EXTERNAL_ID; at = DT_RD_AT_EXT; break;
        case K_CORR: u = &ev->correlation; bit = DT_RD_HAS_CORRELATION; at = DT_RD_AT_CORR; break;
        case K_BYTES: u = &ev->bytes; bit = DT_RD_HAS_BYTES; break;
        case K_PARENT: u = &ev->parent; bit = DT_RD_HAS_PARENT; at = DT_RD_AT_PARENT; break;
        case K_DEVICE: i = &ev->device; bit = DT_RD_HAS_DEVICE; break;
        case K_STREAM: i = &ev->stream; bit = DT_RD_HAS_STREAM; break;
        case K_CBID: i = &ev->cbid; bit = DT_RD_HAS_CBID; break;
        case K_SORT: i = &ev->sort_index; bit = DT_RD_HAS_SORT_INDEX; break;
        case K_MEM_BYTES: i = &ev->mem_bytes; bit = DT_RD_HAS_MEM_BYTES; break;
        case K_MEM_TOTAL: i = &ev->mem_total; bit = DT_RD_HAS_MEM_TOTAL; break;
        case K_MEM_DEVICE: i = &ev->mem_device; bit = DT_RD_HAS_MEM_DEVICE; break;
        case K_MEM_TYPE: i = &ev->mem_type; bit = DT_RD_HAS_MEM_TYPE; break;
        case K_ADDR: u = &ev->addr; bit = DT_RD_HAS_ADDR; break;
        case K_ANAME:
        case K_LABELS:
            /* Only metadata events' name/labels matter; elsewhere any type goes. */
            if (*p == '"') {
                rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, key == K_ANAME ? S_ANAME : S_LABELS, p + 1, close,
                                                    escaped)) != T_OK)
                    return rc;
                ev->has |= key == K_ANAME ? DT_RD_HAS_ARG_NAME : DT_RD_HAS_ARG_LABELS;
                p = close + 1;
            } else if ((rc = skip_value(c, &p, level + 1)) != T_OK) {
                return rc;
            }
            break;
        case K_COLLECTIVE:
            /* a collective, whatever the writer typed its name as */
            ev->has |= DT_RD_HAS_COLLECTIVE;
            /* fall through */
        default:
            if (*p == '{' || *p == '[')
                rc = skip_value(c, &p, level + 1);
            else
                rc = skip_scalar(c, p, &p);
            if (rc != T_OK)
                return rc;
            break;
        }
        if (bit) {
            int64_t val;
            bool ok;
            if (*p == '{' || *p == '[') {
                if ((rc = skip_value(c, &p, level + 1)) != T_OK)
                    return rc;
                ok = false;
            } else if ((rc = int_arg(c, &p, u != NULL, &val, &ok)) != T_OK) {
                return rc;
            }
            if (ok) {
                if (u)
                    *u = (uint64_t)val;
                else
                    *i = val;
                ev->has |= bit;
                if (c->raw && at >= 0)
                    raw_span(c, open, at, v, p);
            } else {
                ev->odd_args |= bit;
            }
        }
        p = dt__rd_skip_ws(p);
        if (*p == ',') {
            p = dt__rd_skip_ws(p + 1);
            continue;
        }
        if (*p == '}')
            break;
        return ev_expected(c, p, "',' or '}' expected");
    }
    *pp = p + 1;
    return T_OK;
}

/* The category of a "cat", by length and word compares: every category
   Kineto writes (libkineto's ActivityType names, and the ones of its
   releases before PyTorch 1.10: Kernel, Memcpy, Memset, Runtime, Operator,
   User, and the flows async_gpu and async_cpu_to_gpu) that devtrace has a
   kind for; docs/trace-format.md lists them. */
static int classify_cat(const unsigned char *s, size_t len);

int dt__rd_classify_cat(const char *s, size_t len)
{
    return classify_cat((const unsigned char *)s, len);
}

static int classify_cat(const unsigned char *s, size_t len)
{
#define CAT_IS(lit) (len == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)
    /* (the text is NUL-terminated: the eighth byte read is there) */
    if (len >= 7 && (dt__rd_load64(s + len - 7) & UINT64_C(0x00FFFFFFFFFFFFFF)) == W("_driver"))
        return DT_RD_CAT_DRIVER;
    if (len >= 8 && dt__rd_load64(s + len - 8) == W("_runtime"))
        return DT_RD_CAT_RUNTIME;
    switch (len) {
    case 4: return CAT_IS("ac2g") ? DT_RD_CAT_AC2G : CAT_IS("User") ? DT_RD_CAT_GPU_USER_ANNOTATION : DT_RD_CAT_OTHER;
    case 5: return CAT_IS("Trace") ? DT_RD_CAT_TRACE : DT_RD_CAT_OTHER;
    case 6:
        return CAT_IS("kernel") || CAT_IS("Kernel") ? DT_RD_CAT_KERNEL
               : CAT_IS("cpu_op")                  ? DT_RD_CAT_CPU_OP
               : CAT_IS("Memcpy")                  ? DT_RD_CAT_MEMCPY
               : CAT_IS("Memset")                  ? DT_RD_CAT_MEMSET
                                                   : DT_RD_CAT_OTHER;
    case 7: return CAT_IS("Runtime") ? DT_RD_CAT_RUNTIME : DT_RD_CAT_OTHER;
    case 8:
        return CAT_IS("overhead") ? DT_RD_CAT_OVERHEAD
               : CAT_IS("xpu_sync") ? DT_RD_CAT_SYNC
               : CAT_IS("Operator") ? DT_RD_CAT_CPU_OP
                                    : DT_RD_CAT_OTHER;
    case 9:
        return CAT_IS("cuda_sync") ? DT_RD_CAT_SYNC : CAT_IS("async_gpu") ? DT_RD_CAT_AC2G : DT_RD_CAT_OTHER;
    case 10:
        return CAT_IS("gpu_memcpy") ? DT_RD_CAT_MEMCPY : CAT_IS("gpu_memset") ? DT_RD_CAT_MEMSET : DT_RD_CAT_OTHER;
    case 15:
        return CAT_IS("user_annotation")   ? DT_RD_CAT_USER_ANNOTATION
               : CAT_IS("python_function") ? DT_RD_CAT_PYTHON_FUNCTION
               /* MTIA's device work: kernels and DMA (named dma_*) */
               : CAT_IS("mtia_ccp_events") ? DT_RD_CAT_KERNEL
                                           : DT_RD_CAT_OTHER;
    case 16: return CAT_IS("async_cpu_to_gpu") ? DT_RD_CAT_AC2G : DT_RD_CAT_OTHER;
    case 17: return CAT_IS("cpu_instant_event") ? DT_RD_CAT_CPU_INSTANT : DT_RD_CAT_OTHER;
    case 19: return CAT_IS("gpu_user_annotation") ? DT_RD_CAT_GPU_USER_ANNOTATION : DT_RD_CAT_OTHER;
    default: return DT_RD_CAT_OTHER;
    }
#undef CAT_IS
}

int dt__rd_count_unclassified(dt_rd_summary *sum, const char *cat, size_t len)
{
    dt_rd_kvlist *l = &sum->unclassified;
    /* the last one met first: a trace's unclassified events come in runs */
    for (size_t k = l->count; k-- > 0;) {
        if (strlen(l->items[k].key) == len && memcmp(l->items[k].key, cat, len) == 0) {
            l->items[k].value++;
            return 0;
        }
    }
    if (l->count == DT_RD_UNCLASSIFIED_MAX) {
        sum->unclassified_more++;
        return 0;
    }
    if (dt__vec_reserve_zeroed((void **)&l->items, &l->cap, l->count + 1, sizeof *l->items) != 0)
        return -1;
    char *key = malloc(len + 1);
    if (!key)
        return -1;
    memcpy(key, cat, len);
    key[len] = '\0';
    l->items[l->count++] = (dt_rd_kv){key, 1};
    l->present = true;
    return 0;
}

/* The event's strings, NUL-terminated, into its pointers: where they lie
   (over their closing quote), or, with DT_RD_RAW, copied to sb. */
static int finish_strings(dt_rd_ctx *c)
{
    dt_rd_event *ev = &c->ev;
    if (c->raw) {
        for (int k = 0; k < S_COUNT; k++) {
            unsigned bit = 1u << k;
            if ((c->slot_set & bit) && !(c->slot_in_sb & bit)) {
                if (!sb_append(c, c->slot_ptr[k], c->slot_len[k], &c->slot_off[k]))
                    return T_ERR;
                c->slot_in_sb |= bit;
            }
        }
    }
    const char *s[S_COUNT] = {"", "", "", "", "", "", "", "", ""};
    for (unsigned bits = c->slot_set; bits; bits &= bits - 1) {
        int k = __builtin_ctz(bits);
        if (c->slot_in_sb & (1u << k)) {
            s[k] = c->sb + c->slot_off[k];
        } else {
            /* the byte after the text is its closing quote, or the
               delimiter after a number: parsed already */
            unsigned char *t = (unsigned char *)(uintptr_t)c->slot_ptr[k];
            t[c->slot_len[k]] = '\0';
            s[k] = (const char *)t;
        }
    }
    ev->ph = s[S_PH];
    ev->cat = s[S_CAT];
    ev->name = s[S_NAME];
    ev->bp = s[S_BP];
    ev->id = s[S_ID];
    ev->pid.str = ev->pid.is_str ? s[S_PID] : NULL;
    ev->tid.str = ev->tid.is_str ? s[S_TID] : NULL;
    ev->arg_name = s[S_ANAME];
    ev->arg_labels = s[S_LABELS];
    ev->cat_len = (c->slot_set & (1u << S_CAT)) ? c->slot_len[S_CAT] : 0;
    ev->cat_kind = classify_cat((const unsigned char *)ev->cat, ev->cat_len);
    ev->name_len = (c->slot_set & (1u << S_NAME)) ? c->slot_len[S_NAME] : 0;
    return T_OK;
}

#undef W
#undef W_BYTE

/* The traceEvents entry whose '{' is at c->pos, parsed whole and handed to
   the visitor: T_OK with c->pos past it; T_MORE with nothing changed but
   the event struct, when it does not end inside the window; T_ERR. */
int dt__rd_parse_event(dt_rd_ctx *c)
{
    const unsigned char *const open = c->data + c->pos;
    const unsigned char *p = open, *close;
    dt_rd_event *ev = &c->ev;
    const int level = c->depth + 1;
    bool escaped, after_comma = false;
    int rc;
    /* the typed args from grid on are the Perfetto reader's: left as they are */
    memset(ev, 0, c->raw ? offsetof(dt_rd_event, grid) : offsetof(dt_rd_event, raw));
    c->slot_set = c->slot_in_sb = 0;
    c->sb_len = 0;
    ev->index = c->sum->event_count;
    ev->offset = c->base + c->pos;
    if (level > DT_RD_MAX_DEPTH)
        return nesting_error(c, p);
    p = dt__rd_skip_ws(p + 1);
    if (*p == '}')
        goto done;
    for (;;) {
        const unsigned char *k;
        size_t klen;
        if ((rc = object_key(c, &p, after_comma ? "an object key must follow ','" : "an object key or '}' expected",
                             &k, &klen)) != T_OK)
            return rc;
        int key = event_key(k, klen);
        const unsigned char *v = p, *after;
        switch (key) {
        case K_PH:
        case K_CAT:
        case K_NAME:
        case K_BP: {
            static const char *const what[] = {[K_PH] = "\"ph\" must be a string", [K_CAT] = "\"cat\" must be a string",
                                               [K_NAME] = "\"name\" must be a string", [K_BP] = "\"bp\" must be a string"};
            static const unsigned char slot[] = {[K_PH] = S_PH, [K_CAT] = S_CAT, [K_NAME] = S_NAME, [K_BP] = S_BP};
            if (*p != '"')
                return ev_type_error(c, p, what[key]);
            rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
            if (rc != T_OK || (rc = string_slot(c, slot[key], p + 1, close, escaped)) != T_OK)
                return rc;
            p = close + 1;
            break;
        }
        case K_PID:
        case K_TID: {
            dt_rd_id *id = key == K_PID ? &ev->pid : &ev->tid;
            const char *what = key == K_PID ? "\"pid\" must be an integer or a string"
                                            : "\"tid\" must be an integer or a string";
            id->present = true;
            if (*p == '"') {
                rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, key == K_PID ? S_PID : S_TID, p + 1, close, escaped)) != T_OK)
                    return rc;
                id->is_str = true;
                after = close + 1;
            } else if (*p == '-' || dt__rd_is_digit(*p)) {
                dt_rd_num n;
                rc = dt_rd_scan_number(c, p, &after, &n);
                if (rc != T_OK)
                    return rc;
                if (!dt__rd_num_i64(&n, &id->num)) {
                    c->tok_end = (size_t)(after - c->data);
                    dt__rd_event_fail(c, what, V_NUM);
                    return T_ERR;
                }
                id->is_str = false;
            } else {
                return ev_type_error(c, p, what);
            }
            if (c->raw)
                raw_span(c, open, key == K_PID ? DT_RD_AT_PID : DT_RD_AT_TID, v, after);
            p = after;
            break;
        }
        case K_TS:
        case K_DUR: {
            const char *what = key == K_TS ? "\"ts\" must be a number of microseconds that fits"
                                           : "\"dur\" must be a number of microseconds that fits";
            if (*p != '-' && !dt__rd_is_digit(*p))
                return ev_type_error(c, p, what);
            dt_rd_num n;
            rc = dt_rd_scan_number(c, p, &after, &n);
            if (rc != T_OK)
                return rc;
            if (!dt__rd_num_us_to_ns(&n, (const char *)p, (size_t)(after - p), key == K_TS ? &ev->ts_ns : &ev->dur_ns)) {
                c->tok_end = (size_t)(after - c->data);
                dt__rd_event_fail(c, what, V_NUM);
                return T_ERR;
            }
            ev->has |= key == K_TS ? DT_RD_HAS_TS : DT_RD_HAS_DUR;
            if (c->raw)
                raw_span(c, open, key == K_TS ? DT_RD_AT_TS : DT_RD_AT_DUR, v, after);
            p = after;
            break;
        }
        case K_ID:
            if (*p == '"') {
                rc = dt__rd_scan_string(c, p + 1, &close, &escaped);
                if (rc != T_OK || (rc = string_slot(c, S_ID, p + 1, close, escaped)) != T_OK)
                    return rc;
                ev->id_is_str = true;
                after = close + 1;
            } else if (*p == '-' || dt__rd_is_digit(*p)) {
                dt_rd_num n;
                rc = dt_rd_scan_number(c, p, &after, &n);
                if (rc != T_OK)
                    return rc;
                /* the number's text; the byte after it is a delimiter */
                set_slot(c, S_ID, p, (size_t)(after - p));
                ev->id_is_str = false;
            } else {
                return ev_type_error(c, p, "\"id\" must be a number or a string");
            }
            ev->has |= DT_RD_HAS_ID;
            if (c->raw)
                raw_span(c, open, DT_RD_AT_ID, v, after);
            p = after;
            break;
        case K_ARGS:
            if (*p != '{')
                return ev_type_error(c, p, "\"args\" must be an object");
            if (c->raw) {
                ev->at[DT_RD_AT_ARGS].off = (uint32_t)(p - open);
                ev->at[DT_RD_AT_ARGS].len = 1;
            }
            rc = parse_args(c, open, &p, level + 1);
            if (rc != T_OK)
                return rc;
            break;
        default:
            rc = skip_value(c, &p, level + 1);
            if (rc != T_OK)
                return rc;
            break;
        }
        p = dt__rd_skip_ws(p);
        if (*p == ',') {
            p = dt__rd_skip_ws(p + 1);
            after_comma = true;
            continue;
        }
        if (*p == '}')
            break;
        return ev_expected(c, p, "',' or '}' expected");
    }
done:
    p++;
    if (c->raw) {
        ev->raw = (const char *)open;
        ev->raw_len = (size_t)(p - open);
    }
    if (finish_strings(c) != T_OK)
        return T_ERR;
    c->pos = c->tok_end = (size_t)(p - c->data);
    c->sum->event_count++;
    if (ev->cat_kind == DT_RD_CAT_OTHER && ev->cat_len && dt__rd_count_unclassified(c->sum, ev->cat, ev->cat_len) != 0)
        return dt__rd_fail(c, "out of memory");
    if (c->opt && c->opt->visit) {
        rc = c->opt->visit(c->opt->user, ev);
        if (rc != 0) {
            c->visit_rc = rc;
            return T_ERR;
        }
    }
    return T_OK;
}

/* A deviceProperties entry whose '{' is at c->pos, read whole for the
   device callback: validated, its top-level "id" located. T_OK with c->pos
   past it, T_MORE with nothing changed, T_ERR. */
int dt__rd_parse_device(dt_rd_ctx *c)
{
    const unsigned char *const open = c->data + c->pos;
    const unsigned char *p = dt__rd_skip_ws(open + 1);
    dt_rd_span id = {0, 0};
    int rc;
    if (c->depth + 1 > DT_RD_MAX_DEPTH)
        return nesting_error(c, open);
    if (*p != '}') {
        for (;;) {
            const unsigned char *k;
            size_t klen;
            if ((rc = object_key(c, &p, "an object key expected", &k, &klen)) != T_OK)
                return rc;
            bool is_id = klen == 2 && k[0] == 'i' && k[1] == 'd';
            const unsigned char *v = p;
            if ((rc = skip_value(c, &p, c->depth + 2)) != T_OK)
                return rc;
            if (is_id && (*v == '-' || dt__rd_is_digit(*v))) {
                id.off = (uint32_t)(v - open);
                id.len = (uint32_t)(p - v);
            }
            p = dt__rd_skip_ws(p);
            if (*p == ',') {
                p = dt__rd_skip_ws(p + 1);
                continue;
            }
            if (*p == '}')
                break;
            return ev_expected(c, p, "',' or '}' expected");
        }
    }
    p++;
    c->pos = c->tok_end = (size_t)(p - c->data);
    c->sum->device_count++;
    rc = c->opt->device(c->opt->user, (const char *)open, (size_t)(p - open), id);
    if (rc != 0) {
        c->visit_rc = rc;
        return T_ERR;
    }
    return T_OK;
}
