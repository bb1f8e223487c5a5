// System calls refused to the candidate's process with a seccomp filter, beside Landlock
// (sandbox_confinement.h), for evaluate/sandbox_host.cpp, which includes it. The host's build
// key (evaluate/sandbox_host.py) hashes this file with the source.
//
// Why. Landlock leaves a confined process free to start processes and to talk over any socket
// but TCP (docs/RELIABILITY.md, "Kernels in a process of their own"): a kernel's code, reached
// from ks_launch, could fork a child that outlives its host (confined, but still running on the
// judge's machine after the verdict), or send what it read (reads are not confined) over UDP or
// a raw socket. Neither is needed by the host or by CUDA once the host runs: CUDA's threads are
// threads (clone with CLONE_THREAD), its MPS client speaks over a unix socket.
//
// What is refused, each with EPERM unless said:
// - a new process: fork, vfork, and clone without CLONE_THREAD; clone3 answers ENOSYS (its
//   flags lie in a struct a filter cannot read), and the C library then falls back to clone,
//   whose flags it can;
// - a socket of any family but unix and netlink (no IP, no packet socket, nothing that leaves
//   the machine);
// - io_uring_setup: io_uring runs socket and file operations without the system calls a filter
//   sees;
// - every system call of another ABI (x32, or a foreign architecture's numbers): the filter
//   reads numbers of this one, so those end the process.
//
// When: right after Landlock, while the host is still its only thread: a filter binds the
// thread that installs it and every thread and process it starts afterwards.

#pragma once

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

namespace syscalls {

#if defined(__x86_64__)
const __u32 kArchitecture = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
const __u32 kArchitecture = AUDIT_ARCH_AARCH64;
#endif
// x32 system calls reach the x86-64 entry with this bit set in their number.
const __u32 kX32Bit = 0x40000000;

// What the filter came to, as the host reports it ("seccomp: ..." or "no seccomp filter: ...").
struct Filtered {
    bool filtered;
    std::string said;
};

inline std::string refused_because(const char *what, int error) {
    return std::string("no seccomp filter: ") + what + " failed: " + strerror(error) + " (errno " +
           std::to_string(error) + ")";
}

inline Filtered refuse_processes_and_sockets() {
#if !defined(__x86_64__) && !defined(__aarch64__)
    return {false, "no seccomp filter: built for an architecture this filter does not know"};
#else
    const __u32 eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    const __u32 enosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
    // The low 32 bits of the first argument (little-endian: at the argument's own offset).
    const __u32 first_argument = offsetof(struct seccomp_data, args[0]);
    sock_filter program[] = {
        // Another architecture's numbers mean other calls: end the process.
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArchitecture, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#ifdef SYS_fork
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fork, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, eperm),
#endif
#ifdef SYS_vfork
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vfork, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, eperm),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, enosys),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, eperm),
        // clone: a thread (CLONE_THREAD in its flags) passes; anything else is a new process.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, first_argument),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, eperm),
        // socket: unix and netlink pass; every other family is refused.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, first_argument),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, eperm),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog filter = {static_cast<unsigned short>(sizeof program / sizeof program[0]), program};
    // Demanded of a process without CAP_SYS_ADMIN (Landlock has asked it already where it ran).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return {false, refused_because("prctl(PR_SET_NO_NEW_PRIVS)", errno)};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) != 0)
        return {false, refused_because("seccomp(SECCOMP_SET_MODE_FILTER)", errno)};
    return {true, "seccomp: no new process, no socket but unix and netlink, no io_uring"};
#endif
}

}  // namespace syscalls
