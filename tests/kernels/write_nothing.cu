// Returns success without launching anything: every output keeps its NaN poison.
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    return 0;
}
