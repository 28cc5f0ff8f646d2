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
#include "conformance.h"

const char *g_scenario = "";

/* ------------------------------------------------------------------ */
/* The backend under test and its emulator                             */
/* ------------------------------------------------------------------ */
/* ------------------------------------------------------------------ */
/* The backend under test and its emulator                             */
/* ------------------------------------------------------------------ */
conformance_opt g_opt;

conformance_emu emu;

#define EMU_SYM(field, sym)                                                              \
    do {                                                                                 \
        *(void **)&emu.field = dlsym(emu.handle, sym);                                   \
        REQUIRE(emu.field != NULL, "%s does not export %s", g_opt.emulator, sym);        \
    } while (0)

void emu_open(void)
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

dt_session *session_new(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    dt_session *s = NULL;
    dt_status st = dt_session_create(&c, &s);
    REQUIRE(st == DT_OK, "dt_session_create: %s: %s", dt_status_name(st), dt_last_error());
    return s;
}

void session_start(dt_session *s)
{
    dt_status st = dt_session_start(s);
    REQUIRE(st == DT_OK, "dt_session_start: %s: %s", dt_status_name(st), dt_last_error());
    CHECK(strcmp(dt_session_backend(s), g_opt.backend) == 0, "backend %s", dt_session_backend(s));
}

void session_stop(dt_session *s)
{
    dt_status st = dt_session_stop(s);
    REQUIRE(st == DT_OK, "dt_session_stop: %s: %s", dt_status_name(st), dt_last_error());
}

const int grid1[3] = {4, 2, 1}, block1[3] = {128, 1, 1};

/* What the backend's vendor interface does not give (DT_BACKEND_LACKS_*). */
unsigned backend_lacks(void)
{
    const dt_backend *b = dt__select_backend(g_opt.backend);
    return b ? b->lacks : 0;
}

/* Whether the session has a note under key (NULL: any) whose text says
   `fact`: how a degraded vendor says what it cannot do. */
int noted(const dt_session *s, const char *key, const char *fact)
{
    for (int i = 0; i < s->note_count; i++)
        if ((!key || strcmp(s->notes[i].key, key) == 0) && strstr(s->notes[i].text, fact)) return 1;
    return 0;
}

/* A vendor with no way to attribute device work (no external-correlation
   stack and no usable API callbacks) says so; its device activity then
   carries no External id at all, never a wrong one. */
int attributes(const dt_session *s)
{
    return !noted(s, NULL, "carries no External id");
}

int counts_drops(const dt_session *s)
{
    return !noted(s, NULL, "records the vendor drops are not counted");
}

void check_no_external(const dt_session *s)
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

counts count_events(const dt_session *s)
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

int is_device(dt_event_kind k)
{
    return k == DT_EVENT_KERNEL || k == DT_EVENT_MEMCPY || k == DT_EVENT_MEMSET;
}
int is_api(dt_event_kind k) { return k == DT_EVENT_RUNTIME || k == DT_EVENT_DRIVER; }

/* Exactly what the emulator produced, of every kind (but the work it
   handed back still running, unfinished), and nothing else lost than
   `expected_loss` (per reason). */
void check_exact(const dt_session *s, const emu_stats *st, const uint64_t expected_loss[DT_LOSS_COUNT])
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

int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every device activity has exactly one API call with its correlation id,
   and no two device activities share one. */
void check_flows(const dt_session *s)
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
void check_window(const dt_session *s, uint64_t before, uint64_t after)
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

/* Write the trace and, where the CLI was built, verify its invariants.
   allowed_invariant > 0: the one invariant a degraded backend is expected
   to violate (e.g. 4, generic API names without a name API). */
void check_trace_allowing(dt_session *s, const char *tag, int allowed_invariant)
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
void check_other_readers(const char *path)
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

void check_trace(dt_session *s, const char *tag) { check_trace_allowing(s, tag, 0); }

/* A mixed workload on `device`: kernels (one with a mangled name), every
   copy direction, memsets, and a synchronize. Returns calls made. */
void mixed_workload(int device, int stream, int rounds)
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

/* A backend whose vendor records some kinds only from a library in
   LD_PRELOAD at process start (MSPTI) is tested as `devtrace record` runs
   programs: this process starts again with the emulator preloaded. The
   programs it runs (devtrace check, jq, python) do not inherit it. */
static void preload_if_needed(char **argv)
{
    const dt_backend *b = dt__select_backend(g_opt.backend);
    if (!b || !b->preload || !strcmp(g_scenario, "missing_library") || !strcmp(g_scenario, "named_library")) return;
    const char *marker = "DEVTRACE_CONFORMANCE_PRELOADED";
    if (getenv(marker)) {
        unsetenv("LD_PRELOAD");
        return;
    }
    char san[8192], ld[16384];
    dt__sanitizer_runtimes(san, sizeof san);
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
