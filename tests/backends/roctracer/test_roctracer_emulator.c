/*
 * What only roctracer has, on its emulator: ROCTX ranges, launch and fill
 * arguments from the HIP API callbacks, API names from roctracer_op_string,
 * and device properties read one attribute at a time (present, refused,
 * or from a HIP runtime whose attribute numbers devtrace does not know).
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devtrace_emu.h"
#include "dt_check.h"

static void *g_lib;
static struct {
    int (*launch)(const emu_kernel_desc *);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*sync)(int, int);
    int (*fault_arm)(emu_fault, uint64_t);
    void (*mark)(const char *);
    int (*push)(const char *);
    int (*pop)(void);
    uint64_t (*start)(const char *);
    void (*stop)(uint64_t);
} emu;

static int setup(void)
{
    if (!DT_EMULATOR[0]) return 0;
    setenv("DEVTRACE_ROCTRACER_LIBRARY", DT_EMULATOR, 1);
    g_lib = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        fprintf(stderr, "cannot load %s: %s\n", DT_EMULATOR, dlerror());
        return 1;
    }
    *(void **)&emu.launch = dlsym(g_lib, "emu_launch_kernel_desc");
    *(void **)&emu.memset_ = dlsym(g_lib, "emu_memset");
    *(void **)&emu.memcpy_ = dlsym(g_lib, "emu_memcpy");
    *(void **)&emu.sync = dlsym(g_lib, "emu_synchronize");
    *(void **)&emu.fault_arm = dlsym(g_lib, "emu_fault_arm");
    *(void **)&emu.mark = dlsym(g_lib, "roctxMarkA");
    *(void **)&emu.push = dlsym(g_lib, "roctxRangePushA");
    *(void **)&emu.pop = dlsym(g_lib, "roctxRangePop");
    *(void **)&emu.start = dlsym(g_lib, "roctxRangeStartA");
    *(void **)&emu.stop = dlsym(g_lib, "roctxRangeStop");
    void *const *all = (void *const *)&emu;
    for (size_t i = 0; i < sizeof emu / sizeof(void *); i++)
        if (!all[i]) {
            fprintf(stderr, "%s lacks an entry point this test calls\n", DT_EMULATOR);
            return 1;
        }
    return 0;
}

static dt_session *start_session(void)
{
    if (!g_lib) SKIP("the roctracer emulator is not built");
    dt_config c;
    dt_config_init(&c);
    c.backend = "roctracer";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    return s;
}

static void launch(const char *name, int gx, int bx)
{
    emu_kernel_desc d = {.device = 0, .stream = 1, .name = name, .grid = {gx, 2, 1}, .block = {bx, 1, 1},
                         .duration_ns = 1000};
    REQUIRE_EQ(emu.launch(&d), 0);
}

static void stop(dt_session *s)
{
    REQUIRE_EQ(emu.sync(-1, -1), 0);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
}

/* The one event of a kind with this name (REQUIREd). */
static dt_event find(const dt_session *s, dt_event_kind kind, const char *name)
{
    dt_event ev, found;
    int n = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_session_event(s, i, &ev);
        if (ev.kind == kind && strcmp(ev.name, name) == 0) {
            found = ev;
            n++;
        }
    }
    REQUIRE(n == 1, "%d events %s of kind %d", n, name, (int)kind);
    return found;
}

static const char *note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return s->notes[i].text;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Pushed ROCTX ranges are user ranges that device work inside them is
   attributed to; start/stop ranges and marks are recorded as ranges. */
static void roctx_ranges(void)
{
    dt_session *s = start_session();
    REQUIRE_EQ(emu.push("outer"), 0);
    launch("k_outer", 1, 32);
    REQUIRE_EQ(emu.push("inner"), 1);
    launch("k_inner", 1, 32);
    REQUIRE_EQ(emu.pop(), 1);
    launch("k_outer_again", 1, 32);
    REQUIRE_EQ(emu.pop(), 0);
    emu.mark("a mark");
    uint64_t id = emu.start("a span");
    launch("k_span", 1, 32);
    emu.stop(id);
    stop(s);
    dt_event outer = find(s, DT_EVENT_RANGE, "outer"), inner = find(s, DT_EVENT_RANGE, "inner");
    CHECK(inner.u.range.has_parent && inner.u.range.parent_id == outer.u.range.range_id, "inner is not inside outer");
    CHECK(outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns, "inner range outside outer");
    dt_event k = find(s, DT_EVENT_KERNEL, "k_outer");
    CHECK(k.has_external && k.external_id == outer.u.range.range_id, "k_outer: External id %" PRIu64, k.external_id);
    k = find(s, DT_EVENT_KERNEL, "k_inner");
    CHECK(k.has_external && k.external_id == inner.u.range.range_id, "k_inner: External id %" PRIu64, k.external_id);
    k = find(s, DT_EVENT_KERNEL, "k_outer_again");
    CHECK(k.has_external && k.external_id == outer.u.range.range_id, "k_outer_again");
    dt_event mark = find(s, DT_EVENT_RANGE, "a mark");
    CHECK_EQ(mark.end_ns, mark.start_ns);
    dt_event span = find(s, DT_EVENT_RANGE, "a span");
    k = find(s, DT_EVENT_KERNEL, "k_span");
    CHECK(span.start_ns <= k.start_ns || !k.has_external, "span");
    CHECK(!k.has_external, "a start/stop range attributed device work");
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* A pop without its push in the session, or out of nesting order, is not
   recorded, and never pops what the program pushed. */
static void roctx_unbalanced(void)
{
    if (!g_lib) SKIP("the roctracer emulator is not built");
    emu.push("before the session"); /* no callbacks yet */
    dt_session *s = start_session();
    CHECK_EQ(emu.pop(), 0);          /* its pop: ignored */
    REQUIRE(dt_external_push(5) == DT_OK, "push");
    CHECK_EQ(emu.pop(), -1);         /* nothing pushed at all */
    emu.push("range");
    REQUIRE(dt_external_push(6) == DT_OK, "push");
    emu.pop();                       /* the innermost entry is the program's 6 */
    uint64_t top = 0;
    CHECK(dt_external_top(&top) == DT_OK && top == 6, "the program's id was popped (top %" PRIu64 ")", top);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop 6");
    REQUIRE(dt_range_pop() == DT_OK, "the range the pop left");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop 5");
    stop(s);
    CHECK(note(s, "roctx") != NULL, "the unmatched pop is not noted");
    dt_session_destroy(s);
}

/* Grid and block from hipLaunchKernel's arguments, the fill value from
   hipMemset's; a launch without callbacks keeps its kernel, without a
   configuration; registers and shared memory are never written. */
static void call_arguments(void)
{
    dt_session *s = start_session();
    launch("configured", 8, 64);
    REQUIRE_EQ(emu.fault_arm(EMU_FAULT_NO_CALLBACKS, 1), 0);
    launch("unconfigured", 8, 64);
    REQUIRE_EQ(emu.memset_(0, 1, 4096, 0x5a, 500, 1), 0);
    stop(s);
    dt_event k = find(s, DT_EVENT_KERNEL, "configured");
    CHECK(k.u.kernel.grid[0] == 8 && k.u.kernel.grid[1] == 2 && k.u.kernel.grid[2] == 1, "grid");
    CHECK(k.u.kernel.block[0] == 64 && k.u.kernel.block[1] == 1, "block");
    k = find(s, DT_EVENT_KERNEL, "unconfigured");
    CHECK(k.u.kernel.grid[0] == 0 && k.u.kernel.block[0] == 0, "a configuration the callbacks did not give");
    dt_event m = find(s, DT_EVENT_MEMSET, "Memset (Device)");
    CHECK_EQ(m.u.memset.value, 0x5a);
    CHECK_EQ(m.u.memset.bytes, 4096);
    CHECK_EQ(dt_session_loss_total(s), 0);
    /* the trace leaves out what roctracer does not give */
    char path[] = "/tmp/devtrace-roctracer-args-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0, "mkstemp");
    close(fd);
    REQUIRE(dt_session_write(s, path, DT_FORMAT_JSON) == DT_OK, "write: %s", dt_last_error());
    FILE *f = fopen(path, "r"); /* the trace replaced the file: open it anew */
    REQUIRE(f != NULL, "fdopen");
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    CHECK(strstr(text, "\"grid\":[8,2,1]") != NULL, "the configured kernel's grid is not in the trace");
    CHECK(strstr(text, "registers per thread") == NULL, "the trace writes registers roctracer does not report");
    CHECK(strstr(text, "est. achieved occupancy") == NULL, "an occupancy estimate without registers");
    CHECK(strstr(text, "\"grid\":[0") == NULL, "a grid written as zeros");
    dt_session_destroy(s);
}

/* API names from roctracer_op_string, ids as HIP numbers them. */
static void api_names(void)
{
    dt_session *s = start_session();
    launch("k", 1, 32);
    REQUIRE_EQ(emu.memcpy_(0, 1, EMU_COPY_HTOD, 64, 100, 0), 0);
    stop(s);
    dt_event api = find(s, DT_EVENT_RUNTIME, "hipLaunchKernel");
    CHECK_EQ(api.u.api.cbid, 107);
    api = find(s, DT_EVENT_RUNTIME, "hipMemcpy");
    CHECK_EQ(api.u.api.cbid, 125);
    dt_session_destroy(s);
}

static size_t props_json(const dt_session *s, char *buf, size_t size)
{
    size_t n = dt_session_device_properties(s, buf, size);
    REQUIRE(n < size, "device properties too long");
    return n;
}

static void device_properties(void)
{
    dt_session *s = start_session();
    stop(s);
    char json[4096];
    props_json(s, json, sizeof json);
    CHECK(strstr(json, "\"name\":\"devtrace emulated DCU 0\"") != NULL, "%s", json);
    CHECK(strstr(json, "\"numSms\":64") && strstr(json, "\"numSms\":60"), "%s", json);
    CHECK(strstr(json, "\"warpSize\":64") != NULL, "%s", json);
    CHECK(strstr(json, "\"totalGlobalMem\":68719476736") != NULL, "%s", json);
    CHECK(strstr(json, "\"computeMajor\":9,\"computeMinor\":0") != NULL, "%s", json);
    /* CUDA-only on AMD: refused; the opt-in limit is the per-block one */
    CHECK(strstr(json, "\"sharedMemPerBlockOptin\":65536") != NULL, "%s", json);
    const char *why = note(s, "device_properties");
    CHECK(why && strstr(why, "MaxBlocksPerMultiProcessor") && !strstr(why, "Optin"), "note: %s", why ? why : "none");
    dt_session_destroy(s);
}

static void device_properties_refused(void)
{
    setenv("DEVTRACE_EMU_HIP_ATTR_FAIL", "63,87", 1);
    dt_session *s = start_session();
    stop(s);
    unsetenv("DEVTRACE_EMU_HIP_ATTR_FAIL");
    char json[4096];
    props_json(s, json, sizeof json);
    CHECK(strstr(json, "numSms") == NULL && strstr(json, "warpSize") == NULL, "absent values written: %s", json);
    CHECK(strstr(json, "\"maxThreadsPerBlock\":1024") != NULL, "%s", json);
    const char *why = note(s, "device_properties");
    CHECK(why && strstr(why, "MultiprocessorCount") && strstr(why, "WarpSize"), "note: %s", why ? why : "none");
    dt_session_destroy(s);
}

static void device_properties_old_hip(void)
{
    setenv("DEVTRACE_EMU_HIP_VERSION", "40500000", 1);
    dt_session *s = start_session();
    stop(s);
    unsetenv("DEVTRACE_EMU_HIP_VERSION");
    char json[64];
    CHECK_EQ(props_json(s, json, sizeof json), 0);
    const char *why = note(s, "device_properties");
    CHECK(why && strstr(why, "40500000"), "note: %s", why ? why : "none");
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL, DT_TEST(roctx_ranges), DT_TEST(roctx_unbalanced), DT_TEST(call_arguments),
             DT_TEST(api_names), DT_TEST(device_properties), DT_TEST(device_properties_refused),
             DT_TEST(device_properties_old_hip))
