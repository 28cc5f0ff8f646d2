// Many graph kernels at the GPU's rate, for devtrace's flight recorder:
//   graph_flight SECONDS [--status N]
// A CUDA graph of BRANCHES parallel chains of DEPTH tiny kernels each,
// captured once and launched again and again for SECONDS (CUDA graphs of
// small kernels are where CUPTI was reported to run out of its device
// buffers after about 25 M kernels, parca-dev/parcagpu#23), then exit with
// status N (default 0): run under `devtrace record --flight-recorder` with
// --status 3, the failed end makes the flight recorder write its last
// window, whose every timestamp cuda_findings.py graph then checks.
// Prints one JSON line: kernels per graph, graph launches, kernels, seconds,
// and the device memory in use (cudaMemGetInfo) before and after.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define BRANCHES 8
#define DEPTH 128

__global__ void tick(unsigned *p)
{
    if (p && threadIdx.x == 0) atomicAdd(p, 1u);
}

static size_t used_bytes()
{
    size_t free_b = 0, total_b = 0;
    return cudaMemGetInfo(&free_b, &total_b) == cudaSuccess ? total_b - free_b : 0;
}

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                   \
            return 2;                                                                     \
        }                                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 20.0;
    int status = 0;
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], "--status") == 0) status = atoi(argv[i + 1]);
    cudaStream_t s, branch[BRANCHES];
    cudaEvent_t fork, join[BRANCHES];
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (int b = 0; b < BRANCHES; b++) {
        CHECK(cudaStreamCreateWithFlags(&branch[b], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&join[b], cudaEventDisableTiming));
    }
    size_t before = used_bytes();
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s));
    for (int b = 0; b < BRANCHES; b++) {
        CHECK(cudaStreamWaitEvent(branch[b], fork, 0));
        for (int d = 0; d < DEPTH; d++) tick<<<1, 32, 0, branch[b]>>>(nullptr);
        CHECK(cudaEventRecord(join[b], branch[b]));
        CHECK(cudaStreamWaitEvent(s, join[b], 0));
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    long launches = 0;
    auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
        for (int i = 0; i < 16; i++) CHECK(cudaGraphLaunch(exec, s));
        launches += 16;
        CHECK(cudaStreamSynchronize(s)); /* a bounded queue: no more than 16 graphs ahead */
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    size_t after = used_bytes();
    printf("{\"graph_kernels\":%d,\"launches\":%ld,\"kernels\":%ld,\"seconds\":%.3f,\"used_before\":%zu,"
           "\"used_after\":%zu}\n",
           BRANCHES * DEPTH, launches, launches * BRANCHES * DEPTH, elapsed, before, after);
    fflush(stdout);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return status;
}
