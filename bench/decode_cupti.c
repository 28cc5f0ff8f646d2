/*
 * CUPTI decode benchmark: records per second from completed activity
 * buffers to stored events, through the backend's decode path, beside a
 * memcpy of the same bytes (the shared harness, decode_harness.c). Buffers
 * are CUPTI layouts (the toolkit's structs) in the mix a launch-bound CUDA
 * program produces: per launch an external-correlation, a runtime and a
 * driver API record and a kernel, with a memcpy and a memset every eighth
 * launch. External-id links are logged while decoding and enter the
 * correlation table at the end of each run, as a recording does at stop;
 * that time is included.
 */
#include "decode_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_decode_cupti(size_t records, int rounds);

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

#include "backends/cupti_backend.h"

#define BUF_SIZE (4u << 20)
#define BUF_COUNT 32u
#define T0 UINT64_C(1790000000000000000)

static const char *const kernel_names[] = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
    "_Z6vecAddPfS_S_i",
    "ampere_sgemm_128x64_tn",
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmIiEEEEvNT_6ParamsE",
};

typedef struct filler {
    uint8_t *buf;
    size_t used, records;
    uint32_t corr;
    uint64_t t;
} filler;

static int fits(filler *f, size_t n) { return f->used + n <= BUF_SIZE; }

/* One launch's records; 0 when the buffer is full. */
static int fill_launch(filler *f)
{
    size_t need = sizeof(CUpti_ActivityExternalCorrelation) + 2 * sizeof(CUpti_ActivityAPI) +
                  sizeof(CUpti_ActivityKernel10) + sizeof(CUpti_ActivityMemcpy6) +
                  sizeof(CUpti_ActivityMemset4);
    if (!fits(f, need)) return 0;
    uint32_t c = ++f->corr;
    uint64_t t = (f->t += 5000);
    CUpti_ActivityExternalCorrelation e = {0};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    e.externalId = c / 4;
    e.correlationId = c;
    memcpy(f->buf + f->used, &e, sizeof e);
    f->used += sizeof e;
    CUpti_ActivityAPI a = {0};
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = t;
    a.end = t + 3000;
    a.processId = 100;
    a.threadId = 101 + c % 4;
    a.correlationId = c;
    memcpy(f->buf + f->used, &a, sizeof a);
    f->used += sizeof a;
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 307;
    a.start = t + 100;
    a.end = t + 2900;
    memcpy(f->buf + f->used, &a, sizeof a);
    f->used += sizeof a;
    CUpti_ActivityKernel10 k = {0};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = t + 4000;
    k.end = t + 4800;
    k.streamId = 7 + c % 2;
    k.gridX = 1 + (int32_t)(c % 16);
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.registersPerThread = 32;
    k.correlationId = c;
    k.name = kernel_names[c % 4];
    memcpy(f->buf + f->used, &k, sizeof k);
    f->used += sizeof k;
    f->records += 4;
    if (c % 8 == 0) {
        CUpti_ActivityMemcpy6 m = {0};
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
        m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m.bytes = 1 << 20;
        m.start = t + 4800;
        m.end = t + 4900;
        m.streamId = 7;
        m.correlationId = c;
        memcpy(f->buf + f->used, &m, sizeof m);
        f->used += sizeof m;
        CUpti_ActivityMemset4 z = {0};
        z.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        z.bytes = 4096;
        z.start = t + 4900;
        z.end = t + 4950;
        z.streamId = 7;
        z.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        z.correlationId = c;
        memcpy(f->buf + f->used, &z, sizeof z);
        f->used += sizeof z;
        f->records += 2;
    }
    return 1;
}

static void decode_one(dt_session *s, uint8_t *buffer, size_t valid)
{
    dt_cupti_decode_buffer(s, buffer, valid, dt_cupti_next_record);
}

int bench_decode_cupti(size_t records, int rounds)
{
    /* 32 buffers (128 MiB, far beyond the caches), cycled */
    uint8_t *bufs[BUF_COUNT];
    size_t valid[BUF_COUNT], recs[BUF_COUNT];
    filler f = {0};
    f.t = T0;
    for (uint32_t i = 0; i < BUF_COUNT; i++) {
        bufs[i] = aligned_alloc(8, BUF_SIZE);
        if (!bufs[i]) { fprintf(stderr, "cupti bench: out of memory\n"); return 1; }
        f.buf = bufs[i];
        f.used = f.records = 0;
        while (fill_launch(&f)) {}
        valid[i] = f.used;
        recs[i] = f.records;
    }
    decode_input in = {
        .vendor = "cupti", .buffers = bufs, .valid = valid, .records_in = recs, .buffer_count = BUF_COUNT,
        .records = records, .capture = DT_CAPTURE_ALL, .decode = decode_one,
    };
    decode_bench_run(&in, rounds);
    for (uint32_t i = 0; i < BUF_COUNT; i++) free(bufs[i]);
    return 0;
}

#else
int bench_decode_cupti(size_t records, int rounds)
{
    (void)records;
    (void)rounds;
    printf("cupti: built without CUPTI headers: set CUDA_HOME and rebuild\n");
    return 0;
}
#endif
