// A forbidden word split by a line splice: the preprocessor joins "thr\" and "ust" before it
// reads the line, a text search of the unspliced lines finds no "thrust".
#include <cuda_runtime.h>
#include <stdint.h>
#define HEADER <thr\
ust/detail/mpl/math.h>
#include HEADER
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return 0; }
