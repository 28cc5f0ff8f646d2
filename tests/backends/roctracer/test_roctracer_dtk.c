/*
 * Hygon DTK: roctracer's entry points and HIP's are in libgalaxyhip.so.5,
 * under DTK_ROOT. The backend finds it there without being told, and
 * records through it. (The emulator's DTK variant: the same library with
 * DTK's soname.)
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devtrace_emu.h"
#include "dt_check.h"

static void found_under_dtk_root(void)
{
    if (!DT_EMULATOR[0]) SKIP("the roctracer emulator is not built");
    char dir[1024], lib[1200], root[] = "/tmp/devtrace-dtk-XXXXXX", libdir[1100], link_path[1200];
    snprintf(dir, sizeof dir, "%s", DT_EMULATOR);
    snprintf(lib, sizeof lib, "%s/dtk/libgalaxyhip.so.5", dirname(dir));
    REQUIRE(access(lib, R_OK) == 0, "%s is not built", lib);
    REQUIRE(mkdtemp(root) != NULL, "mkdtemp");
    snprintf(libdir, sizeof libdir, "%s/lib", root);
    REQUIRE(mkdir(libdir, 0755) == 0, "mkdir");
    snprintf(link_path, sizeof link_path, "%s/libgalaxyhip.so.5", libdir);
    REQUIRE(symlink(lib, link_path) == 0, "symlink");
    unsetenv("DEVTRACE_ROCTRACER_LIBRARY");
    unsetenv("ROCM_PATH");
    setenv("DTK_ROOT", root, 1);

    dt_backend_status bs;
    REQUIRE(dt_backend_probe("roctracer", &bs) == DT_OK, "probe: %s", dt_last_error());
    printf("probe: available %d, library %s, reason: %s\n", bs.available, bs.library, bs.reason);
    if (!strstr(bs.library, root)) SKIP("a roctracer on the loader path was found first: %s", bs.library);
    CHECK_EQ(bs.available, 1);

    void *h = dlopen(link_path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL, "%s", dlerror());
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    *(void **)&launch = dlsym(h, "emu_launch_kernel");
    *(void **)&sync = dlsym(h, "emu_synchronize");
    REQUIRE(launch && sync, "emu_* entry points");
    dt_config c;
    dt_config_init(&c);
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create"); /* "auto" */
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    CHECK_STR(dt_session_backend(s), "roctracer");
    const int g[3] = {2, 1, 1}, b[3] = {64, 1, 1};
    REQUIRE_EQ(launch(0, 0, "dcu_kernel", g, b, 1000), 0);
    REQUIRE_EQ(sync(-1, -1), 0);
    REQUIRE(dt_session_stop(s) == DT_OK, "stop");
    CHECK(strstr(s->backend_library, "libgalaxyhip.so.5") != NULL, "library %s", s->backend_library);
    int kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(s); i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind == DT_EVENT_KERNEL && strcmp(ev.name, "dcu_kernel") == 0 && ev.u.kernel.grid[0] == 2) kernels++;
    }
    CHECK_EQ(kernels, 1);
    char json[2048];
    CHECK(dt_session_device_properties(s, json, sizeof json) > 0, "device properties from libgalaxyhip's HIP");
    dt_session_destroy(s);
    unlink(link_path);
    rmdir(libdir);
    rmdir(root);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(found_under_dtk_root))
