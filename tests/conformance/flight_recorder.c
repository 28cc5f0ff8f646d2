/* The flight recorder scenario: the ring's windows, its dumps, its memory
   and its stop, accounted exactly. */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

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
    if (ev->ph && ev->ph[0] == 'X' && (dt__rd_cat_is_device_work(ev->cat_kind) || dt__rd_cat_is_api(ev->cat_kind)))
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
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src != NULL, "cannot open %s: %s", path, err);
    fr_file f = {0};
    dt_rd_summary sum;
    memset(&sum, 0, sizeof sum);
    REQUIRE(dt__rd_read(src, fr_visit, &f, &sum, err, sizeof err) == 0, "cannot read %s: %s", path, err);
    fr_part p = {f.kept, 0, 0, 0, 0};
    for (size_t i = 0; i < sum.loss.count; i++) {
        p.lost += (uint64_t)sum.loss.items[i].value;
        if (!strcmp(sum.loss.items[i].key, "ring_evicted")) p.evicted = (uint64_t)sum.loss.items[i].value;
    }
    dt__rd_summary_free(&sum);
    dt__rd_close(src);
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
void scenario_flight_recorder(void)
{
    emu_open();
    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.buffer_size = 4096;
    c.flight_recorder_bytes = 4 * 4096;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "dt_session_create: %s", dt_last_error());
    if (!(dt__select_backend(g_opt.backend)->caps & DT_BACKEND_FLIGHT_RECORDER)) {
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
    uint64_t start_ns = dt__realtime_ns();

    /* 1. a kernel launched only before the ring overflows, then enough
       others to evict it many times over, then it again */
    fr_launch(s, "early_kernel", 5, 8);
    fr_launch(s, "filler_kernel", 3000, 8);
    fr_launch(s, "early_kernel", 3, 8);
    emu_stats st;
    emu.stats_get(&st);
    uint64_t produced1 = stored_records(&st);
    dt_session *x = NULL;
    REQUIRE(dt__core_flight_snapshot(s, &x) == DT_OK, "dump 1: %s", dt_last_error());
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
    REQUIRE(dt__core_flight_snapshot(s, &x) == DT_OK, "dump 2: %s", dt_last_error());
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
        REQUIRE(dt__core_flight_snapshot(s, &x) == DT_OK, "dump 3: %s", dt_last_error());
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
