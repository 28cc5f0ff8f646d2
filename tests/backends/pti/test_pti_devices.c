/*
 * PTI-specific behaviour the backend-neutral scenarios cannot see: devices
 * named by UUID and PCI address (numbered as the Level Zero driver lists
 * them, whichever is used first), SYCL
 * queues as streams, peer-to-peer copies, and external ids another client
 * of PTI pushes under its own kinds (Kineto's XPU plugin pushes CUSTOM_0).
 *
 * Each case runs in its own process (`test_pti_devices CASE`): the vendor
 * interface is process-wide.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pti_abi.h"
#include "devtrace_emu.h"

#include "dt_check.h"

static void *g_lib;

static void *sym(const char *name)
{
    void *p = dlsym(g_lib, name);
    REQUIRE(p != NULL, "the emulator lacks %s", name);
    return p;
}

static void open_emulator(int devices)
{
    REQUIRE(setenv("DEVTRACE_PTI_LIBRARY", DT_EMULATOR, 1) == 0, "setenv");
    g_lib = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_lib, "cannot load %s: %s", DT_EMULATOR, dlerror());
    int (*init)(void), (*set_devices)(int);
    *(void **)&init = sym("emu_init");
    *(void **)&set_devices = sym("emu_set_device_count");
    REQUIRE(init() == 0, "emu_init");
    REQUIRE(set_devices(devices) == 0, "emu_set_device_count");
}

static dt_session *start_session(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "pti";
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    return s;
}

static void launch(int device, int stream, const char *name)
{
    int (*fn)(int, int, const char *, const int[3], const int[3], uint64_t);
    *(void **)&fn = sym("emu_launch_kernel");
    const int g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
    REQUIRE(fn(device, stream, name, g, b, 1000) == 0, "launch");
}

static void copy(int device, int stream, int kind)
{
    int (*fn)(int, int, int, uint64_t, uint64_t, int);
    *(void **)&fn = sym("emu_memcpy");
    REQUIRE(fn(device, stream, kind, 4096, 500, 0) == 0, "memcpy");
}

static void synchronize(void)
{
    int (*fn)(int, int);
    *(void **)&fn = sym("emu_synchronize");
    REQUIRE(fn(-1, -1) == 0, "synchronize");
}

/* Work on the emulator's device 1 first: it is still device 1, as the
   driver lists it, and the name says which device it is (the emulator's
   UUIDs end in the device number, its PCI buses start at 0x3a). Streams
   are the SYCL queues. */
static void devices_by_uuid(void)
{
    open_emulator(2);
    dt_session *s = start_session();
    launch(1, 3, "first");
    launch(0, 5, "second");
    launch(1, 3, "third");
    copy(0, 5, EMU_COPY_PTOP);
    copy(1, 3, EMU_COPY_HTOD);
    synchronize();
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    size_t n = dt_session_event_count(s);
    int kernels = 0, copies = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL) {
            kernels++;
            int on_one = strcmp(ev.name, "second") != 0;
            CHECK_EQ(ev.device, on_one ? 1u : 0u);
            CHECK_EQ(ev.stream, on_one ? 3u : 5u);
        } else if (ev.kind == DT_EVENT_MEMCPY) {
            copies++;
            if (ev.u.memcpy.copy_kind == DT_COPY_PTOP) {
                CHECK_EQ(ev.device, 0u);
                CHECK_EQ(ev.u.memcpy.src_device, 0u);
                CHECK_EQ(ev.u.memcpy.dst_device, 0u);
                CHECK_EQ(ev.stream, 5u);
            } else {
                CHECK_EQ(ev.u.memcpy.copy_kind, DT_COPY_HTOD);
                CHECK_EQ(ev.u.memcpy.src_kind, DT_MEM_PAGEABLE);
                CHECK_EQ(ev.u.memcpy.dst_kind, DT_MEM_DEVICE);
                CHECK_EQ(ev.device, 1u);
            }
        }
    }
    CHECK_EQ(kernels, 3);
    CHECK_EQ(copies, 2);
    char props[4096];
    dt_session_device_properties(s, props, sizeof props);
    CHECK(strstr(props, "\"id\":1,\"name\":\"Intel(R) Data Center GPU Max 1550, Intel GPU 0:3b:0.0 (UUID "
                        "8680d50b000000000000000000000001)\"") != NULL,
          "device 1 by the driver's name, PCI address and UUID: %s", props);
    CHECK(strstr(props, "\"id\":0,\"name\":\"Intel(R) Data Center GPU Max 1550, Intel GPU 0:3a:0.0 (UUID "
                        "8680d50b000000000000000000000000)\"") != NULL,
          "device 0: %s", props);
    dt_session_destroy(s);

    /* the same UUID is the same device in the next session */
    s = start_session();
    launch(0, 5, "again");
    synchronize();
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL) CHECK_EQ(ev.device, 0u);
    }
    dt_session_destroy(s);
}

/* Another client's external ids (Kineto's kind) are not devtrace's: device
   work carries devtrace's own innermost id, and an id pushed only by the
   other client links nothing. */
static void other_clients_external_ids(void)
{
    open_emulator(1);
    uint32_t (*push)(uint32_t, uint64_t), (*pop)(uint32_t, uint64_t *);
    *(void **)&push = sym("ptiViewPushExternalCorrelationId");
    *(void **)&pop = sym("ptiViewPopExternalCorrelationId");
    dt_session *s = start_session();
    REQUIRE(push(DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, 99) == DT_PTI_SUCCESS, "Kineto's push");
    launch(0, 1, "kineto_only");
    REQUIRE(dt_external_push(7) == DT_OK, "push");
    launch(0, 1, "both");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    uint64_t popped = 0;
    REQUIRE(pop(DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, &popped) == DT_PTI_SUCCESS && popped == 99, "Kineto's pop");
    synchronize();
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
    size_t n = dt_session_event_count(s);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        seen++;
        if (strcmp(ev.name, "both") == 0) {
            CHECK(ev.has_external && ev.external_id == 7, "the kernel launched under devtrace's id carries 7, not "
                  "Kineto's 99 (has %d, id %" PRIu64 ")", ev.has_external, ev.external_id);
        } else {
            CHECK(!ev.has_external, "a kernel launched under Kineto's id only carries External id %" PRIu64,
                  ev.external_id);
        }
    }
    CHECK_EQ(seen, 2);
    dt_session_destroy(s);
}

/* One case per process: the vendor interface is process-wide. */
int main(int argc, char **argv)
{
    static const dt_test tests[] = {DT_TEST(devices_by_uuid), DT_TEST(other_clients_external_ids)};
    enum { COUNT = sizeof tests / sizeof tests[0] };
    if (!DT_EMULATOR[0]) SKIP("the PTI emulator was not built");
    return dt_test_main_each_in_own_process(argc, argv, tests, COUNT);
}
