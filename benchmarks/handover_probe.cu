// What a call handed to another process costs a timed sample, by two ways of handing it over:
// a probe for the judge's isolation (issue "The judge, fast and faithful"), run by hand on the
// GPU box, ideally under MPS (scripts/with_private_mps.sh).
//
// Today the judge brackets an isolated call with interprocess events (evaluate/sandboxed_kernel.py):
// its stream records GO, the kernel's process waits GO, launches, records DONE, and the judge's
// stream waits DONE, all between the judge's two timing events. Measured on an H100 under MPS
// (docs/RELIABILITY.md): 14-17 us added to every timed call, 3-5% of the shortest bench shapes.
// The question this answers: is that cost the interprocess events themselves, and does a
// hand-over through stream memory operations (the judge's stream writes a counter into memory
// the kernel's process has mapped, that process's stream waits for the value, launches, and
// writes a second counter the judge's stream waits for) cost less?
//
// Three modes, each timed exactly as the judge's "flushed" method times a call (a gate holds the
// judge's stream until the sample is enqueued, then the L2 flush, start event, the call, end
// event; one sample at a time), in turn, in rounds (A B C C B A):
//   inproc   the kernel launched on the judge's stream (the reference)
//   events   handed over with interprocess events (as the judge does today)
//   memops   handed over with cuStreamWriteValue32 / cuStreamWaitValue32 on shared memory
// and two kernels: an empty one, and one that keeps one block busy for --busy-us (a handed-over
// figure below the in-process one would mean DONE came before the work ended).
//
// Usage: handover_probe [--samples N] [--rounds R] [--busy-us U]
//        (it starts a copy of itself as the kernel's process: handover_probe --host)
// Build: nvcc -O2 -std=c++17 -arch=sm_90a -o handover_probe benchmarks/handover_probe.cu
// Prints one line per mode and kernel: median us per round, and the difference to inproc.

#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

extern char **environ;

namespace {

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t error_ = (call);                                                        \
        if (error_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                    \
                    cudaGetErrorString(error_));                                            \
            exit(3);                                                                        \
        }                                                                                   \
    } while (0)

typedef CUresult (*WaitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*WriteValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
WaitValue32 g_wait_value = nullptr;
WriteValue32 g_write_value = nullptr;

void *driver_function(const char *name) {
    void *function = nullptr;
    cudaDriverEntryPointQueryResult found;
    CHECK(cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess) {
        fprintf(stderr, "%s not found\n", name);
        exit(3);
    }
    return function;
}

void load_memops() {
    g_wait_value = reinterpret_cast<WaitValue32>(driver_function("cuStreamWaitValue32"));
    g_write_value = reinterpret_cast<WriteValue32>(driver_function("cuStreamWriteValue32"));
}

void check_driver(CUresult result, const char *what) {
    if (result != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: CUresult %d\n", what, static_cast<int>(result));
        exit(3);
    }
}

__global__ void nothing() {}

__global__ void busy(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// The judge's gate (evaluate/gate.py): holds the stream until the host has enqueued the sample.
__global__ void gate(const volatile unsigned long long *released, unsigned long long ticket) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*released < ticket) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > 5000000000ull) break;
    }
}

void launch(int which, unsigned long long busy_ns, cudaStream_t stream) {
    if (which == 0)
        nothing<<<1, 32, 0, stream>>>();
    else
        busy<<<1, 32, 0, stream>>>(busy_ns);
}

std::string hex(const void *data, size_t size) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    const unsigned char *bytes = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i) {
        out.push_back(digits[bytes[i] >> 4]);
        out.push_back(digits[bytes[i] & 15]);
    }
    return out;
}

void unhex(const char *text, void *out, size_t size) {
    unsigned char *bytes = static_cast<unsigned char *>(out);
    for (size_t i = 0; i < size; ++i) {
        unsigned value = 0;
        if (sscanf(text + 2 * i, "%2x", &value) != 1) {
            fprintf(stderr, "bad hex\n");
            exit(3);
        }
        bytes[i] = static_cast<unsigned char>(value);
    }
}

// The kernel's process: opens what the judge shares, then enqueues one call per command.
int host_main() {
    alarm(600);  // never outlive a stuck judge by long
    char line[4096];
    if (fgets(line, sizeof line, stdin) == nullptr) return 2;
    char mem_hex[2 * sizeof(cudaIpcMemHandle_t) + 1], go_hex[2 * sizeof(cudaIpcEventHandle_t) + 1],
        done_hex[2 * sizeof(cudaIpcEventHandle_t) + 1];
    unsigned long long busy_ns = 0;
    if (sscanf(line, "init %128s %128s %128s %llu", mem_hex, go_hex, done_hex, &busy_ns) != 4)
        return 2;
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t go_handle, done_handle;
    unhex(mem_hex, &mem, sizeof mem);
    unhex(go_hex, &go_handle, sizeof go_handle);
    unhex(done_hex, &done_handle, sizeof done_handle);
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr));
    load_memops();
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *flags = nullptr;
    CHECK(cudaIpcOpenMemHandle(&flags, mem, cudaIpcMemLazyEnablePeerAccess));
    cudaEvent_t go, done;
    CHECK(cudaIpcOpenEventHandle(&go, go_handle));
    CHECK(cudaIpcOpenEventHandle(&done, done_handle));
    CUdeviceptr go_flag = reinterpret_cast<CUdeviceptr>(flags);
    CUdeviceptr done_flag = go_flag + 64;  // its own 64 bytes
    printf("ok\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != nullptr) {
        char mode = 0;
        int which = 0;
        unsigned seq = 0;
        if (sscanf(line, "%c %d %u", &mode, &which, &seq) < 2) break;
        if (mode == 'q') break;
        if (mode == 'e') {
            CHECK(cudaStreamWaitEvent(stream, go, 0));
            launch(which, busy_ns, stream);
            CHECK(cudaEventRecord(done, stream));
        } else if (mode == 'm') {
            check_driver(g_wait_value(stream, go_flag, seq, CU_STREAM_WAIT_VALUE_GEQ), "wait GO");
            launch(which, busy_ns, stream);
            check_driver(g_write_value(stream, done_flag, seq, CU_STREAM_WRITE_VALUE_DEFAULT),
                         "write DONE");
        } else if (mode == 's') {
            CHECK(cudaStreamSynchronize(stream));
        }
        CHECK(cudaGetLastError());
        printf("ok\n");
        fflush(stdout);
    }
    CHECK(cudaStreamSynchronize(stream));
    return 0;
}

struct Host {
    pid_t pid = -1;
    FILE *commands = nullptr;
    FILE *replies = nullptr;

    void start(const char *self) {
        int to_host[2], from_host[2];
        if (pipe(to_host) != 0 || pipe(from_host) != 0) exit(3);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, to_host[0], 0);
        posix_spawn_file_actions_adddup2(&actions, from_host[1], 1);
        posix_spawn_file_actions_addclose(&actions, to_host[1]);
        posix_spawn_file_actions_addclose(&actions, from_host[0]);
        char *argv[] = {const_cast<char *>(self), const_cast<char *>("--host"), nullptr};
        if (posix_spawn(&pid, self, &actions, nullptr, argv, environ) != 0) {
            perror("posix_spawn");
            exit(3);
        }
        close(to_host[0]);
        close(from_host[1]);
        commands = fdopen(to_host[1], "w");
        replies = fdopen(from_host[0], "r");
    }

    void ask(const std::string &line) {
        fputs(line.c_str(), commands);
        fputc('\n', commands);
        fflush(commands);
        char reply[256];
        if (fgets(reply, sizeof reply, replies) == nullptr || strncmp(reply, "ok", 2) != 0) {
            fprintf(stderr, "the kernel's process failed on '%s'\n", line.c_str());
            exit(3);
        }
    }
};

struct Judge {
    cudaStream_t stream;
    cudaEvent_t start, end, go, done;
    unsigned long long *released = nullptr;  // pinned, mapped
    unsigned long long ticket = 0;
    unsigned seq = 0;
    void *flush = nullptr;
    size_t flush_bytes = 0;
    CUdeviceptr go_flag = 0, done_flag = 0;
    unsigned long long busy_ns = 0;
    Host host;

    double sample(int mode, int which) {
        ++ticket;
        gate<<<1, 1, 0, stream>>>(released, ticket);
        CHECK(cudaMemsetAsync(flush, static_cast<int>(ticket & 0xff), flush_bytes, stream));
        CHECK(cudaEventRecord(start, stream));
        if (mode == 0) {
            launch(which, busy_ns, stream);
        } else if (mode == 1) {
            CHECK(cudaEventRecord(go, stream));
            host.ask(std::string("e ") + std::to_string(which));
            CHECK(cudaStreamWaitEvent(stream, done, 0));
        } else {
            ++seq;
            check_driver(g_write_value(stream, go_flag, seq, CU_STREAM_WRITE_VALUE_DEFAULT),
                         "write GO");
            host.ask(std::string("m ") + std::to_string(which) + " " + std::to_string(seq));
            check_driver(g_wait_value(stream, done_flag, seq, CU_STREAM_WAIT_VALUE_GEQ),
                         "wait DONE");
        }
        CHECK(cudaEventRecord(end, stream));
        *reinterpret_cast<volatile unsigned long long *>(released) = ticket;
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        return 1000.0 * ms;
    }
};

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--host") == 0) return host_main();
    int samples = 200, rounds = 4;
    double busy_us = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--samples") == 0) samples = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--busy-us") == 0) busy_us = atof(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--samples N] [--rounds R] [--busy-us U]\n", argv[0]);
            return 2;
        }
    }
    alarm(900);
    Judge judge;
    judge.busy_ns = static_cast<unsigned long long>(busy_us * 1000);
    // The kernel's process first: spawned before this process makes its context.
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 3;
    self[n] = '\0';
    judge.host.start(self);

    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr));
    load_memops();
    cudaDeviceProp props;
    CHECK(cudaGetDeviceProperties(&props, 0));
    int driver = 0;
    CHECK(cudaDriverGetVersion(&driver));
    const char *mps = getenv("CUDA_MPS_PIPE_DIRECTORY");
    printf("device: %s, driver API %d, L2 %d MB, MPS pipe: %s\n", props.name, driver,
           props.l2CacheSize >> 20, mps ? mps : "(none)");
    CHECK(cudaStreamCreateWithFlags(&judge.stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&judge.start));
    CHECK(cudaEventCreate(&judge.end));
    CHECK(cudaEventCreateWithFlags(&judge.go, cudaEventDisableTiming | cudaEventInterprocess));
    CHECK(cudaEventCreateWithFlags(&judge.done, cudaEventDisableTiming | cudaEventInterprocess));
    CHECK(cudaHostAlloc(&judge.released, sizeof(unsigned long long), cudaHostAllocMapped));
    *judge.released = 0;
    judge.flush_bytes = std::max<size_t>(2 * static_cast<size_t>(props.l2CacheSize), 64u << 20);
    CHECK(cudaMalloc(&judge.flush, judge.flush_bytes));
    void *flags = nullptr;
    CHECK(cudaMalloc(&flags, 4096));  // an allocation of its own: IPC shares whole allocations
    CHECK(cudaMemset(flags, 0, 4096));
    judge.go_flag = reinterpret_cast<CUdeviceptr>(flags);
    judge.done_flag = judge.go_flag + 64;
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t go_handle, done_handle;
    CHECK(cudaIpcGetMemHandle(&mem, flags));
    CHECK(cudaIpcGetEventHandle(&go_handle, judge.go));
    CHECK(cudaIpcGetEventHandle(&done_handle, judge.done));
    CHECK(cudaDeviceSynchronize());
    judge.host.ask("init " + hex(&mem, sizeof mem) + " " + hex(&go_handle, sizeof go_handle) +
                   " " + hex(&done_handle, sizeof done_handle) + " " +
                   std::to_string(judge.busy_ns));

    const char *mode_names[] = {"inproc", "events", "memops"};
    const char *kernel_names[] = {"empty", "busy"};
    // Warm-up: every mode and kernel a few times.
    for (int which = 0; which < 2; ++which)
        for (int mode = 0; mode < 3; ++mode)
            for (int i = 0; i < 20; ++i) judge.sample(mode, which);
    // medians[which][mode] = one median per block
    std::vector<double> medians[2][3];
    const int order[] = {0, 1, 2, 2, 1, 0};
    for (int round = 0; round < rounds; ++round)
        for (int which = 0; which < 2; ++which)
            for (int mode : order) {
                std::vector<double> block;
                for (int i = 0; i < samples / 2; ++i) block.push_back(judge.sample(mode, which));
                medians[which][mode].push_back(median(block));
            }
    judge.host.ask("s 0 0");
    fputs("q\n", judge.host.commands);
    fflush(judge.host.commands);
    int status = 0;
    waitpid(judge.host.pid, &status, 0);

    printf("kernel | mode | median us per block (%d blocks of %d samples) | median | minus inproc\n",
           2 * rounds, samples / 2);
    for (int which = 0; which < 2; ++which) {
        double reference = median(medians[which][0]);
        for (int mode = 0; mode < 3; ++mode) {
            printf("%s%s | %s |", kernel_names[which],
                   which ? (" " + std::to_string(static_cast<int>(busy_us)) + " us").c_str() : "",
                   mode_names[mode]);
            for (double value : medians[which][mode]) printf(" %.1f", value);
            double middle = median(medians[which][mode]);
            printf(" | %.1f | %+.1f\n", middle, middle - reference);
        }
    }
    printf("kernel's process exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
