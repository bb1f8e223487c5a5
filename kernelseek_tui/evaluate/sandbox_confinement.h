// The candidate's process confined with Landlock (Linux 5.13 and later; no privilege needed),
// for evaluate/sandbox_host.cpp, which includes it. The host's build key (evaluate/
// sandbox_host.py) hashes this file with the source; the GPU tests' patched copies of the
// source find it with -I.
//
// Why. The host runs as the judge's own user, with the judge's filesystem and network. A
// kernel's code, reached from its ks_launch, can find the C library through its own GOT (no
// forbidden symbol named) and call open, write, fork and execve: overwrite the judge's build
// cache (a kernel.so per source hash), the cached host binary, the starting kernel's cached
// times or the judge's own .py files (which the next worker would import), or start a CUDA
// process of its own (a red-team review). Confined, every such write or exec fails with
// EACCES.
//
// When: at the host's start, before its first thread and before any CUDA call. Landlock
// confines the thread that asks and the threads and processes it starts afterwards, never a
// thread already running; and a thread left unconfined is one a kernel's code can take over,
// since it shares that thread's memory (rewrite the GOT entry the fault watcher calls every
// 20 ms, and the next call runs the kernel's code unconfined). Seen on Linux 6.18: a thread
// started before landlock_restrict_self created a file the confined thread could not. Confined
// after CUDA's set-up, CUDA's own threads, made with the context, would be such threads. So
// CUDA's set-up runs confined too, and what it writes is granted below.
//
// What is refused (handled with no rule): every filesystem right that writes (write, truncate,
// create a file, directory, socket, FIFO, device node or link, remove, rename across
// directories, ioctl on a device) outside the places granted, and EXECUTE everywhere: the host
// never runs another program, and CUDA's one helper that it might (nvidia-modprobe, making
// device files) has made them by the time the judge's worker holds its own context. With ABI 4
// and later TCP too (bind and connect, no rule: no TCP at all); with ABI 6 and later, signals
// to and abstract unix sockets of processes outside this one's domain.
//
// What is granted, all rights but EXECUTE, device nodes, symlinks and renames across directories:
// - /dev's entries (the stand-in runtime of the CPU tests names a directory of its own): the
//   NVIDIA device files (/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm: opened read-write,
//   driven by ioctl) and /dev/shm (CUDA's interprocess events, MPS's shared memory) among them;
//   since 2026-12-07 afternoon each entry on its own, and no block device, no raw storage or
//   memory device, nothing holding one (writable_device_entries): until then "/dev" whole,
//   which let a root process write a disk's blocks;
// - CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY where set: the MPS server this process
//   joins (the judge's own keeps both in a fresh /tmp/kernelseek-mps.* of its own,
//   evaluate/private_mps.py).
// - /proc/self, resolved to this process's own /proc/<pid> when the rule is made: CUDA's set-up
//   writes there (an H100, 2026-12-07: without it the first CUDA call of a confined host failed
//   with cudaErrorOperatingSystem). Only this process's entries, never /proc (as root, the
//   sysctls), and no way out through them: Landlock judges a path reached through a magic link
//   (/proc/self/root/..., /proc/self/cwd/...) by where it really lies, so those stay refused
//   (tests/test_sandbox_confinement.py).
// Nothing else: not the working directory (the host writes nothing there), and not the JIT
// cache (~/.nv/ComputeCache), which the judge's own processes read: a kernel writing it could
// hand the judge code of its making. Candidates are built to sm_90a SASS and need no JIT; the
// host's trailing kernel and the judge's empty kernel, built without -arch (sm_75 SASS and its
// PTX), are compiled from their PTX by the driver on an H100 or H200: a confined host tells
// the driver to keep no cache (CUDA_CACHE_DISABLE=1) rather than leave it to find the cache
// unwritable.
//
// Reads are not handled at all (not merely granted on "/"): a read stays allowed everywhere,
// as before, including through paths outside "/" (a pipe reopened through /proc/self/fd).
//
// Landlock also keeps a confined process from ptrace-ing a process outside its domain: the
// kernel asks Landlock in its ptrace access checks, so PTRACE_ATTACH, process_vm_writev and
// opening /proc/<judge>/mem fail (EACCES/EPERM). Without that, a kernel with no write right
// left could still rewrite the unconfined judge's memory, and so its verdicts, through
// /proc/<judge>/mem. Read-mode accesses (/proc/<judge>/environ) were refused to an ordinary
// user but allowed to root on Linux 6.18 (2026-12-07): reads are not what this confinement
// keeps, and the judge's environment is best kept free of secrets a kernel could read.

#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/types.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

// What an older <linux/landlock.h> lacks: numbers fixed by the kernel's ABI.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)  // ABI 2
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // ABI 3
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)  // ABI 4
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)  // ABI 5
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // ABI 6
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace confinement {

// The newest ABI this file knows: a newer kernel is asked only for what this one handles.
const long kKnownAbi = 7;

// The kernel's struct landlock_ruleset_attr as of ABI 6 (an older header declares only its
// first field). An older kernel accepts it whole as long as the fields it does not know are 0.
struct RulesetAttributes {
    __u64 handled_access_fs;
    __u64 handled_access_net;
    __u64 scoped;
};

const __u64 kReads = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// What a granted place allows: writing in every way, but no exec, no device node (CAP_MKNOD
// would be needed anyway), no symlink, no rename out of or into another directory.
const __u64 kWrites = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                      LANDLOCK_ACCESS_FS_IOCTL_DEV | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                      LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                      LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                      LANDLOCK_ACCESS_FS_MAKE_FIFO;
// The rights that apply to a file, not a directory (a granted place that is a file).
const __u64 kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                          LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                          LANDLOCK_ACCESS_FS_IOCTL_DEV;

// The running kernel's Landlock ABI version; -1 with errno ENOSYS (not built in) or
// EOPNOTSUPP (built in, not enabled at boot) without one.
inline long landlock_abi() {
    return syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

// The filesystem rights a kernel of ``abi`` knows, each ABI adding its own.
inline __u64 filesystem_rights(long abi) {
    __u64 rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: execute to make_sym
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return rights;
}

// What the confinement came to: whether it holds, and how ("landlock abi 7: ...") or why not
// ("none: ..."), as the host reports it.
struct Confinement {
    bool confined;
    std::string said;
};

// "<prefix><what> failed: <strerror> (errno N)": why a confinement is not in place.
inline std::string failed(const char *what, int error, const char *prefix = "none: ") {
    return std::string(prefix) + what + " failed: " + strerror(error) + " (errno " +
           std::to_string(error) + ")";
}

// Why there is no Landlock, from the ABI query's errno.
inline std::string without_landlock(int error) {
    if (error == ENOSYS) return "none: this kernel has no Landlock (ENOSYS)";
    if (error == EOPNOTSUPP)
        return "none: Landlock is built into this kernel but not enabled (EOPNOTSUPP; the boot "
               "parameter lsm= must name landlock)";
    return failed("asking the kernel's Landlock ABI", error);
}

// How many threads this process has; 0 if /proc cannot tell.
inline int thread_count() {
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == nullptr) return 0;
    int count = 0;
    while (dirent *entry = readdir(tasks)) {
        if (entry->d_name[0] != '.') ++count;
    }
    closedir(tasks);
    return count;
}

// What the kernel of ``abi`` could not be asked to refuse, for the report.
inline std::string left_unhandled(long abi) {
    std::vector<std::string> left;
    if (abi < 3) left.push_back("truncate()");
    if (abi < 4) left.push_back("TCP");
    if (abi < 5) left.push_back("ioctl on devices");
    if (abi < 6) left.push_back("signals and abstract unix sockets to other processes");
    if (left.empty()) return "";
    std::string text = "; not refused by this kernel's Landlock: ";
    for (size_t i = 0; i < left.size(); ++i) text += (i > 0 ? ", " : "") + left[i];
    return text;
}

// The character devices of raw storage and of memory, by name (SCSI generic, NVMe controllers
// and their generic namespaces, the block layer's SCSI nodes, /dev/mem, /dev/kmem, /dev/port):
// through them a process could reach what the filesystem rules guard, as through a block device.
inline bool raw_storage_or_memory(const std::string &name) {
    if (name == "mem" || name == "kmem" || name == "port" || name == "bsg") return true;
    for (const char *prefix : {"sg", "ng", "nvme"}) {
        const size_t length = strlen(prefix);
        if (name.compare(0, length, prefix) == 0 && name.size() > length &&
            name[length] >= '0' && name[length] <= '9')
            return true;
    }
    return false;
}

// Whether ``path`` is, or holds within ``depth`` levels, a block device or a raw storage or
// memory device; a link is not followed (Landlock judges a path by where it leads).
inline bool holds_raw_device(const std::string &path, const std::string &name, int depth) {
    struct stat info;
    if (lstat(path.c_str(), &info) != 0) return true;  // unknown: not granted
    if (S_ISBLK(info.st_mode)) return true;
    if (S_ISCHR(info.st_mode)) return raw_storage_or_memory(name);
    if (!S_ISDIR(info.st_mode)) return false;
    if (depth == 0) return true;  // too deep to look through: not granted
    DIR *directory = opendir(path.c_str());
    if (directory == nullptr) return true;
    bool found = false;
    while (dirent *entry = readdir(directory)) {
        const std::string child = entry->d_name;
        if (child == "." || child == "..") continue;
        if (holds_raw_device(path + "/" + child, child, depth - 1)) {
            found = true;
            break;
        }
    }
    closedir(directory);
    return found;
}

// The entries of ``dev`` (a GPU's /dev) a kernel's process may write: all but block devices,
// the raw storage and memory devices, directories holding any of them, and links. A process
// run as root may write a disk's blocks by their owner's permission, no capability needed, and
// with them every file the judge keeps (a review, 2026-12-07); the GPU's own files (the NVIDIA
// device files, /dev/shm, /dev/null) are none of those.
inline std::vector<std::string> writable_device_entries(const std::string &dev) {
    std::vector<std::string> places;
    DIR *directory = opendir(dev.c_str());
    if (directory == nullptr) return places;
    while (dirent *entry = readdir(directory)) {
        const std::string name = entry->d_name;
        if (name == "." || name == "..") continue;
        const std::string path = dev + "/" + name;
        struct stat info;
        if (lstat(path.c_str(), &info) != 0 || S_ISLNK(info.st_mode)) continue;
        if (!holds_raw_device(path, name, 3)) places.push_back(path);
    }
    closedir(directory);
    std::sort(places.begin(), places.end());
    return places;
}

// How the granted places read in the report: one by one, but the entries of /dev granted each
// on its own (writable_device_entries), which are counted.
inline std::string described(const std::vector<std::string> &granted) {
    std::string text;
    size_t devices = 0;
    for (const std::string &place : granted) {
        if (place.compare(0, 5, "/dev/") == 0) {
            ++devices;
            continue;
        }
        text += (text.empty() ? "" : ", ") + place;
    }
    if (devices > 0) {
        std::string dev = "/dev (" + std::to_string(devices) +
                          " of its entries: no block, raw storage or memory device)";
        text = text.empty() ? dev : dev + ", " + text;
    }
    return text.empty() ? "nothing" : text;
}

// Adds the rule granting ``rights`` (writes) beneath ``place``; false with ``*why`` set when it
// could not. A place that does not exist is left out (there is nothing there to write).
inline bool grant(int ruleset, const std::string &place, __u64 rights, std::string *why,
                  std::vector<std::string> *granted) {
    int fd = open(place.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return true;
    if (fd < 0) {
        *why = failed(("opening " + place).c_str(), errno);
        return false;
    }
    struct stat info;
    if (fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) rights &= kFileRights;
    landlock_path_beneath_attr beneath = {};
    beneath.allowed_access = rights;
    beneath.parent_fd = fd;
    long added = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    int error = errno;
    close(fd);
    if (added != 0) {
        *why = failed(("granting writes under " + place).c_str(), error);
        return false;
    }
    granted->push_back(place);
    return true;
}

// Confines this process (this thread and all it starts from now on) to writing only beneath
// ``writable``, running no program, and with a recent enough kernel to no TCP and no signal or
// abstract unix socket outside it; ``abi``: landlock_abi()'s answer, errno set when it is -1.
// The caller goes on either way and says which (the judge decides whether it may).
inline Confinement confine_writes_to(const std::vector<std::string> &writable, long abi) {
    if (abi < 1) return {false, without_landlock(errno)};
    int threads = thread_count();
    if (threads > 1)
        return {false, "none: " + std::to_string(threads) +
                           " threads were running before the confinement, and Landlock would "
                           "leave all but one of them unconfined"};
    long used = abi < kKnownAbi ? abi : kKnownAbi;
    RulesetAttributes attributes = {};
    attributes.handled_access_fs = filesystem_rights(used) & ~kReads;
    if (used >= 4)
        attributes.handled_access_net =
            LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    if (used >= 6) attributes.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    int ruleset = static_cast<int>(
        syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0));
    if (ruleset < 0) return {false, failed("landlock_create_ruleset", errno)};
    __u64 writes = kWrites & attributes.handled_access_fs;
    std::string why;
    std::vector<std::string> granted;
    for (const std::string &place : writable) {
        if (!grant(ruleset, place, writes, &why, &granted)) {
            close(ruleset);
            return {false, why};
        }
    }
    // Landlock demands it of a process without CAP_SYS_ADMIN: no exec could give it privileges
    // its domain does not allow (and exec is refused here anyway).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        int error = errno;
        close(ruleset);
        return {false, failed("prctl(PR_SET_NO_NEW_PRIVS)", error)};
    }
    long restricted = syscall(SYS_landlock_restrict_self, ruleset, 0);
    int error = errno;
    close(ruleset);
    if (restricted != 0) return {false, failed("landlock_restrict_self", error)};
    std::string said = "landlock abi " + std::to_string(abi) + ": writes only under ";
    said += described(granted);
    said += "; no exec";
    if (used >= 4) said += "; no TCP";
    if (used >= 6) said += "; no signal to, nor abstract unix socket of, another process";
    return {true, said + left_unhandled(used)};
}

}  // namespace confinement
