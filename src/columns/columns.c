/* A trace's events as batches of columns (dt_columns.h), filled by the
   streaming reader's visitor. */
#include "dt_columns.h"

#include "base/json_out.h"
#include "reader/dt_reader.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_COL_DEFAULT_ROWS 65536
/* A merged trace moves rank k's numeric pids by k * 2^23 (docs/trace-format.md). */
#define DT_COL_RANK_SHIFT 23

typedef struct col_state {
    dt_col_batch b;
    size_t cap;
    dt_strtab dict[DT_COL_D_COUNT];
    size_t reported[DT_COL_D_COUNT]; /* dictionary entries handed out so far */
    dt_col_sink sink;
    void *user;
    char *scratch; /* decoded string args */
    size_t scratch_cap;
    uint64_t string_flow_ids; /* flow ids written as strings: no flow_id */
    int failed;               /* out of memory */
} col_state;

int dt_col_abi(void)
{
    return DT_COL_ABI;
}

void dt_col_free(void *p)
{
    free(p);
}

static int col_alloc(col_state *s, size_t rows)
{
    dt_col_batch *b = &s->b;
    s->cap = rows;
#define COL(field, n) if (!(b->field = calloc(rows * (n), sizeof *b->field))) return -1
    COL(valid, 1); COL(kind, 1); COL(part, 1);
    COL(ts, 1); COL(dur, 1); COL(pid, 1); COL(tid, 1); COL(device, 1); COL(stream, 1);
    COL(correlation, 1); COL(external_id, 1); COL(bytes, 1); COL(flow_id, 1);
    COL(grid, 3); COL(block, 3);
    for (int d = 0; d < DT_COL_D_COUNT; d++)
        COL(dict[d], 1);
#undef COL
    return 0;
}

static void col_release(col_state *s)
{
    dt_col_batch *b = &s->b;
    free(b->valid); free(b->kind); free(b->part); free(b->ts); free(b->dur); free(b->pid); free(b->tid);
    free(b->device); free(b->stream); free(b->correlation); free(b->external_id); free(b->bytes);
    free(b->flow_id); free(b->grid); free(b->block);
    for (int d = 0; d < DT_COL_D_COUNT; d++) {
        free(b->dict[d]);
        dt_strtab_free(&s->dict[d]);
    }
    free(s->scratch);
}

static int col_flush(col_state *s)
{
    dt_col_batch *b = &s->b;
    if (b->rows == 0)
        return 0;
    for (int d = 0; d < DT_COL_D_COUNT; d++) {
        b->dicts[d].first_new = s->reported[d];
        b->dicts[d].count = s->dict[d].count;
        b->dicts[d].keys = s->dict[d].keys;
        b->dicts[d].lens = s->dict[d].lens;
        s->reported[d] = s->dict[d].count;
    }
    int rc = s->sink(s->user, b);
    b->first_index += b->rows;
    b->rows = 0;
    return rc;
}

static int32_t col_intern(col_state *s, int d, const char *text, size_t len)
{
    int64_t id = dt_strtab_intern(&s->dict[d], text, len, NULL);
    if (id < 0 || id > INT32_MAX) {
        s->failed = 1;
        return -1;
    }
    return (int32_t)id;
}

/* The value after key "K" in the args text [p, end): where it starts, or NULL. */
static const char *col_arg(const char *p, const char *end, const char *key)
{
    size_t klen = strlen(key);
    while (p < end) {
        const char *hit = memmem(p, (size_t)(end - p), key, klen);
        if (!hit)
            return NULL;
        const char *v = hit + klen;
        while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
            v++;
        if (v < end && *v == ':') {
            v++;
            while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
                v++;
            return v;
        }
        p = hit + 1;
    }
    return NULL;
}

/* [x, y, z] of integers at v into out; false when it is not that. */
static bool col_triple(const char *v, const char *end, int32_t *out)
{
    if (!v || v >= end || *v != '[')
        return false;
    v++;
    for (int i = 0; i < 3; i++) {
        while (v < end && (*v == ' ' || *v == ','))
            v++;
        char *e;
        long long x = strtoll(v, &e, 10);
        if (e == v || e > end || x < INT32_MIN || x > INT32_MAX)
            return false;
        out[i] = (int32_t)x;
        v = e;
    }
    while (v < end && *v == ' ')
        v++;
    return v < end && *v == ']';
}

/* The JSON string at v, decoded, interned in dictionary d; -1 when v is no
   string. The reader validated the text: a string's quotes are balanced. */
static int32_t col_string_arg(col_state *s, int d, const char *v, const char *end)
{
    if (!v || v >= end || *v != '"')
        return -1;
    const char *q = v + 1;
    while (q < end && *q != '"')
        q += *q == '\\' ? 2 : 1;
    if (q >= end)
        return -1;
    size_t len = (size_t)(q - v - 1);
    if (len > s->scratch_cap) {
        char *n = realloc(s->scratch, len);
        if (!n) {
            s->failed = 1;
            return -1;
        }
        s->scratch = n;
        s->scratch_cap = len;
    }
    size_t out = dt_rd_unescape(v + 1, len, s->scratch);
    return col_intern(s, d, s->scratch, out);
}

static int32_t col_id_string(col_state *s, const dt_rd_id *id)
{
    return id->present && id->is_str ? col_intern(s, DT_COL_D_THREAD, id->str, strlen(id->str)) : -1;
}

static int col_visit(void *user, const dt_rd_event *ev)
{
    col_state *s = user;
    dt_col_batch *b = &s->b;
    size_t r = b->rows;
    uint32_t v = 0;
    b->kind[r] = ev->cat_kind;
    b->part[r] = 0;
    b->dict[DT_COL_D_NAME][r] = col_intern(s, DT_COL_D_NAME, ev->name, ev->name_len);
    b->dict[DT_COL_D_CAT][r] = col_intern(s, DT_COL_D_CAT, ev->cat, ev->cat_len);
    b->dict[DT_COL_D_PH][r] = col_intern(s, DT_COL_D_PH, ev->ph, strlen(ev->ph));
    b->dict[DT_COL_D_LABEL][r] =
        ev->has & DT_RD_HAS_ARG_NAME ? col_intern(s, DT_COL_D_LABEL, ev->arg_name, strlen(ev->arg_name)) : -1;
    b->dict[DT_COL_D_COLLECTIVE][r] = -1;
    b->dict[DT_COL_D_GROUP][r] = -1;
    b->dict[DT_COL_D_THREAD][r] = col_id_string(s, &ev->tid);
    if (b->dict[DT_COL_D_THREAD][r] < 0)
        b->dict[DT_COL_D_THREAD][r] = col_id_string(s, &ev->pid);
    b->ts[r] = ev->ts_ns;
    b->dur[r] = ev->dur_ns;
    if (ev->has & DT_RD_HAS_TS) v |= DT_COL_V_TS;
    if (ev->has & DT_RD_HAS_DUR) v |= DT_COL_V_DUR;
    b->pid[r] = ev->pid.num;
    b->tid[r] = ev->tid.num;
    if (ev->pid.present && !ev->pid.is_str) {
        v |= DT_COL_V_PID;
        if (ev->pid.num >= (int64_t)1 << DT_COL_RANK_SHIFT)
            b->part[r] = (int32_t)(ev->pid.num >> DT_COL_RANK_SHIFT);
    } else if (ev->pid.present && strncmp(ev->pid.str, "rank ", 5) == 0) {
        b->part[r] = (int32_t)strtol(ev->pid.str + 5, NULL, 10);
    }
    if (ev->tid.present && !ev->tid.is_str) v |= DT_COL_V_TID;
    b->device[r] = ev->device;
    b->stream[r] = ev->stream;
    b->correlation[r] = (int64_t)ev->correlation;
    b->external_id[r] = (int64_t)ev->external_id;
    b->bytes[r] = (int64_t)ev->bytes;
    if (ev->has & DT_RD_HAS_DEVICE) v |= DT_COL_V_DEVICE;
    if (ev->has & DT_RD_HAS_STREAM) v |= DT_COL_V_STREAM;
    if (ev->has & DT_RD_HAS_CORRELATION) v |= DT_COL_V_CORR;
    if (ev->has & DT_RD_HAS_EXTERNAL_ID) v |= DT_COL_V_EXT;
    if (ev->has & DT_RD_HAS_BYTES) v |= DT_COL_V_BYTES;
    b->flow_id[r] = 0;
    if (ev->has & DT_RD_HAS_ID) {
        char *e;
        unsigned long long id = strtoull(ev->id, &e, 10);
        if (!ev->id_is_str && *e == '\0' && id <= INT64_MAX) {
            b->flow_id[r] = (int64_t)id;
            v |= DT_COL_V_FLOW;
        } else {
            s->string_flow_ids++;
        }
    }
    memset(&b->grid[3 * r], 0, 3 * sizeof *b->grid);
    memset(&b->block[3 * r], 0, 3 * sizeof *b->block);
    /* args the reader does not keep, read from the event's text: only
       device work has them */
    if (dt_rd_cat_is_device_work(ev->cat_kind) && ev->raw && ev->at[DT_RD_AT_ARGS].len) {
        const char *args = ev->raw + ev->at[DT_RD_AT_ARGS].off, *end = ev->raw + ev->raw_len;
        if (col_triple(col_arg(args, end, "\"grid\""), end, &b->grid[3 * r])) v |= DT_COL_V_GRID;
        if (col_triple(col_arg(args, end, "\"block\""), end, &b->block[3 * r])) v |= DT_COL_V_BLOCK;
        if (ev->has & DT_RD_HAS_COLLECTIVE) {
            b->dict[DT_COL_D_COLLECTIVE][r] =
                col_string_arg(s, DT_COL_D_COLLECTIVE, col_arg(args, end, "\"Collective name\""), end);
            b->dict[DT_COL_D_GROUP][r] =
                col_string_arg(s, DT_COL_D_GROUP, col_arg(args, end, "\"Process Group Name\""), end);
        }
    }
    b->valid[r] = v;
    if (s->failed)
        return 1;
    if (++b->rows == s->cap)
        return col_flush(s);
    return 0;
}

/* ---- the metadata as JSON ---------------------------------------------- */

typedef struct col_text {
    char *p;
    size_t len, cap;
    bool failed;
    bool fresh; /* just after a '{': the next key takes no comma */
} col_text;

static void col_reserve(col_text *t, size_t more)
{
    if (t->failed || t->len + more + 1 <= t->cap)
        return;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *n = realloc(t->p, cap);
    if (!n) {
        t->failed = true;
        return;
    }
    t->p = n;
    t->cap = cap;
}

static void col_printf(col_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void col_printf(col_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    col_reserve(t, (size_t)n);
    if (t->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void col_string(col_text *t, const char *s)
{
    size_t n = strlen(s);
    col_reserve(t, dt_json_escaped_max(n));
    if (t->failed)
        return;
    t->len = (size_t)(dt_json_escape(t->p + t->len, s, n) - t->p);
    t->p[t->len] = '\0';
}

static void col_open(col_text *t)
{
    col_printf(t, "{");
    t->fresh = true;
}

static void col_key(col_text *t, const char *key)
{
    col_printf(t, "%s", t->fresh ? "" : ", ");
    t->fresh = false;
    col_string(t, key);
    col_printf(t, ": ");
}

static void col_key_string(col_text *t, const char *key, const char *value)
{
    if (!value)
        return;
    col_key(t, key);
    col_string(t, value);
}

static void col_kvlist(col_text *t, const char *key, const dt_rd_kvlist *l)
{
    if (!l->present)
        return;
    col_key(t, key);
    col_printf(t, "{");
    for (size_t i = 0; i < l->count; i++) {
        col_printf(t, "%s", i ? ", " : "");
        col_string(t, l->items[i].key);
        col_printf(t, ": %" PRId64, l->items[i].value);
    }
    col_printf(t, "}");
}

static char *col_meta(const dt_rd_summary *m, const col_state *s, const char *error)
{
    col_text t = {0};
    col_open(&t);
    col_key(&t, "events");
    col_printf(&t, "%" PRIu64, m->event_count);
    col_key(&t, "bytes");
    col_printf(&t, "%" PRIu64, m->bytes);
    col_key(&t, "compressed");
    col_printf(&t, m->compressed ? "true" : "false");
    col_key(&t, "stringFlowIds");
    col_printf(&t, "%" PRIu64, s->string_flow_ids);
    if (error)
        col_key_string(&t, "error", error);
    if (m->has_schema_version) {
        col_key(&t, "schemaVersion");
        col_printf(&t, "%" PRId64, m->schema_version);
    }
    if (m->has_base_time) {
        col_key(&t, "baseTimeNanoseconds");
        col_printf(&t, "%" PRId64, m->base_time_ns);
    }
    col_key(&t, "devices");
    col_printf(&t, "%zu", m->device_count);
    col_key_string(&t, "traceName", m->trace_name);
    col_key(&t, "devtrace");
    col_printf(&t, m->has_devtrace ? "true" : "false");
    col_key_string(&t, "version", m->version);
    col_key_string(&t, "backend", m->backend);
    col_key_string(&t, "vendor", m->vendor);
    col_key_string(&t, "library", m->library);
    col_key_string(&t, "libraryVersion", m->library_version);
    col_key_string(&t, "host", m->host);
    if (m->has_pid) {
        col_key(&t, "pid");
        col_printf(&t, "%" PRId64, m->pid);
    }
    if (m->has_window_start) {
        col_key(&t, "windowStartNs");
        col_printf(&t, "%" PRId64, m->window_start_ns);
    }
    if (m->has_window_end) {
        col_key(&t, "windowEndNs");
        col_printf(&t, "%" PRId64, m->window_end_ns);
    }
    if (m->has_clock) {
        col_key(&t, "clock");
        col_printf(&t, "{\"slope\": %.17g, \"offsetNs\": %.17g, \"errorBoundNs\": %.17g, \"samples\": %" PRId64
                   ", \"segments\": %" PRId64 ", \"identity\": %s}",
                   m->clock_slope, m->clock_offset_ns, m->clock_error_bound_ns, m->clock_samples,
                   m->clock_segments, m->clock_identity ? "true" : "false");
    }
    col_kvlist(&t, "loss", &m->loss);
    col_kvlist(&t, "counts", &m->counts);
    if (m->has_realtime_clock) {
        col_key(&t, "realtimeClock");
        col_open(&t);
        col_key_string(&t, "clocksource", m->clocksource ? m->clocksource : "");
        if (m->has_host_sync)
            col_printf(&t, ", \"synchronized\": %s", m->host_synchronized ? "true" : "false");
        if (m->has_host_max_error)
            col_printf(&t, ", \"maxErrorUs\": %" PRId64 ", \"estErrorUs\": %" PRId64, m->host_max_error_us,
                       m->host_est_error_us);
        col_printf(&t, "}");
    }
    if (m->has_distributed_info) {
        col_key(&t, "distributedInfo");
        col_open(&t);
        if (m->has_rank) {
            col_key(&t, "rank");
            col_printf(&t, "%" PRId64, m->rank);
        }
        col_key(&t, "local_rank");
        col_printf(&t, "%" PRId64, m->local_rank);
        col_key(&t, "world_size");
        col_printf(&t, "%" PRId64, m->world_size);
        col_key_string(&t, "host", m->rank_host);
        col_key_string(&t, "launcher", m->launcher);
        col_printf(&t, "}");
    }
    if (m->notes.count) {
        col_key(&t, "notes");
        col_printf(&t, "{");
        for (size_t i = 0; i < m->notes.count; i++) {
            col_printf(&t, "%s", i ? ", " : "");
            col_string(&t, m->notes.items[i].key);
            col_printf(&t, ": ");
            col_string(&t, m->notes.items[i].text);
        }
        col_printf(&t, "}");
    }
    col_printf(&t, "}");
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

int dt_col_read(const char *path, size_t rows, dt_col_sink sink, void *user, char **meta, char *err,
                size_t errlen)
{
    if (meta)
        *meta = NULL;
    dt_rd_source *src = dt_rd_open_file(path, err, errlen);
    if (!src)
        return -1;
    col_state s;
    memset(&s, 0, sizeof s);
    s.sink = sink;
    s.user = user;
    for (int d = 0; d < DT_COL_D_COUNT; d++)
        dt_strtab_init(&s.dict[d]);
    dt_rd_summary summary;
    memset(&summary, 0, sizeof summary);
    int rc;
    if (col_alloc(&s, rows ? rows : DT_COL_DEFAULT_ROWS) != 0) {
        snprintf(err, errlen, "out of memory for a batch of %zu rows", rows ? rows : DT_COL_DEFAULT_ROWS);
        rc = -1;
    } else {
        dt_rd_options opts = {.visit = col_visit, .user = &s, .flags = DT_RD_RAW};
        rc = dt_rd_read_opts(src, &opts, &summary, err, errlen);
        if (s.failed) {
            snprintf(err, errlen, "out of memory for the trace's distinct strings");
            rc = -1;
        }
        if (rc == 0)
            rc = col_flush(&s);
    }
    if (meta)
        *meta = col_meta(&summary, &s, rc == -1 ? err : NULL);
    dt_rd_summary_free(&summary);
    col_release(&s);
    dt_rd_close(src);
    return rc;
}
