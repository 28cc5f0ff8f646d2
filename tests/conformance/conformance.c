/*
 * Backend conformance suite: one set of scenarios, written against the
 * backend contract and the emulated runtime (devtrace_emu.h), run against
 * every backend with its emulator. Each run executes one scenario in its own
 * process, because vendor interfaces are process-wide.
 *
 * usage: conformance --backend NAME --emulator LIB --env VAR --scenario S
 *                    [--minimal LIB] [--nomarker LIB] [--subscribe SYMBOL]
 *                    [--out DIR] [--cli DEVTRACE]
 *
 * Every scenario asserts exact outcomes: the emulator's statistics say what
 * it produced, and devtrace must show exactly that, or count each loss
 * under the matching reason.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devtrace_emu.h"
#include "reader/dt_reader.h"

/* ------------------------------------------------------------------ */
/* Reporting                                                           */
/* ------------------------------------------------------------------ */
static const char *g_scenario = "";
#define DT_CHECK_CONTEXT g_scenario
#include "dt_check.h"

#define CHECK_EQ_U64(a, b, what)                                                     \
    CHECK((uint64_t)(a) == (uint64_t)(b), "%s: got %" PRIu64 ", expected %" PRIu64, \
          what, (uint64_t)(a), (uint64_t)(b))

/* ------------------------------------------------------------------ */
/* The backend under test and its emulator                             */
/* ------------------------------------------------------------------ */
static struct {
    const char *backend, *emulator, *env, *minimal, *nomarker, *subscribe, *out, *cli, *label;
} g_opt;

static struct {
    void *handle;
    int (*init)(void);
    int (*set_clock)(int64_t, double);
    uint64_t (*device_time_ns)(void);
    int (*fault_arm)(emu_fault, uint64_t);
    const char *(*fault_name)(emu_fault);
    int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*launch_kernel_desc)(const emu_kernel_desc *);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
    void (*faults_clear)(void);
} emu;

#define EMU_SYM(field, sym)                                                              \
    do {                                                                                 \
        *(void **)&emu.field = dlsym(emu.handle, sym);                                   \
        REQUIRE(emu.field != NULL, "%s does not export %s", g_opt.emulator, sym);        \
    } while (0)

static void emu_open(void)
{
    /* The backend finds the same library through the override variable, so
       the workload drives exactly the device whose records it reads. */
    REQUIRE(setenv(g_opt.env, g_opt.emulator, 1) == 0, "setenv %s", g_opt.env);
    emu.handle = dlopen(g_opt.emulator, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(emu.handle != NULL, "cannot load the emulator %s: %s", g_opt.emulator, dlerror());
    EMU_SYM(init, "emu_init");
    EMU_SYM(set_clock, "emu_set_clock");
    EMU_SYM(device_time_ns, "emu_device_time_ns");
    EMU_SYM(fault_arm, "emu_fault_arm");
    EMU_SYM(fault_name, "emu_fault_name");
    EMU_SYM(launch_kernel, "emu_launch_kernel");
    EMU_SYM(launch_kernel_desc, "emu_launch_kernel_desc");
    EMU_SYM(memcpy_, "emu_memcpy");
    EMU_SYM(memset_, "emu_memset");
    EMU_SYM(synchronize, "emu_synchronize");
    EMU_SYM(stats_get, "emu_stats_get");
    EMU_SYM(stats_reset, "emu_stats_reset");
    EMU_SYM(faults_clear, "emu_faults_clear");
    REQUIRE(emu.init() == 0, "emu_init failed");
}

static dt_session *session_new(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    dt_session *s = NULL;
    dt_status st = dt_session_create(&c, &s);
    REQUIRE(st == DT_OK, "dt_session_create: %s: %s", dt_status_name(st), dt_last_error());
    return s;
}

static void session_start(dt_session *s)
{
    dt_status st = dt_session_start(s);
    REQUIRE(st == DT_OK, "dt_session_start: %s: %s", dt_status_name(st), dt_last_error());
    CHECK(strcmp(dt_session_backend(s), g_opt.backend) == 0, "backend %s", dt_session_backend(s));
}

static void session_stop(dt_session *s)
{
    dt_status st = dt_session_stop(s);
    REQUIRE(st == DT_OK, "dt_session_stop: %s: %s", dt_status_name(st), dt_last_error());
}

static const int grid1[3] = {4, 2, 1}, block1[3] = {128, 1, 1};

/* What the backend's vendor interface does not give (DT_BACKEND_LACKS_*). */
static unsigned backend_lacks(void)
{
    const dt_backend *b = dt_select_backend(g_opt.backend);
    return b ? b->lacks : 0;
}

/* Whether the session has a note under key (NULL: any) whose text says
   `fact`: how a degraded vendor says what it cannot do. */
static int noted(const dt_session *s, const char *key, const char *fact)
{
    for (int i = 0; i < s->note_count; i++)
        if ((!key || strcmp(s->notes[i].key, key) == 0) && strstr(s->notes[i].text, fact)) return 1;
    return 0;
}

/* A vendor with no way to attribute device work (no external-correlation
   stack and no usable API callbacks) says so; its device activity then
   carries no External id at all, never a wrong one. */
static int attributes(const dt_session *s)
{
    return !noted(s, NULL, "carries no External id");
}

static int counts_drops(const dt_session *s)
{
    return !noted(s, NULL, "records the vendor drops are not counted");
}

static void check_no_external(const dt_session *s)
{
    size_t n = dt_session_event_count(s), with = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.has_external && ev.kind != DT_EVENT_RANGE && ev.kind != DT_EVENT_OP) with++;
    }
    CHECK(with == 0, "%zu events carry an External id from a backend that says it cannot attribute", with);
}

/* ------------------------------------------------------------------ */
/* Checks shared by the scenarios                                      */
/* ------------------------------------------------------------------ */
typedef struct counts {
    uint64_t kind[DT_EVENT_RANGE + 1];
} counts;

static counts count_events(const dt_session *s)
{
    counts c;
    memset(&c, 0, sizeof c);
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        REQUIRE(dt_session_event(s, i, &ev) == DT_OK, "dt_session_event %zu", i);
        if (ev.kind >= 1 && ev.kind <= DT_EVENT_RANGE) c.kind[ev.kind]++;
    }
    return c;
}

static int is_device(dt_event_kind k)
{
    return k == DT_EVENT_KERNEL || k == DT_EVENT_MEMCPY || k == DT_EVENT_MEMSET;
}
static int is_api(dt_event_kind k) { return k == DT_EVENT_RUNTIME || k == DT_EVENT_DRIVER; }

/* Exactly what the emulator produced, of every kind (but the work it
   handed back still running, unfinished), and nothing else lost than
   `expected_loss` (per reason). */
static void check_exact(const dt_session *s, const emu_stats *st, const uint64_t expected_loss[DT_LOSS_COUNT])
{
    counts c = count_events(s);
    const uint64_t *unfinished = st->records_unfinished;
    CHECK_EQ_U64(c.kind[DT_EVENT_KERNEL], st->records[EMU_KIND_KERNEL] - unfinished[EMU_KIND_KERNEL], "kernels");
    CHECK_EQ_U64(c.kind[DT_EVENT_MEMCPY], st->records[EMU_KIND_MEMCPY] - unfinished[EMU_KIND_MEMCPY], "memcpys");
    CHECK_EQ_U64(c.kind[DT_EVENT_MEMSET], st->records[EMU_KIND_MEMSET] - unfinished[EMU_KIND_MEMSET], "memsets");
    CHECK_EQ_U64(c.kind[DT_EVENT_RUNTIME], st->records[EMU_KIND_RUNTIME], "runtime API calls");
    CHECK_EQ_U64(c.kind[DT_EVENT_DRIVER], st->records[EMU_KIND_DRIVER], "driver API calls");
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        uint64_t want = expected_loss ? expected_loss[r] : 0;
        char what[96];
        snprintf(what, sizeof what, "loss %s", dt_loss_reason_name((dt_loss_reason)r));
        CHECK_EQ_U64(dt_session_loss(s, (dt_loss_reason)r), want, what);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every device activity has exactly one API call with its correlation id,
   and no two device activities share one. */
static void check_flows(const dt_session *s)
{
    size_t n = dt_session_event_count(s);
    uint64_t *dev = malloc((n + 1) * sizeof *dev), *api = malloc((n + 1) * sizeof *api);
    REQUIRE(dev && api, "out of memory");
    size_t nd = 0, na = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (is_device(ev.kind)) {
            CHECK(ev.correlation != 0, "device event %zu (%s) has no correlation id", i, ev.name);
            dev[nd++] = ev.correlation;
        } else if (is_api(ev.kind) && ev.correlation) {
            api[na++] = ev.correlation;
        }
    }
    qsort(dev, nd, sizeof *dev, cmp_u64);
    qsort(api, na, sizeof *api, cmp_u64);
    size_t unpaired = 0, shared = 0, j = 0;
    for (size_t i = 0; i < nd; i++) {
        if (i && dev[i] == dev[i - 1]) { shared++; continue; }
        while (j < na && api[j] < dev[i]) j++;
        size_t k = j, matches = 0;
        while (k < na && api[k] == dev[i]) { k++; matches++; }
        if (matches != 1) unpaired++;
    }
    CHECK(unpaired == 0, "%zu of %zu device activities lack exactly one API call", unpaired, nd);
    CHECK(shared == 0, "%zu device activities share a correlation id", shared);
    free(dev);
    free(api);
}

/* Every event lies inside [before, after] (realtime around start/stop) and
   has end >= start. */
static void check_window(const dt_session *s, uint64_t before, uint64_t after)
{
    size_t n = dt_session_event_count(s), bad = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.start_ns < before || ev.end_ns > after || ev.end_ns < ev.start_ns) {
            if (bad++ < 5)
                fprintf(stderr, "event %zu %s [%" PRIu64 ", %" PRIu64 "] outside [%" PRIu64 ", %" PRIu64 "]\n",
                        i, ev.name, ev.start_ns, ev.end_ns, before, after);
        }
    }
    CHECK(bad == 0, "%zu events outside the capture window", bad);
}

static void check_other_readers(const char *path);

/* Write the trace and, where the CLI was built, verify its invariants.
   allowed_invariant > 0: the one invariant a degraded backend is expected
   to violate (e.g. 4, generic API names without a name API). */
static void check_trace_allowing(dt_session *s, const char *tag, int allowed_invariant)
{
    char path[1024];
    const char *dir = g_opt.out ? g_opt.out : ".";
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/%s.%s.%s.json", dir, g_opt.label ? g_opt.label : g_opt.backend, g_scenario, tag);
    dt_status st = dt_session_write(s, path, DT_FORMAT_JSON);
    CHECK(st == DT_OK, "dt_session_write %s: %s", path, dt_last_error());
    if (st == DT_OK) check_other_readers(path);
    if (st != DT_OK || !g_opt.cli || access(g_opt.cli, X_OK) != 0) return;
    char cmd[2300], report[1100];
    snprintf(report, sizeof report, "%s.check.txt", path);
    snprintf(cmd, sizeof cmd, "'%s' check '%s' >'%s' 2>&1", g_opt.cli, path, report);
    int rc = system(cmd);
    int exit_code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (allowed_invariant <= 0) {
        CHECK(exit_code == 0, "devtrace check %s failed (exit %d); see %s", path, exit_code, report);
        return;
    }
    char text[8192] = "", want[32];
    FILE *f = fopen(report, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    snprintf(want, sizeof want, "invariant %d:", allowed_invariant);
    CHECK(exit_code == 0 || (strstr(text, want) && strstr(text, "FAILED: 1 violation")),
          "devtrace check %s: exit %d, more than invariant %d violated; see %s", path, exit_code,
          allowed_invariant, report);
}

/* The other readers users rely on must load the trace too: jq and Python's
   json module (where installed; CI installs both). */
static void check_other_readers(const char *path)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "command -v jq >/dev/null 2>&1 || exit 0; jq empty '%s'", path);
    int rc = system(cmd);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "jq does not load %s", path);
    snprintf(cmd, sizeof cmd,
             "test -x /usr/bin/python3 || exit 0; /usr/bin/python3 -c "
             "'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' '%s'",
             path);
    rc = system(cmd);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "python3's json module does not load %s", path);
}

static void check_trace(dt_session *s, const char *tag) { check_trace_allowing(s, tag, 0); }

/* A mixed workload on `device`: kernels (one with a mangled name), every
   copy direction, memsets, and a synchronize. Returns calls made. */
static void mixed_workload(int device, int stream, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        REQUIRE(emu.launch_kernel(device, stream, "_Z5saxpyifPfS_", grid1, block1, 2000) == 0, "launch");
        emu_kernel_desc d;
        memset(&d, 0, sizeof d);
        d.device = device;
        d.stream = stream + 1;
        d.name = "plain_kernel";
        d.grid[0] = 8; d.grid[1] = 1; d.grid[2] = 1;
        d.block[0] = 64; d.block[1] = 2; d.block[2] = 1;
        d.registers_per_thread = 40;
        d.static_shared_memory = 1024;
        d.dynamic_shared_memory = 2048;
        d.duration_ns = 3000;
        REQUIRE(emu.launch_kernel_desc(&d) == 0, "launch_desc");
        REQUIRE(emu.memcpy_(device, stream, EMU_COPY_HTOD, 4096, 1000, 1) == 0, "memcpy htod");
        REQUIRE(emu.memcpy_(device, stream, EMU_COPY_DTOH, 8192, 1000, 0) == 0, "memcpy dtoh");
        REQUIRE(emu.memcpy_(device, stream, EMU_COPY_DTOD, 512, 1000, 1) == 0, "memcpy dtod");
        REQUIRE(emu.memset_(device, stream, 1 << 20, 0xab, 1500, 1) == 0, "memset");
    }
    REQUIRE(emu.synchronize(device, -1) == 0, "synchronize");
}

/* ------------------------------------------------------------------ */
/* Scenarios                                                           */
/* ------------------------------------------------------------------ */
static void scenario_kinds(void)
{
    emu_open();
    dt_backend_status bs;
    REQUIRE(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    CHECK(bs.available == 1, "probe: not available: %s", bs.reason);
    const char *base = strrchr(g_opt.emulator, '/');
    CHECK(strstr(bs.library, base ? base + 1 : g_opt.emulator) != NULL, "probe found %s, not %s",
          bs.library, g_opt.emulator);
    CHECK(strcmp(bs.name, g_opt.backend) == 0, "probe name %s", bs.name);
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    uint64_t before = dt_realtime_ns();
    mixed_workload(0, 0, 25);
    mixed_workload(1, 3, 25);
    session_stop(s);
    uint64_t after = dt_realtime_ns();
    emu_stats st;
    emu.stats_get(&st);
    CHECK(st.records[EMU_KIND_KERNEL] == 100, "the emulator produced %" PRIu64 " kernels",
          st.records[EMU_KIND_KERNEL]);
    check_exact(s, &st, NULL);
    check_flows(s);
    check_window(s, before - 1000000, after);

    /* Decoded fields. */
    size_t n = dt_session_event_count(s);
    int saw_demangled = 0, saw_desc = 0, saw_htod = 0, saw_dtoh = 0, saw_dtod = 0, saw_memset = 0,
        saw_devices[2] = {0, 0};
    /* a vendor whose kernel records have no launch configuration says so */
    int configs = !noted(s, NULL, "carry no launch configuration");
    /* a vendor whose launches have a grid and no blocks (BANG C's tasks) */
    int blocks = !noted(s, NULL, "no block dimensions");
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        CHECK(strncmp(ev.name, "_Z", 2) != 0, "mangled name %s", ev.name);
        if (ev.kind == DT_EVENT_KERNEL) {
            if (ev.device < 2) saw_devices[ev.device] = 1;
            if (strcmp(ev.name, "saxpy(int, float, float*, float*)") == 0) {
                saw_demangled++;
                CHECK(configs ? ev.u.kernel.grid[0] == 4 && ev.u.kernel.grid[1] == 2 &&
                                    ev.u.kernel.block[0] == (blocks ? 128 : 0)
                              : ev.u.kernel.grid[0] == 0 && ev.u.kernel.block[0] == 0,
                      "grid/block of saxpy");
                CHECK_EQ_U64(ev.end_ns - ev.start_ns >= 1900 && ev.end_ns - ev.start_ns <= 2100, 1,
                             "saxpy duration near 2000 ns");
            } else if (strcmp(ev.name, "plain_kernel") == 0) {
                saw_desc++;
                CHECK(configs ? ev.u.kernel.grid[0] == 8 && ev.u.kernel.block[0] == (blocks ? 64 : 0) &&
                                    ev.u.kernel.block[1] == (blocks ? 2 : 0)
                              : ev.u.kernel.grid[0] == 0 && ev.u.kernel.block[1] == 0,
                      "grid/block of plain_kernel");
                if (backend_lacks() & DT_BACKEND_LACKS_KERNEL_RESOURCES) {
                    /* absent, never invented */
                    CHECK_EQ_U64(ev.u.kernel.registers_per_thread, 0, "registers per thread (not reported)");
                    CHECK_EQ_U64(ev.u.kernel.static_shared_memory, 0, "static shared memory (not reported)");
                } else {
                    CHECK_EQ_U64(ev.u.kernel.registers_per_thread, configs ? 40 : 0, "registers per thread");
                    CHECK_EQ_U64(ev.u.kernel.static_shared_memory, configs ? 1024 : 0, "static shared memory");
                    CHECK_EQ_U64(ev.u.kernel.dynamic_shared_memory, configs ? 2048 : 0, "dynamic shared memory");
                }
            }
        } else if (ev.kind == DT_EVENT_MEMCPY) {
            if (ev.u.memcpy.copy_kind == DT_COPY_HTOD) { saw_htod++; CHECK_EQ_U64(ev.u.memcpy.bytes, 4096, "htod bytes"); }
            if (ev.u.memcpy.copy_kind == DT_COPY_DTOH) { saw_dtoh++; CHECK_EQ_U64(ev.u.memcpy.bytes, 8192, "dtoh bytes"); }
            if (ev.u.memcpy.copy_kind == DT_COPY_DTOD) { saw_dtod++; CHECK_EQ_U64(ev.u.memcpy.bytes, 512, "dtod bytes"); }
        } else if (ev.kind == DT_EVENT_MEMSET) {
            saw_memset++;
            CHECK_EQ_U64(ev.u.memset.bytes, 1 << 20, "memset bytes");
            CHECK_EQ_U64(ev.u.memset.value, 0xab, "memset value");
        } else if (is_api(ev.kind)) {
            CHECK_EQ_U64(ev.process, (uint32_t)getpid(), "API event process");
            /* system thread ids, so that API rows line up with host threads
               (every call here is made on the main thread) */
            CHECK_EQ_U64(ev.thread, (uint32_t)getpid(), "API event thread");
            CHECK(strchr(ev.name, '#') == NULL, "API event %s has a generic fallback name", ev.name);
        }
    }
    CHECK_EQ_U64(saw_demangled, 50, "demangled saxpy kernels");
    CHECK_EQ_U64(saw_desc, 50, "plain_kernel kernels");
    /* a release without copy or fill records says which it could not
       record; every other vendor records all 50 */
    int copies = st.records[EMU_KIND_MEMCPY] != 0, fills = st.records[EMU_KIND_MEMSET] != 0;
    CHECK(copies || noted(s, "kinds", "memory copies"), "no memory copies, and no note says why");
    CHECK(fills || noted(s, "kinds", "memsets"), "no memsets, and no note says why");
    CHECK_EQ_U64(saw_htod, copies ? 50 : 0, "HtoD copies");
    CHECK_EQ_U64(saw_dtoh, copies ? 50 : 0, "DtoH copies");
    CHECK_EQ_U64(saw_dtod, copies ? 50 : 0, "DtoD copies");
    CHECK_EQ_U64(saw_memset, fills ? 50 : 0, "memsets");
    CHECK(saw_devices[0] && saw_devices[1], "kernels on both devices");
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* External ids: every device activity carries the innermost enclosing host
   operation or range, across nesting and threads. */
#define EXT_THREADS 4
#define EXT_SLOTS_PER_THREAD 16
typedef struct expect { int has; uint64_t id; int used; } expect;
static expect g_expect[EXT_THREADS * EXT_SLOTS_PER_THREAD];

typedef struct ext_arg { int thread; uint32_t tid; } ext_arg;

static void ext_launch(int t, int *slot, int has, uint64_t id, int what)
{
    int k = t * EXT_SLOTS_PER_THREAD + (*slot)++;
    REQUIRE(*slot <= EXT_SLOTS_PER_THREAD, "too many slots");
    g_expect[k].has = has;
    g_expect[k].id = id;
    g_expect[k].used = 1;
    char name[32];
    snprintf(name, sizeof name, "slot_%d", k);
    if (what == 0) {
        REQUIRE(emu.launch_kernel(t % 2, t, name, grid1, block1, 500) == 0, "launch");
    } else {
        /* a memcpy and a memset carry the same expectation: count them by
           the kernel slot launched next to them */
        REQUIRE(emu.launch_kernel(t % 2, t, name, grid1, block1, 500) == 0, "launch");
        REQUIRE(emu.memcpy_(t % 2, t, EMU_COPY_HTOD, 100 + (uint64_t)k, 300, 1) == 0, "memcpy");
    }
}

static void *ext_thread(void *p)
{
    ext_arg *arg = p;
    int t = arg->thread, slot = 0;
    arg->tid = (uint32_t)syscall(SYS_gettid);
    uint64_t base = (uint64_t)(t + 1) * 1000, range = 0, outer_range = 0;
    ext_launch(t, &slot, 0, 0, 0);
    REQUIRE(dt_external_push(base + 1) == DT_OK, "push");
    ext_launch(t, &slot, 1, base + 1, 1);
    REQUIRE(dt_range_push("outer range", &outer_range) == DT_OK, "range push");
    ext_launch(t, &slot, 1, outer_range, 1);
    REQUIRE(dt_external_push(base + 2) == DT_OK, "push");
    ext_launch(t, &slot, 1, base + 2, 0);
    REQUIRE(dt_range_push("inner range", &range) == DT_OK, "range push");
    ext_launch(t, &slot, 1, range, 1);
    REQUIRE(dt_range_pop() == DT_OK, "range pop");
    ext_launch(t, &slot, 1, base + 2, 0);
    /* an API call that launches nothing carries its op's id too */
    REQUIRE(emu.synchronize(t % 2, t) == 0, "synchronize");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    /* after the nested operation returned, the outer range again */
    ext_launch(t, &slot, 1, outer_range, 1);
    REQUIRE(dt_range_pop() == DT_OK, "range pop");
    ext_launch(t, &slot, 1, base + 1, 0);
    REQUIRE(dt_external_push(0) == DT_OK, "push 0");
    ext_launch(t, &slot, 1, 0, 1); /* 0 is a valid id, not "absent" */
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    ext_launch(t, &slot, 0, 0, 1);
    return NULL;
}

/* Every API call made inside an operation carries its id, one that launches
   nothing included: each worker synchronized its stream inside base + 2,
   the main thread synchronized everything outside any operation. An
   API call is known by its vendor's name (cudaStreamSynchronize,
   cnrtQueueSync). */
static void check_sync_calls(dt_session *s, const ext_arg *args)
{
    size_t n = dt_session_event_count(s), inside[EXT_THREADS] = {0};
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (!is_api(ev.kind) || (!strstr(ev.name, "ynchroniz") && !strstr(ev.name, "Sync"))) continue;
        int t = 0;
        while (t < EXT_THREADS && args[t].tid != ev.thread) t++;
        if (t == EXT_THREADS) {
            CHECK(!ev.has_external, "%s outside any operation carries External id %" PRIu64, ev.name,
                  ev.external_id);
            continue;
        }
        inside[t]++;
        uint64_t want = (uint64_t)(t + 1) * 1000 + 2;
        CHECK(ev.has_external && ev.external_id == want,
              "%s on thread %d: External id %" PRIu64 " (has %d), expected %" PRIu64, ev.name, t, ev.external_id,
              ev.has_external, want);
    }
    /* one call each, or a runtime call and the driver call it made */
    for (int t = 0; t < EXT_THREADS; t++)
        CHECK(inside[t] >= 1, "thread %d: no synchronize call recorded inside its operation", t);
}

static void scenario_external(void)
{
    emu_open();
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    pthread_t th[EXT_THREADS];
    ext_arg args[EXT_THREADS];
    for (int t = 0; t < EXT_THREADS; t++) {
        args[t].thread = t;
        REQUIRE(pthread_create(&th[t], NULL, ext_thread, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < EXT_THREADS; t++) pthread_join(th[t], NULL);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    check_flows(s);
    if (!attributes(s)) {
        check_no_external(s);
        CHECK_EQ_U64(count_events(s).kind[DT_EVENT_RANGE], EXT_THREADS * 2, "ranges");
        check_trace(s, "trace");
        dt_session_destroy(s);
        return;
    }

    /* Map correlation -> expectation through the kernels, then check every
       device activity (memcpys share their API call's thread: they are
       checked against the kernel launched right before them on the same
       stream, i.e. the same expectation, through their correlation order). */
    size_t n = dt_session_event_count(s), kernels = 0, memcpys = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL) {
            int k = -1;
            REQUIRE(sscanf(ev.name, "slot_%d", &k) == 1 && k >= 0 &&
                        k < EXT_THREADS * EXT_SLOTS_PER_THREAD && g_expect[k].used,
                    "unexpected kernel %s", ev.name);
            kernels++;
            CHECK(ev.has_external == g_expect[k].has, "kernel %s: has External id %d, expected %d",
                  ev.name, ev.has_external, g_expect[k].has);
            if (ev.has_external && g_expect[k].has)
                CHECK(ev.external_id == g_expect[k].id,
                      "kernel %s: External id %" PRIu64 ", expected %" PRIu64, ev.name,
                      ev.external_id, g_expect[k].id);
        } else if (ev.kind == DT_EVENT_MEMCPY) {
            /* bytes = 100 + slot of the kernel launched just before it */
            int k = (int)ev.u.memcpy.bytes - 100;
            REQUIRE(k >= 0 && k < EXT_THREADS * EXT_SLOTS_PER_THREAD && g_expect[k].used,
                    "unexpected memcpy of %" PRIu64 " bytes", ev.u.memcpy.bytes);
            memcpys++;
            CHECK(ev.has_external == g_expect[k].has, "memcpy %d: has External id %d, expected %d", k,
                  ev.has_external, g_expect[k].has);
            if (ev.has_external && g_expect[k].has)
                CHECK(ev.external_id == g_expect[k].id,
                      "memcpy %d: External id %" PRIu64 ", expected %" PRIu64, k, ev.external_id,
                      g_expect[k].id);
        }
    }
    CHECK_EQ_U64(kernels, EXT_THREADS * 10, "kernels checked");
    CHECK_EQ_U64(memcpys, st.records[EMU_KIND_MEMCPY] ? EXT_THREADS * 6 : 0, "memcpys checked");
    check_sync_calls(s, args);
    CHECK_EQ_U64(count_events(s).kind[DT_EVENT_RANGE], EXT_THREADS * 2, "ranges");
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* The capture window holds everything: work finished before stop is kept
   whole, nothing is counted outside the window. */
static void scenario_window(void)
{
    emu_open();
    dt_session *s = session_new();
    uint64_t before = dt_realtime_ns();
    session_start(s);
    emu.stats_reset();
    for (int i = 0; i < 200; i++) {
        REQUIRE(emu.launch_kernel(0, i % 8, "windowed", grid1, block1, 10000) == 0, "launch");
        REQUIRE(emu.memset_(1, i % 8, 64, 1, 2000, 1) == 0, "memset");
    }
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    uint64_t after = dt_realtime_ns();
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    check_window(s, before, after);
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* Clock: 1 s offset and 100 ppm drift over a long run; the mapping of the
   device clock to realtime must be within 1 us everywhere in the run.
   Ground truth: the emulator's device clock read between two realtime
   reads, sampled far more often than devtrace calibrates. */
static void scenario_clock(void)
{
    emu_open();
    if (emu.set_clock(1000000000, 100.0) != 0) {
        /* only a library whose timestamps are CLOCK_REALTIME itself may
           refuse: then its clock is the host's, and the map the identity */
        uint64_t b = dt_realtime_ns(), v = emu.device_time_ns(), a = dt_realtime_ns();
        REQUIRE(v + 1000000 >= b && v <= a + 1000000, "emu_set_clock refused, and the device clock is not "
                "CLOCK_REALTIME");
        printf("clock: the vendor's timestamps are CLOCK_REALTIME; no offset or drift to map\n");
    }
    const char *secs_env = getenv("DEVTRACE_CONFORMANCE_CLOCK_SECONDS");
    int seconds = secs_env ? atoi(secs_env) : 10;
    if (seconds < 1) seconds = 1;
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    enum { MAX_TRUTH = 4096 };
    static dt_clock_sample truth[MAX_TRUTH];
    size_t nt = 0;
    uint64_t t0 = dt_realtime_ns(), launch_before[64], launch_after[64];
    int launches = 0;
    while (dt_realtime_ns() - t0 < (uint64_t)seconds * 1000000000u && nt < MAX_TRUTH) {
        dt_clock_sample best = {0, 0, UINT64_MAX};
        for (int i = 0; i < 8; i++) {
            uint64_t b = dt_realtime_ns(), v = emu.device_time_ns(), a = dt_realtime_ns();
            if (a - b < best.bracket_ns) best = (dt_clock_sample){v, b + (a - b) / 2, a - b};
        }
        truth[nt++] = best;
        if (nt % 20 == 0 && launches < 64) {
            launch_before[launches] = dt_realtime_ns();
            REQUIRE(emu.launch_kernel(0, launches % 4, "timed", grid1, block1, 1000) == 0, "launch");
            launch_after[launches] = dt_realtime_ns();
            launches++;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);

    /* The fit itself, against the ground truth. */
    uint64_t worst = 0, worst_raw = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < nt; i++) {
        uint64_t mapped = dt_clock_map(&s->clock, truth[i].vendor);
        uint64_t err = mapped > truth[i].realtime ? mapped - truth[i].realtime : truth[i].realtime - mapped;
        if (err > worst_raw) worst_raw = err;
        uint64_t slack = truth[i].bracket_ns / 2;
        err = err > slack ? err - slack : 0;
        if (err > worst) { worst = err; worst_i = i; }
    }
    printf("clock: %zu ground-truth samples over %d s, %zu calibration samples, worst mapping error "
           "%" PRIu64 " ns beyond the sample's own uncertainty (at sample %zu; %" PRIu64 " ns raw), "
           "fit error bound %" PRIu64 " ns, slope %.9f\n",
           nt, seconds, s->clock.count, worst, worst_i, worst_raw, s->clock.error_bound_ns, s->clock.slope);
    CHECK(worst <= 1000, "clock mapping error %" PRIu64 " ns exceeds 1 us", worst);
    CHECK(s->clock.count >= 3, "only %zu calibration samples", s->clock.count);

    /* End to end: each kernel starts inside the realtime bracket of the
       call that launched it (idle streams start work at once). */
    size_t n = dt_session_event_count(s), seen = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int inside = 0;
        for (int k = 0; k < launches; k++)
            if (ev.start_ns + 1000 >= launch_before[k] && ev.start_ns <= launch_after[k] + 1000) inside = 1;
        CHECK(inside, "kernel at %" PRIu64 " is outside every launch bracket", ev.start_ns);
        seen++;
    }
    CHECK_EQ_U64(seen, (uint64_t)launches, "kernels");
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* ------------------------------------------------------------------ */
/* Flight recorder                                                     */
/* ------------------------------------------------------------------ */
/* What one part of a flight-recorder run shows: events kept by kind (those
   the emulator counts as records), losses in all. */
typedef struct fr_part {
    uint64_t kept, lost, evicted, outside, no_buffer;
} fr_part;

static uint64_t stored_records(const emu_stats *st)
{
    return st->records[EMU_KIND_KERNEL] + st->records[EMU_KIND_MEMCPY] + st->records[EMU_KIND_MEMSET] +
           st->records[EMU_KIND_RUNTIME] + st->records[EMU_KIND_DRIVER];
}

static fr_part fr_count(const dt_session *x)
{
    fr_part p = {0, 0, 0, 0, 0};
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        if (dt_session_loss(x, (dt_loss_reason)r))
            printf("flight:   %s %" PRIu64 "\n", dt_loss_reason_name((dt_loss_reason)r),
                   dt_session_loss(x, (dt_loss_reason)r));
    counts c = count_events(x);
    p.kept = c.kind[DT_EVENT_KERNEL] + c.kind[DT_EVENT_MEMCPY] + c.kind[DT_EVENT_MEMSET] + c.kind[DT_EVENT_RUNTIME] +
             c.kind[DT_EVENT_DRIVER];
    p.lost = dt_session_loss_total(x);
    p.evicted = dt_session_loss(x, DT_LOSS_RING_EVICTED);
    p.outside = dt_session_loss(x, DT_LOSS_OUTSIDE_WINDOW);
    p.no_buffer = dt_session_loss(x, DT_LOSS_NO_BUFFER);
    return p;
}

/* No event of a dump begins before its window; the kernels it keeps are
   every kernel launched from its first kept one to the last (no hole):
   their correlation ids run without a gap among the launches. Returns the
   number of kernels named `name`. */
static size_t fr_check_window(const dt_session *x, const char *name, uint64_t *first_start)
{
    size_t n = dt_session_event_count(x), before = 0, named = 0, kernels = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    *first_start = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(x, i, &ev);
        if (ev.kind == DT_EVENT_RANGE || ev.kind == DT_EVENT_OP) continue;
        if (ev.start_ns < x->window_start_ns) before++;
        if (ev.kind != DT_EVENT_KERNEL) continue;
        kernels++;
        if (ev.start_ns < *first_start) *first_start = ev.start_ns;
        if (strcmp(ev.name, name) == 0) named++;
        if (ev.correlation < lo) lo = ev.correlation;
        if (ev.correlation > hi) hi = ev.correlation;
    }
    CHECK(before == 0, "%zu events of the dump begin before its window", before);
    if (kernels) {
        /* every launch makes one API call with its own correlation id, and
           nothing else runs: the launches between lo and hi are all kept */
        uint64_t span = 0;
        for (size_t i = 0; i < n; i++) {
            dt_event ev;
            dt_session_event(x, i, &ev);
            if (ev.kind == DT_EVENT_KERNEL && ev.correlation >= lo && ev.correlation <= hi) span++;
        }
        CHECK_EQ_U64(span, kernels, "kernels in the dump's correlation span");
    }
    return named;
}

typedef struct fr_file {
    uint64_t kept;
} fr_file;

static int fr_visit(void *user, const dt_rd_event *ev)
{
    fr_file *f = user;
    if (ev->ph && ev->ph[0] == 'X' && (dt_rd_cat_is_device_work(ev->cat_kind) || dt_rd_cat_is_api(ev->cat_kind)))
        f->kept++;
    return 0;
}

/* A dump through the public call, to a file: read back, its events and
   losses counted. */
static fr_part fr_dump_file(dt_session *s, const char *tag)
{
    char path[1024];
    const char *dir = g_opt.out ? g_opt.out : ".";
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/%s.%s.%s.json", dir, g_opt.label ? g_opt.label : g_opt.backend, g_scenario, tag);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0, "open %s", path);
    dt_status st = dt_session_dump(s, fd, DT_FORMAT_JSON);
    close(fd);
    REQUIRE(st == DT_OK, "dt_session_dump: %s: %s", dt_status_name(st), dt_last_error());
    check_other_readers(path);
    if (g_opt.cli && access(g_opt.cli, X_OK) == 0) {
        char cmd[2300];
        snprintf(cmd, sizeof cmd, "'%s' check '%s' >'%s.check.txt' 2>&1", g_opt.cli, path, path);
        int rc = system(cmd);
        CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "devtrace check %s failed; see %s.check.txt", path,
              path);
    }
    char err[512] = "";
    dt_rd_source *src = dt_rd_open_file(path, err, sizeof err);
    REQUIRE(src != NULL, "cannot open %s: %s", path, err);
    fr_file f = {0};
    dt_rd_summary sum;
    memset(&sum, 0, sizeof sum);
    REQUIRE(dt_rd_read(src, fr_visit, &f, &sum, err, sizeof err) == 0, "cannot read %s: %s", path, err);
    fr_part p = {f.kept, 0, 0, 0, 0};
    for (size_t i = 0; i < sum.loss.count; i++) {
        p.lost += (uint64_t)sum.loss.items[i].value;
        if (!strcmp(sum.loss.items[i].key, "ring_evicted")) p.evicted = (uint64_t)sum.loss.items[i].value;
    }
    dt_rd_summary_free(&sum);
    dt_rd_close(src);
    return p;
}

static long fr_rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* n launches, the vendor made to deliver its buffers every `batch`: the
   ring then holds them, rather than the vendor (whose thread would
   otherwise deliver when it gets to run: a burst on a ring this small
   would leave the vendor without buffers, dropping records as no_buffer). */
static void fr_launch(dt_session *s, const char *name, int n, int batch)
{
    for (int i = 0; i < n; i++) {
        REQUIRE(emu.launch_kernel(0, 0, name, grid1, block1, 500) == 0, "launch");
        if ((i + 1) % batch && i + 1 < n) continue;
        REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
        s->backend->flush(s->backend, s);
    }
}

/* A ring of 4 small buffers overflowed by many launches: the evicted
   records counted exactly (everything the emulator produced is kept or
   counted, dump by dump), no event before a dump's window, no hole in it,
   the devices and names kept, dumps again later while recording goes on,
   a dump under the no_callbacks fault, memory bounded. */
static void scenario_flight_recorder(void)
{
    emu_open();
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.buffer_size = 4096;
    c.flight_recorder_bytes = 4 * 4096;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "dt_session_create: %s", dt_last_error());
    if (!(dt_select_backend(g_opt.backend)->caps & DT_BACKEND_FLIGHT_RECORDER)) {
        /* never silently a normal recording */
        dt_status st = dt_session_start(s);
        CHECK(st == DT_ERR_BACKEND_UNAVAILABLE, "dt_session_start on a backend without a flight recorder: %s",
              dt_status_name(st));
        CHECK(strstr(dt_last_error(), "has no flight recorder") != NULL, "message: %s", dt_last_error());
        if (st == DT_OK) dt_session_stop(s);
        dt_session_destroy(s);
        return;
    }
    session_start(s);
    emu.stats_reset();
    uint64_t start_ns = dt_realtime_ns();

    /* 1. a kernel launched only before the ring overflows, then enough
       others to evict it many times over, then it again */
    fr_launch(s, "early_kernel", 5, 8);
    fr_launch(s, "filler_kernel", 3000, 8);
    fr_launch(s, "early_kernel", 3, 8);
    emu_stats st;
    emu.stats_get(&st);
    uint64_t produced1 = stored_records(&st);
    dt_session *x = NULL;
    REQUIRE(dt_core_flight_snapshot(s, &x) == DT_OK, "dump 1: %s", dt_last_error());
    fr_part d1 = fr_count(x);
    printf("flight: dump 1 keeps %" PRIu64 " of %" PRIu64 " records, %" PRIu64 " ring_evicted, %" PRIu64
           " outside_window\n", d1.kept, produced1, d1.evicted, d1.outside);
    CHECK(d1.evicted > 0, "4 buffers of 4 KiB held 3,008 launches: nothing was evicted");
    CHECK_EQ_U64(d1.kept + d1.lost, produced1, "dump 1: kept + lost");
    /* what the vendor could not store for want of a buffer is counted too */
    CHECK_EQ_U64(d1.lost, d1.evicted + d1.outside + d1.no_buffer, "dump 1: only ring_evicted, outside_window "
                 "and no_buffer lost");
    CHECK_EQ_U64(d1.no_buffer, counts_drops(s) ? st.dropped_no_buffer : 0, "dump 1: no_buffer");
    CHECK(x->window_start_ns > start_ns, "dump 1's window starts at the session's start despite evictions");
    uint64_t first = 0;
    size_t early = fr_check_window(x, "early_kernel", &first);
    CHECK_EQ_U64(early, 3, "early_kernel launched again after the eviction, named in dump 1");
    CHECK(first >= x->window_start_ns, "the first kept kernel begins before the window");
    /* compared with what the stop knows, at the end */
    dt_device_props dev1 = x->devices[0];
    uint64_t end1 = x->window_end_ns;
    check_trace(x, "dump1");
    dt_session_destroy(x);

    /* 2. the session goes on: a second dump holds what came since */
    fr_launch(s, "second_kernel", 10, 8);
    emu.stats_get(&st);
    uint64_t produced2 = stored_records(&st) - produced1;
    REQUIRE(dt_core_flight_snapshot(s, &x) == DT_OK, "dump 2: %s", dt_last_error());
    fr_part d2 = fr_count(x);
    CHECK_EQ_U64(d2.kept + d2.lost, produced2, "dump 2: kept + lost");
    CHECK(x->window_start_ns >= end1, "dump 2's window starts before dump 1's end");
    CHECK_EQ_U64(fr_check_window(x, "second_kernel", &first), 10, "second_kernel in dump 2");
    dt_device_props dev2 = x->devices[0];
    dt_session_destroy(x);

    /* 3. a dump while the vendor's API callbacks fail: still a trace, the
       launches without them lack their External id, counted */
    emu_fault f = EMU_FAULT_COUNT;
    for (int i = 0; i < EMU_FAULT_COUNT; i++)
        if (emu.fault_name((emu_fault)i) && strcmp(emu.fault_name((emu_fault)i), "no_callbacks") == 0) f = (emu_fault)i;
    uint64_t produced3 = 0;
    if (f != EMU_FAULT_COUNT && emu.fault_arm(f, 0) == 0) {
        uint64_t before = stored_records(&st);
        REQUIRE(dt_external_push(42) == DT_OK, "push");
        REQUIRE(emu.fault_arm(f, 3) == 0, "emu_fault_arm");
        fr_launch(s, "fault_kernel", 10, 8);
        REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
        emu.stats_get(&st);
        produced3 = stored_records(&st) - before;
        REQUIRE(dt_core_flight_snapshot(s, &x) == DT_OK, "dump 3: %s", dt_last_error());
        fr_part d3 = fr_count(x);
        CHECK_EQ_U64(d3.kept + d3.lost, produced3, "dump 3: kept + lost");
        size_t n = dt_session_event_count(x), without = 0;
        for (size_t i = 0; i < n; i++) {
            dt_event ev;
            dt_session_event(x, i, &ev);
            if (ev.kind == DT_EVENT_KERNEL && !ev.has_external) without++;
        }
        if (attributes(x))
            CHECK_EQ_U64(without, st.records[EMU_KIND_EXTERNAL] == 0 ? 3 : 0, "kernels without External id");
        check_trace(x, "dump3");
        dt_session_destroy(x);
    }

    /* 4. a dump through the public call, to a descriptor, while a second
       is refused */
    uint64_t before4 = stored_records(&st);
    fr_launch(s, "file_kernel", 10, 8);
    emu.stats_get(&st);
    atomic_store(&s->dumping, 1); /* as while another dump runs */
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK_EQ_U64(dt_session_dump(s, devnull, DT_FORMAT_JSON), DT_ERR_BUSY, "a dump while one runs");
    close(devnull);
    atomic_store(&s->dumping, 0);
    fr_part d4 = fr_dump_file(s, "dump4");
    CHECK_EQ_U64(d4.kept + d4.lost, stored_records(&st) - before4, "dump 4 (file): kept + lost");

    /* 5. memory: 200,000 more launches grow the process by no more than
       the ring's bound allows (a normal recording keeps ~38 MB of them) */
    fr_launch(s, "rss_kernel", 20000, 64);
    long rss0 = fr_rss_kib();
    uint64_t before5 = stored_records(&st);
    fr_launch(s, "rss_kernel", 200000, 64);
    long grown = fr_rss_kib() - rss0;
    printf("flight: RSS grew by %ld KiB over 200,000 launches (ring %" PRIu64 " bytes)\n", grown,
           c.flight_recorder_bytes);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* the sanitizers' allocators keep freed memory resident (ASan's
       quarantine, TSan's per-thread caches and its shadow of each access) */
    printf("flight: RSS not checked under a sanitizer\n");
#else
    CHECK(grown < 4096, "RSS grew by %ld KiB over 200,000 launches with a 16 KiB ring", grown);
#endif

    /* 6. the stop: the ring's last window, everything accounted */
    session_stop(s);
    emu.stats_get(&st);
    fr_part d5 = fr_count(s);
    CHECK_EQ_U64(d5.kept + d5.lost, stored_records(&st) - before5, "stop: kept + lost");
    /* the devices a recording knows (from the vendor's records, which the
       ring evicted long ago, or its driver), known to every dump */
    const dt_device_props *dev = &s->devices[0];
    CHECK(dev1.valid == dev->valid && dev2.valid == dev->valid, "device 0 known at stop (%d), in dump 1 (%d), in "
          "dump 2 (%d)", dev->valid, dev1.valid, dev2.valid);
    CHECK(!dev->valid || (strcmp(dev1.name, dev->name) == 0 && dev1.total_global_mem == dev->total_global_mem),
          "device 0 in dump 1 is %s, at stop %s", dev1.name, dev->name);
    check_trace(s, "stop");
    dt_session_destroy(s);
}

/* One fault: its counted drop, exact counts of everything else, and a valid
   trace. */
static const struct {
    const char *fault;
    int loss;           /* dt_loss_reason, or -1: nothing is lost */
} fault_table[] = {
    {"zero_timestamps", DT_LOSS_TIMESTAMP_ZERO},
    {"reversed_timestamps", DT_LOSS_TIMESTAMP_REVERSED},
    {"long_timestamps", DT_LOSS_TIMESTAMP_TOO_LONG},
    {"malformed", DT_LOSS_MALFORMED},
    {"unknown_kind", DT_LOSS_UNKNOWN_KIND},
    {"late", -1},
    {"out_of_order", -1},
    {"no_callbacks", -1},
    {"vendor_dropped", DT_LOSS_VENDOR_DROPPED},
    /* The vendor drops records as if devtrace had given no buffer, but
       devtrace refused none: all it can know is the vendor's count. */
    {"no_buffer", DT_LOSS_VENDOR_DROPPED},
};

static void scenario_fault(const char *fault)
{
    int fi = -1;
    for (size_t i = 0; i < sizeof fault_table / sizeof fault_table[0]; i++)
        if (strcmp(fault_table[i].fault, fault) == 0) fi = (int)i;
    REQUIRE(fi >= 0, "unknown fault %s", fault);
    emu_open();
    emu_fault f = EMU_FAULT_COUNT;
    for (int i = 0; i < EMU_FAULT_COUNT; i++)
        if (emu.fault_name((emu_fault)i) && strcmp(emu.fault_name((emu_fault)i), fault) == 0) f = (emu_fault)i;
    REQUIRE(f != EMU_FAULT_COUNT, "the emulator has no fault %s", fault);

    const uint64_t armed = 7;
    int rc = emu.fault_arm(f, 0);
    if (rc == EMU_ENOTSUP) {
        printf("[fault_%s] the %s interface cannot exhibit this fault (emu_fault_arm: EMU_ENOTSUP); skipped\n",
               fault, g_opt.backend);
        exit(77);
    }
    REQUIRE(rc == 0, "emu_fault_arm");
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    /* ranges around the work so that no_callbacks shows as missing ids */
    REQUIRE(dt_external_push(42) == DT_OK, "push");
    mixed_workload(0, 0, 5);
    REQUIRE(emu.fault_arm(f, armed) == 0, "emu_fault_arm");
    mixed_workload(0, 0, 10);
    mixed_workload(1, 2, 10);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    CHECK_EQ_U64(st.faulted[f], armed, "records the emulator faulted");

    uint64_t expected[DT_LOSS_COUNT];
    memset(expected, 0, sizeof expected);
    int loss = fault_table[fi].loss;
    /* a vendor that cannot report its drops says so; nothing else is lost */
    if (loss == DT_LOSS_VENDOR_DROPPED && !counts_drops(s)) loss = -1;
    if (loss >= 0) expected[loss] = st.faulted[f];
    check_exact(s, &st, expected);
    check_flows(s);
    if (!attributes(s)) {
        check_no_external(s);
        check_trace(s, "trace");
        dt_session_destroy(s);
        return;
    }

    size_t n = dt_session_event_count(s), without = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (!is_device(ev.kind)) continue;
        if (!ev.has_external) without++;
        else CHECK(ev.external_id == 42, "External id %" PRIu64, ev.external_id);
    }
    if (f == EMU_FAULT_NO_CALLBACKS && st.records[EMU_KIND_EXTERNAL] == 0) {
        /* External ids come from API callbacks: each of the armed calls
           (all of them launch device work) lacks its id, nothing else. */
        CHECK_EQ_U64(without, armed, "device activities without External id");
    } else {
        /* or the vendor reports external ids in records of its own */
        CHECK_EQ_U64(without, 0, "device activities without External id");
    }
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* 8 threads each making 100,000 launches lose nothing. */
typedef struct launch_arg { int thread, count; } launch_arg;

static void *launch_thread(void *p)
{
    launch_arg *a = p;
    char name[32];
    snprintf(name, sizeof name, "worker_%d", a->thread);
    REQUIRE(dt_external_push((uint64_t)a->thread + 1) == DT_OK, "push");
    for (int i = 0; i < a->count; i++)
        REQUIRE(emu.launch_kernel(a->thread % 2, a->thread, name, grid1, block1, 100) == 0, "launch");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    return NULL;
}

/* `threads` threads each make `per` launches inside an External id of
   their own, on the default pool: nothing is lost, each kernel carries its
   thread's id. The pool grows to a bound that holds all these records
   (docs/backends: DT_POOL_GROW) even when the thread that decodes them is
   starved, so the outcome does not depend on timing. */
static void launch_threads(int threads, int per)
{
    enum { MAX_THREADS = 64 };
    REQUIRE(threads <= MAX_THREADS, "too many threads");
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    pthread_t th[MAX_THREADS];
    launch_arg args[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        args[t] = (launch_arg){t, per};
        REQUIRE(pthread_create(&th[t], NULL, launch_thread, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], (uint64_t)threads * per, "kernels produced");
    check_exact(s, &st, NULL);
    size_t n = dt_session_event_count(s);
    uint64_t per_thread[MAX_THREADS] = {0};
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int t = -1;
        if (sscanf(ev.name, "worker_%d", &t) != 1 || t < 0 || t >= threads) { wrong++; continue; }
        per_thread[t]++;
        if (!ev.has_external || ev.external_id != (uint64_t)t + 1) wrong++;
    }
    for (int t = 0; t < threads; t++) CHECK_EQ_U64(per_thread[t], per, "kernels of one thread");
    if (attributes(s)) CHECK(wrong == 0, "%zu kernels with a wrong name or External id", wrong);
    else check_no_external(s);
    check_flows(s);
    dt_session_destroy(s);
}

/* 8 threads, 100,000 launches each. */
static void scenario_threads(void)
{
    emu_open();
    const char *per_env = getenv("DEVTRACE_CONFORMANCE_LAUNCHES");
    launch_threads(8, per_env ? atoi(per_env) : 100000);
}

/* 64 threads: with per-thread buffers (CUDA 13) each holds one of its own,
   more than the default pool of 32. */
static void scenario_threads64(void)
{
    emu_open();
    launch_threads(64, 2000);
}

/* Work still running when the session stops is counted as unfinished, one
   per record, and everything else is kept: the vendor hands it back at the
   final flush without an end (CUDA 13's CUPTI) or with an end after stop.
   The same with API calls not recorded: a backend that knows what runs
   from the API records needs another source then. */
static void unfinished_with(uint32_t without, int first_stream, const char *tag)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.capture &= ~without;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "dt_session_create: %s", dt_last_error());
    session_start(s);
    emu.stats_reset();
    mixed_workload(1, 0, 3);
    /* one long kernel per stream, so that none waits behind another (nor
       behind those of an earlier session, still running) */
    for (int i = 0; i < 3; i++)
        REQUIRE(emu.launch_kernel(0, first_stream + i, "still_running", grid1, block1, 30ull * 1000000000u) == 0,
                "launch");
    REQUIRE(emu.memset_(0, first_stream + 3, 4096, 0, 30ull * 1000000000u, 1) == 0, "memset");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    CHECK_EQ_U64(st.records_unfinished[EMU_KIND_KERNEL], 3, "kernels handed back running");
    /* a release without memset records (MSPTI 2024) has none to hand back */
    uint64_t memsets = noted(s, "kinds", "memsets") ? 0 : 1; /* the note lists what is not recorded */
    CHECK_EQ_U64(st.records_unfinished[EMU_KIND_MEMSET], memsets, "memsets handed back running");
    uint64_t expected[DT_LOSS_COUNT] = {0};
    expected[DT_LOSS_UNFINISHED] = 3 + memsets;
    check_exact(s, &st, expected);
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        CHECK(strcmp(ev.name, "still_running") != 0, "a kernel still running at stop was kept");
    }
    check_trace(s, tag);
    dt_session_destroy(s);
}

static void scenario_unfinished(void)
{
    emu_open();
    unfinished_with(0, 10, "trace");
    unfinished_with(DT_CAPTURE_RUNTIME, 20, "trace_no_runtime");
}

/* A buffer pool too small for the records: the vendor gets no buffer at
   times and drops records; every one of them is counted as
   no_buffer, so kept + counted = produced, exactly, kind by kind. */
static void *pool_thread(void *p)
{
    launch_arg *a = p;
    for (int i = 0; i < a->count; i++)
        REQUIRE(emu.launch_kernel(a->thread % 2, a->thread, "pool_kernel", grid1, block1, 50) == 0, "launch");
    return NULL;
}

static void scenario_pool_exhausted(void)
{
    emu_open();
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.buffer_count = 2;
    c.buffer_size = 1024;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "dt_session_create: %s", dt_last_error());
    session_start(s);
    emu.stats_reset();
    enum { THREADS = 4, PER = 5000 };
    pthread_t th[THREADS];
    launch_arg args[THREADS];
    /* The consumer is held up meanwhile (decoding takes the session lock):
       the pool grows to its bound and runs dry whatever the timing. Not
       where the vendor's producers wait for that consumer (lossless
       buffers): they would wait for ever. */
    int hold = !(dt_select_backend(g_opt.backend)->caps & DT_BACKEND_LOSSLESS_BUFFERS);
    if (hold) dt_core_lock(s);
    for (int t = 0; t < THREADS; t++) {
        args[t] = (launch_arg){t, PER};
        REQUIRE(pthread_create(&th[t], NULL, pool_thread, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    if (hold) dt_core_unlock(s);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    counts k = count_events(s);
    uint64_t no_buffer = dt_session_loss(s, DT_LOSS_NO_BUFFER);
    printf("pool: %" PRIu64 " kernels produced, %" PRIu64 " kept, %" PRIu64 " no_buffer (the emulator dropped %"
           PRIu64 " records for want of a buffer)\n",
           st.records[EMU_KIND_KERNEL], k.kind[DT_EVENT_KERNEL], no_buffer, st.dropped_no_buffer);
    CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], THREADS * PER, "kernels produced");
    if (dt_select_backend(g_opt.backend)->caps & DT_BACKEND_LOSSLESS_BUFFERS) {
        /* The vendor's own buffers, sized from these settings, make the
           program wait when full: small ones cost deliveries (and, where
           producers wait for the consumer, time), not records. */
        printf("pool: %" PRIu64 " buffers delivered, producers waited %" PRIu64 " times\n", st.buffers_completed,
               st.buffer_waits);
        CHECK_EQ_U64(st.dropped_reported, 0, "records the vendor dropped");
        CHECK(st.buffers_completed >= 1000, "only %" PRIu64 " buffers delivered: the vendor's buffers are not the "
              "small ones asked for", st.buffers_completed);
        check_exact(s, &st, NULL);
        check_trace(s, "trace");
        dt_session_destroy(s);
        return;
    }
    CHECK(st.dropped_no_buffer > 0, "the pool of two 1 KiB buffers never ran dry");
    /* Every record the vendor could not store for want of a buffer is a
       no_buffer loss, on every vendor; each kind keeps exactly the rest. */
    uint64_t expected[DT_LOSS_COUNT] = {0};
    /* a vendor that cannot report its drops says so */
    expected[DT_LOSS_NO_BUFFER] = counts_drops(s) ? st.dropped_reported : 0;
    CHECK_EQ_U64(st.dropped_reported, st.dropped_no_buffer, "the emulator's drops are all for want of a buffer");
    static const struct { dt_event_kind event; emu_kind emu; const char *what; } kinds[] = {
        {DT_EVENT_KERNEL, EMU_KIND_KERNEL, "kernels kept"},
        {DT_EVENT_RUNTIME, EMU_KIND_RUNTIME, "runtime API calls kept"},
        {DT_EVENT_DRIVER, EMU_KIND_DRIVER, "driver API calls kept"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        CHECK_EQ_U64(k.kind[kinds[i].event], st.records[kinds[i].emu] - st.dropped_no_buffer_kind[kinds[i].emu],
                     kinds[i].what);
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        CHECK_EQ_U64(dt_session_loss(s, (dt_loss_reason)r), expected[r], dt_loss_reason_name((dt_loss_reason)r));
    int noted = 0;
    for (int i = 0; i < s->note_count; i++) noted |= strcmp(s->notes[i].key, "buffer_pool") == 0;
    CHECK(noted, "the trace does not say that the pool ran dry");
    check_trace(s, "trace");
    dt_session_destroy(s);
}

/* Only the kinds asked for are recorded; External ids still reach the
   device activity (they do not depend on recording API calls). */
static void scenario_capture_subset(void)
{
    emu_open();
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.capture = DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "dt_session_create: %s", dt_last_error());
    session_start(s);
    emu.stats_reset();
    REQUIRE(dt_external_push(99) == DT_OK, "push");
    mixed_workload(0, 0, 10);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    CHECK_EQ_U64(st.records[EMU_KIND_RUNTIME], 0, "runtime records produced");
    CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], 20, "kernel records produced");
    /* unless the release has no memset records, and says so */
    CHECK_EQ_U64(st.records[EMU_KIND_MEMSET], noted(s, "kinds", "memsets") ? 0 : 10, "memset records produced");
    if (backend_lacks() & DT_BACKEND_LACKS_SEPARATE_COPY_FILL) {
        /* the vendor produced the copies with the fills; devtrace keeps
           only what was asked for, and loses nothing */
        CHECK_EQ_U64(count_events(s).kind[DT_EVENT_MEMCPY], 0, "memcpys kept");
        st.records[EMU_KIND_MEMCPY] = 0;
    } else {
        CHECK_EQ_U64(st.records[EMU_KIND_MEMCPY], 0, "memcpy records produced");
    }
    check_exact(s, &st, NULL);
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n && attributes(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (is_device(ev.kind))
            CHECK(ev.has_external && ev.external_id == 99, "%s: External id %d/%" PRIu64, ev.name,
                  ev.has_external, ev.external_id);
    }
    if (!attributes(s)) check_no_external(s);
    dt_session_destroy(s);
}

/* Start, stop and start again: each session holds exactly its own work. */
static void scenario_restart(void)
{
    emu_open();
    dt_session *s = session_new();
    for (int round = 0; round < 3; round++) {
        session_start(s);
        emu.stats_reset();
        mixed_workload(round % 2, round, 3 + round);
        session_stop(s);
        emu_stats st;
        emu.stats_get(&st);
        CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], 2 * (3 + round), "kernels produced");
        check_exact(s, &st, NULL);
        check_flows(s);
        char tag[16];
        snprintf(tag, sizeof tag, "round%d", round);
        check_trace(s, tag);
    }
    dt_session_destroy(s);
    /* and a fresh session after the first one was destroyed */
    s = session_new();
    session_start(s);
    emu.stats_reset();
    mixed_workload(0, 5, 2);
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    dt_session_destroy(s);
}

/* A library that cannot be used gives a message that says what to do. */
static void expect_unavailable(const char *library, const char *const *must_contain)
{
    REQUIRE(setenv(g_opt.env, library, 1) == 0, "setenv");
    dt_session *s = session_new();
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BACKEND_UNAVAILABLE, "dt_session_start gave %s", dt_status_name(st));
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    for (int i = 0; must_contain[i]; i++)
        CHECK(strstr(msg, must_contain[i]) != NULL, "message lacks \"%s\": %s", must_contain[i], msg);
    dt_session_destroy(s);

    dt_backend_status bs;
    CHECK(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    CHECK(bs.available == 0, "probe says available");
    CHECK(bs.reason[0] != '\0', "probe gives no reason");
}

static void scenario_missing_library(void)
{
    const char *path = "/nonexistent/devtrace-conformance/libvendor.so";
    const char *must[] = {path, g_opt.env, NULL};
    expect_unavailable(path, must);
}

static void scenario_no_marker(void)
{
    REQUIRE(g_opt.nomarker, "no --nomarker library for this backend");
    /* the library itself loads: the refusal is about its layout */
    void *h = dlopen(g_opt.nomarker, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL, "cannot load %s: %s", g_opt.nomarker, dlerror());
    const char *must[] = {g_opt.nomarker, "rebuild", NULL};
    expect_unavailable(g_opt.nomarker, must);
}

/* The minimal library has only the required entry points: the backend
   starts, records device activity (no External ids), and names every
   missing feature in the probe and in the trace's notes. */
static void scenario_minimal(void)
{
    REQUIRE(g_opt.minimal, "no --minimal library for this backend");
    g_opt.emulator = g_opt.minimal;
    emu_open();
    dt_backend_status bs;
    REQUIRE(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    printf("probe: available %d, library %s, version '%s', reason: %s\n", bs.available, bs.library,
           bs.version, bs.reason);
    CHECK(bs.available == 1, "minimal library not available: %s", bs.reason);
    CHECK(strstr(bs.reason, "Subscribe") != NULL, "probe does not name the missing subscribe: %s", bs.reason);
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    REQUIRE(dt_external_push(7) == DT_OK, "push");
    mixed_workload(0, 0, 5);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    check_flows(s);
    CHECK(s->note_count > 0, "no notes about degraded features");
    int subscribe_noted = 0;
    for (int i = 0; i < s->note_count; i++)
        if (strstr(s->notes[i].key, "Subscribe")) subscribe_noted = 1;
    CHECK(subscribe_noted, "the trace does not note the missing subscribe");
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (is_device(ev.kind)) CHECK(!ev.has_external, "External id without callbacks");
    }
    check_trace_allowing(s, "trace", 4);
    dt_session_destroy(s);
}

static void other_profiler_callback(void *userdata, int domain, uint32_t cbid, const void *data) {}

/* Another profiler holding the vendor interface: DT_ERR_BUSY, and devtrace
   leaves nothing armed (it starts once the other lets go). */
static void scenario_busy(void)
{
    REQUIRE(g_opt.subscribe, "no --subscribe symbol for this backend");
    emu_open();
    typedef int (*subscribe_fn)(void **, void *, void *);
    typedef int (*unsubscribe_fn)(void *);
    subscribe_fn sub;
    unsubscribe_fn unsub;
    char unsub_name[128];
    *(void **)&sub = dlsym(emu.handle, g_opt.subscribe);
    REQUIRE(sub, "the emulator lacks %s", g_opt.subscribe);
    const char *suffix = strstr(g_opt.subscribe, "Subscribe");
    REQUIRE(suffix, "subscribe symbol %s", g_opt.subscribe);
    snprintf(unsub_name, sizeof unsub_name, "%.*sUnsubscribe", (int)(suffix - g_opt.subscribe), g_opt.subscribe);
    *(void **)&unsub = dlsym(emu.handle, unsub_name);
    REQUIRE(unsub, "the emulator lacks %s", unsub_name);
    void *other = NULL;
    REQUIRE(sub(&other, (void *)other_profiler_callback, NULL) == 0, "the other profiler could not subscribe");
    dt_session *s = session_new();
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BUSY, "dt_session_start gave %s: %s", dt_status_name(st), dt_last_error());
    CHECK(strstr(dt_last_error(), "another") != NULL, "message does not name another holder: %s",
          dt_last_error());
    REQUIRE(unsub(other) == 0, "the other profiler could not unsubscribe");
    session_start(s);
    emu.stats_reset();
    mixed_workload(0, 0, 2);
    session_stop(s);
    emu_stats st2;
    emu.stats_get(&st2);
    check_exact(s, &st2, NULL);
    dt_session_destroy(s);
}

#include "on_demand.c"

/* Nesting far deeper than any vendor's own external-correlation stack:
   every device activity carries the innermost id of devtrace's stack, on
   the way in and on the way out. */
#define DEEP 10000
static void scenario_deep_external(void)
{
    emu_open();
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    static uint64_t ids[DEEP];
    char name[32];
    for (int d = 0; d < DEEP; d++) {
        REQUIRE(dt_range_push("nested", &ids[d]) == DT_OK, "range push at depth %d", d);
        snprintf(name, sizeof name, "in_%d", d);
        REQUIRE(emu.launch_kernel(0, d % 4, name, grid1, block1, 100) == 0, "launch");
    }
    for (int d = DEEP - 1; d >= 0; d--) {
        snprintf(name, sizeof name, "out_%d", d);
        REQUIRE(emu.launch_kernel(1, d % 4, name, grid1, block1, 100) == 0, "launch");
        REQUIRE(dt_range_pop() == DT_OK, "range pop at depth %d", d);
    }
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    size_t n = dt_session_event_count(s), kernels = 0, wrong = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        kernels++;
        int d = -1;
        REQUIRE(sscanf(ev.name, "%*[a-z]_%d", &d) == 1 && d >= 0 && d < DEEP, "kernel %s", ev.name);
        if (!ev.has_external || ev.external_id != ids[d]) {
            if (wrong++ < 5)
                fprintf(stderr, "kernel %s: External id %" PRIu64 " (%d), expected %" PRIu64 "\n", ev.name,
                        ev.external_id, ev.has_external, ids[d]);
        }
    }
    CHECK_EQ_U64(kernels, 2 * DEEP, "kernels");
    if (attributes(s))
        CHECK(wrong == 0, "%zu of %zu kernels carry another External id than the innermost range's", wrong, kernels);
    else
        check_no_external(s);
    dt_session_destroy(s);
}

/* A library the user named that cannot be used is an error, also under
   "auto": the session does not fall back to another backend, the probe
   says why, and `devtrace record` and `devtrace backends` print it. */
static void scenario_named_library(void)
{
    /* loads, but is no vendor library */
    const char *lib = "libm.so.6";
    REQUIRE(setenv(g_opt.env, lib, 1) == 0, "setenv");
    dt_config c;
    dt_config_init(&c);
    c.backend = "auto";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create");
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BACKEND_UNAVAILABLE, "auto with %s=%s started: %s (backend %s)", g_opt.env, lib,
          dt_status_name(st), dt_session_backend(s));
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    CHECK(strstr(msg, g_opt.env) && strstr(msg, "libm.so.6"), "the error does not name the variable and "
          "the library: %s", msg);
    if (st == DT_OK) dt_session_stop(s);
    dt_session_destroy(s);
    dt_backend_status bs;
    CHECK(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    CHECK(!bs.available && strstr(bs.reason, g_opt.env), "probe: available %d: %s", bs.available, bs.reason);
    if (!g_opt.cli || access(g_opt.cli, X_OK) != 0) return;
    char cmd[2400], out[8192];
    const char *dir = g_opt.out ? g_opt.out : ".";
    mkdir(dir, 0777);
    for (int i = 0; i < 2; i++) {
        char sub[1200];
        if (i == 0) snprintf(sub, sizeof sub, "backends");
        else snprintf(sub, sizeof sub, "record -o %s/%s.named.json -- true", dir, g_opt.backend);
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", g_opt.cli, sub);
        FILE *p = popen(cmd, "r");
        REQUIRE(p != NULL, "popen %s", cmd);
        size_t len = fread(out, 1, sizeof out - 1, p);
        out[len] = 0;
        pclose(p);
        CHECK(strstr(out, g_opt.env) != NULL, "`devtrace %s` does not print the %s error:\n%s", sub, g_opt.env,
              out);
    }
}

/* A backend whose vendor records some kinds only from a library in
   LD_PRELOAD at process start (MSPTI) is tested as `devtrace record` runs
   programs: this process starts again with the emulator preloaded. The
   programs it runs (devtrace check, jq, python) do not inherit it. */
static void preload_if_needed(char **argv)
{
    const dt_backend *b = dt_select_backend(g_opt.backend);
    if (!b || !b->preload || !strcmp(g_scenario, "missing_library") || !strcmp(g_scenario, "named_library")) return;
    const char *marker = "DEVTRACE_CONFORMANCE_PRELOADED";
    if (getenv(marker)) {
        unsetenv("LD_PRELOAD");
        return;
    }
    char san[8192], ld[16384];
    dt_sanitizer_runtimes(san, sizeof san);
    snprintf(ld, sizeof ld, "%s%s%s", san, san[0] ? ":" : "", g_opt.emulator);
    REQUIRE(setenv("LD_PRELOAD", ld, 1) == 0 && setenv(marker, "1", 1) == 0, "setenv");
    execv("/proc/self/exe", argv);
    FAIL("cannot run %s again with LD_PRELOAD=%s", argv[0], ld);
}

int main(int argc, char **argv)
{
    const char *scenario = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--backend")) g_opt.backend = v;
        else if (!strcmp(k, "--emulator")) g_opt.emulator = v;
        else if (!strcmp(k, "--env")) g_opt.env = v;
        else if (!strcmp(k, "--minimal")) g_opt.minimal = v;
        else if (!strcmp(k, "--nomarker")) g_opt.nomarker = v;
        else if (!strcmp(k, "--subscribe")) g_opt.subscribe = v;
        else if (!strcmp(k, "--out")) g_opt.out = v;
        else if (!strcmp(k, "--cli")) g_opt.cli = v;
        else if (!strcmp(k, "--label")) g_opt.label = v;
        else if (!strcmp(k, "--scenario")) scenario = v;
        else { fprintf(stderr, "unknown option %s\n", k); return 2; }
    }
    if (!g_opt.backend || !g_opt.emulator || !g_opt.env || !scenario) {
        fprintf(stderr, "usage: %s --backend NAME --emulator LIB --env VAR --scenario S [...]\n", argv[0]);
        return 2;
    }
    g_scenario = scenario;
    preload_if_needed(argv);
    if (!strcmp(scenario, "kinds")) scenario_kinds();
    else if (!strcmp(scenario, "external")) scenario_external();
    else if (!strcmp(scenario, "deep_external")) scenario_deep_external();
    else if (!strcmp(scenario, "named_library")) scenario_named_library();
    else if (!strcmp(scenario, "window")) scenario_window();
    else if (!strcmp(scenario, "clock")) scenario_clock();
    else if (!strcmp(scenario, "threads")) scenario_threads();
    else if (!strcmp(scenario, "threads64")) scenario_threads64();
    else if (!strcmp(scenario, "unfinished")) scenario_unfinished();
    else if (!strcmp(scenario, "restart")) scenario_restart();
    else if (!strcmp(scenario, "capture_subset")) scenario_capture_subset();
    else if (!strcmp(scenario, "pool_exhausted")) scenario_pool_exhausted();
    else if (!strcmp(scenario, "missing_library")) scenario_missing_library();
    else if (!strcmp(scenario, "no_marker")) scenario_no_marker();
    else if (!strcmp(scenario, "minimal")) scenario_minimal();
    else if (!strcmp(scenario, "busy")) scenario_busy();
    else if (!strcmp(scenario, "on_demand")) scenario_on_demand();
    else if (!strcmp(scenario, "flight_recorder")) scenario_flight_recorder();
    else if (!strncmp(scenario, "fault_", 6)) scenario_fault(scenario + 6);
    else { fprintf(stderr, "unknown scenario %s\n", scenario); return 2; }
    if (dt_check_failures) {
        fprintf(stderr, "[%s] %d checks failed\n", scenario, dt_check_failures);
        return 1;
    }
    printf("[%s] passed\n", scenario);
    return 0;
}
