// A managed variable: memory both a kernel and the host read and write with no copy, a path
// from the GPU to host code in ks_launch that the ban on copies does not see (a review,
// 2026-12-07).
#include <cuda_runtime.h>
#include <stdint.h>
__managed__ float first_q;
__global__ void peek(const float* q) { first_q = q[0]; }
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  peek<<<1, 1, 0, s>>>((const float*)t[0]);
  return first_q > 1e30f;
}
