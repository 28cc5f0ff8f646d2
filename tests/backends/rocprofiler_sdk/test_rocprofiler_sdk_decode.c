/*
 * The rocprofiler-sdk decoder on records built by hand (no library): what
 * each field becomes, records of either correlation layout, and every way a
 * header or record can be wrong, each counted under its reason.
 */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/rocprofiler_sdk.h"

#include "dt_check.h"
#include "dt_test_session.h"

static dt_rsdk_decoder g_d;

#define GPU0 0x2000u
#define GPU1 0x2001u
#define CPU 0x1000u

/* A GPU agent as the SDK describes one. */
static rsdk_agent gpu_agent(uint64_t handle, uint32_t cus, uint32_t gfx, uint64_t gib, const char *name,
                            const char *product)
{
    rsdk_agent a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.id.handle = handle;
    a.type = RSDK_AGENT_TYPE_GPU;
    a.cu_count = cus;
    a.wave_front_size = 64;
    a.lds_size_in_kb = 64;
    a.max_waves_per_cu = 32;
    a.workgroup_max_size = 1024;
    a.gfx_target_version = gfx;
    a.local_mem_size = gib << 30;
    a.name = name;
    a.product_name = product;
    return a;
}

static void add_agents(dt_rsdk_decoder *d)
{
    rsdk_agent a;
    char missing[256] = "";
    dt_device_props p;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.id.handle = CPU;
    a.type = RSDK_AGENT_TYPE_CPU;
    dt__rsdk_decoder_add_agent(d, &a, sizeof a, &p, missing, sizeof missing);
    CHECK_EQ(p.valid, 0);
    for (uint64_t h = GPU0; h <= GPU1; h++) {
        a = gpu_agent(h, 304, 90402, 192, "gfx942", "AMD Instinct MI300X");
        dt__rsdk_decoder_add_agent(d, &a, sizeof a, &p, missing, sizeof missing);
        REQUIRE_EQ(p.valid, 1);
        CHECK_EQ(p.id, h - GPU0);
    }
}

static int setup(void)
{
    dt__rsdk_decoder_init(&g_d, RSDK_VERSION(0, 6, 0));
    add_agents(&g_d);
    return 0;
}

static int teardown(void)
{
    dt__rsdk_decoder_free(&g_d);
    return 0;
}

static void add_kernel(dt_rsdk_decoder *d, uint64_t id, const char *name, uint32_t vgprs, uint32_t lds)
{
    rsdk_kernel_symbol k;
    memset(&k, 0, sizeof k);
    k.size = sizeof k;
    k.kernel_id = id;
    k.kernel_name = name;
    k.arch_vgpr_count = vgprs;
    k.accum_vgpr_count = 4;
    k.group_segment_size = lds;
    REQUIRE_EQ(dt__rsdk_decoder_add_kernel(d, &k), 0);
}

static rsdk_kernel_dispatch_record dispatch(uint64_t corr, uint64_t kernel, uint64_t agent, uint64_t queue)
{
    rsdk_kernel_dispatch_record r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = RSDK_BUFFER_KERNEL_DISPATCH;
    r.operation = RSDK_KERNEL_DISPATCH_COMPLETE;
    r.correlation_id.internal = corr;
    r.start_timestamp = 1000000 + corr * 10000;
    r.end_timestamp = r.start_timestamp + 5000;
    r.dispatch_info.size = offsetof(rsdk_kernel_dispatch_info, reserved_padding);
    r.dispatch_info.agent_id.handle = agent;
    r.dispatch_info.queue_id = queue;
    r.dispatch_info.kernel_id = kernel;
    r.dispatch_info.workgroup_size = (rsdk_dim3){256, 2, 1};
    /* 10 x 3 x 1 work-groups, the last partial in x and y */
    r.dispatch_info.grid_size = (rsdk_dim3){256 * 9 + 100, 2 * 2 + 1, 1};
    r.dispatch_info.group_segment_size = 4096 + 1024;
    return r;
}

static void decode(dt_rsdk_decoder *d, dt_session *s, void *const *payloads, const uint32_t *kinds, size_t n)
{
    rsdk_record_header h[16];
    rsdk_record_header *hp[16];
    REQUIRE(n <= 16);
    for (size_t i = 0; i < n; i++) {
        h[i].category = RSDK_BUFFER_CATEGORY_TRACING;
        h[i].kind = kinds[i];
        h[i].payload = payloads[i];
        hp[i] = &h[i];
    }
    dt__rsdk_decode(d, s, hp, n);
}

/* Records are stamped from now on: the window closes a little later. */
static void stop(dt_session *s)
{
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
}

/* Dispatch records of one buffer, decoded; the session stopped with n events. */
static void decode_dispatches(dt_rsdk_decoder *d, dt_session *s, rsdk_kernel_dispatch_record *r, size_t n)
{
    void *p[16];
    uint32_t k[16];
    REQUIRE(n <= 16);
    for (size_t i = 0; i < n; i++) {
        p[i] = &r[i];
        k[i] = RSDK_BUFFER_KERNEL_DISPATCH;
    }
    decode(d, s, p, k, n);
    stop(s);
    REQUIRE_EQ(dt_session_event_count(s), n);
}

static dt_event only_event(dt_session *s)
{
    stop(s);
    REQUIRE_EQ(dt_session_event_count(s), 1);
    dt_event ev;
    REQUIRE_EQ(dt_session_event(s, 0, &ev), DT_OK);
    return ev;
}

static dt_session *running(uint32_t capture)
{
    dt_session *s = dt_test_session(capture);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    /* the null backend's clock is realtime: records are stamped with it */
    return s;
}

static uint64_t now_ns(void) { return dt__realtime_ns(); }

/* A dispatch: name and launch configuration from the kernel symbol, grid in
   work-groups (rounded up), device and queue row, External id (stored + 1). */
static void kernel_fields(void)
{
    add_kernel(&g_d, 7, "_Z4gemmPfS_.kd", 96, 4096); /* as HSA names the symbol */
    dt_session *s = running(0);
    rsdk_kernel_dispatch_record r = dispatch(41, 7, GPU1, 0xabc000);
    uint64_t t = now_ns();
    r.start_timestamp = t;
    r.end_timestamp = t + 500;
    r.correlation_id.external.value = 99 + 1;
    void *p[] = {&r};
    uint32_t k[] = {RSDK_BUFFER_KERNEL_DISPATCH};
    decode(&g_d, s, p, k, 1);
    dt_event ev = only_event(s);
    CHECK_EQ(ev.kind, DT_EVENT_KERNEL);
    CHECK_STR(ev.name, "gemm(float*, float*)");
    CHECK_EQ(ev.device, 1);
    CHECK(ev.stream >= 1, "queue rows start at 1, copies own row 0: %u", ev.stream);
    CHECK_EQ(ev.correlation, 41);
    CHECK_EQ(ev.u.kernel.grid[0], 10);
    CHECK_EQ(ev.u.kernel.grid[1], 3);
    CHECK_EQ(ev.u.kernel.grid[2], 1);
    CHECK_EQ(ev.u.kernel.block[0], 256);
    CHECK_EQ(ev.u.kernel.block[1], 2);
    CHECK_EQ(ev.u.kernel.registers_per_thread, 100); /* arch + accumulation VGPRs */
    CHECK_EQ(ev.u.kernel.static_shared_memory, 4096);
    CHECK_EQ(ev.u.kernel.dynamic_shared_memory, 1024);
    CHECK_EQ(ev.has_external, 1);
    CHECK_EQ(ev.external_id, 99);
    dt_session_destroy(s);
}

/* Kernel symbols are named by their descriptors (<name>.kd): the kernel
   is the rest; other names are kept as they are. */
static void symbol_names(void)
{
    static const char *const given[] = {"plain.kd", "_Z3addPii.kd", ".kd", "x.kdd", "y.kd.kd", "no_suffix"};
    static const char *const want[] = {"plain", "add(int*, int)", ".kd", "x.kdd", "y.kd", "no_suffix"};
    enum { N = sizeof given / sizeof given[0] };
    dt_rsdk_decoder d;
    dt__rsdk_decoder_init(&d, RSDK_VERSION(1, 0, 0));
    for (uint64_t i = 0; i < N; i++) add_kernel(&d, 100 + i, given[i], 0, 0);
    add_agents(&d);
    dt_session *s = running(0);
    uint64_t t = now_ns();
    rsdk_kernel_dispatch_record r[N];
    for (size_t i = 0; i < N; i++) {
        r[i] = dispatch(200 + i, 100 + i, GPU0, 1);
        r[i].start_timestamp = t;
        r[i].end_timestamp = t + 10;
    }
    decode_dispatches(&d, s, r, N);
    for (size_t i = 0; i < N; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        size_t j = (size_t)(ev.correlation - 200);
        REQUIRE(j < N);
        CHECK_STR(ev.name, want[j]);
    }
    dt_session_destroy(s);
    dt__rsdk_decoder_free(&d);
}

/* External id 0 is pushed as 1; a record with 0 carries none. */
static void external_zero_and_none(void)
{
    add_kernel(&g_d, 8, "k8", 0, 0);
    dt_session *s = running(0);
    rsdk_kernel_dispatch_record r[] = {dispatch(51, 8, GPU0, 1), dispatch(52, 8, GPU0, 1)};
    r[0].start_timestamp = r[1].start_timestamp = now_ns();
    r[0].end_timestamp = r[1].end_timestamp = r[0].start_timestamp + 10;
    r[0].correlation_id.external.value = 0 + 1;
    decode_dispatches(&g_d, s, r, 2);
    for (size_t i = 0; i < 2; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.correlation == 51) CHECK(ev.has_external && ev.external_id == 0, "id 0 is an id");
        else CHECK(!ev.has_external, "no id pushed: none");
    }
    dt_session_destroy(s);
}

/* A fill kernel is a memset: sized by its hipMemset* call when seen, by
   name alone (size unknown, counted) when not. */
static void fills(void)
{
    add_kernel(&g_d, 9, "__amd_rocclr_fillBufferAligned", 16, 0);
    dt_session *s = running(0);
    uint64_t t = now_ns();
    dt__rsdk_decoder_note_fill(&g_d, 61, 1 << 20, 0xab, 1);
    rsdk_kernel_dispatch_record r[] = {dispatch(61, 9, GPU0, 5), dispatch(62, 9, GPU0, 5)};
    r[0].start_timestamp = t, r[0].end_timestamp = t + 100;
    r[1].start_timestamp = t + 200, r[1].end_timestamp = t + 300;
    uint64_t before = atomic_load(&g_d.fills_without_size);
    decode_dispatches(&g_d, s, r, 2);
    for (size_t i = 0; i < 2; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        CHECK_EQ(ev.kind, DT_EVENT_MEMSET);
        CHECK_STR(ev.name, "Memset (Device)");
        if (ev.correlation == 61) {
            CHECK_EQ(ev.u.memset.bytes, 1 << 20);
            CHECK_EQ(ev.u.memset.value, 0xab);
        } else {
            CHECK_EQ(ev.u.memset.bytes, 0);
        }
    }
    CHECK_EQ(atomic_load(&g_d.fills_without_size) - before, 1);
    CHECK_EQ(dt__rsdk_is_fill_kernel("__amd_rocclr_fillImage"), 1);
    CHECK_EQ(dt__rsdk_is_fill_kernel("__amd_rocclr_copyBuffer"), 0);
    dt_session_destroy(s);
}

/* Launches and fills await their dispatch: one that arrives is no longer
   awaited (a launch's is a kernel, never a memset), the others are what
   take_awaiting counts once. */
static void awaited_calls(void)
{
    add_kernel(&g_d, 8, "k8", 0, 0);
    add_kernel(&g_d, 9, "__amd_rocclr_fillBufferAligned", 16, 0);
    dt_session *s = running(0);
    uint64_t t = now_ns();
    dt__rsdk_decoder_note_launch(&g_d, 71);
    dt__rsdk_decoder_note_launch(&g_d, 72);
    dt__rsdk_decoder_note_fill(&g_d, 73, 64, 1, 0);
    dt__rsdk_decoder_note_fill(&g_d, 74, 64, 1, 0);
    rsdk_kernel_dispatch_record r[] = {dispatch(71, 8, GPU0, 5), dispatch(73, 9, GPU0, 5)};
    r[0].start_timestamp = t, r[0].end_timestamp = t + 100;
    r[1].start_timestamp = t + 200, r[1].end_timestamp = t + 300;
    decode_dispatches(&g_d, s, r, 2);
    REQUIRE_EQ(dt_session_event_count(s), 2);
    for (size_t i = 0; i < 2; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        CHECK_EQ(ev.kind, ev.correlation == 71 ? DT_EVENT_KERNEL : DT_EVENT_MEMSET);
    }
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&g_d), 2); /* 72 and 74 */
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&g_d), 0);
    dt_session_destroy(s);
}

/* HIP API records of the launch-matching tests: hipLaunchKernel is a launch
   operation, hipMemsetAsync and hipGraphLaunch are not. */
enum { OP_LAUNCH = 1, OP_MEMSET = 2, OP_GRAPH = 3 };
static const char *const launch_test_names[] = {"hipApiName", "hipLaunchKernel", "hipMemsetAsync", "hipGraphLaunch"};

static void launch_decoder(dt_rsdk_decoder *d)
{
    dt__rsdk_decoder_init(d, RSDK_VERSION(0, 6, 0));
    add_agents(d);
    add_kernel(d, 8, "k8", 0, 0);
    add_kernel(d, 9, "__amd_rocclr_fillBufferAligned", 16, 0);
    d->api_names = dt__malloc(sizeof launch_test_names);
    REQUIRE(d->api_names);
    memcpy(d->api_names, launch_test_names, sizeof launch_test_names);
    d->api_name_count = 4;
    static const int32_t ops[] = {OP_LAUNCH};
    /* the smallest buffers: the fewest slots (4096) */
    REQUIRE_EQ(dt__rsdk_decoder_match_launches(d, ops, 1, 1024), 0);
}

/* The records of one buffer delivery: dispatches (kernel k, or the fill
   kernel where k is 9) and API calls, in the order given. */
typedef struct rec_spec {
    uint32_t kind;
    uint64_t corr;
    int32_t op_or_kernel;
} rec_spec;

static void deliver(dt_rsdk_decoder *d, dt_session *s, const rec_spec *spec, size_t n)
{
    rsdk_kernel_dispatch_record disp[16];
    rsdk_api_record api[16];
    void *p[16];
    uint32_t k[16];
    REQUIRE(n <= 16);
    uint64_t t = now_ns();
    for (size_t i = 0; i < n; i++) {
        k[i] = spec[i].kind;
        if (spec[i].kind == RSDK_BUFFER_KERNEL_DISPATCH) {
            disp[i] = dispatch(spec[i].corr, (uint64_t)spec[i].op_or_kernel, GPU0, 4);
            disp[i].start_timestamp = t;
            disp[i].end_timestamp = t + 10;
            p[i] = &disp[i];
        } else {
            api[i] = (rsdk_api_record){sizeof api[i], RSDK_BUFFER_HIP_RUNTIME_API, spec[i].op_or_kernel,
                                       {spec[i].corr, {0}}, t, t + 5, 77};
            p[i] = &api[i];
        }
    }
    decode(d, s, p, k, n);
}

#define DISPATCH(corr, kernel) {RSDK_BUFFER_KERNEL_DISPATCH, corr, kernel}
#define API(corr, op) {RSDK_BUFFER_HIP_RUNTIME_API, corr, op}

/* With API calls and kernels recorded, a launch's API record and its
   dispatch record are matched by correlation id in whichever order their
   buffers come; a launch left without a dispatch is awaited exactly once,
   and dispatches of no launch (fills, graphs, a second dispatch of one
   call) await nothing. */
static void launches_matched_from_records(void)
{
    dt_rsdk_decoder d;
    launch_decoder(&d);
    dt_session *s = running(DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET | DT_CAPTURE_RUNTIME);
    REQUIRE(dt__rsdk_decoder_matches_launches(&d, s->config.capture));
    /* the kernel buffer first: 201's dispatch before its API record; 203
       a fill; 204 a graph's first kernel; 205 a call's first of two */
    static const rec_spec kernels_first[] = {DISPATCH(201, 8), DISPATCH(203, 9), DISPATCH(204, 8), DISPATCH(205, 8)};
    deliver(&d, s, kernels_first, 4);
    /* then the API buffer: 202 before its dispatch, 206 a launch whose
       kernel is still running */
    static const rec_spec calls[] = {API(201, OP_LAUNCH), API(202, OP_LAUNCH), API(203, OP_MEMSET),
                                     API(204, OP_GRAPH),  API(205, OP_LAUNCH), API(206, OP_LAUNCH)};
    deliver(&d, s, calls, 6);
    static const rec_spec kernels_later[] = {DISPATCH(202, 8), DISPATCH(204, 8), DISPATCH(205, 8)};
    deliver(&d, s, kernels_later, 3);
    stop(s);
    REQUIRE_EQ(dt_session_event_count(s), 13);
    size_t kernels = 0, memsets = 0, calls_kept = 0;
    for (size_t i = 0; i < 13; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        kernels += ev.kind == DT_EVENT_KERNEL;
        memsets += ev.kind == DT_EVENT_MEMSET;
        calls_kept += ev.kind == DT_EVENT_RUNTIME;
    }
    CHECK_EQ(kernels, 6);
    CHECK_EQ(memsets, 1);
    CHECK_EQ(calls_kept, 6);
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&d), 1); /* 206 */
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&d), 0);
    dt_session_destroy(s);
    dt__rsdk_decoder_free(&d);
}

/* A session without API records has its launches noted by callback (the
   decoder matches none), and one without kernels awaits none: no
   dispatch would come. */
static void launch_matching_needs_both_records(void)
{
    dt_rsdk_decoder d;
    launch_decoder(&d);
    static const rec_spec calls[] = {API(301, OP_LAUNCH), API(302, OP_LAUNCH), DISPATCH(301, 8)};
    uint32_t without[] = {DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET, DT_CAPTURE_RUNTIME};
    for (size_t i = 0; i < 2; i++) {
        dt_session *s = running(without[i]);
        CHECK(!dt__rsdk_decoder_matches_launches(&d, s->config.capture), "capture %#x", without[i]);
        deliver(&d, s, calls, 3);
        stop(s);
        CHECK_EQ(dt__rsdk_decoder_take_awaiting(&d), 0);
        dt_session_destroy(s);
    }
    /* the callback path still counts where it is used */
    dt_session *s = running(DT_CAPTURE_KERNEL);
    dt__rsdk_decoder_note_launch(&d, 303);
    dt__rsdk_decoder_note_launch(&d, 304);
    static const rec_spec one[] = {DISPATCH(303, 8)};
    deliver(&d, s, one, 1);
    stop(s);
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&d), 1); /* 304 */
    dt_session_destroy(s);
    dt__rsdk_decoder_free(&d);
}

/* Past the table's bound (a call 4096 ids older than a newer one in its
   slot), the older call is forgotten: a launch may go uncounted, but none
   whose dispatch came is ever counted, whatever the order. */
static void launches_past_the_table(void)
{
    dt_rsdk_decoder d;
    launch_decoder(&d);
    dt_session *s = running(DT_CAPTURE_KERNEL | DT_CAPTURE_RUNTIME);
    enum { X = 1000, Y = X + 4096, Z = Y + 4096 };
    /* X's launch, then Y's dispatch takes the slot; X's dispatch comes
       too late and is ignored */
    static const rec_spec evicted[] = {API(X, OP_LAUNCH), DISPATCH(Y, 8), DISPATCH(X, 8)};
    deliver(&d, s, evicted, 3);
    /* Z's dispatch takes the slot, Y's comes too late; once Z's launch
       has matched it, Y's launch is still older than the slot's call */
    static const rec_spec late[] = {DISPATCH(Z, 8), DISPATCH(Y, 8), API(Z, OP_LAUNCH), API(Y, OP_LAUNCH)};
    deliver(&d, s, late, 4);
    stop(s);
    CHECK_EQ(dt__rsdk_decoder_take_awaiting(&d), 0);
    dt_session_destroy(s);
    dt__rsdk_decoder_free(&d);
}

/* Copies: direction, bytes, the GPU that did it, peer copies. */
static void copies(void)
{
    dt_session *s = running(0);
    uint64_t t = now_ns();
    rsdk_memory_copy_record c[3];
    memset(c, 0, sizeof c);
    const uint32_t op[3] = {RSDK_MEMORY_COPY_HOST_TO_DEVICE, RSDK_MEMORY_COPY_DEVICE_TO_HOST,
                            RSDK_MEMORY_COPY_DEVICE_TO_DEVICE};
    const uint64_t src[3] = {CPU, GPU1, GPU0}, dst[3] = {GPU1, CPU, GPU1};
    void *p[3];
    uint32_t k[3];
    for (int i = 0; i < 3; i++) {
        c[i].size = i == 0 ? RSDK_MEMORY_COPY_RECORD_MIN_SIZE : sizeof c[i]; /* before and after the addresses */
        c[i].kind = RSDK_BUFFER_MEMORY_COPY;
        c[i].operation = op[i];
        c[i].correlation_id.internal = 70 + (uint64_t)i;
        c[i].start_timestamp = t + (uint64_t)i * 100;
        c[i].end_timestamp = c[i].start_timestamp + 50;
        c[i].src_agent_id.handle = src[i];
        c[i].dst_agent_id.handle = dst[i];
        c[i].bytes = 1000 + (uint64_t)i;
        p[i] = &c[i];
        k[i] = RSDK_BUFFER_MEMORY_COPY;
    }
    decode(&g_d, s, p, k, 3);
    stop(s);
    REQUIRE_EQ(dt_session_event_count(s), 3);
    for (size_t i = 0; i < 3; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        int j = (int)(ev.correlation - 70);
        REQUIRE(j >= 0 && j < 3);
        CHECK_EQ(ev.kind, DT_EVENT_MEMCPY);
        CHECK_EQ(ev.u.memcpy.bytes, 1000 + (uint64_t)j);
        CHECK_EQ(ev.stream, 0);
        if (j == 0) CHECK(ev.u.memcpy.copy_kind == DT_COPY_HTOD && ev.device == 1, "HtoD on GPU 1");
        if (j == 1) CHECK(ev.u.memcpy.copy_kind == DT_COPY_DTOH && ev.device == 1, "DtoH on GPU 1");
        if (j == 2)
            CHECK(ev.u.memcpy.copy_kind == DT_COPY_PTOP && ev.u.memcpy.src_device == 0 && ev.u.memcpy.dst_device == 1,
                  "peer copy GPU 0 -> 1");
    }
    dt_session_destroy(s);
}

/* HIP API records of both correlation layouts: the release decides which
   a record of the longer size is.  With only API calls recorded, their
   records carry the External ids (with device work recorded, the device
   records do: the backend pushes to those contexts). */
static void api_layouts(void)
{
    static const char *names[] = {"hipApiName", "hipLaunchKernel"};
    for (int ancestor = 0; ancestor < 2; ancestor++) {
        dt_rsdk_decoder d;
        dt__rsdk_decoder_init(&d, ancestor ? RSDK_ANCESTOR_VERSION : RSDK_VERSION(1, 0, 0));
        d.api_names = dt__malloc(sizeof names);
        REQUIRE(d.api_names);
        memcpy(d.api_names, names, sizeof names);
        d.api_name_count = 2;
        dt_session *s = running(DT_CAPTURE_RUNTIME);
        uint64_t t = now_ns();
        union { rsdk_api_record plain; rsdk_api_record_ancestor with; } r;
        memset(&r, 0, sizeof r);
        if (ancestor) {
            r.with = (rsdk_api_record_ancestor){sizeof r.with, RSDK_BUFFER_HIP_RUNTIME_API, 1,
                                                {81, {.value = 5 + 1}, 80}, t, t + 700, 4242};
        } else {
            r.plain = (rsdk_api_record){sizeof r.plain, RSDK_BUFFER_HIP_RUNTIME_API, 1, {81, {.value = 5 + 1}}, t,
                                        t + 700, 4242};
        }
        void *p[] = {&r};
        uint32_t k[] = {RSDK_BUFFER_HIP_RUNTIME_API};
        decode(&d, s, p, k, 1);
        dt_event ev = only_event(s);
        CHECK_EQ(ev.kind, DT_EVENT_RUNTIME);
        CHECK_STR(ev.name, "hipLaunchKernel");
        CHECK_EQ(ev.thread, 4242);
        CHECK_EQ(ev.end_ns - ev.start_ns, 700);
        CHECK_EQ(ev.external_id, 5);
        dt_session_destroy(s);
        dt__rsdk_decoder_free(&d);
    }
}

/* Every bad header or record costs itself only, under its reason. */
static void damage_is_counted(void)
{
    dt_session *s = running(0);
    uint64_t t = now_ns();
    rsdk_kernel_dispatch_record good = dispatch(91, 7, GPU0, 3), short_size = good, huge = good, bad_info = good;
    good.start_timestamp = t, good.end_timestamp = t + 10;
    short_size.size = 16;
    huge.size = UINT64_C(1) << 40;
    bad_info.dispatch_info.size = 8;
    uint64_t other[8] = {64, 12};
    /* a record at an odd address, as releases before 0.5.0 could place them */
    uint8_t *odd = malloc(sizeof good + 1);
    REQUIRE(odd);
    rsdk_kernel_dispatch_record moved = good;
    moved.correlation_id.internal = 92;
    memcpy(odd + 1, &moved, sizeof moved);
    rsdk_record_header h[8] = {
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, &good},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, &short_size},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, &huge},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, &bad_info},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_PAGE_MIGRATION}}, other},
        {{{RSDK_BUFFER_CATEGORY_PC_SAMPLING, 1}}, other},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, NULL},
        {{{RSDK_BUFFER_CATEGORY_TRACING, RSDK_BUFFER_KERNEL_DISPATCH}}, odd + 1},
    };
    rsdk_record_header *hp[9];
    for (int i = 0; i < 8; i++) hp[i] = &h[i];
    hp[8] = NULL;
    dt__rsdk_decode(&g_d, s, hp, 9);
    stop(s);
    CHECK_EQ(dt_session_event_count(s), 2); /* the good one and the moved one */
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 5);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_UNKNOWN_KIND), 2);
    CHECK_EQ(dt_session_loss_total(s), 7);
    free(odd);
    dt_session_destroy(s);
}

/* Only what the session captures is stored. */
static void capture_filters(void)
{
    add_kernel(&g_d, 7, "k7", 0, 0);
    add_kernel(&g_d, 9, "__amd_rocclr_fillBufferAligned", 16, 0);
    dt_session *s = running(DT_CAPTURE_MEMSET);
    uint64_t t = now_ns();
    rsdk_kernel_dispatch_record plain = dispatch(101, 7, GPU0, 3), fill = dispatch(102, 9, GPU0, 3);
    plain.start_timestamp = fill.start_timestamp = t;
    plain.end_timestamp = fill.end_timestamp = t + 10;
    void *p[] = {&plain, &fill};
    uint32_t k[] = {RSDK_BUFFER_KERNEL_DISPATCH, RSDK_BUFFER_KERNEL_DISPATCH};
    decode(&g_d, s, p, k, 2);
    dt_event ev = only_event(s);
    CHECK_EQ(ev.kind, DT_EVENT_MEMSET);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

/* Agents the SDK did not list get ids after the listed GPUs; a dispatch of
   a kernel never registered is named, and counted. */
static void unknown_agent_and_kernel(void)
{
    dt_session *s = running(0);
    uint64_t t = now_ns();
    rsdk_kernel_dispatch_record r = dispatch(111, 12345, 0x9999, 3);
    r.start_timestamp = t, r.end_timestamp = t + 10;
    uint64_t agents = atomic_load(&g_d.unknown_agents), kernels = atomic_load(&g_d.unknown_kernels);
    void *p[] = {&r};
    uint32_t k[] = {RSDK_BUFFER_KERNEL_DISPATCH};
    decode(&g_d, s, p, k, 1);
    dt_event ev = only_event(s);
    CHECK_EQ(ev.device, 2);
    CHECK_STR(ev.name, "<unnamed kernel>");
    CHECK_EQ(atomic_load(&g_d.unknown_agents) - agents, 1);
    CHECK_EQ(atomic_load(&g_d.unknown_kernels) - kernels, 1);
    dt_session_destroy(s);
}

/* What an agent says becomes the device's properties; what it does not
   say is named. */
static void agent_properties(void)
{
    dt_rsdk_decoder d;
    dt__rsdk_decoder_init(&d, RSDK_VERSION(0, 6, 0));
    rsdk_agent a = gpu_agent(5, 120, 90010, 64, "gfx90a", "AMD Instinct MI210");
    dt_device_props p;
    char missing[256] = "";
    dt__rsdk_decoder_add_agent(&d, &a, sizeof a, &p, missing, sizeof missing);
    REQUIRE_EQ(p.valid, 1);
    CHECK_STR(p.name, "AMD Instinct MI210");
    CHECK_EQ(p.num_sms, 120);
    CHECK_EQ(p.warp_size, 64);
    CHECK_EQ(p.max_threads_per_sm, 2048);
    CHECK_EQ(p.max_threads_per_block, 1024);
    CHECK_EQ(p.shared_mem_per_sm, 65536);
    CHECK_EQ(p.compute_major, 9);
    CHECK_EQ(p.compute_minor, 0);
    CHECK_EQ(p.total_global_mem, UINT64_C(64) << 30);
    CHECK_EQ(p.regs_per_sm, 0);
    CHECK(strstr(missing, "regsPerBlock") != NULL, "absent properties named: %s", missing);
    /* an agent of a release that ends before the fields devtrace reads */
    rsdk_agent shorter = a;
    shorter.size = offsetof(rsdk_agent, cu_count);
    shorter.id.handle = 6;
    dt__rsdk_decoder_add_agent(&d, &shorter, sizeof shorter, &p, missing, sizeof missing);
    REQUIRE_EQ(p.valid, 1);
    CHECK_EQ(p.num_sms, 0);
    CHECK_EQ(p.warp_size, 64);
    CHECK_EQ(p.name[0], 0);
    CHECK(strstr(missing, "name") != NULL, "missing: %s", missing);
    dt__rsdk_decoder_free(&d);
}

/* The flight recorder's copies of delivered records, in chunks, decoded
   after the SDK reused its memory: the records as delivered, a record
   without a payload or with a size no record has counted as malformed. */
static void flight_copies(void)
{
    add_kernel(&g_d, 31, "copied.kd", 0, 0);
    dt_session *s = running(0);
    uint64_t t = now_ns();
    rsdk_kernel_dispatch_record r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = dispatch((uint64_t)i + 1, 31, GPU0, 5);
        r[i].start_timestamp = t + (uint64_t)i * 1000;
        r[i].end_timestamp = r[i].start_timestamp + 500;
    }
    uint64_t bad_size[2] = {DT_RSDK_COPY_MIN, 0}; /* longer than any record */
    rsdk_record_header h[5];
    rsdk_record_header *hp[5];
    void *payload[5] = {&r[0], &r[1], NULL, bad_size, &r[2]};
    for (int i = 0; i < 5; i++) {
        h[i].category = RSDK_BUFFER_CATEGORY_TRACING;
        h[i].kind = RSDK_BUFFER_KERNEL_DISPATCH;
        h[i].payload = payload[i];
        hp[i] = &h[i];
    }
    static uint8_t buf[DT_RSDK_COPY_MIN] __attribute__((aligned(64)));
    /* a chunk with room for two dispatches, then one for the rest */
    size_t per = 16 + ((sizeof r[0] + 7) & ~(size_t)7); /* a hash, a length, the payload */
    size_t from = 0, used = dt__rsdk_copy(buf, 16 + 2 * per, hp, 5, &from);
    CHECK_EQ(from, 2);
    CHECK_EQ(used, 16 + 2 * per);
    used += dt__rsdk_copy(buf + used, sizeof buf - used, hp, 5, &from);
    CHECK_EQ(from, 5);
    CHECK_EQ(dt__rsdk_copy(buf, 16, hp, 5, &(size_t){0}), 0); /* no room for a record */
    /* the SDK reuses its memory */
    memset(r, 0xab, sizeof r);
    memset(h, 0xcd, sizeof h);
    dt__rsdk_decode_copy(&g_d, s, buf, used);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 2);
    stop(s);
    REQUIRE_EQ(dt_session_event_count(s), 3);
    for (size_t i = 0; i < 3; i++) {
        dt_event ev;
        REQUIRE_EQ(dt_session_event(s, i, &ev), DT_OK);
        CHECK_EQ(ev.kind, DT_EVENT_KERNEL);
        CHECK_STR(ev.name, "copied");
        CHECK_EQ(ev.correlation, i + 1);
    }
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, teardown, DT_TEST(kernel_fields), DT_TEST(symbol_names), DT_TEST(external_zero_and_none), DT_TEST(fills),
             DT_TEST(awaited_calls), DT_TEST(launches_matched_from_records),
             DT_TEST(launch_matching_needs_both_records), DT_TEST(launches_past_the_table), DT_TEST(copies), DT_TEST(api_layouts), DT_TEST(damage_is_counted), DT_TEST(capture_filters),
             DT_TEST(unknown_agent_and_kernel), DT_TEST(agent_properties), DT_TEST(flight_copies))
