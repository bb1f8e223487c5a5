// A system call with no symbol to see: getpid (39) straight from inline assembly.
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
    long pid;
    asm volatile("syscall" : "=a"(pid) : "a"(39) : "rcx", "r11", "memory");
    return pid > 0 ? 0 : 1;
}
