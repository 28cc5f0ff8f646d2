/*
 * What the files of the backend conformance suite share (conformance.c says
 * what the suite is): the options, the emulator's entry points, the checks
 * every scenario makes, and the scenarios. conformance.c holds the first
 * three and main, with the table of the scenarios; the scenarios are in
 * files by theme: events.c, faults.c, flight_recorder.c, lifecycle.c,
 * libraries.c and on_demand.c.
 */
#ifndef DT_CONFORMANCE_H
#define DT_CONFORMANCE_H

#include "dt_internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devtrace_emu.h"
#include "reader/dt_reader.h"

/* ------------------------------------------------------------------ */
/* Reporting                                                           */
/* ------------------------------------------------------------------ */
extern const char *g_scenario;
#define DT_CHECK_CONTEXT g_scenario
#include "dt_check.h"

#define CHECK_EQ_U64(a, b, what)                                                     \
    CHECK((uint64_t)(a) == (uint64_t)(b), "%s: got %" PRIu64 ", expected %" PRIu64, \
          what, (uint64_t)(a), (uint64_t)(b))

/* ------------------------------------------------------------------ */
/* The backend under test and its emulator                             */
/* ------------------------------------------------------------------ */
typedef struct conformance_opt {
    const char *backend, *emulator, *env, *minimal, *nomarker, *subscribe, *out, *cli, *label;
} conformance_opt;
extern conformance_opt g_opt;

typedef struct conformance_emu {
    void *handle;
    int (*init)(void);
    int (*set_clock)(int64_t, double);
    uint64_t (*device_time_ns)(void);
    int (*fault_arm)(emu_fault, uint64_t);
    const char *(*fault_name)(emu_fault);
    int (*launch_kernel)(int, int, const char *, const int[3], const int[3], uint64_t);
    int (*launch_kernel_desc)(const emu_kernel_desc *);
    int (*memcpy_)(int, int, int, uint64_t, uint64_t, int);
    int (*memset_)(int, int, uint64_t, uint32_t, uint64_t, int);
    int (*synchronize)(int, int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
    void (*faults_clear)(void);
} conformance_emu;
extern conformance_emu emu;

extern const int grid1[3], block1[3];

typedef struct counts {
    uint64_t kind[DT_EVENT_RANGE + 1];
} counts;

/* A thread's share of a launch storm (lifecycle.c, faults.c). */
typedef struct launch_arg { int thread, count; } launch_arg;

/* conformance.c: the backend under test, its emulator, and the checks every scenario makes */
void emu_open(void);
dt_session *session_new(void);
void session_start(dt_session *s);
void session_stop(dt_session *s);
unsigned backend_lacks(void);
int noted(const dt_session *s, const char *key, const char *fact);
int attributes(const dt_session *s);
int counts_drops(const dt_session *s);
void check_no_external(const dt_session *s);
counts count_events(const dt_session *s);
int is_device(dt_event_kind k);
int is_api(dt_event_kind k);
void check_exact(const dt_session *s, const emu_stats *st, const uint64_t expected_loss[DT_LOSS_COUNT]);
int cmp_u64(const void *a, const void *b);
void check_flows(const dt_session *s);
void check_window(const dt_session *s, uint64_t before, uint64_t after);
void check_trace_allowing(dt_session *s, const char *tag, int allowed_invariant);
void check_other_readers(const char *path);
void check_trace(dt_session *s, const char *tag);
void mixed_workload(int device, int stream, int rounds);

/* the scenarios */
void scenario_kinds(void);
void scenario_external(void);
void scenario_window(void);
void scenario_clock(void);
void scenario_flight_recorder(void);
void scenario_fault(const char *fault);
void scenario_threads(void);
void scenario_threads64(void);
void scenario_unfinished(void);
void scenario_pool_exhausted(void);
void scenario_capture_subset(void);
void scenario_restart(void);
void scenario_missing_library(void);
void scenario_no_marker(void);
void scenario_minimal(void);
void scenario_busy(void);
void scenario_deep_external(void);
void scenario_named_library(void);

/* libraries.c */
void other_profiler_callback(void *userdata, int domain, uint32_t cbid, const void *data);

/* on_demand.c */
void scenario_on_demand(void);

#endif /* DT_CONFORMANCE_H */
