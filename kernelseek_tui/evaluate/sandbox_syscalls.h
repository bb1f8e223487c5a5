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
// - what a process run as root could use to reach past its confinement (a review of
//   2026-12-07 afternoon, each tried in a confined child on the CPU box, which runs as root as
//   the GPU boxes do: a BPF kprobe program loaded, perf_event_open and userfaultfd worked):
//   loading or removing kernel modules, kexec, reboot, bpf, perf_event_open, userfaultfd, the
//   key rings, port I/O, new namespaces (unshare, setns), swap, mounts, and
//   prctl(PR_SET_PDEATHSIG), with which the process would outlive a judge that dies;
// - every system call of another ABI (x32, or a foreign architecture's numbers): the filter
//   reads numbers of this one, so those end the process.
//
// And before the filter, every capability is dropped (bounding, ambient, effective, permitted,
// inheritable), with the securebits that keep a root process from regaining them: root's
// capabilities are what made the calls above work, and what the filter does not list
// (CAP_SYS_RAWIO on /dev/mem, CAP_NET_ADMIN through netlink, CAP_DAC_OVERRIDE) goes with them.
// A process that is not root has none to drop.
//
// When: right after Landlock, while the host is still its only thread: a filter binds the
// thread that installs it and every thread and process it starts afterwards.

#pragma once

#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iterator>
#include <string>
#include <vector>

#include "sandbox_confinement.h"  // confinement::failed

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef PR_SET_SECUREBITS
#define PR_SET_SECUREBITS 28
#endif

namespace syscalls {

// How the report begins where the filter is not in place.
const char kNoFilter[] = "no seccomp filter: ";

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


// The system calls refused with EPERM whatever their arguments (those this architecture has).
const long kRefused[] = {
#ifdef SYS_init_module
    SYS_init_module,
#endif
#ifdef SYS_finit_module
    SYS_finit_module,
#endif
#ifdef SYS_delete_module
    SYS_delete_module,
#endif
#ifdef SYS_kexec_load
    SYS_kexec_load,
#endif
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_reboot
    SYS_reboot,
#endif
#ifdef SYS_bpf
    SYS_bpf,
#endif
#ifdef SYS_perf_event_open
    SYS_perf_event_open,
#endif
#ifdef SYS_userfaultfd
    SYS_userfaultfd,
#endif
#ifdef SYS_keyctl
    SYS_keyctl,
#endif
#ifdef SYS_add_key
    SYS_add_key,
#endif
#ifdef SYS_request_key
    SYS_request_key,
#endif
#ifdef SYS_iopl
    SYS_iopl,
#endif
#ifdef SYS_ioperm
    SYS_ioperm,
#endif
#ifdef SYS_unshare
    SYS_unshare,
#endif
#ifdef SYS_setns
    SYS_setns,
#endif
#ifdef SYS_swapon
    SYS_swapon,
#endif
#ifdef SYS_swapoff
    SYS_swapoff,
#endif
#ifdef SYS_mount
    SYS_mount,
#endif
#ifdef SYS_umount2
    SYS_umount2,
#endif
#ifdef SYS_pivot_root
    SYS_pivot_root,
#endif
#ifdef SYS_fsopen
    SYS_fsopen,
#endif
#ifdef SYS_fsmount
    SYS_fsmount,
#endif
#ifdef SYS_move_mount
    SYS_move_mount,
#endif
#ifdef SYS_open_tree
    SYS_open_tree,
#endif
#ifdef SYS_io_uring_setup
    SYS_io_uring_setup,
#endif
};

// Drops every capability this process holds, for good; true when none is left (capget).
inline bool drop_capabilities() {
    // Securebits first (they need CAP_SETPCAP): no capabilities regained by being root, by exec
    // or by a change of uid; each locked. A process without CAP_SETPCAP cannot set them, and has
    // nothing to regain them with either.
    prctl(PR_SET_SECUREBITS, 0x2f /* NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED and their locks */,
          0, 0, 0);
    for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    syscall(SYS_capset, &header, none);
    __user_cap_data_struct left[2] = {};
    if (syscall(SYS_capget, &header, left) != 0) return false;
    return (left[0].effective | left[1].effective | left[0].permitted | left[1].permitted) == 0;
}

inline Filtered refuse_processes_and_sockets() {
#if !defined(__x86_64__) && !defined(__aarch64__)
    return {false, "no seccomp filter: built for an architecture this filter does not know"};
#else
    const __u32 eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    const __u32 enosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
    // The low 32 bits of the first argument (little-endian: at the argument's own offset).
    const __u32 first_argument = offsetof(struct seccomp_data, args[0]);
    std::vector<sock_filter> program = {
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
    };
    for (long refused : kRefused) {
        program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<__u32>(refused), 0, 1));
        program.push_back(BPF_STMT(BPF_RET | BPF_K, eperm));
    }
    const sock_filter rest[] = {
        // prctl(PR_SET_PDEATHSIG, ...): the host dies with its judge; nothing may change that.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, first_argument),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_PDEATHSIG, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, eperm),
        // (the number is reloaded below: the prctl branch may have loaded an argument)
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
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
    program.insert(program.end(), std::begin(rest), std::end(rest));
    sock_fprog filter = {static_cast<unsigned short>(program.size()), program.data()};
    const bool no_capabilities = drop_capabilities();
    // Demanded of a process without CAP_SYS_ADMIN (Landlock has asked it already where it ran).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return {false, confinement::failed("prctl(PR_SET_NO_NEW_PRIVS)", errno, kNoFilter)};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) != 0)
        return {false, confinement::failed("seccomp(SECCOMP_SET_MODE_FILTER)", errno, kNoFilter)};
    return {true, std::string("seccomp: no new process, no socket but unix and netlink, no "
                              "io_uring, no module, bpf, perf, namespace or mount; ") +
                      (no_capabilities ? "no capabilities" : "capabilities left (capget)")};
#endif
}

}  // namespace syscalls
