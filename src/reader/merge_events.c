/* merge's second pass: each event's text copied as written, with its
   pids, ids and ts moved; rows named; attribution summed again. */
#include "reader/merge.h"

#include <inttypes.h>
#include <stdlib.h>

static bool is_capture_event(const dt_rd_event *e)
{
    return e->cat_kind == DT_RD_CAT_TRACE && strcmp(e->name, "devtrace capture") == 0;
}

typedef struct writer {
    merger *m;
    dt_out *o;
    input *in;
    group *g;
    bool linked; /* the group has a cpu_op index */
} writer;

void dt__rd_merge_out_us3(dt_out *o, int64_t ns)
{
    char *p = dt__out_reserve(o, 32);
    if (ns < 0) {
        *p++ = '-';
        ns = -ns;
    }
    dt__out_commit(o, dt__put_us3(p, (uint64_t)ns));
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
        dt__out_write(o, e->raw + at, ed[k].off - at);
        switch (ed[k].kind) {
        case ED_PID:
            out_i64(o, ed[k].i);
            break;
        case ED_PID_STR:
            out_str_pid(w, e->pid.str);
            break;
        case ED_TS:
            dt__rd_merge_out_us3(o, ed[k].i);
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
    dt__out_write(o, e->raw + at, e->raw_len - at);
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
    dt__rd_merge_out_us3(o, dt__rd_add_sat(e->ts_ns, w->in->ts_delta_ns));
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
    int64_t id = dt__strtab_intern(t, key, len, NULL);
    if (id < 0 || dt__vec_reserve_zeroed((void **)flags, cap, (size_t)id + 1, 1) != 0)
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

void dt__rd_merge_reset_rows(merger *m)
{
    dt__strtab_free(&m->out_pids);
    dt__strtab_free(&m->out_rows);
    dt__strtab_init(&m->out_pids);
    dt__strtab_init(&m->out_rows);
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
        const char *p = dt__strtab_key(&m->out_pids, i);
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
        const char *p = dt__strtab_key(&m->out_rows, i);
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
                         dt__rd_add_sat(e->ts_ns, in->ts_delta_ns)};
    uint64_t v;
    if (dt__rd_merge_is_ac2g_flow(e) && in->flow_off && e->at[DT_RD_AT_ID].len && !e->id_is_str && strchr(e->id, '.') == NULL &&
        sscanf(e->id, "%" SCNu64, &v) == 1)
        ed[n++] = (edit){e->at[DT_RD_AT_ID].off, e->at[DT_RD_AT_ID].len, ED_ID, v + in->flow_off, 0};
    if ((e->has & DT_RD_HAS_CORRELATION) && in->flow_off && e->at[DT_RD_AT_CORR].len)
        ed[n++] = (edit){e->at[DT_RD_AT_CORR].off, e->at[DT_RD_AT_CORR].len, ED_CORR,
                         e->correlation + in->flow_off, 0};
    if ((e->has & DT_RD_HAS_PARENT) && e->at[DT_RD_AT_PARENT].len)
        ed[n++] = (edit){e->at[DT_RD_AT_PARENT].off, e->at[DT_RD_AT_PARENT].len, ED_PARENT,
                         dt__rd_merge_remap_ext(in, e->parent), 0};
    /* the External id this event ends up with */
    bool has_ext = (e->has & DT_RD_HAS_EXTERNAL_ID) != 0;
    uint64_t ext = has_ext ? dt__rd_merge_remap_ext(in, e->external_id) : 0;
    uint64_t linked;
    if (w->linked && in->devtrace && (e->has & DT_RD_HAS_CORRELATION) && (dt__rd_cat_is_api(e->cat_kind) || dt__rd_cat_is_device_work(e->cat_kind)) &&
        dt__u64map_get(&m->corr_ext, e->correlation, &linked)) {
        const input *torch = NULL;
        for (int i = 0; i < m->nin; i++)
            if (m->in[i].group == in->group && !m->in[i].devtrace)
                torch = &m->in[i];
        ext = dt__rd_merge_remap_ext(torch ? torch : in, linked - 1);
        if (!has_ext && e->at[DT_RD_AT_ARGS].len) {
            ed[n++] = (edit){e->at[DT_RD_AT_ARGS].off + 1, 0, ED_INSERT_EXT, ext, args_empty(e) ? 0 : 1};
        }
        has_ext = true;
    }
    if (has_ext && e->at[DT_RD_AT_EXT].len && (e->has & DT_RD_HAS_EXTERNAL_ID) && ext != e->external_id)
        ed[n++] = (edit){e->at[DT_RD_AT_EXT].off, e->at[DT_RD_AT_EXT].len, ED_EXT, ext, 0};
    if (has_ext && e->ph[0] == 'X' && dt__rd_cat_is_device_work(e->cat_kind)) {
        uint64_t *slot = dt__u64map_slot(&m->attr, ext, NULL);
        if (!slot) {
            m->oom = true;
            return 1;
        }
        *slot = (uint64_t)dt__rd_add_sat((int64_t)*slot, e->dur_ns);
    }
    write_edited(w, e, ed, n);
    m->events_written++;
    return w->o->err ? 1 : 0;
}

static int spill_group(merger *m)
{
    size_t cursor = 0;
    uint64_t key, value;
    while (dt__u64map_next(&m->attr, &cursor, &key, &value))
        fprintf(m->spill_attr, "%" PRIu64 " %" PRIu64 "\n", key, value);
    dt__u64map_free(&m->attr);
    return ferror(m->spill_attr) ? -1 : 0;
}

int dt__rd_merge_write_group(merger *m, dt_out *o, int gi)
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
    dt__u64map_free(&m->corr_ext);
    dt__rd_merge_reset_rows(m);
    if (torch && devtrace_inputs) {
        if (dt__rd_merge_link_group(m, gi, torch) != 0)
            return -1;
        linked = true;
    }
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        if (in->group != gi)
            continue;
        writer w = {m, o, in, g, linked};
        dt_rd_summary s;
        int rc = dt__rd_merge_read_input(m, in, write_visit, &w, DT_RD_RAW, &s);
        /* externalParents, moved like the ids they name */
        for (size_t k = 0; rc == 0 && k < s.external_parents.count; k++) {
            uint64_t key;
            if (sscanf(s.external_parents.items[k].key, "%" SCNu64, &key) == 1)
                fprintf(m->spill_parents, "%" PRIu64 " %" PRIu64 "\n", dt__rd_merge_remap_ext(in, key),
                        dt__rd_merge_remap_ext(in, (uint64_t)s.external_parents.items[k].value));
        }
        dt__rd_summary_free(&s);
        if (rc != 0)
            return -1;
    }
    name_unnamed_rows(m, o, g);
    return spill_group(m);
}
