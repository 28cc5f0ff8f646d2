// A CUDA workload whose device activity is known exactly, recorded by
// devtrace through its C API in two sessions of one process:
//   tests/gpu/workload OUTDIR
// Writes OUTDIR/workload.json (the first session's trace) and
// OUTDIR/workload.truth.json (what the program did), then
// OUTDIR/workload2.json and OUTDIR/workload2.truth.json (a second session).
// tests/gpu/cuda_findings.py judges each trace against its truth: exact
// kernel counts by name, launch calls by API and the kernels each one
// launched (flows), copy and memset sizes, allocations and frees, External
// ids, and kernel durations against cudaEvent timings of the same launches.
//
// Session 1, started before the first CUDA call:
//   - KERNELS_PER_STREAM <<<>>> launches of a C++ template kernel and of a C
//     kernel on each of two streams inside nested user ranges (outer > inner),
//     one HtoD and one DtoH copy and a memset (sizes all different) in outer;
//   - one of each launch API: cudaLaunchKernelExC, cuLaunchKernel and
//     cuLaunchKernelEx (through cudaGetDriverEntryPointByVersion: no -lcuda),
//     cudaLaunchCooperativeKernel, a graph of two kernel nodes launched twice;
//   - SPIN_LAUNCHES kernels of SPIN_US each between two cudaEvents;
//   - cudaMalloc/cudaFree of three sizes and a cudaMallocAsync/cudaFreeAsync;
//   - one kernel outside any range.
// Session 2: SECOND_KERNELS <<<>>> launches, one HtoD copy, one allocation.
// Exit status 0 when the CUDA calls and devtrace's calls succeeded (the
// judging is cuda_findings.py's); 2 a CUDA error, 3 a devtrace error.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "devtrace/devtrace.h"

#define KERNELS_PER_STREAM 50
#define EACH_API 5         /* launches through each of the other launch APIs */
#define COOPERATIVE 3
#define GRAPH_NODES 2
#define GRAPH_LAUNCHES 2
#define SPIN_LAUNCHES 20
#define SPIN_US 300
#define SECOND_KERNELS 25
#define N (1 << 20)
#define HTOD_BYTES ((size_t)N * sizeof(float))
#define DTOH_BYTES ((size_t)(N / 4) * sizeof(float) + 4096)
#define MEMSET_BYTES ((size_t)(N / 2) * sizeof(float) + 512)
#define SECOND_HTOD_BYTES ((size_t)(N / 8) * sizeof(float) + 256)

template <typename T>
__global__ void scale(T *x, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}

extern "C" __global__ void add_one(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// One kernel per launch API, so that the trace's kernels say which API
// launched them.
#define MARKED(name)                                                           \
    extern "C" __global__ void name(float *x, int n)                          \
    {                                                                          \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                         \
        if (i < n) x[i] += 2.0f;                                               \
    }
MARKED(k_exc)
MARKED(k_cu)
MARKED(k_cuex)
MARKED(k_coop)
MARKED(k_graph)
MARKED(k_second)

// Runs for ns nanoseconds of the GPU's global timer.
extern "C" __global__ void spin(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

#define CUDA(call)                                                             \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));        \
            exit(2);                                                           \
        }                                                                      \
    } while (0)
#define CU(call)                                                               \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS) {                                              \
            fprintf(stderr, "%s: CUresult %d\n", #call, (int)r_);              \
            exit(2);                                                           \
        }                                                                      \
    } while (0)
#define DT(call)                                                               \
    do {                                                                       \
        dt_status s_ = (call);                                                 \
        if (s_ != DT_OK) {                                                     \
            fprintf(stderr, "%s: %s: %s\n", #call, dt_status_name(s_), dt_last_error()); \
            exit(3);                                                           \
        }                                                                      \
    } while (0)

typedef CUresult (*cu_launch_kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void **, void **);
typedef CUresult (*cu_launch_kernel_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);

static void *driver_entry(const char *symbol)
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    CUDA(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) {
        fprintf(stderr, "driver entry point %s not found\n", symbol);
        exit(2);
    }
    return fn;
}

static dt_session *start_session(const char *path)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "cupti";
    cfg.output_path = path;
    dt_session *s = nullptr;
    DT(dt_session_create(&cfg, &s));
    DT(dt_session_start(s));
    return s;
}

static void finish_session(dt_session *s, const std::string &truth_path, const std::string &truth)
{
    DT(dt_session_stop(s));
    DT(dt_session_write(s, NULL, DT_FORMAT_JSON));
    FILE *f = fopen(truth_path.c_str(), "w");
    if (!f || fputs(truth.c_str(), f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", truth_path.c_str());
        exit(3);
    }
    printf("%s: %zu events, %llu lost\n", truth_path.c_str(), dt_session_event_count(s),
           (unsigned long long)dt_session_loss_total(s));
    dt_session_destroy(s);
}

static std::string alloc_json(const void *p, size_t bytes)
{
    char b[96];
    snprintf(b, sizeof b, "{\"address\":%llu,\"bytes\":%zu}", (unsigned long long)(uintptr_t)p, bytes);
    return b;
}

int main(int argc, char **argv)
{
    std::string dir = argc > 1 ? argv[1] : ".";
    std::string trace1 = dir + "/workload.json", trace2 = dir + "/workload2.json";
    // Before the first CUDA call: CUPTI must be armed before the context.
    dt_session *s = start_session(trace1.c_str());

    float *d = nullptr, *h = nullptr;
    cudaStream_t st[2];
    CUDA(cudaMalloc(&d, HTOD_BYTES));
    CUDA(cudaMallocHost(&h, HTOD_BYTES));
    for (int i = 0; i < 2; i++) CUDA(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    for (int i = 0; i < N; i++) h[i] = 1.0f;
    CUDA(cudaDeviceSynchronize());
    std::vector<std::string> allocs = {alloc_json(d, HTOD_BYTES)};

    // <<<>>> inside nested ranges, two streams; a copy each way and a memset
    uint64_t outer = 0, inner = 0;
    DT(dt_range_push("outer", &outer));
    CUDA(cudaMemcpyAsync(d, h, HTOD_BYTES, cudaMemcpyHostToDevice, st[0]));
    CUDA(cudaStreamSynchronize(st[0]));
    DT(dt_range_push("inner", &inner));
    for (int k = 0; k < KERNELS_PER_STREAM; k++) {
        for (int i = 0; i < 2; i++) {
            scale<float><<<N / 256, 256, 0, st[i]>>>(d, 1.0001f, N);
            add_one<<<N / 256, 256, 0, st[i]>>>(d, N);
        }
    }
    CUDA(cudaGetLastError());
    DT(dt_range_pop());
    CUDA(cudaMemsetAsync(d, 0, MEMSET_BYTES, st[1]));
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(h, d, DTOH_BYTES, cudaMemcpyDeviceToHost));
    DT(dt_range_pop());

    // every other launch API, outside the ranges
    int n = N;
    void *args[] = {&d, &n};
    dim3 grid(N / 256), block(256);
    for (int k = 0; k < EACH_API; k++) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.stream = st[0];
        CUDA(cudaLaunchKernelExC(&cfg, (const void *)k_exc, args));
    }
    cudaFunction_t f_cu, f_cuex;
    CUDA(cudaGetFuncBySymbol(&f_cu, (const void *)k_cu));
    CUDA(cudaGetFuncBySymbol(&f_cuex, (const void *)k_cuex));
    auto cu_launch = (cu_launch_kernel_fn)driver_entry("cuLaunchKernel");
    auto cu_launch_ex = (cu_launch_kernel_ex_fn)driver_entry("cuLaunchKernelEx");
    for (int k = 0; k < EACH_API; k++)
        CU(cu_launch((CUfunction)f_cu, N / 256, 1, 1, 256, 1, 1, 0, (CUstream)st[0], args, nullptr));
    for (int k = 0; k < EACH_API; k++) {
        CUlaunchConfig cfg = {};
        cfg.gridDimX = N / 256;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 256;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = (CUstream)st[0];
        CU(cu_launch_ex(&cfg, (CUfunction)f_cuex, args, nullptr));
    }
    // a cooperative launch: every block resident at once
    int coop_blocks = 0, sms = 0;
    CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&coop_blocks, k_coop, 256, 0));
    CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int coop_n = coop_blocks * sms * 256 < N ? coop_blocks * sms * 256 : N;
    void *coop_args[] = {&d, &coop_n};
    for (int k = 0; k < COOPERATIVE; k++)
        CUDA(cudaLaunchCooperativeKernel((const void *)k_coop, dim3(coop_n / 256), block, coop_args, 0, st[0]));
    // a graph built node by node (no launch calls while it is made)
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t prev = nullptr;
    for (int k = 0; k < GRAPH_NODES; k++) {
        cudaKernelNodeParams p = {};
        p.func = (void *)k_graph;
        p.gridDim = grid;
        p.blockDim = block;
        p.kernelParams = args;
        cudaGraphNode_t node;
        CUDA(cudaGraphAddKernelNode(&node, graph, prev ? &prev : nullptr, prev ? 1 : 0, &p));
        prev = node;
    }
    CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int k = 0; k < GRAPH_LAUNCHES; k++) CUDA(cudaGraphLaunch(exec, st[1]));
    CUDA(cudaDeviceSynchronize());

    // kernels long enough to time with cudaEvents, each between two events
    cudaEvent_t ev[2 * SPIN_LAUNCHES];
    for (auto &e : ev) CUDA(cudaEventCreate(&e));
    for (int k = 0; k < SPIN_LAUNCHES; k++) {
        CUDA(cudaEventRecord(ev[2 * k], st[0]));
        spin<<<1, 32, 0, st[0]>>>(SPIN_US * 1000ull);
        CUDA(cudaEventRecord(ev[2 * k + 1], st[0]));
    }
    CUDA(cudaStreamSynchronize(st[0]));
    std::string spin_ms;
    for (int k = 0; k < SPIN_LAUNCHES; k++) {
        float ms = 0;
        CUDA(cudaEventElapsedTime(&ms, ev[2 * k], ev[2 * k + 1]));
        char b[32];
        snprintf(b, sizeof b, "%s%.6f", k ? "," : "", ms);
        spin_ms += b;
    }

    // allocations and frees of known sizes, and one from the stream-ordered pool
    const size_t sizes[3] = {(size_t)3 << 20, ((size_t)5 << 20) + 4096, ((size_t)7 << 20) + 65536};
    for (size_t sz : sizes) {
        void *p = nullptr;
        CUDA(cudaMalloc(&p, sz));
        allocs.push_back(alloc_json(p, sz));
        CUDA(cudaFree(p));
    }
    {
        void *p = nullptr;
        const size_t sz = (size_t)9 << 20;
        CUDA(cudaMallocAsync(&p, sz, st[1]));
        allocs.push_back(alloc_json(p, sz));
        CUDA(cudaFreeAsync(p, st[1]));
        CUDA(cudaStreamSynchronize(st[1]));
    }

    add_one<<<1, 32, 0, st[0]>>>(d, 32); // outside any range: no External id
    CUDA(cudaGetLastError());
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaGraphExecDestroy(exec));
    CUDA(cudaGraphDestroy(graph));
    CUDA(cudaFree(d)); // inside the session: its free is recorded too
    for (auto &e : ev) CUDA(cudaEventDestroy(e));

    const int triple = 4 * KERNELS_PER_STREAM + SPIN_LAUNCHES + 1;
    char truth[8192];
    snprintf(truth, sizeof truth,
             "{\"trace\":\"workload.json\",\n"
             " \"kernels\":{\"void scale<float>(float*, float, int)\":%d,\"add_one\":%d,\"spin\":%d,"
             "\"k_exc\":%d,\"k_cu\":%d,\"k_cuex\":%d,\"k_coop\":%d,\"k_graph\":%d},\n"
             " \"launches\":{\"cudaLaunchKernel|__cudaLaunchKernel\":{\"calls\":%d,\"kernels\":{\"void scale<float>(float*, float, "
             "int)\":%d,\"add_one\":%d,\"spin\":%d}},\n"
             "   \"cudaLaunchKernelExC\":{\"calls\":%d,\"kernels\":{\"k_exc\":%d}},\n"
             "   \"cuLaunchKernel\":{\"calls\":%d,\"kernels\":{\"k_cu\":%d}},\n"
             "   \"cuLaunchKernelEx\":{\"calls\":%d,\"kernels\":{\"k_cuex\":%d}},\n"
             "   \"cudaLaunchCooperativeKernel\":{\"calls\":%d,\"kernels\":{\"k_coop\":%d}},\n"
             "   \"cudaGraphLaunch\":{\"calls\":%d,\"kernels\":{\"k_graph\":%d}}},\n"
             " \"copies\":[{\"kind\":\"HtoD\",\"bytes\":%zu},{\"kind\":\"DtoH\",\"bytes\":%zu}],\n"
             " \"memsets\":[{\"bytes\":%zu}],\n"
             " \"external\":{\"inner\":%d,\"outer\":3,\"none\":%d},\n"
             " \"timed\":{\"spin\":[%s]},\n"
             " \"allocations\":[",
             2 * KERNELS_PER_STREAM, 2 * KERNELS_PER_STREAM + 1, SPIN_LAUNCHES, EACH_API, EACH_API, EACH_API,
             COOPERATIVE, GRAPH_NODES * GRAPH_LAUNCHES, triple, 2 * KERNELS_PER_STREAM, 2 * KERNELS_PER_STREAM + 1,
             SPIN_LAUNCHES, EACH_API, EACH_API, EACH_API, EACH_API, EACH_API, EACH_API, COOPERATIVE, COOPERATIVE,
             GRAPH_LAUNCHES, GRAPH_NODES * GRAPH_LAUNCHES, HTOD_BYTES, DTOH_BYTES, MEMSET_BYTES,
             4 * KERNELS_PER_STREAM,
             3 * EACH_API + COOPERATIVE + GRAPH_NODES * GRAPH_LAUNCHES + SPIN_LAUNCHES + 1, spin_ms.c_str());
    std::string t1 = truth;
    for (size_t i = 0; i < allocs.size(); i++) t1 += (i ? "," : "") + allocs[i];
    t1 += "]}\n";
    finish_session(s, dir + "/workload.truth.json", t1);

    // a second session in the same process
    s = start_session(trace2.c_str());
    float *d2 = nullptr;
    CUDA(cudaMalloc(&d2, SECOND_HTOD_BYTES));
    CUDA(cudaMemcpy(d2, h, SECOND_HTOD_BYTES, cudaMemcpyHostToDevice));
    for (int k = 0; k < SECOND_KERNELS; k++) k_second<<<1, 256, 0, st[0]>>>(d2, 256);
    CUDA(cudaGetLastError());
    CUDA(cudaStreamSynchronize(st[0]));
    std::string a2 = alloc_json(d2, SECOND_HTOD_BYTES);
    CUDA(cudaFree(d2));
    snprintf(truth, sizeof truth,
             "{\"trace\":\"workload2.json\",\n \"kernels\":{\"k_second\":%d},\n"
             " \"launches\":{\"cudaLaunchKernel|__cudaLaunchKernel\":{\"calls\":%d,\"kernels\":{\"k_second\":%d}}},\n"
             " \"copies\":[{\"kind\":\"HtoD\",\"bytes\":%zu}],\n \"memsets\":[],\n"
             " \"external\":{\"none\":%d},\n \"allocations\":[%s]}\n",
             SECOND_KERNELS, SECOND_KERNELS, SECOND_KERNELS, SECOND_HTOD_BYTES, SECOND_KERNELS + 1, a2.c_str());
    finish_session(s, dir + "/workload2.truth.json", truth);

    for (int i = 0; i < 2; i++) CUDA(cudaStreamDestroy(st[i]));
    CUDA(cudaFreeHost(h));
    return 0;
}
