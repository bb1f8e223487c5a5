// Unload-time code: runs inside the judge's process after the last check, outside ks_launch.
#include <cuda_runtime.h>
#include <stdint.h>
static volatile int armed;
__attribute__((destructor)) static void on_unload(void) { armed = 1; }
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return armed; }
