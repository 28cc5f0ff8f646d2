// Launch-bound loop for overhead measurement: COUNT (default 100000)
// launches of an empty kernel on one stream, then one synchronize, after
// 1,000 as a warm-up. Prints one JSON line with the wall time of the loop
// ("loop_s"), so that runs compare the same span.
//   launch_loop [COUNT] [--devtrace TRACE]
// With --devtrace the loop is recorded in this process through devtrace's
// C API (cupti backend), as torch.profiler records in its process: started
// after the warm-up, stopped after the loop, the trace then written and
// timed ("export_s"), the kernels kept and records lost given.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "devtrace/devtrace.h"

__global__ void tiny(int *p)
{
    if (p && threadIdx.x == 0) *p = 1;
}

static double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
    long count = 100000;
    const char *trace = nullptr;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--devtrace") == 0 && i + 1 < argc) trace = argv[++i];
        else count = strtol(argv[i], nullptr, 10);
    }
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) return 2;
    for (int i = 0; i < 1000; i++) tiny<<<1, 32, 0, s>>>(nullptr); // warm-up
    cudaStreamSynchronize(s);
    dt_session *session = nullptr;
    if (trace) {
        dt_config cfg;
        dt_config_init(&cfg);
        cfg.backend = "cupti";
        if (dt_session_create(&cfg, &session) != DT_OK || dt_session_start(session) != DT_OK) {
            fprintf(stderr, "devtrace: %s\n", dt_last_error());
            return 4;
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < count; i++) tiny<<<1, 32, 0, s>>>(nullptr);
    cudaStreamSynchronize(s);
    double loop_s = seconds_since(t0);
    if (cudaGetLastError() != cudaSuccess) return 3;
    if (!trace) {
        printf("{\"loop_s\":%.6f}\n", loop_s);
        return 0;
    }
    if (dt_session_stop(session) != DT_OK) return 5;
    t0 = std::chrono::steady_clock::now();
    dt_status written = dt_session_write(session, trace, DT_FORMAT_JSON);
    double export_s = seconds_since(t0);
    size_t kernels = 0;
    for (size_t i = 0; i < dt_session_event_count(session); i++) {
        dt_event ev;
        dt_session_event(session, i, &ev);
        kernels += ev.kind == DT_EVENT_KERNEL;
    }
    printf("{\"loop_s\":%.6f,\"export_s\":%.6f,\"kernels\":%zu,\"lost\":%llu}\n", loop_s, export_s, kernels,
           (unsigned long long)dt_session_loss_total(session));
    dt_session_destroy(session);
    return written == DT_OK ? 0 : 6;
}
