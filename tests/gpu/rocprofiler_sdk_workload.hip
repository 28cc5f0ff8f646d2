// A HIP workload whose device activity is known exactly, for devtrace's
// rocprofiler-sdk backend on a ROCm machine (tests/gpu/rocprofiler_sdk_validate.sh).
//
//   rocprofiler_sdk_workload record          under `devtrace record`
//   rocprofiler_sdk_workload api TRACE.json  a C API session started before
//                                            the first HIP call; checked here
//   rocprofiler_sdk_workload late TRACE.json a C API session started after
//                                            HIP initialized without the tool
//
// Each step: an HtoD copy, `scale` on a 256 x 2 grid of 128 x 2 work-groups,
// `block_sum` with 1 KiB of dynamic LDS on 64 work-groups of 256, a
// hipMemsetAsync, a DtoH copy; inside a ROCTX range "step" (when ROCTX is
// installed) and a devtrace user range "step". Prints one JSON line of
// findings; exit status 0 only when every check holds.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "devtrace/devtrace.h"

#if defined(__has_include)
#if __has_include(<rocprofiler-sdk-roctx/roctx.h>)
#include <rocprofiler-sdk-roctx/roctx.h>
#define HAVE_ROCTX 1
#endif
#endif
#ifndef HAVE_ROCTX
#define HAVE_ROCTX 0
#endif

#define STEPS 20
#define N (1 << 18)

__global__ void scale(float *x, float a, int n)
{
    int block = blockIdx.y * gridDim.x + blockIdx.x;
    int lane = threadIdx.y * blockDim.x + threadIdx.x;
    int i = block * blockDim.x * blockDim.y + lane;
    if (i < n) x[i] = x[i] * a;
}

__global__ void block_sum(const float *x, float *out, int n)
{
    extern __shared__ float part[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

static int failures;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            failures++;                                                         \
            fprintf(stderr, "workload check failed: %s: ", #cond);              \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)
#define HIP(call)                                                               \
    do {                                                                        \
        hipError_t e_ = (call);                                                 \
        if (e_ != hipSuccess) {                                                 \
            fprintf(stderr, "%s: %s\n", #call, hipGetErrorString(e_));          \
            exit(2);                                                            \
        }                                                                       \
    } while (0)

static void range_push(const char *name)
{
#if HAVE_ROCTX
    roctxRangePush(name);
#endif
    dt_range_push(name, NULL); /* fails harmlessly without a session */
}

static void range_pop(void)
{
    dt_range_pop();
#if HAVE_ROCTX
    roctxRangePop();
#endif
}

static void steps(int count)
{
    std::vector<float> host(N, 1.0f), sums(64);
    float *d = NULL, *out = NULL;
    HIP(hipMalloc(&d, N * sizeof(float)));
    HIP(hipMalloc(&out, 64 * sizeof(float)));
    hipStream_t stream;
    HIP(hipStreamCreate(&stream));
    for (int s = 0; s < count; s++) {
        range_push("step");
        HIP(hipMemcpy(d, host.data(), N * sizeof(float), hipMemcpyHostToDevice));
        hipLaunchKernelGGL(scale, dim3(256, 2, 1), dim3(128, 2, 1), 0, stream, d, 2.0f, N);
        hipLaunchKernelGGL(block_sum, dim3(64), dim3(256), 256 * sizeof(float), stream, d, out, N);
        HIP(hipGetLastError());
        HIP(hipMemsetAsync(d, 0, N * sizeof(float), stream));
        HIP(hipStreamSynchronize(stream));
        HIP(hipMemcpy(sums.data(), out, 64 * sizeof(float), hipMemcpyDeviceToHost));
        range_pop();
    }
    HIP(hipStreamDestroy(stream));
    HIP(hipFree(out));
    HIP(hipFree(d));
}

/* What a session of `count` steps must hold. */
static void check_session(dt_session *s, int count)
{
    size_t n = dt_session_event_count(s);
    int scales = 0, sums = 0, htod = 0, dtoh = 0, memsets = 0, api = 0, ranges = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        if (dt_session_event(s, i, &ev) != DT_OK) continue;
        switch (ev.kind) {
        case DT_EVENT_KERNEL:
            if (ev.name && strstr(ev.name, "scale")) {
                scales++;
                CHECK(ev.u.kernel.grid[0] == 256 && ev.u.kernel.grid[1] == 2 && ev.u.kernel.grid[2] == 1,
                      "scale grid %d,%d,%d", ev.u.kernel.grid[0], ev.u.kernel.grid[1], ev.u.kernel.grid[2]);
                CHECK(ev.u.kernel.block[0] == 128 && ev.u.kernel.block[1] == 2 && ev.u.kernel.block[2] == 1,
                      "scale block %d,%d,%d", ev.u.kernel.block[0], ev.u.kernel.block[1], ev.u.kernel.block[2]);
            } else if (ev.name && strstr(ev.name, "block_sum")) {
                sums++;
                CHECK(ev.u.kernel.grid[0] == 64 && ev.u.kernel.block[0] == 256, "block_sum grid %d block %d",
                      ev.u.kernel.grid[0], ev.u.kernel.block[0]);
                CHECK(ev.u.kernel.dynamic_shared_memory == 1024, "block_sum dynamic LDS %u",
                      ev.u.kernel.dynamic_shared_memory);
            }
            CHECK(ev.name && !strstr(ev.name, ".kd"), "kernel name with its descriptor suffix: %s", ev.name);
            CHECK(ev.end_ns > ev.start_ns, "kernel %s has no duration", ev.name);
            break;
        case DT_EVENT_MEMCPY:
            if (ev.u.memcpy.copy_kind == DT_COPY_HTOD && ev.u.memcpy.bytes == N * sizeof(float)) htod++;
            if (ev.u.memcpy.copy_kind == DT_COPY_DTOH && ev.u.memcpy.bytes == 64 * sizeof(float)) dtoh++;
            break;
        case DT_EVENT_MEMSET:
            if (ev.u.memset.bytes == N * sizeof(float) || ev.u.memset.bytes == 0) memsets++;
            break;
        case DT_EVENT_RUNTIME: api++; break;
        case DT_EVENT_RANGE:
            if (ev.name && strcmp(ev.name, "step") == 0) ranges++;
            break;
        default: break;
        }
    }
    CHECK(scales == count, "%d scale kernels, expected %d", scales, count);
    CHECK(sums == count, "%d block_sum kernels, expected %d", sums, count);
    CHECK(htod == count, "%d HtoD copies of %zu bytes, expected %d", htod, N * sizeof(float), count);
    CHECK(dtoh == count, "%d DtoH copies of 256 bytes, expected %d", dtoh, count);
    CHECK(memsets >= count, "%d memsets, expected %d", memsets, count);
    CHECK(api >= 5 * count, "%d HIP API calls, expected at least %d", api, 5 * count);
    printf("{\"kernels\": %d, \"htod\": %d, \"dtoh\": %d, \"memsets\": %d, \"api\": %d, \"devtrace_ranges\": %d, "
           "\"roctx\": %d, \"failures\": %d}\n",
           scales + sums, htod, dtoh, memsets, api, ranges, HAVE_ROCTX, failures);
}

static dt_session *start_session(dt_status *status)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "rocprofiler_sdk";
    c.capture = DT_CAPTURE_ALL;
    dt_session *s = NULL;
    *status = dt_session_create(&c, &s);
    if (*status != DT_OK) return NULL;
    *status = dt_session_start(s);
    if (*status != DT_OK) {
        dt_session_destroy(s);
        return NULL;
    }
    return s;
}

static int api_mode(const char *trace, bool late)
{
    if (late) {
        /* HIP (and with it rocprofiler-sdk) initializes without devtrace */
        int devices = 0;
        HIP(hipGetDeviceCount(&devices));
        steps(1);
    }
    dt_status st;
    dt_session *s = start_session(&st);
    if (!s) {
        /* a refusal must say why (never a session that records nothing) */
        const char *why = dt_last_error();
        printf("{\"late\": %s, \"started\": false, \"status\": \"%s\", \"message\": \"%s\"}\n", late ? "true" : "false",
               dt_status_name(st), why ? why : "");
        CHECK(why && *why, "dt_session_start failed without a message");
        return late && failures == 0 ? 0 : 1;
    }
    steps(STEPS);
    HIP(hipDeviceSynchronize());
    dt_status stop = dt_session_stop(s);
    CHECK(stop == DT_OK, "dt_session_stop: %s", dt_last_error());
    CHECK(dt_session_write(s, trace, DT_FORMAT_JSON) == DT_OK, "dt_session_write: %s", dt_last_error());
    printf("{\"late\": %s, \"started\": true}\n", late ? "true" : "false");
    check_session(s, STEPS);
    dt_session_destroy(s);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "record";
    if (strcmp(mode, "record") == 0) {
        steps(STEPS);
        HIP(hipDeviceSynchronize());
        printf("{\"steps\": %d, \"roctx\": %d}\n", STEPS, HAVE_ROCTX);
        return 0;
    }
    if ((strcmp(mode, "api") == 0 || strcmp(mode, "late") == 0) && argc > 2)
        return api_mode(argv[2], strcmp(mode, "late") == 0);
    fprintf(stderr, "usage: %s record | api TRACE.json | late TRACE.json\n", argv[0]);
    return 2;
}
