/* merge's first pass: each input read once for what the output needs to
   know of it (ids, extent, process, devices), and the inputs grouped by
   process. */
#include "reader/merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

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
        int64_t st = e->ts_ns, en = dt__rd_add_sat(e->ts_ns, e->dur_ns);
        if (!in->has_extent || st < in->min_ns)
            in->min_ns = st;
        if (!in->has_extent || en > in->max_ns)
            in->max_ns = en;
        in->has_extent = true;
        if (e->cat_kind == DT_RD_CAT_CPU_OP)
            in->has_cpu_ops = true;
        if (dt__rd_cat_is_host(e->cat_kind) && e->pid.present && !e->pid.is_str) {
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
    if (dt__rd_merge_is_ac2g_flow(e) && (e->has & DT_RD_HAS_ID) && !e->id_is_str && strchr(e->id, '.') == NULL &&
        sscanf(e->id, "%" SCNu64, &id) == 1) {
        if (!in->has_flows || id > in->max_flow)
            in->max_flow = id;
        in->has_flows = true;
        uint64_t *ends = dt__u64map_slot(&p->flow_ends, id, NULL);
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

/* ---- inputs that cannot be read twice ---- */
/* Copies n bytes to fd. 0, or an errno. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Whether a stream that begins (after white space) with byte b may be a
   trace: JSON's object, or gzip's magic. */
static bool may_be_trace(unsigned char b)
{
    return b == '{' || b == 0x1f;
}

int dt__rd_merge_spool_input(merger *m, input *in)
{
    bool std_in = strcmp(in->path, "-") == 0;
    int src = std_in ? STDIN_FILENO : open(in->path, O_RDONLY | O_CLOEXEC);
    if (src < 0) {
        dt__rd_merge_say(m, "cannot open %s: %s", in->path, strerror(errno));
        return -1;
    }
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/devtrace-merge-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        dt__rd_merge_say(m, "%s cannot be read twice, and its copy cannot be made: %s: %s", in->path, tmp,
                        strerror(errno));
        if (!std_in)
            close(src);
        return -1;
    }
    unlink(tmp); /* nothing is left behind, however merge ends */
    char *buf = malloc(1u << 16);
    int err = buf ? 0 : ENOMEM;
    bool looked = false; /* a byte other than white space was seen */
    while (!err) {
        ssize_t r = read(src, buf, 1u << 16);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            err = r < 0 ? errno : 0;
            break;
        }
        for (ssize_t i = 0; i < r && !looked; i++) {
            unsigned char b = (unsigned char)buf[i];
            if (b == ' ' || b == '\t' || b == '\n' || b == '\r')
                continue;
            looked = true;
            if (!may_be_trace(b)) {
                dt__rd_merge_say(m, "%s: not a trace: it begins with byte 0x%02x (a JSON trace begins with '{', "
                                "gzip with 0x1f 0x8b)", in->path, b);
                err = -1;
            }
        }
        if (!err)
            err = write_all(fd, buf, (size_t)r);
    }
    free(buf);
    if (!std_in)
        close(src);
    if (err) {
        if (err > 0)
            dt__rd_merge_say(m, "%s cannot be read twice, and copying it failed: %s", in->path, strerror(err));
        close(fd);
        return -1;
    }
    in->spool_fd = fd;
    snprintf(in->spool_path, sizeof in->spool_path, "/proc/self/fd/%d", fd);
    return 0;
}

int dt__rd_merge_read_input(merger *m, input *in, dt_rd_visitor visit, void *user, unsigned flags, dt_rd_summary *sum)
{
    char msg[512];
    dt_rd_source *src = dt__rd_open_file(in->spool_path[0] ? in->spool_path : in->path, msg, sizeof msg);
    if (!src) {
        dt__rd_merge_say(m, "%s", msg);
        return -1;
    }
    dt_rd_options o = {.visit = visit, .user = user, .flags = flags};
    if (visit == pass1_visit)
        o.device = pass1_device;
    int rc = dt__rd_read_opts(src, &o, sum, msg, sizeof msg);
    dt__rd_close(src);
    if (rc != 0) {
        if (m->oom)
            dt__rd_merge_say(m, "out of memory");
        else
            dt__rd_merge_say(m, "%s: %s", in->path, msg[0] ? msg : "stopped");
        return -1;
    }
    return 0;
}

int dt__rd_merge_index_inputs(merger *m)
{
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        pass1 p = {.in = in, .oom = &m->oom};
        int rc = dt__rd_merge_read_input(m, in, pass1_visit, &p, DT_RD_JSON, &in->sum);
        size_t cursor = 0;
        uint64_t id, ends;
        while (dt__u64map_next(&p.flow_ends, &cursor, &id, &ends)) {
            bool cut = ends == UINT64_C(1) << 32 || ends == 1;
            in->cut_flows += cut;
            in->broken_flows += !cut && ends != (UINT64_C(1) << 32 | 1);
        }
        dt__u64map_free(&p.flow_ends);
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
            in->min_ns = dt__rd_add_sat(in->min_ns, base);
            in->max_ns = dt__rd_add_sat(in->max_ns, base);
        }
    }
    return 0;
}

const char *dt__rd_merge_input_host(const input *in)
{
    return in->sum.host ? in->sum.host : in->sum.rank_host ? in->sum.rank_host : in->sum.host_name;
}

/* The host every input that names one names (torch.profiler's top-level
   "host_name" kept as it wrote it), or NULL when none or several. */
const char *dt__rd_merge_common_host(const merger *m)
{
    const char *h = NULL;
    for (int i = 0; i < m->nin; i++) {
        const char *x = dt__rd_merge_input_host(&m->in[i]);
        if (x && h && strcmp(x, h) != 0)
            return NULL;
        if (x)
            h = x;
    }
    return h;
}

/* Two inputs are one process: the same pid, and no host or rank that differs. */
bool dt__rd_merge_same_process(const input *a, const input *b)
{
    if (!a->has_main_pid || !b->has_main_pid || a->main_pid != b->main_pid)
        return false;
    const char *ha = dt__rd_merge_input_host(a), *hb = dt__rd_merge_input_host(b);
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

int dt__rd_merge_make_groups(merger *m)
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
            if (m->in[j].group < 0 && dt__rd_merge_same_process(&m->in[i], &m->in[j])) {
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
void dt__rd_merge_plan_ids(merger *m)
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

