// A system call hidden inside another instruction: a disassembly from the start reads a mov;
// the jump lands on its operand's bytes 0f 05 (syscall), then c3 (ret).
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" long hidden(long nr);
asm(".text\n.globl hidden\nhidden:\n\tmov %rdi, %rax\n\tjmp 1f+1\n1:\n\tmovl $0xc3050f90, %ecx\n");
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return hidden(39) > 0 ? 0 : 1; }
