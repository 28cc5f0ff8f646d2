/*
 * Scenario parser. One statement per line; blocks open with `{` at the end
 * of a line and close with a line holding `}`. `#` starts a comment outside
 * quotes. Values are numbers, bare words or "quoted strings" (\" and \\).
 */
#include "scenario.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devtrace_emu.h"

#define SCN_MAX_TOKENS 32
#define SCN_MAX_DEPTH 32

typedef struct token {
    char *key;    /* for key=value; NULL for a bare token */
    char *value;  /* the bare token, or the value */
    int quoted;   /* the value was a quoted string */
} token;

typedef struct parser {
    const char *label;
    int line;
    char *err;
    size_t errlen;
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (p->err && p->errlen)
        snprintf(p->err, p->errlen, "%s:%d: %s", p->label, p->line, msg);
    return -1;
}

/* Split one line in place. Returns the token count or -1. */
static int tokenize(parser *p, char *s, token *toks, int *opens_block)
{
    int n = 0;
    *opens_block = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (!*s || *s == '#')
            break;
        if (*opens_block)
            return fail(p, "nothing may follow '{' on a line");
        if (*s == '{') {
            *opens_block = 1;
            s++;
            continue;
        }
        if (n == SCN_MAX_TOKENS)
            return fail(p, "too many words on one line");
        token *t = &toks[n++];
        t->key = NULL;
        t->quoted = 0;
        char *start = s;
        /* key=value or a bare word; either part may be quoted (value only) */
        if (*s != '"') {
            while (*s && *s != ' ' && *s != '\t' && *s != '=' && *s != '{' && *s != '"' && *s != '#')
                s++;
            if (*s == '=') {
                *s++ = '\0';
                t->key = start;
                start = s;
            } else if (*s == '"') {
                return fail(p, "unexpected '\"'");
            }
        }
        if (*s == '"') {
            char *w = ++s;
            start = w;
            for (;;) {
                if (!*s)
                    return fail(p, "unterminated string");
                if (*s == '\\' && (s[1] == '"' || s[1] == '\\')) {
                    *w++ = s[1];
                    s += 2;
                    continue;
                }
                if (*s == '"')
                    break;
                *w++ = *s++;
            }
            s++;
            *w = '\0';
            t->quoted = 1;
            if (*s && *s != ' ' && *s != '\t' && *s != '{' && *s != '#' && *s != '\r')
                return fail(p, "a space must follow a quoted string");
            t->value = start;
            if (*s == ' ' || *s == '\t')
                s++;
            else if (*s == '{' || *s == '#' || *s == '\r') {
                /* handled by the loop */
            }
            continue;
        }
        while (*s && *s != ' ' && *s != '\t' && *s != '{' && *s != '#' && *s != '\r')
            s++;
        char c = *s;
        *s = '\0';
        t->value = start;
        if (c == '{') {
            *opens_block = 1;
            s++;
        } else if (c == '#') {
            break;
        } else if (c) {
            s++;
        }
        if (t->key && !*t->value)
            return fail(p, "'%s=' needs a value", t->key);
    }
    return n;
}

static int parse_u64(parser *p, const char *what, const char *v, uint64_t *out)
{
    if (!*v || *v == '-')
        return fail(p, "%s: '%s' is not a non-negative integer", what, v);
    errno = 0;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end)
        return fail(p, "%s: '%s' is not a non-negative integer", what, v);
    *out = x;
    return 0;
}

static int parse_i64(parser *p, const char *what, const char *v, int64_t *out)
{
    errno = 0;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (!*v || errno || *end)
        return fail(p, "%s: '%s' is not an integer", what, v);
    *out = x;
    return 0;
}

static int parse_int(parser *p, const char *what, const char *v, int lo, int hi, int *out)
{
    int64_t x;
    if (parse_i64(p, what, v, &x) != 0)
        return -1;
    if (x < lo || x > hi)
        return fail(p, "%s: %lld is outside [%d, %d]", what, (long long)x, lo, hi);
    *out = (int)x;
    return 0;
}

static int parse_dims(parser *p, const char *what, const char *v, int dims[3])
{
    dims[0] = dims[1] = dims[2] = 1;
    char buf[64];
    if (strlen(v) >= sizeof(buf))
        return fail(p, "%s: too long", what);
    strcpy(buf, v);
    char *save = NULL;
    int i = 0;
    for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        if (i == 3)
            return fail(p, "%s: at most three dimensions", what);
        if (parse_int(p, what, part, 1, 0x7fffffff, &dims[i]) != 0)
            return -1;
        i++;
    }
    if (i == 0)
        return fail(p, "%s: needs x[,y[,z]]", what);
    return 0;
}

static int parse_duration(parser *p, const token *t, uint64_t *ns, int *seen)
{
    uint64_t v, mul;
    if (strcmp(t->key, "dur_ns") == 0)
        mul = 1;
    else if (strcmp(t->key, "dur_us") == 0)
        mul = 1000;
    else if (strcmp(t->key, "dur_ms") == 0)
        mul = 1000000;
    else
        return 1; /* not a duration */
    if (parse_u64(p, t->key, t->value, &v) != 0)
        return -1;
    if (v > UINT64_MAX / mul)
        return fail(p, "%s: too large", t->key);
    *ns = v * mul;
    *seen = 1;
    return 0;
}

static int copy_kind_of(const char *v)
{
    static const struct { const char *name; int kind; } kinds[] = {
        { "htod", EMU_COPY_HTOD }, { "dtoh", EMU_COPY_DTOH }, { "dtod", EMU_COPY_DTOD },
        { "htoh", EMU_COPY_HTOH }, { "ptop", EMU_COPY_PTOP },
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kinds[i].name, v) == 0)
            return kinds[i].kind;
    return 0;
}

static scn_stmt *block_add(scn_block *b)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        scn_stmt *items = realloc(b->items, cap * sizeof(*items));
        if (!items)
            return NULL;
        b->items = items;
        b->cap = cap;
    }
    scn_stmt *s = &b->items[b->n++];
    memset(s, 0, sizeof(*s));
    return s;
}

/* HCCL's numbering of data types, by the names scenarios use; -1: none. */
static int data_type_of(const char *name)
{
    static const char *const names[] = {"int8", "int16", "int32", "fp16", "fp32", "int64", "uint64", "uint8",
                                        "uint16", "uint32", "fp64", "bf16"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

/* Parse the key=value words of a device statement into s. */
static int parse_device_args(parser *p, scn_stmt *s, token *toks, int n, int allow_all)
{
    int have_device = 0, have_stream = 0, have_dur = 0, have_bytes = 0, have_kind = 0;
    for (int i = 1; i < n; i++) {
        token *t = &toks[i];
        if (!t->key) {
            if (strcmp(t->value, "async") == 0 && (s->type == SCN_MEMCPY || s->type == SCN_MEMSET)) {
                s->async = 1;
                continue;
            }
            return fail(p, "unexpected word '%s'", t->value);
        }
        int r;
        if (strcmp(t->key, "device") == 0) {
            r = parse_int(p, "device", t->value, allow_all ? -1 : 0, EMU_MAX_DEVICES - 1, &s->device);
            have_device = 1;
        } else if (strcmp(t->key, "stream") == 0) {
            r = parse_int(p, "stream", t->value, 0, EMU_MAX_STREAMS - 1, &s->stream);
            have_stream = 1;
        } else if ((r = parse_duration(p, t, &s->duration_ns, &have_dur)) != 1) {
            if (r == 0 && s->type == SCN_SYNC)
                return fail(p, "sync takes no duration");
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "name") == 0) {
            free(s->name);
            s->name = strdup(t->value);
            r = s->name ? 0 : fail(p, "out of memory");
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "grid") == 0) {
            r = parse_dims(p, "grid", t->value, s->grid);
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "block") == 0) {
            r = parse_dims(p, "block", t->value, s->block);
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "regs") == 0) {
            int v = 0;
            r = parse_int(p, "regs", t->value, 0, 65536, &v);
            s->registers = (uint32_t)v;
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "smem") == 0) {
            r = parse_int(p, "smem", t->value, 0, 0x7fffffff, &s->static_smem);
        } else if (s->type == SCN_KERNEL && strcmp(t->key, "dsmem") == 0) {
            r = parse_int(p, "dsmem", t->value, 0, 0x7fffffff, &s->dynamic_smem);
        } else if ((s->type == SCN_MEMCPY || s->type == SCN_MEMSET) && strcmp(t->key, "bytes") == 0) {
            r = parse_u64(p, "bytes", t->value, &s->bytes);
            have_bytes = 1;
        } else if (s->type == SCN_MEMCPY && strcmp(t->key, "kind") == 0) {
            s->copy_kind = copy_kind_of(t->value);
            r = s->copy_kind ? 0 : fail(p, "kind: '%s' is not htod, dtoh, dtod, htoh or ptop", t->value);
            have_kind = 1;
        } else if (s->type == SCN_COLLECTIVE && (strcmp(t->key, "name") == 0 || strcmp(t->key, "group") == 0 ||
                                                 strcmp(t->key, "algorithm") == 0)) {
            char **dst = t->key[0] == 'n' ? &s->name : t->key[0] == 'g' ? &s->group : &s->algorithm;
            free(*dst);
            *dst = strdup(t->value);
            r = *dst ? 0 : fail(p, "out of memory");
        } else if (s->type == SCN_COLLECTIVE && strcmp(t->key, "count") == 0) {
            r = parse_u64(p, "count", t->value, &s->count);
        } else if (s->type == SCN_COLLECTIVE && strcmp(t->key, "dtype") == 0) {
            s->data_type = data_type_of(t->value);
            r = s->data_type >= 0 ? 0 : fail(p, "dtype: '%s' is not one of int8 int16 int32 fp16 fp32 int64 "
                                                "uint64 uint8 uint16 uint32 fp64 bf16", t->value);
        } else if (s->type == SCN_MEMSET && strcmp(t->key, "value") == 0) {
            uint64_t v;
            r = parse_u64(p, "value", t->value, &v);
            if (r == 0 && v > UINT32_MAX)
                r = fail(p, "value: too large");
            s->value = (uint32_t)v;
        } else {
            return fail(p, "unknown argument '%s'", t->key);
        }
        if (r < 0)
            return -1;
    }
    if (!have_device)
        return fail(p, "device= is required");
    if (s->type != SCN_SYNC && !have_stream)
        return fail(p, "stream= is required");
    if (s->type == SCN_SYNC && !have_stream)
        s->stream = -1;
    if (s->type != SCN_SYNC && !have_dur)
        return fail(p, "a duration (dur_ns=, dur_us= or dur_ms=) is required");
    if ((s->type == SCN_MEMCPY || s->type == SCN_MEMSET) && !have_bytes)
        return fail(p, "bytes= is required");
    if (s->type == SCN_MEMCPY && !have_kind)
        return fail(p, "kind= is required");
    if (s->type == SCN_SYNC && s->device < 0 && have_stream)
        return fail(p, "stream= needs a device");
    return 0;
}

static int parse_fault(parser *p, scn_stmt *s, token *toks, int n)
{
    if (n != 3 || toks[1].key || !toks[2].key || strcmp(toks[2].key, "count") != 0)
        return fail(p, "usage: fault NAME count=N");
    /* the names of emu_fault, in order (the runner links no emulator) */
    static const char *const names[EMU_FAULT_COUNT] = {
        "zero_timestamps", "reversed_timestamps", "long_timestamps", "malformed",
        "unknown_kind",    "late",                "out_of_order",    "no_callbacks",
        "vendor_dropped",  "no_buffer",
    };
    int known = 0;
    for (int f = 0; f < EMU_FAULT_COUNT; f++)
        if (strcmp(names[f], toks[1].value) == 0)
            known = 1;
    if (!known)
        return fail(p, "unknown fault '%s'", toks[1].value);
    uint64_t count;
    if (parse_u64(p, "count", toks[2].value, &count) != 0)
        return -1;
    char spec[96];
    snprintf(spec, sizeof(spec), "%s=%llu", toks[1].value, (unsigned long long)count);
    s->fault_spec = strdup(spec);
    return s->fault_spec ? 0 : fail(p, "out of memory");
}

/* The vendors of src/backends/vendors.def, each with an emulator personality. */
static const char *const vendors[] = {
#define DT_VENDOR(name, ...) #name,
#include "backends/vendors.def"
#undef DT_VENDOR
};

static int known_vendor(const char *name)
{
    for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
        if (strcmp(vendors[i], name) == 0)
            return 1;
    return 0;
}

static const char *vendor_names(void)
{
    static char list[256];
    if (!list[0])
        for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof(list) - used, " %s", vendors[i]);
        }
    return list;
}

int scn_parse_string(const char *text, const char *label, scenario *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->vendor, sizeof(out->vendor), "topspti");
    parser p = { label ? label : "<scenario>", 0, err, errlen };
    if (err && errlen)
        err[0] = '\0';
    scn_block *stack[SCN_MAX_DEPTH];
    scn_type stack_type[SCN_MAX_DEPTH];
    int stack_line[SCN_MAX_DEPTH];
    int depth = 0;
    stack[0] = &out->top;
    stack_type[0] = SCN_THREAD;
    stack_line[0] = 0;
    int in_thread = 0;

    const char *cur = text;
    char line[4096];
    int rc = 0;
    while (*cur && rc == 0) {
        const char *nl = strchr(cur, '\n');
        size_t len = nl ? (size_t)(nl - cur) : strlen(cur);
        p.line++;
        if (len >= sizeof(line)) {
            rc = fail(&p, "line too long");
            break;
        }
        memcpy(line, cur, len);
        line[len] = '\0';
        cur = nl ? nl + 1 : cur + len;

        token toks[SCN_MAX_TOKENS];
        int opens = 0;
        int n = tokenize(&p, line, toks, &opens);
        if (n < 0) {
            rc = -1;
            break;
        }
        if (n == 0 && !opens)
            continue;
        if (n == 1 && !toks[0].key && !toks[0].quoted && strcmp(toks[0].value, "}") == 0) {
            if (depth == 0) {
                rc = fail(&p, "'}' without an open block");
                break;
            }
            if (stack_type[depth] == SCN_THREAD)
                in_thread = 0;
            depth--;
            continue;
        }
        if (n == 0 || toks[0].key || toks[0].quoted) {
            rc = fail(&p, "a statement must start with a keyword");
            break;
        }
        const char *kw = toks[0].value;
        int is_block = strcmp(kw, "thread") == 0 || strcmp(kw, "range") == 0 || strcmp(kw, "marker") == 0 ||
                       strcmp(kw, "op") == 0 || strcmp(kw, "repeat") == 0 || strcmp(kw, "fork") == 0;
        if (is_block && !opens) {
            rc = fail(&p, "'%s' needs a block: end the line with '{'", kw);
            break;
        }
        if (!is_block && opens) {
            rc = fail(&p, "'%s' does not open a block", kw);
            break;
        }
        /* global settings: top level only */
        if (strcmp(kw, "vendor") == 0 || strcmp(kw, "clock") == 0 || strcmp(kw, "devices") == 0) {
            if (depth != 0) {
                rc = fail(&p, "'%s' is allowed at the top level only", kw);
                break;
            }
            if (strcmp(kw, "vendor") == 0) {
                if (n != 2 || toks[1].key || !known_vendor(toks[1].value)) {
                    rc = fail(&p, "usage: vendor NAME (one of:%s)", vendor_names());
                    break;
                }
                snprintf(out->vendor, sizeof(out->vendor), "%s", toks[1].value);
            } else if (strcmp(kw, "devices") == 0) {
                if (n != 2 || toks[1].key) {
                    rc = fail(&p, "usage: devices N");
                    break;
                }
                rc = parse_int(&p, "devices", toks[1].value, 1, EMU_MAX_DEVICES, &out->devices);
            } else {
                out->has_clock = 1;
                for (int i = 1; i < n && rc == 0; i++) {
                    if (toks[i].key && strcmp(toks[i].key, "offset_ns") == 0) {
                        rc = parse_i64(&p, "offset_ns", toks[i].value, &out->clock_offset_ns);
                    } else if (toks[i].key && strcmp(toks[i].key, "drift_ppm") == 0) {
                        char *end = NULL;
                        out->clock_drift_ppm = strtod(toks[i].value, &end);
                        if (*end || !isfinite(out->clock_drift_ppm) ||
                            fabs(out->clock_drift_ppm) >= 1e6)
                            rc = fail(&p, "drift_ppm: '%s' is not a number in (-1e6, 1e6)", toks[i].value);
                    } else {
                        rc = fail(&p, "usage: clock offset_ns=N drift_ppm=X");
                    }
                }
            }
            continue;
        }
        scn_stmt *s = block_add(stack[depth]);
        if (!s) {
            rc = fail(&p, "out of memory");
            break;
        }
        s->line = p.line;
        if (strcmp(kw, "kernel") == 0) {
            s->type = SCN_KERNEL;
            s->grid[0] = s->grid[1] = s->grid[2] = 1;
            s->block[0] = s->block[1] = s->block[2] = 1;
            rc = parse_device_args(&p, s, toks, n, 0);
            if (rc == 0 && !s->name)
                rc = fail(&p, "name= is required");
        } else if (strcmp(kw, "memcpy") == 0) {
            s->type = SCN_MEMCPY;
            rc = parse_device_args(&p, s, toks, n, 0);
        } else if (strcmp(kw, "memset") == 0) {
            s->type = SCN_MEMSET;
            rc = parse_device_args(&p, s, toks, n, 0);
        } else if (strcmp(kw, "collective") == 0) {
            s->type = SCN_COLLECTIVE;
            s->data_type = 4; /* fp32 */
            rc = parse_device_args(&p, s, toks, n, 0);
            if (rc == 0 && (!s->name || !s->count))
                rc = fail(&p, "name= and count= are required");
        } else if (strcmp(kw, "malloc") == 0) {
            s->type = SCN_MALLOC;
            int have_device = 0;
            for (int i = 1; i < n && rc == 0; i++) {
                if (!toks[i].key && strcmp(toks[i].value, "pinned") == 0) {
                    s->pinned = 1;
                } else if (toks[i].key && strcmp(toks[i].key, "device") == 0) {
                    rc = parse_int(&p, "device", toks[i].value, 0, EMU_MAX_DEVICES - 1, &s->device);
                    have_device = 1;
                } else if (toks[i].key && strcmp(toks[i].key, "bytes") == 0) {
                    rc = parse_u64(&p, "bytes", toks[i].value, &s->bytes);
                } else {
                    rc = fail(&p, "usage: malloc device=D bytes=N [pinned]");
                }
            }
            if (rc == 0 && (!have_device || !s->bytes))
                rc = fail(&p, "malloc: device= and bytes= (> 0) are required");
        } else if (strcmp(kw, "free") == 0) {
            s->type = SCN_FREE;
            if (n != 1)
                rc = fail(&p, "usage: free (the thread's latest allocation not yet freed)");
        } else if (strcmp(kw, "sync") == 0) {
            s->type = SCN_SYNC;
            if (n == 1) {
                s->device = -1;
                s->stream = -1;
            } else {
                rc = parse_device_args(&p, s, toks, n, 1);
            }
        } else if (strcmp(kw, "step") == 0) {
            s->type = SCN_STEP;
            if (n != 1)
                rc = fail(&p, "usage: step");
        } else if (strcmp(kw, "sleep_us") == 0) {
            s->type = SCN_SLEEP;
            rc = n == 2 && !toks[1].key ? parse_u64(&p, "sleep_us", toks[1].value, &s->number)
                                        : fail(&p, "usage: sleep_us N");
        } else if (strcmp(kw, "join") == 0) {
            s->type = SCN_JOIN;
            if (n != 1)
                rc = fail(&p, "usage: join");
            else if (depth != 0)
                rc = fail(&p, "'join' is allowed at the top level only");
        } else if (strcmp(kw, "fault") == 0) {
            s->type = SCN_FAULT;
            rc = parse_fault(&p, s, toks, n);
        } else if (strcmp(kw, "range") == 0 || strcmp(kw, "thread") == 0 || strcmp(kw, "marker") == 0) {
            s->type = kw[0] == 'r' ? SCN_RANGE : kw[0] == 't' ? SCN_THREAD : SCN_MARKER;
            if (n != 2 || toks[1].key)
                rc = fail(&p, "usage: %s \"name\" {", kw);
            else if (s->type == SCN_THREAD && (depth != 0 || in_thread))
                rc = fail(&p, "threads are started from the top level only");
            else if (!(s->name = strdup(toks[1].value)))
                rc = fail(&p, "out of memory");
        } else if (strcmp(kw, "fork") == 0) {
            s->type = SCN_FORK;
            if (n != 1)
                rc = fail(&p, "usage: fork {");
        } else if (strcmp(kw, "op") == 0 || strcmp(kw, "repeat") == 0) {
            s->type = kw[0] == 'o' ? SCN_OP : SCN_REPEAT;
            rc = n == 2 && !toks[1].key ? parse_u64(&p, kw, toks[1].value, &s->number)
                                        : fail(&p, "usage: %s N {", kw);
        } else {
            rc = fail(&p, "unknown statement '%s'", kw);
        }
        if (rc == 0 && is_block) {
            if (depth + 1 >= SCN_MAX_DEPTH) {
                rc = fail(&p, "blocks nested too deeply");
                break;
            }
            depth++;
            stack[depth] = &s->body;
            stack_type[depth] = s->type;
            stack_line[depth] = p.line;
            if (s->type == SCN_THREAD)
                in_thread = 1;
        }
    }
    if (rc == 0 && depth != 0) {
        p.line = stack_line[depth];
        rc = fail(&p, "block opened here is not closed");
    }
    if (rc != 0)
        scn_free(out);
    return rc;
}

int scn_parse_file(const char *path, scenario *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    int rc = -1;
    if (!text)
        goto done;
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= (64u << 20)) {
                snprintf(err, errlen, "%s: larger than 64 MiB", path);
                goto done;
            }
            char *nt = realloc(text, cap * 2);
            if (!nt)
                goto done;
            text = nt;
            cap *= 2;
        }
        size_t got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        goto done;
    }
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: contains a NUL byte", path);
        goto done;
    }
    text[len] = '\0';
    rc = scn_parse_string(text, path, out, err, errlen);
done:
    if (rc != 0 && text && err[0] == '\0')
        snprintf(err, errlen, "%s: out of memory", path);
    free(text);
    fclose(f);
    return rc;
}

static void block_free(scn_block *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->items[i].name);
        free(b->items[i].fault_spec);
        free(b->items[i].group);
        free(b->items[i].algorithm);
        block_free(&b->items[i].body);
    }
    free(b->items);
    b->items = NULL;
    b->n = b->cap = 0;
}

void scn_free(scenario *s)
{
    block_free(&s->top);
}

uint64_t scn_count(const scn_block *b, scn_type type)
{
    uint64_t n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const scn_stmt *s = &b->items[i];
        if (s->type == type)
            n++;
        uint64_t inner = scn_count(&s->body, type);
        n += s->type == SCN_REPEAT ? inner * s->number : inner;
    }
    return n;
}
