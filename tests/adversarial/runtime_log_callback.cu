// Host code the runtime runs outside ks_launch: a callback for the runtime's error log (run by
// whichever thread makes a failing call, the host's own stream watcher included), and a file
// the runtime writes for it (no fopen in the object). cudaLogs* match the allow-list's "cuda*".
#include <cuda_runtime.h>
#include <stdint.h>
static void CUDART_CB heard(void*, cudaLogLevel, char*, size_t) {}
__global__ void nothing() {}
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  static cudaLogsCallbackHandle handle;
  if (handle == nullptr) {
    cudaLogsRegisterCallback(heard, nullptr, &handle);
    cudaLogIterator from = 0;
    cudaLogsDumpToFile(&from, "/dev/shm/written_by_a_kernel", 0);
  }
  nothing<<<1, 1, 0, s>>>();
  return (int)cudaGetLastError();
}
