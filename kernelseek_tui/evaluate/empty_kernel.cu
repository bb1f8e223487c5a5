// The judge's own empty kernel, in the candidate's calling convention: what handing a call to
// another process adds to a timed call is measured with it (evaluate/handover_cost.py), in the
// worker and in a kernel's process of its own, before any candidate is loaded.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void nothing() {}

extern "C" int ks_launch(void **, const int64_t *, const double *, void *stream) {
    nothing<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
    return static_cast<int>(cudaGetLastError());
}
