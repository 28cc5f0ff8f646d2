/* `devtrace check` (check.h says how): the visitor that runs the per-event
   checks, the checks over the whole trace in turn, and the findings,
   grouped by kind, as the result the command prints (src/cli/check.c). */
#include "reader/check.h"
#include "reader/rd_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#define CK_EXAMPLES DT_CHECK_EXAMPLES /* lines kept per kind of finding, without --verbose */
_Static_assert(KD_COUNT == DT_CHECK_KINDS, "dt_reader.h's DT_CHECK_KINDS counts the kinds of finding");

/* Kineto writes a flow's finish on a call whose launching side it did not
   keep, and a launch's start whose device work fell outside the window. */
#define KINETO_CUT_FLOWS "Kineto writes flows whose other side it did not record (cut at the capture window's " \
                         "edge, or an end it does not keep)"

/* The ways Kineto's own traces break what devtrace's keep, each seen in
   torch.profiler's traces of real accelerators (HTA's test data). */
#define KINETO_FANOUT "Kineto links one launch to every device record it produced (a graph's kernels, the " \
                      "memsets and kernel of one call) under one flow id, whose start may be cut at the capture " \
                      "window's edge"
#define KINETO_SYNC_ROWS "Kineto draws CUDA's synchronisation records (Stream Sync, Event Sync) on the stream's " \
                         "row, over the work they wait for"
#define KINETO_DEVICE_ROWS "Kineto writes device work with the times the vendor reports, and work on one stream " \
                           "can overlap its neighbour by a few microseconds"
#define KINETO_HOST_ROWS "Kineto writes ranges that outlive the call that opened them on its thread " \
                         "(asynchronous CPU ranges: collectives' annotations, MTIA's runtime calls)"

static const struct {
    int inv;
    const char *title;
    const char *known; /* why it is a known property of torch.profiler's traces; NULL: a defect */
} ck_kinds[KD_COUNT] = {
    [KD_UNREADABLE] = {1, "the trace cannot be read", NULL},
    [KD_TOP_LEVEL] = {1, "top-level keys missing", NULL},
    [KD_NO_ROW] = {1, "events without pid or tid", NULL},
    [KD_NO_TIME] = {1, "complete events without ts or dur", NULL},
    [KD_ODD_ARGS] = {1, "args of the wrong type", NULL},
    [KD_FLOW_FIELDS] = {2, "flow events without id or ts", NULL},
    [KD_FLOW_BP] = {2, "flow finishes without \"bp\":\"e\"", NULL},
    [KD_FLOW_NO_START] = {2, "flows with a finish and no start", KINETO_CUT_FLOWS},
    [KD_FLOW_NO_FINISH] = {2, "flows with a start and no finish", KINETO_CUT_FLOWS},
    [KD_FLOW_FANOUT] = {2, "flows with several finishes (and one start or none)", KINETO_FANOUT},
    [KD_FLOW_COUNT] = {2, "flow ids started more than once, or finished twice on one event", NULL},
    [KD_FLOW_UNBOUND] = {2, "flow ends at no event's start on their row", NULL},
    [KD_ATTRIBUTION] = {3, "attribution that does not match the device events", NULL},
    [KD_MANGLED] = {4, "mangled kernel names", NULL},
    [KD_GENERIC] = {4, "generic API names", NULL},
    [KD_WINDOW] = {5, "the capture window", NULL},
    [KD_OUTSIDE] = {5, "events outside the capture window", NULL},
    [KD_UNNAMED] = {6, "rows and pids without a name", NULL},
    [KD_ORDER] = {6, "device rows not sorted after host rows", NULL},
    [KD_LOSS] = {7, "loss counts", NULL},
    [KD_MEMORY] = {8, "torch memory events", NULL},
    [KD_DURATION] = {9, "negative or unrepresentable durations", NULL},
    [KD_OVERLAP] = {9, "partial overlaps on a row (rows that do not nest)", NULL},
    [KD_OVERLAP_SYNC] = {9, "synchronisation records that partially overlap work on their row", KINETO_SYNC_ROWS},
    [KD_OVERLAP_DEVICE] = {9, "device work that partially overlaps work on its stream", KINETO_DEVICE_ROWS},
    [KD_OVERLAP_HOST] = {9, "host ranges that partially overlap on their thread", KINETO_HOST_ROWS},
};

void dt__rd_check_finding(ck *c, int kind, const char *fmt, ...)
{
    uint64_t n = c->findings[kind]++;
    if (n >= CK_EXAMPLES && !c->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (dt__rd_line_at(&c->lines[kind], &c->lines_cap[kind], (size_t)n, fmt, ap) != 0)
        c->oom = true;
    va_end(ap);
}

static bool is_known(const ck *c, int kind)
{
    return c->writer != WR_DEVTRACE && ck_kinds[kind].known;
}

const char *dt__rd_check_fmt_us(char *buf, size_t len, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
    return buf;
}

/* Key text that doubles as the human-readable form: 7 or "Spans". */
size_t dt__rd_check_id_key(char *buf, size_t len, const dt_rd_id *id)
{
    int n;
    if (!id->present)
        n = snprintf(buf, len, "(none)");
    else if (id->is_str)
        n = snprintf(buf, len, "\"%.200s\"", id->str);
    else
        n = snprintf(buf, len, "%" PRId64, id->num);
    return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

/* Rows of devices (invariant 6): what runs there. */
static bool is_device_cat(int cat)
{
    return dt__rd_cat_is_device_work(cat) || cat == DT_RD_CAT_GPU_USER_ANNOTATION || cat == DT_RD_CAT_SYNC ||
           cat == DT_RD_CAT_OVERHEAD;
}

void dt__rd_check_where(char *buf, size_t len, const dt_rd_event *e)
{
    char p[256], t[256], ts[32];
    dt__rd_check_id_key(p, sizeof p, &e->pid);
    dt__rd_check_id_key(t, sizeof t, &e->tid);
    snprintf(buf, len, "event #%" PRIu64 " \"%.200s\" (pid %s, tid %s, ts %s us)", e->index, e->name, p, t,
             dt__rd_check_fmt_us(ts, sizeof ts, e->ts_ns));
}

static int visit(void *user, const dt_rd_event *e)
{
    ck *c = user;
    char w[800];
    if (e->ph[0] == 'M' && !e->ph[1]) {
        if (!e->pid.present)
            return 0;
        int64_t pid = dt__rd_check_pid_id(c, &e->pid);
        if (pid < 0)
            goto oom;
        if (IS(e->name, e->name_len, "process_name")) {
            c->pidv[pid].named = true;
        } else if (IS(e->name, e->name_len, "process_sort_index") && (e->has & DT_RD_HAS_SORT_INDEX)) {
            c->pidv[pid].has_sort = true;
            c->pidv[pid].sort = e->sort_index;
        } else if (IS(e->name, e->name_len, "thread_name") && e->tid.present) {
            int64_t row = dt__rd_check_row_id(c, e);
            if (row < 0)
                goto oom;
            c->rowv[row].named = true;
        }
        return 0;
    }
    if (!e->pid.present || !e->tid.present) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_NO_ROW, "%s has no %s", w, e->pid.present ? "tid" : "pid");
        return 0;
    }
    int64_t row = dt__rd_check_row_id(c, e);
    if (row < 0)
        goto oom;
    ck_pid *pid = &c->pidv[c->rowv[row].pid];
    c->rowv[row].used = true;
    pid->used = true;
    bool is_flow = (e->ph[0] == 's' || e->ph[0] == 'f') && !e->ph[1] && e->cat_kind == DT_RD_CAT_AC2G;
    if (is_device_cat(e->cat_kind) || (is_flow && e->ph[0] == 'f'))
        pid->device = true;
    else if (dt__rd_cat_is_host(e->cat_kind) || (is_flow && e->ph[0] == 's'))
        pid->host = true;

    if (is_flow)
        return dt__rd_check_flow(c, e, (uint32_t)row) == 0 ? 0 : (c->oom = true, 1);
    if (e->ph[0] == 'i' && !e->ph[1] && IS(e->name, e->name_len, "[memory]"))
        return dt__rd_check_memory(c, e) == 0 ? 0 : (c->oom = true, 1);
    if (e->ph[0] != 'X' || e->ph[1])
        return 0;
    if ((e->has & (DT_RD_HAS_TS | DT_RD_HAS_DUR)) != (DT_RD_HAS_TS | DT_RD_HAS_DUR)) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_NO_TIME, "complete event %s has no %s", w, (e->has & DT_RD_HAS_TS) ? "dur" : "ts");
        return 0;
    }
    if (e->dur_ns < 0) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_DURATION, "%s has a negative duration", w);
        return 0;
    }
    if (e->ts_ns > INT64_MAX - e->dur_ns) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_DURATION, "%s ends beyond any representable time", w);
        return 0;
    }
    int64_t name = dt__strtab_intern(&c->names, e->name, e->name_len, NULL);
    int cls = dt__rd_cat_is_device_work(e->cat_kind) ? CL_WORK
              : e->cat_kind == DT_RD_CAT_SYNC       ? CL_SYNC
              : dt__rd_cat_is_host(e->cat_kind)      ? CL_HOST
                                                    : CL_OTHER;
    if (name < 0 ||
        dt__rd_check_log(&c->rowv[row], e->ts_ns, e->ts_ns + e->dur_ns, e->index, (uint32_t)name, cls) != 0)
        goto oom;

    if (e->odd_args) {
        c->odd_args_events++;
        if (c->odd_args_events == 1) {
            dt__rd_check_where(w, sizeof w, e);
            snprintf(c->first_odd, sizeof c->first_odd, "%s", w);
        }
    }
    if (e->cat_kind == DT_RD_CAT_TRACE && IS(e->name, e->name_len, "devtrace capture") && c->trace_events++ == 0) {
        c->trace_start = e->ts_ns;
        c->trace_end = e->ts_ns + e->dur_ns;
        c->trace_index = e->index;
    }
    if (e->cat_kind == DT_RD_CAT_KERNEL && e->name[0] == '_' && e->name[1] == 'Z' &&
        dt__rd_check_demangles(c, (size_t)name, e->name)) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_MANGLED, "kernel name is mangled: %s", w);
    }
    if (dt__rd_cat_is_api(e->cat_kind)) {
        c->api_events++;
        if (dt__rd_check_is_generic_name(e->name) && c->generic_api++ == 0) {
            snprintf(c->first_generic, sizeof c->first_generic, "%s", e->name);
            c->first_generic_index = e->index;
        }
    }
    if ((e->has & DT_RD_HAS_EXTERNAL_ID) && dt__rd_cat_is_device_work(e->cat_kind)) {
        uint64_t *sum = dt__u64map_slot(&c->ext, e->external_id, NULL);
        if (!sum)
            goto oom;
        *sum = (uint64_t)dt__rd_add_sat((int64_t)*sum, e->dur_ns);
    }
    return 0;
oom:
    c->oom = true;
    return 1;
}

static void checker_free(ck *c)
{
    for (int k = 0; k < KD_COUNT; k++) {
        uint64_t kept = c->findings[k] < c->lines_cap[k] ? c->findings[k] : c->lines_cap[k];
        for (uint64_t i = 0; c->lines[k] && i < kept; i++)
            free(c->lines[k][i]);
        free(c->lines[k]);
    }
    for (size_t i = 0; i < c->rows.count; i++) {
        for (ck_chunk *k = c->rowv[i].head, *next; k; k = next) {
            next = k->next;
            free(k);
        }
    }
    free(c->rowv);
    free(c->pidv);
    free(c->flowtab.slots);
    free(c->pending);
    dt__u64map_free(&c->ext);
    dt__u64map_free(&c->twice);
    free(c->mem);
    free(c->demangles);
    dt__strtab_free(&c->names);
    dt__strtab_free(&c->pids);
    dt__strtab_free(&c->rows);
    dt__strtab_free(&c->flows);
}

static int writer_of(const dt_rd_summary *s)
{
    if (!s->has_devtrace)
        return WR_FOREIGN;
    return s->writer && strcmp(s->writer, DT_RD_WRITER_PLUGIN) == 0 ? WR_PLUGIN : WR_DEVTRACE;
}

/* What was checked, where not every invariant applied (NULL: every one). */
static const char *scope_of(int writer, int format)
{
    if (writer == WR_FOREIGN && format == DT_RD_FORMAT_PERFETTO)
        return "a Perfetto trace whose capture slice carries no devtrace args (merge's): checked 1 (protobuf), 2 "
               "(flows), 4 (names), 8 (memory), 9 (rows nest); not applicable: 3 (attribution), 5 (capture "
               "window), 6 (row names and order), 7 (loss counts)";
    if (writer == WR_FOREIGN)
        return "a trace of another writer (no devtrace key): checked 1 (JSON), 2 (flows), 4 (names), 8 (memory), 9 "
               "(rows nest); not applicable: 3 (attribution), 5 (capture window), 6 (row names and order), 7 (loss "
               "counts)";
    if (format == DT_RD_FORMAT_PERFETTO)
        return "a Perfetto protobuf trace devtrace wrote: checked 1 (protobuf), 2 (flows), 4 (names), 5 (capture "
               "window), 6 (row names and order), 7 (loss counts), 8 (memory), 9 (rows nest); not applicable: 3 "
               "(attribution, which only the JSON carries)";
    if (writer == WR_PLUGIN)
        return "a torch.profiler trace with devtrace.torch's device activity (devtrace.writer \"" DT_RD_WRITER_PLUGIN
               "\"): checked 1 (JSON), 2 (flows), 4 (names), 7 (loss counts), 8 (memory), 9 (rows nest); not "
               "applicable: 3 (attribution), 5 (capture window), 6 (row names and order)";
    return NULL;
}

void dt__rd_check(dt_rd_source *src, const char *label, unsigned flags, dt_check_result *result)
{
    memset(result, 0, sizeof *result);
    ck c;
    memset(&c, 0, sizeof c);
    c.verbose = (flags & DT_CHECK_VERBOSE) != 0;
    dt__strtab_init(&c.names);
    dt__strtab_init(&c.pids);
    dt__strtab_init(&c.rows);
    dt__strtab_init(&c.flows);
    dt_rd_summary s;
    char msg[512];
    dt_rd_options opts = {.visit = visit, .user = &c, .entry = dt__rd_check_attribution_entry};
    int rc = dt__rd_read_opts(src, &opts, &s, msg, sizeof msg);
    if (rc == 0)
        c.writer = writer_of(&s);
    if (rc != 0 && !c.oom) {
        /* What the events seen so far broke is reported too; the checks
           over the whole trace would only repeat that it is incomplete. */
        dt__rd_check_finding(&c, KD_UNREADABLE, "%s: %s", label, msg);
    } else if (rc == 0 && c.writer != WR_DEVTRACE) {
        /* torch.profiler's trace, with or without devtrace.torch's key:
           what every trace must satisfy is checked; what only devtrace's
           own writer promises is not, save the plugin's loss counts. */
        dt__rd_check_rows(&c, &s, false);
        dt__rd_check_flows(&c);
        dt__rd_check_generic_names(&c);
        dt__rd_check_memory_totals(&c);
        if (c.writer == WR_PLUGIN)
            dt__rd_check_loss(&c, &s);
    } else if (rc == 0 && s.format == DT_RD_FORMAT_PERFETTO) {
        /* devtrace's Perfetto trace: no JSON top level, no attribution */
        dt__rd_check_rows(&c, &s, true);
        dt__rd_check_flows(&c);
        dt__rd_check_memory_totals(&c);
        dt__rd_check_names(&c);
        dt__rd_check_loss(&c, &s);
    } else if (rc == 0) {
        if (!s.has_schema_version)
            dt__rd_check_finding(&c, KD_TOP_LEVEL, "no \"schemaVersion\" at the top level");
        if (!s.has_display_time_unit)
            dt__rd_check_finding(&c, KD_TOP_LEVEL, "no \"displayTimeUnit\" at the top level");
        if (!s.has_base_time)
            dt__rd_check_finding(&c, KD_TOP_LEVEL, "no \"baseTimeNanoseconds\" at the top level");
        if (!s.has_device_properties)
            dt__rd_check_finding(&c, KD_TOP_LEVEL, "no \"deviceProperties\" at the top level");
        if (c.odd_args_events)
            dt__rd_check_finding(&c, KD_ODD_ARGS, "%" PRIu64 " event(s) carry args of the wrong type (e.g. a string where Kineto "
                         "writes an integer), first %s", c.odd_args_events, c.first_odd);
        dt__rd_check_rows(&c, &s, true);
        dt__rd_check_flows(&c);
        dt__rd_check_memory_totals(&c);
        dt__rd_check_attribution(&c, &s);
        dt__rd_check_names(&c);
        dt__rd_check_loss(&c, &s);
    }
    result->oom = c.oom;
    if (!c.oom) {
        for (int k = 0; k < KD_COUNT; k++) {
            dt_check_kind *kd = &result->kinds[k];
            kd->invariant = ck_kinds[k].inv;
            kd->title = ck_kinds[k].title;
            kd->known = is_known(&c, k) ? ck_kinds[k].known : NULL;
            kd->count = c.findings[k];
            kd->shown = c.verbose || kd->count < CK_EXAMPLES ? kd->count : CK_EXAMPLES;
            /* the lines are the result's now */
            kd->lines = c.lines[k];
            c.lines[k] = NULL;
            if (kd->known)
                result->known += kd->count;
            else
                result->defects += kd->count;
        }
        result->scope = rc == 0 ? scope_of(c.writer, s.format) : NULL;
        result->events = s.event_count;
        result->flows = c.flowtab.count;
    }
    dt__rd_summary_free(&s);
    checker_free(&c);
}

void dt__rd_check_free(dt_check_result *result)
{
    for (int k = 0; k < DT_CHECK_KINDS; k++) {
        dt_check_kind *kd = &result->kinds[k];
        for (uint64_t i = 0; kd->lines && i < kd->shown; i++)
            free(kd->lines[i]);
        free(kd->lines);
        kd->lines = NULL;
    }
}
