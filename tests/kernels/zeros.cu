// Writes zeros to out and lse: everything written, nothing right.
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    const int64_t b = ints[0], sq = ints[1], h = ints[3], d = ints[5];
    cudaMemsetAsync(tensors[3], 0, b * sq * h * d * 2, stream);
    cudaMemsetAsync(tensors[4], 0, b * h * sq * 4, stream);
    return (int)cudaGetLastError();
}
