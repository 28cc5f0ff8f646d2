/*
 * Allocation failure, SQLite's way: the n-th allocation libdevtrace makes
 * fails (once, then in a second pass every one from the n-th on), for every
 * n until a whole recording makes fewer than n allocations. The recording is
 * the life of a session on an emulated backend: create, start, a busy
 * multi-threaded workload decoded as it runs, stop and write.
 *
 * Each failure must end in DT_ERR_NO_MEMORY with a message, or in records
 * counted as lost, or in a note where what is lost is a link rather than a
 * record; never a crash, a leak (run under AddressSanitizer), a hang, a
 * trace that `devtrace check` rejects, or a partial file where the trace
 * should be.
 *
 * usage: alloc_failure --backend NAME --emulator LIB --env VAR --out DIR
 */
#include "dt_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devtrace_emu.h"
#include "cli/commands.h"

static char g_context[128] = "setup";
#define DT_CHECK_CONTEXT g_context
#include "dt_check.h"

static struct {
    const char *backend, *emulator, *env, *out;
} g_opt;

static struct {
    int (*init)(void);
    int (*launch_kernel_desc)(const emu_kernel_desc *);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
} emu;

static void emu_open(void)
{
    REQUIRE(setenv(g_opt.env, g_opt.emulator, 1) == 0, "setenv %s", g_opt.env);
    void *h = dlopen(g_opt.emulator, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL, "cannot load the emulator %s: %s", g_opt.emulator, dlerror());
    *(void **)&emu.init = dlsym(h, "emu_init");
    *(void **)&emu.launch_kernel_desc = dlsym(h, "emu_launch_kernel_desc");
    *(void **)&emu.memcpy_ = dlsym(h, "emu_memcpy");
    *(void **)&emu.memset_ = dlsym(h, "emu_memset");
    *(void **)&emu.synchronize = dlsym(h, "emu_synchronize");
    REQUIRE(emu.init && emu.launch_kernel_desc && emu.memcpy_ && emu.memset_ && emu.synchronize,
            "%s lacks the emu_* API", g_opt.emulator);
    REQUIRE(emu.init() == 0, "emu_init failed");
}

/* ------------------------------------------------------------------ */
/* The workload                                                        */
/* ------------------------------------------------------------------ */
#define THREADS 3
#define ITERATIONS 60
/* enough distinct names and launch configurations that the name table, the
   demangling cache and the configuration table all grow */
#define NAMES 700
#define CONFIGS 300

/* A failed devtrace call must say it ran out of memory; anything else
   is a defect. */
static void expect_ok_or_no_memory(dt_status st, const char *call)
{
    if (st == DT_OK) return;
    CHECK(st == DT_ERR_NO_MEMORY, "%s: %s: %s", call, dt_status_name(st), dt_last_error());
    CHECK(dt_last_error()[0] != 0, "%s failed without a message", call);
}

#define OUTSIDE_KERNEL "outside_any_range"

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < ITERATIONS; i++) {
        int k = (t * ITERATIONS + i) * 4;
        char range[32], name[64];
        snprintf(range, sizeof range, "step %d", k % 50);
        uint64_t id;
        dt_status pushed = dt_range_push(range, &id);
        expect_ok_or_no_memory(pushed, "dt_range_push");
        dt_status op = dt_external_push((uint64_t)(1000 + k));
        expect_ok_or_no_memory(op, "dt_external_push");
        for (int j = 0; j < 4; j++) {
            int n = (k + j) % NAMES;
            if (n % 2) snprintf(name, sizeof name, "_ZN6kernel4implILi%dEEEvPfi", n); /* kernel::impl<n>(float*, int) */
            else snprintf(name, sizeof name, "plain_kernel_%d", n);
            int c = (k + j) % CONFIGS;
            emu_kernel_desc d = {.device = t % 2, .stream = t, .name = name, .grid = {1 + c, 1, 1},
                                 .block = {64, 1, 1}, .duration_ns = 2000};
            REQUIRE(emu.launch_kernel_desc(&d) == 0, "launch");
        }
        REQUIRE(emu.memcpy_(t % 2, t, EMU_COPY_HTOD, 4096, 1000, 1) == 0, "memcpy");
        REQUIRE(emu.memset_(t % 2, t, 4096, 0, 500, 1) == 0, "memset");
        if (op == DT_OK) expect_ok_or_no_memory(dt_external_pop(NULL), "dt_external_pop");
        if (pushed == DT_OK) expect_ok_or_no_memory(dt_range_pop(), "dt_range_pop");
        /* outside every range and op: no External id, also after a range
           whose name memory could not hold (the vendor's stack is popped
           all the same) */
        emu_kernel_desc d = {.device = t % 2, .stream = t, .name = OUTSIDE_KERNEL, .grid = {1, 1, 1},
                             .block = {64, 1, 1}, .duration_ns = 1000};
        REQUIRE(emu.launch_kernel_desc(&d) == 0, "launch");
    }
    return NULL;
}

static void workload(void)
{
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
}

/* ------------------------------------------------------------------ */
/* One recording                                                       */
/* ------------------------------------------------------------------ */
typedef struct outcome {
    int recorded;               /* create and start succeeded */
    uint64_t events, lost;      /* after stop */
    uint64_t with_external;     /* device events carrying an External id */
    uint64_t stale_external;    /* kernels launched outside every range and op that carry one */
    uint64_t unconfigured;      /* kernels without their launch configuration */
    uint64_t kernels;
    int noted_memory;           /* a note says memory ran out */
    int written;
} outcome;

static int noted_memory(const dt_session *s)
{
    for (int i = 0; i < s->note_count; i++)
        if (strstr(s->notes[i].text, "out of memory")) return 1;
    return 0;
}

static void trace_path(char *out, size_t n) { snprintf(out, n, "%s/alloc_failure.%s.json", g_opt.out, g_opt.backend); }

/* Files other than the trace left in the output folder: a temporary file
   of a write that failed would be one. */
static int stray_files(void)
{
    DIR *d = opendir(g_opt.out);
    REQUIRE(d != NULL, "cannot list %s", g_opt.out);
    char want[256];
    snprintf(want, sizeof want, "alloc_failure.%s.json", g_opt.backend);
    int stray = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, want, strlen(want)) == 0 && strcmp(e->d_name, want) != 0) stray++;
    closedir(d);
    return stray;
}

static outcome record(void)
{
    outcome o = {0};
    char path[512];
    trace_path(path, sizeof path);
    unlink(path);

    dt_config c;
    dt_config_init(&c);
    c.backend = g_opt.backend;
    c.buffer_size = 32 * 1024; /* several buffers turn over */
    c.buffer_count = 64;
    c.format = DT_FORMAT_JSON_GZ;  /* zlib's allocations too */
    dt_session *s = NULL;
    dt_status st = dt_session_create(&c, &s);
    expect_ok_or_no_memory(st, "dt_session_create");
    if (st != DT_OK) {
        CHECK(s == NULL, "a failed create returned a session");
        return o;
    }
    st = dt_session_start(s);
    expect_ok_or_no_memory(st, "dt_session_start");
    if (st != DT_OK) {
        dt_session_destroy(s);
        return o;
    }
    o.recorded = 1;
    workload();
    st = dt_session_stop(s);
    expect_ok_or_no_memory(st, "dt_session_stop");
    o.events = dt_session_event_count(s);
    o.lost = dt_session_loss_total(s);
    for (size_t i = 0; i < o.events; i++) {
        dt_event ev;
        REQUIRE(dt_session_event(s, i, &ev) == DT_OK, "dt_session_event");
        if ((ev.kind == DT_EVENT_KERNEL || ev.kind == DT_EVENT_MEMCPY || ev.kind == DT_EVENT_MEMSET) &&
            ev.has_external)
            o.with_external++;
        if (ev.kind == DT_EVENT_KERNEL) o.kernels++;
        if (ev.kind == DT_EVENT_KERNEL && ev.has_external && ev.name && strcmp(ev.name, OUTSIDE_KERNEL) == 0)
            o.stale_external++;
        if (ev.kind == DT_EVENT_KERNEL && ev.u.kernel.grid[0] == 0) o.unconfigured++;
    }
    o.noted_memory = noted_memory(s);
    st = dt_session_write(s, path, c.format);
    expect_ok_or_no_memory(st, "dt_session_write");
    o.written = st == DT_OK;
    dt_session_destroy(s);
    return o;
}

/* What the written trace must satisfy, read with the failures disarmed. */
static void check_file(const outcome *o)
{
    char path[512];
    trace_path(path, sizeof path);
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    CHECK(exists == o->written, "the trace %s after a write that %s", exists ? "exists" : "is missing",
          o->written ? "succeeded" : "failed");
    CHECK(stray_files() == 0, "files other than the trace were left in %s", g_opt.out);
    if (!exists || !o->written) return;
    char err[512];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src != NULL, "%s", err);
    FILE *sink = tmpfile();
    REQUIRE(sink != NULL, "tmpfile");
    int rc = dt__check_source(src, path, sink, sink);
    if (rc != 0) {
        rewind(sink);
        char line[512];
        while (fgets(line, sizeof line, sink)) fprintf(stderr, "  %s", line);
    }
    CHECK(rc == 0, "devtrace check rejects the trace written");
    fclose(sink);
    dt__rd_close(src);
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--backend") == 0) g_opt.backend = argv[i + 1];
        else if (strcmp(argv[i], "--emulator") == 0) g_opt.emulator = argv[i + 1];
        else if (strcmp(argv[i], "--env") == 0) g_opt.env = argv[i + 1];
        else if (strcmp(argv[i], "--out") == 0) g_opt.out = argv[i + 1];
    }
    REQUIRE(g_opt.backend && g_opt.emulator && g_opt.env && g_opt.out,
            "usage: alloc_failure --backend NAME --emulator LIB --env VAR --out DIR");
    mkdir(g_opt.out, 0755);
    emu_open();

    /* The reference: nothing fails, nothing is lost. */
    unsigned long before = dt__alloc_count();
    outcome ref = record();
    unsigned long made = dt__alloc_count() - before;
    REQUIRE(ref.recorded && ref.written && ref.lost == 0 && !ref.noted_memory,
            "the recording without failures lost %" PRIu64 " records", ref.lost);
    check_file(&ref);
    REQUIRE(ref.with_external > 0, "no device event carries an External id");
    REQUIRE(ref.stale_external == 0, "kernels launched outside every range carry an External id");
    fprintf(stderr, "alloc_failure: %s: %lu allocations in a recording of %" PRIu64 " events\n", g_opt.backend,
            made, ref.events);

    for (int persistent = 0; persistent <= 1; persistent++) {
        unsigned long n = 1, runs = 0;
        /* where the failures ended: refused at create or start, records
           counted as lost, a note, the write refused, or nothing visible (a
           cache that did not grow) */
        unsigned long refused = 0, counted = 0, noted = 0, unwritten = 0, absorbed = 0;
        for (;; n++) {
            snprintf(g_context, sizeof g_context, "%s, allocation %lu fails%s", g_opt.backend, n,
                     persistent ? " and every one after it" : "");
            unsigned long failed = dt__alloc_failures();
            dt__alloc_fail_after((long)n, persistent);
            outcome o = record();
            dt__alloc_fail_after(0, 0);
            runs++;
            if (dt__alloc_failures() == failed) break; /* the recording made fewer than n */
            check_file(&o);
            if (!o.recorded) {
                refused++;
                continue;
            }
            CHECK(o.stale_external == 0, "%" PRIu64 " kernels launched outside every range carry an External id",
                  o.stale_external);
            if (o.lost) counted++;
            else if (o.noted_memory) noted++;
            else if (!o.written) unwritten++;
            else absorbed++;
            /* (a vendor whose kernels carry none has nothing to lose) */
            CHECK(o.unconfigured == 0 || ref.unconfigured == ref.kernels, "%" PRIu64 " kernels lost their launch "
                  "configuration", o.unconfigured);
            /* every record is either in the trace or counted as lost */
            CHECK(o.events + o.lost == ref.events, "%" PRIu64 " events + %" PRIu64 " lost, not %" PRIu64,
                  o.events, o.lost, ref.events);
            /* a device event that lost its External id (a record, not lost)
               is accounted for by a note */
            uint64_t device_kept = o.with_external;
            if (device_kept < ref.with_external && o.lost == 0)
                CHECK(o.noted_memory, "%" PRIu64 " device events lost their External id without a note",
                      ref.with_external - device_kept);
            if (dt_check_failures > 20) break;
        }
        fprintf(stderr,
                "alloc_failure: %s: %lu recordings with %s failure: %lu refused at create or start, %lu with "
                "records counted as lost, %lu noted, %lu refused at write, %lu absorbed\n",
                g_opt.backend, runs, persistent ? "a persistent" : "a single", refused, counted, noted, unwritten,
                absorbed);
        REQUIRE(runs > 10, "the countdown never reached the end of a recording");
    }
    return dt_check_failures ? 1 : 0;
}
