// A GNU indirect function: the loader calls its resolver while it loads the library.
#include <cuda_runtime.h>
#include <stdint.h>
static volatile int armed;
extern "C" int real_work(void) { return armed - 1; }
typedef int (*work_fn)(void);
extern "C" work_fn pick_work(void) { armed = 1; return real_work; }
extern "C" int work(void) __attribute__((ifunc("pick_work")));
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) { return work(); }
