/*
 * The Perfetto protobuf traces devtrace writes (src/format/pf_trace.c),
 * read back as the event stream the JSON of the same session gives, so
 * that `stats` and `check` run the same code on both:
 *  - track descriptors become process_name / process_sort_index /
 *    process_labels / thread_name metadata;
 *  - a slice (BEGIN ... END on its track) becomes a complete event "X"
 *    when it ends, with its name, category and the args the reader knows
 *    (docs/trace-format.md), typed: grid and block (arrays of three
 *    integers), the collective and its process group (strings, interned or
 *    not) included; a zero-length [memory] slice an instant "i";
 *  - its flows become "s" (flow_ids) and "f" (terminating_flow_ids)
 *    events at its start;
 *  - the "devtrace capture" slice's args "devtrace.*" fill the summary as
 *    the JSON's devtrace key does (loss, backend, window, clock).
 * One packet is held at a time; memory follows the tracks, the sequences'
 * interned strings and the open slices, never the number of events.
 * A truncated or corrupt stream stops with a message naming the byte.
 */
#include "base/vec.h"
#include "reader/rd_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PR_MAX_PACKET (256u << 20)
#define PR_MAX_DEPTH 4096

enum { TAB_NAME, TAB_CATEGORY, TAB_ARG, TAB_VALUE, TAB_COUNT };

typedef struct pr_strs {
    dt_u64map ix; /* iid -> index + 1 */
    char **s;
    size_t n, cap;
} pr_strs;

typedef struct pr_seq {
    uint64_t track;
    uint64_t last_ts;
    bool incremental; /* timestamps on the sequence's incremental clock by default */
    pr_strs tab[TAB_COUNT];
} pr_seq;

typedef struct pr_open {
    dt_rd_event e; /* args, ts; strings below */
    char *name, *cat;
    char *collective, *group; /* e.collective and e.group, when their bits are set */
} pr_open;

typedef struct pr_track {
    int64_t pid, tid;
    pr_open *open;
    size_t depth, cap;
} pr_track;

typedef struct pr {
    dt_rd_source *src;
    const dt_rd_options *opt;
    dt_rd_summary *sum;
    char *err;
    size_t errlen;
    unsigned char *buf;
    size_t cap, len, pos;
    uint64_t base; /* input offset of buf[0] */
    bool eof;
    dt_u64map track_ix, seq_ix; /* uuid / sequence id -> index + 1 */
    pr_track *tracks;
    size_t ntracks, tracks_cap;
    pr_seq *seqs;
    size_t nseqs, seqs_cap;
    uint64_t index;
    uint64_t packet_off;
    bool capture_seen;
    int visit_rc;
} pr;

__attribute__((format(printf, 2, 3))) static int fail(pr *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "byte %" PRIu64 ": %sPerfetto trace: %s", r->packet_off,
             r->sum->compressed ? "gzip " : "", msg);
    return -1;
}

/* ---- input ---- */
static int need_bytes(pr *r, size_t n)
{
    while (r->len - r->pos < n) {
        if (r->eof)
            return 1;
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, r->len - r->pos);
            r->base += r->pos;
            r->len -= r->pos;
            r->pos = 0;
        }
        if (r->cap - r->len < (1u << 16) || r->cap < n) {
            size_t cap = r->cap ? r->cap * 2 : (1u << 20);
            while (cap < n + (1u << 16))
                cap *= 2;
            unsigned char *nb = realloc(r->buf, cap);
            if (!nb)
                return fail(r, "out of memory");
            r->buf = nb;
            r->cap = cap;
        }
        long got = dt__rd_src_read(r->src, r->buf + r->len, r->cap - r->len, r->err, r->errlen);
        if (got < 0)
            return -1;
        if (got == 0)
            r->eof = true;
        r->len += (size_t)got;
    }
    return 0;
}

/* ---- wire ---- */
typedef struct pr_cur {
    const unsigned char *p, *end;
    bool bad;
} pr_cur;

static uint64_t cur_varint(pr_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            c->bad = true;
            return 0;
        }
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            return v;
    }
    c->bad = true;
    return 0;
}

/* One field: its number and wire type, and its value (varint / fixed
   in *v, length-delimited in *sub). false at the end or when malformed
   (c->bad). */
static bool cur_field(pr_cur *c, unsigned *field, unsigned *wt, uint64_t *v, pr_cur *sub)
{
    if (c->bad || c->p >= c->end)
        return false;
    uint64_t tag = cur_varint(c);
    *field = (unsigned)(tag >> 3);
    *wt = (unsigned)(tag & 7);
    *v = 0;
    switch (*wt) {
    case 0:
        *v = cur_varint(c);
        break;
    case 1:
        if (c->end - c->p < 8) {
            c->bad = true;
            return false;
        }
        memcpy(v, c->p, 8);
        c->p += 8;
        break;
    case 5: {
        uint32_t x;
        if (c->end - c->p < 4) {
            c->bad = true;
            return false;
        }
        memcpy(&x, c->p, 4);
        *v = x;
        c->p += 4;
        break;
    }
    case 2: {
        uint64_t n = cur_varint(c);
        if (c->bad || n > (uint64_t)(c->end - c->p)) {
            c->bad = true;
            return false;
        }
        sub->p = c->p;
        sub->end = c->p + n;
        sub->bad = false;
        c->p += n;
        break;
    }
    default:
        c->bad = true;
        return false;
    }
    return !c->bad && tag >> 3 != 0;
}

static char *dup_bytes(const pr_cur *s)
{
    size_t n = (size_t)(s->end - s->p);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s->p, n);
        d[n] = '\0';
    }
    return d;
}

/* ---- tables ---- */
static int64_t index_of(dt_u64map *m, void **vec, size_t *n, size_t *cap, size_t elem, uint64_t key,
                        bool create)
{
    uint64_t v;
    if (dt__u64map_get(m, key, &v))
        return (int64_t)v - 1;
    if (!create)
        return -1;
    if (dt__vec_reserve_zeroed(vec, cap, *n + 1, elem) != 0)
        return -2;
    uint64_t *slot = dt__u64map_slot(m, key, NULL);
    if (!slot)
        return -2;
    *slot = ++*n;
    return (int64_t)*n - 1;
}

static pr_track *track_of(pr *r, uint64_t uuid)
{
    int64_t i = index_of(&r->track_ix, (void **)&r->tracks, &r->ntracks, &r->tracks_cap, sizeof *r->tracks, uuid,
                         false);
    return i < 0 ? NULL : &r->tracks[i];
}

static void strs_clear(pr_strs *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    dt__u64map_free(&t->ix);
    memset(t, 0, sizeof *t);
}

static const char *strs_get(const pr_strs *t, uint64_t iid)
{
    uint64_t v;
    return dt__u64map_get(&t->ix, iid, &v) ? t->s[v - 1] : NULL;
}

/* ---- events ---- */
static int visit(pr *r, dt_rd_event *e)
{
    e->index = r->index++;
    e->offset = r->packet_off;
    if (!e->cat)
        e->cat = "";
    if (!e->name)
        e->name = "";
    if (!e->bp)
        e->bp = "";
    if (!e->id)
        e->id = "";
    if (!e->arg_name)
        e->arg_name = "";
    if (!e->arg_labels)
        e->arg_labels = "";
    e->cat_len = (uint32_t)strlen(e->cat);
    e->name_len = (uint32_t)strlen(e->name);
    e->cat_kind = dt__rd_classify_cat(e->cat, e->cat_len);
    r->sum->event_count++;
    if (e->cat_kind == DT_RD_CAT_OTHER && e->cat_len && dt__rd_count_unclassified(r->sum, e->cat, e->cat_len) != 0)
        return fail(r, "out of memory");
    if (!r->opt || !r->opt->visit)
        return 0;
    int rc = r->opt->visit(r->opt->user, e);
    if (rc)
        r->visit_rc = rc;
    return rc;
}

static int meta_event(pr *r, const char *what, int64_t pid, int64_t tid, const char *name, const char *labels,
                      bool has_sort, int64_t sort)
{
    dt_rd_event e;
    memset(&e, 0, sizeof e);
    e.ph = "M";
    e.name = what;
    e.pid = (dt_rd_id){true, false, pid, NULL};
    e.tid = (dt_rd_id){true, false, tid, NULL};
    e.arg_name = name;
    e.arg_labels = labels;
    e.has = (name ? DT_RD_HAS_ARG_NAME : 0) | (labels ? DT_RD_HAS_ARG_LABELS : 0) |
            (has_sort ? DT_RD_HAS_SORT_INDEX : 0);
    e.sort_index = sort;
    return visit(r, &e);
}

static int descriptor(pr *r, pr_cur d)
{
    unsigned f, wt;
    uint64_t v, uuid = 0;
    pr_cur sub, proc = {0}, thr = {0};
    bool has_proc = false, has_thr = false;
    while (cur_field(&d, &f, &wt, &v, &sub)) {
        if (f == 1 && wt == 0)
            uuid = v;
        else if (f == 3 && wt == 2)
            proc = sub, has_proc = true;
        else if (f == 4 && wt == 2)
            thr = sub, has_thr = true;
    }
    if (d.bad)
        return fail(r, "a malformed track descriptor");
    int64_t pid = 0, tid = 0, sort = 0;
    bool has_sort = false;
    char *name = NULL, *labels = NULL;
    pr_cur *c = has_proc ? &proc : has_thr ? &thr : NULL;
    while (c && cur_field(c, &f, &wt, &v, &sub)) {
        if (f == 1 && wt == 0)
            pid = (int64_t)v;
        else if (has_thr && f == 2 && wt == 0)
            tid = (int64_t)v;
        else if (has_proc && f == 3 && wt == 0)
            sort = (int64_t)v, has_sort = true;
        else if (((has_proc && f == 6) || (has_thr && f == 5)) && wt == 2 && !name)
            name = dup_bytes(&sub);
        else if (has_proc && f == 8 && wt == 2 && !labels)
            labels = dup_bytes(&sub);
    }
    int rc = 0;
    if (c && c->bad) {
        rc = fail(r, "a malformed process or thread descriptor");
    } else if (c) {
        int64_t i = index_of(&r->track_ix, (void **)&r->tracks, &r->ntracks, &r->tracks_cap, sizeof *r->tracks,
                             uuid, true);
        if (i == -2) {
            rc = fail(r, "out of memory");
        } else {
            r->tracks[i].pid = pid;
            r->tracks[i].tid = has_thr ? tid : 0;
            if (has_proc) {
                rc = meta_event(r, "process_name", pid, 0, name ? name : "", NULL, false, 0);
                if (!rc && labels)
                    rc = meta_event(r, "process_labels", pid, 0, NULL, labels, false, 0);
                if (!rc && has_sort)
                    rc = meta_event(r, "process_sort_index", pid, 0, NULL, NULL, true, sort);
            } else {
                rc = meta_event(r, "thread_name", pid, tid, name ? name : "", NULL, false, 0);
            }
        }
    }
    free(name);
    free(labels);
    return rc;
}

static int read_interned(pr *r, pr_seq *s, pr_cur d)
{
    unsigned f, wt;
    uint64_t v;
    pr_cur sub;
    while (cur_field(&d, &f, &wt, &v, &sub)) {
        int tab = f == 2 ? TAB_NAME : f == 1 ? TAB_CATEGORY : f == 3 ? TAB_ARG : f == 29 ? TAB_VALUE : -1;
        if (tab < 0 || wt != 2)
            continue;
        uint64_t iid = 0;
        pr_cur str = {0}, x;
        bool has_str = false;
        while (cur_field(&sub, &f, &wt, &v, &x)) {
            if (f == 1 && wt == 0)
                iid = v;
            else if (f == 2 && wt == 2)
                str = x, has_str = true;
        }
        if (sub.bad)
            return fail(r, "malformed interned data");
        if (!has_str)
            continue;
        pr_strs *t = &s->tab[tab];
        int64_t i = index_of(&t->ix, (void **)&t->s, &t->n, &t->cap, sizeof *t->s, iid, true);
        char *copy = i >= 0 ? dup_bytes(&str) : NULL;
        if (!copy)
            return fail(r, "out of memory");
        free(t->s[i]);
        t->s[i] = copy;
    }
    return d.bad ? fail(r, "malformed interned data") : 0;
}

static void open_free(pr_open *o)
{
    free(o->name);
    free(o->cat);
    free(o->collective);
    free(o->group);
}

/* An arg the reader knows, into the event as the JSON reader fills it. */
static void put_arg(dt_rd_event *e, const char *name, bool is_int, uint64_t v)
{
    static const struct {
        const char *name;
        uint32_t bit;
        size_t off;
    } args[] = {
        {"External id", DT_RD_HAS_EXTERNAL_ID, offsetof(dt_rd_event, external_id)},
        {"correlation", DT_RD_HAS_CORRELATION, offsetof(dt_rd_event, correlation)},
        {"bytes", DT_RD_HAS_BYTES, offsetof(dt_rd_event, bytes)},
        {"device", DT_RD_HAS_DEVICE, offsetof(dt_rd_event, device)},
        {"stream", DT_RD_HAS_STREAM, offsetof(dt_rd_event, stream)},
        {"cbid", DT_RD_HAS_CBID, offsetof(dt_rd_event, cbid)},
        {"parent", DT_RD_HAS_PARENT, offsetof(dt_rd_event, parent)},
        {"Bytes", DT_RD_HAS_MEM_BYTES, offsetof(dt_rd_event, mem_bytes)},
        {"Total Allocated", DT_RD_HAS_MEM_TOTAL, offsetof(dt_rd_event, mem_total)},
        {"Device Id", DT_RD_HAS_MEM_DEVICE, offsetof(dt_rd_event, mem_device)},
        {"Device Type", DT_RD_HAS_MEM_TYPE, offsetof(dt_rd_event, mem_type)},
        {"Addr", DT_RD_HAS_ADDR, offsetof(dt_rd_event, addr)},
    };
    if (strcmp(name, "Collective name") == 0) {
        e->has |= DT_RD_HAS_COLLECTIVE;
        return;
    }
    for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
        if (strcmp(name, args[i].name) != 0)
            continue;
        if (!is_int) {
            e->odd_args |= args[i].bit;
            return;
        }
        e->has |= args[i].bit;
        memcpy((char *)e + args[i].off, &v, sizeof v);
        return;
    }
}

/* An array arg the reader knows ("grid", "block"): n elements, the first
   three in v; ok when each was an integer of int32's range. Any other shape
   leaves the arg out, as the JSON's text would. */
static void put_ints3_arg(dt_rd_event *e, const char *name, const int32_t v[3], size_t n, bool ok)
{
    uint32_t bit = strcmp(name, "grid") == 0 ? DT_RD_HAS_GRID : strcmp(name, "block") == 0 ? DT_RD_HAS_BLOCK : 0;
    if (!bit)
        return;
    if (n != 3 || !ok) {
        e->has &= ~bit;
        return;
    }
    e->has |= bit;
    memcpy(bit == DT_RD_HAS_GRID ? e->grid : e->block, v, 3 * sizeof *v);
}

/* A string arg the reader knows ("Collective name", "Process Group Name"),
   copied: the slice's event is visited when it ends, packets later. 0, or
   -1 when out of memory. */
static int put_string_arg(pr_open *o, const char *name, const char *v, size_t n)
{
    bool collective = strcmp(name, "Collective name") == 0;
    if (!collective && strcmp(name, "Process Group Name") != 0)
        return 0;
    char *copy = malloc(n + 1);
    if (!copy)
        return -1;
    memcpy(copy, v, n);
    copy[n] = '\0';
    char **own = collective ? &o->collective : &o->group;
    free(*own);
    *own = copy;
    if (collective) {
        o->e.has |= DT_RD_HAS_COLLECTIVE_NAME;
        o->e.collective = copy;
        o->e.collective_len = n;
    } else {
        o->e.has |= DT_RD_HAS_GROUP;
        o->e.group = copy;
        o->e.group_len = n;
    }
    return 0;
}

/* One element of an array arg: true with its value when it is an integer
   (int_value or uint_value only); false for anything else, and c->bad when
   it is malformed. */
static bool array_int(pr_cur *c, int64_t *out)
{
    unsigned f, wt;
    uint64_t v;
    pr_cur sub;
    bool seen = false, other = false;
    while (cur_field(c, &f, &wt, &v, &sub)) {
        if ((f == 3 || f == 4) && wt == 0) {
            *out = f == 4 ? (int64_t)v : v > INT64_MAX ? INT64_MAX : (int64_t)v;
            seen = true;
        } else {
            other = true;
        }
    }
    return seen && !other && !c->bad;
}

static void capture_arg(pr *r, const char *name, int type, uint64_t v, const pr_cur *str)
{
    dt_rd_summary *s = r->sum;
    double d;
    memcpy(&d, &v, sizeof d);
    if (strncmp(name, "devtrace.", 9) != 0)
        return;
    name += 9;
    s->has_devtrace = true;
    char **dst = strcmp(name, "version") == 0 ? &s->version
                 : strcmp(name, "backend") == 0 ? &s->backend
                 : strcmp(name, "library") == 0 ? &s->library
                                                 : NULL;
    if (dst && type == 6 && !*dst) {
        *dst = dup_bytes(str);
    } else if (strcmp(name, "captureWindow.startNs") == 0 && type == 3) {
        s->has_window_start = true;
        s->window_start_ns = (int64_t)v;
    } else if (strcmp(name, "captureWindow.endNs") == 0 && type == 3) {
        s->has_window_end = true;
        s->window_end_ns = (int64_t)v;
    } else if (strncmp(name, "clock.", 6) == 0) {
        s->has_clock = true;
        const char *k = name + 6;
        if (strcmp(k, "samples") == 0) s->clock_samples = (int64_t)v;
        else if (strcmp(k, "segments") == 0) s->clock_segments = (int64_t)v;
        else if (strcmp(k, "slope") == 0 && type == 5) s->clock_slope = d;
        else if (strcmp(k, "offsetNs") == 0 && type == 5) s->clock_offset_ns = d;
        else if (strcmp(k, "errorBoundNs") == 0) s->clock_error_bound_ns = (double)v;
        else if (strcmp(k, "identity") == 0) s->clock_identity = v != 0;
    } else if (strncmp(name, "loss.", 5) == 0 && (type == 3 || type == 4)) {
        s->loss.present = true;
        if (dt__vec_reserve_zeroed((void **)&s->loss.items, &s->loss.cap, s->loss.count + 1, sizeof *s->loss.items) == 0) {
            char *key = strdup(name + 5);
            if (key)
                s->loss.items[s->loss.count++] = (dt_rd_kv){key, (int64_t)v};
        }
    }
}

static int flow_event(pr *r, const pr_track *t, int64_t ts, uint64_t id, bool finish)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, id);
    dt_rd_event e;
    memset(&e, 0, sizeof e);
    e.ph = finish ? "f" : "s";
    e.cat = "ac2g";
    e.name = "ac2g";
    e.bp = finish ? "e" : "";
    e.id = text;
    e.pid = (dt_rd_id){true, false, t->pid, NULL};
    e.tid = (dt_rd_id){true, false, t->tid, NULL};
    e.ts_ns = ts;
    e.has = DT_RD_HAS_TS | DT_RD_HAS_ID;
    return visit(r, &e);
}

static int track_event(pr *r, pr_seq *s, pr_cur d, uint64_t ts)
{
    unsigned f, wt;
    uint64_t v;
    pr_cur sub;
    uint64_t type = 0, name_iid = 0, cat_iid = 0, track = s ? s->track : 0;
    pr_cur args = d;
    while (cur_field(&d, &f, &wt, &v, &sub)) {
        if (f == 9 && wt == 0)
            type = v;
        else if (f == 10 && wt == 0)
            name_iid = v;
        else if (f == 3 && wt == 0 && !cat_iid)
            cat_iid = v;
        else if (f == 11 && wt == 0)
            track = v;
    }
    if (d.bad)
        return fail(r, "a malformed track event");
    pr_track *t = track_of(r, track);
    if (!t)
        return fail(r, "a track event on track %" PRIu64 ", which no descriptor named", track);
    if (type == 2) { /* SLICE_END */
        if (t->depth == 0)
            return fail(r, "a slice ends on track %" PRIu64 " where none is open", track);
        pr_open *o = &t->open[--t->depth];
        o->e.dur_ns = (int64_t)(ts - (uint64_t)o->e.ts_ns);
        o->e.has |= DT_RD_HAS_TS | DT_RD_HAS_DUR;
        o->e.name = o->name;
        o->e.cat = o->cat;
        bool instant = o->e.dur_ns == 0 && strcmp(o->cat, "cpu_instant_event") == 0;
        o->e.ph = instant ? "i" : "X";
        if (instant)
            o->e.has &= ~(uint32_t)DT_RD_HAS_DUR;
        int rc = visit(r, &o->e);
        open_free(o);
        return rc;
    }
    if (type != 1)
        return 0; /* devtrace writes slices only */
    if (t->depth >= PR_MAX_DEPTH)
        return fail(r, "slices nested deeper than %d on one track", PR_MAX_DEPTH);
    if (dt__vec_reserve_zeroed((void **)&t->open, &t->cap, t->depth + 1, sizeof *t->open) != 0)
        return fail(r, "out of memory");
    pr_open *o = &t->open[t->depth];
    memset(o, 0, sizeof *o);
    const char *name = s ? strs_get(&s->tab[TAB_NAME], name_iid) : NULL;
    const char *cat = s ? strs_get(&s->tab[TAB_CATEGORY], cat_iid) : NULL;
    o->name = strdup(name ? name : "");
    o->cat = strdup(cat ? cat : "");
    if (!o->name || !o->cat) {
        free(o->name);
        free(o->cat);
        return fail(r, "out of memory");
    }
    t->depth++;
    o->e.pid = (dt_rd_id){true, false, t->pid, NULL};
    o->e.tid = (dt_rd_id){true, false, t->tid, NULL};
    o->e.ts_ns = (int64_t)ts;
    bool capture = strcmp(o->name, "devtrace capture") == 0 && strcmp(o->cat, "Trace") == 0;
    if (capture)
        r->capture_seen = true;
    /* args and flows, in a second pass */
    while (cur_field(&args, &f, &wt, &v, &sub)) {
        if (f == 4 && wt == 2) {
            unsigned af, awt;
            uint64_t av, aname = 0, val = 0;
            pr_cur as, str = {0};
            int vtype = 0;
            int32_t ints[3] = {0};
            size_t nints = 0; /* array_values met */
            bool ints_ok = true;
            while (cur_field(&sub, &af, &awt, &av, &as)) {
                if (af == 1 && awt == 0) {
                    aname = av;
                } else if ((af == 2 || af == 3 || af == 4 || af == 17) && awt == 0) {
                    vtype = (int)af, val = av;
                } else if (af == 5 && awt == 1) {
                    vtype = 5, val = av;
                } else if (af == 6 && awt == 2) {
                    vtype = 6, str = as;
                } else if (af == 12 && awt == 2) {
                    int64_t x = 0;
                    bool is_int = array_int(&as, &x);
                    if (as.bad)
                        sub.bad = true;
                    else if (!is_int || x < INT32_MIN || x > INT32_MAX)
                        ints_ok = false;
                    else if (nints < 3)
                        ints[nints] = (int32_t)x;
                    nints++;
                }
            }
            if (sub.bad)
                return fail(r, "a malformed debug annotation");
            const char *an = s ? strs_get(&s->tab[TAB_ARG], aname) : NULL;
            if (!an)
                continue;
            if (capture) {
                capture_arg(r, an, vtype, val, &str);
                continue;
            }
            if (vtype)
                put_arg(&o->e, an, vtype == 3 || vtype == 4, val);
            if (nints)
                put_ints3_arg(&o->e, an, ints, nints, ints_ok);
            const char *text = vtype == 6    ? (const char *)str.p
                               : vtype == 17 ? strs_get(&s->tab[TAB_VALUE], val)
                                             : NULL;
            if (text && put_string_arg(o, an, text, vtype == 6 ? (size_t)(str.end - str.p) : strlen(text)) != 0)
                return fail(r, "out of memory");
        } else if ((f == 36 || f == 42) && wt == 0) {
            if (flow_event(r, t, (int64_t)ts, v, f == 42))
                return -1;
        } else if ((f == 47 || f == 48) && wt == 1) {
            if (flow_event(r, t, (int64_t)ts, v, f == 48))
                return -1;
        }
    }
    return 0;
}

static int packet(pr *r, pr_cur d)
{
    unsigned f, wt;
    uint64_t v, seq_id = 0, ts = 0, clock_id = 0, flags = 0;
    bool has_ts = false;
    pr_cur sub, te = {0}, interned = {0}, desc = {0}, defaults = {0}, clocks = {0};
    bool has_te = false, has_interned = false, has_desc = false, has_defaults = false, has_clocks = false;
    while (cur_field(&d, &f, &wt, &v, &sub)) {
        switch (f) {
        case 8: if (wt == 0) ts = v, has_ts = true; break;
        case 10: if (wt == 0) seq_id = v; break;
        case 13: if (wt == 0) flags = v; break;
        case 58: if (wt == 0) clock_id = v; break;
        case 11: if (wt == 2) te = sub, has_te = true; break;
        case 12: if (wt == 2) interned = sub, has_interned = true; break;
        case 60: if (wt == 2) desc = sub, has_desc = true; break;
        case 59: if (wt == 2) defaults = sub, has_defaults = true; break;
        case 6: if (wt == 2) clocks = sub, has_clocks = true; break;
        default: break;
        }
    }
    if (d.bad)
        return fail(r, "a malformed packet");
    if (has_desc)
        return descriptor(r, desc);
    pr_seq *s = NULL;
    if (seq_id) {
        int64_t i = index_of(&r->seq_ix, (void **)&r->seqs, &r->nseqs, &r->seqs_cap, sizeof *r->seqs, seq_id, true);
        if (i == -2)
            return fail(r, "out of memory");
        s = &r->seqs[i];
    }
    if (s && (flags & 1)) { /* incremental state cleared */
        for (int k = 0; k < TAB_COUNT; k++)
            strs_clear(&s->tab[k]);
        s->track = 0;
        s->incremental = false;
    }
    if (s && has_defaults) {
        while (cur_field(&defaults, &f, &wt, &v, &sub)) {
            if (f == 58 && wt == 0)
                s->incremental = v >= 64;
            else if (f == 11 && wt == 2) {
                unsigned tf, twt;
                uint64_t tv;
                pr_cur ts_;
                while (cur_field(&sub, &tf, &twt, &tv, &ts_))
                    if (tf == 11 && twt == 0)
                        s->track = tv;
            }
        }
    }
    if (s && has_clocks) {
        while (cur_field(&clocks, &f, &wt, &v, &sub)) {
            if (f != 1 || wt != 2)
                continue;
            unsigned cf, cwt;
            uint64_t cv, id = 0, cts = 0;
            pr_cur x;
            while (cur_field(&sub, &cf, &cwt, &cv, &x)) {
                if (cf == 1 && cwt == 0)
                    id = cv;
                else if (cf == 2 && cwt == 0)
                    cts = cv;
            }
            if (id >= 64)
                s->last_ts = cts;
        }
    }
    if (s && has_interned && read_interned(r, s, interned) != 0)
        return -1;
    if (!has_te)
        return 0;
    if (!s)
        return fail(r, "a track event outside any packet sequence");
    if (has_ts && s->incremental && clock_id == 0) {
        s->last_ts += ts;
        ts = s->last_ts;
    } else if (!has_ts) {
        ts = s->last_ts;
    }
    return track_event(r, s, te, ts);
}

static void reader_free(pr *r)
{
    for (size_t i = 0; i < r->ntracks; i++) {
        for (size_t k = 0; k < r->tracks[i].depth; k++)
            open_free(&r->tracks[i].open[k]);
        free(r->tracks[i].open);
    }
    free(r->tracks);
    for (size_t i = 0; i < r->nseqs; i++)
        for (int k = 0; k < TAB_COUNT; k++)
            strs_clear(&r->seqs[i].tab[k]);
    free(r->seqs);
    dt__u64map_free(&r->track_ix);
    dt__u64map_free(&r->seq_ix);
    free(r->buf);
}

int dt__rd_pf_read(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err, size_t errlen)
{
    pr r;
    memset(&r, 0, sizeof r);
    r.src = src;
    r.opt = opts;
    r.sum = summary;
    r.err = err;
    r.errlen = errlen;
    summary->format = DT_RD_FORMAT_PERFETTO;
    summary->compressed = dt__rd_src_gzip(src);
    summary->has_trace_events = true;
    summary->has_base_time = true; /* timestamps are epoch ns */
    if (opts && (opts->flags & (DT_RD_RAW | DT_RD_JSON))) {
        /* the events' JSON text, which merge copies: there is none */
        snprintf(err, errlen, "byte 0: %sPerfetto protobuf trace: only JSON traces are taken here (record them "
                              "with --format json)", summary->compressed ? "gzip of a " : "a ");
        return -1;
    }
    int rc = 0;
    for (;;) {
        r.packet_off = r.base + r.pos;
        int need = need_bytes(&r, 1);
        if (need < 0) {
            rc = -1;
            break;
        }
        if (need > 0)
            break; /* the end, between packets */
        /* the tag and length: at most 1 + 10 bytes */
        need_bytes(&r, 11);
        pr_cur c = {r.buf + r.pos, r.buf + r.len, false};
        uint64_t tag = cur_varint(&c);
        if (c.bad || (tag & 7) != 2) {
            rc = fail(&r, c.bad ? "truncated" : "not a Trace of packets (field %" PRIu64 ", wire type %u)",
                      tag >> 3, (unsigned)(tag & 7));
            break;
        }
        uint64_t n = cur_varint(&c);
        if (c.bad) {
            rc = fail(&r, "truncated in a packet's length");
            break;
        }
        if (n > PR_MAX_PACKET) {
            rc = fail(&r, "a packet of %" PRIu64 " bytes, more than %u MiB", n, PR_MAX_PACKET >> 20);
            break;
        }
        size_t head = (size_t)(c.p - (r.buf + r.pos));
        int got = need_bytes(&r, head + (size_t)n);
        if (got < 0) {
            rc = -1;
            break;
        }
        if (got > 0) {
            rc = fail(&r, "truncated: a packet of %" PRIu64 " bytes has %zu", n, r.len - r.pos - head);
            break;
        }
        pr_cur pkt = {r.buf + r.pos + head, r.buf + r.pos + head + n, false};
        r.pos += head + (size_t)n;
        if ((tag >> 3) != 1)
            continue;
        if (packet(&r, pkt) != 0) {
            rc = r.visit_rc ? r.visit_rc : -1;
            break;
        }
    }
    summary->bytes = r.base + r.pos;
    if (rc == 0 && !r.capture_seen) {
        snprintf(err, errlen, "byte 0: a Perfetto protobuf trace not written by devtrace (no \"devtrace capture\" "
                              "slice): stats and check read the Perfetto traces devtrace writes; open this one in "
                              "the Perfetto UI or trace_processor");
        rc = -1;
    }
    if (rc == 0) {
        size_t open = 0;
        for (size_t i = 0; i < r.ntracks; i++)
            open += r.tracks[i].depth;
        if (open) {
            r.packet_off = summary->bytes;
            rc = fail(&r, "truncated: %zu slice(s) never ended", open);
        }
    }
    reader_free(&r);
    return rc;
}
