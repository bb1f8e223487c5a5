// A file copied into the object by the assembler at build time: top-level host asm with
// .incbin, which neither the preprocessor nor the include rule sees (here the build's own copy
// of this source; on the judge's machine it could be another library's fat binary).
#include <cuda_runtime.h>
#include <stdint.h>
asm(".pushsection .rodata.copied,\"a\",@progbits\n.globl copied\ncopied:\n.incbin \"kernel.cu\"\n.popsection");
extern "C" __attribute__((visibility("hidden"))) const char copied[];
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return copied[0] == '/' ? 0 : 1; }
