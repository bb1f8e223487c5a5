// Writes NaN everywhere (bf16 0x7fc0, fp32 0x7fc00000 via byte pattern 0x7f7f...: also NaN).
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    const int64_t b = ints[0], sq = ints[1], h = ints[3], d = ints[5];
    cudaMemsetAsync(tensors[3], 0xff, b * sq * h * d * 2, stream);
    cudaMemsetAsync(tensors[4], 0xff, b * h * sq * 4, stream);
    return (int)cudaGetLastError();
}
