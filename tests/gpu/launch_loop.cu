// Launch-bound loop for overhead measurement: COUNT (default 100000) launches
// of an empty kernel on one stream, then one synchronize. Prints the wall time
// of the loop in seconds, so that runs untraced and under `devtrace record`
// compare the same span (process start and trace writing excluded).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void tiny(int *p)
{
    if (p && threadIdx.x == 0) *p = 1;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) return 2;
    for (int i = 0; i < 1000; i++) tiny<<<1, 32, 0, s>>>(nullptr); // warm-up
    cudaStreamSynchronize(s);
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < count; i++) tiny<<<1, 32, 0, s>>>(nullptr);
    cudaStreamSynchronize(s);
    auto t1 = std::chrono::steady_clock::now();
    if (cudaGetLastError() != cudaSuccess) return 3;
    printf("%.6f\n", std::chrono::duration<double>(t1 - t0).count());
    return 0;
}
