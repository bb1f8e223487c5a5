// A user object whose destructor the runtime calls on a thread of its own once the last
// reference goes: host code outside ks_launch, as a host callback is (a review, 2026-12-07).
#include <cuda_runtime.h>
#include <stdint.h>
static volatile long spins;
static void busy(void*) { for (long i = 0; i < 100000000; ++i) spins = i; }
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  cudaUserObject_t object;
  if (cudaUserObjectCreate(&object, nullptr, busy, 1, cudaUserObjectNoDestructorSync)) return 1;
  return (int)cudaUserObjectRelease(object, 1);
}
