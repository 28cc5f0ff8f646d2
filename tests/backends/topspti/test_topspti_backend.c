/*
 * TOPSPTI-specific behaviour that the backend-neutral scenarios cannot see:
 * what the backend leaves behind in the vendor library after a session, how
 * it names API calls without the name API, and how it charges drops.
 *
 * Each case runs in its own process (`test_topspti_backend CASE`): the
 * vendor interface is process-wide.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/topspti_abi.h"
#include "devtrace_emu.h"

#include "dt_check.h"

static void *g_lib;

static void *sym(const char *name)
{
    void *p = dlsym(g_lib, name);
    REQUIRE(p != NULL, "the emulator lacks %s", name);
    return p;
}

static void open_emulator(const char *path)
{
    REQUIRE(setenv("DEVTRACE_TOPSPTI_LIBRARY", path, 1) == 0, "setenv");
    g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_lib, "cannot load %s: %s", path, dlerror());
    int (*init)(void);
    *(void **)&init = sym("emu_init");
    REQUIRE(init() == 0, "emu_init");
}

static dt_session *start_session(uint32_t buffer_count, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "topspti";
    if (buffer_count) c.buffer_count = buffer_count;
    if (buffer_size) c.buffer_size = buffer_size;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    return s;
}

static void launches(int n)
{
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    *(void **)&launch = sym("emu_launch_kernel");
    *(void **)&sync = sym("emu_synchronize");
    const int g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
    for (int i = 0; i < n; i++) REQUIRE(launch(0, 0, "k", g, b, 100) == 0, "launch");
    REQUIRE(sync(-1, -1) == 0, "synchronize");
}

static void other_callback(void *userdata, Topspti_CallbackDomain domain, Topspti_CallbackId cbid,
                           const void *data) {}

/* The thread-id type is the system one while recording, set once before
   the first kind is enabled and left so afterwards: a vendor applies it to
   records as kinds are enabled, and changing it while the library profiles
   would mix thread ids (CUPTI's header forbids it). The subscription is
   released. */
static void leaves_nothing(void)
{
    open_emulator(DT_EMULATOR);
    topsptiGetThreadIdType_fn get_type = (topsptiGetThreadIdType_fn)sym("topsptiGetThreadIdType");
    topsptiSubscribe_fn subscribe = (topsptiSubscribe_fn)sym("topsptiSubscribe");
    topsptiUnsubscribe_fn unsubscribe = (topsptiUnsubscribe_fn)sym("topsptiUnsubscribe");
    for (int round = 0; round < 2; round++) {
        dt_session *s = start_session(0, 0);
        Topspti_ActivityThreadIdType during = TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT, after = 99;
        get_type(&during);
        CHECK(during == TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, "thread-id type while recording: %d",
              (int)during);
        launches(3);
        REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
        get_type(&after);
        CHECK(after == TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, "thread-id type after the session: %d", (int)after);
        Topspti_SubscriberHandle h = NULL;
        CHECK(subscribe(&h, other_callback, NULL) == TOPSPTI_SUCCESS,
              "another subscriber cannot subscribe after the session");
        if (h) unsubscribe(h);
        dt_session_destroy(s);
    }
}

/* Without topsptiGetCallbackName, API calls get `topsRuntime#<cbid>` and
   keep their cbid. */
static void fallback_names(void)
{
    open_emulator(DT_EMULATOR_MINIMAL);
    dt_session *s = start_session(0, 0);
    launches(4);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    size_t n = dt_session_event_count(s), api = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_RUNTIME) continue;
        api++;
        char want[48];
        snprintf(want, sizeof want, "topsRuntime#%" PRIu32, ev.u.api.cbid);
        CHECK(strcmp(ev.name, want) == 0, "API name %s, expected %s", ev.name, want);
    }
    /* 4 launches and a synchronize of each emulated device */
    int (*device_count)(void);
    *(void **)&device_count = sym("emu_device_count");
    CHECK(api == 4 + (size_t)device_count(), "%zu runtime API events, expected %d", api, 4 + device_count());
    dt_session_destroy(s);
}

/* Refused buffer requests charge the vendor's drops to no_buffer, exactly,
   and say so in a note. */
static void pool_refusals(void)
{
    open_emulator(DT_EMULATOR);
    void (*stats_reset)(void);
    void (*stats_get)(emu_stats *);
    *(void **)&stats_reset = sym("emu_stats_reset");
    *(void **)&stats_get = sym("emu_stats_get");
    dt_session *s = start_session(1, 1024);
    stats_reset();
    launches(2000);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    emu_stats st;
    stats_get(&st);
    CHECK(st.dropped_no_buffer > 0, "the pool of one 1 KiB buffer never ran dry");
    CHECK(dt_session_loss(s, DT_LOSS_NO_BUFFER) == st.dropped_no_buffer,
          "no_buffer %" PRIu64 ", the emulator dropped %" PRIu64, dt_session_loss(s, DT_LOSS_NO_BUFFER),
          st.dropped_no_buffer);
    CHECK(dt_session_loss(s, DT_LOSS_VENDOR_DROPPED) == 0, "vendor_dropped %" PRIu64,
          dt_session_loss(s, DT_LOSS_VENDOR_DROPPED));
    int noted = 0;
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, "buffer_pool") == 0) noted = 1;
    CHECK(noted, "no buffer_pool note");
    dt_session_destroy(s);
}

/* One case per process: the vendor interface is process-wide. */
int main(int argc, char **argv)
{
    static const dt_test tests[] = {DT_TEST(leaves_nothing), DT_TEST(fallback_names), DT_TEST(pool_refusals)};
    enum { COUNT = sizeof tests / sizeof tests[0] };
    if (!DT_EMULATOR[0] || !DT_EMULATOR_MINIMAL[0]) SKIP("the TOPSPTI emulators were not built");
    return dt_test_main_each_in_own_process(argc, argv, tests, COUNT);
}
