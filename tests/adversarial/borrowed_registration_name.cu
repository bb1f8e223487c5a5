// The same registration from a function that takes the name of nvcc's own callback (an
// assembler label): gcc inlines nvcc's callback into its constructor at -O3, so the name is
// free, and a check by function name alone would take this function for nvcc's.
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" void** __cudaRegisterFatBinary(void*);
struct Wrapper { int magic; int version; const void* data; void* unused; };
static const unsigned long long foreign[2] = {0x00100001ba55ed50ull, 0};
static Wrapper wrapper = {0x466243b1, 1, foreign, nullptr};
__attribute__((noinline)) static void** register_foreign(void) asm("_ZL31__nv_cudaEntityRegisterCallbackPPv");
static void** register_foreign(void) { return __cudaRegisterFatBinary(&wrapper); }
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return register_foreign() == nullptr; }
