// A thrust header named by pasted tokens: no text of the source reads "thrust", and its last
// name, math.h, is an allowed header's (the include rule matched last names).
#include <cuda_runtime.h>
#include <stdint.h>
#define PASTE(a, b) a##b
#define JOIN(a, b) PASTE(a, b)
#define HEADER <JOIN(thr, ust)/detail/mpl/math.h>
#include HEADER
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return 0; }
