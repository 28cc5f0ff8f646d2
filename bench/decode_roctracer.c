/*
 * roctracer's row of the decode benchmark (bench/decode.c): buffers laid
 * out as roctracer's pool fills them (64-byte records from the start, each
 * dispatch's kernel name copied in from the end), decoded by the backend's
 * own decoder with the launch arguments the API callbacks took put in its
 * table first, as the buffer callback does. Two mixes, as the engine's:
 *   api     per 10 records: 4 HIP API calls, 4 kernels (64 names, half of
 *           them mangled), 1 copy, 1 fill;
 *   launch  per launch an EXT_API record, its API record and the kernel,
 *           with a copy and a fill every eighth launch.
 * Measured by the shared harness (decode_harness.h).
 */
#include "backends/roctracer.h"
#include "decode_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_SIZE (4u << 20)
#define KERNEL_NAMES 64

void bench_decode_roctracer(size_t records, int rounds);

typedef struct writer {
    uint8_t **bufs;
    size_t *valid, *recs, *tail;
    /* per buffer, the arguments the API callbacks took for its launches,
       as the per-thread logs hold them */
    dt_rt_args **args;
    size_t *nargs, *args_cap;
    size_t n, cap, records;
} writer;

static char names[KERNEL_NAMES][64];

static void new_buffer(writer *w)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->bufs = realloc(w->bufs, w->cap * sizeof *w->bufs);
        w->valid = realloc(w->valid, w->cap * sizeof *w->valid);
        w->recs = realloc(w->recs, w->cap * sizeof *w->recs);
        w->tail = realloc(w->tail, w->cap * sizeof *w->tail);
        w->args = realloc(w->args, w->cap * sizeof *w->args);
        w->nargs = realloc(w->nargs, w->cap * sizeof *w->nargs);
        w->args_cap = realloc(w->args_cap, w->cap * sizeof *w->args_cap);
    }
    uint8_t *b = aligned_alloc(64, BUFFER_SIZE);
    if (!w->bufs || !w->valid || !w->recs || !w->tail || !w->args || !w->nargs || !w->args_cap || !b) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    w->bufs[w->n] = b;
    w->args[w->n] = NULL;
    w->valid[w->n] = w->recs[w->n] = w->tail[w->n] = w->nargs[w->n] = w->args_cap[w->n] = 0;
    w->n++;
}

/* A zeroed record, with room for `extra` bytes of name at the buffer's end. */
static activity_record_t *record(writer *w, size_t extra)
{
    size_t k = w->n - 1;
    if (!w->n || w->valid[k] + DT_RT_RECORD_SIZE + w->tail[k] + extra > BUFFER_SIZE) {
        new_buffer(w);
        k = w->n - 1;
    }
    activity_record_t *r = (activity_record_t *)(w->bufs[k] + w->valid[k]);
    memset(r, 0, sizeof *r);
    w->valid[k] += DT_RT_RECORD_SIZE;
    w->recs[k]++;
    w->records++;
    return r;
}

static void api(writer *w, uint32_t op, uint64_t t, uint64_t corr, uint32_t thread)
{
    activity_record_t *r = record(w, 0);
    r->domain = ACTIVITY_DOMAIN_HIP_API;
    r->op = op;
    r->correlation_id = corr;
    r->begin_ns = t;
    r->end_ns = t + 800;
    r->process_id = 4242;
    r->thread_id = thread;
}

static void kernel(writer *w, uint64_t t, uint64_t corr, size_t i)
{
    const char *name = names[i % KERNEL_NAMES];
    size_t len = strlen(name) + 1;
    activity_record_t *r = record(w, len);
    size_t k = w->n - 1;
    w->tail[k] += len;
    char *copy = (char *)w->bufs[k] + BUFFER_SIZE - w->tail[k];
    memcpy(copy, name, len);
    r->domain = ACTIVITY_DOMAIN_HIP_OPS;
    r->op = DT_RT_HIP_OP_DISPATCH;
    r->kind = DT_RT_CMD_KERNEL;
    r->correlation_id = corr;
    r->begin_ns = t;
    r->end_ns = t + 1200;
    r->device_id = (int)(i % 2);
    r->queue_id = i % 8;
    r->kernel_name = copy;
    if (w->nargs[k] == w->args_cap[k]) {
        w->args_cap[k] = w->args_cap[k] ? 2 * w->args_cap[k] : 4096;
        w->args[k] = realloc(w->args[k], w->args_cap[k] * sizeof *w->args[k]);
        if (!w->args[k]) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    dt_rt_args a = {.correlation = corr, .grid = {1 + (uint32_t)(i % 16), 1, 1}, .block = {256, 1, 1},
                    .what = DT_RT_ARGS_LAUNCH};
    w->args[k][w->nargs[k]++] = a;
}

static void copy_and_fill(writer *w, uint64_t t, uint64_t corr, int copy, int fill)
{
    if (copy) {
        activity_record_t *r = record(w, 0);
        r->domain = ACTIVITY_DOMAIN_HIP_OPS;
        r->op = DT_RT_HIP_OP_COPY;
        r->kind = DT_RT_CMD_WRITE;
        r->correlation_id = corr;
        r->begin_ns = t;
        r->end_ns = t + 900;
        r->queue_id = 1;
        r->bytes = 1 << 20;
    }
    if (fill) {
        activity_record_t *r = record(w, 0);
        r->domain = ACTIVITY_DOMAIN_HIP_OPS;
        r->op = DT_RT_HIP_OP_COPY;
        r->kind = DT_RT_CMD_FILL;
        r->correlation_id = corr;
        r->begin_ns = t + 1000;
        r->end_ns = t + 1400;
        r->queue_id = 2;
        r->bytes = 1 << 16;
    }
}

static void build(writer *w, int launch_mix, size_t target)
{
    uint64_t t = UINT64_C(7200000000000);
    uint64_t corr = 0;
    for (size_t i = 0; w->records < target; i++) {
        t += 5000;
        if (launch_mix) {
            uint64_t c = ++corr;
            activity_record_t *r = record(w, 0);
            r->domain = ACTIVITY_DOMAIN_EXT_API;
            r->op = ACTIVITY_EXT_OP_EXTERN_ID;
            r->correlation_id = c;
            r->external_id = c / 4;
            api(w, 107, t, c, 101 + (uint32_t)(c % 4));
            kernel(w, t + 4000, c, i);
            copy_and_fill(w, t + 4800, c, c % 8 == 0, c % 8 == 0);
        } else {
            unsigned pick = (unsigned)(i % 10);
            if (pick < 4) api(w, 107, t, corr + 1, 4243 + (uint32_t)(i % 4));
            else if (pick < 8) kernel(w, t, ++corr, i);
            else copy_and_fill(w, t, ++corr, pick == 8, pick == 9);
        }
    }
}

static const char *api_names[200];
static dt_rt_args_table g_args;
static const writer *g_writer;

/* As the backend's buffer callback: the arguments taken since the last
   buffer into the table, then the buffer. */
static void decode_buffer(dt_session *s, uint8_t *buffer, size_t valid)
{
    const writer *w = g_writer;
    size_t k = 0;
    while (w->bufs[k] != buffer) k++;
    for (size_t i = 0; i < w->nargs[k]; i++) dt__rt_args_put(&g_args, &w->args[k][i]);
    uint64_t unkept[3] = {0, 0, 0};
    dt_rt_decoder d = {.pool = buffer, .half = BUFFER_SIZE, .api_names = api_names, .api_name_count = 200,
                       .args = &g_args, .args_unkept = unkept};
    dt__rt_decode(&d, s, buffer, buffer + valid);
}

static void bench_mix(int launch_mix, size_t target, int rounds)
{
    writer w;
    memset(&w, 0, sizeof w);
    build(&w, launch_mix, target);
    g_writer = &w;
    char label[64];
    snprintf(label, sizeof label, "roctracer (%s mix)", launch_mix ? "launch" : "api");
    decode_input in = {
        .vendor = label, .buffers = w.bufs, .valid = w.valid, .records_in = w.recs, .buffer_count = w.n,
        .records = w.records, .capture = DT_CAPTURE_ALL, .decode = decode_buffer,
    };
    decode_bench_run(&in, rounds);
    dt__rt_args_free(&g_args);
    for (size_t i = 0; i < w.n; i++) {
        free(w.bufs[i]);
        free(w.args[i]);
    }
    free(w.bufs);
    free(w.valid);
    free(w.recs);
    free(w.tail);
    free(w.args);
    free(w.nargs);
    free(w.args_cap);
}

void bench_decode_roctracer(size_t records, int rounds)
{
    for (int i = 0; i < KERNEL_NAMES; i++) {
        if (i % 2)
            snprintf(names[i], sizeof names[i], "_Z%zugemm_kernel_%dPfS_S_i", strlen("gemm_kernel_") + (i < 10 ? 1 : 2),
                     i);
        else
            snprintf(names[i], sizeof names[i], "elementwise_kernel_%d", i);
    }
    api_names[107] = "hipLaunchKernel";
    printf("roctracer: layouts: roctracer 4.1 (64-byte records, kernel names in the buffer)\n");
    const char *mix = getenv("DEVTRACE_BENCH_MIX");
    if (!mix || strcmp(mix, "api") == 0) bench_mix(0, records, rounds);
    if (!mix || strcmp(mix, "launch") == 0) bench_mix(1, records, rounds);
}
