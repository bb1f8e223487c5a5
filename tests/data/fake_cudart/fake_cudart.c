/* The stand-in CUDA runtime behind tests/data/fake_cudart/cuda_runtime_api.h.
 *
 * "Device memory" is a file mapped shared: an IPC memory handle holds the file's path (NUL
 * ended), so the test, in another process, sees what a candidate wrote, as the judge sees its
 * buffers through CUDA IPC. Events record how often they were waited on and recorded, which the
 * host reports nowhere: the test counts them from a log file named by KS_FAKE_LOG (appended per
 * call), because the host itself says nothing it is not asked. Work is synchronous: a "kernel"
 * is the candidate's host code writing through the pointer. */
#include "cuda_runtime_api.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct KsFakeStream { int unused; };
struct KsFakeEvent { char name[64]; };

static struct KsFakeStream the_stream;
static int device_set = 0;
static int fault_pending = 0;

/* The stand-in's device files are the test's files beside its log: "device memory", counters
 * and the log itself. A confined host may write there, as it may write /dev on a GPU. */
const char *ks_fake_device_directory(void) {
    static char directory[4096];
    const char *log = getenv("KS_FAKE_LOG");
    if (log == NULL || strlen(log) >= sizeof directory) return NULL;
    strcpy(directory, log);
    char *slash = strrchr(directory, '/');
    if (slash == NULL) return ".";
    *slash = '\0';
    return directory[0] == '\0' ? "/" : directory;
}

/* A kernel without Landlock, or with it not enabled, as the tests ask (KS_FAKE_LANDLOCK). */
int ks_fake_hidden_landlock(void) {
    const char *kernel = getenv("KS_FAKE_LANDLOCK");
    if (kernel == NULL) return 0;
    if (strcmp(kernel, "absent") == 0) return ENOSYS;
    if (strcmp(kernel, "disabled") == 0) return EOPNOTSUPP;
    return 0;
}

/* The host's seccomp filter left out, as the tests ask (KS_FAKE_SECCOMP=absent). */
int ks_fake_hidden_seccomp(void) {
    const char *filter = getenv("KS_FAKE_SECCOMP");
    return filter != NULL && strcmp(filter, "absent") == 0;
}

static void log_line(const char *what, const char *name) {
    const char *path = getenv("KS_FAKE_LOG");
    if (path == NULL) return;
    FILE *log = fopen(path, "a");
    if (log == NULL) return;
    fprintf(log, "%s %s\n", what, name);
    fclose(log);
}

const char *cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorNotReady: return "cudaErrorNotReady";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error) {
    return error == cudaErrorIllegalAddress ? "an illegal memory access was encountered"
                                            : "stand-in error";
}

cudaError_t cudaSetDevice(int device) {
    if (device != 0) return cudaErrorInvalidValue;
    device_set = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    if (device != 0) return cudaErrorInvalidValue;
    memset(prop, 0, sizeof *prop);
    strcpy(prop->name, "stand-in");
    memcpy(prop->uuid.bytes, KS_FAKE_UUID, 16);
    return cudaSuccess;
}

cudaError_t cudaFree(void *pointer) { return pointer == NULL ? cudaSuccess : cudaErrorInvalidValue; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
    (void)flags;
    if (!device_set) return cudaErrorInvalidValue;
    *stream = &the_stream;
    return cudaSuccess;
}

static int legacy_busy = 0;
static int per_thread_busy = 0;

void ks_fake_fault(void) { fault_pending = 1; }

void ks_fake_leave_work(cudaStream_t stream) {
    if (stream == cudaStreamLegacy) legacy_busy = 1;
    if (stream == cudaStreamPerThread) per_thread_busy = 1;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    if (stream == cudaStreamLegacy) return legacy_busy ? cudaErrorNotReady : cudaSuccess;
    if (stream == cudaStreamPerThread) return per_thread_busy ? cudaErrorNotReady : cudaSuccess;
    return fault_pending ? cudaErrorIllegalAddress : cudaSuccess;
}

/* Work the candidate left for the device: the next device synchronize waits this long. */
static long busy_ms = 0;

void ks_fake_busy_ms(long ms) { busy_ms = ms; }

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return cudaStreamQuery(stream); }
cudaError_t cudaDeviceSynchronize(void) {
    if (busy_ms > 0) {
        struct timespec pause = {busy_ms / 1000, (busy_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
        busy_ms = 0;
    }
    return cudaStreamQuery(&the_stream);
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    (void)stream;
    (void)flags;
    log_line("wait", event->name);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    (void)stream;
    log_line("record", event->name);
    return cudaSuccess;
}

cudaError_t ks_fake_launch_trailing_kernel(cudaStream_t stream) {
    (void)stream;
    log_line("launch", "trail");
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    (void)flags;
    struct KsFakeEvent *made = calloc(1, sizeof *made);
    strcpy(made->name, "trail");
    *event = made;
    return cudaSuccess;
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle) {
    struct KsFakeEvent *opened = calloc(1, sizeof *opened);
    memcpy(opened->name, handle.reserved, sizeof opened->name);
    opened->name[sizeof opened->name - 1] = '\0';
    *event = opened;
    return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **pointer, cudaIpcMemHandle_t handle, unsigned int flags) {
    (void)flags;
    char path[65];
    memcpy(path, handle.reserved, 64);
    path[64] = '\0';
    int fd = open(path, O_RDWR);
    if (fd < 0) return cudaErrorInvalidValue;
    struct stat info;
    if (fstat(fd, &info) != 0 || info.st_size == 0) {
        close(fd);
        return cudaErrorInvalidValue;
    }
    void *mapped = mmap(NULL, (size_t)info.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) return cudaErrorInvalidValue;
    *pointer = mapped;
    log_line("open", path);
    return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *pointer) {
    /* The stand-in forgets the size; unmapping one page is enough to make a later write
     * through a forgotten pointer fault, which is what a test of `forget` wants to see. */
    log_line("close", "-");
    return munmap(pointer, 4096) == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

/* The driver's stream memory operations, on the stand-in's synchronous "device": the counter
 * is read or written at once through the mapped file. */
static int fake_wait_value(cudaStream_t stream, unsigned long long address, unsigned int value,
                           unsigned int flags) {
    (void)stream;
    char text[32];
    snprintf(text, sizeof text, "%u", value);
    unsigned int now = *(volatile unsigned int *)(uintptr_t)address;
    if (flags != 0 || (int)(now - value) < 0) {
        log_line("wait-value-unmet", text);
        return 1; /* CUDA_ERROR_INVALID_VALUE: nothing here could ever raise it */
    }
    log_line("wait-value", text);
    return 0;
}

static int fake_write_value(cudaStream_t stream, unsigned long long address, unsigned int value,
                            unsigned int flags) {
    (void)stream;
    (void)flags;
    char text[32];
    snprintf(text, sizeof text, "%u", value);
    *(volatile unsigned int *)(uintptr_t)address = value;
    log_line("write-value", text);
    return 0;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **function,
                                             unsigned int version, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult *found) {
    (void)version;
    (void)flags;
    *function = NULL;
    *found = cudaDriverEntryPointSymbolNotFound;
    if (strcmp(symbol, "cuStreamWaitValue32") == 0) *function = (void *)fake_wait_value;
    if (strcmp(symbol, "cuStreamWriteValue32") == 0) *function = (void *)fake_write_value;
    if (*function != NULL) *found = cudaDriverEntryPointSuccess;
    return cudaSuccess;
}
