/*
 * Scenario files: a small line-based language describing an emulated
 * workload (see docs/scenarios.md). This is the parser; the runner executes
 * the tree.
 */
#ifndef DEVTRACE_EMU_SCENARIO_H
#define DEVTRACE_EMU_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

typedef enum scn_type {
    SCN_KERNEL,
    SCN_MEMCPY,
    SCN_MEMSET,
    SCN_SYNC,
    SCN_SLEEP,
    SCN_RANGE,    /* body */
    SCN_OP,       /* body */
    SCN_REPEAT,   /* body */
    SCN_THREAD,   /* body: runs on its own thread */
    SCN_JOIN,     /* wait for the threads started so far */
    SCN_FAULT,
    SCN_MARKER,   /* body: inside a range of the vendor's markers (emu_range_start) */
    SCN_COLLECTIVE,
    SCN_MALLOC,   /* device memory (or pinned host memory) of a device */
    SCN_FREE,     /* the thread's latest allocation not yet freed */
    SCN_FORK,     /* body: runs in a child process forked without exec */
    SCN_STEP      /* a training step begins (dt_step) */
} scn_type;

typedef struct scn_stmt scn_stmt;

typedef struct scn_block {
    scn_stmt *items;
    size_t n, cap;
} scn_block;

struct scn_stmt {
    scn_type type;
    int line;
    int device, stream;          /* sync: -1 = all */
    char *name;                  /* kernel, range, thread */
    int grid[3], block[3];
    uint32_t registers;
    int32_t static_smem, dynamic_smem;
    uint64_t duration_ns;
    int copy_kind;               /* emu_copy_kind */
    uint64_t bytes;
    uint32_t value;
    int async;
    uint64_t number;             /* repeat count, op id, sleep us */
    char *fault_spec;            /* "name=count" */
    char *group, *algorithm;     /* collective */
    int data_type;               /* collective: HCCL's numbering */
    uint64_t count;              /* collective: elements */
    int pinned;                  /* malloc: page-locked host memory */
    scn_block body;
};

typedef struct scenario {
    char vendor[32];             /* "topspti" (default) or "cupti" */
    int has_clock;
    int64_t clock_offset_ns;
    double clock_drift_ppm;
    int devices;                 /* 0: the emulator's default */
    scn_block top;
} scenario;

/* Parse; on failure returns -1 and writes "label:line: message" to err. */
int scn_parse_string(const char *text, const char *label, scenario *out, char *err, size_t errlen);
int scn_parse_file(const char *path, scenario *out, char *err, size_t errlen);
void scn_free(scenario *s);

/* Number of device/API operations the scenario performs (repeat expanded),
   by statement type; for tests and --dry-run. */
uint64_t scn_count(const scn_block *b, scn_type type);

#endif
