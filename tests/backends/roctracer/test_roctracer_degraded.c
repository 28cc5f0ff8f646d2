/*
 * The roctracer library without its optional entry points (the emulator's
 * bare variant: no callbacks, names, external correlation or HIP queries):
 * the backend starts, records every device activity and API call, and says
 * in the probe and the trace what each missing entry point costs; nothing
 * is invented in their place.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devtrace_emu.h"
#include "dt_check.h"

static char g_path[1024];

static int has_note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return 1;
    return 0;
}

static void bare_library(void)
{
    if (!DT_EMULATOR[0]) SKIP("the roctracer emulator is not built");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", DT_EMULATOR);
    snprintf(g_path, sizeof g_path, "%s/roctracer_bare/libroctracer64.so", dirname(dir));
    REQUIRE(setenv("DEVTRACE_ROCTRACER_LIBRARY", g_path, 1) == 0, "setenv");
    void *lib = dlopen(g_path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib != NULL, "cannot load %s: %s", g_path, dlerror());
    REQUIRE(dlsym(lib, "roctracer_enable_domain_callback") == NULL, "the bare variant has callbacks");
    int (*launch)(const emu_kernel_desc *);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*sync)(int, int);
    *(void **)&launch = dlsym(lib, "emu_launch_kernel_desc");
    *(void **)&memset_ = dlsym(lib, "emu_memset");
    *(void **)&sync = dlsym(lib, "emu_synchronize");
    REQUIRE(launch && memset_ && sync, "emu_* entry points");

    dt_backend_status bs;
    REQUIRE(dt_backend_probe("roctracer", &bs) == DT_OK, "probe: %s", dt_last_error());
    printf("probe: available %d, version '%s', reason: %s\n", bs.available, bs.version, bs.reason);
    CHECK_EQ(bs.available, 1);
    CHECK(strstr(bs.reason, "roctracer_enable_domain_callback") != NULL, "probe: %s", bs.reason);
    CHECK(strstr(bs.reason, "roctracer_activity_push_external_correlation_id") != NULL, "probe: %s", bs.reason);
    CHECK(strstr(bs.reason, "hipGetDeviceCount") != NULL, "probe: %s", bs.reason);

    dt_config c;
    dt_config_init(&c);
    c.backend = "roctracer";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create");
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    REQUIRE(dt_external_push(7) == DT_OK, "push");
    emu_kernel_desc d = {.device = 0, .stream = 2, .name = "bare_kernel", .grid = {4, 1, 1}, .block = {64, 1, 1},
                         .duration_ns = 500};
    REQUIRE_EQ(launch(&d), 0);
    REQUIRE_EQ(launch(&d), 0);
    REQUIRE_EQ(memset_(0, 2, 256, 3, 200, 1), 0);
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    REQUIRE_EQ(sync(-1, -1), 0);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop");
    size_t kernels = 0, memsets = 0, runtime = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL) {
            kernels++;
            CHECK_STR(ev.name, "bare_kernel");
            CHECK(ev.u.kernel.grid[0] == 0, "a grid without callbacks");
        }
        if (ev.kind == DT_EVENT_MEMSET) memsets++;
        if (ev.kind == DT_EVENT_RUNTIME) {
            runtime++;
            CHECK(strncmp(ev.name, "HIP_API#", 8) == 0, "API name %s without roctracer_op_string", ev.name);
        }
        if (ev.kind == DT_EVENT_KERNEL || ev.kind == DT_EVENT_MEMSET)
            CHECK(!ev.has_external, "an External id without external correlation or callbacks");
    }
    CHECK_EQ(kernels, 2);
    CHECK_EQ(memsets, 1);
    CHECK_EQ(runtime, 5); /* two launches, a memset, a synchronize per device */
    CHECK_EQ(dt_session_loss_total(s), 0);
    CHECK(has_note(s, "roctracer_enable_domain_callback"), "the missing callbacks are not noted");
    CHECK(has_note(s, "roctracer_op_string"), "the missing names are not noted");
    CHECK(has_note(s, "hipGetDeviceCount"), "the missing device queries are not noted");
    CHECK(has_note(s, "callbacks"), "the missing External ids are not noted");
    char json[64];
    CHECK_EQ(dt_session_device_properties(s, json, sizeof json), 0);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(bare_library))
