/*
 * CUPTI decode benchmark: records per second from completed activity
 * buffers to stored events, through the backend's decode path, beside a
 * memcpy of the same bytes. Buffers are CUPTI layouts (the toolkit's
 * structs) in the mix a launch-bound CUDA program produces: per launch an
 * external-correlation, a runtime and a driver API record and a kernel, with
 * a memcpy and a memset every eighth launch. External-id links are logged
 * while decoding and enter the correlation map at the end of each pass, as a
 * recording does at stop; that time is included.
 *
 * DEVTRACE_BENCH_RECORDS sets the record count (default 10,000,000).
 */
#include "dt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_decode_cupti(void);

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

#include "backends/cupti_backend.h"

/* Fills the correlation map from the logged links, as dt_session_stop does. */
DT_HIDDEN void dt_corr_merge_chunks(dt_session *s, int keep);

#define BUF_SIZE (4u << 20)
#define BUF_COUNT 32u
#define T0 UINT64_C(1790000000000000000)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

int bench_decode_cupti(void)
{
    const char *env = getenv("DEVTRACE_BENCH_RECORDS");
    size_t target = env ? (size_t)strtoull(env, NULL, 10) : 10000000u;
    if (target == 0) target = 10000000u;

    uint8_t *bufs[BUF_COUNT];
    size_t valid[BUF_COUNT], recs[BUF_COUNT];
    filler f = {0};
    f.t = T0;
    size_t bytes_all = 0, records_all = 0;
    for (uint32_t i = 0; i < BUF_COUNT; i++) {
        bufs[i] = aligned_alloc(8, BUF_SIZE);
        if (!bufs[i]) { fprintf(stderr, "cupti bench: out of memory\n"); return 1; }
        f.buf = bufs[i];
        f.used = f.records = 0;
        while (fill_launch(&f)) {}
        valid[i] = f.used;
        recs[i] = f.records;
        bytes_all += f.used;
        records_all += f.records;
    }

    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_ALL;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) != DT_OK) { fprintf(stderr, "cupti bench: %s\n", dt_last_error()); return 1; }

    /* The buffers, cycled until the target count, decoded and stored: once
       into a fresh session (the store and the correlation map grow as they
       go), then again into the same session with its store emptied (the
       steady state of a long recording). */
    size_t decoded = 0, bytes = 0, passes = 0;
    double t_decode = 0;
    for (int pass = 0; pass < 2; pass++) {
        s->store.count = 0;
        decoded = bytes = passes = 0;
        double t0 = now_s();
        for (uint32_t i = 0; decoded < target; i = (i + 1) % BUF_COUNT) {
            dt_cupti_decode_buffer(s, bufs[i], valid[i], dt_cupti_next_record);
            decoded += recs[i];
            bytes += valid[i];
            passes++;
        }
        double t_links = now_s();
        dt_session_lock(s); /* what dt_session_stop does with the logged links */
        dt_corr_merge_chunks(s, 1);
        dt_session_unlock(s);
        t_links = now_s() - t_links;
        t_decode = now_s() - t0;
        double t_callback = t_decode - t_links;
        printf("cupti: %s: %zu records (%.1f MB in %zu buffers of 4 MiB): decoded and stored in %.3f s "
               "(as in CUPTI's completion callback): %.1f M records/s (target >= 20), %.1f ns/record; "
               "correlation map filled at stop in %.3f s; overall %.1f M records/s; %zu events kept, "
               "%llu lost\n",
               pass ? "warm" : "cold", decoded, (double)bytes / 1e6, passes, t_callback,
               (double)decoded / t_callback / 1e6, t_callback / (double)decoded * 1e9, t_links,
               (double)decoded / t_decode / 1e6, s->store.count, (unsigned long long)dt_session_loss_total(s));
    }

    uint8_t *dst = aligned_alloc(8, BUF_SIZE);
    if (!dst) return 1;
    size_t copied = 0;
    double t0 = now_s();
    for (uint32_t i = 0; copied < bytes; i = (i + 1) % BUF_COUNT) {
        memcpy(dst, bufs[i], valid[i]);
        copied += valid[i];
        __asm__ __volatile__("" : : "r"(dst) : "memory");
    }
    double t_copy = now_s() - t0;

    printf("cupti: memcpy of the same bytes %.3f s (%.1f GB/s): warm decoding and linking cost %.1fx a "
           "copy\n", t_copy, (double)copied / t_copy / 1e9, t_decode / t_copy);
    free(dst);
    for (uint32_t i = 0; i < BUF_COUNT; i++) free(bufs[i]);
    dt_session_destroy(s);
    (void)records_all;
    (void)bytes_all;
    return 0;
}

#else
int bench_decode_cupti(void)
{
    printf("cupti: built without CUPTI headers: set CUDA_HOME and rebuild\n");
    return 0;
}
#endif
