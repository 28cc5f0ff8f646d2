/*
 * The CUPTI backend end to end on the CUPTI emulator (build/emu/libcupti.so.13),
 * which behaves as CUDA 13's CUPTI does: exact event counts and attribution,
 * launches by callback id, device properties (also of a driver initialised
 * before devtrace armed), the explained failures (another CUPTI client, no
 * driver, an old driver), a pool that runs dry, per-thread buffers of 64
 * threads, incomplete records the iterator refuses, and early arming before
 * any session.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_version.h>

#include "devtrace_emu.h"
#include "cupti_engine.h"
#include "cupti_emu_session.h"

static void *g_emu;
static struct {
    int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
    int (*register_callbacks)(void (*)(uint8_t **, size_t *, size_t *),
                              void (*)(void *, uint32_t, uint8_t *, size_t, size_t));
    int (*enable)(uint32_t kind);
    int (*enable_and_dump)(uint32_t kind);
    int (*disable)(uint32_t kind);
    int (*flush_all)(uint32_t flag);
    int (*null_client)(int on);
    int (*malloc_)(int device, int memory, uint64_t bytes, uint64_t *address);
    int (*free_)(uint64_t address);
    int (*memory_pool)(int device, int op, uint64_t address, uint64_t bytes);
} emu;

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static int setup(void)
{
    g_emu = cupti_emu_open();
    if (!g_emu) return 0;
    emu.launch_kernel = (int (*)(int, int, const char *, const int[3], const int[3], uint64_t))dlsym(g_emu, "emu_launch_kernel");
    emu.memcpy_ = (int (*)(int, int, int, uint64_t, uint64_t, int))dlsym(g_emu, "emu_memcpy");
    emu.memset_ = (int (*)(int, int, uint64_t, uint32_t, uint64_t, int))dlsym(g_emu, "emu_memset");
    emu.synchronize = (int (*)(int, int))dlsym(g_emu, "emu_synchronize");
    emu.stats_get = (void (*)(emu_stats *))dlsym(g_emu, "emu_stats_get");
    emu.stats_reset = (void (*)(void))dlsym(g_emu, "emu_stats_reset");
    *(void **)&emu.register_callbacks = dlsym(g_emu, "cuptiActivityRegisterCallbacks");
    *(void **)&emu.enable = dlsym(g_emu, "cuptiActivityEnable");
    *(void **)&emu.enable_and_dump = dlsym(g_emu, "cuptiActivityEnableAndDump");
    *(void **)&emu.disable = dlsym(g_emu, "cuptiActivityDisable");
    *(void **)&emu.flush_all = dlsym(g_emu, "cuptiActivityFlushAll");
    *(void **)&emu.null_client = dlsym(g_emu, "emu_null_client");
    *(void **)&emu.malloc_ = dlsym(g_emu, "emu_malloc");
    *(void **)&emu.free_ = dlsym(g_emu, "emu_free");
    *(void **)&emu.memory_pool = dlsym(g_emu, "emu_memory_pool");
    return 0;
}

#define REQUIRE_EMU()                                                           \
    do {                                                                        \
        if (!g_emu) SKIP("the CUPTI emulator %s was not built", cupti_emu_path); \
    } while (0)

/* A client of the emulator that counts the device records it gets. */
static _Alignas(8) uint8_t g_device_buffer[4096];
static int g_device_records;

static void device_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = g_device_buffer;
    *size = sizeof g_device_buffer;
    *max_records = 0;
}

static void device_complete(void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    for (size_t off = 0; off + sizeof(dt_cf_device) <= valid; off += sizeof(dt_cf_device)) {
        uint32_t kind;
        memcpy(&kind, buffer + off, sizeof kind);
        g_device_records += kind == DT_CF_KIND_DEVICE;
    }
}

/* First, in a fresh process: a driver initialised before devtrace armed has
   described its devices to nobody (CUPTI's DEVICE records come at driver
   initialisation); the session still gets them, by EnableAndDump. */
static void test_devices_after_driver_init(void)
{
    REQUIRE_EMU();
    REQUIRE_EQ(emu.launch_kernel(0, 0, "initialises the driver", grid, block, 10), 0);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE(s->devices[0].valid && s->devices[1].valid);
    REQUIRE_EQ(s->devices[1].num_sms, 132);
    dt_session_destroy(s);
    /* what the library does: plain enabling describes nothing, dumping does */
    REQUIRE_EQ(emu.register_callbacks(device_request, device_complete), 0);
    g_device_records = 0;
    REQUIRE_EQ(emu.enable(DT_CF_KIND_DEVICE), 0);
    REQUIRE_EQ(emu.flush_all(1), 0);
    REQUIRE_EQ(g_device_records, 0);
    REQUIRE_EQ(emu.enable_and_dump(DT_CF_KIND_DEVICE), 0);
    REQUIRE_EQ(emu.flush_all(1), 0);
    REQUIRE_EQ(g_device_records, 2);
    REQUIRE_EQ(emu.disable(DT_CF_KIND_DEVICE), 0);
}

static void test_probe(void)
{
    REQUIRE_EMU();
    dt_backend_status st;
    memset(&st, 0, sizeof st);
    REQUIRE_EQ(dt_backend_probe("cupti", &st), DT_OK);
    REQUIRE(st.available);
    REQUIRE(strstr(st.library, "libcupti.so") != NULL);
    char v[32];
    snprintf(v, sizeof v, "%u", (unsigned)CUPTI_API_VERSION);
    REQUIRE_STR(st.version, v);
}

static void test_session_exact(void)
{
    REQUIRE_EMU();
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    emu.stats_reset();
    uint64_t range = 0;
    REQUIRE_EQ(dt_range_push("outer", &range), DT_OK);
    REQUIRE_EQ(emu.launch_kernel(0, 1, "_Z5saxpyifPKfPf", grid, block, 2000), 0);
    REQUIRE_EQ(emu.launch_kernel(0, 1, "_Z5saxpyifPKfPf", grid, block, 2000), 0);
    REQUIRE_EQ(emu.memcpy_(0, 1, EMU_COPY_HTOD, 4096, 1000, 0), 0);
    REQUIRE_EQ(dt_external_push(7), DT_OK);
    REQUIRE_EQ(emu.memset_(1, 2, 65536, 0, 1000, 1), 0);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(emu.launch_kernel(1, 3, "plain", grid, block, 1000), 0);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    emu_stats st;
    emu.stats_get(&st);

    size_t n = dt_session_event_count(s), kernels = 0, copies = 0, sets = 0, rt = 0, drv = 0, ranges = 0;
    uint64_t launches[8];
    size_t nl = 0;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        REQUIRE_EQ(dt_session_event(s, i, &ev), DT_OK);
        switch (ev.kind) {
        case DT_EVENT_KERNEL:
            kernels++;
            if (strcmp(ev.name, "plain") == 0) {
                REQUIRE(!(ev.has_external));
                REQUIRE_EQ(ev.device, 1);
                REQUIRE_EQ(ev.stream, 3);
            } else {
                REQUIRE_STR(ev.name, "saxpy(int, float, float const*, float*)");
                REQUIRE(ev.has_external);
                REQUIRE(ev.external_id == range);
                REQUIRE_EQ(ev.u.kernel.grid[0], 4);
                REQUIRE_EQ(ev.u.kernel.block[0], 128);
            }
            break;
        case DT_EVENT_MEMCPY:
            copies++;
            REQUIRE(ev.has_external && ev.external_id == range);
            REQUIRE_EQ(ev.u.memcpy.copy_kind, DT_COPY_HTOD);
            REQUIRE_EQ(ev.u.memcpy.bytes, 4096);
            break;
        case DT_EVENT_MEMSET:
            sets++;
            REQUIRE(ev.has_external && ev.external_id == 7);
            REQUIRE_EQ(ev.u.memset.bytes, 65536);
            break;
        case DT_EVENT_RUNTIME:
            rt++;
            REQUIRE_EQ(ev.thread, tid);
            REQUIRE_EQ(ev.process, (uint32_t)getpid());
            REQUIRE(strchr(ev.name, '#') == NULL);
            /* CUDA 13: a launch is __cudaLaunchKernel, and the two
               call-configuration calls around it are not recorded */
            REQUIRE(strstr(ev.name, "CallConfiguration") == NULL);
            REQUIRE_EQ(ev.u.api.launch, strcmp(ev.name, "__cudaLaunchKernel") == 0);
            if (ev.u.api.launch) {
                REQUIRE(nl < 8);
                REQUIRE_EQ(ev.u.api.cbid, DT_CF_RT_LAUNCH_KERNEL_CUDA13);
                launches[nl++] = ev.correlation;
            }
            break;
        case DT_EVENT_DRIVER:
            drv++;
            REQUIRE_EQ(ev.u.api.launch, strcmp(ev.name, "cuLaunchKernel") == 0);
            break;
        case DT_EVENT_RANGE: ranges++; break;
        default: break;
        }
    }
    REQUIRE_EQ(kernels, 3);
    REQUIRE_EQ(copies, 1);
    REQUIRE_EQ(sets, 1);
    REQUIRE_EQ(ranges, 1);
    REQUIRE_EQ(rt, st.records[EMU_KIND_RUNTIME]);
    REQUIRE_EQ(drv, st.records[EMU_KIND_DRIVER]);
    REQUIRE_EQ(st.records[EMU_KIND_KERNEL], 3);
    /* every kernel pairs with the launch that launched it */
    REQUIRE_EQ(nl, 3);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int paired = 0;
        for (size_t j = 0; j < nl; j++) paired += launches[j] == ev.correlation;
        REQUIRE_EQ(paired, 1);
    }
    REQUIRE(s->devices[0].valid && s->devices[1].valid);
    REQUIRE_EQ(s->devices[0].num_sms, 132);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    REQUIRE_STR(dt_session_backend(s), "cupti");
    REQUIRE(strstr(s->backend_library, "libcupti.so") != NULL);
    dt_session_destroy(s);
}

static void expect_failure(const char *mode, dt_status want, const char *text)
{
    setenv("DEVTRACE_EMU_FAIL", mode, 1);
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    printf("%s: %s: %s\n", mode, dt_status_name(st), dt_last_error());
    REQUIRE_EQ(st, want);
    if (text) REQUIRE(strstr(dt_last_error(), text) != NULL);
    dt_session_destroy(s);
    unsetenv("DEVTRACE_EMU_FAIL");
    /* nothing was left armed or subscribed: the next session starts */
    s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
}

static void test_unavailable_explained(void)
{
    REQUIRE_EMU();
    /* the named subscribe says who holds CUPTI */
    expect_failure("busy", DT_ERR_BUSY, "cuptiSubscribe_v2: CUPTI for emulated profiler holds NVIDIA CUDA (CUPTI)");
    expect_failure("old_driver", DT_ERR_BACKEND_UNAVAILABLE, "insufficient driver");
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (cuda) {
        dlclose(cuda);
        expect_failure("no_driver", DT_ERR_VENDOR, "CUPTI_ERROR_UNKNOWN");
    } else {
        expect_failure("no_driver", DT_ERR_BACKEND_UNAVAILABLE, "no NVIDIA driver: libcuda.so.1 not found");
    }
}

static void test_pool_runs_dry(void)
{
    REQUIRE_EMU();
    /* Buffers of 16 kernel records, and a consumer held up (the session
       lock, which decoding takes, is held here): the pool grows to its bound
       and then runs dry, whatever the timing. */
    dt_session *s = cupti_session_start(DT_CAPTURE_KERNEL, 1, 16 * DT_CF_KERNEL10_SIZE);
    emu.stats_reset();
    dt__core_lock(s);
    for (int i = 0; i < 400; i++) emu.launch_kernel(0, i % 4, "k", grid, block, 10);
    dt__core_unlock(s);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    emu_stats st;
    emu.stats_get(&st);
    size_t kernels = dt_session_event_count(s);
    uint64_t dropped = dt_session_loss(s, DT_LOSS_NO_BUFFER);
    printf("%zu kept, %llu dropped by CUPTI for want of a buffer\n", kernels, (unsigned long long)dropped);
    REQUIRE_EQ(st.records[EMU_KIND_KERNEL], 400);
    REQUIRE(dropped > 0);
    REQUIRE_EQ(dropped, st.dropped_reported);
    REQUIRE_EQ(kernels + dropped, 400);
    REQUIRE_EQ(dt_session_loss_total(s), dropped);
    int noted = 0;
    for (int i = 0; i < s->note_count; i++) noted |= strcmp(s->notes[i].key, "buffer_pool") == 0;
    REQUIRE(noted);
    dt_session_destroy(s);
}

/* torch.profiler's Kineto pushes its op ids as CUSTOM0 on the same thread
   as devtrace pushes its own: devtrace's are on another stack (CUSTOM2), so
   each pops what it pushed, and device work carries devtrace's id. */
static void test_external_ids_beside_kineto(void)
{
    REQUIRE_EMU();
    int (*push)(uint32_t, uint64_t), (*pop)(uint32_t, uint64_t *);
    *(void **)&push = dlsym(g_emu, "cuptiActivityPushExternalCorrelationId");
    *(void **)&pop = dlsym(g_emu, "cuptiActivityPopExternalCorrelationId");
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    REQUIRE_EQ(push(DT_CF_EXTERNAL_CUSTOM0, 500), 0); /* Kineto's op */
    REQUIRE_EQ(dt_external_push(7), DT_OK);
    REQUIRE_EQ(emu.launch_kernel(0, 0, "both", grid, block, 100), 0);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    uint64_t kineto = 0;
    REQUIRE_EQ(pop(DT_CF_EXTERNAL_CUSTOM0, &kineto), 0);
    REQUIRE_EQ(kineto, 500);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    size_t kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        kernels++;
        REQUIRE(ev.has_external && ev.external_id == 7);
    }
    REQUIRE_EQ(kernels, 1);
    dt_session_destroy(s);
}

/* 64 threads launch at once: CUDA 13 gives each a buffer of its own, more
   than the default pool of 32 holds; the pool grows for them and nothing is
   lost. */
#define MANY_THREADS 64
static void *launch_200(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "t%d", (int)(intptr_t)arg);
    for (int i = 0; i < 200; i++) emu.launch_kernel((int)(intptr_t)arg % 2, (int)(intptr_t)arg % 8, name, grid, block, 10);
    return NULL;
}

static void test_per_thread_buffers(void)
{
    REQUIRE_EMU();
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    emu.stats_reset();
    pthread_t th[MANY_THREADS];
    for (intptr_t t = 0; t < MANY_THREADS; t++) REQUIRE_EQ(pthread_create(&th[t], NULL, launch_200, (void *)t), 0);
    for (int t = 0; t < MANY_THREADS; t++) pthread_join(th[t], NULL);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    dt_pool_stats shape;
    dt__pool_slot_shape(&dt__engine_cupti.pool, &shape);
    printf("pool: %u buffers made for %u threads (bound %u)\n", shape.made, shape.threads, shape.bound);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    /* (threads that asked: the emulator's, like CUPTI's, may ask on behalf
       of another thread, so not every one of the 64 need have asked) */
    CHECK(shape.made > 32);
    emu_stats st;
    emu.stats_get(&st);
    REQUIRE_EQ(st.records[EMU_KIND_KERNEL], MANY_THREADS * 200);
    size_t kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        kernels += ev.kind == DT_EVENT_KERNEL;
    }
    REQUIRE_EQ(kernels, MANY_THREADS * 200);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* A kernel still running at stop, handed back without an end, that the
   iterator refuses as incomplete: devtrace steps over it by the record
   sizes it knows, counts it unfinished and keeps what follows it. */
static void test_incomplete_record_refused(void)
{
    REQUIRE_EMU();
    setenv("DEVTRACE_EMU_INCOMPLETE", "refused", 1);
    dt_session *s = cupti_session_start(DT_CAPTURE_KERNEL, 0, 0);
    emu.stats_reset();
    REQUIRE_EQ(emu.launch_kernel(0, 20, "still_running", grid, block, 30ull * 1000000000u), 0);
    /* written after it, into the same buffer, by the final flush */
    REQUIRE_EQ(emu.launch_kernel(0, 21, "after", grid, block, 1000), 0);
    REQUIRE_EQ(emu.launch_kernel(1, 21, "after", grid, block, 1000), 0);
    REQUIRE_EQ(emu.synchronize(0, 21), 0);
    REQUIRE_EQ(emu.synchronize(1, 21), 0);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    unsetenv("DEVTRACE_EMU_INCOMPLETE");
    emu_stats st;
    emu.stats_get(&st);
    REQUIRE_EQ(st.records_unfinished[EMU_KIND_KERNEL], 1);
    REQUIRE_EQ(dt_session_event_count(s), 2);
    for (size_t i = 0; i < 2; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        REQUIRE_STR(ev.name, "after");
    }
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNFINISHED), 1);
    REQUIRE_EQ(dt_session_loss_total(s), 1);
    dt_session_destroy(s);
}

/* Start, stop, start again without early arming: the thread-id type is set
   before the first kind is enabled and never changed while CUPTI profiles. */
static void test_thread_ids_set_once(void)
{
    REQUIRE_EMU();
    emu.stats_reset();
    for (int round = 0; round < 3; round++) {
        dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
        REQUIRE_EQ(emu.launch_kernel(0, 0, "k", grid, block, 10), 0);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        dt_session_destroy(s);
    }
    emu_stats st;
    emu.stats_get(&st);
    REQUIRE_EQ(st.thread_id_type_changes_while_profiling, 0);
}

/* Early arming lasts until the first session stops: after a stop nothing
   stays armed (a C-API program pays nothing for devtrace between
   sessions), CUPTI is finalized (from CUDA 12.6), and the next session arms
   anew and records exactly. */
static void test_early_init(void)
{
    REQUIRE_EMU();
    REQUIRE_EQ(dt_prepare("cupti"), DT_OK);
    REQUIRE_EQ(dt_prepare("cupti"), DT_OK); /* idempotent */
    emu.stats_reset();
    REQUIRE_EQ(emu.launch_kernel(0, 0, "before", grid, block, 10), 0);
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    emu_stats st;
    emu.stats_get(&st);
    /* device kinds armed, API tracing not */
    REQUIRE_EQ(st.records[EMU_KIND_KERNEL], 1);
    REQUIRE_EQ(st.records[EMU_KIND_RUNTIME], 0);
    REQUIRE_EQ(st.records[EMU_KIND_DRIVER], 0);

    for (int round = 0; round < 2; round++) {
        dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
        emu.stats_reset();
        REQUIRE_EQ(emu.launch_kernel(0, 0, "during", grid, block, 10), 0);
        REQUIRE_EQ(emu.launch_kernel(0, 0, "during", grid, block, 10), 0);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        emu.stats_get(&st);
        REQUIRE_EQ(st.finalized, 0); /* at the next API call's exit */
        size_t kernels = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            if (ev.kind == DT_EVENT_KERNEL) {
                kernels++;
                REQUIRE_STR(ev.name, "during");
            }
        }
        REQUIRE_EQ(kernels, 2);
        REQUIRE_EQ(dt_session_loss_total(s), 0);
        REQUIRE(s->devices[0].valid);
        dt_session_destroy(s);
        /* between sessions nothing is armed: no record is made, and CUPTI
           was detached; the thread-id type was never changed while it
           profiled */
        emu.stats_reset();
        REQUIRE_EQ(emu.launch_kernel(0, 0, "between", grid, block, 10), 0);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0);
        emu.stats_get(&st);
        REQUIRE_EQ(st.finalized, 1);
        REQUIRE_EQ(st.finalize_refused, 0);
        REQUIRE_EQ(st.records[EMU_KIND_KERNEL], 0);
        REQUIRE_EQ(st.records[EMU_KIND_RUNTIME], 0);
        REQUIRE_EQ(st.thread_id_type_changes_while_profiling, 0);
    }
}

/* CUPTI may be finalized only from an API exit callback or once the device
   is synchronised (cupti_activity.h); a stop with device work still running
   must not finalize there and then. The library is detached at the exit of
   the program's next API call, every record of the session kept; a session
   started before that call keeps it attached and records exactly. */
static void test_finalize_at_api_exit(void)
{
    REQUIRE_EMU();
    emu_stats st;
    for (int round = 0; round < 2; round++) {
        dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
        emu.stats_reset();
        REQUIRE_EQ(emu.launch_kernel(0, 0, "short", grid, block, 10), 0);
        REQUIRE_EQ(emu.launch_kernel(0, 1, "long", grid, block, 300u * 1000 * 1000), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK); /* the long kernel still runs */
        emu.stats_get(&st);
        CHECK_EQ(st.finalize_refused, 0);
        CHECK_EQ(st.finalized, 0);
        dt_session_destroy(s);
        if (round == 0) {
            /* the next call's exit callback detaches CUPTI */
            REQUIRE_EQ(emu.synchronize(-1, -1), 0);
            emu.stats_get(&st);
            CHECK_EQ(st.finalize_refused, 0);
            CHECK_EQ(st.finalized, 1);
        } else {
            /* a session before any call: attached, exact */
            s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
            REQUIRE_EQ(emu.synchronize(-1, -1), 0);
            REQUIRE_EQ(emu.launch_kernel(0, 0, "next", grid, block, 10), 0);
            REQUIRE_EQ(emu.synchronize(-1, -1), 0);
            REQUIRE_EQ(dt_session_stop(s), DT_OK);
            emu.stats_get(&st);
            CHECK_EQ(st.finalized, 0);
            size_t kernels = 0;
            for (size_t i = 0; i < dt_session_event_count(s); i++) {
                dt_event ev;
                dt_session_event(s, i, &ev);
                kernels += ev.kind == DT_EVENT_KERNEL;
            }
            CHECK_EQ(kernels, 1);
            CHECK_EQ(dt_session_loss_total(s), 0);
            dt_session_destroy(s);
            REQUIRE_EQ(emu.synchronize(-1, -1), 0);
            emu.stats_get(&st);
            CHECK_EQ(st.finalize_refused, 0);
            CHECK_EQ(st.finalized, 1);
        }
    }
}

/* CUDA allocations and frees (MEMORY2) are memory events with their bytes,
   address, device, kind and the call's External id; the memory capture bit
   turns them off. */
static void test_memory_events(void)
{
    REQUIRE_EMU();
    for (int with_memory = 1; with_memory >= 0; with_memory--) {
        dt_session *s = cupti_session_start(with_memory ? DT_CAPTURE_DEFAULT : DT_CAPTURE_DEFAULT & ~DT_CAPTURE_MEMORY, 0, 0);
        emu.stats_reset();
        uint64_t a = 0, b = 0, pinned = 0;
        REQUIRE_EQ(dt_external_push(7), DT_OK);
        REQUIRE_EQ(emu.malloc_(0, 3, 1 << 20, &a), 0);
        REQUIRE_EQ(emu.malloc_(1, 3, 4096, &b), 0);
        REQUIRE_EQ(emu.malloc_(0, 2, 8192, &pinned), 0);
        REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
        REQUIRE_EQ(emu.free_(a), 0);
        REQUIRE_EQ(emu.free_(pinned), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        emu_stats st;
        emu.stats_get(&st);
        CHECK_EQ(st.records[EMU_KIND_MEMORY], with_memory ? 5 : 0);
        size_t allocs = 0, frees = 0, mallocs = 0;
        uint64_t allocated = 0, freed = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            if (ev.kind == DT_EVENT_RUNTIME) mallocs += strcmp(ev.name, "cudaMalloc") == 0;
            if (ev.kind != DT_EVENT_MEMORY) continue;
            CHECK_STR(ev.name, "[memory]");
            CHECK(ev.u.memory.address == a || ev.u.memory.address == b || ev.u.memory.address == pinned,
                  "address %" PRIx64, ev.u.memory.address);
            CHECK_EQ(ev.device, ev.u.memory.address == b ? 1 : 0);
            CHECK_EQ(ev.u.memory.memory_kind, ev.u.memory.address == pinned ? DT_MEM_PINNED : DT_MEM_DEVICE);
            CHECK(ev.correlation != 0, "no correlation");
            if (ev.u.memory.is_free) {
                frees++;
                freed += ev.u.memory.bytes;
            } else {
                allocs++;
                allocated += ev.u.memory.bytes;
                CHECK(ev.has_external && ev.external_id == 7, "External id %d/%" PRIu64, ev.has_external,
                      ev.external_id);
            }
        }
        CHECK_EQ(mallocs, 3);
        CHECK_EQ(allocs, with_memory ? 3 : 0);
        CHECK_EQ(frees, with_memory ? 2 : 0);
        CHECK_EQ(allocated, with_memory ? (1u << 20) + 4096 + 8192 : 0);
        CHECK_EQ(freed, with_memory ? (1u << 20) + 8192 : 0);
        CHECK_EQ(dt_session_loss_total(s), 0);
        dt_session_destroy(s);
        REQUIRE_EQ(emu.free_(b), 0);
    }
}

/* Stream-ordered memory pools (MEMORY_POOL records) created, trimmed and
   destroyed are counted, by operation, in the note `memory_pools`, with
   the memory capture bit only. */
static void test_memory_pools(void)
{
    REQUIRE_EMU();
    REQUIRE(emu.memory_pool != NULL);
    for (int with_memory = 1; with_memory >= 0; with_memory--) {
        dt_session *s = cupti_session_start(with_memory ? DT_CAPTURE_DEFAULT : DT_CAPTURE_DEFAULT & ~DT_CAPTURE_MEMORY, 0, 0);
        emu.stats_reset();
        REQUIRE_EQ(emu.memory_pool(0, EMU_POOL_CREATED, 0x7000000000, 1 << 26), 0);
        REQUIRE_EQ(emu.memory_pool(1, EMU_POOL_CREATED, 0x7100000000, 1 << 26), 0);
        REQUIRE_EQ(emu.memory_pool(0, EMU_POOL_TRIMMED, 0x7000000000, 1 << 20), 0);
        REQUIRE_EQ(emu.memory_pool(0, EMU_POOL_DESTROYED, 0x7000000000, 0), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        emu_stats st;
        emu.stats_get(&st);
        CHECK_EQ(st.records[EMU_KIND_MEMORY_POOL], with_memory ? 4 : 0);
        CHECK_STR(cupti_note(s, "memory_pools"), with_memory ? "memory pool operations (counted; not events of the trace): 2 created, "
                                      "1 destroyed, 1 trimmed"
                                    : "");
        size_t calls = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            calls += ev.kind == DT_EVENT_RUNTIME && strncmp(ev.name, "cudaMemPool", 11) == 0;
        }
        CHECK_EQ(calls, 4);
        CHECK_EQ(dt_session_loss_total(s), 0);
        dt_session_destroy(s);
    }
}

/* Kernels' queued and submitted times only when asked
   (DT_CAPTURE_KERNEL_QUEUED), and off again for the next session. */
static void test_queued_timestamps(void)
{
    REQUIRE_EMU();
    static const uint32_t captures[] = {DT_CAPTURE_DEFAULT, DT_CAPTURE_DEFAULT | DT_CAPTURE_KERNEL_QUEUED,
                                        DT_CAPTURE_DEFAULT};
    for (size_t round = 0; round < 3; round++) {
        int asked = (captures[round] & DT_CAPTURE_KERNEL_QUEUED) != 0;
        dt_session *s = cupti_session_start(captures[round], 0, 0);
        for (int i = 0; i < 3; i++) REQUIRE_EQ(emu.launch_kernel(0, 0, "k", grid, block, 1000), 0);
        REQUIRE_EQ(emu.synchronize(-1, -1), 0);
        REQUIRE_EQ(dt_session_stop(s), DT_OK);
        size_t kernels = 0;
        for (size_t i = 0; i < dt_session_event_count(s); i++) {
            dt_event ev;
            dt_session_event(s, i, &ev);
            if (ev.kind != DT_EVENT_KERNEL) continue;
            kernels++;
            if (!asked) {
                CHECK_EQ(ev.u.kernel.queued_ns, DT_TIMESTAMP_UNKNOWN);
                CHECK_EQ(ev.u.kernel.submitted_ns, DT_TIMESTAMP_UNKNOWN);
                continue;
            }
            CHECK(ev.u.kernel.queued_ns != DT_TIMESTAMP_UNKNOWN && ev.u.kernel.queued_ns <= ev.u.kernel.submitted_ns &&
                      ev.u.kernel.submitted_ns <= ev.start_ns,
                  "queued %" PRIu64 " submitted %" PRIu64 " start %" PRIu64, ev.u.kernel.queued_ns,
                  ev.u.kernel.submitted_ns, ev.start_ns);
        }
        CHECK_EQ(kernels, 3);
        dt_session_destroy(s);
    }
}

/* The null client (bench_launch's vendor-only baseline), armed as a tracer
   arms CUPTI: an External id record per API record while it stands for a
   tracer keeping an id pushed, none while it stands for a program that
   pushes none; and refused while a session records. */
static void test_null_client(void)
{
    REQUIRE_EMU();
    REQUIRE(emu.null_client != NULL);
    /* an API call: the exit callback detaches CUPTI from the sessions
       before (the emulator has no driver devtrace could call itself) */
    REQUIRE_EQ(emu.synchronize(-1, -1), 0);
    static const int modes[] = {1, EMU_NULL_CLIENT_NO_IDS};
    for (size_t m = 0; m < 2; m++) {
        emu.stats_reset();
        REQUIRE_EQ(emu.null_client(modes[m]), EMU_OK);
        for (int i = 0; i < 3; i++) REQUIRE_EQ(emu.launch_kernel(0, 0, "k", grid, block, 10), 0);
        REQUIRE_EQ(emu.null_client(0), EMU_OK);
        emu_stats st;
        emu.stats_get(&st);
        CHECK_EQ(st.records[EMU_KIND_KERNEL], 3);
        CHECK_EQ(st.records[EMU_KIND_RUNTIME], 3);
        CHECK_EQ(st.records[EMU_KIND_DRIVER], 3);
        /* one per API record, runtime and driver */
        CHECK_EQ(st.records[EMU_KIND_EXTERNAL], modes[m] == 1 ? 6 : 0);
    }
    dt_session *s = cupti_session_start(DT_CAPTURE_DEFAULT, 0, 0);
    CHECK_EQ(emu.null_client(1), EMU_EINVAL);
    CHECK_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_devices_after_driver_init),
             DT_TEST(test_probe),
             DT_TEST(test_session_exact),
             DT_TEST(test_unavailable_explained),
             DT_TEST(test_pool_runs_dry),
             DT_TEST(test_external_ids_beside_kineto),
             DT_TEST(test_per_thread_buffers),
             DT_TEST(test_thread_ids_set_once),
             DT_TEST(test_null_client),
             DT_TEST(test_early_init),
             DT_TEST(test_finalize_at_api_exit),
             DT_TEST(test_memory_events),
             DT_TEST(test_memory_pools),
             DT_TEST(test_queued_timestamps),
             /* last: its kernel keeps a stream busy for 30 s */
             DT_TEST(test_incomplete_record_refused))

#else
#include "cupti_test_util.h"
#endif
