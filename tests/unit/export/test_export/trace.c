/* Sessions made by hand, and their traces read back and held to every invariant of
   docs/trace-format.md. */
#define DT_TEST_PART /* main.c has main */
#include "export_test.h"

static char g_dir[256];

int setup_dir(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/dt_test_export_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

int remove_dir(void)
{
    if (getenv("DT_TEST_KEEP"))
        return 0;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

dt_session *new_session(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    s->state = DT_STATE_STOPPED;
    s->window_start_ns = T0;
    s->window_end_ns = T0 + 10 * SEC;
    s->pid = 4242;
    snprintf(s->process_name, sizeof s->process_name, "prog");
    return s;
}

dt_rec *push(dt_session *s, int kind, uint64_t start, uint64_t end)
{
    dt_rec *r = dt__store_push(&s->sink.store);
    REQUIRE(r != NULL);
    r->kind = (uint8_t)kind;
    r->start = start;
    r->end = end;
    r->flags = DT_REC_REALTIME;
    return r;
}

dt_rec *kernel(dt_session *s, const char *name, uint64_t start, uint64_t end,
               uint16_t dev, uint32_t stream, uint64_t corr)
{
    dt_rec *r = push(s, DT_EVENT_KERNEL, start, end);
    r->name = dt__intern_kernel(&s->names, name);
    r->device = dev;
    r->lane = stream;
    r->context = 1;
    r->correlation = corr;
    dt_launch_config lc = {{4, 2, 1}, {128, 1, 1}, 32, 1024, 0};
    r->u.kernel.config = dt__launch_intern(&s->launches, &lc);
    r->u.kernel.queued_delta = DT_DELTA_UNKNOWN;
    r->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
    return r;
}

dt_rec *api(dt_session *s, const char *name, uint64_t start, uint64_t end,
            uint32_t tid, uint64_t corr)
{
    dt_rec *r = push(s, DT_EVENT_RUNTIME, start, end);
    r->name = dt__intern_str(&s->names, name);
    r->lane = tid;
    r->context = s->pid;
    r->correlation = corr;
    r->u.api.cbid = 211;
    return r;
}

dt_rec *range(dt_session *s, const char *name, uint64_t start, uint64_t end,
              uint32_t tid, uint64_t id, int has_parent, uint64_t parent)
{
    dt_rec *r = push(s, DT_EVENT_RANGE, start, end);
    r->name = dt__intern_str(&s->names, name);
    r->lane = tid;
    r->context = s->pid;
    r->flags |= DT_REC_HAS_EXTERNAL;
    r->external_id = id;
    if (has_parent) {
        r->flags |= DT_REC_HAS_PARENT;
        r->u.range.parent = parent;
    }
    return r;
}

void external(dt_rec *r, uint64_t id)
{
    r->flags |= DT_REC_HAS_EXTERNAL;
    r->external_id = id;
}

/* ---------------------------------------------------------------- */
/* Reading the trace back                                            */
/* ---------------------------------------------------------------- */
char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    REQUIRE_EQ(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    REQUIRE(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    REQUIRE(buf != NULL);
    REQUIRE_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

char *read_gzip(const char *path, size_t *len)
{
    gzFile g = gzopen(path, "rb");
    REQUIRE(g != NULL);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (cap - n < (1 << 15)) {
            cap *= 2;
            buf = realloc(buf, cap);
            REQUIRE(buf != NULL);
        }
        int k = gzread(g, buf + n, (unsigned)(cap - n - 1));
        REQUIRE(k >= 0);
        if (k == 0)
            break;
        n += (size_t)k;
    }
    gzclose(g);
    buf[n] = 0;
    *len = n;
    return buf;
}

void path_in_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

yajl_val get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

const char *get_str(yajl_val v, const char *key)
{
    yajl_val x = get(v, key);
    return x && YAJL_IS_STRING(x) ? YAJL_GET_STRING(x) : NULL;
}

long long get_int(yajl_val v, const char *key)
{
    yajl_val x = get(v, key);
    REQUIRE(x != NULL);
    REQUIRE(YAJL_IS_INTEGER(x));
    return YAJL_GET_INTEGER(x);
}

/* ts/dur in ns from the microsecond doubles (exact for these small values) */
uint64_t get_ns(yajl_val v, const char *key)
{
    yajl_val x = get(v, key);
    REQUIRE(x != NULL);
    REQUIRE(YAJL_IS_NUMBER(x));
    return (uint64_t)llround(YAJL_GET_DOUBLE(x) * 1000.0);
}

void parse_trace(trace *t, char *text, size_t len)
{
    char err[512];
    t->text = text;
    t->len = len;
    REQUIRE_EQ(strlen(text), len); /* no NUL byte in the output */
    t->root = yajl_tree_parse(text, err, sizeof err);
    if (!t->root)
        FAIL("trace does not parse: %s", err);
    t->events = get(t->root, "traceEvents");
    REQUIRE(t->events != NULL);
    REQUIRE(YAJL_IS_ARRAY(t->events));
}

void free_trace(trace *t)
{
    yajl_tree_free(t->root);
    free(t->text);
}

/* Export and parse, then verify every invariant of the format. */

void export_and_parse(dt_session *s, const char *name, trace *t)
{
    char path[512];
    path_in_dir(path, sizeof path, name);
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON), DT_OK);
    size_t len;
    char *text = read_file(path, &len);
    parse_trace(t, text, len);
    check_invariants(t);
}

/* The text of the single event line containing needle (one event a line). */
char *event_line(const trace *t, const char *needle, int occurrence)
{
    const char *p = t->text;
    for (int k = 0; k <= occurrence; k++) {
        p = strstr(p, needle);
        if (!p)
            return NULL;
        if (k < occurrence)
            p++;
    }
    const char *b = p, *e = p;
    while (b > t->text && b[-1] != '\n')
        b--;
    while (*e && *e != '\n')
        e++;
    char *line = malloc((size_t)(e - b) + 1);
    memcpy(line, b, (size_t)(e - b));
    line[e - b] = 0;
    return line;
}

int count_text(const trace *t, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(t->text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Events whose name and category match (cat NULL: any). */
size_t find_events(const trace *t, const char *cat, const char *name, yajl_val *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->events->u.array.len; i++) {
        yajl_val ev = t->events->u.array.values[i];
        const char *c = get_str(ev, "cat"), *nm = get_str(ev, "name");
        if (cat && (!c || strcmp(c, cat) != 0))
            continue;
        if (name && (!nm || strcmp(nm, name) != 0))
            continue;
        if (n < max)
            out[n] = ev;
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- */
/* The invariants (docs/trace-format.md)                             */
/* ---------------------------------------------------------------- */
typedef struct xev {
    long long pid, tid;
    uint64_t start, end;
} xev;

static int xev_cmp(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return 0;
}

typedef struct pidtid {
    long long pid, tid;
} pidtid;

static int named(const pidtid *set, size_t n, long long pid, long long tid)
{
    for (size_t i = 0; i < n; i++)
        if (set[i].pid == pid && set[i].tid == tid)
            return 1;
    return 0;
}

void check_invariants(const trace *t)
{
    yajl_val root = t->root;
    /* 1: shape */
    static const char *const keys[] = {"schemaVersion", "deviceProperties", "displayTimeUnit",
                                       "baseTimeNanoseconds", "traceEvents", "devtrace", "traceName"};
    REQUIRE(YAJL_IS_OBJECT(root));
    REQUIRE_EQ(root->u.object.len, 7);
    for (size_t k = 0; k < 7; k++)
        REQUIRE_STR(root->u.object.keys[k], keys[k]);
    REQUIRE_EQ(get_int(root, "schemaVersion"), 1);
    REQUIRE_STR(get_str(root, "displayTimeUnit"), "ms");
    REQUIRE(YAJL_IS_ARRAY(get(root, "deviceProperties")));
    uint64_t base = (uint64_t)get_int(root, "baseTimeNanoseconds");
    REQUIRE_EQ(base % PERIOD_NS, 0);
    yajl_val dev = get(root, "devtrace");
    REQUIRE(YAJL_IS_OBJECT(dev));
    const char *win_path[] = {"captureWindow", "startNs", NULL};
    const char *win_end_path[] = {"captureWindow", "endNs", NULL};
    uint64_t ws = (uint64_t)YAJL_GET_INTEGER(yajl_tree_get(dev, win_path, yajl_t_number));
    uint64_t we = (uint64_t)YAJL_GET_INTEGER(yajl_tree_get(dev, win_end_path, yajl_t_number));
    REQUIRE(ws >= base && we >= ws);

    size_t n = t->events->u.array.len;
    xev *xs = calloc(n + 1, sizeof *xs);
    pidtid *procs = calloc(n + 1, sizeof *procs), *threads = calloc(n + 1, sizeof *threads);
    long long *flow_ids = calloc(n + 1, sizeof *flow_ids);
    int *flow_kind = calloc(n + 1, sizeof *flow_kind);
    size_t nx = 0, np = 0, nt = 0, nf = 0;
    long long max_host_sort = -1, min_dev_sort = -1;
    int saw_trace = 0;

    for (size_t i = 0; i < n; i++) {
        yajl_val ev = t->events->u.array.values[i];
        const char *ph = get_str(ev, "ph");
        REQUIRE(ph != NULL);
        if (strcmp(ph, "M") == 0) {
            const char *what = get_str(ev, "name");
            yajl_val args = get(ev, "args");
            if (strcmp(what, "process_name") == 0)
                procs[np++] = (pidtid){get_int(ev, "pid"), 0};
            else if (strcmp(what, "thread_name") == 0)
                threads[nt++] = (pidtid){get_int(ev, "pid"), get_int(ev, "tid")};
            else if (strcmp(what, "process_sort_index") == 0) {
                long long si = get_int(args, "sort_index");
                int is_device = 0;
                for (size_t j = 0; j < n; j++) {
                    yajl_val m = t->events->u.array.values[j];
                    const char *mn = get_str(m, "name");
                    if (strcmp(get_str(m, "ph"), "M") == 0 && mn && strcmp(mn, "process_labels") == 0 &&
                        get_int(m, "pid") == get_int(ev, "pid"))
                        is_device = 1;
                }
                if (is_device) {
                    if (min_dev_sort < 0 || si < min_dev_sort)
                        min_dev_sort = si;
                } else if (si > max_host_sort) {
                    max_host_sort = si;
                }
            }
            continue;
        }
        if (strcmp(ph, "X") == 0) {
            xev x = {get_int(ev, "pid"), get_int(ev, "tid"), 0, 0};
            x.start = base + get_ns(ev, "ts");
            x.end = x.start + get_ns(ev, "dur");
            /* 5: inside the capture window */
            REQUIRE(x.start >= ws && x.end <= we);
            if (strcmp(get_str(ev, "cat"), "Trace") == 0) {
                saw_trace++;
                REQUIRE_EQ(x.start, ws);
                REQUIRE_EQ(x.end, we);
            }
            xs[nx++] = x;
        } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            REQUIRE_STR(get_str(ev, "cat"), "ac2g");
            flow_ids[nf] = get_int(ev, "id");
            flow_kind[nf] = ph[0] == 's' ? 1 : 2;
            if (ph[0] == 'f')
                REQUIRE_STR(get_str(ev, "bp"), "e");
            xs[nx++] = (xev){get_int(ev, "pid"), get_int(ev, "tid"), UINT64_MAX, 0};
            nf++;
        } else if (strcmp(ph, "i") == 0) {
            /* torch's [memory] instants, on a named row (invariant 6) */
            REQUIRE_STR(get_str(ev, "cat"), "cpu_instant_event");
            REQUIRE_STR(get_str(ev, "s"), "t");
            xs[nx++] = (xev){get_int(ev, "pid"), get_int(ev, "tid"), UINT64_MAX, 0};
        } else {
            FAIL("unexpected phase %s", ph);
        }
    }
    REQUIRE_EQ(saw_trace, 1);
    /* 6: every pid and (pid, tid) named; devices sort after hosts */
    for (size_t i = 0; i < nx; i++) {
        int pn = 0;
        for (size_t j = 0; j < np && !pn; j++)
            pn = procs[j].pid == xs[i].pid;
        if (!pn)
            FAIL("pid %lld has no process_name", xs[i].pid);
        if (!named(threads, nt, xs[i].pid, xs[i].tid))
            FAIL("pid %lld tid %lld has no thread_name", xs[i].pid, xs[i].tid);
    }
    if (min_dev_sort >= 0)
        REQUIRE(min_dev_sort > max_host_sort);
    /* 2: one s and one f per flow id */
    for (size_t i = 0; i < nf; i++) {
        int s = 0, f = 0;
        for (size_t j = 0; j < nf; j++)
            if (flow_ids[j] == flow_ids[i])
                *(flow_kind[j] == 1 ? &s : &f) += 1;
        REQUIRE_EQ(s, 1);
        REQUIRE_EQ(f, 1);
    }
    const char *flows_path[] = {"counts", "flows", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(dev, flows_path, yajl_t_number)), (long long)nf / 2);
    /* 5: no partial overlaps on a row */
    size_t m = 0;
    for (size_t i = 0; i < nx; i++)
        if (xs[i].start != UINT64_MAX)
            xs[m++] = xs[i];
    qsort(xs, m, sizeof *xs, xev_cmp);
    uint64_t *stack = calloc(m + 1, sizeof *stack);
    size_t depth = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid)
            depth = 0;
        while (depth > 0 && stack[depth - 1] <= xs[i].start)
            depth--;
        if (depth > 0 && stack[depth - 1] < xs[i].end)
            FAIL("partial overlap on pid %lld tid %lld at %llu", xs[i].pid, xs[i].tid, (unsigned long long)(xs[i].start - base));
        stack[depth++] = xs[i].end;
    }
    /* 3: attribution reconciles */
    const char *attr_path[] = {"attribution", NULL};
    yajl_val attr = yajl_tree_get(dev, attr_path, yajl_t_object);
    REQUIRE(attr != NULL);
    for (size_t k = 0; k < attr->u.object.len; k++) {
        long long id = atoll(attr->u.object.keys[k]);
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            yajl_val ev = t->events->u.array.values[i];
            const char *cat = get_str(ev, "cat");
            if (!cat || (strcmp(cat, "kernel") && strcmp(cat, "gpu_memcpy") && strcmp(cat, "gpu_memset")))
                continue;
            yajl_val e = get(get(ev, "args"), "External id");
            if (e && YAJL_GET_INTEGER(e) == id)
                sum += get_ns(ev, "dur");
        }
        REQUIRE_EQ(sum, (uint64_t)YAJL_GET_INTEGER(attr->u.object.values[k]));
    }
    /* 7: loss has every reason and a matching total */
    const char *loss_path[] = {"loss", NULL};
    yajl_val loss = yajl_tree_get(dev, loss_path, yajl_t_object);
    REQUIRE(loss != NULL);
    REQUIRE_EQ(loss->u.object.len, DT_LOSS_COUNT + 1);
    uint64_t total = 0;
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        total += (uint64_t)get_int(loss, dt_loss_reason_name((dt_loss_reason)r));
    REQUIRE_EQ(total, (uint64_t)get_int(loss, "total"));

    free(stack);
    free(xs);
    free(procs);
    free(threads);
    free(flow_ids);
    free(flow_kind);
}
