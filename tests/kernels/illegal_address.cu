// Writes far outside any allocation: a sticky illegal-address error for the whole context.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void scribble(float* p) { p[threadIdx.x + (1ll << 38)] = 1.0f; }

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    scribble<<<1, 32, 0, stream>>>(static_cast<float*>(tensors[4]));
    return (int)cudaGetLastError();
}
