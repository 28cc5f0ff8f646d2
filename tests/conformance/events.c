/* Scenarios of what a recording holds: every kind of record, External ids
   (across threads, and nested far deeper than a vendor's stack), the capture
   window, the clock, and a subset of kinds. */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

void scenario_kinds(void)
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
    uint64_t before = dt__realtime_ns();
    mixed_workload(0, 0, 25);
    mixed_workload(1, 3, 25);
    session_stop(s);
    uint64_t after = dt__realtime_ns();
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

void scenario_external(void)
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
void scenario_window(void)
{
    emu_open();
    dt_session *s = session_new();
    uint64_t before = dt__realtime_ns();
    session_start(s);
    emu.stats_reset();
    for (int i = 0; i < 200; i++) {
        REQUIRE(emu.launch_kernel(0, i % 8, "windowed", grid1, block1, 10000) == 0, "launch");
        REQUIRE(emu.memset_(1, i % 8, 64, 1, 2000, 1) == 0, "memset");
    }
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    uint64_t after = dt__realtime_ns();
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
void scenario_clock(void)
{
    emu_open();
    if (emu.set_clock(1000000000, 100.0) != 0) {
        /* only a library whose timestamps are CLOCK_REALTIME itself may
           refuse: then its clock is the host's, and the map the identity */
        uint64_t b = dt__realtime_ns(), v = emu.device_time_ns(), a = dt__realtime_ns();
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
    uint64_t t0 = dt__realtime_ns(), launch_before[64], launch_after[64];
    int launches = 0;
    while (dt__realtime_ns() - t0 < (uint64_t)seconds * 1000000000u && nt < MAX_TRUTH) {
        dt_clock_sample best = {0, 0, UINT64_MAX};
        for (int i = 0; i < 8; i++) {
            uint64_t b = dt__realtime_ns(), v = emu.device_time_ns(), a = dt__realtime_ns();
            if (a - b < best.bracket_ns) best = (dt_clock_sample){v, b + (a - b) / 2, a - b};
        }
        truth[nt++] = best;
        if (nt % 20 == 0 && launches < 64) {
            launch_before[launches] = dt__realtime_ns();
            REQUIRE(emu.launch_kernel(0, launches % 4, "timed", grid1, block1, 1000) == 0, "launch");
            launch_after[launches] = dt__realtime_ns();
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
        uint64_t mapped = dt__clock_map(&s->clock, truth[i].vendor);
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
/* Only the kinds asked for are recorded; External ids still reach the
   device activity (they do not depend on recording API calls). */
void scenario_capture_subset(void)
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
/* Nesting far deeper than any vendor's own external-correlation stack:
   every device activity carries the innermost id of devtrace's stack, on
   the way in and on the way out. */
#define DEEP 10000
void scenario_deep_external(void)
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
