/* Scenarios of the vendor's library: missing, named and unusable, without a
   marker, minimal, and taken by another profiler. */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

/* A library that cannot be used gives a message that says what to do. */
static void expect_unavailable(const char *library, const char *const *must_contain)
{
    REQUIRE(setenv(g_opt.env, library, 1) == 0, "setenv");
    dt_session *s = session_new();
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BACKEND_UNAVAILABLE, "dt_session_start gave %s", dt_status_name(st));
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    for (int i = 0; must_contain[i]; i++)
        CHECK(strstr(msg, must_contain[i]) != NULL, "message lacks \"%s\": %s", must_contain[i], msg);
    dt_session_destroy(s);

    dt_backend_status bs;
    CHECK(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    CHECK(bs.available == 0, "probe says available");
    CHECK(bs.reason[0] != '\0', "probe gives no reason");
}

void scenario_missing_library(void)
{
    const char *path = "/nonexistent/devtrace-conformance/libvendor.so";
    const char *must[] = {path, g_opt.env, NULL};
    expect_unavailable(path, must);
}

void scenario_no_marker(void)
{
    REQUIRE(g_opt.nomarker, "no --nomarker library for this backend");
    /* the library itself loads: the refusal is about its layout */
    void *h = dlopen(g_opt.nomarker, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL, "cannot load %s: %s", g_opt.nomarker, dlerror());
    const char *must[] = {g_opt.nomarker, "rebuild", NULL};
    expect_unavailable(g_opt.nomarker, must);
}

/* The minimal library has only the required entry points: the backend
   starts, records device activity (no External ids), and names every
   missing feature in the probe and in the trace's notes. */
void scenario_minimal(void)
{
    REQUIRE(g_opt.minimal, "no --minimal library for this backend");
    g_opt.emulator = g_opt.minimal;
    emu_open();
    dt_backend_status bs;
    REQUIRE(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    printf("probe: available %d, library %s, version '%s', reason: %s\n", bs.available, bs.library,
           bs.version, bs.reason);
    CHECK(bs.available == 1, "minimal library not available: %s", bs.reason);
    CHECK(strstr(bs.reason, "Subscribe") != NULL, "probe does not name the missing subscribe: %s", bs.reason);
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    REQUIRE(dt_external_push(7) == DT_OK, "push");
    mixed_workload(0, 0, 5);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    check_flows(s);
    CHECK(s->note_count > 0, "no notes about degraded features");
    int subscribe_noted = 0;
    for (int i = 0; i < s->note_count; i++)
        if (strstr(s->notes[i].key, "Subscribe")) subscribe_noted = 1;
    CHECK(subscribe_noted, "the trace does not note the missing subscribe");
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (is_device(ev.kind)) CHECK(!ev.has_external, "External id without callbacks");
    }
    check_trace_allowing(s, "trace", 4);
    dt_session_destroy(s);
}

void other_profiler_callback(void *userdata, int domain, uint32_t cbid, const void *data) {}

/* Another profiler holding the vendor interface: DT_ERR_BUSY, and devtrace
   leaves nothing armed (it starts once the other lets go). */
void scenario_busy(void)
{
    REQUIRE(g_opt.subscribe, "no --subscribe symbol for this backend");
    emu_open();
    typedef int (*subscribe_fn)(void **, void *, void *);
    typedef int (*unsubscribe_fn)(void *);
    subscribe_fn sub;
    unsubscribe_fn unsub;
    char unsub_name[128];
    *(void **)&sub = dlsym(emu.handle, g_opt.subscribe);
    REQUIRE(sub, "the emulator lacks %s", g_opt.subscribe);
    const char *suffix = strstr(g_opt.subscribe, "Subscribe");
    REQUIRE(suffix, "subscribe symbol %s", g_opt.subscribe);
    snprintf(unsub_name, sizeof unsub_name, "%.*sUnsubscribe", (int)(suffix - g_opt.subscribe), g_opt.subscribe);
    *(void **)&unsub = dlsym(emu.handle, unsub_name);
    REQUIRE(unsub, "the emulator lacks %s", unsub_name);
    void *other = NULL;
    REQUIRE(sub(&other, (void *)other_profiler_callback, NULL) == 0, "the other profiler could not subscribe");
    dt_session *s = session_new();
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BUSY, "dt_session_start gave %s: %s", dt_status_name(st), dt_last_error());
    CHECK(strstr(dt_last_error(), "another") != NULL, "message does not name another holder: %s",
          dt_last_error());
    REQUIRE(unsub(other) == 0, "the other profiler could not unsubscribe");
    session_start(s);
    emu.stats_reset();
    mixed_workload(0, 0, 2);
    session_stop(s);
    emu_stats st2;
    emu.stats_get(&st2);
    check_exact(s, &st2, NULL);
    dt_session_destroy(s);
}
/* A library the user named that cannot be used is an error, also under
   "auto": the session does not fall back to another backend, the probe
   says why, and `devtrace record` and `devtrace backends` print it. */
void scenario_named_library(void)
{
    /* loads, but is no vendor library */
    const char *lib = "libm.so.6";
    REQUIRE(setenv(g_opt.env, lib, 1) == 0, "setenv");
    dt_config c;
    dt_config_init(&c);
    c.backend = "auto";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create");
    dt_status st = dt_session_start(s);
    CHECK(st == DT_ERR_BACKEND_UNAVAILABLE, "auto with %s=%s started: %s (backend %s)", g_opt.env, lib,
          dt_status_name(st), dt_session_backend(s));
    const char *msg = dt_last_error();
    printf("message: %s\n", msg);
    CHECK(strstr(msg, g_opt.env) && strstr(msg, "libm.so.6"), "the error does not name the variable and "
          "the library: %s", msg);
    if (st == DT_OK) dt_session_stop(s);
    dt_session_destroy(s);
    dt_backend_status bs;
    CHECK(dt_backend_probe(g_opt.backend, &bs) == DT_OK, "probe: %s", dt_last_error());
    CHECK(!bs.available && strstr(bs.reason, g_opt.env), "probe: available %d: %s", bs.available, bs.reason);
    if (!g_opt.cli || access(g_opt.cli, X_OK) != 0) return;
    char cmd[2400], out[8192];
    const char *dir = g_opt.out ? g_opt.out : ".";
    mkdir(dir, 0777);
    for (int i = 0; i < 2; i++) {
        char sub[1200];
        if (i == 0) snprintf(sub, sizeof sub, "backends");
        else snprintf(sub, sizeof sub, "record -o %s/%s.named.json -- true", dir, g_opt.backend);
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", g_opt.cli, sub);
        FILE *p = popen(cmd, "r");
        REQUIRE(p != NULL, "popen %s", cmd);
        size_t len = fread(out, 1, sizeof out - 1, p);
        out[len] = 0;
        pclose(p);
        CHECK(strstr(out, g_opt.env) != NULL, "`devtrace %s` does not print the %s error:\n%s", sub, g_opt.env,
              out);
    }
}
