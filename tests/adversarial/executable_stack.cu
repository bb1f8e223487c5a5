// An executable stack: instructions written into a local array at run time (a system call
// among them), then run.
#include <cuda_runtime.h>
#include <stdint.h>
asm(".section .note.GNU-stack,\"x\",@progbits\n\t.previous");
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  volatile unsigned char code[8]; code[0] = 0xb8; code[1] = 39; code[2] = 0; code[3] = 0; code[4] = 0; code[5] = 0x0f; code[6] = 0x05; code[7] = 0xc3;
  return ((long (*)(void))(void*)code)() > 0 ? 0 : 1; }
