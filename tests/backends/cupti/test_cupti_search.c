/*
 * Where devtrace finds libcupti besides the loader path and the toolkit's
 * lib64: the toolkit's lib (CUDA 13 installs there), and the folders
 * Python's CUDA wheels use: nvidia/cu13/lib (CUDA 13), nvidia/cuda_cupti/lib
 * (CUDA 12), nvidia/<any>/lib, in a virtual or conda environment's
 * site-packages or on PYTHONPATH. Each layout is built from links to the
 * CUPTI emulator.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dt_check.h"

#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <dlfcn.h>

#include "cupti_engine.h"

static char g_emu[1024], g_root[1024];

static int setup(void)
{
    snprintf(g_emu, sizeof g_emu, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    snprintf(g_root, sizeof g_root, "%s/tests/backends/cupti-search", DT_BINARY_DIR);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_root, g_root);
    return system(cmd) == 0 ? 0 : -1;
}

/* A link to the emulator at g_root/<rel>/<soname>; returns that path. */
static void place(const char *rel, const char *soname, char *out, size_t n)
{
    char cmd[4200];
    snprintf(out, n, "%s/%s/%s", g_root, rel, soname);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && ln -sf '%s' '%s'", g_root, rel, g_emu, out);
    REQUIRE_EQ(system(cmd), 0);
}

/* Whether `want` is among the places the CUPTI backend looks, with this
   environment (NAME=VALUE pairs, NULL-terminated; the toolkit installed
   here is out of the way). */
static int looked_for(const char *want, ...)
{
    unsetenv("VIRTUAL_ENV");
    unsetenv("CONDA_PREFIX");
    unsetenv("PYTHONPATH");
    setenv("CUDA_HOME", "/nonexistent/cuda", 1);
    va_list ap;
    va_start(ap, want);
    for (const char *kv; (kv = va_arg(ap, const char *)) != NULL;) {
        char name[64];
        const char *eq = strchr(kv, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
        setenv(name, eq + 1, 1);
    }
    va_end(ap);
    static char paths[64][512];
    const char *cands[64];
    size_t n = dt__library_candidates(&dt__engine_cupti.v->library.spec, paths, cands, 64);
    int found = 0;
    for (size_t i = 0; i < n; i++) found |= strcmp(cands[i], want) == 0;
    printf("%s: %s among the %zu places looked in\n", want, found ? "is" : "is NOT", n);
    return found;
}

/* ... and the one the probe finds, in a child process (a library once
   loaded stays loaded), when the loader path has none. */
static void probe_in_child(char *found, size_t n)
{
    int fd[2];
    REQUIRE_EQ(pipe(fd), 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dt_backend_status st;
        memset(&st, 0, sizeof st);
        dt_backend_probe("cupti", &st);
        ssize_t w = write(fd[1], st.library, strlen(st.library));
        (void)w;
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < n && (r = read(fd[0], found + len, n - 1 - len)) > 0) len += (size_t)r;
    found[len] = '\0';
    close(fd[0]);
    waitpid(pid, NULL, 0);
}

/* Each layout, with the variable that points at it. */
static void test_layouts_looked_in(void)
{
    static const struct { const char *folder, *soname, *variable, *root; } layouts[] = {
        {"cuda/lib", "libcupti.so.13", "CUDA_HOME", "cuda"},
        {"venv13/lib/python3.12/site-packages/nvidia/cu13/lib", "libcupti.so.13", "VIRTUAL_ENV", "venv13"},
        {"pp/nvidia/cuda_cupti/lib", "libcupti.so.12", "PYTHONPATH", "pp"},
        {"conda/lib/python3.11/site-packages/nvidia/cupti_other/lib", "libcupti.so", "CONDA_PREFIX", "conda"},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        char want[2048], env[1200];
        place(layouts[i].folder, layouts[i].soname, want, sizeof want);
        /* PYTHONPATH: one folder among others */
        snprintf(env, sizeof env, "%s=%s%s/%s", layouts[i].variable,
                 strcmp(layouts[i].variable, "PYTHONPATH") == 0 ? "/nonexistent:" : "", g_root, layouts[i].root);
        REQUIRE(looked_for(want, env, (const char *)NULL));
    }
}

/* And the probe finds the wheel, where the loader path has no libcupti. */
static void test_wheel_found(void)
{
    char want[2048], env[1200];
    place("venv13/lib/python3.12/site-packages/nvidia/cu13/lib", "libcupti.so.13", want, sizeof want);
    snprintf(env, sizeof env, "VIRTUAL_ENV=%s/venv13", g_root);
    REQUIRE(looked_for(want, env, (const char *)NULL));
    if (dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL)) SKIP("the loader path has a libcupti, which comes first");
    char found[2048];
    probe_in_child(found, sizeof found);
    REQUIRE_STR(found, want);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_layouts_looked_in),
             DT_TEST(test_wheel_found))

#else
#include "cupti_test_util.h"
#endif
