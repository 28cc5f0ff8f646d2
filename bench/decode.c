/*
 * Decode benchmark: how fast vendor activity buffers become stored events,
 * and what the API-enter callback adds to each runtime call.
 *
 *   bench_decode [records] [rounds]     (default 10,000,000 and 5)
 *
 * TOPSPTI: buffers in the emulator's format (devtrace's declaration,
 * topspti_abi.h), records back to back, built in memory, then decoded and
 * stored through the backend's own decode path by the shared harness
 * (decode_harness.c), beside a memcpy of the same bytes in the same round.
 * Then the API-enter callback, called the way TOPSPTI calls it, beside an
 * empty callback. Other vendors' parts (decode_cupti.c) follow with the same
 * record count. Prints figures only.
 */
#include "decode_harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/topspti_abi.h"

DT_HIDDEN void dt_topspti_decode_for_test(dt_session *s, uint8_t *buffer, size_t valid,
                                          topsptiActivityGetNextRecord_fn next);
DT_HIDDEN void dt_topspti_api_callback(void *userdata, Topspti_CallbackDomain domain,
                                       Topspti_CallbackId cbid, const void *cbdata);
DT_HIDDEN int dt_topspti_sdk_layout(void);

/* Other vendors' decode benchmarks, linked into the same program. */
int bench_decode_cupti(size_t records, int rounds) __attribute__((weak));

#define now_s bench_now_s

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case TOPSPTI_ACTIVITY_KIND_KERNEL: return sizeof(Topspti_ActivityKernel);
    case TOPSPTI_ACTIVITY_KIND_MEMCPY: return sizeof(Topspti_ActivityMemcpy);
    case TOPSPTI_ACTIVITY_KIND_MEMSET: return sizeof(Topspti_ActivityMemset);
    case TOPSPTI_ACTIVITY_KIND_RUNTIME:
    case TOPSPTI_ACTIVITY_KIND_DRIVER: return sizeof(Topspti_ActivityAPI);
    default: return 0;
    }
}

/* The emulator's topsptiActivityGetNextRecord over devtrace's declaration. */
static TopsptiResult next_record(uint8_t *buffer, size_t valid, Topspti_Activity **record)
{
    size_t off = 0;
    uint8_t *cur = (uint8_t *)*record;
    if (cur) {
        size_t at = (size_t)(cur - buffer);
        uint32_t kind;
        memcpy(&kind, cur, sizeof kind);
        size_t sz = record_size(kind);
        if (sz == 0) return TOPSPTI_ERROR_INVALID_KIND;
        off = at + sz;
    }
    if (off >= valid) return TOPSPTI_ERROR_MAX_LIMIT_REACHED;
    uint32_t kind;
    if (valid - off < 4) return TOPSPTI_ERROR_INVALID_PARAMETER;
    memcpy(&kind, buffer + off, sizeof kind);
    size_t sz = record_size(kind);
    if (sz == 0) return TOPSPTI_ERROR_INVALID_KIND;
    if (sz > valid - off) return TOPSPTI_ERROR_INVALID_PARAMETER;
    *record = (Topspti_Activity *)(void *)(buffer + off);
    return TOPSPTI_SUCCESS;
}

typedef struct buffer { uint8_t *data; size_t valid, records; } buffer;

#define BUFFER_SIZE (4u << 20)
#define KERNEL_NAMES 64

static char kernel_names[KERNEL_NAMES][64];

/* A mix per 10 records: 4 runtime API calls, 4 kernels (64 names, half of
   them mangled), 1 memcpy, 1 memset. */
static size_t build(buffer **out, size_t records, size_t *bytes_total)
{
    for (int i = 0; i < KERNEL_NAMES; i++) {
        if (i % 2)
            snprintf(kernel_names[i], sizeof kernel_names[i], "_Z%zu" "gemm_kernel_%dPfS_S_i",
                     strlen("gemm_kernel_") + (i < 10 ? 1 : 2), i);
        else
            snprintf(kernel_names[i], sizeof kernel_names[i], "elementwise_kernel_%d", i);
    }
    size_t cap = 16, n = 0;
    buffer *bufs = malloc(cap * sizeof *bufs);
    uint8_t *cur = NULL;
    size_t used = 0, made = 0, total = 0, in_buffer = 0;
    uint64_t t = 1000000000ull, corr = 1;
    while (made < records) {
        if (!cur || used + 128 > BUFFER_SIZE) {
            if (cur) { bufs[n - 1].valid = used; total += used; }
            if (cur) bufs[n - 1].records = in_buffer;
            in_buffer = 0;
            if (n == cap) bufs = realloc(bufs, (cap *= 2) * sizeof *bufs);
            cur = aligned_alloc(8, BUFFER_SIZE);
            if (!bufs || !cur) { fprintf(stderr, "out of memory\n"); exit(1); }
            bufs[n++].data = cur;
            used = 0;
        }
        unsigned pick = (unsigned)(made % 10);
        t += 1500;
        if (pick < 4) {
            Topspti_ActivityAPI a;
            memset(&a, 0, sizeof a);
            a.kind = TOPSPTI_ACTIVITY_KIND_RUNTIME;
            a.cbid = pick == 3 ? TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyAsync
                               : TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel;
            a.start = t;
            a.end = t + 800;
            a.processId = 4242;
            a.threadId = 4243 + (uint32_t)(made % 4);
            a.correlationId = (uint32_t)corr;
            memcpy(cur + used, &a, sizeof a);
            used += sizeof a;
        } else if (pick < 8) {
            Topspti_ActivityKernel k;
            memset(&k, 0, sizeof k);
            k.kind = TOPSPTI_ACTIVITY_KIND_KERNEL;
            k.start = t;
            k.end = t + 1200;
            k.queued = t - 300;
            k.submitted = t - 100;
            k.deviceId = (uint32_t)(made % 2);
            k.streamId = (uint32_t)(made % 8);
            k.contextId = 1;
            k.gridX = 128; k.gridY = 1; k.gridZ = 1;
            k.blockX = 256; k.blockY = 1; k.blockZ = 1;
            k.registersPerThread = 32;
            k.correlationId = (uint32_t)corr++;
            k.name = kernel_names[made % KERNEL_NAMES];
            memcpy(cur + used, &k, sizeof k);
            used += sizeof k;
        } else if (pick == 8) {
            Topspti_ActivityMemcpy m;
            memset(&m, 0, sizeof m);
            m.kind = TOPSPTI_ACTIVITY_KIND_MEMCPY;
            m.copyKind = TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOD;
            m.srcKind = TOPSPTI_ACTIVITY_MEMORY_KIND_PINNED;
            m.dstKind = TOPSPTI_ACTIVITY_MEMORY_KIND_DEVICE;
            m.flags = TOPSPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
            m.bytes = 1 << 20;
            m.start = t;
            m.end = t + 900;
            m.streamId = 1;
            m.correlationId = (uint32_t)corr++;
            memcpy(cur + used, &m, sizeof m);
            used += sizeof m;
        } else {
            Topspti_ActivityMemset m;
            memset(&m, 0, sizeof m);
            m.kind = TOPSPTI_ACTIVITY_KIND_MEMSET;
            m.value = 0;
            m.bytes = 1 << 16;
            m.start = t;
            m.end = t + 400;
            m.streamId = 2;
            m.memoryKind = TOPSPTI_ACTIVITY_MEMORY_KIND_DEVICE;
            m.correlationId = (uint32_t)corr++;
            memcpy(cur + used, &m, sizeof m);
            used += sizeof m;
        }
        made++;
        in_buffer++;
    }
    if (cur) { bufs[n - 1].valid = used; total += used; bufs[n - 1].records = in_buffer; }
    *out = bufs;
    *bytes_total = total;
    return n;
}

static void empty_callback(void *userdata, Topspti_CallbackDomain domain, Topspti_CallbackId cbid,
                           const void *cbdata)
{
    __asm__ __volatile__("" ::"r"(cbdata) : "memory");
}

static topsptiActivityGetNextRecord_fn g_next = next_record;

static void decode_one(dt_session *s, uint8_t *data, size_t valid)
{
    dt_topspti_decode_for_test(s, data, valid, g_next);
}

static void bench_topspti(size_t records, int rounds)
{
    if (dt_topspti_sdk_layout()) {
        printf("topspti: built with the SDK layout; the emulator-format benchmark does not apply\n");
        return;
    }
    size_t bytes = 0;
    buffer *bufs = NULL;
    double t0 = now_s();
    size_t n = build(&bufs, records, &bytes);
    printf("topspti: built %zu records in %zu buffers (%.1f MiB) in %.2f s\n", records, n,
           (double)bytes / (1 << 20), now_s() - t0);
    uint8_t **data = malloc(n * sizeof *data);
    size_t *valid = malloc(n * sizeof *valid), *count = malloc(n * sizeof *count);
    if (!data || !valid || !count) return;
    for (size_t i = 0; i < n; i++) {
        data[i] = bufs[i].data;
        valid[i] = bufs[i].valid;
        count[i] = bufs[i].records;
    }
    decode_input in = {
        .vendor = "topspti", .buffers = data, .valid = valid, .records_in = count, .buffer_count = n,
        .records = records, .capture = DT_CAPTURE_DEFAULT, .decode = decode_one,
    };
    decode_bench_run(&in, rounds);
    for (size_t i = 0; i < n; i++) free(bufs[i].data);
    free(bufs);
    free(data);
    free(valid);
    free(count);

    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    dt_session *s = NULL;
    /* The API-enter callback, called as TOPSPTI calls it, inside a running
       session with a host operation on the stack. */
    c.calibration_period_ms = 0;
    if (dt_session_create(&c, &s) != DT_OK || dt_session_start(s) != DT_OK) {
        fprintf(stderr, "%s\n", dt_last_error());
        return;
    }
    dt_external_push(77);
    const size_t calls = 10000000;
    Topspti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = TOPSPTI_API_ENTER;
    void (*volatile fn)(void *, Topspti_CallbackDomain, Topspti_CallbackId, const void *);
    fn = empty_callback;
    t0 = now_s();
    for (size_t i = 0; i < calls; i++) {
        d.correlationId = (uint32_t)i + 1;
        fn(NULL, TOPSPTI_CB_DOMAIN_RUNTIME_API, TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel, &d);
    }
    double t_empty = now_s() - t0;
    fn = dt_topspti_api_callback;
    t0 = now_s();
    for (size_t i = 0; i < calls; i++) {
        d.correlationId = (uint32_t)i + 1;
        fn(NULL, TOPSPTI_CB_DOMAIN_RUNTIME_API, TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel, &d);
    }
    double t_enter = now_s() - t0;
    dt_external_pop(NULL);
    dt_session_stop(s);
    printf("topspti: API-enter callback %.1f ns/call, empty callback %.1f ns/call: %.1f ns added per "
           "API call (target <= 50)\n",
           t_enter / (double)calls * 1e9, t_empty / (double)calls * 1e9,
           (t_enter - t_empty) / (double)calls * 1e9);
    dt_session_destroy(s);
}

int main(int argc, char **argv)
{
    size_t records = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000000u;
    if (records == 0) records = 10000000u;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    bench_topspti(records, rounds);
    if (bench_decode_cupti) return bench_decode_cupti(records, rounds);
    return 0;
}
