/*
 * devtrace-emu-run: executes a scenario file against an emulator library.
 *
 * The emulator is dlopened (never linked) so that a tracer loading the same
 * library through its own vendor search shares one emulated device with the
 * workload. Ranges and operations go through libdevtrace, so they are real
 * host ranges and external ids whether or not a session records them.
 *
 * At the end it prints, one `key value` line each, what the emulator
 * produced (emu_stats), so a test can compare the trace with exact counts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devtrace/devtrace.h"
#include "devtrace_emu.h"
#include "scenario.h"

typedef struct emu_api {
    int (*init)(void);
    const char *(*personality)(void);
    int (*set_clock)(int64_t, double);
    int (*set_faults)(const char *);
    int (*set_device_count)(int);
    int (*launch_kernel_desc)(const emu_kernel_desc *);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
    int (*range_start)(const char *, int, int, uint64_t *);
    int (*range_end)(uint64_t);
    int (*collective)(const emu_collective_desc *);
    int (*malloc_)(int, int, uint64_t, uint64_t *);
    int (*free_)(uint64_t);
    void (*stats_get)(emu_stats *);
    const char *(*kind_name)(emu_kind);
    const char *(*fault_name)(emu_fault);
} emu_api;

static emu_api g_emu;
static const char *g_label;
static atomic_int g_errors;
static int g_final_sync = 1;

#define MAX_THREADS 256
static pthread_t g_threads[MAX_THREADS];
static size_t g_thread_count;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: devtrace-emu-run [--library PATH] [--stats-out FILE] [--quiet]\n"
            "                        [--no-final-sync] [--check] SCENARIO\n"
            "Runs SCENARIO (see docs/scenarios.md) on an emulated device.\n"
            "The emulator library is PATH, else the vendor's library variable\n"
            "($DEVTRACE_TOPSPTI_LIBRARY for 'vendor topspti', the default), else\n"
            "the one built next to this program (emu/libtopspti.so).\n"
            "--check parses the scenario and prints what it would do.\n");
}

static void report(const scn_stmt *s, const char *what, int rc)
{
    fprintf(stderr, "devtrace-emu-run: %s:%d: %s failed (%d)\n", g_label, s->line, what, rc);
    atomic_fetch_add(&g_errors, 1);
}

static int exec_block(const scn_block *b);

/* The allocations of this thread not yet freed: `free` takes the latest. */
#define MAX_LIVE_BLOCKS 1024
static _Thread_local struct {
    uint64_t address[MAX_LIVE_BLOCKS];
    size_t n;
} t_blocks;

static void *thread_main(void *arg)
{
    const scn_stmt *s = arg;
    /* named before its first call, so a tracer noting the name then sees it */
    char name[16];
    snprintf(name, sizeof(name), "%s", s->name);
    pthread_setname_np(pthread_self(), name);
    exec_block(&s->body);
    return NULL;
}

static void join_threads(void)
{
    for (size_t i = 0; i < g_thread_count; i++)
        pthread_join(g_threads[i], NULL);
    g_thread_count = 0;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The block in a child forked without exec, waited for here. The child has
   none of the parent's threads; it joins its own and synchronizes every
   device before it exits, so that its work ends while it is traced. Its
   failure (or death) is the run's. */
static void run_forked(const scn_stmt *s)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        report(s, "fork", errno);
        return;
    }
    if (pid == 0) {
        g_thread_count = 0;
        atomic_store(&g_errors, 0);
        exec_block(&s->body);
        join_threads();
        if (g_final_sync && g_emu.synchronize(-1, -1) != 0)
            atomic_fetch_add(&g_errors, 1);
        exit(atomic_load(&g_errors) ? 4 : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            report(s, "waitpid", errno);
            return;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        report(s, "forked child", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static int exec_stmt(const scn_stmt *s)
{
    int rc = 0;
    switch (s->type) {
    case SCN_KERNEL: {
        emu_kernel_desc d = { .device = s->device, .stream = s->stream, .name = s->name,
                              .registers_per_thread = s->registers,
                              .static_shared_memory = s->static_smem,
                              .dynamic_shared_memory = s->dynamic_smem,
                              .duration_ns = s->duration_ns };
        memcpy(d.grid, s->grid, sizeof(d.grid));
        memcpy(d.block, s->block, sizeof(d.block));
        if ((rc = g_emu.launch_kernel_desc(&d)) != 0)
            report(s, "kernel", rc);
        break;
    }
    case SCN_MEMCPY:
        if ((rc = g_emu.memcpy_(s->device, s->stream, s->copy_kind, s->bytes, s->duration_ns, s->async)) != 0)
            report(s, "memcpy", rc);
        break;
    case SCN_MEMSET:
        if ((rc = g_emu.memset_(s->device, s->stream, s->bytes, s->value, s->duration_ns, s->async)) != 0)
            report(s, "memset", rc);
        break;
    case SCN_SYNC:
        if ((rc = g_emu.synchronize(s->device, s->stream)) != 0)
            report(s, "sync", rc);
        break;
    case SCN_SLEEP:
        sleep_us(s->number);
        break;
    case SCN_STEP:
        /* the injection library's dt_step when it is preloaded, as for
           ranges: its on-demand captures count these steps */
        dt_step();
        break;
    case SCN_FAULT:
        if ((rc = g_emu.set_faults(s->fault_spec)) != 0)
            report(s, "fault", rc);
        break;
    case SCN_RANGE: {
        dt_status st = dt_range_push(s->name, NULL);
        if (st != DT_OK) {
            report(s, "dt_range_push", (int)st);
            return -1;
        }
        rc = exec_block(&s->body);
        st = dt_range_pop();
        if (st != DT_OK)
            report(s, "dt_range_pop", (int)st);
        break;
    }
    case SCN_OP: {
        dt_status st = dt_external_push(s->number);
        if (st != DT_OK) {
            report(s, "dt_external_push", (int)st);
            return -1;
        }
        rc = exec_block(&s->body);
        st = dt_external_pop(NULL);
        if (st != DT_OK)
            report(s, "dt_external_pop", (int)st);
        break;
    }
    case SCN_MARKER: {
        uint64_t id = 0;
        if ((rc = g_emu.range_start(s->name, -1, -1, &id)) != 0) {
            report(s, "marker", rc);
            return -1;
        }
        rc = exec_block(&s->body);
        int end = g_emu.range_end(id);
        if (end != 0)
            report(s, "marker end", end);
        break;
    }
    case SCN_COLLECTIVE: {
        emu_collective_desc d = { .device = s->device, .stream = s->stream, .name = s->name, .group = s->group,
                                  .algorithm = s->algorithm, .data_type = s->data_type, .count = s->count,
                                  .duration_ns = s->duration_ns };
        if ((rc = g_emu.collective(&d)) != 0)
            report(s, "collective", rc);
        break;
    }
    case SCN_MALLOC: {
        uint64_t address = 0;
        if (t_blocks.n == MAX_LIVE_BLOCKS) {
            report(s, "malloc (too many live allocations on this thread)", -1);
            return -1;
        }
        if ((rc = g_emu.malloc_(s->device, s->pinned ? 2 : 3, s->bytes, &address)) != 0)
            report(s, "malloc", rc);
        else
            t_blocks.address[t_blocks.n++] = address;
        break;
    }
    case SCN_FREE:
        if (t_blocks.n == 0) {
            report(s, "free (no allocation of this thread to free)", -1);
            return -1;
        }
        if ((rc = g_emu.free_(t_blocks.address[--t_blocks.n])) != 0)
            report(s, "free", rc);
        break;
    case SCN_REPEAT:
        for (uint64_t i = 0; i < s->number && rc == 0; i++)
            rc = exec_block(&s->body);
        break;
    case SCN_THREAD: {
        if (g_thread_count == MAX_THREADS) {
            report(s, "thread (too many threads)", -1);
            return -1;
        }
        pthread_t t;
        int err = pthread_create(&t, NULL, thread_main, (void *)s);
        if (err) {
            report(s, "pthread_create", err);
            return -1;
        }
        g_threads[g_thread_count++] = t;
        break;
    }
    case SCN_JOIN:
        join_threads();
        break;
    case SCN_FORK:
        run_forked(s);
        break;
    }
    return rc;
}

static int exec_block(const scn_block *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (exec_stmt(&b->items[i]) != 0)
            return -1;
    return 0;
}

#define RESOLVE(field, sym)                                                               \
    do {                                                                                  \
        *(void **)(&g_emu.field) = dlsym(h, sym);                                             \
        if (!g_emu.field) {                                                                   \
            fprintf(stderr, "devtrace-emu-run: %s is not a devtrace emulator (no %s)\n", path, \
                    sym);                                                                 \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)

static int load_emulator(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "devtrace-emu-run: cannot load the emulator %s: %s\n", path, dlerror());
        return -1;
    }
    RESOLVE(init, "emu_init");
    RESOLVE(personality, "emu_personality");
    RESOLVE(set_clock, "emu_set_clock");
    RESOLVE(set_faults, "emu_set_faults");
    RESOLVE(set_device_count, "emu_set_device_count");
    RESOLVE(launch_kernel_desc, "emu_launch_kernel_desc");
    RESOLVE(memcpy_, "emu_memcpy");
    RESOLVE(memset_, "emu_memset");
    RESOLVE(range_start, "emu_range_start");
    RESOLVE(range_end, "emu_range_end");
    RESOLVE(collective, "emu_collective");
    RESOLVE(malloc_, "emu_malloc");
    RESOLVE(free_, "emu_free");
    RESOLVE(synchronize, "emu_synchronize");
    RESOLVE(stats_get, "emu_stats_get");
    RESOLVE(kind_name, "emu_kind_name");
    RESOLVE(fault_name, "emu_fault_name");
    return 0;
}

/* The vendors (src/backends/vendors.def): library variable and emulator. */
static const struct { const char *name, *env, *emulator; } vendors[] = {
#define DT_VENDOR(name, env, emulator, ...) {#name, env, emulator},
#include "backends/vendors.def"
#undef DT_VENDOR
};

static int vendor_index(const char *vendor)
{
    for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
        if (strcmp(vendors[i].name, vendor) == 0)
            return (int)i;
    return -1;
}

/* The emulator built next to this program, for running from a build tree. */
static int default_library(const char *vendor, char *out, size_t outlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    int v = vendor_index(vendor);
    if (v < 0)
        return -1;
    int w = snprintf(out, outlen, "%s/%s", exe, vendors[v].emulator);
    return w > 0 && (size_t)w < outlen && access(out, R_OK) == 0 ? 0 : -1;
}

static void print_stats(FILE *f, const emu_stats *st)
{
    fprintf(f, "personality %s\n", g_emu.personality());
    for (int k = 0; k < EMU_KIND_COUNT; k++)
        fprintf(f, "records.%s %llu\n", g_emu.kind_name((emu_kind)k), (unsigned long long)st->records[k]);
    for (int i = 0; i < EMU_FAULT_COUNT; i++)
        fprintf(f, "faulted.%s %llu\n", g_emu.fault_name((emu_fault)i), (unsigned long long)st->faulted[i]);
    fprintf(f, "dropped.no_buffer %llu\n", (unsigned long long)st->dropped_no_buffer);
    fprintf(f, "dropped.reported %llu\n", (unsigned long long)st->dropped_reported);
    fprintf(f, "api_calls %llu\n", (unsigned long long)st->api_calls);
    fprintf(f, "callbacks %llu\n", (unsigned long long)st->callbacks_delivered);
    fprintf(f, "steps %llu\n", (unsigned long long)dt_step_count()); /* the latest step's number */
}

/* A tracer preloaded into this process has already started and sampled the
   device clock before main(); changing the clock now would make it jump
   inside the capture window. So the scenario's clock goes into the
   environment the emulator reads when it first starts, and the runner
   executes itself again once so that the tracer sees that clock from its
   first sample on. */
static void apply_clock_env(const scenario *scn, char **argv)
{
    char off[32], drift[64];
    snprintf(off, sizeof(off), "%lld", (long long)scn->clock_offset_ns);
    snprintf(drift, sizeof(drift), "%.17g", scn->clock_drift_ppm);
    const char *eo = getenv("DEVTRACE_EMU_CLOCK_OFFSET_NS");
    const char *ed = getenv("DEVTRACE_EMU_CLOCK_DRIFT_PPM");
    if (eo && ed && strcmp(eo, off) == 0 && strcmp(ed, drift) == 0)
        return;
    if (getenv("DEVTRACE_EMU_RUN_REEXEC"))
        return; /* already tried once: set the clock directly instead */
    setenv("DEVTRACE_EMU_CLOCK_OFFSET_NS", off, 1);
    setenv("DEVTRACE_EMU_CLOCK_DRIFT_PPM", drift, 1);
    setenv("DEVTRACE_EMU_RUN_REEXEC", "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "devtrace-emu-run: warning: cannot re-execute (%s); the clock is set late\n",
            strerror(errno));
}

int main(int argc, char **argv)
{
    const char *library = NULL, *stats_out = NULL, *file = NULL;
    int quiet = 0, final_sync = 1, check_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
            library = argv[++i];
        } else if (strcmp(argv[i], "--stats-out") == 0 && i + 1 < argc) {
            stats_out = argv[++i];
        } else if (strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(argv[i], "--no-final-sync") == 0) {
            final_sync = 0;
        } else if (strcmp(argv[i], "--check") == 0) {
            check_only = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || file) {
            usage(stderr);
            return 2;
        } else {
            file = argv[i];
        }
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    scenario scn;
    char err[512];
    if (scn_parse_file(file, &scn, err, sizeof(err)) != 0) {
        fprintf(stderr, "devtrace-emu-run: %s\n", err);
        return 2;
    }
    g_label = file;
    if (check_only) {
        printf("vendor %s\nkernel %llu\nmemcpy %llu\nmemset %llu\nsync %llu\nstep %llu\n", scn.vendor,
               (unsigned long long)scn_count(&scn.top, SCN_KERNEL),
               (unsigned long long)scn_count(&scn.top, SCN_MEMCPY),
               (unsigned long long)scn_count(&scn.top, SCN_MEMSET),
               (unsigned long long)scn_count(&scn.top, SCN_SYNC),
               (unsigned long long)scn_count(&scn.top, SCN_STEP));
        scn_free(&scn);
        return 0;
    }

    if (scn.has_clock)
        apply_clock_env(&scn, argv);

    char found[PATH_MAX];
    if (!library) {
        /* the scenario parser accepts only the vendors of vendors.def */
        const char *env = vendors[vendor_index(scn.vendor)].env;
        library = getenv(env);
        if (library && !*library)
            library = NULL;
        if (!library && default_library(scn.vendor, found, sizeof(found)) == 0)
            library = found;
        if (!library) {
            fprintf(stderr, "devtrace-emu-run: no %s emulator: pass --library PATH or set %s\n",
                    scn.vendor, env);
            scn_free(&scn);
            return 3;
        }
    }
    if (load_emulator(library) != 0) {
        scn_free(&scn);
        return 3;
    }
    if (strcmp(g_emu.personality(), scn.vendor) != 0) {
        fprintf(stderr, "devtrace-emu-run: %s emulates %s, but %s says 'vendor %s'\n", library,
                g_emu.personality(), file, scn.vendor);
        scn_free(&scn);
        return 3;
    }
    g_emu.init();
    if (scn.devices && g_emu.set_device_count(scn.devices) != 0) {
        fprintf(stderr, "devtrace-emu-run: %s: devices %d rejected\n", file, scn.devices);
        scn_free(&scn);
        return 3;
    }
    if (scn.has_clock && g_emu.set_clock(scn.clock_offset_ns, scn.clock_drift_ppm) != 0) {
        fprintf(stderr, "devtrace-emu-run: %s: clock rejected\n", file);
        scn_free(&scn);
        return 3;
    }

    g_final_sync = final_sync;
    exec_block(&scn.top);
    join_threads();
    /* device work must end inside the tracer's capture window */
    if (final_sync && g_emu.synchronize(-1, -1) != 0)
        atomic_fetch_add(&g_errors, 1);

    emu_stats st;
    g_emu.stats_get(&st);
    if (!quiet) {
        FILE *f = stdout;
        if (stats_out && !(f = fopen(stats_out, "w"))) {
            fprintf(stderr, "devtrace-emu-run: cannot write %s: %s\n", stats_out, strerror(errno));
            atomic_fetch_add(&g_errors, 1);
        } else {
            print_stats(f, &st);
            if (f != stdout)
                fclose(f);
            else
                fflush(stdout);
        }
    }
    scn_free(&scn);
    return atomic_load(&g_errors) ? 4 : 0;
}
