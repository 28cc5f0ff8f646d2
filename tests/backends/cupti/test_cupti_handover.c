/*
 * CUPTI under `devtrace record`, on the CUPTI emulator, whose driver calls
 * the injection library's InitializeInjection when it initialises as CUDA's
 * does:
 * - a process that never initialises CUDA never loads libcupti;
 * - a process that does is traced from then on;
 * - another CUPTI client of the program (the emulator's client, as
 *   torch.profiler's Kineto is one, subscribing or not, before the
 *   program's first CUDA call or after it) is refused (a subscribe is told
 *   that "CUPTI for devtrace" holds CUPTI), the trace notes it and `record`
 *   prints it; with DEVTRACE_CUPTI_HANDOVER=1 it gets CUPTI, and each trace
 *   holds its own part of the device activity;
 * - devtrace's start, re-entered from InitializeInjection (a CUPTI call
 *   that initialises the driver), neither deadlocks nor arms twice.
 * The traced program is this test itself, run with --program.
 */
#include <dlfcn.h>
#include <signal.h>
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

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI && defined(DT_CUPTI_CLIENT)
#include "backends/cupti_family_abi.h"
#include "devtrace_emu.h"

static const int grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};

static char g_emu[1024];
static char g_dir[1024];

static int setup(void)
{
    snprintf(g_emu, sizeof g_emu, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    snprintf(g_dir, sizeof g_dir, "%s/tests/backends/cupti-handover", DT_BINARY_DIR);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Run a shell command; its stdout and stderr together into out. Returns the
   exit status. */
__attribute__((format(printf, 3, 4))) static int run(char *out, size_t n, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The text of g_dir/name (freed by the caller). */
static char *read_trace(const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

/* The trace's count of kernels (devtrace.counts.kernel), or -1. */
static long kernels_in(const char *trace)
{
    const char *at = trace ? strstr(trace, "\"counts\": {\"kernel\": ") : NULL;
    return at ? strtol(at + strlen("\"counts\": {\"kernel\": "), NULL, 10) : -1;
}

/* --program ORDER MODE: what the traced program does. 12 kernels, and the
   emulator's CUPTI client (emu/cupti/client.c, in MODE: subscribing or
   no-subscribe) starting: after the first 5 (ORDER cuda-first), or before
   any CUDA call (client-first); then the client stops. On stdout: its
   start's result, the holder it was told, each of its calls' results and
   the kernels it got, and the timestamp callbacks the emulator took. */
static int program(const char *order, const char *mode)
{
    void *emu = dlopen(g_emu, RTLD_NOW | RTLD_LOCAL);
    if (!emu) return 90;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    void (*stats)(emu_stats *);
    *(void **)&launch = dlsym(emu, "emu_launch_kernel");
    *(void **)&sync = dlsym(emu, "emu_synchronize");
    *(void **)&stats = dlsym(emu, "emu_stats_get");
    void *client = dlopen(DT_CUPTI_CLIENT, RTLD_NOW | RTLD_LOCAL);
    if (!client) return 91;
    int (*start)(int, char *, size_t);
    int (*stop)(void);
    const char *(*results)(void);
    *(void **)&start = dlsym(client, "emu_cupti_client_start");
    *(void **)&stop = dlsym(client, "emu_cupti_client_stop");
    *(void **)&results = dlsym(client, "emu_cupti_client_results");
    int client_mode = strcmp(mode, "subscribing") == 0 ? 1 : 2;
    int client_first = strcmp(order, "client-first") == 0;
    char holder[64] = "";
    int r = 0;
    if (client_first) r = start(client_mode, holder, sizeof holder);
    for (int i = 0; i < 5; i++) launch(0, 0, "before", grid, block, 100);
    sync(-1, -1);
    if (!client_first) r = start(client_mode, holder, sizeof holder);
    for (int i = 0; i < 7; i++) launch(0, 0, "after", grid, block, 100);
    sync(-1, -1);
    stop();
    emu_stats st;
    stats(&st);
    printf("start=%d holder=[%s] %s timestamp_callbacks=%llu\n", r, holder, results(),
           (unsigned long long)st.timestamp_callbacks);
    return 0;
}

/* --exit: 9 kernels, then exit, unsynchronised: the trace is
   written before the CUDA runtime's teardown, which the runtime registered
   with atexit as the driver initialised (after devtrace's constructor). */
static int exit_program(void)
{
    void *emu = dlopen(g_emu, RTLD_NOW | RTLD_LOCAL);
    if (!emu) return 90;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    *(void **)&launch = dlsym(emu, "emu_launch_kernel");
    for (int i = 0; i < 9; i++) launch(0, i % 2, "k", grid, block, 100);
    exit(0);
}

/* --attributes: 3 kernels, then what CUPTI was asked: its device-buffer
   attributes (and whether one was set once a context existed), and whether
   the runtime and driver calls that launch nothing are recorded. */
static int attributes_program(void)
{
    void *emu = dlopen(g_emu, RTLD_NOW | RTLD_LOCAL);
    if (!emu) return 90;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    void (*stats)(emu_stats *);
    int (*recorded)(int, uint32_t);
    int (*get)(uint32_t, size_t *, void *);
    *(void **)&launch = dlsym(emu, "emu_launch_kernel");
    *(void **)&sync = dlsym(emu, "emu_synchronize");
    *(void **)&stats = dlsym(emu, "emu_stats_get");
    *(void **)&recorded = dlsym(emu, "emu_api_recorded");
    *(void **)&get = dlsym(emu, "cuptiActivityGetAttribute");
    for (int i = 0; i < 3; i++) launch(0, 0, "k", grid, block, 100);
    sync(-1, -1);
    uint64_t v[3];
    const uint32_t ids[3] = {DT_CF_ATTR_DEVICE_BUFFER_SIZE, DT_CF_ATTR_DEVICE_BUFFER_POOL_LIMIT,
                             DT_CF_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE};
    for (int i = 0; i < 3; i++) {
        size_t n = sizeof v[i];
        v[i] = 0;
        get(ids[i], &n, &v[i]);
    }
    emu_stats st;
    stats(&st);
    /* cudaGetDevice 17; cuCtxGetCurrent 304, cuDevicePrimaryCtxGetState 392,
       cuKernelGetAttribute 686; cuLaunchKernel 307 (cupti_*_cbid.h) */
    printf("size=%llu limit=%llu ahead=%llu late=%llu filtered: getdevice=%d ctxgetcurrent=%d primaryctx=%d "
           "kernelattribute=%d launch=%d\n", (unsigned long long)v[0], (unsigned long long)v[1],
           (unsigned long long)v[2], (unsigned long long)st.attributes_set_late, !recorded(0, 17), !recorded(1, 304),
           !recorded(1, 392), !recorded(1, 686), !recorded(1, 307));
    return 0;
}

/* --fork-idle: 3 kernels, then 3 children forked without exec that use no
   CUDA (as a data loader's workers) and exit, then 2 kernels. */
static int fork_idle_program(void)
{
    void *emu = dlopen(g_emu, RTLD_NOW | RTLD_LOCAL);
    if (!emu) return 90;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    *(void **)&launch = dlsym(emu, "emu_launch_kernel");
    *(void **)&sync = dlsym(emu, "emu_synchronize");
    for (int i = 0; i < 3; i++) launch(0, 0, "before", grid, block, 100);
    sync(-1, -1);
    for (int c = 0; c < 3; c++) {
        pid_t pid = fork();
        if (pid == 0) exit(0);
        if (pid > 0) waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < 2; i++) launch(0, 0, "after", grid, block, 100);
    sync(-1, -1);
    return 0;
}

/* `devtrace record` of this test run as the program in `mode` (--program,
   --exit), with env before it; its output in out. */
static void record_self(const char *env, const char *mode, const char *trace, char *out, size_t n)
{
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0);
    self[len] = '\0';
    int rc = run(out, n, "cd '%s' && rm -f '%s' && %s DEVTRACE_CUPTI_LIBRARY='%s' '%s' record -o '%s' -- '%s' %s 2>&1",
                 g_dir, trace, env, g_emu, DT_CLI, trace, self, mode);
    printf("%s", out);
    REQUIRE_EQ(rc, 0);
}

static void test_trace_written_before_runtime_teardown(void)
{
    char out[8192];
    record_self("", "--exit", "exit.json", out, sizeof out);
    REQUIRE(strstr(out, "nothing lost") != NULL);
    char *trace = read_trace("exit.json");
    REQUIRE_EQ(kernels_in(trace), 9);
    free(trace);
}

/* The session attaches inside InitializeInjection, while the driver
   initialises: a CUPTI that refuses EnableAndDump and the runtime filter
   there (DEVTRACE_EMU_BEFORE_CONTEXT=refused) gets them again when the
   first context is created, before the first launch's records. */
static void test_calls_refused_inside_driver_init(void)
{
    char out[8192];
    record_self("DEVTRACE_EMU_BEFORE_CONTEXT=refused", "--exit", "early.json", out, sizeof out);
    char *trace = read_trace("early.json");
    REQUIRE_EQ(kernels_in(trace), 9);
    CHECK(strstr(trace, "\"context_retry\"") != NULL, "no context_retry note");
    CHECK(strstr(trace, "made again when a device context was created: accepted") != NULL, "not accepted");
    CHECK(strstr(trace, "CallConfiguration") == NULL, "call-configuration calls recorded");
    free(trace);
}

/* Under record CUPTI's device buffers are set as devtrace chooses them
   (cupti.c), before the first context (CUPTI applies them to the buffers
   it allocates after), and the trace says so; the runtime and driver calls
   Kineto leaves out are not recorded, launches are. */
static void test_device_buffers_and_quiet_calls(void)
{
    char out[8192];
    record_self("", "--attributes", "attributes.json", out, sizeof out);
    CHECK(strstr(out, "size=8388608 limit=100 ahead=3 late=0 filtered: getdevice=1 ctxgetcurrent=1 primaryctx=1 "
                      "kernelattribute=1 launch=0") != NULL, "attributes or filters not as chosen");
    char *trace = read_trace("attributes.json");
    CHECK(trace && strstr(trace, "\"device_buffers\": \"device buffer size (bytes) 8388608; device buffers per "
                                 "context at most 100; device buffers allocated ahead 3\"") != NULL,
          "no device_buffers note");
    free(trace);
}

/* Children forked without exec that record nothing (a data loader's
   workers, which use no CUDA) write no trace; the parent's has every
   kernel, and record says which processes recorded nothing. */
static void test_idle_forked_children_write_no_trace(void)
{
    char out[8192];
    record_self("", "--fork-idle", "fork.json", out, sizeof out);
    CHECK(strstr(out, "1 trace written; 5 recorded nothing") != NULL, "record: %s", out);
    char *trace = read_trace("fork.json");
    CHECK_EQ(kernels_in(trace), 5);
    free(trace);
    char cmd[1400], listing[4096];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '^fork'", g_dir);
    run(listing, sizeof listing, "%s", cmd);
    CHECK(strcmp(listing, "1\n") == 0, "traces named fork*: %s", listing);
}

/* A process that never initialises CUDA does not load libcupti. */
static void test_no_cuda_no_cupti(void)
{
    char out[8192];
    int rc = run(out, sizeof out,
                 "cd '%s' && DEVTRACE_CUPTI_LIBRARY='%s' '%s' record --backend cupti -o none.json -- "
                 "sh -c 'grep -c cupti /proc/self/maps; exit 0' 2>&1",
                 g_dir, g_emu, DT_CLI);
    printf("%s", out);
    REQUIRE_EQ(rc, 0);
    REQUIRE(strncmp(out, "0\n", 2) == 0);
}

/* devtrace holds CUPTI: a subscribing client (torch 2.11's Kineto) is
   refused and told so; one that never subscribes (Kineto since
   kineto#1250) has its timestamp callback, buffer callbacks and kinds
   refused, so it neither takes devtrace's buffers nor switches its kinds
   off nor moves its clock. Every kernel is in devtrace's trace, which
   notes each refusal, and record says it. ORDER client-first: the client
   comes before the program's first CUDA call, and devtrace attaches
   inside the client's call, before it reaches CUPTI. */
static void refused_run(const char *env, const char *order, const char *client_mode, const char *trace_name)
{
    char out[16384], mode[128];
    printf("-- %s %s %s\n", env, order, client_mode);
    snprintf(mode, sizeof mode, "--program %s %s", order, client_mode);
    record_self(env, mode, trace_name, out, sizeof out);
    int subscribing = strcmp(client_mode, "subscribing") == 0;
    if (subscribing)
        CHECK(strstr(out, "start=39 holder=[CUPTI for devtrace] subscribe=39 timestamp=-1 register=-1") != NULL,
              "subscribing client not refused");
    else
        CHECK(strstr(out, "start=39 holder=[] subscribe=-1 timestamp=39 register=39 enable=39 disable=39") != NULL,
              "client without subscribe not refused");
    CHECK(strstr(out, "kernels=0 timestamp_callbacks=0") != NULL, "the client got kernels or moved the clock");
    CHECK(strstr(out, subscribing ? "asked for CUPTI (cuptiSubscribe_v2) while devtrace held it and was refused"
                                  : "asked for CUPTI (cuptiActivityRegisterCallbacks) while devtrace held it and was refused") != NULL,
          "record did not say the client was refused");
    CHECK(strstr(out, "libemu_cupti_client.so") != NULL, "the client is not named");
    if (strcmp(order, "client-first") == 0)
        CHECK(strstr(out, "before the program's first CUDA call: devtrace attached to CUPTI first") != NULL,
              "record did not say devtrace attached first");
    char *trace = read_trace(trace_name);
    CHECK_EQ(kernels_in(trace), 12);
    CHECK(trace && strstr(trace, "\"cupti_clients\"") != NULL, "no cupti_clients note");
    CHECK(trace && strstr(trace, "\"backend\": \"cupti\"") != NULL, "not recorded with cupti");
    free(trace);
}

static void test_other_client_refused(void)
{
    refused_run("", "cuda-first", "subscribing", "refused.json");
}

/* torch.profiler started before the program's first CUDA call; also with a
   driver that initialises at devtrace's first arming call (inside the
   client's call, re-entering the injection library). */
static void test_client_before_cuda_refused(void)
{
    refused_run("", "client-first", "subscribing", "refused_first.json");
    refused_run("DEVTRACE_EMU_INIT_ON_ARM=1", "client-first", "subscribing", "refused_first_arm.json");
}

/* A Kineto that never subscribes, after the program's first CUDA call and
   before it. */
static void test_client_without_subscribe_refused(void)
{
    refused_run("", "cuda-first", "no-subscribe", "refused_nosub.json");
    refused_run("", "client-first", "no-subscribe", "refused_nosub_first.json");
}

/* DEVTRACE_CUPTI_HANDOVER=1: the client gets CUPTI at its first call, and
   the kernels launched after; devtrace's trace keeps those before, and
   says so. A client that never subscribes takes CUPTI the same way. A
   client that comes before the program's first CUDA call gets every
   kernel: devtrace never attaches (its trace would hold nothing, and is
   not written), and record says so. */
static void test_handover(void)
{
    static const char *const modes[] = {"subscribing", "no-subscribe"};
    for (size_t i = 0; i < 2; i++) {
        char out[16384], mode[128];
        snprintf(mode, sizeof mode, "--program cuda-first %s", modes[i]);
        record_self("DEVTRACE_CUPTI_HANDOVER=1", mode, "handover.json", out, sizeof out);
        CHECK(strstr(out, "start=0 holder=[]") != NULL, "the client was refused");
        CHECK(strstr(out, "kernels=7 timestamp_callbacks=1") != NULL, "the client did not get the kernels after");
        CHECK(strstr(out, "CUPTI given to libemu_cupti_client.so") != NULL, "record did not say CUPTI was given");
        char *trace = read_trace("handover.json");
        CHECK_EQ(kernels_in(trace), 5);
        CHECK(trace && strstr(trace, "\"handover\"") != NULL, "no handover note");
        CHECK(strstr(out, "nothing lost") != NULL, "records lost");
        free(trace);
    }
    char out[16384];
    record_self("DEVTRACE_CUPTI_HANDOVER=1", "--program client-first no-subscribe", "handover_first.json", out,
                sizeof out);
    CHECK(strstr(out, "start=0 holder=[]") != NULL, "the client was refused");
    CHECK(strstr(out, "kernels=12 timestamp_callbacks=1") != NULL, "the client did not get every kernel");
    CHECK(strstr(out, "before devtrace attached") != NULL, "record did not say CUPTI was given before devtrace attached");
}

/* --reentry: devtrace's own start makes the CUPTI call that initialises the
   driver, which calls InitializeInjection on this thread, inside that start
   (the injection library's devtrace, which records through its own API
   with DEVTRACE_DISABLE set). */
static int reentry(void)
{
    alarm(60); /* a deadlock ends the child */
    void *inject = dlopen(DT_INJECT, RTLD_NOW | RTLD_LOCAL);
    void *emu = dlopen(g_emu, RTLD_NOW | RTLD_LOCAL);
    if (!inject || !emu) return 90;
    void (*config_init)(dt_config *);
    dt_status (*create)(const dt_config *, dt_session **), (*start)(dt_session *), (*stop)(dt_session *);
    size_t (*count)(const dt_session *);
    uint64_t (*lost)(const dt_session *);
    void (*destroy)(dt_session *);
    *(void **)&config_init = dlsym(inject, "dt_config_init");
    *(void **)&create = dlsym(inject, "dt_session_create");
    *(void **)&start = dlsym(inject, "dt_session_start");
    *(void **)&stop = dlsym(inject, "dt_session_stop");
    *(void **)&count = dlsym(inject, "dt_session_event_count");
    *(void **)&lost = dlsym(inject, "dt_session_loss_total");
    *(void **)&destroy = dlsym(inject, "dt_session_destroy");
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*sync)(int, int);
    void (*stats)(emu_stats *);
    *(void **)&launch = dlsym(emu, "emu_launch_kernel");
    *(void **)&sync = dlsym(emu, "emu_synchronize");
    *(void **)&stats = dlsym(emu, "emu_stats_get");
    dt_config c;
    config_init(&c);
    c.backend = "cupti";
    c.capture = DT_CAPTURE_KERNEL;
    dt_session *s = NULL;
    if (create(&c, &s) != DT_OK || start(s) != DT_OK) return 92;
    emu_stats st;
    stats(&st);
    if (st.injection_calls != 1) return 93; /* it did re-enter, during the start */
    for (int i = 0; i < 3; i++) launch(0, 0, "k", grid, block, 100);
    sync(-1, -1);
    if (stop(s) != DT_OK) return 94;
    size_t events = count(s);
    uint64_t lost_records = lost(s);
    destroy(s);
    printf("events=%zu lost=%llu\n", events, (unsigned long long)lost_records);
    return events == 3 && lost_records == 0 ? 0 : 95;
}

static void test_start_reentered_from_injection(void)
{
    char out[4096], self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0);
    self[len] = '\0';
    int rc = run(out, sizeof out,
                 "DEVTRACE_DISABLE=1 DEVTRACE_EMU_INIT_ON_ARM=1 CUDA_INJECTION64_PATH='%s' "
                 "DEVTRACE_CUPTI_LIBRARY='%s' '%s' --reentry 2>&1", DT_INJECT, g_emu, self);
    printf("%s", out);
    REQUIRE_EQ(rc, 0);
    REQUIRE(strstr(out, "events=3 lost=0") != NULL);
}

static int program_main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--program") == 0) {
        setup();
        return program(argv[2], argv[3]);
    }
    if (argc == 2 && strcmp(argv[1], "--fork-idle") == 0) {
        setup();
        return fork_idle_program();
    }
    if (argc == 2 && strcmp(argv[1], "--attributes") == 0) {
        setup();
        return attributes_program();
    }
    if (argc == 2 && strcmp(argv[1], "--exit") == 0) {
        setup();
        return exit_program();
    }
    if (argc == 2 && strcmp(argv[1], "--reentry") == 0) {
        setup();
        return reentry();
    }
    return -1;
}

int run_cases(int argc, char **argv);
#define main run_cases
DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_no_cuda_no_cupti),
             DT_TEST(test_other_client_refused),
             DT_TEST(test_client_before_cuda_refused),
             DT_TEST(test_client_without_subscribe_refused),
             DT_TEST(test_handover),
             DT_TEST(test_trace_written_before_runtime_teardown),
             DT_TEST(test_calls_refused_inside_driver_init),
             DT_TEST(test_device_buffers_and_quiet_calls),
             DT_TEST(test_idle_forked_children_write_no_trace),
             DT_TEST(test_start_reentered_from_injection))
#undef main

int main(int argc, char **argv)
{
    int rc = program_main(argc, argv);
    return rc >= 0 ? rc : run_cases(argc, argv);
}

#else
#include "cupti_test_util.h"
#endif
