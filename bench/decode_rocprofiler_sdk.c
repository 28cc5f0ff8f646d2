/*
 * The rocprofiler-sdk row of bench_decode: buffer callbacks as the SDK
 * makes them (an array of record headers and the self-sizing records they
 * point to, in one block) decoded by the backend's decoder into a store,
 * measured by the shared harness beside a memcpy of the same block.
 *
 * Two mixes, as for the engine's vendors (DEVTRACE_BENCH_MIX=api|launch):
 *   api     per 10 records: 4 HIP API calls, 4 kernel dispatches (64
 *           kernels, half of them mangled), 1 memory copy, 1 memset (a fill
 *           kernel's dispatch);
 *   launch  per launch a HIP API call and its dispatch, carrying the
 *           External id devtrace pushed, with a copy every eighth launch.
 * hipLaunchKernel's records are matched with their dispatches, as in a
 * session that records API calls and kernels.
 */
#include "backends/rocprofiler_sdk.h"
#include "decode_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_decode_rocprofiler_sdk(size_t records, int rounds);

#define BLOCK_SIZE (4u << 20)
#define KERNELS 64
#define GPU(d) (0x2000u + (uint64_t)(d))
#define CPU_AGENT 0x1000u
#define FILL_KERNEL (KERNELS + 1)

static dt_rsdk_decoder g_decoder;
static char g_names[KERNELS][64];
static const char *g_api_names[8] = {"hipApiName", "hipLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                                     "hipStreamSynchronize", "hipGetDevice", "hipSetDevice", "hipEventRecord"};

/* One block: the record count, the header pointers, the headers, then the
   records. */
typedef struct block_writer {
    uint8_t **blocks;
    size_t *valid, *count;
    size_t n, cap;
    uint8_t *cur;
    size_t used, in_block, records;
    rsdk_record_header **list;
    rsdk_record_header *hdrs;
    uint8_t *data;
} block_writer;

#define PER_BLOCK 16384

static void close_block(block_writer *w)
{
    if (!w->cur) return;
    memcpy(w->cur, &w->in_block, sizeof w->in_block);
    w->valid[w->n - 1] = (size_t)(w->data + w->used - w->cur);
    w->count[w->n - 1] = w->in_block;
    w->cur = NULL;
}

static void *record(block_writer *w, uint32_t kind, size_t size)
{
    size_t head = 8 + PER_BLOCK * (sizeof(rsdk_record_header *) + sizeof(rsdk_record_header));
    if (w->cur && (w->in_block == PER_BLOCK || head + w->used + size > BLOCK_SIZE)) close_block(w);
    if (!w->cur) {
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 16;
            w->blocks = realloc(w->blocks, w->cap * sizeof *w->blocks);
            w->valid = realloc(w->valid, w->cap * sizeof *w->valid);
            w->count = realloc(w->count, w->cap * sizeof *w->count);
        }
        uint8_t *b = aligned_alloc(64, BLOCK_SIZE);
        if (!w->blocks || !w->valid || !w->count || !b) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        w->blocks[w->n++] = b;
        w->cur = b;
        w->list = (rsdk_record_header **)(b + 8);
        w->hdrs = (rsdk_record_header *)(b + 8 + PER_BLOCK * sizeof(rsdk_record_header *));
        w->data = b + head;
        w->used = w->in_block = 0;
    }
    uint8_t *r = w->data + w->used;
    rsdk_record_header *h = &w->hdrs[w->in_block];
    h->category = RSDK_BUFFER_CATEGORY_TRACING;
    h->kind = kind;
    h->payload = r;
    w->list[w->in_block++] = h;
    w->used += size;
    w->records++;
    return r;
}

static void api(block_writer *w, int32_t op, uint64_t t, uint64_t corr, uint64_t external)
{
    rsdk_api_record *r = record(w, RSDK_BUFFER_HIP_RUNTIME_API, sizeof *r);
    *r = (rsdk_api_record){sizeof *r, RSDK_BUFFER_HIP_RUNTIME_API, op, {corr, {.value = external}}, t, t + 800,
                           4243 + corr % 4};
}

static void dispatch(block_writer *w, uint64_t kernel, uint64_t t, uint64_t corr, uint64_t external, size_t i)
{
    rsdk_kernel_dispatch_record *r = record(w, RSDK_BUFFER_KERNEL_DISPATCH, sizeof *r);
    memset(r, 0, sizeof *r);
    r->size = sizeof *r;
    r->kind = RSDK_BUFFER_KERNEL_DISPATCH;
    r->operation = RSDK_KERNEL_DISPATCH_COMPLETE;
    r->correlation_id.internal = corr;
    r->correlation_id.external.value = external;
    r->start_timestamp = t;
    r->end_timestamp = t + 1200;
    r->dispatch_info.size = offsetof(rsdk_kernel_dispatch_info, reserved_padding);
    r->dispatch_info.agent_id.handle = GPU(i % 2);
    r->dispatch_info.queue_id = 0x7f0000000000ull + (i % 8) * 256;
    r->dispatch_info.kernel_id = kernel;
    r->dispatch_info.workgroup_size = (rsdk_dim3){256, 1, 1};
    r->dispatch_info.grid_size = (rsdk_dim3){256 * (uint32_t)(1 + i % 16), 1, 1};
}

static void copy(block_writer *w, uint64_t t, uint64_t corr, uint64_t external)
{
    rsdk_memory_copy_record *r = record(w, RSDK_BUFFER_MEMORY_COPY, sizeof *r);
    *r = (rsdk_memory_copy_record){sizeof *r, RSDK_BUFFER_MEMORY_COPY, RSDK_MEMORY_COPY_HOST_TO_DEVICE,
                                   {corr, {.value = external}}, 4243, t, t + 900, {GPU(0)}, {CPU_AGENT}, 1 << 20,
                                   0, 0};
}

static void build(block_writer *w, int launch_mix, size_t target)
{
    uint64_t t = UINT64_C(1790000000000000000), corr = 0;
    for (size_t i = 0; w->records < target; i++) {
        t += 5000;
        if (launch_mix) {
            uint64_t c = ++corr, ext = c / 4 + 1;
            api(w, 1, t, c, ext);
            dispatch(w, 1 + i % KERNELS, t + 4000, c, ext, i);
            if (c % 8 == 0) copy(w, t + 4800, c, ext);
        } else {
            unsigned pick = (unsigned)(i % 10);
            if (pick < 4) api(w, (int32_t)(1 + pick), t, corr + 1, 0);
            else if (pick < 8) dispatch(w, 1 + i % KERNELS, t, ++corr, 0, i);
            else if (pick == 8) copy(w, t, ++corr, 0);
            else dispatch(w, FILL_KERNEL, t, ++corr, 0, i);
        }
    }
    close_block(w);
}

static uint8_t *g_first_block;

static void decode_block(dt_session *s, uint8_t *block, size_t valid)
{
    (void)valid;
    size_t n;
    /* each run decodes the same correlation ids again: the launches the
       last one left are forgotten, as a session's stop does */
    if (block == g_first_block) dt__rsdk_decoder_take_awaiting(&g_decoder);
    memcpy(&n, block, sizeof n);
    dt__rsdk_decode(&g_decoder, s, (rsdk_record_header *const *)(block + 8), n);
}

static void setup(void)
{
    dt__rsdk_decoder_init(&g_decoder, RSDK_VERSION(0, 6, 0));
    char missing[256] = "";
    dt_device_props p;
    for (int d = 0; d < 2; d++) {
        rsdk_agent a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.id.handle = GPU(d);
        a.type = RSDK_AGENT_TYPE_GPU;
        dt__rsdk_decoder_add_agent(&g_decoder, &a, sizeof a, &p, missing, sizeof missing);
    }
    for (int k = 0; k <= KERNELS; k++) {
        if (k < KERNELS) {
            if (k % 2)
                snprintf(g_names[k], sizeof g_names[k], "_Z%zugemm_kernel_%dPfS_S_i",
                         strlen("gemm_kernel_") + (k < 10 ? 1 : 2), k);
            else
                snprintf(g_names[k], sizeof g_names[k], "elementwise_kernel_%d", k);
        }
        rsdk_kernel_symbol sym;
        memset(&sym, 0, sizeof sym);
        sym.size = sizeof sym;
        sym.kernel_id = (uint64_t)k + 1;
        sym.kernel_name = k < KERNELS ? g_names[k] : "__amd_rocclr_fillBufferAligned";
        sym.arch_vgpr_count = 32;
        if (dt__rsdk_decoder_add_kernel(&g_decoder, &sym) != 0) exit(1);
    }
    g_decoder.api_names = dt__malloc(sizeof g_api_names);
    if (!g_decoder.api_names) exit(1);
    memcpy(g_decoder.api_names, g_api_names, sizeof g_api_names);
    g_decoder.api_name_count = sizeof g_api_names / sizeof g_api_names[0];
    dt_config c;
    dt_config_init(&c);
    static const int32_t launch_ops[] = {1}; /* hipLaunchKernel */
    if (dt__rsdk_decoder_match_launches(&g_decoder, launch_ops, 1, c.buffer_size) != 0) exit(1);
}

static void bench_mix(int launch_mix, size_t records, int rounds)
{
    block_writer w;
    memset(&w, 0, sizeof w);
    build(&w, launch_mix, records);
    g_first_block = w.blocks[0];
    char label[64];
    snprintf(label, sizeof label, "rocprofiler_sdk (%s mix)", launch_mix ? "launch" : "api");
    decode_input in = {
        .vendor = label, .buffers = w.blocks, .valid = w.valid, .records_in = w.count, .buffer_count = w.n,
        .records = w.records, .capture = DT_CAPTURE_ALL, .decode = decode_block,
    };
    decode_bench_run(&in, rounds);
    for (size_t i = 0; i < w.n; i++) free(w.blocks[i]);
    free(w.blocks);
    free(w.valid);
    free(w.count);
}

void bench_decode_rocprofiler_sdk(size_t records, int rounds)
{
    setup();
    printf("rocprofiler_sdk: layouts: rocprofiler-sdk 0.4.0 .. 1.0.0 records, header arrays of %d\n", PER_BLOCK);
    const char *mix = getenv("DEVTRACE_BENCH_MIX");
    if (!mix || strcmp(mix, "api") == 0) bench_mix(0, records, rounds);
    if (!mix || strcmp(mix, "launch") == 0) bench_mix(1, records, rounds);
    dt__rsdk_decoder_free(&g_decoder);
}
