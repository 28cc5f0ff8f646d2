/*
 * `devtrace merge`: several traces of one job become one trace.
 *
 * Each input is read twice, one at a time, so that memory follows the
 * largest input's index, never the sum: a first pass keeps a small summary
 * of every input (rank, host, process, clock, loss, id ranges, time
 * extent); then, group by group (the inputs of one process: a devtrace
 * trace and the torch.profiler trace of the same process), the second pass
 * copies each event's text as written, changing only what must change:
 *  - pids, so that every rank's processes and devices stay apart (rank 0
 *    keeps its own, rank k's numeric pids move by k * 2^23, above any Linux
 *    pid), and process names and labels, which say the rank ("rank 3 GPU 0");
 *  - flow ids and correlation ids, and External ids, moved per input past
 *    the ids of the inputs before it, so that none is ambiguous;
 *  - ts, when the inputs' baseTimeNanoseconds differ;
 *  - in a group with a torch.profiler trace, the External id of each
 *    devtrace runtime/driver call: the innermost cpu_op on the same thread
 *    whose span contains the call's start, passed on to the call's device
 *    work through the correlation id (what Kineto's own linking gives).
 * Attribution is summed again from the written device events; loss counts,
 * notes and clock facts are kept per rank in devtrace.ranks.
 */
#include "dt_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_out.h"
#include "export/writers.h"
#include "pf_convert.h"

#define RANGE_ID_BASE (UINT64_C(1) << 48)
#define PID_STRIDE (INT64_C(1) << 23)
#define MAX_INPUTS 512
#define DEVICE_SORT_BASE 5000000

/* ------------------------------------------------------------------ */
/* Inputs                                                              */
/* ------------------------------------------------------------------ */
typedef struct input {
    const char *path;
    dt_rd_summary sum;
    bool devtrace; /* written by devtrace (its key, not the plugin's) */
    bool has_cpu_ops;
    int64_t main_pid; /* devtrace.pid, or the pid of most host events */
    bool has_main_pid;
    uint64_t max_flow, max_ext, max_range;
    bool has_flows, has_ext, has_range;
    int64_t min_ns, max_ns; /* X events' extent, absolute */
    bool has_extent;
    int group;
    /* offsets given in the second pass */
    uint64_t flow_off, ext_off, range_off;
    int64_t ts_delta_ns;
    /* deviceProperties entries as written, and where their "id" lies */
    char **devices;
    dt_rd_span *device_ids;
    size_t ndevices;
    /* what it holds that breaks the trace format, carried over as written */
    uint64_t negative_durations; /* complete events with "dur" < 0 */
    uint64_t broken_flows;       /* ac2g flow ids with more than one start or finish, or neither */
    uint64_t cut_flows;          /* ac2g flow ids with one side only: a start or a finish */
    dev_t dev; /* the file, to find it given twice or as the output */
    ino_t ino;
} input;

typedef struct group {
    int first_input;
    int count;
    int rank_pos;       /* position in the output, by rank */
    bool has_rank;
    int64_t rank;
    char label[64];     /* "rank 3" or "trace 2" */
    int host_sort;      /* host processes named so far */
} group;

/* A cpu_op of the torch.profiler trace of a group: its thread, span and id. */
typedef struct cpu_op {
    int64_t tid;
    int64_t start, end;
    uint64_t ext;
    size_t parent; /* SIZE_MAX: none */
} cpu_op;

typedef struct merger {
    input *in;
    int nin;
    group *groups;
    int ngroups;
    int64_t base_ns;
    int64_t window_start, window_end;
    FILE *err;
    /* per group, while writing it */
    cpu_op *ops;
    size_t nops, ops_cap;
    dt_u64map corr_ext;   /* devtrace correlation -> cpu_op External id */
    dt_u64map attr;       /* final External id -> device ns */
    FILE *spill_attr, *spill_parents;
    uint64_t events_written;
    bool first_event;
    bool oom;
    /* per group: each pid and row the output uses, keyed by how it is
       written ("7", "\"rank 1 Spans\"", "7 8"), and whether metadata named
       it (ROW_*) */
    dt_strtab out_pids, out_rows;
    uint8_t *pid_flags, *row_flags;
    size_t pid_flags_cap, row_flags_cap;
} merger;

enum { ROW_USED = 1, ROW_NAMED = 2 };

static bool is_host_cat(int cat)
{
    return dt_rd_cat_is_api(cat) || cat == DT_RD_CAT_CPU_OP || cat == DT_RD_CAT_USER_ANNOTATION ||
           cat == DT_RD_CAT_PYTHON_FUNCTION;
}

/* Flows from runtime calls to device work: their ids are correlation ids,
   which merge moves per input. Other flows (torch's fwdbwd) keep theirs. */
static bool is_ac2g_flow(const dt_rd_event *e)
{
    return (e->ph[0] == 's' || e->ph[0] == 'f' || e->ph[0] == 't') && !e->ph[1] && e->cat_kind == DT_RD_CAT_AC2G;
}

static bool is_capture_event(const dt_rd_event *e)
{
    return e->cat_kind == DT_RD_CAT_TRACE && strcmp(e->name, "devtrace capture") == 0;
}

/* ---- pass 1 ---- */
typedef struct pass1 {
    input *in;
    /* the most frequent host pid of a foreign trace: its process */
    int64_t pids[8];
    uint64_t counts[8];
    dt_u64map flow_ends; /* ac2g flow id -> starts << 32 | finishes */
    bool *oom;
} pass1;

static int pass1_visit(void *user, const dt_rd_event *e)
{
    pass1 *p = user;
    input *in = p->in;
    if (e->ph[0] == 'X' && (e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) == (DT_RD_HAS_TS | DT_RD_HAS_DUR)) {
        int64_t st = e->ts_ns, en = dt_rd_add_sat(e->ts_ns, e->dur_ns);
        if (!in->has_extent || st < in->min_ns)
            in->min_ns = st;
        if (!in->has_extent || en > in->max_ns)
            in->max_ns = en;
        in->has_extent = true;
        if (e->cat_kind == DT_RD_CAT_CPU_OP)
            in->has_cpu_ops = true;
        if (is_host_cat(e->cat_kind) && e->pid.present && !e->pid.is_str) {
            for (int k = 0; k < 8; k++) {
                if (p->counts[k] && p->pids[k] == e->pid.num) {
                    p->counts[k]++;
                    break;
                }
                if (!p->counts[k]) {
                    p->pids[k] = e->pid.num;
                    p->counts[k] = 1;
                    break;
                }
            }
        }
    }
    if (e->ph[0] == 'X' && (e->has & DT_RD_HAS_DUR) && e->dur_ns < 0)
        in->negative_durations++;
    if (e->has & DT_RD_HAS_EXTERNAL_ID) {
        uint64_t *dst = e->external_id >= RANGE_ID_BASE ? &in->max_range : &in->max_ext;
        bool *has = e->external_id >= RANGE_ID_BASE ? &in->has_range : &in->has_ext;
        if (!*has || e->external_id > *dst)
            *dst = e->external_id;
        *has = true;
    }
    uint64_t id;
    if (is_ac2g_flow(e) && (e->has & DT_RD_HAS_ID) && !e->id_is_str && strchr(e->id, '.') == NULL &&
        sscanf(e->id, "%" SCNu64, &id) == 1) {
        if (!in->has_flows || id > in->max_flow)
            in->max_flow = id;
        in->has_flows = true;
        uint64_t *ends = dt_u64map_slot(&p->flow_ends, id, NULL);
        if (!ends) {
            *p->oom = true;
            return 1;
        }
        *ends += e->ph[0] == 's' ? UINT64_C(1) << 32 : e->ph[0] == 'f' ? 1 : 0;
    }
    if ((e->has & DT_RD_HAS_CORRELATION) && (!in->has_flows || e->correlation > in->max_flow)) {
        in->max_flow = e->correlation;
        in->has_flows = true;
    }
    return 0;
}

/* A deviceProperties entry of the input being indexed, kept as written. */
static int pass1_device(void *user, const char *raw, size_t len, dt_rd_span id)
{
    pass1 *p = user;
    input *in = p->in;
    char **d = realloc(in->devices, (in->ndevices + 1) * sizeof *d);
    dt_rd_span *ids = d ? realloc(in->device_ids, (in->ndevices + 1) * sizeof *ids) : NULL;
    if (d)
        in->devices = d;
    if (ids)
        in->device_ids = ids;
    char *copy = ids ? malloc(len + 1) : NULL;
    if (!copy)
        return 1;
    memcpy(copy, raw, len);
    copy[len] = '\0';
    in->devices[in->ndevices] = copy;
    in->device_ids[in->ndevices++] = id;
    return 0;
}

static int read_input(merger *m, input *in, dt_rd_visitor visit, void *user, unsigned flags, dt_rd_summary *sum)
{
    char msg[512];
    dt_rd_source *src = dt_rd_open_file(in->path, msg, sizeof msg);
    if (!src) {
        fprintf(m->err, "merge: %s\n", msg);
        return -1;
    }
    dt_rd_options o = {.visit = visit, .user = user, .flags = flags};
    if (visit == pass1_visit)
        o.device = pass1_device;
    int rc = dt_rd_read_opts(src, &o, sum, msg, sizeof msg);
    dt_rd_close(src);
    if (rc != 0) {
        if (m->oom)
            fprintf(m->err, "merge: out of memory\n");
        else
            fprintf(m->err, "merge: %s: %s\n", in->path, msg[0] ? msg : "stopped");
        return -1;
    }
    return 0;
}

static int index_inputs(merger *m)
{
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        pass1 p = {.in = in, .oom = &m->oom};
        int rc = read_input(m, in, pass1_visit, &p, DT_RD_JSON, &in->sum);
        size_t cursor = 0;
        uint64_t id, ends;
        while (dt_u64map_next(&p.flow_ends, &cursor, &id, &ends)) {
            bool cut = ends == UINT64_C(1) << 32 || ends == 1;
            in->cut_flows += cut;
            in->broken_flows += !cut && ends != (UINT64_C(1) << 32 | 1);
        }
        dt_u64map_free(&p.flow_ends);
        if (rc != 0)
            return -1;
        /* the plugin's key inside torch.profiler's trace does not make it devtrace's */
        in->devtrace = in->sum.has_devtrace &&
                       !(in->sum.writer && strcmp(in->sum.writer, DT_RD_WRITER_PLUGIN) == 0);
        if (in->sum.has_pid) {
            in->main_pid = in->sum.pid;
            in->has_main_pid = true;
        } else {
            uint64_t best = 0;
            for (int k = 0; k < 8; k++)
                if (p.counts[k] > best) {
                    best = p.counts[k];
                    in->main_pid = p.pids[k];
                    in->has_main_pid = true;
                }
        }
        int64_t base = in->sum.has_base_time ? in->sum.base_time_ns : 0;
        if (in->has_extent) {
            in->min_ns = dt_rd_add_sat(in->min_ns, base);
            in->max_ns = dt_rd_add_sat(in->max_ns, base);
        }
    }
    return 0;
}

static const char *input_host(const input *in)
{
    return in->sum.host ? in->sum.host : in->sum.rank_host ? in->sum.rank_host : in->sum.host_name;
}

/* The host every input that names one names (torch.profiler's top-level
   "host_name" kept as it wrote it), or NULL when none or several. */
static const char *common_host(const merger *m)
{
    const char *h = NULL;
    for (int i = 0; i < m->nin; i++) {
        const char *x = input_host(&m->in[i]);
        if (x && h && strcmp(x, h) != 0)
            return NULL;
        if (x)
            h = x;
    }
    return h;
}

/* Two inputs are one process: the same pid, and no host or rank that differs. */
static bool same_process(const input *a, const input *b)
{
    if (!a->has_main_pid || !b->has_main_pid || a->main_pid != b->main_pid)
        return false;
    const char *ha = input_host(a), *hb = input_host(b);
    if (ha && hb && strcmp(ha, hb) != 0)
        return false;
    if (a->sum.has_rank && b->sum.has_rank && a->sum.rank != b->sum.rank)
        return false;
    return a->devtrace != b->devtrace; /* a devtrace trace and a foreign one */
}

static int cmp_group_rank(const void *x, const void *y)
{
    const group *a = x, *b = y;
    if (a->has_rank != b->has_rank)
        return a->has_rank ? -1 : 1;
    if (a->has_rank && a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->first_input < b->first_input ? -1 : a->first_input > b->first_input;
}

static int make_groups(merger *m)
{
    int *order = calloc((size_t)(unsigned)m->nin, sizeof *order);
    m->groups = calloc((size_t)(unsigned)m->nin, sizeof *m->groups);
    if (!order || !m->groups) {
        free(order);
        return -1;
    }
    for (int i = 0; i < m->nin; i++)
        m->in[i].group = -1;
    for (int i = 0; i < m->nin; i++) {
        if (m->in[i].group >= 0)
            continue;
        group *g = &m->groups[m->ngroups];
        g->first_input = i;
        m->in[i].group = m->ngroups;
        for (int j = i + 1; j < m->nin; j++) {
            if (m->in[j].group < 0 && same_process(&m->in[i], &m->in[j])) {
                bool taken = false; /* one devtrace and one foreign trace per process */
                for (int k = 0; k < m->nin; k++)
                    taken |= m->in[k].group == m->ngroups && k != i;
                if (!taken)
                    m->in[j].group = m->ngroups;
            }
        }
        for (int j = 0; j < m->nin; j++) {
            if (m->in[j].group != m->ngroups)
                continue;
            g->count++;
            if (m->in[j].sum.has_rank) {
                g->has_rank = true;
                g->rank = m->in[j].sum.rank;
            }
        }
        m->ngroups++;
    }
    /* output order: by rank */
    qsort(m->groups, (size_t)m->ngroups, sizeof *m->groups, cmp_group_rank);
    for (int gi = 0; gi < m->ngroups; gi++) {
        group *g = &m->groups[gi];
        int old = m->in[g->first_input].group;
        for (int i = 0; i < m->nin; i++)
            if (m->in[i].group == old)
                order[i] = gi;
        g->rank_pos = gi;
        if (g->has_rank)
            snprintf(g->label, sizeof g->label, "rank %" PRId64, g->rank);
        else
            snprintf(g->label, sizeof g->label, "trace %d", g->first_input);
    }
    for (int i = 0; i < m->nin; i++)
        m->in[i].group = order[i];
    free(order);
    return 0;
}

/* Id offsets and the common time base. */
static void plan_ids(merger *m)
{
    uint64_t flow = 0, ext = 0, range = 0;
    bool have_base = false;
    m->window_start = INT64_MAX;
    m->window_end = INT64_MIN;
    for (int gi = 0; gi < m->ngroups; gi++) {
        /* foreign inputs first: in a group, the torch trace's ids stay as
           they are and devtrace's own ids move past them */
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < m->nin; i++) {
                input *in = &m->in[i];
                if (in->group != gi || in->devtrace != (pass == 1))
                    continue;
                in->flow_off = flow;
                in->ext_off = ext;
                in->range_off = range;
                if (in->has_flows)
                    flow += in->max_flow + 1;
                if (in->has_ext)
                    ext += in->max_ext + 1;
                if (in->has_range)
                    range += in->max_range - RANGE_ID_BASE + 1;
            }
        }
    }
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        int64_t base = in->sum.has_base_time ? in->sum.base_time_ns : 0;
        if (!have_base || base < m->base_ns)
            m->base_ns = base;
        have_base = true;
        if (in->has_extent) {
            if (in->min_ns < m->window_start)
                m->window_start = in->min_ns;
            if (in->max_ns > m->window_end)
                m->window_end = in->max_ns;
        }
        if (in->sum.has_window_start && in->sum.window_start_ns < m->window_start)
            m->window_start = in->sum.window_start_ns;
        if (in->sum.has_window_end && in->sum.window_end_ns > m->window_end)
            m->window_end = in->sum.window_end_ns;
    }
    if (m->window_start > m->window_end)
        m->window_start = m->window_end = m->base_ns;
    for (int i = 0; i < m->nin; i++) {
        int64_t base = m->in[i].sum.has_base_time ? m->in[i].sum.base_time_ns : 0;
        m->in[i].ts_delta_ns = base - m->base_ns;
    }
}

/* ------------------------------------------------------------------ */
/* The cpu_op index of a group's torch trace                           */
/* ------------------------------------------------------------------ */
static int ops_visit(void *user, const dt_rd_event *e)
{
    merger *m = user;
    if (e->ph[0] != 'X' || e->cat_kind != DT_RD_CAT_CPU_OP || !(e->has & DT_RD_HAS_EXTERNAL_ID) ||
        !e->tid.present || e->tid.is_str)
        return 0;
    if (dt_rd_grow((void **)&m->ops, &m->ops_cap, m->nops + 1, sizeof *m->ops) != 0) {
        m->oom = true;
        return 1;
    }
    m->ops[m->nops++] = (cpu_op){e->tid.num, e->ts_ns, dt_rd_add_sat(e->ts_ns, e->dur_ns), e->external_id, SIZE_MAX};
    return 0;
}

static int cmp_op(const void *x, const void *y)
{
    const cpu_op *a = x, *b = y;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end; /* enclosing first */
}

/* Each op's enclosing op on its thread (ops on a thread nest), so that the
   innermost op containing a time is found by walking up from the last op
   that starts by then: O(depth) per lookup. */
static void link_parents(merger *m)
{
    size_t *stack = NULL, depth = 0, cap = 0;
    for (size_t k = 0; k < m->nops; k++) {
        cpu_op *o = &m->ops[k];
        if (k > 0 && m->ops[k - 1].tid != o->tid)
            depth = 0;
        while (depth > 0 && m->ops[stack[depth - 1]].end < o->start)
            depth--;
        o->parent = depth > 0 ? stack[depth - 1] : SIZE_MAX;
        if (dt_rd_grow((void **)&stack, &cap, depth + 1, sizeof *stack) != 0) {
            m->oom = true;
            break;
        }
        stack[depth++] = k;
    }
    free(stack);
}

/* The innermost cpu_op of thread tid whose span contains t (torch-trace
   time), or NULL. */
static const cpu_op *innermost_op(const merger *m, int64_t tid, int64_t t)
{
    size_t lo = 0, hi = m->nops;
    while (lo < hi) { /* the first op after (tid, t) */
        size_t mid = lo + (hi - lo) / 2;
        const cpu_op *o = &m->ops[mid];
        if (o->tid < tid || (o->tid == tid && o->start <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || m->ops[lo - 1].tid != tid)
        return NULL;
    for (size_t k = lo - 1; k != SIZE_MAX; k = m->ops[k].parent)
        if (m->ops[k].end >= t)
            return &m->ops[k];
    return NULL;
}

typedef struct link_ctx {
    merger *m;
    input *in;
    int64_t to_torch_ns; /* devtrace ts -> torch trace ts */
} link_ctx;

static int link_visit(void *user, const dt_rd_event *e)
{
    link_ctx *l = user;
    if (e->ph[0] != 'X' || !dt_rd_cat_is_api(e->cat_kind) || !(e->has & DT_RD_HAS_CORRELATION) || !e->tid.present ||
        e->tid.is_str)
        return 0;
    const cpu_op *op = innermost_op(l->m, e->tid.num, e->ts_ns + l->to_torch_ns);
    if (!op)
        return 0;
    uint64_t *slot = dt_u64map_slot(&l->m->corr_ext, e->correlation, NULL);
    if (!slot) {
        l->m->oom = true;
        return 1;
    }
    *slot = op->ext + 1; /* 0: none */
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */
typedef struct writer {
    merger *m;
    dt_out *o;
    input *in;
    group *g;
    bool linked; /* the group has a cpu_op index */
} writer;

#define out_text dt_out_text
#define out_u64 dt_out_u64
#define out_i64 dt_out_i64
#define out_str dt_out_cstr

static void out_us3(dt_out *o, int64_t ns)
{
    char *p = dt_out_reserve(o, 32);
    if (ns < 0) {
        *p++ = '-';
        ns = -ns;
    }
    dt_out_commit(o, dt_put_us3(p, (uint64_t)ns));
}

static uint64_t remap_ext(const input *in, uint64_t id)
{
    return id >= RANGE_ID_BASE ? id + in->range_off : id + in->ext_off;
}

/* A pid written as a string (Kineto's "Spans"): a rank's own, so that two
   ranks' never meet; the first rank's stay as they are, like its numbers. */
static bool moves_str_pid(const writer *w, const dt_rd_id *pid)
{
    return pid->present && pid->is_str && w->g->rank_pos > 0;
}

static void out_str_pid(const writer *w, const char *pid)
{
    char buf[600];
    snprintf(buf, sizeof buf, "%s %.500s", w->g->label, pid);
    out_str(w->o, buf);
}

static bool remap_pid(const writer *w, const dt_rd_id *pid, int64_t *out)
{
    if (!pid->present || pid->is_str)
        return false;
    *out = pid->num + (int64_t)w->g->rank_pos * PID_STRIDE;
    return true;
}

/* One edit of an event's text: replace [off, off+len) by the text made by
   kind. */
enum { ED_PID, ED_PID_STR, ED_TS, ED_ID, ED_EXT, ED_CORR, ED_PARENT, ED_INSERT_EXT };

typedef struct edit {
    uint32_t off, len;
    int kind;
    uint64_t u;
    int64_t i;
} edit;

static int cmp_edit(const void *x, const void *y)
{
    const edit *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

static void write_edited(writer *w, const dt_rd_event *e, edit *ed, int n)
{
    dt_out *o = w->o;
    qsort(ed, (size_t)n, sizeof *ed, cmp_edit);
    out_text(o, w->m->first_event ? "\n" : ",\n");
    w->m->first_event = false;
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        dt_out_write(o, e->raw + at, ed[k].off - at);
        switch (ed[k].kind) {
        case ED_PID:
            out_i64(o, ed[k].i);
            break;
        case ED_PID_STR:
            out_str_pid(w, e->pid.str);
            break;
        case ED_TS:
            out_us3(o, ed[k].i);
            break;
        case ED_INSERT_EXT:
            out_text(o, "\"External id\":");
            out_u64(o, ed[k].u);
            out_text(o, ed[k].i ? "," : "");
            break;
        default:
            out_u64(o, ed[k].u);
            break;
        }
        at = ed[k].off + ed[k].len;
    }
    dt_out_write(o, e->raw + at, e->raw_len - at);
}

static bool args_empty(const dt_rd_event *e)
{
    const char *p = e->raw + e->at[DT_RD_AT_ARGS].off + 1;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return *p == '}';
}

static void write_meta(writer *w, const dt_rd_event *e, const char *what, int64_t pid, const char *key,
                       const char *text, bool is_int, int64_t value)
{
    dt_out *o = w->o;
    out_text(o, w->m->first_event ? "\n" : ",\n");
    w->m->first_event = false;
    out_text(o, "{\"ph\":\"M\",\"name\":\"");
    out_text(o, what);
    out_text(o, "\",\"pid\":");
    if (moves_str_pid(w, &e->pid))
        out_str_pid(w, e->pid.str);
    else if (e->pid.is_str)
        out_str(o, e->pid.str);
    else
        out_i64(o, pid);
    out_text(o, ",\"tid\":");
    if (e->tid.is_str)
        out_str(o, e->tid.str);
    else
        out_i64(o, e->tid.present ? e->tid.num : 0);
    out_text(o, ",\"ts\":");
    out_us3(o, dt_rd_add_sat(e->ts_ns, w->in->ts_delta_ns));
    out_text(o, ",\"args\":{\"");
    out_text(o, key);
    out_text(o, "\":");
    if (is_int)
        out_i64(o, value);
    else
        out_str(o, text);
    out_text(o, "}}");
}

/* A pid or tid as the output writes it, as a key: "n:7", or "s:" and the
   string ("s:rank 1 Spans"). */
static void out_id_key(const writer *w, const dt_rd_id *id, bool is_pid, int64_t moved, char *buf, size_t n)
{
    if (!id->present)
        snprintf(buf, n, "n:0");
    else if (id->is_str && is_pid && moves_str_pid(w, id))
        snprintf(buf, n, "s:%s %.400s", w->g->label, id->str);
    else if (id->is_str)
        snprintf(buf, n, "s:%.400s", id->str);
    else
        snprintf(buf, n, "n:%" PRId64, is_pid ? moved : id->num);
}

static void out_id(dt_out *o, const char *key)
{
    if (key[0] == 's')
        out_str(o, key + 2);
    else
        out_text(o, key + 2);
}

static int mark_out(merger *m, dt_strtab *t, uint8_t **flags, size_t *cap, const char *key, size_t len,
                    uint8_t bit)
{
    int64_t id = dt_strtab_intern(t, key, len, NULL);
    if (id < 0 || dt_rd_grow((void **)flags, cap, (size_t)id + 1, 1) != 0)
        return -1;
    (*flags)[id] |= bit;
    return 0;
}

/* Whether the event names or uses a pid and a row of the output. A row's
   key is its pid's key, a NUL, and its tid's key. */
static int mark_rows(writer *w, const dt_rd_event *e, int64_t pid)
{
    merger *m = w->m;
    char p[512], t[512], row[1030];
    bool meta = e->ph[0] == 'M' && !e->ph[1];
    if ((meta && strcmp(e->name, "process_name") != 0 && strcmp(e->name, "thread_name") != 0) || !e->pid.present)
        return 0;
    out_id_key(w, &e->pid, true, pid, p, sizeof p);
    out_id_key(w, &e->tid, false, 0, t, sizeof t);
    size_t pl = strlen(p), tl = strlen(t);
    memcpy(row, p, pl + 1);
    memcpy(row + pl + 1, t, tl);
    size_t rl = pl + 1 + tl;
    if (meta && strcmp(e->name, "process_name") == 0)
        return mark_out(m, &m->out_pids, &m->pid_flags, &m->pid_flags_cap, p, pl, ROW_NAMED);
    if (meta)
        return e->tid.present ? mark_out(m, &m->out_rows, &m->row_flags, &m->row_flags_cap, row, rl, ROW_NAMED)
                              : 0;
    if (mark_out(m, &m->out_pids, &m->pid_flags, &m->pid_flags_cap, p, pl, ROW_USED) != 0)
        return -1;
    return e->tid.present ? mark_out(m, &m->out_rows, &m->row_flags, &m->row_flags_cap, row, rl, ROW_USED) : 0;
}

static void reset_out_rows(merger *m)
{
    dt_strtab_free(&m->out_pids);
    dt_strtab_free(&m->out_rows);
    dt_strtab_init(&m->out_pids);
    dt_strtab_init(&m->out_rows);
    free(m->pid_flags);
    free(m->row_flags);
    m->pid_flags = m->row_flags = NULL;
    m->pid_flags_cap = m->row_flags_cap = 0;
}

/* Metadata for each pid and row the group's output uses and no metadata
   named (torch.profiler's "Spans", "Traces" and "" among them): a pid by
   its text, a row by its tid. */
static void name_unnamed_rows(merger *m, dt_out *o, const group *g)
{
    char name[1100];
    for (size_t i = 0; i < m->out_pids.count; i++) {
        if (m->pid_flags[i] != ROW_USED)
            continue;
        const char *p = dt_strtab_key(&m->out_pids, i);
        if (p[0] == 's' && strncmp(p + 2, g->label, strlen(g->label)) == 0)
            snprintf(name, sizeof name, "%s", p + 2); /* a moved string pid says its rank already */
        else
            snprintf(name, sizeof name, "%s %s%s%s", g->label, p[0] == 's' ? "" : "pid ", p + 2,
                     p[0] == 's' && !p[2] ? "(pid \"\")" : "");
        out_text(o, m->first_event ? "\n" : ",\n");
        m->first_event = false;
        out_text(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
        out_id(o, p);
        out_text(o, ",\"tid\":0,\"args\":{\"name\":");
        out_str(o, name);
        out_text(o, "}}");
    }
    for (size_t i = 0; i < m->out_rows.count; i++) {
        if (m->row_flags[i] != ROW_USED)
            continue;
        const char *p = dt_strtab_key(&m->out_rows, i);
        const char *t = p + strlen(p) + 1;
        snprintf(name, sizeof name, "%s%s", t[0] == 's' ? "" : "thread ", t[0] == 's' && !t[2] ? "(tid \"\")" : t + 2);
        out_text(o, m->first_event ? "\n" : ",\n");
        m->first_event = false;
        out_text(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        out_id(o, p);
        out_text(o, ",\"tid\":");
        out_id(o, t);
        out_text(o, ",\"args\":{\"name\":");
        out_str(o, name);
        out_text(o, "}}");
    }
}

static int write_visit(void *user, const dt_rd_event *e)
{
    writer *w = user;
    merger *m = w->m;
    input *in = w->in;
    if (is_capture_event(e))
        return 0; /* one capture window for the merged trace, written last */
    int64_t pid = 0;
    bool num_pid = remap_pid(w, &e->pid, &pid);
    if (mark_rows(w, e, pid) != 0) {
        m->oom = true;
        return 1;
    }
    if (e->ph[0] == 'M' && !e->ph[1]) {
        char buf[512];
        if (strcmp(e->name, "process_name") == 0 && (e->has & DT_RD_HAS_ARG_NAME)) {
            snprintf(buf, sizeof buf, "%s %s", w->g->label, e->arg_name);
            write_meta(w, e, "process_name", pid, "name", buf, false, 0);
            return 0;
        }
        if (strcmp(e->name, "process_labels") == 0 && (e->has & DT_RD_HAS_ARG_LABELS)) {
            snprintf(buf, sizeof buf, "%s %s", w->g->label, e->arg_labels);
            write_meta(w, e, "process_labels", pid, "labels", buf, false, 0);
            return 0;
        }
        if (strcmp(e->name, "process_sort_index") == 0 && (e->has & DT_RD_HAS_SORT_INDEX)) {
            /* ranks in order; within a rank its host processes, then devices after every host */
            int64_t sort;
            if (e->sort_index >= DEVICE_SORT_BASE) {
                int64_t dev = e->sort_index - DEVICE_SORT_BASE;
                sort = DEVICE_SORT_BASE + (int64_t)w->g->rank_pos * 1000 + (dev < 999 ? dev : 999);
            } else {
                sort = (int64_t)w->g->rank_pos * 1000 + (w->g->host_sort < 999 ? w->g->host_sort++ : 999);
            }
            write_meta(w, e, "process_sort_index", pid, "sort_index", NULL, true, sort);
            return 0;
        }
    }
    edit ed[8];
    int n = 0;
    if (num_pid && e->at[DT_RD_AT_PID].len && pid != e->pid.num)
        ed[n++] = (edit){e->at[DT_RD_AT_PID].off, e->at[DT_RD_AT_PID].len, ED_PID, 0, pid};
    if (moves_str_pid(w, &e->pid) && e->at[DT_RD_AT_PID].len)
        ed[n++] = (edit){e->at[DT_RD_AT_PID].off, e->at[DT_RD_AT_PID].len, ED_PID_STR, 0, 0};
    if (in->ts_delta_ns && e->at[DT_RD_AT_TS].len)
        ed[n++] = (edit){e->at[DT_RD_AT_TS].off, e->at[DT_RD_AT_TS].len, ED_TS, 0,
                         dt_rd_add_sat(e->ts_ns, in->ts_delta_ns)};
    uint64_t v;
    if (is_ac2g_flow(e) && in->flow_off && e->at[DT_RD_AT_ID].len && !e->id_is_str && strchr(e->id, '.') == NULL &&
        sscanf(e->id, "%" SCNu64, &v) == 1)
        ed[n++] = (edit){e->at[DT_RD_AT_ID].off, e->at[DT_RD_AT_ID].len, ED_ID, v + in->flow_off, 0};
    if ((e->has & DT_RD_HAS_CORRELATION) && in->flow_off && e->at[DT_RD_AT_CORR].len)
        ed[n++] = (edit){e->at[DT_RD_AT_CORR].off, e->at[DT_RD_AT_CORR].len, ED_CORR,
                         e->correlation + in->flow_off, 0};
    if ((e->has & DT_RD_HAS_PARENT) && e->at[DT_RD_AT_PARENT].len)
        ed[n++] = (edit){e->at[DT_RD_AT_PARENT].off, e->at[DT_RD_AT_PARENT].len, ED_PARENT,
                         remap_ext(in, e->parent), 0};
    /* the External id this event ends up with */
    bool has_ext = (e->has & DT_RD_HAS_EXTERNAL_ID) != 0;
    uint64_t ext = has_ext ? remap_ext(in, e->external_id) : 0;
    uint64_t linked;
    if (w->linked && in->devtrace && (e->has & DT_RD_HAS_CORRELATION) && (dt_rd_cat_is_api(e->cat_kind) || dt_rd_cat_is_device_work(e->cat_kind)) &&
        dt_u64map_get(&m->corr_ext, e->correlation, &linked)) {
        const input *torch = NULL;
        for (int i = 0; i < m->nin; i++)
            if (m->in[i].group == in->group && !m->in[i].devtrace)
                torch = &m->in[i];
        ext = remap_ext(torch ? torch : in, linked - 1);
        if (!has_ext && e->at[DT_RD_AT_ARGS].len) {
            ed[n++] = (edit){e->at[DT_RD_AT_ARGS].off + 1, 0, ED_INSERT_EXT, ext, args_empty(e) ? 0 : 1};
        }
        has_ext = true;
    }
    if (has_ext && e->at[DT_RD_AT_EXT].len && (e->has & DT_RD_HAS_EXTERNAL_ID) && ext != e->external_id)
        ed[n++] = (edit){e->at[DT_RD_AT_EXT].off, e->at[DT_RD_AT_EXT].len, ED_EXT, ext, 0};
    if (has_ext && e->ph[0] == 'X' && dt_rd_cat_is_device_work(e->cat_kind)) {
        uint64_t *slot = dt_u64map_slot(&m->attr, ext, NULL);
        if (!slot) {
            m->oom = true;
            return 1;
        }
        *slot = (uint64_t)dt_rd_add_sat((int64_t)*slot, e->dur_ns);
    }
    write_edited(w, e, ed, n);
    m->events_written++;
    return w->o->err ? 1 : 0;
}

static int spill_group(merger *m)
{
    size_t cursor = 0;
    uint64_t key, value;
    while (dt_u64map_next(&m->attr, &cursor, &key, &value))
        fprintf(m->spill_attr, "%" PRIu64 " %" PRIu64 "\n", key, value);
    dt_u64map_free(&m->attr);
    return ferror(m->spill_attr) ? -1 : 0;
}

static int write_group(merger *m, dt_out *o, int gi)
{
    group *g = &m->groups[gi];
    input *torch = NULL;
    int devtrace_inputs = 0;
    for (int i = 0; i < m->nin; i++) {
        if (m->in[i].group != gi)
            continue;
        if (!m->in[i].devtrace && m->in[i].has_cpu_ops)
            torch = &m->in[i];
        devtrace_inputs += m->in[i].devtrace;
    }
    bool linked = false;
    dt_u64map_free(&m->corr_ext);
    reset_out_rows(m);
    if (torch && devtrace_inputs) {
        /* the torch trace's cpu_ops, then each devtrace call's op */
        m->nops = 0;
        dt_rd_summary s;
        if (read_input(m, torch, ops_visit, m, 0, &s) != 0) {
            dt_rd_summary_free(&s);
            return -1;
        }
        dt_rd_summary_free(&s);
        if (m->nops > 1)
            qsort(m->ops, m->nops, sizeof *m->ops, cmp_op);
        link_parents(m);
        if (m->oom)
            return -1;
        for (int i = 0; i < m->nin; i++) {
            input *in = &m->in[i];
            if (in->group != gi || !in->devtrace)
                continue;
            link_ctx l = {m, in, in->ts_delta_ns - torch->ts_delta_ns};
            if (read_input(m, in, link_visit, &l, 0, &s) != 0) {
                dt_rd_summary_free(&s);
                return -1;
            }
            dt_rd_summary_free(&s);
        }
        linked = true;
    }
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        if (in->group != gi)
            continue;
        writer w = {m, o, in, g, linked};
        dt_rd_summary s;
        int rc = read_input(m, in, write_visit, &w, DT_RD_RAW, &s);
        /* externalParents, moved like the ids they name */
        for (size_t k = 0; rc == 0 && k < s.external_parents.count; k++) {
            uint64_t key;
            if (sscanf(s.external_parents.items[k].key, "%" SCNu64, &key) == 1)
                fprintf(m->spill_parents, "%" PRIu64 " %" PRIu64 "\n", remap_ext(in, key),
                        remap_ext(in, (uint64_t)s.external_parents.items[k].value));
        }
        dt_rd_summary_free(&s);
        if (rc != 0)
            return -1;
    }
    name_unnamed_rows(m, o, g);
    return spill_group(m);
}

static void copy_spill(dt_out *o, FILE *f)
{
    rewind(f);
    uint64_t a, b;
    bool first = true;
    while (fscanf(f, "%" SCNu64 " %" SCNu64, &a, &b) == 2) {
        out_text(o, first ? "\n    \"" : ",\n    \"");
        first = false;
        out_u64(o, a);
        out_text(o, "\": ");
        out_u64(o, b);
    }
}

/* The host of input i, or of the trace of the same process merged with it
   (a torch.profiler trace names none). */
static const char *group_host(const merger *m, int i)
{
    const char *h = input_host(&m->in[i]);
    for (int j = 0; !h && j < m->nin; j++)
        if (j != i && m->in[j].group == m->in[i].group)
            h = input_host(&m->in[j]);
    return h;
}

/* What the inputs allow us to say about how their clocks agree. A trace
   that names no host (a foreign one, or one written before devtrace named
   hosts) may come from any host: its clock's offset from the others is
   unknown, and the note says which traces those are. */
static void clock_agreement(merger *m, char *buf, size_t n)
{
    const char *first_host = NULL;
    bool several = false;
    int unnamed = 0;
    char unnamed_list[256] = "";
    double max_bound_ns = 0;
    for (int i = 0; i < m->nin; i++) {
        const char *h = group_host(m, i);
        if (!h) {
            size_t used = strlen(unnamed_list);
            if (used + 8 < sizeof unnamed_list)
                snprintf(unnamed_list + used, sizeof unnamed_list - used, "%s%.*s", unnamed++ ? ", " : "",
                         (int)(sizeof unnamed_list - used - 8), m->in[i].path);
            else
                unnamed++;
        } else if (!first_host) {
            first_host = h;
        } else if (strcmp(h, first_host) != 0) {
            several = true;
        }
        if (m->in[i].sum.has_clock && m->in[i].sum.clock_error_bound_ns > max_bound_ns)
            max_bound_ns = m->in[i].sum.clock_error_bound_ns;
    }
    char named[768];
    if (!first_host) {
        snprintf(named, sizeof named, "no trace names its host: whether they share a clock is unknown, so they may "
                                      "be offset by an unknown amount");
    } else if (!several) {
        snprintf(named, sizeof named,
                 "every trace %scomes from host %s and is on its CLOCK_REALTIME: no offset between them; device times "
                 "were mapped to it within %.0f ns (the largest clock errorBoundNs)",
                 unnamed ? "that names its host " : "", first_host, max_bound_ns);
    } else {
        /* each host's clock is within maxErrorUs of true time when its
           NTP/PTP daemon keeps it synchronized: two hosts agree within the
           sum */
        double worst = 0;
        bool bounded = true;
        for (int i = 0; i < m->nin; i++) {
            const input *a = &m->in[i];
            for (int j = i + 1; j < m->nin; j++) {
                const input *b = &m->in[j];
                const char *ha = group_host(m, i), *hb = group_host(m, j);
                if (!ha || !hb || strcmp(ha, hb) == 0)
                    continue;
                if (!a->sum.has_host_max_error || !b->sum.has_host_max_error || !a->sum.host_synchronized ||
                    !b->sum.host_synchronized) {
                    bounded = false;
                    continue;
                }
                double us = (double)(a->sum.host_max_error_us + b->sum.host_max_error_us);
                if (us > worst)
                    worst = us;
            }
        }
        if (bounded)
            snprintf(named, sizeof named,
                     "traces come from several hosts, each on its own CLOCK_REALTIME, not aligned by merge: ranks on "
                     "different hosts may be offset by up to %.0f us (the sum of the hosts' NTP maxerror), plus %.0f "
                     "ns of device clock mapping",
                     worst, max_bound_ns);
        else
            snprintf(named, sizeof named,
                     "traces come from several hosts, each on its own CLOCK_REALTIME, not aligned by merge: at least "
                     "one host's clock was not synchronized (or its bound is unknown), so ranks on different hosts "
                     "may be offset by an unknown amount");
    }
    if (unnamed && first_host)
        snprintf(buf, n, "%s; %d trace%s name%s no host (%s): %s clock may be offset from the others by an unknown "
                         "amount",
                 named, unnamed, unnamed == 1 ? "" : "s", unnamed == 1 ? "s" : "", unnamed_list,
                 unnamed == 1 ? "its" : "their");
    else
        snprintf(buf, n, "%s", named);
}

static void write_devtrace_key(merger *m, dt_out *o, const char *agreement)
{
    out_text(o, "\"devtrace\": {\n  \"version\": ");
    out_str(o, DT_VERSION_STRING);
    out_text(o, ",\n  \"backend\": \"merged\",\n  \"captureWindow\": {\"startNs\": ");
    out_i64(o, m->window_start);
    out_text(o, ", \"endNs\": ");
    out_i64(o, m->window_end);
    out_text(o, "},\n  \"loss\": {");
    int64_t total = 0;
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *reason = dt_loss_reason_name((dt_loss_reason)r);
        int64_t sum = 0;
        for (int i = 0; i < m->nin; i++)
            for (size_t k = 0; k < m->in[i].sum.loss.count; k++)
                if (strcmp(m->in[i].sum.loss.items[k].key, reason) == 0)
                    sum = dt_rd_add_sat(sum, m->in[i].sum.loss.items[k].value);
        total = dt_rd_add_sat(total, sum);
        out_text(o, r ? ", \"" : "\"");
        out_text(o, reason);
        out_text(o, "\": ");
        out_i64(o, sum);
    }
    out_text(o, ", \"total\": ");
    out_i64(o, total);
    out_text(o, "},\n  \"notes\": {\"clockAgreement\": ");
    out_str(o, agreement);
    out_text(o, "},\n  \"ranks\": [");
    for (int gi = 0; gi < m->ngroups; gi++) {
        for (int i = 0; i < m->nin; i++) {
            const input *in = &m->in[i];
            if (in->group != gi)
                continue;
            const dt_rd_summary *s = &in->sum;
            out_text(o, gi || i != m->groups[0].first_input ? ",\n    {\"label\": " : "\n    {\"label\": ");
            out_str(o, m->groups[gi].label);
            if (s->has_rank) {
                /* no space after the colon: HTA takes the first "rank": N of a file as its rank */
                out_text(o, ", \"rank\":");
                out_i64(o, s->rank);
            }
            out_text(o, ", \"file\": ");
            out_str(o, in->path);
            out_text(o, ", \"format\": ");
            out_str(o, in->devtrace ? "devtrace" : "foreign");
            if (input_host(in)) {
                out_text(o, ", \"host\": ");
                out_str(o, input_host(in));
            }
            if (in->has_main_pid) {
                out_text(o, ", \"pid\": ");
                out_i64(o, in->main_pid);
                out_text(o, ", \"pidInMerged\": ");
                out_i64(o, in->main_pid + (int64_t)m->groups[gi].rank_pos * PID_STRIDE);
            }
            if (s->has_clock) {
                out_text(o, ", \"clockErrorBoundNs\": ");
                out_i64(o, (int64_t)s->clock_error_bound_ns);
            }
            if (s->has_host_max_error) {
                out_text(o, ", \"hostClockSynchronized\": ");
                out_text(o, s->host_synchronized ? "true" : "false");
                out_text(o, ", \"hostClockMaxErrorUs\": ");
                out_i64(o, s->host_max_error_us);
            }
            out_text(o, ", \"loss\": {");
            for (size_t k = 0; k < s->loss.count; k++) {
                out_text(o, k ? ", " : "");
                out_str(o, s->loss.items[k].key);
                out_text(o, ": ");
                out_i64(o, s->loss.items[k].value);
            }
            out_text(o, "}, \"notes\": {");
            for (size_t k = 0; k < s->notes.count; k++) {
                out_text(o, k ? ", " : "");
                out_str(o, s->notes.items[k].key);
                out_text(o, ": ");
                out_str(o, s->notes.items[k].text);
            }
            out_text(o, "}}");
        }
    }
    out_text(o, "\n  ],\n  \"attribution\": {");
    copy_spill(o, m->spill_attr);
    out_text(o, "},\n  \"externalParents\": {");
    copy_spill(o, m->spill_parents);
    out_text(o, "}\n}");
}

/* Every input's deviceProperties, rank by rank, each "id" moved as its
   device's pid is (a device listed by both traces of a process once). */
static void write_devices(merger *m, dt_out *o)
{
    int64_t *seen = NULL;
    size_t nseen = 0, cap = 0, written = 0;
    for (int gi = 0; gi < m->ngroups; gi++) {
        for (int i = 0; i < m->nin; i++) {
            const input *in = &m->in[i];
            if (in->group != gi)
                continue;
            for (size_t k = 0; k < in->ndevices; k++) {
                const char *raw = in->devices[k];
                dt_rd_span id = in->device_ids[k];
                int64_t moved = 0;
                bool has_id = id.len > 0 && id.len < 24;
                if (has_id) {
                    char text[24];
                    memcpy(text, raw + id.off, id.len);
                    text[id.len] = '\0';
                    char *end;
                    long long v = strtoll(text, &end, 10);
                    has_id = *end == '\0';
                    moved = (int64_t)v + (int64_t)m->groups[gi].rank_pos * PID_STRIDE;
                }
                bool dup = false;
                for (size_t j = 0; has_id && j < nseen && !dup; j++)
                    dup = seen[j] == moved;
                if (dup)
                    continue;
                if (has_id && dt_rd_grow((void **)&seen, &cap, nseen + 1, sizeof *seen) == 0)
                    seen[nseen++] = moved;
                out_text(o, written++ ? ",\n  " : "\n  ");
                if (has_id) {
                    dt_out_write(o, raw, id.off);
                    out_i64(o, moved);
                    out_text(o, raw + id.off + id.len);
                } else {
                    out_text(o, raw);
                }
            }
        }
    }
    if (written)
        out_text(o, "\n");
    free(seen);
}

typedef struct merge_job {
    merger *m;
    const char *out_path;
    char agreement[1024];
    dt_pf_stats pf; /* with --format perfetto */
} merge_job;

/* The capture window, once, on the first rank's process. */
static void write_capture(merger *m, dt_out *o)
{
    int64_t pid = m->in[m->groups[0].first_input].has_main_pid ? m->in[m->groups[0].first_input].main_pid : 0;
    out_text(o, m->first_event ? "\n" : ",\n");
    out_text(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
    out_i64(o, pid);
    out_text(o, ",\"tid\":0,\"ts\":");
    out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"args\":{\"name\":\"devtrace capture\"}},\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace "
                "capture\",\"pid\":");
    out_i64(o, pid);
    out_text(o, ",\"tid\":0,\"ts\":");
    out_us3(o, m->window_start - m->base_ns);
    out_text(o, ",\"dur\":");
    out_us3(o, m->window_end - m->window_start);
    out_text(o, ",\"args\":{}}");
}

/* The merged trace as Perfetto packets: each group (a rank's process) is
   written as JSON to a temporary file, then converted row by row
   (pf_convert.c), so that memory follows the largest group. */
static int write_merged_perfetto(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    pf_trace *t = pf_trace_open(o, (uint64_t)(m->window_start < 0 ? 0 : m->window_start));
    if (!t)
        return ENOMEM;
    const char *dir = getenv("TMPDIR");
    int err = 0;
    for (int gi = 0; gi < m->ngroups && !err; gi++) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s/devtrace-merge-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = mkstemp(tmp);
        if (fd < 0) {
            err = errno;
            break;
        }
        dt_out go;
        if (dt_out_init(&go, fd, 0, 1, 1u << 20) != 0) {
            err = ENOMEM;
        } else {
            out_text(&go, "{\"baseTimeNanoseconds\": ");
            out_i64(&go, m->base_ns);
            out_text(&go, ",\n\"traceEvents\": [");
            m->first_event = true;
            if (write_group(m, &go, gi) != 0)
                err = m->oom ? ENOMEM : (go.err ? go.err : EIO);
            if (gi == 0)
                write_capture(m, &go);
            out_text(&go, "\n]}\n");
            int fin = dt_out_finish(&go);
            dt_out_free(&go);
            if (!err)
                err = fin;
        }
        close(fd);
        char msg[512];
        if (!err && (err = dt_pf_convert(t, tmp, &j->pf, msg, sizeof msg)) != 0)
            fprintf(m->err, "merge: converting to Perfetto: %s\n", msg);
        unlink(tmp);
    }
    int close_err = pf_trace_close(t);
    return err ? err : close_err;
}

static int write_merged(void *arg, dt_out *o)
{
    merge_job *j = arg;
    merger *m = j->m;
    out_text(o, "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [");
    write_devices(m, o);
    out_text(o, "],\n");
    if (common_host(m)) {
        out_text(o, "\"host_name\": ");
        out_str(o, common_host(m));
        out_text(o, ",\n");
    }
    out_text(o, "\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": ");
    out_i64(o, m->base_ns);
    out_text(o, ",\n\"traceEvents\": [");
    m->first_event = true;
    for (int gi = 0; gi < m->ngroups; gi++)
        if (write_group(m, o, gi) != 0)
            return m->oom ? ENOMEM : (o->err ? o->err : EIO);
    write_capture(m, o);
    out_text(o, "\n],\n");
    write_devtrace_key(m, o, j->agreement);
    out_text(o, ",\n\"traceName\": ");
    out_str(o, j->out_path);
    out_text(o, "\n}\n");
    return o->err;
}

/* What merge accepts but a user should hear of: the same file given twice,
   two traces claiming one rank, a negative rank, and what an input holds
   that breaks the trace format (carried over as written). Each is said;
   the number said is returned (--strict then writes nothing). */
static int review_inputs(const merger *m)
{
    int problems = 0;
    for (int i = 0; i < m->nin; i++) {
        const input *a = &m->in[i];
        bool twice = false;
        for (int j = 0; j < i && !twice; j++) {
            const input *b = &m->in[j];
            if (a->ino && a->dev == b->dev && a->ino == b->ino) {
                if (strcmp(a->path, b->path) == 0)
                    fprintf(m->err, "merge: warning: %s is given twice: its events are written twice\n", a->path);
                else
                    fprintf(m->err, "merge: warning: %s is the same file as %s: its events are written twice\n",
                            a->path, b->path);
                problems++;
                twice = true;
            } else if (a->sum.has_rank && b->sum.has_rank && a->sum.rank == b->sum.rank && !same_process(a, b)) {
                fprintf(m->err, "merge: warning: %s and %s both claim rank %" PRId64 " (distributedInfo)\n", b->path,
                        a->path, a->sum.rank);
                problems++;
            }
        }
        if (a->sum.has_rank && a->sum.rank < 0) {
            fprintf(m->err, "merge: warning: %s claims rank %" PRId64 " (distributedInfo): a rank is 0 or more\n",
                    a->path, a->sum.rank);
            problems++;
        }
        /* a flow with one side only is a known property of torch.profiler's
           traces (Kineto cuts flows at the capture window's edge), as check
           says: said, not a warning; in devtrace's own traces it is one */
        uint64_t broken = a->broken_flows + (a->devtrace ? a->cut_flows : 0);
        if (a->negative_durations || broken) {
            fprintf(m->err, "merge: warning: %s: carried over as written:", a->path);
            if (a->negative_durations)
                fprintf(m->err, " %" PRIu64 " complete event%s with a negative duration%s", a->negative_durations,
                        a->negative_durations == 1 ? "" : "s", broken ? "," : "");
            if (broken)
                fprintf(m->err, " %" PRIu64 " flow id%s without exactly one start and one finish", broken,
                        broken == 1 ? "" : "s");
            fputc('\n', m->err);
            problems++;
        }
        if (!a->devtrace && a->cut_flows)
            fprintf(m->err,
                    "merge: %s: %" PRIu64 " flow id%s with one side only, carried over as written (a known property "
                    "of torch.profiler's traces: Kineto cuts flows at the capture window's edge)\n",
                    a->path, a->cut_flows, a->cut_flows == 1 ? "" : "s");
    }
    return problems;
}

static void merge_usage(FILE *f)
{
    fprintf(f, "usage: devtrace merge -o OUT [--format json|json.gz|perfetto|perfetto.gz] [--strict] IN...\n"
               "\n"
               "Brings traces of one job together into one trace: per-rank devtrace traces\n"
               "(each rank's processes and devices named \"rank N ...\"), and a torch.profiler\n"
               "trace with the devtrace trace of the same process (each runtime call and its\n"
               "device work take the External id of the cpu_op that launched it). Inputs are\n"
               "JSON or gzip JSON files, read twice each; OUT is written atomically, in the\n"
               "format its name asks for (.json, .json.gz, .pftrace, .pftrace.gz) unless\n"
               "--format says otherwise. Perfetto output carries the events, rows, args and\n"
               "flows; the devtrace key (loss counts, notes, ranks) is JSON's alone.\n"
               "A character device or a FIFO named as OUT is written in place; OUT may not be\n"
               "one of the inputs, a directory or any other kind of file.\n"
               "\n"
               "merge warns of the same file given twice, two traces claiming one rank, a\n"
               "negative rank, and events it carries over as written that break the trace\n"
               "format (counted by kind: complete events with a negative duration, flow ids\n"
               "without exactly one start and one finish); with --strict any of these is an\n"
               "error and nothing is written. A flow with one side only in a torch.profiler\n"
               "trace (Kineto cuts flows at the capture window's edge) is said, not warned of.\n"
               "\n"
               "Clocks are not aligned: merge says what the inputs tell about how far their\n"
               "clocks may be apart (devtrace.notes.clockAgreement, also printed).\n"
               "\n"
               "Exit status: 0 written, 1 an input could not be read, OUT not written, or\n"
               "(--strict) a warning, 2 usage (OUT is an input).\n");
}

int dt_merge_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *out_path = NULL, *format = NULL;
    bool strict = false;
    const char **paths = calloc((size_t)(unsigned)(argc > 0 ? argc : 0) + 1, sizeof *paths);
    int n = 0;
    if (!paths) {
        fprintf(err, "merge: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            merge_usage(out);
            free(paths);
            return 0;
        }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            out_path = argv[++i];
        } else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
            format = argv[++i];
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(err, "merge: unknown option %s\n", a);
            merge_usage(err);
            free(paths);
            return 2;
        } else {
            paths[n++] = a;
        }
    }
    if (!out_path || n == 0 || n > MAX_INPUTS) {
        if (n > MAX_INPUTS)
            fprintf(err, "merge: at most %d inputs\n", MAX_INPUTS);
        else
            fprintf(err, "merge: %s\n", !out_path ? "-o OUT is required" : "no input trace given");
        merge_usage(err);
        free(paths);
        return 2;
    }
    const dt_writer *w = format ? dt_wr_by_name(format) : dt_wr_of_format((int)dt_format_of_path(out_path, DT_FORMAT_JSON));
    if (!w) {
        fprintf(err, "merge: --format must be json, json.gz, perfetto or perfetto.gz, not %s\n", format);
        free(paths);
        return 2;
    }
    int gzip = w->gzip;
    bool perfetto = w->plain == DT_FORMAT_PERFETTO;
    if (!dt_wr_available(w)) {
        fprintf(err, "merge: %s is gzip, but %s\n", out_path, DT_NO_GZIP_MESSAGE);
        free(paths);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(paths[i], "-") == 0) {
            fprintf(err, "merge: inputs are read twice: give files, not standard input\n");
            free(paths);
            return 2;
        }
    }
    const char *why;
    if (dt_output_kind_of(out_path, &why) == DT_OUTPUT_REFUSED) {
        fprintf(err, "merge: cannot write %s: %s\n", out_path, why);
        free(paths);
        return 1;
    }
    struct stat out_st;
    bool out_exists = stat(out_path, &out_st) == 0;
    merger m;
    memset(&m, 0, sizeof m);
    m.err = err;
    m.nin = n;
    m.in = calloc((size_t)(unsigned)n, sizeof *m.in);
    int rc = 1;
    merge_job job = {&m, out_path, "", {0, 0, 0}};
    if (!m.in)
        goto done;
    for (int i = 0; i < n; i++) {
        struct stat st;
        m.in[i].path = paths[i];
        if (stat(paths[i], &st) != 0)
            continue; /* said when it is read */
        m.in[i].dev = st.st_dev;
        m.in[i].ino = st.st_ino;
        if (out_exists && S_ISREG(out_st.st_mode) && st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino) {
            fprintf(err, "merge: %s is also an input%s%s: it would be replaced while being read; name another "
                         "output\n", out_path, strcmp(out_path, paths[i]) ? " as " : "",
                    strcmp(out_path, paths[i]) ? paths[i] : "");
            rc = 2;
            goto done;
        }
    }
    if (index_inputs(&m) != 0)
        goto done;
    int problems = review_inputs(&m);
    if (problems && strict) {
        fprintf(err, "merge: --strict: %d warning%s: nothing written\n", problems, problems == 1 ? "" : "s");
        goto done;
    }
    if (make_groups(&m) != 0) {
        fprintf(err, "merge: out of memory\n");
        goto done;
    }
    plan_ids(&m);
    clock_agreement(&m, job.agreement, sizeof job.agreement);
    m.spill_attr = tmpfile();
    m.spill_parents = tmpfile();
    if (!m.spill_attr || !m.spill_parents) {
        fprintf(err, "merge: cannot create a temporary file: %s\n", strerror(errno));
        goto done;
    }
    int werr = dt_write_file_atomic(out_path, gzip, perfetto ? write_merged_perfetto : write_merged, &job);
    if (werr != 0) {
        fprintf(err, "merge: cannot write %s: %s\n", out_path, werr == ENOMEM ? "out of memory" : strerror(werr));
        goto done;
    }
    fprintf(err, "merge: wrote %s: %d trace%s of %d process%s, %" PRIu64 " events\n", out_path, n, n == 1 ? "" : "s",
            m.ngroups, m.ngroups == 1 ? "" : "es", m.events_written);
    if (perfetto && (job.pf.left_out || job.pf.flows_left_out))
        fprintf(err, "merge: Perfetto output: %" PRIu64 " slices; left out %" PRIu64 " events that are not complete "
                     "events or metadata (instant, counter, async) and %" PRIu64 " flow ends at no slice's start\n",
                job.pf.slices, job.pf.left_out, job.pf.flows_left_out);
    fprintf(err, "merge: clocks: %s\n", job.agreement);
    rc = 0;
done:
    for (int i = 0; m.in && i < n; i++) {
        dt_rd_summary_free(&m.in[i].sum);
        for (size_t k = 0; k < m.in[i].ndevices; k++)
            free(m.in[i].devices[k]);
        free(m.in[i].devices);
        free(m.in[i].device_ids);
    }
    if (m.spill_attr)
        fclose(m.spill_attr);
    if (m.spill_parents)
        fclose(m.spill_parents);
    dt_u64map_free(&m.corr_ext);
    dt_u64map_free(&m.attr);
    reset_out_rows(&m);
    free(m.ops);
    free(m.in);
    free(m.groups);
    free(paths);
    return rc;
}
