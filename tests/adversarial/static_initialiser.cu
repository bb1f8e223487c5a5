// A static initialiser is load-time code too.
#include <cuda_runtime.h>
#include <stdint.h>
static int probe() { volatile int v = 7; return v; }
static int seeded = probe();
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return seeded - 7; }
