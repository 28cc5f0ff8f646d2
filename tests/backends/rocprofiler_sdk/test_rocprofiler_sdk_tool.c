/*
 * devtrace as a rocprofiler-sdk tool, on the emulator: how it registers
 * (forced, prepared early, found through ROCP_TOOL_LIBRARIES), what a late
 * start does (refused with the reason, or recorded where the release can),
 * what the records give (grid and block from dispatches, names from kernel
 * symbols, memset sizes from hipMemset arguments, ROCTX ranges, agents as
 * device properties, a CLOCK_BOOTTIME clock), both correlation layouts, and
 * drops counted per session.
 *
 * Each case runs in its own process (`test_rocprofiler_sdk_tool CASE`):
 * rocprofiler-sdk accepts its tools once per process.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/rocprofiler_sdk_abi.h"
#include "devtrace_emu.h"

#include "dt_check.h"

#define ENV "DEVTRACE_ROCPROFILER_SDK_LIBRARY"

static void *g_lib;

static void *sym(const char *name)
{
    void *p = dlsym(g_lib, name);
    REQUIRE(p != NULL, "the emulator lacks %s", name);
    return p;
}

/* The emulator, as the backend will find it; `version` is the
   rocprofiler-sdk release it plays (NULL: its default, the newest). */
static void open_emulator(const char *version)
{
    if (version) REQUIRE(setenv("DEVTRACE_EMU_ROCPROFILER_SDK_VERSION", version, 1) == 0);
    REQUIRE(setenv(ENV, DT_EMULATOR, 1) == 0);
    g_lib = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_lib, "cannot load %s: %s", DT_EMULATOR, dlerror());
    int (*init)(void);
    *(void **)&init = sym("emu_init");
    REQUIRE(init() == 0);
}

static void launch(int device, int stream, const char *name, int gx, int bx, uint32_t regs, int32_t lds_static,
                   int32_t lds_dynamic)
{
    int (*fn)(const emu_kernel_desc *);
    *(void **)&fn = sym("emu_launch_kernel_desc");
    emu_kernel_desc d = {.device = device, .stream = stream, .name = name, .grid = {gx, 2, 1}, .block = {bx, 1, 1},
                         .registers_per_thread = regs, .static_shared_memory = lds_static,
                         .dynamic_shared_memory = lds_dynamic, .duration_ns = 2000};
    REQUIRE(fn(&d) == 0, "launch");
}

static void memcpy_(int device, int kind, uint64_t bytes)
{
    int (*fn)(int, int, int, uint64_t, uint64_t, int);
    *(void **)&fn = sym("emu_memcpy");
    REQUIRE(fn(device, 0, kind, bytes, 1000, 1) == 0, "memcpy");
}

static void memset_(uint64_t bytes, uint32_t value)
{
    int (*fn)(int, int, uint64_t, uint32_t, uint64_t, int);
    *(void **)&fn = sym("emu_memset");
    REQUIRE(fn(0, 1, bytes, value, 1000, 1) == 0, "memset");
}

static void sync_all(void)
{
    int (*fn)(int, int);
    *(void **)&fn = sym("emu_synchronize");
    REQUIRE(fn(-1, -1) == 0, "synchronize");
}

static void stats(emu_stats *st)
{
    void (*get)(emu_stats *);
    *(void **)&get = sym("emu_stats_get");
    get(st);
}

static void stats_reset(void)
{
    void (*reset)(void);
    *(void **)&reset = sym("emu_stats_reset");
    reset();
}

static void faults(const char *spec)
{
    int (*set)(const char *);
    *(void **)&set = sym("emu_set_faults");
    REQUIRE(set(spec) == 0, "faults %s", spec);
}

static dt_session *new_session(uint32_t capture, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "rocprofiler_sdk";
    if (capture) c.capture = capture;
    if (buffer_size) c.buffer_size = buffer_size;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    return s;
}

static dt_session *started(uint32_t capture, size_t buffer_size)
{
    dt_session *s = new_session(capture, buffer_size);
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    return s;
}

static const char *note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return s->notes[i].text;
    return NULL;
}

static size_t count_kind(const dt_session *s, dt_event_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        n += ev.kind == kind;
    }
    return n;
}

/* What the emulator produced is what the session holds, nothing lost. */
static void check_exact(const dt_session *s, const emu_stats *st)
{
    CHECK_EQ(count_kind(s, DT_EVENT_KERNEL), st->records[EMU_KIND_KERNEL]);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMCPY), st->records[EMU_KIND_MEMCPY]);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMSET), st->records[EMU_KIND_MEMSET]);
    CHECK_EQ(count_kind(s, DT_EVENT_RUNTIME), st->records[EMU_KIND_RUNTIME]);
    CHECK_EQ(dt_session_loss_total(s), 0);
}

/* The workload every registration path records: kernels with launch
   details, a copy, a memset, a ROCTX range and an External id. */
static void workload(void)
{
    int (*push)(const char *);
    int (*pop)(void);
    *(void **)&push = sym("roctxRangePushA");
    *(void **)&pop = sym("roctxRangePop");
    launch(0, 1, "_Z4gemmPfS_", 10, 256, 96, 4096, 1024);
    launch(1, 2, "plain", 3, 64, 0, 0, 0);
    memcpy_(1, EMU_COPY_HTOD, 4096);
    memset_(1 << 20, 0xab);
    REQUIRE(push("step 1") == 0, "roctxRangePushA");
    launch(0, 1, "in_range", 1, 32, 0, 0, 0);
    REQUIRE(pop() == 0, "roctxRangePop");
    REQUIRE(dt_external_push(77) == DT_OK);
    launch(0, 3, "in_op", 1, 32, 0, 0, 0);
    REQUIRE(dt_external_pop(NULL) == DT_OK);
    sync_all();
}

static void check_workload(const dt_session *s)
{
    int gemm = 0, range_kernel = 0, op_kernel = 0, memset = 0, ranges = 0;
    uint64_t range_id = UINT64_MAX;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_RANGE && strcmp(ev.name, "step 1") == 0) {
            ranges++;
            range_id = ev.u.range.range_id;
        }
    }
    CHECK_EQ(ranges, 1);
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL && strcmp(ev.name, "gemm(float*, float*)") == 0) {
            gemm++;
            CHECK_EQ(ev.device, 0);
            CHECK_EQ(ev.u.kernel.grid[0], 10);
            CHECK_EQ(ev.u.kernel.grid[1], 2);
            CHECK_EQ(ev.u.kernel.block[0], 256);
            CHECK_EQ(ev.u.kernel.registers_per_thread, 96);
            CHECK_EQ(ev.u.kernel.static_shared_memory, 4096);
            CHECK_EQ(ev.u.kernel.dynamic_shared_memory, 1024);
            CHECK(!ev.has_external, "gemm ran outside every range");
        } else if (ev.kind == DT_EVENT_KERNEL && strcmp(ev.name, "in_range") == 0) {
            range_kernel++;
            CHECK(ev.has_external && ev.external_id == range_id, "the ROCTX range's kernel carries its id");
        } else if (ev.kind == DT_EVENT_KERNEL && strcmp(ev.name, "in_op") == 0) {
            op_kernel++;
            CHECK(ev.has_external && ev.external_id == 77, "External id %" PRIu64, ev.external_id);
        } else if (ev.kind == DT_EVENT_MEMSET) {
            memset++;
            CHECK_EQ(ev.u.memset.bytes, 1 << 20);
            CHECK_EQ(ev.u.memset.value, 0xab);
        } else if (ev.kind == DT_EVENT_RUNTIME) {
            CHECK(strncmp(ev.name, "hip", 3) == 0, "HIP API name %s", ev.name);
        }
    }
    CHECK_EQ(gemm, 1);
    CHECK_EQ(range_kernel, 1);
    CHECK_EQ(op_kernel, 1);
    CHECK_EQ(memset, 1);
}

static void record_workload(void)
{
    dt_session *s = started(0, 0);
    stats_reset();
    workload();
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    emu_stats st;
    stats(&st);
    check_exact(s, &st);
    check_workload(s);
    dt_session_destroy(s);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */
/* A session before the program's first HIP call registers devtrace by
   forced configuration; everything the records hold arrives. */
static void forced(void)
{
    open_emulator("0.6.0");
    int (*is_initialized)(int *);
    *(void **)&is_initialized = sym("rocprofiler_is_initialized");
    int status = 5;
    is_initialized(&status);
    CHECK_EQ(status, 0);
    dt_session *s = started(0, 0);
    is_initialized(&status);
    CHECK_EQ(status, 1);
    stats_reset();
    workload();
    REQUIRE(dt_session_stop(s) == DT_OK);
    emu_stats st;
    stats(&st);
    check_exact(s, &st);
    check_workload(s);
    /* agents as device properties */
    char props[4096];
    dt_session_device_properties(s, props, sizeof props);
    CHECK(strstr(props, "\"name\":\"AMD Instinct MI300X (devtrace emulator)\""), "%s", props);
    CHECK(strstr(props, "\"numSms\":304"), "%s", props);
    CHECK(strstr(props, "\"warpSize\":64"), "%s", props);
    CHECK(strstr(props, "\"maxThreadsPerMultiprocessor\":2048"), "%s", props);
    CHECK(strstr(props, "\"sharedMemPerMultiprocessor\":65536"), "%s", props);
    CHECK(strstr(props, "\"computeMajor\":9,\"computeMinor\":4"), "%s", props);
    CHECK(strstr(props, "\"id\":1"), "two GPUs: %s", props);
    CHECK(note(s, "device_properties") && strstr(note(s, "device_properties"), "regsPerBlock"),
          "absent properties are noted");
    CHECK(note(s, "vendor_clock") && strstr(note(s, "vendor_clock"), "CLOCK_BOOTTIME"), "the clock is named");
    CHECK_STR(s->backend_version, "0.6.0");
    dt_session_destroy(s);
    /* the SDK's clock is CLOCK_BOOTTIME (the emulator's, a few
       microseconds off where its start was slow, as under TSan) */
    int (*stamp)(uint64_t *);
    *(void **)&stamp = sym("rocprofiler_get_timestamp");
    struct timespec ts;
    uint64_t sdk = 0;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    REQUIRE(stamp(&sdk) == RSDK_STATUS_SUCCESS);
    uint64_t boot = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    CHECK((sdk > boot ? sdk - boot : boot - sdk) < 100000000u, "timestamp %" PRIu64 " vs CLOCK_BOOTTIME %" PRIu64,
          sdk, boot);
}

/* dt_prepare before the first HIP call, the session after it: recorded. */
static void prepared(void)
{
    open_emulator("0.6.0");
    REQUIRE(dt_prepare("rocprofiler_sdk") == DT_OK, "prepare: %s", dt_last_error());
    launch(0, 0, "before_the_session", 1, 32, 0, 0, 0);
    sync_all();
    record_workload();
}

/* The first HIP call before devtrace registered, with a release that
   cannot trace a runtime initialized before its tools: the session is
   refused and says why and what to do, instead of recording nothing. */
static void late_start_refused(void)
{
    open_emulator("0.6.0");
    launch(0, 0, "early", 1, 32, 0, 0, 0);
    sync_all();
    dt_session *s = new_session(0, 0);
    dt_status st = dt_session_start(s);
    CHECK_EQ(st, DT_ERR_BACKEND_UNAVAILABLE);
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    CHECK(strstr(msg, "initialized before devtrace registered"), "%s", msg);
    CHECK(strstr(msg, "0.6.0") && strstr(msg, "1.3.0"), "the releases: %s", msg);
    CHECK(strstr(msg, "dt_prepare(\"rocprofiler_sdk\")") && strstr(msg, "devtrace record"), "what to do: %s", msg);
    dt_session_destroy(s);
}

static int other_initialize(rsdk_client_finalize finalize, void *data)
{
    (void)finalize;
    (void)data;
    return 0;
}

static rsdk_tool_configure_result other_result = {sizeof other_result, other_initialize, NULL, NULL};

static rsdk_tool_configure_result *other_tool(uint32_t version, const char *runtime, uint32_t priority,
                                              rsdk_client_id *id)
{
    (void)version, (void)runtime, (void)priority;
    id->name = "another tool";
    return &other_result;
}

/* Another tool made the SDK initialize first: devtrace cannot join. */
static void late_after_other_tool(void)
{
    open_emulator("0.6.0");
    int (*force)(rsdk_configure_fn);
    *(void **)&force = sym("rocprofiler_force_configure");
    REQUIRE(force(other_tool) == RSDK_STATUS_SUCCESS);
    dt_session *s = new_session(0, 0);
    CHECK_EQ(dt_session_start(s), DT_ERR_BACKEND_UNAVAILABLE);
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    CHECK(strstr(msg, "was initialized before devtrace registered as its tool"), "%s", msg);
    CHECK(strstr(msg, "CONFIGURATION_LOCKED"), "the SDK's refusal: %s", msg);
    dt_backend_status bs;
    REQUIRE(dt_backend_probe("rocprofiler_sdk", &bs) == DT_OK);
    CHECK(bs.available && strstr(bs.reason, "a session started now fails"), "probe: %s", bs.reason);
    dt_session_destroy(s);
}

/* From 1.3.0 rocprofiler-sdk traces runtimes initialized before it: a
   late session records everything. */
static void late_start_supported(void)
{
    open_emulator("1.3.0");
    launch(0, 0, "early", 1, 32, 0, 0, 0);
    sync_all();
    record_workload();
}

/* From 1.3.2 a tool may register after another ("anytime initialization"). */
static void anytime_initialization(void)
{
    open_emulator("1.3.2");
    int (*force)(rsdk_configure_fn);
    *(void **)&force = sym("rocprofiler_force_configure");
    REQUIRE(force(other_tool) == RSDK_STATUS_SUCCESS);
    launch(0, 0, "early", 1, 32, 0, 0, 0);
    sync_all();
    record_workload();
}

/* The layouts with `ancestor` in correlation ids (API and callback
   records), chosen by the library's release. */
static void ancestor_layouts(void)
{
    open_emulator("1.1.0");
    record_workload();
}

/* The release before 0.6.0: memory-copy records end before the addresses. */
static void short_copy_records(void)
{
    open_emulator("0.5.0");
    record_workload();
}

/* The SDK's drop count is its buffer's total so far: each session is
   charged only what was dropped while it ran, as vendor_dropped. */
static void drops_per_session(void)
{
    open_emulator(NULL);
    for (int round = 0; round < 2; round++) {
        dt_session *s = started(0, 0);
        stats_reset();
        faults(round ? "vendor_dropped=3,no_buffer=2" : "vendor_dropped=5");
        for (int i = 0; i < 20; i++) launch(0, 0, "k", 1, 32, 0, 0, 0);
        sync_all();
        REQUIRE(dt_session_stop(s) == DT_OK);
        emu_stats st;
        stats(&st);
        CHECK_EQ(dt_session_loss(s, DT_LOSS_VENDOR_DROPPED), 5);
        CHECK_EQ(dt_session_loss(s, DT_LOSS_NO_BUFFER), 0);
        CHECK_EQ(count_kind(s, DT_EVENT_KERNEL), st.records[EMU_KIND_KERNEL]);
        CHECK_EQ(st.dropped_reported, 5);
        dt_session_destroy(s);
    }
}

/* A later session that asks for other buffers or fewer kinds: the SDK's
   buffers stay what they were (said in a note), and only the kinds asked
   for are produced. */
static void second_session(void)
{
    open_emulator("0.6.0");
    dt_session *s = started(0, 0);
    launch(0, 0, "first", 1, 32, 0, 0, 0);
    sync_all();
    REQUIRE(dt_session_stop(s) == DT_OK);
    CHECK(note(s, "buffers") == NULL, "the first session's buffers are its own");
    dt_session_destroy(s);
    s = started(DT_CAPTURE_KERNEL, 1 << 16);
    stats_reset();
    launch(0, 0, "second", 1, 32, 0, 0, 0);
    memcpy_(0, EMU_COPY_DTOH, 64);
    sync_all();
    REQUIRE(dt_session_stop(s) == DT_OK);
    emu_stats st;
    stats(&st);
    CHECK_EQ(st.records[EMU_KIND_RUNTIME], 0);
    CHECK_EQ(st.records[EMU_KIND_MEMCPY], 0);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 1);
    check_exact(s, &st);
    CHECK(note(s, "buffers") && strstr(note(s, "buffers"), "made once per process"), "buffers note");
    dt_session_destroy(s);
}

/* A memset whose hipMemset* callback was missed is still a memset, sized
   0, and the trace says how many were. */
static void memset_without_arguments(void)
{
    open_emulator(NULL);
    dt_session *s = started(0, 0);
    faults("no_callbacks=1");
    memset_(4096, 1);
    sync_all();
    REQUIRE(dt_session_stop(s) == DT_OK);
    CHECK_EQ(count_kind(s, DT_EVENT_MEMSET), 1);
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_MEMSET) CHECK_EQ(ev.u.memset.bytes, 0);
    }
    CHECK(note(s, "memset") && strstr(note(s, "memset"), "1 memsets"), "noted: %s",
          note(s, "memset") ? note(s, "memset") : "(none)");
    dt_session_destroy(s);
}

/* ------------------------------------------------------------------ */
/* ROCP_TOOL_LIBRARIES                                                 */
/* ------------------------------------------------------------------ */
/* The child: a program that knows nothing of devtrace; ROCm loads the
   tool named in ROCP_TOOL_LIBRARIES at its first call. */
static int child_workload(void)
{
    g_lib = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) return 2;
    for (int i = 0; i < 10; i++) launch(i % 2, 0, "loaded_tool", 4, 64, 0, 0, 0);
    sync_all();
    return 0;
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The injection library named in ROCP_TOOL_LIBRARIES: the SDK loads it
   while it initializes, its session starts then (waiting for devtrace's
   initialize), and the program's work is in the trace it writes. */
static void tool_libraries(void)
{
    char dir[] = "/tmp/dt-rsdk-tool-XXXXXX", out[256], cmd[2048], self[1024];
    REQUIRE(mkdtemp(dir), "mkdtemp");
    snprintf(out, sizeof out, "%s/trace.json", dir);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    self[n] = 0;
    /* the child is the process whose trace is named as asked (exec keeps
       the shell's pid) */
    snprintf(cmd, sizeof cmd,
             "ROCP_TOOL_LIBRARIES='%s/libdevtrace_inject.so' DEVTRACE_BACKEND=rocprofiler_sdk "
             ENV "='%s' DEVTRACE_OUTPUT='%s' sh -c 'DEVTRACE_PRIMARY_PID=$$ exec \"$0\" child_workload' '%s'",
             DT_BINARY_DIR, DT_EMULATOR, out, self);
    int rc = system(cmd);
    REQUIRE(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "child: %d", rc);
    FILE *f = fopen(out, "r");
    REQUIRE(f, "no trace at %s", out);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    CHECK_EQ(occurrences(text, "\"name\":\"loaded_tool\""), 10);
    snprintf(cmd, sizeof cmd, "'%s/devtrace' check '%s'", DT_BINARY_DIR, out);
    rc = system(cmd);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "devtrace check %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* One case per process: rocprofiler-sdk takes its tools once. */
int main(int argc, char **argv)
{
    static const dt_test tests[] = {
        DT_TEST(forced), DT_TEST(prepared), DT_TEST(late_start_refused), DT_TEST(late_after_other_tool),
        DT_TEST(late_start_supported), DT_TEST(anytime_initialization), DT_TEST(ancestor_layouts), DT_TEST(short_copy_records),
        DT_TEST(drops_per_session), DT_TEST(second_session), DT_TEST(memset_without_arguments),
        DT_TEST(tool_libraries),
    };
    enum { COUNT = sizeof tests / sizeof tests[0] };
    if (argc > 1 && strcmp(argv[1], "child_workload") == 0) return child_workload();
    if (!DT_EMULATOR[0]) SKIP("the rocprofiler-sdk emulator was not built");
    if (argc > 1) return dt_test_main(argc, argv, tests, COUNT, NULL, NULL);
    int failed = 0;
    for (size_t i = 0; i < COUNT; i++) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "'%s' %s", argv[0], tests[i].name);
        failed |= system(cmd) != 0;
    }
    return failed;
}
