// #include_next and #import are includes too.
#include <cuda_runtime.h>
#include <stdint.h>
#include_next <dlfcn.h>
#import <stdio.h>
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return 0; }
