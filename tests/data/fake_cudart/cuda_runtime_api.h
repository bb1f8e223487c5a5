/* A stand-in for the few CUDA runtime declarations evaluate/sandbox_host.cpp uses, so the host
 * builds and runs on a machine with no GPU and no CUDA toolkit (tests/test_sandbox_host.py).
 * Only what the host needs; the values of the enums are the stand-in's own. */
#ifndef KS_FAKE_CUDA_RUNTIME_API_H
#define KS_FAKE_CUDA_RUNTIME_API_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
} cudaError_t;

typedef struct KsFakeStream *cudaStream_t;
typedef struct KsFakeEvent *cudaEvent_t;
typedef struct cudaIpcEventHandle_st { char reserved[64]; } cudaIpcEventHandle_t;
typedef struct cudaIpcMemHandle_st { char reserved[64]; } cudaIpcMemHandle_t;
typedef struct CUuuid_st { char bytes[16]; } cudaUUID_t;
/* The stand-in's device has this UUID (16 bytes): */
#define KS_FAKE_UUID "stand-in-gpu-000"
struct cudaDeviceProp {
    char name[256];
    cudaUUID_t uuid;
};

#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaIpcMemLazyEnablePeerAccess 0x01
#define cudaEventDisableTiming 0x02
#define CUDART_VERSION 13000
#define cudaEnableDefault 0x0
typedef enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
    cudaDriverEntryPointVersionNotSufficent = 2,
} cudaDriverEntryPointQueryResult;

const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaFree(void *pointer);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle);
/* An event of the host's own: named "trail" in the log (the host makes one, for its trailing
 * launch). */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
/* The host's trailing kernel, which the stand-in cannot compile: logged as "launch trail". */
cudaError_t ks_fake_launch_trailing_kernel(cudaStream_t stream);
cudaError_t cudaIpcOpenMemHandle(void **pointer, cudaIpcMemHandle_t handle, unsigned int flags);
cudaError_t cudaIpcCloseMemHandle(void *pointer);
/* Only "cuStreamWaitValue32" and "cuStreamWriteValue32", as the stand-in's own functions: a
 * wait that finds its counter short fails (work is synchronous here: nothing could raise it
 * later), and both are logged ("wait-value <n>", "write-value <n>"). */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **function,
                                             unsigned int version, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult *found);

/* The stand-in's own, for test candidates: the stream's next query reports this error, as the
 * real runtime does after a kernel faults. */
void ks_fake_fault(void);
/* ... and this stream (cudaStreamLegacy or cudaStreamPerThread) reports work pending. */
void ks_fake_leave_work(cudaStream_t stream);

/* For the host's confinement (evaluate/sandbox_confinement.h), on the stand-in: the directory
 * its "device" lives in (the log's, KS_FAKE_LOG; NULL without a log), which the host may write
 * once confined as it may write /dev on a GPU; and the errno the host's question for the
 * kernel's Landlock ABI is to fail with (KS_FAKE_LANDLOCK=absent: ENOSYS, =disabled:
 * EOPNOTSUPP), 0 for the real kernel to answer. */
const char *ks_fake_device_directory(void);
int ks_fake_hidden_landlock(void);

#ifdef __cplusplus
}
#endif
#endif
