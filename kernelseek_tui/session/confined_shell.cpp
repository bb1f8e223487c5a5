// The agent's shell, confined with Landlock before it runs: session/shell_confinement.py builds
// this and runs every `shell` tool call through it.
//
//     confined_shell PLACE... -- PROGRAM ARG...
//
// Why. The agent's file tools stay inside its workspace, but its shell ran as the user with
// the user's every right: one command could slow the task's starting kernel (inflating every
// speedup), widen a tolerance, edit the judge's own code, the cached times of the starting
// kernel, the session's trace or git's objects, or stop the judge's processes while a peer is
// timed (docs/RELIABILITY.md, "The agent's shell and the judge's files").
//
// What it keeps (evaluate/sandbox_confinement.h does the same for the kernels' processes, with
// more refused): writes of every kind (write, truncate, create, remove, rename across
// directories, ioctl on a device) only beneath the PLACEs given (the workspace and a temporary
// directory of the shell's own) and a few of /dev's entries: the NVIDIA device files (the agent
// may run its own programs on the GPU), null, zero, full, random, urandom and shm (Python's
// multiprocessing) - not the terminals (a review, 2026-12-07 late: TIOCSTI on a person's
// terminal typed a "question" into the attached app), nor any other device. With ABI 4 and
// later, TCP only to and from ports 49152-49215 (Nsight Compute's, between ncu and the program
// it profiles): no other local server (the served app, which takes keystrokes over a
// websocket), and no network. With ABI 6 and later no signal to, nor abstract unix socket of, a
// process outside the shell's own domain (the judge, its workers, the kernels' processes).
// Reads and program execution are left as they were: the agent builds and runs its own code,
// and may read anything the user can.
//
// If Landlock cannot confine it, nothing is run: it writes "kernelseek-confine: <why>" on
// stderr and exits 125, and the caller decides (it says so and runs the shell unconfined).

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "sandbox_confinement.h"

#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2
struct landlock_net_port_attr {
    __u64 allowed_access;
    __u64 port;
} __attribute__((packed));
#endif

namespace {

const int kNotConfined = 125;
// Nsight Compute's ports: ncu connects to the program it profiles on the first free one.
const int kFirstProfilerPort = 49152;
const int kLastProfilerPort = 49215;

// The /dev entries the shell may write: the GPU's and the harmless ones.
bool writable_device(const std::string &name) {
    static const char *kHarmless[] = {"null", "zero", "full", "random", "urandom", "shm"};
    if (name.rfind("nvidia", 0) == 0) return true;
    for (const char *harmless : kHarmless)
        if (name == harmless) return true;
    return false;
}

int refuse(const std::string &why) {
    fprintf(stderr, "kernelseek-confine: %s\n", why.c_str());
    return kNotConfined;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> places;
    int command = -1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--") == 0) {
            command = i + 1;
            break;
        }
        places.push_back(argv[i]);
    }
    if (command < 0 || command >= argc) return refuse("usage: confined_shell PLACE... -- PROGRAM");
    long abi = confinement::landlock_abi();
    if (abi < 1) return refuse(confinement::without_landlock(errno));
    long used = abi < confinement::kKnownAbi ? abi : confinement::kKnownAbi;
    confinement::RulesetAttributes attributes = {};
    attributes.handled_access_fs = confinement::filesystem_rights(used) &
                                   ~confinement::kReads & ~LANDLOCK_ACCESS_FS_EXECUTE;
    const __u64 tcp = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    if (used >= 4) attributes.handled_access_net = tcp;
    if (used >= 6) attributes.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    int ruleset = static_cast<int>(
        syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0));
    if (ruleset < 0) return refuse(confinement::failed("landlock_create_ruleset", errno, ""));
    __u64 writes = confinement::kWrites & attributes.handled_access_fs;
    for (const std::string &entry : confinement::writable_device_entries("/dev")) {
        std::string name = entry.substr(entry.find_last_of('/') + 1);
        if (writable_device(name)) places.push_back(entry);
    }
    for (int port = kFirstProfilerPort; used >= 4 && port <= kLastProfilerPort; ++port) {
        landlock_net_port_attr rule = {};
        rule.allowed_access = tcp;
        rule.port = static_cast<__u64>(port);
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_NET_PORT, &rule, 0) != 0)
            return refuse(confinement::failed("granting TCP port", errno, ""));
    }
    std::string why;
    std::vector<std::string> granted;
    for (const std::string &place : places) {
        if (!confinement::grant(ruleset, place, writes, &why, &granted)) return refuse(why);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return refuse(confinement::failed("prctl(PR_SET_NO_NEW_PRIVS)", errno, ""));
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
        return refuse(confinement::failed("landlock_restrict_self", errno, ""));
    close(ruleset);
    execvp(argv[command], argv + command);
    return refuse(confinement::failed(("running " + std::string(argv[command])).c_str(), errno, ""));
}
