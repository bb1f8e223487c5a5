// The process a candidate runs in when the judge isolates it (evaluate/sandbox.py): a small
// C++ program, no Python, no torch, nothing of the judge's. It loads the candidate's library,
// maps the buffers the judge shares with it (CUDA IPC), and on each command enqueues one call:
// wait for the judge's GO event, ks_launch on a stream of its own, record the judge's DONE event.
// The judge times the call with its own events around GO and DONE on its own stream, so nothing
// this process reports is trusted for a figure: a reply only says what was enqueued.
//
// Usage: sandbox_host <reply fd> <fault fd>
// Protocol: one command per line on fd 0, one reply per line on the reply fd ("ok ..." or
// "error <text>"). A CUDA error found asynchronously (a fault in the candidate's kernel) is
// written as "fault <text>" to the fault fd by a watcher thread, which then ends the process, so
// the judge names the fault instead of waiting on a DONE event that will never come. The
// process dies with the judge (PR_SET_PDEATHSIG): a candidate never outlives its judge. It
// confines itself at its start, before any thread or CUDA call (sandbox_confinement.h): no
// write outside its device files and its MPS server's directories, no exec, no TCP; and
// (sandbox_syscalls.h) no new process, no socket but unix and netlink, no io_uring.
//
//   confinement                           replies "ok <how this process confined itself>":
//                                         "landlock abi <n>: writes only under ..." or
//                                         "none: <why not>", then "; seccomp: ..." or
//                                         "; no seccomp filter: <why not>"; at any time
//   device <ordinal> [<uuid-hex>]         set the device, make the context and the stream;
//                                         with a UUID, refuse a device that is not that one
//                                         (the judge's ordinals and ours could differ)
//   slot <k> <go-hex> <done-hex>          open the k-th pair of interprocess events
//   trail                                 from then on every call (call or count) ends,
//                                         after its DONE, with this host's own empty kernel
//                                         on a stream of its own, once the call's stream is
//                                         done; before probe and load (evaluate/
//                                         handover_cost.py says why)
//   probe <path>                          dlopen the judge's empty kernel, called until
//                                         load: the judge measures this very process's
//                                         hand-over before its kernel is in it
//                                         (evaluate/handover_cost.py)
//   load <path>                           dlopen the kernel's library (the rest of the line;
//                                         after the above, so a host can be started and made
//                                         ready before its kernel is known); once per host
//   buffer <id> <mem-hex>                 map one allocation the judge shares
//   forget <id>                           unmap it (before the judge frees it)
//   bind <b> <n> <id>:<offset>... <m> <int>... <f> <float-bits-hex>...
//                                         the arguments of one input set
//   call <b> <k> [probe]                  wait GO[k], ks_launch(bind b), record DONE[k];
//                                         replies "ok <return code>". With "probe", after
//                                         load: the probe's ks_launch instead, so the judge can
//                                         time the probe in turn with the kernel (evaluate/
//                                         handover_cost.py, "in turn")
//   counters <mem-hex>                    the other hand-over: map the judge's allocation
//                                         holding two 32-bit counters (GO at byte 0, DONE at
//                                         byte 64) and fetch the driver's stream memory
//                                         operations
//   count <b> <n> [probe]                 wait until GO >= n (on the GPU, cuStreamWaitValue32),
//                                         ks_launch(bind b), write DONE = n
//                                         (cuStreamWriteValue32); replies "ok <return code>";
//                                         "probe" as for call.
//                                         Half the hand-over of events under MPS (docs/
//                                         BENCHMARKS.md, "Handing a call to another process")
//   sync                                  cudaStreamSynchronize; "ok" or "error <cuda error>"
//   devsync                               cudaDeviceSynchronize (every stream of this process);
//                                         replies "ok <microseconds it waited>" (the judge
//                                         takes a measured run's tail from that, not from the
//                                         pipe's round trip, whose scheduling stalls are not
//                                         the kernel's work)
//   quit
//
// The candidate's printf goes to fd 1, which the judge points at its own stderr.

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "sandbox_confinement.h"
#include "sandbox_syscalls.h"

namespace {

typedef int (*LaunchFn)(void **tensors, const int64_t *ints, const double *floats, void *stream);

struct Binding {
    std::vector<int> buffers;  // the ids its tensors point into
    std::vector<void *> tensors;
    std::vector<int64_t> ints;
    std::vector<double> floats;
};

const int kMaxLine = 1 << 16;
int g_reply_fd = -1;
int g_fault_fd = -1;

cudaStream_t g_stream = nullptr;
// The judge's trailing launch's stream ("trail", below); null until then.
cudaStream_t g_trail_stream = nullptr;
// Held while a stream is made and published, and while the watcher thread queries the streams:
// the watcher must never see a stream the runtime is still making. Both streams are made into
// a local and published under it. Why: on an H200 (2026-12-06, 23:09) a new host's watcher
// found "invalid resource handle" on the trailing stream right after "trail" (the stream was
// then made straight into the global the watcher reads), and once on an H100 (21:05) one in
// "setup" on the call stream; each failed an evaluation whose kernel had not run yet. That the
// runtime writes the handle before it answers for it is the likely cause, not a proven one.
pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;

// Makes a stream and publishes it in ``*published`` (under g_streams_lock).
cudaError_t make_stream(cudaStream_t *published) {
    pthread_mutex_lock(&g_streams_lock);
    cudaStream_t made = nullptr;
    cudaError_t error = cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking);
    if (error == cudaSuccess) *published = made;
    pthread_mutex_unlock(&g_streams_lock);
    return error;
}
// The driver's stream memory operations (cuStreamWaitValue32, cuStreamWriteValue32), fetched
// through the runtime so the host needs no link to the driver library. Their CUresult is an
// int, CUstream a cudaStream_t, CUdeviceptr a 64-bit address; flags 0 are "wait until >="
// (cyclic) and "write after the work before it, with a memory fence".
typedef int (*StreamValue32)(cudaStream_t, unsigned long long, unsigned int, unsigned int);
StreamValue32 g_wait_value = nullptr;
StreamValue32 g_write_value = nullptr;
unsigned long long g_go_counter = 0, g_done_counter = 0;
std::map<int, cudaEvent_t> g_go, g_done;
std::map<int, void *> g_buffers;
std::map<int, Binding> g_bindings;
LaunchFn g_launch = nullptr;
pthread_mutex_t g_reply_lock = PTHREAD_MUTEX_INITIALIZER;

void write_all(int fd, const char *text, size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, text, size);
        if (n <= 0) _exit(5);  // the judge is gone: nothing left to do
        text += n;
        size -= static_cast<size_t>(n);
    }
}

void reply(const std::string &text) {
    pthread_mutex_lock(&g_reply_lock);
    std::string line = text + "\n";
    write_all(g_reply_fd, line.data(), line.size());
    pthread_mutex_unlock(&g_reply_lock);
}

std::string cuda_text(cudaError_t error) {
    return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

bool decode_hex(const char *hex, void *out, size_t size) {
    if (strlen(hex) != 2 * size) return false;
    unsigned char *bytes = static_cast<unsigned char *>(out);
    for (size_t i = 0; i < size; ++i) {
        unsigned value = 0;
        if (sscanf(hex + 2 * i, "%2x", &value) != 1) return false;
        bytes[i] = static_cast<unsigned char>(value);
    }
    return true;
}

// Splits a command line on spaces; the line is short (kMaxLine) and ours.
std::vector<std::string> words(const char *line) {
    std::vector<std::string> out;
    std::string word;
    for (const char *c = line; *c != '\0' && *c != '\n'; ++c) {
        if (*c == ' ') {
            if (!word.empty()) out.push_back(word);
            word.clear();
        } else {
            word.push_back(*c);
        }
    }
    if (!word.empty()) out.push_back(word);
    return out;
}

bool parse_long(const std::string &text, long long *out) {
    char *end = nullptr;
    *out = strtoll(text.c_str(), &end, 10);
    return end != text.c_str() && *end == '\0';
}

// The command being handled, or the last one handled, and how many came before it: the fault
// line names them. Why: a fault's reason said only the judge's phase ("setup"), which spans
// a dozen commands; one on an H100 (2026-12-06) could not be placed. Guarded, as the watcher
// thread reads it.
pthread_mutex_t g_command_lock = PTHREAD_MUTEX_INITIALIZER;
std::string g_last_command;
long long g_commands = 0;

// Its first words only, each cut short: enough to place it, never a line of handles.
void note_command(const std::vector<std::string> &w) {
    std::string text;
    for (size_t i = 0; i < w.size() && i < 3; ++i) {
        if (i > 0) text += ' ';
        text += w[i].size() > 16 ? w[i].substr(0, 16) + "..." : w[i];
    }
    pthread_mutex_lock(&g_command_lock);
    g_last_command = text;
    ++g_commands;
    pthread_mutex_unlock(&g_command_lock);
}

std::string last_command() {
    pthread_mutex_lock(&g_command_lock);
    std::string text = "its process's command " + std::to_string(g_commands) + ", '" +
                        g_last_command + "'";
    pthread_mutex_unlock(&g_command_lock);
    return text;
}

// Polls the streams: an asynchronous error (the candidate's kernel faulted) is sticky, so the
// next call would fail anyway; saying so now lets the judge name it while its own stream still
// waits on DONE. The trailing launch's stream too (set by "trail"): an error only there would
// otherwise go unseen until the next trailing launch.
void *watch_stream(void *) {
    const timespec pause = {0, 20 * 1000 * 1000};
    for (;;) {
        nanosleep(&pause, nullptr);
        pthread_mutex_lock(&g_streams_lock);
        const char *where = "";
        cudaError_t state = g_stream == nullptr ? cudaSuccess : cudaStreamQuery(g_stream);
        if ((state == cudaSuccess || state == cudaErrorNotReady) && g_trail_stream != nullptr) {
            state = cudaStreamQuery(g_trail_stream);
            where = " on the judge's trailing stream";
        }
        pthread_mutex_unlock(&g_streams_lock);
        if (state == cudaSuccess || state == cudaErrorNotReady) continue;
        std::string line =
            "fault " + cuda_text(state) + " (found" + where + " after " + last_command() + ")\n";
        write_all(g_fault_fd, line.data(), line.size());
        _exit(4);
    }
    return nullptr;
}

std::string command_device(const std::vector<std::string> &w) {
    long long ordinal = 0;
    const char *usage = "error usage: device <ordinal> [<uuid-hex>]";
    if (w.size() < 2 || w.size() > 3 || !parse_long(w[1], &ordinal)) return usage;
    if (w.size() == 3) {
        cudaUUID_t wanted;
        if (!decode_hex(w[2].c_str(), &wanted, sizeof wanted)) return usage;
        cudaDeviceProp props;
        cudaError_t error = cudaGetDeviceProperties(&props, static_cast<int>(ordinal));
        if (error != cudaSuccess) return "error " + cuda_text(error);
        if (memcmp(&props.uuid, &wanted, sizeof wanted) != 0)
            return "error device " + w[1] + " here is not the judge's GPU (its UUID differs)";
    }
    cudaError_t error = cudaSetDevice(static_cast<int>(ordinal));
    if (error == cudaSuccess) error = cudaFree(nullptr);  // the context, now
    if (error == cudaSuccess) error = make_stream(&g_stream);
    return error == cudaSuccess ? "ok" : "error " + cuda_text(error);
}

std::string command_slot(const std::vector<std::string> &w) {
    long long k = 0;
    cudaIpcEventHandle_t go, done;
    if (w.size() != 4 || !parse_long(w[1], &k) || !decode_hex(w[2].c_str(), &go, sizeof go) ||
        !decode_hex(w[3].c_str(), &done, sizeof done))
        return "error usage: slot <k> <go-hex> <done-hex>";
    cudaEvent_t go_event = nullptr, done_event = nullptr;
    cudaError_t error = cudaIpcOpenEventHandle(&go_event, go);
    if (error == cudaSuccess) error = cudaIpcOpenEventHandle(&done_event, done);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    g_go[static_cast<int>(k)] = go_event;
    g_done[static_cast<int>(k)] = done_event;
    return "ok";
}

// True while the kernel loaded is the judge's probe, which one load may replace.
bool g_probing = false;
// The probe's ks_launch, kept once the kernel is loaded: a call or count ending in "probe"
// runs it, so the judge can time it in turn with the kernel's calls, in the state they leave
// the process in (evaluate/handover_cost.py, "in turn"). It needs no buffer: the judge's
// empty kernel reads nothing.
LaunchFn g_probe_launch = nullptr;

// The judge's trailing launch ("trail"): an empty kernel of this host's own after every call's
// DONE, on a stream of its own that waits for the call's stream. Why: on an H100 (2026-12-06) a
// process that launched a kernel after its calls' DONE, even one that ends at once, read its
// calls about 6 us cheaper than the same process idle, and the judge, which takes out a
// hand-over measured with its probe, read such a kernel up to 9% fast against FA3. With the
// judge's own launch after every call, the probe's included, every process is in that state
// already, and its hand-over is measured in it (docs/RELIABILITY.md, "A process that lowers
// its own hand-over"). The kernel is the host's own, not the probe's (evaluate/
// empty_kernel.cu): the probe's kernel trailing its own calls did not lower the probe's
// hand-over where a different kernel did (same H100 session).
bool g_trail = false;
cudaEvent_t g_trail_event = nullptr;

#ifdef __CUDACC__
__global__ void ks_trailing_kernel() {}

cudaError_t launch_trailing_kernel(cudaStream_t stream) {
    ks_trailing_kernel<<<1, 32, 0, stream>>>();
    return cudaGetLastError();
}
#else
// Built without nvcc (the CPU tests' stand-in runtime, tests/data/fake_cudart): no device
// code; the stand-in logs the launch.
extern "C" cudaError_t ks_fake_launch_trailing_kernel(cudaStream_t stream);

cudaError_t launch_trailing_kernel(cudaStream_t stream) {
    return ks_fake_launch_trailing_kernel(stream);
}
#endif

std::string command_trail(const std::vector<std::string> &w) {
    if (w.size() != 1) return "error usage: trail";
    if (g_launch != nullptr) return "error the trail comes before the probe and the kernel";
    if (g_trail) return "error the trail is set already";
    cudaError_t error = make_stream(&g_trail_stream);
    if (error == cudaSuccess)
        error = cudaEventCreateWithFlags(&g_trail_event, cudaEventDisableTiming);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    g_trail = true;
    return "ok";
}

// After a call's DONE: the trailing launch, if the judge set one. Empty when all is well.
std::string trail_call() {
    if (!g_trail) return "";
    cudaError_t error = cudaEventRecord(g_trail_event, g_stream);
    if (error == cudaSuccess) error = cudaStreamWaitEvent(g_trail_stream, g_trail_event, 0);
    if (error == cudaSuccess) error = launch_trailing_kernel(g_trail_stream);
    // cudaGetLastError after the launch also returns a launch error the kernel's own call left
    // unreported, so the reason names both.
    if (error != cudaSuccess)
        return "error the judge's trailing launch, or a launch error the kernel left unreported: " +
               cuda_text(error);
    return "";
}

// The reply to a call whose DONE is on the stream: the trailing launch first, whatever the call
// did; then ``left`` (the kernel left work outside its stream), the trail's error, or the code.
std::string reply_after_done(int code, const std::string &left) {
    std::string trailed = trail_call();
    if (!left.empty()) return left;
    return trailed.empty() ? "ok " + std::to_string(code) : trailed;
}

// "load <path>" or "probe <path>": the library named by the rest of the line, its ks_launch
// called from then on. A kernel loaded for good is never replaced.
std::string command_load(const char *line, const char *command) {
    if (g_launch != nullptr && !g_probing) return "error a kernel is loaded already";
    bool probe = strcmp(command, "probe") == 0;
    if (probe && g_launch != nullptr) return "error the probe comes before the kernel";
    // The kernel sees none of the probe's buffers (nor bindings, which go with them).
    if (g_probing && !g_buffers.empty()) return "error the probe's buffers are still mapped";
    const char *path = line + strlen(command);
    while (*path == ' ') ++path;
    std::string library_path(path);
    if (!library_path.empty() && library_path.back() == '\n') library_path.pop_back();
    if (library_path.empty()) return std::string("error usage: ") + command + " <path>";
    void *library = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return std::string("error dlopen: ") + dlerror();
    LaunchFn launch = reinterpret_cast<LaunchFn>(dlsym(library, "ks_launch"));
    if (launch == nullptr) return "error the library does not export ks_launch";
    g_launch = launch;
    g_probing = probe;
    if (probe) g_probe_launch = launch;
    return "ok";
}

std::string command_buffer(const std::vector<std::string> &w) {
    long long id = 0;
    cudaIpcMemHandle_t handle;
    if (w.size() != 3 || !parse_long(w[1], &id) || !decode_hex(w[2].c_str(), &handle, sizeof handle))
        return "error usage: buffer <id> <mem-hex>";
    if (g_buffers.count(static_cast<int>(id))) return "error buffer " + w[1] + " is mapped already";
    void *pointer = nullptr;
    cudaError_t error = cudaIpcOpenMemHandle(&pointer, handle, cudaIpcMemLazyEnablePeerAccess);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    g_buffers[static_cast<int>(id)] = pointer;
    return "ok";
}

std::string command_forget(const std::vector<std::string> &w) {
    long long id = 0;
    if (w.size() != 2 || !parse_long(w[1], &id)) return "error usage: forget <id>";
    auto found = g_buffers.find(static_cast<int>(id));
    if (found == g_buffers.end()) return "error buffer " + w[1] + " is not mapped";
    // Bindings that point into it go too: no later call may reach unmapped memory.
    for (auto it = g_bindings.begin(); it != g_bindings.end();) {
        bool uses = false;
        for (int used : it->second.buffers) {
            uses = uses || used == found->first;
        }
        it = uses ? g_bindings.erase(it) : std::next(it);
    }
    cudaError_t error = cudaIpcCloseMemHandle(found->second);
    g_buffers.erase(found);
    return error == cudaSuccess ? "ok" : "error " + cuda_text(error);
}

std::string command_bind(const std::vector<std::string> &w) {
    const char *usage = "error usage: bind <b> <n> <id>:<offset>... <m> <int>... <f> <bits>...";
    long long b = 0, count = 0;
    size_t at = 1;
    if (w.size() < 3 || !parse_long(w[at++], &b)) return usage;
    Binding binding;
    if (!parse_long(w[at++], &count) || count < 0 || at + count > w.size()) return usage;
    for (long long i = 0; i < count; ++i, ++at) {
        const std::string &pair = w[at];
        size_t colon = pair.find(':');
        long long id = 0, offset = 0;
        if (colon == std::string::npos || !parse_long(pair.substr(0, colon), &id) ||
            !parse_long(pair.substr(colon + 1), &offset) || offset < 0)
            return usage;
        auto found = g_buffers.find(static_cast<int>(id));
        if (found == g_buffers.end()) return "error buffer " + pair.substr(0, colon) + " is not mapped";
        binding.buffers.push_back(found->first);
        binding.tensors.push_back(static_cast<char *>(found->second) + offset);
    }
    if (at >= w.size() || !parse_long(w[at++], &count) || count < 0 || at + count > w.size())
        return usage;
    for (long long i = 0; i < count; ++i, ++at) {
        long long value = 0;
        if (!parse_long(w[at], &value)) return usage;
        binding.ints.push_back(value);
    }
    if (at >= w.size() || !parse_long(w[at++], &count) || count < 0 || at + count != w.size())
        return usage;
    for (long long i = 0; i < count; ++i, ++at) {
        double value = 0;
        if (!decode_hex(w[at].c_str(), &value, sizeof value)) return usage;
        binding.floats.push_back(value);
    }
    // Never an empty array: ks_launch may read its first element whatever the task says.
    if (binding.ints.empty()) binding.ints.push_back(0);
    if (binding.floats.empty()) binding.floats.push_back(0.0);
    g_bindings[static_cast<int>(b)] = binding;
    return "ok";
}

// Which ks_launch a call or count runs: the loaded one, or with a last word "probe" (at
// ``plain``, the command's length without it) the probe's. Null, with ``why`` set, if neither.
LaunchFn chosen_launch(const std::vector<std::string> &w, size_t plain, std::string *why) {
    if (w.size() == plain) {
        if (g_launch == nullptr) *why = "error the candidate is not loaded";
        return g_launch;
    }
    if (w[plain] != "probe") {
        *why = "error the last word of " + w[0] + " may only be probe";
        return nullptr;
    }
    if (g_probe_launch == nullptr) *why = "error no probe was given (probe <path> first)";
    return g_probe_launch;
}

// The launch both hand-overs share: ``launch`` (the kernel's or the probe's), then whether it
// left work on a default stream. ``error`` is empty when all is well.
int launch_candidate(LaunchFn launch, Binding &args, std::string *error) {
    int code = launch(args.tensors.data(), args.ints.data(), args.floats.data(), g_stream);
    // The only other streams a kernel can reach (it may not create one) are the default ones;
    // work left on them runs outside the judge's events, beside whatever it times next.
    const char *other = nullptr;
    if (cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady) other = "the legacy default stream";
    if (cudaStreamQuery(cudaStreamPerThread) == cudaErrorNotReady) other = "the per-thread stream";
    if (other != nullptr)
        *error = std::string("error work outside the given stream: ") + other +
                 " still had work when ks_launch returned (kernels run on the stream it is given)";
    return code;
}

std::string command_call(const std::vector<std::string> &w) {
    long long b = 0, k = 0;
    if (w.size() < 3 || w.size() > 4 || !parse_long(w[1], &b) || !parse_long(w[2], &k))
        return "error usage: call <b> <k> [probe]";
    auto binding = g_bindings.find(static_cast<int>(b));
    if (binding == g_bindings.end()) return "error binding " + w[1] + " does not exist";
    if (!g_go.count(static_cast<int>(k))) return "error slot " + w[2] + " does not exist";
    std::string left;
    LaunchFn launch = chosen_launch(w, 3, &left);
    if (launch == nullptr) return left;
    cudaError_t error = cudaStreamWaitEvent(g_stream, g_go[static_cast<int>(k)], 0);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    int code = launch_candidate(launch, binding->second, &left);
    // DONE is recorded whatever ks_launch did: the judge's stream waits on it.
    error = cudaEventRecord(g_done[static_cast<int>(k)], g_stream);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    return reply_after_done(code, left);
}

std::string fetch_driver_function(const char *name, StreamValue32 *out) {
    void *function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t error =
        cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
#else
    cudaError_t error = cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found);
#endif
    if (error != cudaSuccess) return "error " + cuda_text(error);
    if (found != cudaDriverEntryPointSuccess || function == nullptr)
        return std::string("error the driver has no ") + name;
    *out = reinterpret_cast<StreamValue32>(function);
    return "ok";
}

std::string command_counters(const std::vector<std::string> &w) {
    cudaIpcMemHandle_t handle;
    if (w.size() != 2 || !decode_hex(w[1].c_str(), &handle, sizeof handle))
        return "error usage: counters <mem-hex>";
    if (g_go_counter != 0) return "error the counters are mapped already";
    std::string fetched = fetch_driver_function("cuStreamWaitValue32", &g_wait_value);
    if (fetched == "ok") fetched = fetch_driver_function("cuStreamWriteValue32", &g_write_value);
    if (fetched != "ok") return fetched;
    void *pointer = nullptr;
    cudaError_t error = cudaIpcOpenMemHandle(&pointer, handle, cudaIpcMemLazyEnablePeerAccess);
    if (error != cudaSuccess) return "error " + cuda_text(error);
    g_go_counter = reinterpret_cast<unsigned long long>(pointer);
    g_done_counter = g_go_counter + 64;  // a cache line of its own
    return "ok";
}

std::string command_count(const std::vector<std::string> &w) {
    long long b = 0, n = 0;
    if (w.size() < 3 || w.size() > 4 || !parse_long(w[1], &b) || !parse_long(w[2], &n) ||
        n < 0 || n > 0xffffffffLL)
        return "error usage: count <b> <n> [probe]";
    auto binding = g_bindings.find(static_cast<int>(b));
    if (binding == g_bindings.end()) return "error binding " + w[1] + " does not exist";
    if (g_go_counter == 0) return "error the counters are not mapped (counters <mem-hex> first)";
    std::string error;
    LaunchFn launch = chosen_launch(w, 3, &error);
    if (launch == nullptr) return error;
    unsigned int value = static_cast<unsigned int>(n);
    int result = g_wait_value(g_stream, g_go_counter, value, 0);
    if (result != 0)
        return "error cuStreamWaitValue32 failed (CUresult " + std::to_string(result) + ")";
    int code = launch_candidate(launch, binding->second, &error);
    // DONE is written whatever ks_launch did: the judge's stream waits on it.
    result = g_write_value(g_stream, g_done_counter, value, 0);
    if (result != 0)
        return "error cuStreamWriteValue32 failed (CUresult " + std::to_string(result) + ")";
    return reply_after_done(code, error);
}

// How this process confined itself at its start (sandbox_confinement.h), or why it did not.
std::string g_confinement;

#ifdef __CUDACC__
// A GPU's files: the NVIDIA device files and /dev/shm among /dev's entries, but no block, raw
// storage or memory device (sandbox_confinement.h says why).
std::vector<std::string> device_files() { return confinement::writable_device_entries("/dev"); }

long landlock_abi_here() { return confinement::landlock_abi(); }

syscalls::Filtered filter_syscalls_here() { return syscalls::refuse_processes_and_sockets(); }
#else
// Built on the CPU tests' stand-in runtime: its "device" is files in a directory of the test's
// (null: none), and a test may have it hide Landlock (the errno its kernel would answer with;
// 0: the real kernel answers), to see the host say it is unconfined.
extern "C" const char *ks_fake_device_directory(void);
extern "C" int ks_fake_hidden_landlock(void);
extern "C" int ks_fake_hidden_seccomp(void);

std::vector<std::string> device_files() {
    const char *directory = ks_fake_device_directory();
    if (directory == nullptr) return {};
    return {directory};
}

long landlock_abi_here() {
    int hidden = ks_fake_hidden_landlock();
    if (hidden == 0) return confinement::landlock_abi();
    errno = hidden;
    return -1;
}

// The stand-in may leave the filter out (KS_FAKE_SECCOMP=absent), so a test can show an attempt
// working in a host without it.
syscalls::Filtered filter_syscalls_here() {
    if (ks_fake_hidden_seccomp()) return {false, "no seccomp filter: left out by the stand-in"};
    return syscalls::refuse_processes_and_sockets();
}
#endif

// Where this process may write once confined: its device files, the directories of the MPS
// server it joins (its pipes, sockets and log) where the environment names them, and its own
// /proc entries.
std::vector<std::string> writable_places() {
    std::vector<std::string> places = device_files();
    for (const char *variable : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"}) {
        const char *directory = getenv(variable);
        if (directory != nullptr && *directory != '\0') places.push_back(directory);
    }
    // This process's own /proc entries (the path resolves to /proc/<our pid> when the rule is
    // made): CUDA's set-up writes there, and confined without it the first CUDA call failed
    // with cudaErrorOperatingSystem (H100, 2026-12-07 07:20; granting /tmp, /run, /var, /sys
    // or $HOME instead did not help). Never /proc itself: as root that would be the sysctls.
    places.push_back("/proc/self");
    return places;
}

std::string command_sync(bool device) {
    timespec began, ended;
    clock_gettime(CLOCK_MONOTONIC, &began);
    cudaError_t error = device ? cudaDeviceSynchronize() : cudaStreamSynchronize(g_stream);
    clock_gettime(CLOCK_MONOTONIC, &ended);
    if (error == cudaSuccess) error = cudaGetLastError();
    if (error != cudaSuccess) return "error " + cuda_text(error);
    if (!device) return "ok";
    long long waited_us = (static_cast<long long>(ended.tv_sec - began.tv_sec) * 1000000000LL +
                           (ended.tv_nsec - began.tv_nsec)) / 1000;
    return "ok " + std::to_string(waited_us);
}

}  // namespace

int main(int argc, char **argv) {
    long long reply_fd = -1, fault_fd = -1;
    if (argc != 3 || !parse_long(argv[1], &reply_fd) || !parse_long(argv[2], &fault_fd)) {
        fprintf(stderr, "usage: %s <reply fd> <fault fd>\n", argv[0]);
        return 2;
    }
    g_reply_fd = static_cast<int>(reply_fd);
    g_fault_fd = static_cast<int>(fault_fd);
    // Killed with the judge; a judge gone before this line leaves us to init: end now.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) return 5;
    // First, while this is the process's only thread and no CUDA call has made any of its own:
    // Landlock confines only the thread that asks and what it starts afterwards.
    // Unless the judge's user turned it off (KERNELSEEK_CONFINEMENT=off, set in our environment
    // by the judge before we started: no candidate code can have set it).
    const char *unconfined = getenv("KS_HOST_UNCONFINED");
    confinement::Confinement confined =
        unconfined != nullptr && strcmp(unconfined, "1") == 0
            ? confinement::Confinement{false, "none: turned off (KERNELSEEK_CONFINEMENT=off)"}
            : confinement::confine_writes_to(writable_places(), landlock_abi_here());
    g_confinement = confined.said;
    // Then, still the only thread, the system calls Landlock leaves (sandbox_syscalls.h),
    // unless the judge's user asked for Landlock alone (KERNELSEEK_CONFINEMENT=landlock).
    const char *unfiltered = getenv("KS_HOST_NO_SECCOMP");
    if (unfiltered != nullptr && strcmp(unfiltered, "1") == 0)
        g_confinement += "; no seccomp filter: turned off (KERNELSEEK_CONFINEMENT=landlock)";
    else if (unconfined == nullptr || strcmp(unconfined, "1") != 0)
        g_confinement += "; " + filter_syscalls_here().said;
    // Confined, the driver's JIT cache (~/.nv/ComputeCache) is not writable: told so before
    // CUDA starts, the driver compiles PTX (this host's trailing kernel, the judge's probe)
    // without it instead of finding out by EACCES.
    if (confined.confined) setenv("CUDA_CACHE_DISABLE", "1", 1);
    pthread_t watcher;
    pthread_create(&watcher, nullptr, watch_stream, nullptr);
    static char line[kMaxLine];
    while (fgets(line, sizeof line, stdin) != nullptr) {
        if (strchr(line, '\n') == nullptr && !feof(stdin)) {
            reply("error line too long");
            return 2;
        }
        std::vector<std::string> w = words(line);
        if (w.empty()) continue;
        note_command(w);
        const std::string &name = w[0];
        std::string answer;
        if (name == "quit") {
            reply("ok");
            return 0;
        } else if (name == "confinement") {
            answer = w.size() == 1 ? "ok " + g_confinement : "error usage: confinement";
        } else if (name == "device") {
            answer = command_device(w);
        } else if (g_stream == nullptr) {
            answer = "error the device is not set (device <ordinal> first)";
        } else if (name == "slot") {
            answer = command_slot(w);
        } else if (name == "trail") {
            answer = command_trail(w);
        } else if (name == "load" || name == "probe") {
            answer = command_load(line, name.c_str());
        } else if (name == "buffer") {
            answer = command_buffer(w);
        } else if (name == "forget") {
            answer = command_forget(w);
        } else if (name == "bind") {
            answer = command_bind(w);
        } else if (name == "call") {
            answer = command_call(w);
        } else if (name == "counters") {
            answer = command_counters(w);
        } else if (name == "count") {
            answer = command_count(w);
        } else if (name == "sync") {
            answer = command_sync(false);
        } else if (name == "devsync") {
            answer = command_sync(true);
        } else {
            answer = "error unknown command " + name;
        }
        reply(answer);
    }
    return 0;  // the judge closed the commands: it is done with this candidate
}
