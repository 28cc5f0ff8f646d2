// A short HIP workload for tests/gpu/rocm_validate.sh, of known shape:
// 10 steps, each inside a ROCTX range (where roctx.h is installed), of an
// HtoD copy, a fill, two kernels of known launch configurations (saxpy:
// grid [4096,1,1] block [256,1,1]; scale2d: grid [32,16,1] block [16,16,1]),
// a DtoD and a DtoH copy. Build: hipcc -O2 hip_workload.hip [-DHAVE_ROCTX -lroctx64]
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef HAVE_ROCTX
#include <roctx.h>
#else
static void roctxRangePushA(const char *) {}
static void roctxRangePop() {}
#endif

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale2d(float *m, int width, int height, float s)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) m[y * width + x] *= s;
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        hipError_t e_ = (call);                                                            \
        if (e_ != hipSuccess) {                                                            \
            std::fprintf(stderr, "%s: %s\n", #call, hipGetErrorString(e_));                \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main()
{
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(float);
    std::vector<float> host(n, 1.0f);
    float *x = nullptr, *y = nullptr;
    CHECK(hipMalloc(&x, bytes));
    CHECK(hipMalloc(&y, bytes));
    for (int step = 0; step < 10; step++) {
        roctxRangePushA("step");
        CHECK(hipMemcpy(x, host.data(), bytes, hipMemcpyHostToDevice));
        CHECK(hipMemset(y, 0, bytes));
        hipLaunchKernelGGL(saxpy, dim3(n / 256), dim3(256), 0, 0, n, 2.0f, x, y);
        CHECK(hipGetLastError());
        hipLaunchKernelGGL(scale2d, dim3(32, 16), dim3(16, 16), 0, 0, y, 512, 256, 0.5f);
        CHECK(hipGetLastError());
        CHECK(hipMemcpy(x, y, bytes, hipMemcpyDeviceToDevice));
        CHECK(hipMemcpy(host.data(), y, bytes, hipMemcpyDeviceToHost));
        roctxRangePop();
    }
    CHECK(hipDeviceSynchronize());
    CHECK(hipFree(x));
    CHECK(hipFree(y));
    std::printf("hip_workload: 20 kernels, 30 copies, 10 fills, 10 ranges\n");
    return 0;
}
