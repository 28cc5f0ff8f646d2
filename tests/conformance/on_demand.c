/*
 * The on_demand scenario of the conformance suite (over the helpers of
 * conformance.h): a process that listens
 * (dt_control_listen) arms nothing while idle, as the emulator's own
 * counters show; a CAPTURE of a duration, sent by a client while a thread
 * launches continuously, gives a trace whose every event lies in the
 * window, with every record the emulator produced kept or counted lost;
 * idle again afterwards. Busy, cannot_arm, fork and stop around it.
 */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

#include "core/steps.h"
#include "protocol/control_client.h"
#include "protocol/control_server.h"
#include "protocol/record.h"
#include "reader/dt_reader.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

#define OD_DURATION_NS 500000000ull /* 0.5 s */

/* Nothing armed now, and no work of the emulator reached a client since
   the last reset. */
static void check_idle(const char *when)
{
    emu_stats st;
    emu.stats_get(&st);
    CHECK(st.subscribers == 0 && st.kinds_enabled == 0 && st.callbacks_enabled == 0,
          "%s: armed: %" PRIu64 " subscribers, %" PRIu64 " kinds, %" PRIu64 " callback domains", when,
          st.subscribers, st.kinds_enabled, st.callbacks_enabled);
    CHECK(st.callbacks_delivered == 0 && st.buffers_requested == 0,
          "%s: %" PRIu64 " callbacks delivered, %" PRIu64 " buffers requested", when, st.callbacks_delivered,
          st.buffers_requested);
    uint64_t records = 0;
    for (int k = 0; k < EMU_KIND_COUNT; k++) records += st.records[k];
    CHECK_EQ_U64(records, 0, when);
}

/* Work while idle reaches no client. A vendor that detaches only inside an
   API call's exit callback (CUPTI's finalize) does so at the first
   synchronisation after a session: that one comes first. */
static void idle_work(const char *when)
{
    REQUIRE(emu.launch_kernel(0, 0, "settle", grid1, block1, 1000) == 0, "launch");
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    emu.stats_reset();
    for (int i = 0; i < 100; i++)
        REQUIRE(emu.launch_kernel(0, i % 4, "idle", grid1, block1, 1000) == 0, "launch");
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    check_idle(when);
}

static _Atomic int od_stop, od_stepping, od_pause, od_paused;
static _Atomic uint64_t od_launches;
/* The step boundaries the launcher began (dt_step), in order. */
#define OD_MAX_STEPS 200000
static uint64_t od_step_number[OD_MAX_STEPS], od_step_t[OD_MAX_STEPS];
static _Atomic size_t od_steps;

static void *od_launcher(void *arg)
{
    (void)arg;
    for (int i = 0; !atomic_load(&od_stop); i++) {
        atomic_store(&od_paused, atomic_load(&od_pause));
        if (atomic_load(&od_paused)) {
            usleep(100);
            continue;
        }
        if (i % 16 == 0 && atomic_load(&od_stepping) && atomic_load(&od_steps) < OD_MAX_STEPS) {
            REQUIRE(dt_step() == DT_OK, "dt_step");
            size_t k = atomic_load(&od_steps);
            dt__core_step_last(&od_step_number[k], &od_step_t[k]);
            atomic_store(&od_steps, k + 1);
        }
        REQUIRE(emu.launch_kernel(0, i % 4, "continuous", grid1, block1, 2000) == 0, "launch");
        atomic_fetch_add(&od_launches, 1);
        /* steps of a few ms, as a step is long beside a wake-up */
        if (i % 16 == 15) usleep(atomic_load(&od_stepping) ? 2000 : 100);
    }
    return NULL;
}

typedef struct od_client {
    pthread_t thread;
    int out;
    uint64_t steps, step_multiple, timeout_ns; /* steps 0: OD_DURATION_NS */
    dt_ctl_msg reply;
    dt_ctl_code rc;
} od_client;

static void *od_client_main(void *arg)
{
    od_client *c = arg;
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    if (c->steps) {
        req.steps = c->steps;
        req.step_multiple = c->step_multiple;
        req.timeout_ns = c->timeout_ns;
    } else {
        req.duration_ns = OD_DURATION_NS;
    }
    snprintf(req.format, sizeof req.format, "json");
    c->rc = dt__ctl_send(getpid(), &req, c->out, 30000, &c->reply);
    return NULL;
}

static dt_ctl_code od_capture(int out, dt_ctl_msg *reply)
{
    od_client c = {.out = out};
    od_client_main(&c);
    *reply = c.reply;
    return c.rc;
}

static dt_ctl_state od_state(void)
{
    dt_ctl_msg info, reply;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    REQUIRE(dt__ctl_send(getpid(), &info, -1, 5000, &reply) == DT_CTL_SUCCESS, "INFO");
    return reply.state;
}

/* What the trace holds: its events' absolute times and categories. */
typedef struct od_event {
    int64_t ts, dur;
    int cat;
} od_event;
typedef struct od_trace {
    od_event *ev;
    size_t n, cap;
} od_trace;

static int od_visit(void *user, const dt_rd_event *e)
{
    od_trace *t = user;
    if (strcmp(e->ph, "X") != 0 || e->cat_kind == DT_RD_CAT_TRACE) return 0;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
        REQUIRE(t->ev != NULL, "out of memory");
    }
    t->ev[t->n++] = (od_event){e->ts_ns, e->dur_ns, e->cat_kind};
    return 0;
}

static int64_t od_loss(const dt_rd_summary *sum, const char *reason)
{
    for (size_t i = 0; i < sum->loss.count; i++)
        if (!strcmp(sum->loss.items[i].key, reason)) return sum->loss.items[i].value;
    return 0;
}

/* The trace at path against the emulator's counters and the reply. */
static void od_check_trace(const char *path, const emu_stats *st, const dt_ctl_msg *reply, uint64_t steps,
                           uint64_t multiple)
{
    char err[512];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src != NULL, "%s", err);
    od_trace t = {0};
    dt_rd_summary sum;
    int rc = dt__rd_read(src, od_visit, &t, &sum, err, sizeof err);
    dt__rd_close(src);
    REQUIRE(rc == 0, "%s: %s", path, err);
    REQUIRE(sum.has_window_start && sum.has_window_end, "the trace has no capture window");
    if (!steps) {
        CHECK_EQ_U64(sum.window_end_ns - sum.window_start_ns, OD_DURATION_NS, "the window's length");
    } else {
        /* [boundary of step S, boundary of step S + steps), S a multiple
           of `multiple` */
        size_t n = atomic_load(&od_steps), at = n;
        for (size_t k = 0; k < n; k++)
            if ((int64_t)od_step_t[k] == sum.window_start_ns) at = k;
        REQUIRE(at < n, "the window's start %" PRId64 " is no step boundary", sum.window_start_ns);
        CHECK(od_step_number[at] % multiple == 0, "the window begins at step %" PRIu64 ", no multiple of %" PRIu64,
              od_step_number[at], multiple);
        REQUIRE(at + steps < n, "fewer steps than the window's were logged");
        CHECK_EQ_U64(od_step_number[at + steps], od_step_number[at] + steps, "the window's last step");
        CHECK_EQ_U64(sum.window_end_ns, od_step_t[at + steps], "the window's end (step S + N's boundary)");
    }
    uint64_t kept = 0, outside = 0;
    for (size_t i = 0; i < t.n; i++) {
        int64_t start = sum.base_time_ns + t.ev[i].ts, end = start + t.ev[i].dur;
        if (start < sum.window_start_ns || end > sum.window_end_ns) {
            if (outside++ < 5)
                fprintf(stderr, "event %zu [%" PRId64 ", %" PRId64 "] outside [%" PRId64 ", %" PRId64 ")\n", i, start,
                        end, sum.window_start_ns, sum.window_end_ns);
        }
        if (dt__rd_cat_is_device_work(t.ev[i].cat) || t.ev[i].cat == DT_RD_CAT_RUNTIME ||
            t.ev[i].cat == DT_RD_CAT_DRIVER)
            kept++;
    }
    CHECK(outside == 0, "%" PRIu64 " of %zu events outside the window", outside, t.n);
    CHECK(kept > 0, "the window captured nothing");
    CHECK_EQ_U64(reply->records, t.n, "the reply's records (the trace's events)");
    uint64_t produced = 0, faulted = 0, lost = 0;
    const int kinds[] = {EMU_KIND_KERNEL, EMU_KIND_MEMCPY, EMU_KIND_MEMSET, EMU_KIND_RUNTIME, EMU_KIND_DRIVER};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) produced += st->records[kinds[k]];
    for (int f = 0; f < EMU_FAULT_COUNT; f++) faulted += st->faulted[f];
    uint64_t loss[DT_LOSS_COUNT] = {0};
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        loss[r] = (uint64_t)od_loss(&sum, dt_loss_reason_name((dt_loss_reason)r));
        lost += loss[r];
        if (r != DT_LOSS_OUTSIDE_WINDOW && r != DT_LOSS_UNFINISHED)
            CHECK_EQ_U64(loss[r], 0, dt_loss_reason_name((dt_loss_reason)r));
    }
    /* every record produced is kept or counted lost; devtrace's count may
       exceed the records only by calls it saw begin and counted unfinished
       whose records the vendor never produced (the launcher goes on while
       the vendor is disarmed) */
    CHECK(kept + lost >= produced + faulted && kept + lost - (produced + faulted) <= loss[DT_LOSS_UNFINISHED],
          "records %" PRIu64 " + faulted %" PRIu64 " vs kept %" PRIu64 " + lost %" PRIu64 " (outside_window %" PRIu64
          ", unfinished %" PRIu64 ")",
          produced, faulted, kept, lost, loss[DT_LOSS_OUTSIDE_WINDOW], loss[DT_LOSS_UNFINISHED]);
    char summary[1024];
    dt__record_loss_summary(summary, sizeof summary, loss);
    CHECK(strcmp(reply->text, summary) == 0, "the reply says \"%s\", the trace \"%s\"", reply->text, summary);
    dt__rd_summary_free(&sum);
    free(t.ev);
}

void scenario_on_demand(void)
{
    emu_open();
    char base[64];
    snprintf(base, sizeof base, "/tmp/dt-on-demand-XXXXXX");
    REQUIRE(mkdtemp(base) != NULL, "mkdtemp");
    setenv("XDG_RUNTIME_DIR", base, 1);
    const char *dir = g_opt.out ? g_opt.out : ".";
    mkdir(dir, 0777);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.on_demand.trace.json", dir, g_opt.label ? g_opt.label : g_opt.backend);

    dt_config config;
    dt_config_init(&config);
    config.backend = g_opt.backend;
    REQUIRE(dt_control_listen(&config) == DT_OK, "dt_control_listen: %s", dt_last_error());
    CHECK(dt_control_listening() == 1, "not listening");
    CHECK(dt_control_listen(&config) == DT_ERR_STATE, "listening twice");
    idle_work("idle, listening");

    /* the vendor's library missing: cannot_arm, nothing left armed */
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dt_ctl_msg reply;
    REQUIRE(setenv(g_opt.env, "/nonexistent/libvendor.so", 1) == 0, "setenv");
    CHECK(od_capture(out, &reply) == DT_CTL_CANNOT_ARM, "a missing library gave %s: %s",
          dt__ctl_code_name(reply.code), reply.text);
    REQUIRE(setenv(g_opt.env, g_opt.emulator, 1) == 0, "setenv");
    idle_work("idle after cannot_arm");

    /* a session of the program's own is running: busy */
    dt_session *own = session_new();
    session_start(own);
    CHECK(od_capture(out, &reply) == DT_CTL_BUSY, "a running session gave %s: %s", dt__ctl_code_name(reply.code),
          reply.text);
    session_stop(own);
    dt_session_destroy(own);
    idle_work("idle after the program's own session");

    /* the capture, while a thread launches */
    pthread_t launcher;
    REQUIRE(pthread_create(&launcher, NULL, od_launcher, NULL) == 0, "thread");
    while (atomic_load(&od_launches) < 100) usleep(100);
    emu.stats_reset();
    int trace = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(trace >= 0, "%s", path);
    od_client c = {.out = trace};
    REQUIRE(pthread_create(&c.thread, NULL, od_client_main, &c) == 0, "thread");
    for (int i = 0; od_state() != DT_CTL_CAPTURING; i++) {
        if (i == 10000) FAIL("the capture never began");
        usleep(1000);
    }
    CHECK(od_capture(out, &reply) == DT_CTL_BUSY, "a second capture gave %s: %s", dt__ctl_code_name(reply.code),
          reply.text);
    pthread_join(c.thread, NULL);
    close(trace);
    CHECK(c.rc == DT_CTL_SUCCESS && c.reply.written == 1, "the capture: %s, written %d: %s", dt__ctl_code_name(c.rc),
          c.reply.written, c.reply.text);
    emu_stats st;
    emu.stats_get(&st); /* final: nothing is produced for a client after the capture */
    if (c.rc == DT_CTL_SUCCESS) od_check_trace(path, &st, &c.reply, 0, 0);
    CHECK(od_state() == DT_CTL_IDLE, "the listener is not idle after the capture");

    /* N steps from a multiple of M: the launcher begins a step every 16
       launches. The work of the capture before is drained first: a vendor
       that hands records over at completion may still hold some of it. */
    atomic_store(&od_pause, 1);
    while (!atomic_load(&od_paused)) usleep(100);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    emu.stats_reset();
    atomic_store(&od_stepping, 1);
    atomic_store(&od_pause, 0);
    char steps_path[1100];
    snprintf(steps_path, sizeof steps_path, "%s.steps.json", path);
    trace = open(steps_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(trace >= 0, "%s", steps_path);
    od_client sc = {.out = trace, .steps = 5, .step_multiple = 4, .timeout_ns = 20000000000ull};
    od_client_main(&sc);
    close(trace);
    CHECK(sc.rc == DT_CTL_SUCCESS && sc.reply.written == 1, "the steps capture: %s, written %d: %s",
          dt__ctl_code_name(sc.rc), sc.reply.written, sc.reply.text);
    emu.stats_get(&st);
    /* the launcher logs a boundary just after it began it: two more logged
       hold the window's last */
    size_t logged = atomic_load(&od_steps);
    while (atomic_load(&od_steps) < logged + 2 && logged + 2 < OD_MAX_STEPS) usleep(100);
    atomic_store(&od_stepping, 0);
    if (sc.rc == DT_CTL_SUCCESS) od_check_trace(steps_path, &st, &sc.reply, 5, 4);
    /* no step comes: timeout, nothing written */
    snprintf(steps_path, sizeof steps_path, "%s.timeout.json", path);
    trace = open(steps_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    od_client tc = {.out = trace, .steps = 2, .timeout_ns = 300000000ull};
    od_client_main(&tc);
    CHECK(tc.rc == DT_CTL_TIMEOUT && tc.reply.written == 0, "steps that never come: %s: %s", dt__ctl_code_name(tc.rc),
          tc.reply.text);
    struct stat tb;
    CHECK(fstat(trace, &tb) == 0 && tb.st_size == 0, "a trace was written without a window");
    close(trace);
    CHECK(od_state() == DT_CTL_IDLE, "the listener is not idle after the timeout");
    /* the launcher goes on; the program's next synchronisation settles a
       deferred detach */
    uint64_t launched = atomic_load(&od_launches);
    while (atomic_load(&od_launches) < launched + 2) usleep(100);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    emu.stats_reset();
    usleep(20000);
    check_idle("idle after the capture, launching");
    atomic_store(&od_stop, 1);
    pthread_join(launcher, NULL);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");

    /* another profiler holds the vendor: cannot_arm */
    if (g_opt.subscribe) {
        typedef int (*subscribe_fn)(void **, void *, void *);
        typedef int (*unsubscribe_fn)(void *);
        subscribe_fn sub;
        unsubscribe_fn unsub;
        char unsub_name[128];
        *(void **)&sub = dlsym(emu.handle, g_opt.subscribe);
        const char *suffix = strstr(g_opt.subscribe, "Subscribe");
        REQUIRE(sub && suffix, "subscribe symbol %s", g_opt.subscribe);
        snprintf(unsub_name, sizeof unsub_name, "%.*sUnsubscribe", (int)(suffix - g_opt.subscribe), g_opt.subscribe);
        *(void **)&unsub = dlsym(emu.handle, unsub_name);
        void *other = NULL;
        REQUIRE(unsub && sub(&other, (void *)other_profiler_callback, NULL) == 0, "the other profiler");
        CHECK(od_capture(out, &reply) == DT_CTL_CANNOT_ARM, "another subscriber gave %s: %s",
              dt__ctl_code_name(reply.code), reply.text);
        CHECK(strstr(reply.text, "another") != NULL, "the message names no other holder: %s", reply.text);
        REQUIRE(unsub(other) == 0, "the other profiler could not unsubscribe");
        idle_work("idle after another profiler");
    }
    close(out);

    /* a forked child does not serve the parent's socket */
    char sock[DT_CTL_PATH_CAP];
    snprintf(sock, sizeof sock, "%s", dt__ctl_socket_path());
    pid_t child = fork();
    REQUIRE(child >= 0, "fork");
    if (child == 0) _exit(dt_control_listening() == 0 && dt__ctl_socket_path()[0] == 0 ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child listens on its parent's socket");
    struct stat sb;
    CHECK(stat(sock, &sb) == 0, "the forked child removed its parent's socket");
    CHECK(od_state() == DT_CTL_IDLE, "the parent no longer answers after the fork");

    /* stop removes the socket */
    dt_control_stop();
    CHECK(dt_control_listening() == 0, "still listening after dt_control_stop");
    CHECK(stat(sock, &sb) != 0, "dt_control_stop left %s", sock);
    dt_ctl_msg info;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    CHECK(dt__ctl_send(getpid(), &info, -1, 2000, &reply) == DT_CTL_NO_SUCH_LISTENER, "answered after stop");
    idle_work("idle after stop");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0, "%s", cmd);
}
