/*
 * The CUPTI backend end to end on the CUPTI emulator (build/emu/libcupti.so.13):
 * exact event counts and attribution, device properties, the explained
 * failures (another CUPTI client, no driver, an old driver), a pool that runs
 * dry, and early arming before any session.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_version.h>

#include "backends/cupti_backend.h"
#include "devtrace_emu.h"

static char g_lib[1024];
static void *g_emu;
static struct {
    int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
} emu;

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void **state)
{
    (void)state;
    snprintf(g_lib, sizeof g_lib, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    setenv("DEVTRACE_CUPTI_LIBRARY", g_lib, 1);
    unsetenv("DEVTRACE_EMU_CUPTI_FAIL");
    g_emu = dlopen(g_lib, RTLD_NOW | RTLD_LOCAL);
    if (!g_emu) return 0;
    emu.launch_kernel = (int (*)(int, int, const char *, const int[3], const int[3], uint64_t))dlsym(g_emu, "emu_launch_kernel");
    emu.memcpy_ = (int (*)(int, int, int, uint64_t, uint64_t, int))dlsym(g_emu, "emu_memcpy");
    emu.memset_ = (int (*)(int, int, uint64_t, uint32_t, uint64_t, int))dlsym(g_emu, "emu_memset");
    emu.synchronize = (int (*)(int, int))dlsym(g_emu, "emu_synchronize");
    emu.stats_get = (void (*)(emu_stats *))dlsym(g_emu, "emu_stats_get");
    emu.stats_reset = (void (*)(void))dlsym(g_emu, "emu_stats_reset");
    return 0;
}

#define REQUIRE_EMU()                                                           \
    do {                                                                        \
        if (!g_emu) { print_message("CUPTI emulator not built: skipped\n"); skip(); } \
    } while (0)

static dt_session *start_session(uint32_t capture, uint32_t buffers, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.capture = capture;
    if (buffers) c.buffer_count = buffers;
    if (buffer_size) c.buffer_size = buffer_size;
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    assert_int_equal(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    if (st != DT_OK) print_message("start: %s\n", dt_last_error());
    assert_int_equal(st, DT_OK);
    return s;
}

static void test_probe(void **state)
{
    (void)state;
    REQUIRE_EMU();
    dt_backend_status st;
    memset(&st, 0, sizeof st);
    assert_int_equal(dt_backend_probe("cupti", &st), DT_OK);
    assert_true(st.available);
    assert_non_null(strstr(st.library, "libcupti.so"));
    char v[32];
    snprintf(v, sizeof v, "%u", (unsigned)CUPTI_API_VERSION);
    assert_string_equal(st.version, v);
}

static void test_session_exact(void **state)
{
    (void)state;
    REQUIRE_EMU();
    dt_session *s = start_session(DT_CAPTURE_DEFAULT, 0, 0);
    emu.stats_reset();
    uint64_t range = 0;
    assert_int_equal(dt_range_push("outer", &range), DT_OK);
    assert_int_equal(emu.launch_kernel(0, 1, "_Z5saxpyifPKfPf", grid, block, 2000), 0);
    assert_int_equal(emu.launch_kernel(0, 1, "_Z5saxpyifPKfPf", grid, block, 2000), 0);
    assert_int_equal(emu.memcpy_(0, 1, EMU_COPY_HTOD, 4096, 1000, 0), 0);
    assert_int_equal(dt_external_push(7), DT_OK);
    assert_int_equal(emu.memset_(1, 2, 65536, 0, 1000, 1), 0);
    assert_int_equal(dt_external_pop(NULL), DT_OK);
    assert_int_equal(dt_range_pop(), DT_OK);
    assert_int_equal(emu.launch_kernel(1, 3, "plain", grid, block, 1000), 0);
    assert_int_equal(emu.synchronize(-1, -1), 0);
    assert_int_equal(dt_session_stop(s), DT_OK);
    emu_stats st;
    emu.stats_get(&st);

    size_t n = dt_session_event_count(s), kernels = 0, copies = 0, sets = 0, rt = 0, drv = 0, ranges = 0;
    uint64_t launches[8];
    size_t nl = 0;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        assert_int_equal(dt_session_event(s, i, &ev), DT_OK);
        switch (ev.kind) {
        case DT_EVENT_KERNEL:
            kernels++;
            if (strcmp(ev.name, "plain") == 0) {
                assert_false(ev.has_external);
                assert_int_equal(ev.device, 1);
                assert_int_equal(ev.stream, 3);
            } else {
                assert_string_equal(ev.name, "saxpy(int, float, float const*, float*)");
                assert_true(ev.has_external);
                assert_true(ev.external_id == range);
                assert_int_equal(ev.u.kernel.grid[0], 4);
                assert_int_equal(ev.u.kernel.block[0], 128);
            }
            break;
        case DT_EVENT_MEMCPY:
            copies++;
            assert_true(ev.has_external && ev.external_id == range);
            assert_int_equal(ev.u.memcpy.copy_kind, DT_COPY_HTOD);
            assert_int_equal(ev.u.memcpy.bytes, 4096);
            break;
        case DT_EVENT_MEMSET:
            sets++;
            assert_true(ev.has_external && ev.external_id == 7);
            assert_int_equal(ev.u.memset.bytes, 65536);
            break;
        case DT_EVENT_RUNTIME:
            rt++;
            assert_int_equal(ev.thread, tid);
            assert_int_equal(ev.process, (uint32_t)getpid());
            assert_null(strchr(ev.name, '#'));
            if (strcmp(ev.name, "cudaLaunchKernel") == 0) {
                assert_true(nl < 8);
                launches[nl++] = ev.correlation;
            }
            break;
        case DT_EVENT_DRIVER: drv++; break;
        case DT_EVENT_RANGE: ranges++; break;
        default: break;
        }
    }
    assert_int_equal(kernels, 3);
    assert_int_equal(copies, 1);
    assert_int_equal(sets, 1);
    assert_int_equal(ranges, 1);
    assert_int_equal(rt, st.records[EMU_KIND_RUNTIME]);
    assert_int_equal(drv, st.records[EMU_KIND_DRIVER]);
    assert_int_equal(st.records[EMU_KIND_KERNEL], 3);
    /* every kernel pairs with the cudaLaunchKernel that launched it */
    assert_int_equal(nl, 3);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int paired = 0;
        for (size_t j = 0; j < nl; j++) paired += launches[j] == ev.correlation;
        assert_int_equal(paired, 1);
    }
    assert_true(s->devices[0].valid && s->devices[1].valid);
    assert_int_equal(s->devices[0].num_sms, 132);
    assert_int_equal(dt_session_loss_total(s), 0);
    assert_string_equal(dt_session_backend(s), "cupti");
    assert_non_null(strstr(s->backend_library, "libcupti.so"));
    dt_session_destroy(s);
}

static void expect_failure(const char *mode, dt_status want, const char *text)
{
    setenv("DEVTRACE_EMU_CUPTI_FAIL", mode, 1);
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    dt_session *s = NULL;
    assert_int_equal(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    print_message("%s: %s: %s\n", mode, dt_status_name(st), dt_last_error());
    assert_int_equal(st, want);
    if (text) assert_non_null(strstr(dt_last_error(), text));
    dt_session_destroy(s);
    unsetenv("DEVTRACE_EMU_CUPTI_FAIL");
    /* nothing was left armed or subscribed: the next session starts */
    s = start_session(DT_CAPTURE_DEFAULT, 0, 0);
    assert_int_equal(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
}

static void test_unavailable_explained(void **state)
{
    (void)state;
    REQUIRE_EMU();
    expect_failure("busy", DT_ERR_BUSY, "another CUPTI client (Nsight Systems, Kineto) holds the subscription");
    expect_failure("old_driver", DT_ERR_BACKEND_UNAVAILABLE, "insufficient driver");
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (cuda) {
        dlclose(cuda);
        expect_failure("no_driver", DT_ERR_VENDOR, "CUPTI_ERROR_UNKNOWN");
    } else {
        expect_failure("no_driver", DT_ERR_BACKEND_UNAVAILABLE, "no NVIDIA driver: libcuda.so.1 not found");
    }
}

static void test_pool_runs_dry(void **state)
{
    (void)state;
    REQUIRE_EMU();
    /* One buffer of 16 kernel records: when it fills, CUPTI asks for the
       next before handing the full one back, so the pool is always empty
       then and at least one record in 17 is dropped, whatever the timing. */
    dt_session *s = start_session(DT_CAPTURE_KERNEL, 1, 16 * 216);
    emu.stats_reset();
    for (int i = 0; i < 400; i++) assert_int_equal(emu.launch_kernel(0, i % 4, "k", grid, block, 10), 0);
    assert_int_equal(emu.synchronize(-1, -1), 0);
    assert_int_equal(dt_session_stop(s), DT_OK);
    emu_stats st;
    emu.stats_get(&st);
    size_t kernels = dt_session_event_count(s);
    uint64_t dropped = dt_session_loss(s, DT_LOSS_VENDOR_DROPPED);
    print_message("%zu kept, %llu dropped by CUPTI\n", kernels, (unsigned long long)dropped);
    assert_int_equal(st.records[EMU_KIND_KERNEL], 400);
    assert_true(dropped > 0);
    assert_int_equal(dropped, st.dropped_reported);
    assert_int_equal(kernels + dropped, 400);
    assert_int_equal(dt_session_loss_total(s), dropped);
    int noted = 0;
    for (int i = 0; i < s->note_count; i++) noted |= strcmp(s->notes[i].key, "cupti.buffers") == 0;
    assert_true(noted);
    dt_session_destroy(s);
}

/* Kept last: early arming lasts for the process. */
static void test_early_init(void **state)
{
    (void)state;
    REQUIRE_EMU();
    dt_cupti_early_init();
    dt_cupti_early_init(); /* idempotent */
    emu.stats_reset();
    assert_int_equal(emu.launch_kernel(0, 0, "before", grid, block, 10), 0);
    assert_int_equal(emu.synchronize(-1, -1), 0);
    emu_stats st;
    emu.stats_get(&st);
    /* device kinds armed, API tracing not */
    assert_int_equal(st.records[EMU_KIND_KERNEL], 1);
    assert_int_equal(st.records[EMU_KIND_RUNTIME], 0);
    assert_int_equal(st.records[EMU_KIND_DRIVER], 0);

    for (int round = 0; round < 2; round++) {
        dt_session *s = start_session(DT_CAPTURE_DEFAULT, 0, 0);
        emu.stats_reset();
        assert_int_equal(emu.launch_kernel(0, 0, "during", grid, block, 10), 0);
        assert_int_equal(emu.launch_kernel(0, 0, "during", grid, block, 10), 0);
        assert_int_equal(emu.synchronize(-1, -1), 0);
        assert_int_equal(dt_session_stop(s), DT_OK);
        size_t kernels = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            if (ev.kind == DT_EVENT_KERNEL) {
                kernels++;
                assert_string_equal(ev.name, "during");
            }
        }
        assert_int_equal(kernels, 2);
        assert_int_equal(dt_session_loss_total(s), 0);
        assert_true(s->devices[0].valid);
        dt_session_destroy(s);
        /* between sessions the device kinds stay armed, API tracing does not */
        emu.stats_reset();
        assert_int_equal(emu.launch_kernel(0, 0, "between", grid, block, 10), 0);
        assert_int_equal(emu.synchronize(-1, -1), 0);
        emu.stats_get(&st);
        assert_int_equal(st.records[EMU_KIND_KERNEL], 1);
        assert_int_equal(st.records[EMU_KIND_RUNTIME], 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_session_exact),
        cmocka_unit_test(test_unavailable_explained),
        cmocka_unit_test(test_pool_runs_dry),
        cmocka_unit_test(test_early_init),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

#else
#include "cupti_test_util.h"
#endif
