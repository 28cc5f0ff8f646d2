/*
 * The document's keys outside traceEvents: the top-level scalars, the
 * devtrace object and its maps, distributedInfo, collected into the
 * dt_rd_summary as the frame machine (document.c) meets them.
 */
#include "reader/rd_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Short compares: a call to memcmp costs more than comparing the short keys
   and words traces use. */
static inline bool bytes_equal(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}


typedef struct key_entry {
    unsigned char key;
    unsigned char len;
    const char *name;
} key_entry;

#define KEY(key, name) {key, sizeof(name) - 1, name}

static const key_entry keys_root[] = {
    KEY(K_SCHEMA, "schemaVersion"), KEY(K_DISPLAY, "displayTimeUnit"), KEY(K_BASE, "baseTimeNanoseconds"),
    KEY(K_DEVPROPS, "deviceProperties"), KEY(K_EVENTS, "traceEvents"), KEY(K_DEVTRACE, "devtrace"),
    KEY(K_TRACENAME, "traceName"), KEY(K_DIST, "distributedInfo"), KEY(K_HOST_NAME, "host_name"),
};

static const key_entry keys_dist[] = {
    KEY(K_RANK, "rank"), KEY(K_LOCAL_RANK, "local_rank"), KEY(K_WORLD, "world_size"), KEY(K_HOST, "host"),
    KEY(K_LAUNCHER, "launcher"),
};

static const key_entry keys_dt[] = {
    KEY(K_VERSION, "version"), KEY(K_BACKEND, "backend"), KEY(K_VENDOR, "vendor"), KEY(K_LIBRARY, "library"),
    KEY(K_LIBVER, "libraryVersion"), KEY(K_WINDOW, "captureWindow"), KEY(K_CLOCK, "clock"), KEY(K_LOSS, "loss"),
    KEY(K_COUNTS, "counts"), KEY(K_ATTR, "attribution"), KEY(K_PARENTS, "externalParents"), KEY(K_HOST, "host"),
    KEY(K_DTPID, "pid"), KEY(K_RTC, "realtimeClock"), KEY(K_NOTES, "notes"), KEY(K_WRITER, "writer"),
};

static const key_entry keys_dt_window[] = {
    KEY(K_START, "startNs"),
    KEY(K_END, "endNs"),
};

static const key_entry keys_dt_clock[] = {
    KEY(K_SAMPLES, "samples"), KEY(K_SEGMENTS, "segments"), KEY(K_SLOPE, "slope"),
    KEY(K_OFFSET, "offsetNs"), KEY(K_ERRB, "errorBoundNs"), KEY(K_IDENTITY, "identity"),
};

static const key_entry keys_dt_rtc[] = {
    KEY(K_CLOCKSOURCE, "clocksource"), KEY(K_SYNC, "synchronized"), KEY(K_MAXERR, "maxErrorUs"),
    KEY(K_ESTERR, "estErrorUs"),
};

#undef KEY

#define KEYS(a) {a, sizeof a / sizeof a[0]}
/* The keys that matter, per kind of object; every other key is skipped.
   Events and their args, read millions of times, have their own lookups
   (event_key, args_key). */
static const struct {
    const key_entry *keys;
    size_t count;
} role_keys[R_SKIP + 1] = {
    [R_ROOT] = KEYS(keys_root),
    [R_DIST] = KEYS(keys_dist),
    [R_DT] = KEYS(keys_dt),
    [R_DT_WINDOW] = KEYS(keys_dt_window),
    [R_DT_CLOCK] = KEYS(keys_dt_clock),
    [R_DT_RTC] = KEYS(keys_dt_rtc),
};
#undef KEYS

static char *dupn(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static int set_summary_str(dt_rd_ctx *c, char **dst, const char *s, size_t len)
{
    free(*dst);
    *dst = dupn(s, len);
    if (!*dst)
        return dt__rd_fail(c, "out of memory");
    return 1;
}

static int kv_add(dt_rd_ctx *c, dt_rd_kvlist *l, int64_t v)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        dt_rd_kv *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return dt__rd_fail(c, "out of memory");
        l->items = items;
        l->cap = cap;
    }
    char *k = dupn(c->keybuf ? c->keybuf : "", c->keybuf_len);
    if (!k)
        return dt__rd_fail(c, "out of memory");
    l->items[l->count].key = k;
    l->items[l->count].value = v;
    l->count++;
    return 1;
}

static int note_add(dt_rd_ctx *c, const char *s, size_t len)
{
    dt_rd_notes *l = &c->sum->notes;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        dt_rd_note *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return dt__rd_fail(c, "out of memory");
        l->items = items;
        l->cap = cap;
    }
    char *k = dupn(c->keybuf ? c->keybuf : "", c->keybuf_len), *v = dupn(s, len);
    if (!k || !v) {
        free(k);
        free(v);
        return dt__rd_fail(c, "out of memory");
    }
    l->items[l->count].key = k;
    l->items[l->count].text = v;
    l->count++;
    return 1;
}

/* distributedInfo's "rank" that is no rank: kept as written (a string
   quoted, at most 40 bytes of it, unprintable bytes as '?') or named, for
   the commands that say so. R_SKIP, or -1 out of memory. */
static int unusable_rank(dt_rd_ctx *c, int type, const char *s, size_t len)
{
    char text[64];
    size_t n = len > 40 ? 40 : len;
    if (type == V_MAP || type == V_ARRAY || type == V_NULL) {
        snprintf(text, sizeof text, "%s", type == V_MAP ? "an object" : type == V_ARRAY ? "an array" : "null");
    } else if (type == V_BOOL) {
        snprintf(text, sizeof text, "%s", len ? "true" : "false");
    } else {
        size_t o = 0;
        if (type == V_STR) text[o++] = '"';
        for (size_t i = 0; i < n; i++)
            text[o++] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
        if (n < len) o += (size_t)snprintf(text + o, sizeof text - o, "...");
        if (type == V_STR) text[o++] = '"';
        text[o] = 0;
    }
    c->sum->has_rank = false;
    return set_summary_str(c, &c->sum->unusable_rank, text, strlen(text)) ? R_SKIP : -1;
}

/* A value of the document's outer structure at the current position:
   scalars carry text, containers are announced with V_MAP / V_ARRAY (and
   then pushed by the caller). Returns the role of a container about to
   open, R_SKIP for an ignored one, or -1 after an error. Events are parsed
   by dt__rd_parse_event, not here. */
int dt__rd_value(dt_rd_ctx *c, int type, const char *s, size_t len)
{
    if (c->depth == 0) {
        if (type != V_MAP) {
            dt__rd_fail(c, "the top level is %s, not an object", dt__rd_vtype_name(type));
            return -1;
        }
        c->root_seen = true;
        return R_ROOT;
    }
    dt_rd_frame *f = &c->stack[c->depth - 1];
    dt_rd_summary *sum = c->sum;
    int container = type == V_MAP || type == V_ARRAY;
    const dt_rd_num *num = &c->num;
    switch (f->role) {
    case R_SKIP:
        return R_SKIP;
    case R_ROOT:
        switch (f->key) {
        case K_SCHEMA:
            if (type != V_NUM || !dt__rd_num_i64(num, &sum->schema_version)) {
                dt__rd_fail(c, "\"schemaVersion\" must be an integer");
                return -1;
            }
            sum->has_schema_version = true;
            return R_SKIP;
        case K_DISPLAY:
            if (type != V_STR) {
                dt__rd_fail(c, "\"displayTimeUnit\" must be a string, not %s", dt__rd_vtype_name(type));
                return -1;
            }
            sum->has_display_time_unit = true;
            return set_summary_str(c, &sum->display_time_unit, s, len) ? R_SKIP : -1;
        case K_BASE:
            if (type != V_NUM || !dt__rd_num_i64(num, &sum->base_time_ns)) {
                dt__rd_fail(c, "\"baseTimeNanoseconds\" must be an integer");
                return -1;
            }
            sum->has_base_time = true;
            return R_SKIP;
        case K_DEVPROPS:
            if (type != V_ARRAY) {
                dt__rd_fail(c, "\"deviceProperties\" must be an array, not %s", dt__rd_vtype_name(type));
                return -1;
            }
            sum->has_device_properties = true;
            return R_DEVPROPS;
        case K_EVENTS:
            if (type != V_ARRAY) {
                dt__rd_fail(c, "\"traceEvents\" must be an array, not %s", dt__rd_vtype_name(type));
                return -1;
            }
            if (sum->has_trace_events) {
                dt__rd_fail(c, "\"traceEvents\" appears twice");
                return -1;
            }
            sum->has_trace_events = true;
            return R_EVENTS;
        case K_DEVTRACE:
            if (type != V_MAP) {
                dt__rd_fail(c, "\"devtrace\" must be an object, not %s", dt__rd_vtype_name(type));
                return -1;
            }
            sum->has_devtrace = true;
            return R_DT;
        case K_DIST:
            /* Kineto's own distributedInfo has other keys; a foreign shape is
               skipped rather than refused. */
            if (type != V_MAP)
                return R_SKIP;
            sum->has_distributed_info = true;
            return R_DIST;
        case K_TRACENAME:
            if (type != V_STR) {
                dt__rd_fail(c, "\"traceName\" must be a string, not %s", dt__rd_vtype_name(type));
                return -1;
            }
            return set_summary_str(c, &sum->trace_name, s, len) ? R_SKIP : -1;
        case K_HOST_NAME: /* torch.profiler's */
            if (type != V_STR)
                return R_SKIP;
            return set_summary_str(c, &sum->host_name, s, len) ? R_SKIP : -1;
        default:
            return R_SKIP;
        }
    case R_EVENTS:
        /* an object goes to dt__rd_parse_event */
        dt__rd_fail(c, "traceEvents[%" PRIu64 "] must be an object, not %s", sum->event_count, dt__rd_vtype_name(type));
        return -1;
    case R_DEVPROPS:
        if (type != V_MAP) {
            dt__rd_fail(c, "deviceProperties[%zu] must be an object, not %s", sum->device_count,
                       dt__rd_vtype_name(type));
            return -1;
        }
        sum->device_count++;
        return R_SKIP;
    case R_DIST: {
        int64_t v;
        switch (f->key) {
        case K_RANK:
        case K_LOCAL_RANK:
        case K_WORLD:
            if ((type != V_NUM && type != V_STR) ||
                !(type == V_NUM ? dt__rd_num_i64(num, &v) : dt__rd_parse_int_text(s, len, &v)))
                return f->key == K_RANK ? unusable_rank(c, type, s, len) : R_SKIP;
            if (f->key == K_RANK) {
                sum->has_rank = true;
                sum->rank = v;
                free(sum->unusable_rank);
                sum->unusable_rank = NULL;
            } else if (f->key == K_LOCAL_RANK) {
                sum->local_rank = v;
            } else {
                sum->world_size = v;
            }
            return R_SKIP;
        case K_HOST:
        case K_LAUNCHER:
            if (type != V_STR)
                return R_SKIP;
            return set_summary_str(c, f->key == K_HOST ? &sum->rank_host : &sum->launcher, s, len) ? R_SKIP : -1;
        default:
            return R_SKIP;
        }
    }
    case R_DT:
        switch (f->key) {
        case K_VERSION:
        case K_BACKEND:
        case K_VENDOR:
        case K_LIBRARY:
        case K_LIBVER:
        case K_WRITER:
        case K_HOST: {
            char **dst = f->key == K_VERSION   ? &sum->version
                         : f->key == K_WRITER  ? &sum->writer
                         : f->key == K_BACKEND ? &sum->backend
                         : f->key == K_VENDOR  ? &sum->vendor
                         : f->key == K_LIBRARY ? &sum->library
                         : f->key == K_HOST    ? &sum->host
                                               : &sum->library_version;
            if (type != V_STR) {
                if (container)
                    return R_SKIP;
                /* e.g. libraryVersion written as a number: keep its text */
                if (type != V_NUM)
                    return R_SKIP;
            }
            return set_summary_str(c, dst, s, len) ? R_SKIP : -1;
        }
        case K_DTPID:
            if (type == V_NUM && dt__rd_num_i64(num, &sum->pid))
                sum->has_pid = true;
            return R_SKIP;
        case K_RTC:
            if (type != V_MAP)
                return R_SKIP;
            sum->has_realtime_clock = true;
            return R_DT_RTC;
        case K_NOTES:
            return type == V_MAP ? R_DT_NOTES : R_SKIP;
        case K_WINDOW:
        case K_CLOCK:
        case K_LOSS:
        case K_COUNTS:
        case K_ATTR:
        case K_PARENTS:
            if (type != V_MAP) {
                static const char *const names[] = {[K_WINDOW] = "captureWindow", [K_CLOCK] = "clock",
                                                    [K_LOSS] = "loss", [K_COUNTS] = "counts",
                                                    [K_ATTR] = "attribution", [K_PARENTS] = "externalParents"};
                dt__rd_fail(c, "\"devtrace.%s\" must be an object, not %s", names[f->key], dt__rd_vtype_name(type));
                return -1;
            }
            switch (f->key) {
            case K_WINDOW: return R_DT_WINDOW;
            case K_CLOCK: sum->has_clock = true; return R_DT_CLOCK;
            case K_LOSS: sum->loss.present = true; return R_DT_LOSS;
            case K_COUNTS: sum->counts.present = true; return R_DT_COUNTS;
            case K_PARENTS: sum->external_parents.present = true; return R_DT_PARENTS;
            default: sum->attribution.present = true; return R_DT_ATTR;
            }
        default:
            return R_SKIP;
        }
    case R_DT_WINDOW:
        if (f->key == K_START || f->key == K_END) {
            int64_t *dst = f->key == K_START ? &sum->window_start_ns : &sum->window_end_ns;
            if (type != V_NUM || !dt__rd_num_i64(num, dst)) {
                dt__rd_fail(c, "\"devtrace.captureWindow.%s\" must be an integer",
                           f->key == K_START ? "startNs" : "endNs");
                return -1;
            }
            if (f->key == K_START)
                sum->has_window_start = true;
            else
                sum->has_window_end = true;
        }
        return R_SKIP;
    case R_DT_CLOCK: {
        if (type == V_BOOL && f->key == K_IDENTITY) {
            sum->clock_identity = len == 1;
            return R_SKIP;
        }
        double v;
        if (type != V_NUM || !dt__rd_parse_double(s, len, &v))
            return R_SKIP;
        switch (f->key) {
        case K_SAMPLES: sum->clock_samples = dt__rd_clamp_i64(v); break;
        case K_SEGMENTS: sum->clock_segments = dt__rd_clamp_i64(v); break;
        case K_SLOPE: sum->clock_slope = v; break;
        case K_OFFSET: sum->clock_offset_ns = v; break;
        case K_ERRB: sum->clock_error_bound_ns = v; break;
        default: break;
        }
        return R_SKIP;
    }
    case R_DT_RTC:
        switch (f->key) {
        case K_CLOCKSOURCE:
            return type == V_STR ? (set_summary_str(c, &sum->clocksource, s, len) ? R_SKIP : -1) : R_SKIP;
        case K_SYNC:
            if (type == V_BOOL) {
                sum->has_host_sync = true;
                sum->host_synchronized = len == 1;
            }
            return R_SKIP;
        case K_MAXERR:
        case K_ESTERR: {
            int64_t v;
            if (type == V_NUM && dt__rd_num_i64(num, &v)) {
                if (f->key == K_MAXERR) {
                    sum->has_host_max_error = true;
                    sum->host_max_error_us = v;
                } else {
                    sum->host_est_error_us = v;
                }
            }
            return R_SKIP;
        }
        default:
            return R_SKIP;
        }
    case R_DT_NOTES:
        if (type != V_STR)
            return R_SKIP;
        return note_add(c, s, len) ? R_SKIP : -1;
    case R_DT_LOSS:
    case R_DT_COUNTS:
    case R_DT_ATTR:
    case R_DT_PARENTS: {
        static const char *const names[] = {[R_DT_LOSS] = "loss", [R_DT_COUNTS] = "counts",
                                            [R_DT_ATTR] = "attribution", [R_DT_PARENTS] = "externalParents"};
        int64_t v;
        if (type != V_NUM || !dt__rd_num_i64(num, &v)) {
            dt__rd_fail(c, "\"devtrace.%s\" values must be integers (\"%s\" is %s)", names[f->role],
                       c->keybuf ? c->keybuf : "", type == V_NUM ? "not an integer" : dt__rd_vtype_name(type));
            return -1;
        }
        if ((f->role == R_DT_ATTR || f->role == R_DT_PARENTS) && c->opt && c->opt->entry) {
            int rc = c->opt->entry(c->opt->user, f->role == R_DT_ATTR ? DT_RD_ATTRIBUTION : DT_RD_EXTERNAL_PARENTS,
                                   c->keybuf ? c->keybuf : "", c->keybuf_len, v);
            if (rc != 0) {
                c->visit_rc = rc;
                dt__rd_fail(c, "stopped by the caller");
                return -1;
            }
            return R_SKIP;
        }
        dt_rd_kvlist *l = f->role == R_DT_LOSS     ? &sum->loss
                          : f->role == R_DT_COUNTS ? &sum->counts
                          : f->role == R_DT_ATTR   ? &sum->attribution
                                                   : &sum->external_parents;
        return kv_add(c, l, v) ? R_SKIP : -1;
    }
    default:
        return R_SKIP;
    }
}

int dt__rd_open_value(dt_rd_ctx *c, int type)
{
    int role = dt__rd_value(c, type, NULL, 0);
    if (role < 0)
        return 0;
    if (c->depth >= DT_RD_MAX_DEPTH)
        return dt__rd_fail(c, "nesting deeper than %d levels", DT_RD_MAX_DEPTH);
    dt_rd_frame *f = &c->stack[c->depth++];
    f->role = (unsigned char)role;
    f->is_map = type == V_MAP;
    f->key = K_OTHER;
    f->state = type == V_MAP ? G_KEY_OR_END : G_VALUE_OR_END;
    return 1;
}

static bool is_map_of_values(int role)
{
    return role == R_DT_LOSS || role == R_DT_COUNTS || role == R_DT_ATTR || role == R_DT_PARENTS ||
           role == R_DT_NOTES;
}

int dt__rd_key(dt_rd_ctx *c, const char *key, size_t len)
{
    dt_rd_frame *f = &c->stack[c->depth - 1];
    f->key = K_OTHER;
    if (f->role == R_SKIP)
        return 1;
    if (is_map_of_values(f->role)) {
        if (len + 1 > c->keybuf_cap) {
            char *nb = realloc(c->keybuf, len + 1);
            if (!nb)
                return dt__rd_fail(c, "out of memory");
            c->keybuf = nb;
            c->keybuf_cap = len + 1;
        }
        memcpy(c->keybuf, key, len);
        c->keybuf[len] = '\0';
        c->keybuf_len = len;
        f->key = K_ANY;
        return 1;
    }
    const key_entry *keys = role_keys[f->role].keys;
    size_t n = role_keys[f->role].count;
    for (size_t i = 0; i < n; i++) {
        if (keys[i].len == len && len > 0 && keys[i].name[0] == key[0] && bytes_equal(keys[i].name, key, len)) {
            f->key = keys[i].key;
            break;
        }
    }
    return 1;
}


void dt__rd_summary_free(dt_rd_summary *s)
{
    if (!s)
        return;
    free(s->display_time_unit);
    free(s->trace_name);
    free(s->host_name);
    free(s->writer);
    free(s->version);
    free(s->backend);
    free(s->vendor);
    free(s->library);
    free(s->library_version);
    free(s->host);
    free(s->clocksource);
    free(s->rank_host);
    free(s->unusable_rank);
    free(s->launcher);
    dt_rd_kvlist *lists[] = {&s->loss, &s->counts, &s->attribution, &s->external_parents, &s->unclassified};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
        for (size_t i = 0; i < lists[l]->count; i++)
            free(lists[l]->items[i].key);
        free(lists[l]->items);
    }
    for (size_t i = 0; i < s->notes.count; i++) {
        free(s->notes.items[i].key);
        free(s->notes.items[i].text);
    }
    free(s->notes.items);
    memset(s, 0, sizeof *s);
}
