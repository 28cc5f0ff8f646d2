/*
 * A Chrome trace JSON document (what `devtrace merge` writes) as Perfetto
 * packets (src/format/pf_trace.h), for `merge --format perfetto`.
 *
 * Two passes over the document. The first, through the reader, keeps what
 * a row needs to be written in order: processes and rows by their
 * metadata, and per complete event ("X") its row, start, end and where its
 * text lies (40 bytes an event); flow ends by row and time. The second
 * writes process and thread descriptors, then row by row the events in
 * start order (enclosing first), each read again from the document and
 * turned into a slice: its name, category and args (numbers, strings,
 * booleans and integer arrays as they are; other values as their JSON
 * text), and the flows whose end lies at its start. What Perfetto's slices
 * cannot carry (instant, counter and async events, flow ends at no
 * event's start) is counted and left out.
 */
#include "base/vec.h"
#include "reader/dt_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/pf_trace.h"
#include "reader/pf_convert.h"

typedef struct cv_slice {
    int64_t start, end;
    uint64_t off, index;
    uint32_t len, row;
} cv_slice;

typedef struct cv_flow {
    int64_t ts;
    uint64_t id;
    uint32_t row;
    uint32_t finish;
} cv_flow;

typedef struct cv_process {
    int64_t pid; /* as Perfetto takes it: a string pid gets a number */
    char *name, *labels;
    int64_t sort;
    bool has_sort;
    uint64_t uuid;
} cv_process;

typedef struct cv_row {
    uint32_t process;
    int64_t tid;
    char *name;
    uint64_t uuid;
} cv_row;

typedef struct cv {
    dt_strtab pids, rows;
    cv_process *procs;
    size_t proc_cap;
    cv_row *rowv;
    size_t row_cap;
    cv_slice *slices;
    size_t nslices, slice_cap;
    cv_flow *flows;
    size_t nflows, flow_cap;
    dt_rd_pf_stats *stats;
    bool oom;
} cv;

/* A number for a pid or tid written as a string, which Perfetto's
   descriptors need: a hash, clear of the pids and tids Linux gives. */
static int64_t id_number(const dt_rd_id *id)
{
    if (!id->is_str)
        return id->num;
    uint64_t h = 1469598103934665603ull;
    for (const char *s = id->str; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (int64_t)(0x40000000u | (h & 0x3fffffffu));
}

static char *dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static int64_t process_id(cv *c, const dt_rd_id *pid)
{
    char key[256];
    int n = pid->is_str ? snprintf(key, sizeof key, "s%.250s", pid->str)
                        : snprintf(key, sizeof key, "n%" PRId64, pid->num);
    bool added;
    int64_t id = dt__strtab_intern(&c->pids, key, (size_t)n, &added);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&c->procs, &c->proc_cap, (size_t)id + 1, sizeof *c->procs) != 0)
        return -1;
    if (added)
        c->procs[id].pid = id_number(pid);
    return id;
}

static int64_t row_id(cv *c, const dt_rd_event *e)
{
    char key[520];
    int n = snprintf(key, sizeof key, "%s%.250s|%s%.250s", e->pid.is_str ? "s" : "n",
                     e->pid.is_str ? e->pid.str : "", e->tid.is_str ? "s" : "n", e->tid.is_str ? e->tid.str : "");
    if (!e->pid.is_str || !e->tid.is_str) {
        char num[64];
        snprintf(num, sizeof num, "|%" PRId64 "|%" PRId64, e->pid.num, e->tid.num);
        n += snprintf(key + n, sizeof key - (size_t)n, "%s", num);
    }
    bool added;
    int64_t id = dt__strtab_intern(&c->rows, key, (size_t)n, &added);
    if (id < 0 || dt__vec_reserve_zeroed((void **)&c->rowv, &c->row_cap, (size_t)id + 1, sizeof *c->rowv) != 0)
        return -1;
    if (added) {
        int64_t p = process_id(c, &e->pid);
        if (p < 0)
            return -1;
        c->rowv[id].process = (uint32_t)p;
        c->rowv[id].tid = id_number(&e->tid);
    }
    return id;
}

/* A flow id as a number: the id itself, or a hash of its text. */
static uint64_t flow_number(const dt_rd_event *e)
{
    char *end;
    errno = 0;
    unsigned long long v = e->id_is_str ? 0 : strtoull(e->id, &end, 10);
    if (!e->id_is_str && errno == 0 && *end == '\0' && e->id[0] != '-')
        return v;
    uint64_t h = 1469598103934665603ull;
    for (const char *s = e->id; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | UINT64_C(1) << 63;
}

static int visit(void *user, const dt_rd_event *e)
{
    cv *c = user;
    if (!e->pid.present || !e->tid.present) {
        c->stats->left_out++;
        return 0;
    }
    if (e->ph[0] == 'M' && !e->ph[1]) {
        if (!strcmp(e->name, "thread_name") && (e->has & DT_RD_HAS_ARG_NAME)) {
            int64_t row = row_id(c, e);
            if (row < 0)
                goto oom;
            free(c->rowv[row].name);
            if (!(c->rowv[row].name = dup_text(e->arg_name)))
                goto oom;
            return 0;
        }
        int64_t p = process_id(c, &e->pid);
        if (p < 0)
            goto oom;
        cv_process *pr = &c->procs[p];
        if (!strcmp(e->name, "process_name") && (e->has & DT_RD_HAS_ARG_NAME)) {
            free(pr->name);
            if (!(pr->name = dup_text(e->arg_name)))
                goto oom;
        } else if (!strcmp(e->name, "process_labels") && (e->has & DT_RD_HAS_ARG_LABELS)) {
            free(pr->labels);
            if (!(pr->labels = dup_text(e->arg_labels)))
                goto oom;
        } else if (!strcmp(e->name, "process_sort_index") && (e->has & DT_RD_HAS_SORT_INDEX)) {
            pr->sort = e->sort_index;
            pr->has_sort = true;
        }
        return 0;
    }
    bool complete = e->ph[0] == 'X' && !e->ph[1] &&
                    (e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) == (DT_RD_HAS_TS | DT_RD_HAS_DUR) && e->dur_ns >= 0 &&
                    e->ts_ns <= INT64_MAX - e->dur_ns;
    bool flow = (e->ph[0] == 's' || e->ph[0] == 'f') && !e->ph[1] && (e->has & DT_RD_HAS_ID) &&
                (e->has & DT_RD_HAS_TS);
    if (!complete && !flow) {
        c->stats->left_out++;
        return 0;
    }
    int64_t row = row_id(c, e);
    if (row < 0)
        goto oom;
    if (flow) {
        if (dt__vec_reserve_zeroed((void **)&c->flows, &c->flow_cap, c->nflows + 1, sizeof *c->flows) != 0)
            goto oom;
        c->flows[c->nflows++] = (cv_flow){e->ts_ns, flow_number(e), (uint32_t)row, e->ph[0] == 'f'};
        return 0;
    }
    if (dt__vec_reserve_zeroed((void **)&c->slices, &c->slice_cap, c->nslices + 1, sizeof *c->slices) != 0)
        goto oom;
    c->slices[c->nslices++] =
        (cv_slice){e->ts_ns, e->ts_ns + e->dur_ns, e->offset, e->index, (uint32_t)e->raw_len, (uint32_t)row};
    return 0;
oom:
    c->oom = true;
    return 1;
}

static int cmp_slice(const void *a, const void *b)
{
    const cv_slice *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the enclosing one first */
    return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_flow(const void *a, const void *b)
{
    const cv_flow *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* ---- an event's text, read again: valid JSON, as the reader checked ---- */
typedef struct js {
    const char *p, *end;
} js;

static void js_ws(js *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* The string at j->p: its raw text (between the quotes). */
static bool js_string(js *j, const char **s, size_t *len)
{
    if (j->p >= j->end || *j->p != '"')
        return false;
    const char *q = ++j->p;
    while (j->p < j->end && *j->p != '"')
        j->p += *j->p == '\\' ? 2 : 1;
    if (j->p >= j->end)
        return false;
    *s = q;
    *len = (size_t)(j->p - q);
    j->p++;
    return true;
}

/* Any value: skipped; false when the text ends first. */
static bool js_skip(js *j)
{
    int depth = 0;
    do {
        js_ws(j);
        if (j->p >= j->end)
            return false;
        char ch = *j->p;
        if (ch == '"') {
            const char *s;
            size_t n;
            if (!js_string(j, &s, &n))
                return false;
        } else if (ch == '{' || ch == '[') {
            depth++;
            j->p++;
        } else if (ch == '}' || ch == ']') {
            depth--;
            j->p++;
        } else {
            while (j->p < j->end && !strchr(",}] \t\r\n", *j->p))
                j->p++;
        }
        js_ws(j);
        if (depth > 0 && j->p < j->end && (*j->p == ',' || *j->p == ':'))
            j->p++;
    } while (depth > 0);
    return true;
}

/* Decoded text of a string: into buf (cap bytes), or NULL when longer. */
static const char *js_text(const char *s, size_t len, char *buf, size_t cap, size_t *out_len)
{
    if (len >= cap)
        return NULL;
    *out_len = dt__rd_unescape(s, len, buf);
    return buf;
}

/* One arg as a DebugAnnotation. */
static void write_arg(pf_trace *t, const char *key, size_t key_len, js *j)
{
    char kbuf[256], vbuf[4096];
    size_t klen, vlen;
    const char *k = js_text(key, key_len, kbuf, sizeof kbuf, &klen);
    if (!k)
        k = "(arg name too long)", klen = strlen(k);
    uint64_t name = dt__pf_intern(t, PF_ARG, k, klen);
    js_ws(j);
    const char *v0 = j->p;
    char ch = j->p < j->end ? *j->p : 0;
    if (ch == '"') {
        const char *s;
        size_t n;
        if (!js_string(j, &s, &n))
            return;
        const char *text = js_text(s, n, vbuf, sizeof vbuf, &vlen);
        if (text) {
            dt__pf_arg_string(t, name, text, vlen);
        } else {
            char *big = malloc(n + 1);
            if (big) {
                dt__pf_arg_string(t, name, big, dt__rd_unescape(s, n, big));
                free(big);
            }
        }
        return;
    }
    if (ch == 't' || ch == 'f') {
        js_skip(j);
        dt__pf_arg_bool(t, name, ch == 't');
        return;
    }
    if (ch == '[') {
        /* integers only: an array as Perfetto shows one */
        int64_t ints[16];
        size_t n = 0;
        js a = *j;
        a.p++;
        bool ok = true;
        for (js_ws(&a); ok && a.p < a.end && *a.p != ']';) {
            char *end;
            errno = 0;
            long long v = strtoll(a.p, &end, 10);
            ok = end != a.p && errno == 0 && n < 16 && end < a.end && !strchr(".eE", *end);
            if (ok) {
                ints[n++] = v;
                a.p = end;
                js_ws(&a);
                if (a.p < a.end && *a.p == ',') {
                    a.p++;
                    js_ws(&a);
                }
            }
        }
        js_skip(j);
        if (ok) {
            dt__pf_arg_ints(t, name, ints, n);
            return;
        }
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        js_skip(j);
        size_t n = (size_t)(j->p - v0);
        char num[64];
        if (n < sizeof num) {
            memcpy(num, v0, n);
            num[n] = '\0';
            char *end;
            errno = 0;
            if (!strpbrk(num, ".eE")) {
                if (num[0] == '-') {
                    long long v = strtoll(num, &end, 10);
                    if (!errno && !*end) {
                        dt__pf_arg_int(t, name, v);
                        return;
                    }
                } else {
                    unsigned long long v = strtoull(num, &end, 10);
                    if (!errno && !*end) {
                        dt__pf_arg_uint(t, name, v);
                        return;
                    }
                }
            }
            errno = 0;
            double d = strtod(num, &end);
            if (!*end) {
                dt__pf_arg_double(t, name, d);
                return;
            }
        }
    } else {
        js_skip(j);
    }
    /* null, objects, other arrays: their JSON text */
    dt__pf_arg_string(t, name, v0, (size_t)(j->p - v0));
}

/* The slice of one event from its text. */
static void write_slice(pf_trace *t, const char *text, size_t len, uint64_t ts)
{
    js j = {text, text + len};
    const char *name = "", *cat = "";
    size_t name_len = 0, cat_len = 0;
    const char *args = NULL;
    /* first the name and category, then args after dt__pf_begin */
    js_ws(&j);
    if (j.p < j.end && *j.p == '{')
        j.p++;
    for (;;) {
        js_ws(&j);
        const char *k;
        size_t klen;
        if (!js_string(&j, &k, &klen))
            break;
        js_ws(&j);
        if (j.p < j.end && *j.p == ':')
            j.p++;
        js_ws(&j);
        if (klen == 4 && !memcmp(k, "name", 4) && j.p < j.end && *j.p == '"')
            js_string(&j, &name, &name_len);
        else if (klen == 3 && !memcmp(k, "cat", 3) && j.p < j.end && *j.p == '"')
            js_string(&j, &cat, &cat_len);
        else if (klen == 4 && !memcmp(k, "args", 4) && j.p < j.end && *j.p == '{')
            args = j.p, js_skip(&j);
        else if (!js_skip(&j))
            break;
        js_ws(&j);
        if (j.p < j.end && *j.p == ',')
            j.p++;
    }
    char nbuf[4096], cbuf[256];
    size_t nlen = 0, clen = 0;
    const char *n = js_text(name, name_len, nbuf, sizeof nbuf, &nlen);
    const char *c = js_text(cat, cat_len, cbuf, sizeof cbuf, &clen);
    if (!n)
        n = "(name too long)", nlen = strlen(n);
    if (!c)
        c = "", clen = 0;
    dt__pf_begin(t, ts, dt__pf_intern(t, PF_NAME, n, nlen), dt__pf_intern(t, PF_CATEGORY, c, clen));
    if (!args)
        return;
    js a = {args + 1, text + len};
    for (;;) {
        js_ws(&a);
        const char *k;
        size_t klen;
        if (!js_string(&a, &k, &klen))
            break;
        js_ws(&a);
        if (a.p < a.end && *a.p == ':')
            a.p++;
        write_arg(t, k, klen, &a);
        js_ws(&a);
        if (a.p < a.end && *a.p == ',')
            a.p++;
    }
}

static void close_until(pf_trace *t, int64_t *open, size_t *nopen, int64_t ts, int64_t base)
{
    while (*nopen > 0 && open[*nopen - 1] <= ts)
        dt__pf_end(t, (uint64_t)(open[--*nopen] + base));
}

static int write_rows(cv *c, pf_trace *t, int fd, int64_t base)
{
    for (size_t p = 0; p < c->pids.count; p++) {
        cv_process *pr = &c->procs[p];
        pr->uuid = dt__pf_process(t, pr->pid, pr->name ? pr->name : "", pr->labels,
                              pr->has_sort ? pr->sort : pr->pid);
        if (!pr->uuid)
            return ENOMEM;
    }
    for (size_t r = 0; r < c->rows.count; r++) {
        cv_row *row = &c->rowv[r];
        row->uuid = dt__pf_thread(t, c->procs[row->process].pid, row->tid, row->name ? row->name : "");
        if (!row->uuid)
            return ENOMEM;
    }
    if (c->nslices > 1)
        qsort(c->slices, c->nslices, sizeof *c->slices, cmp_slice);
    if (c->nflows > 1)
        qsort(c->flows, c->nflows, sizeof *c->flows, cmp_flow);
    int64_t *open = NULL;
    size_t nopen = 0, open_cap = 0, fl = 0;
    char *text = NULL;
    size_t text_cap = 0;
    uint32_t row = UINT32_MAX;
    int err = 0;
    for (size_t i = 0; i < c->nslices && !err; i++) {
        const cv_slice *s = &c->slices[i];
        if (s->row != row) {
            close_until(t, open, &nopen, INT64_MAX, base);
            for (; fl < c->nflows && c->flows[fl].row < s->row; fl++)
                c->stats->flows_left_out++;
            row = s->row;
            dt__pf_track_begin(t, c->rowv[row].uuid);
        }
        close_until(t, open, &nopen, s->start, base);
        if (dt__vec_reserve_zeroed((void **)&open, &open_cap, nopen + 1, sizeof *open) != 0 ||
            dt__vec_reserve_zeroed((void **)&text, &text_cap, (size_t)s->len + 1, 1) != 0) {
            err = ENOMEM;
            break;
        }
        open[nopen++] = s->end;
        ssize_t got = pread(fd, text, s->len, (off_t)s->off);
        if (got != (ssize_t)s->len) {
            err = got < 0 ? errno : EIO;
            break;
        }
        text[s->len] = '\0';
        write_slice(t, text, s->len, (uint64_t)(s->start + base));
        /* flows end on the innermost slice that starts at their time: the
           last of those that start together */
        bool innermost = i + 1 >= c->nslices || c->slices[i + 1].row != row || c->slices[i + 1].start != s->start;
        if (innermost) {
            for (; fl < c->nflows && c->flows[fl].row == row && c->flows[fl].ts < s->start; fl++)
                c->stats->flows_left_out++;
            for (; fl < c->nflows && c->flows[fl].row == row && c->flows[fl].ts == s->start; fl++)
                dt__pf_flow(t, c->flows[fl].id, (int)c->flows[fl].finish);
        }
        dt__pf_begin_done(t);
        c->stats->slices++;
        if (dt__pf_trace_error(t))
            err = dt__pf_trace_error(t);
    }
    close_until(t, open, &nopen, INT64_MAX, base);
    c->stats->flows_left_out += c->nflows - fl;
    free(open);
    free(text);
    return err ? err : dt__pf_trace_error(t);
}

static void converter_free(cv *c)
{
    for (size_t p = 0; p < c->pids.count; p++) {
        free(c->procs[p].name);
        free(c->procs[p].labels);
    }
    for (size_t r = 0; r < c->rows.count; r++)
        free(c->rowv[r].name);
    free(c->procs);
    free(c->rowv);
    free(c->slices);
    free(c->flows);
    dt__strtab_free(&c->pids);
    dt__strtab_free(&c->rows);
}

int dt__rd_pf_convert(pf_trace *t, const char *json_path, dt_rd_pf_stats *stats, char *err, size_t errlen)
{
    cv c;
    memset(&c, 0, sizeof c);
    c.stats = stats;
    dt__strtab_init(&c.pids);
    dt__strtab_init(&c.rows);
    dt_rd_source *src = dt__rd_open_file(json_path, err, errlen);
    if (!src)
        return EIO;
    dt_rd_summary sum;
    dt_rd_options o = {.visit = visit, .user = &c, .flags = DT_RD_RAW};
    int rc = dt__rd_read_opts(src, &o, &sum, err, errlen);
    dt__rd_close(src);
    int64_t base = sum.has_base_time ? sum.base_time_ns : 0;
    dt__rd_summary_free(&sum);
    if (rc != 0 || c.oom) {
        if (c.oom)
            snprintf(err, errlen, "out of memory");
        converter_free(&c);
        return c.oom ? ENOMEM : EIO;
    }
    int fd = open(json_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", json_path, strerror(errno));
        converter_free(&c);
        return EIO;
    }
    rc = write_rows(&c, t, fd, base);
    close(fd);
    if (rc != 0)
        snprintf(err, errlen, "%s", rc == ENOMEM ? "out of memory" : strerror(rc));
    converter_free(&c);
    return rc;
}
