// Another CUPTI client that subscribes before devtrace, in one process:
//   tests/gpu/cupti_client OUTDIR
// 1. subscribes to CUPTI by name ("validation client"), launches a kernel;
// 2. starts a devtrace session: it must be refused, with an error that names
//    the other subscriber, and leave the process and CUDA working;
// 3. the client unsubscribes; a devtrace session then records KERNELS
//    launches (OUTDIR/client.json, judged by cuda_findings.py against
//    OUTDIR/client.truth.json).
// Prints one JSON line (whether the refusal named the client is one of its
// fields); exit status 0 when devtrace was refused and CUDA kept working,
// 1 when devtrace started anyway or CUDA failed after the refusal, 2 a CUDA
// or CUPTI error before it, 3 a devtrace error in step 3.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "devtrace/devtrace.h"

#define KERNELS 10
#define CLIENT_NAME "validation client"

extern "C" __global__ void k_client(int *p)
{
    if (p && threadIdx.x == 0) *p += 1;
}

#define CUDA(call)                                                             \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));        \
            exit(2);                                                           \
        }                                                                      \
    } while (0)

static void CUPTIAPI on_api(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

static std::string json_string(const char *s)
{
    std::string o;
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') o += '\\';
        if ((unsigned char)*s >= 0x20) o += *s;
    }
    return o;
}

int main(int argc, char **argv)
{
    std::string dir = argc > 1 ? argv[1] : ".";
    CUpti_SubscriberHandle sub;
    CUpti_SubscriberParams params = {};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = CLIENT_NAME;
    CUptiResult r = cuptiSubscribe_v2(&sub, (CUpti_CallbackFunc)on_api, nullptr, &params);
    if (r != CUPTI_SUCCESS) {
        fprintf(stderr, "cuptiSubscribe_v2: %d\n", (int)r);
        return 2;
    }
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    int *d = nullptr;
    CUDA(cudaMalloc(&d, sizeof(int)));
    k_client<<<1, 32>>>(d);
    CUDA(cudaDeviceSynchronize());

    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "cupti";
    dt_session *s = nullptr;
    dt_status st = dt_session_create(&cfg, &s);
    if (st == DT_OK) st = dt_session_start(s);
    std::string refusal = st == DT_OK ? "" : dt_last_error();
    const char *status = dt_status_name(st);
    int names_client = strstr(refusal.c_str(), CLIENT_NAME) != nullptr;
    if (s) {
        if (st == DT_OK) dt_session_stop(s);
        dt_session_destroy(s);
        s = nullptr;
    }
    k_client<<<1, 32>>>(d); // CUDA still works beside the refusal
    int cuda_ok = cudaDeviceSynchronize() == cudaSuccess;
    cuptiUnsubscribe(sub);

    // the client gone, devtrace can take CUPTI
    std::string trace = dir + "/client.json";
    dt_config_init(&cfg);
    cfg.backend = "cupti";
    cfg.output_path = trace.c_str();
    dt_status after = dt_session_create(&cfg, &s);
    if (after == DT_OK) after = dt_session_start(s);
    if (after == DT_OK) {
        for (int k = 0; k < KERNELS; k++) k_client<<<1, 32>>>(d);
        CUDA(cudaDeviceSynchronize());
        after = dt_session_stop(s);
        if (after == DT_OK) after = dt_session_write(s, NULL, DT_FORMAT_JSON);
    }
    std::string after_error = after == DT_OK ? "" : dt_last_error();
    if (s) dt_session_destroy(s);
    CUDA(cudaFree(d));
    FILE *f = fopen((dir + "/client.truth.json").c_str(), "w");
    if (f) {
        fprintf(f,
                "{\"trace\":\"client.json\",\"kernels\":{\"k_client\":%d},"
                "\"launches\":{\"cudaLaunchKernel|__cudaLaunchKernel\":{\"calls\":%d,\"kernels\":{\"k_client\":%d}}},"
                "\"copies\":[],\"memsets\":[],\"external\":{\"none\":%d}}\n",
                KERNELS, KERNELS, KERNELS, KERNELS);
        fclose(f);
    }
    printf("{\"refused\":%s,\"status\":\"%s\",\"error\":\"%s\",\"names_client\":%s,\"cuda_ok\":%s,"
           "\"after_unsubscribe\":\"%s\",\"after_error\":\"%s\"}\n",
           st != DT_OK ? "true" : "false", status, json_string(refusal.c_str()).c_str(),
           names_client ? "true" : "false", cuda_ok ? "true" : "false", dt_status_name(after),
           json_string(after_error.c_str()).c_str());
    if (after != DT_OK) return 3;
    return st != DT_OK && cuda_ok ? 0 : 1;
}
