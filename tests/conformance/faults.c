/* Scenarios of what goes wrong: each fault the emulator injects, work still
   running at stop, and a buffer pool that runs dry. */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

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

void scenario_fault(const char *fault)
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

void scenario_unfinished(void)
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

void scenario_pool_exhausted(void)
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
    int hold = !(dt__select_backend(g_opt.backend)->caps & DT_BACKEND_LOSSLESS_BUFFERS);
    if (hold) dt__core_lock(s);
    for (int t = 0; t < THREADS; t++) {
        args[t] = (launch_arg){t, PER};
        REQUIRE(pthread_create(&th[t], NULL, pool_thread, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    if (hold) dt__core_unlock(s);
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
    if (dt__select_backend(g_opt.backend)->caps & DT_BACKEND_LOSSLESS_BUFFERS) {
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
