// A CUDA workload whose device activity is known exactly, recorded by
// devtrace through its C API, then checked event by event:
//   tests/gpu/workload TRACE.json
// Work: KERNELS_PER_STREAM launches of a C++ template kernel and of a plain
// kernel on each of two streams, one HtoD and one DtoH copy, one memset, all
// inside nested user ranges (outer > inner), plus one kernel outside any
// range. Prints one JSON line of findings; exit status 0 only when every
// check holds.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "devtrace/devtrace.h"

#define KERNELS_PER_STREAM 50
#define N (1 << 20)

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

static int failures;
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "workload check failed: %s: ", #cond);             \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)
#define CUDA(call)                                                             \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));        \
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

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "workload.json";
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "cupti";
    cfg.output_path = out;
    dt_session *s = NULL;
    DT(dt_session_create(&cfg, &s));
    // Before the first CUDA call: CUPTI must be armed before the context.
    DT(dt_session_start(s));

    float *d = NULL, *h = NULL;
    cudaStream_t st[2];
    CUDA(cudaMalloc(&d, N * sizeof(float)));
    CUDA(cudaMallocHost(&h, N * sizeof(float)));
    for (int i = 0; i < 2; i++) CUDA(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    for (int i = 0; i < N; i++) h[i] = 1.0f;
    CUDA(cudaDeviceSynchronize());

    uint64_t outer = 0, inner = 0;
    DT(dt_range_push("outer", &outer));
    CUDA(cudaMemcpyAsync(d, h, N * sizeof(float), cudaMemcpyHostToDevice, st[0]));
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
    CUDA(cudaMemsetAsync(d, 0, N * sizeof(float), st[1]));
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost));
    DT(dt_range_pop());
    add_one<<<1, 32, 0, st[0]>>>(d, 32); // outside any range: no External id
    CUDA(cudaDeviceSynchronize());

    DT(dt_session_stop(s));
    DT(dt_session_write(s, NULL, DT_FORMAT_JSON));

    const int want_kernels = 4 * KERNELS_PER_STREAM + 1;
    int kernels = 0, templ = 0, plain = 0, copies = 0, htod = 0, dtoh = 0, sets = 0;
    int no_ext = 0, ext_outer = 0, ext_inner = 0, unpaired = 0, launches = 0, call_config = 0;
    std::string launch_name;
    std::vector<uint64_t> runtime_corr;
    size_t n = dt_session_event_count(s);
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        DT(dt_session_event(s, i, &ev));
        if (ev.kind == DT_EVENT_RUNTIME) {
            runtime_corr.push_back(ev.correlation);
            // launches by callback id, whatever their name: CUDA 13's <<<>>>
            // is __cudaLaunchKernel
            if (ev.u.api.launch) {
                launches++;
                launch_name = ev.name;
            }
            // filtered at the source: __cudaPush/PopCallConfiguration
            if (strstr(ev.name, "CallConfiguration")) call_config++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        bool device = ev.kind == DT_EVENT_KERNEL || ev.kind == DT_EVENT_MEMCPY || ev.kind == DT_EVENT_MEMSET;
        if (!device) continue;
        // the memory set-up before the ranges is not part of the count
        if (ev.kind == DT_EVENT_MEMCPY || ev.kind == DT_EVENT_MEMSET) {
            if (!ev.has_external) continue;
        }
        if (!ev.has_external) no_ext++;
        else if (ev.external_id == outer) ext_outer++;
        else if (ev.external_id == inner) ext_inner++;
        bool paired = false;
        for (uint64_t c : runtime_corr) paired |= c == ev.correlation;
        if (!paired) unpaired++;
        if (ev.kind == DT_EVENT_KERNEL) {
            kernels++;
            if (strcmp(ev.name, "void scale<float>(float*, float, int)") == 0) templ++;
            else if (strcmp(ev.name, "add_one") == 0) plain++;
            else CHECK(false, "unexpected kernel name %s", ev.name);
        } else if (ev.kind == DT_EVENT_MEMCPY) {
            copies++;
            htod += ev.u.memcpy.copy_kind == DT_COPY_HTOD;
            dtoh += ev.u.memcpy.copy_kind == DT_COPY_DTOH;
            CHECK(ev.u.memcpy.bytes == N * sizeof(float), "copy bytes %llu", (unsigned long long)ev.u.memcpy.bytes);
        } else {
            sets++;
            CHECK(ev.u.memset.bytes == N * sizeof(float), "memset bytes");
        }
    }
    CHECK(kernels == want_kernels, "kernels %d, want %d", kernels, want_kernels);
    CHECK(templ == 2 * KERNELS_PER_STREAM, "scale<float> kernels %d", templ);
    CHECK(plain == 2 * KERNELS_PER_STREAM + 1, "add_one kernels %d", plain);
    CHECK(copies == 2 && htod == 1 && dtoh == 1, "copies %d (HtoD %d, DtoH %d)", copies, htod, dtoh);
    CHECK(sets == 1, "memsets %d", sets);
    CHECK(ext_inner == 4 * KERNELS_PER_STREAM, "device events in the inner range %d", ext_inner);
    CHECK(ext_outer == 3, "device events in the outer range only %d (2 copies, 1 memset)", ext_outer);
    CHECK(no_ext == 1, "device events without External id %d (the last kernel)", no_ext);
    CHECK(unpaired == 0, "device events without their runtime call %d", unpaired);
    CHECK(launches == want_kernels, "runtime launches %d (%s), want %d", launches, launch_name.c_str(), want_kernels);
    CHECK(call_config == 0, "call-configuration records %d", call_config);
    CHECK(dt_session_loss_total(s) == 0, "losses %llu", (unsigned long long)dt_session_loss_total(s));
    char devices[2048];
    dt_session_device_properties(s, devices, sizeof devices);
    CHECK(strstr(devices, "\"sharedMemPerBlockOptin\":0") == NULL && devices[0], "device properties %s", devices);
    printf("{\"events\":%zu,\"kernels\":%d,\"template_kernels\":%d,\"plain_kernels\":%d,\"copies\":%d,"
           "\"memsets\":%d,\"inner\":%d,\"outer\":%d,\"without_external\":%d,\"unpaired\":%d,"
           "\"launches\":%d,\"launch_name\":\"%s\",\"call_configuration_records\":%d,"
           "\"losses\":%llu,\"failures\":%d,\"devices\":[%s]}\n",
           n, kernels, templ, plain, copies, sets, ext_inner, ext_outer, no_ext, unpaired, launches,
           launch_name.c_str(), call_config, (unsigned long long)dt_session_loss_total(s), failures, devices);
    dt_session_destroy(s);
    cudaFree(d);
    cudaFreeHost(h);
    return failures ? 1 : 0;
}
