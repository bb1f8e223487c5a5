"""The candidate's process confined (evaluate/sandbox_confinement.h), on the CPU.

The host is built on the stand-in runtime (tests/sandbox_support.py) and confines itself at its
start as the real one does; the stand-in's "device" is the directory of its log, which it may
write as a GPU's host may write /dev. A test candidate tries, from its ks_launch, what a
red-team review did from a real one (evaluate/sandbox_confinement.h, "Why"): create, write,
truncate, remove or rename a file elsewhere, run a program, open a TCP connection, signal or
read the judge's process. Confined, each fails; the same candidate in a host that the stand-in
tells there is no Landlock (``KS_FAKE_LANDLOCK=absent``) succeeds, so each test can fail. Where
this machine's kernel has no Landlock, those tests are skipped; the report of an unconfined
host, and the judge refusing one when told to, are tested everywhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import socket
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import build_fake_host, compile_candidate, handle, have_compilers

from kernelseek_tui.evaluate.sandbox_host import (
    CONFINEMENT_VARIABLE,
    REQUIRE_CONFINEMENT_VARIABLE,
    SandboxError,
    SandboxHost,
    bind_command,
)

pytestmark = pytest.mark.skipif(not have_compilers(), reason="needs gcc and g++")


def landlock_abi() -> tuple[int, str]:
    """This machine's Landlock ABI version (0 without), and why there is none."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): the same number on
    # every architecture.
    version = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if version >= 1:
        return int(version), ""
    return 0, os.strerror(ctypes.get_errno())


ABI, NO_LANDLOCK = landlock_abi()
# How a host with its seccomp filter ends its answer (evaluate/sandbox_syscalls.h).
FILTERED = (
    "; seccomp: no new process, no socket but unix and netlink, no io_uring, no module, bpf, "
    "perf, namespace or mount; no capabilities"
)
needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"this kernel has no Landlock ({NO_LANDLOCK})")


def needs_abi(version: int, what: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        version > ABI, reason=f"Landlock refuses {what} from ABI {version}; this kernel's: {ABI}"
    )


@pytest.fixture(scope="module")
def fake_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_host(tmp_path_factory.mktemp("fake_host"))


@pytest.fixture
def device_dir() -> Iterator[Path]:
    """The stand-in's device: its log and the candidate's output buffer (a path of under 64
    bytes, as the stand-in's handles hold it)."""
    path = Path(tempfile.mkdtemp(prefix="ks", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def c_text(path: Path | str) -> str:
    """A path as a C string literal (JSON's escapes are C's for these)."""
    return json.dumps(str(path))


def attempt(
    fake_host: Path,
    device_dir: Path,
    build_dir: Path,
    body: str,
    *,
    landlock: str | None = None,
    ints: tuple[int, ...] = (),
    environment: dict[str, str] | None = None,
) -> int:
    """What ``body`` gave in ks_launch, in a host of its own: the C body sets ``result`` (0:
    it worked; else an errno, ``tried(call)`` gives it). ``landlock`` "absent": the stand-in
    tells the host there is no Landlock, which leaves it unconfined."""
    source = build_dir / "attempt.c"
    source.write_text(
        textwrap.dedent(
            """
            #include <errno.h>
            #include <fcntl.h>
            #include <netinet/in.h>
            #include <pthread.h>
            #include <signal.h>
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <sys/prctl.h>
            #include <sys/socket.h>
            #include <sys/stat.h>
            #include <sys/syscall.h>
            #include <sys/wait.h>
            #include <unistd.h>
            /* 0 where a call worked, else the errno it failed with. */
            static int tried(long returned) { return returned < 0 ? errno : 0; }
            static void *nothing(void *arg) { return arg; }
            int ks_launch(void **t, const int64_t *n, const double *f, void *stream) {
                (void)n; (void)f; (void)stream;
                int result = -1;
            """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "\n    memcpy(t[0], &result, sizeof result);\n    return 0;\n}\n"
    )
    library = compile_candidate(source, build_dir / "libattempt.so")
    out = device_dir / "out.bin"
    out.write_bytes(bytes(16))
    extra = {"KS_FAKE_LOG": str(device_dir / "log"), **(environment or {})}
    if landlock is not None:
        extra["KS_FAKE_LANDLOCK"] = landlock
    host = SandboxHost(fake_host, extra_environment=extra)
    try:
        host.ask("device", 0)
        host.ask("slot", 0, handle("go0").hex(), handle("done0").hex())
        host.ask("load", library)
        host.ask("buffer", 0, handle(str(out)).hex())
        host.ask(bind_command(0, [(0, 0)], list(ints), []))
        assert host.ask("call", 0, 0) == "0"
    finally:
        host.close()
    return int.from_bytes(out.read_bytes()[:4], "little", signed=True)


def confined_and_not(
    fake_host: Path, device_dir: Path, build_dir: Path, body: str, **kwargs: object
) -> tuple[int, int]:
    """``attempt`` confined, then in a host left unconfined: no Landlock, no seccomp filter."""
    confined = attempt(fake_host, device_dir, build_dir, body, **kwargs)  # type: ignore[arg-type]
    environment = {**(kwargs.pop("environment", None) or {}), "KS_FAKE_SECCOMP": "absent"}  # type: ignore[dict-item]
    unconfined = attempt(
        fake_host,
        device_dir,
        build_dir,
        body,
        landlock="absent",
        environment=environment,
        **kwargs,  # type: ignore[arg-type]
    )
    return confined, unconfined


@needs_landlock
def test_the_host_says_how_it_confined_itself(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    pipe = tmp_path / "mps-pipe"
    pipe.mkdir()
    host = SandboxHost(
        fake_host,
        extra_environment={
            "KS_FAKE_LOG": str(device_dir / "log"),
            "CUDA_MPS_PIPE_DIRECTORY": str(pipe),
            # Named but not there: nothing to grant.
            "CUDA_MPS_LOG_DIRECTORY": str(tmp_path / "no-such-log"),
        },
    )
    try:
        said = host.confinement()
    finally:
        host.close()
    assert said.startswith(
        f"landlock abi {ABI}: writes only under {device_dir}, {pipe}, /proc/self; no exec"
    )
    assert ("; no TCP" in said) == (ABI >= 4)
    assert "no-such-log" not in said


@needs_landlock
def test_the_real_host_grants_writes_under_dev_and_its_own_proc_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host as the judge builds it (nvcc), not the stand-in's: its device files are /dev.
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    from kernelseek_tui.evaluate.sandbox_host import host_executable

    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    host = SandboxHost(host_executable())
    try:
        said = host.confinement()
    finally:
        host.close()
    assert said.startswith(f"landlock abi {ABI}: writes only under /dev (")
    assert "of its entries: no block, raw storage or memory device), /proc/self; no exec" in said


def test_the_device_entries_granted_hold_no_block_raw_storage_or_memory_device(
    tmp_path: Path,
) -> None:
    # What a real host grants under /dev (sandbox_confinement.h, writable_device_entries), on
    # this machine's own /dev: a root process may write a disk's blocks by their owner's
    # permission, so no block device (nor a directory holding one) may be among them.
    import stat

    harness = tmp_path / "entries.cpp"
    harness.write_text(
        '#include "sandbox_confinement.h"\n#include <cstdio>\n'
        "int main() {\n"
        '    for (const std::string &place : confinement::writable_device_entries("/dev"))\n'
        '        std::printf("%s\\n", place.c_str());\n'
        "}\n"
    )
    program = tmp_path / "entries"
    evaluate_dir = Path(__file__).parents[1] / "kernelseek_tui" / "evaluate"
    subprocess.run(
        ["g++", "-std=c++17", f"-I{evaluate_dir}", "-o", str(program), str(harness)], check=True
    )
    granted = subprocess.run(
        [str(program)], check=True, capture_output=True, text=True
    ).stdout.split()
    assert "/dev/null" in granted
    raw = {"mem", "kmem", "port"}
    for place in granted:
        mode = os.lstat(place).st_mode
        assert not stat.S_ISBLK(mode) and not stat.S_ISLNK(mode), place
        assert Path(place).name not in raw, place
        if stat.S_ISDIR(mode):
            for inner, _, files in os.walk(place):
                for name in files:
                    with contextlib.suppress(OSError):
                        assert not stat.S_ISBLK(os.lstat(Path(inner) / name).st_mode), place
    blocks = [p for p in Path("/dev").iterdir() if stat.S_ISBLK(p.lstat().st_mode)]
    assert not set(map(str, blocks)) & set(granted)


VICTIM = "the judge's file\n"
ROOT_CREATE = 'result = tried(open("/proc/self/root" NEW, O_CREAT | O_WRONLY, 0644));'
ROOT_WRITE = 'result = tried(open("/proc/self/root" VICTIM, O_WRONLY));'


@needs_landlock
@pytest.mark.parametrize(
    ("what", "body"),
    [
        ("create", "result = tried(open(NEW, O_CREAT | O_WRONLY, 0644));"),
        ("write", "result = tried(open(VICTIM, O_WRONLY));"),
        ("open truncating", "result = tried(open(VICTIM, O_RDONLY | O_TRUNC));"),
        ("remove", "result = tried(unlink(VICTIM));"),
        ("rename", "result = tried(rename(VICTIM, NEW));"),
        ("make a directory", "result = tried(mkdir(NEW, 0755));"),
        ("make a symlink", "result = tried(symlink(VICTIM, NEW));"),
        ("make a FIFO", "result = tried(mkfifo(NEW, 0644));"),
        # Its own /proc entries are granted (CUDA writes there): not a way to the rest.
        ("create through /proc/self/root", ROOT_CREATE),
        ("write through /proc/self/root", ROOT_WRITE),
    ],
)
def test_a_confined_candidate_writes_no_file_outside_its_device(
    fake_host: Path, device_dir: Path, tmp_path: Path, what: str, body: str
) -> None:
    # ``tmp_path`` stands for the judge's files: its build cache, its sources.
    victim, new = tmp_path / "victim.txt", tmp_path / "new"
    body = body.replace("VICTIM", c_text(victim)).replace("NEW", c_text(new))
    victim.write_text(VICTIM)
    confined = attempt(fake_host, device_dir, tmp_path, body)
    assert confined == errno.EACCES, os.strerror(confined)
    assert victim.read_text() == VICTIM and not new.exists()
    # The same attempt unconfined works: the refusal above is the confinement's.
    assert attempt(fake_host, device_dir, tmp_path, body, landlock="absent") == 0


@needs_landlock
@needs_abi(3, "truncate()")
def test_a_confined_candidate_truncates_no_file(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    body = f"result = tried(truncate({c_text(victim)}, 0));"
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (errno.EACCES, 0)


@needs_landlock
def test_a_confined_candidate_may_write_its_device_files(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # On a GPU, /dev: the NVIDIA device files and /dev/shm, which CUDA writes.
    made = device_dir / "made-by-the-kernel"
    body = f"""
        int fd = open({c_text(made)}, O_CREAT | O_WRONLY, 0644);
        result = fd < 0 ? errno : tried(write(fd, "x", 1));
    """
    assert attempt(fake_host, device_dir, tmp_path, body) == 0
    assert made.read_text() == "x"


@needs_landlock
def test_a_confined_candidate_may_write_its_own_proc_entries(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # CUDA's set-up writes there (sandbox_confinement.h): refused, the first CUDA call failed.
    body = """
        int fd = open("/proc/thread-self/comm", O_WRONLY);
        result = fd < 0 ? errno : tried(write(fd, "ks-host", 7));
    """
    assert attempt(fake_host, device_dir, tmp_path, body) == 0


@needs_landlock
def test_a_confined_host_tells_the_driver_to_keep_no_jit_cache(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # The driver's cache of kernels compiled from PTX (~/.nv/ComputeCache) is not writable once
    # confined; told before CUDA starts, the driver compiles without it.
    body = """
        const char *disabled = getenv("CUDA_CACHE_DISABLE");
        result = disabled != NULL && strcmp(disabled, "1") == 0;
    """
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (1, 0)


@needs_landlock
def test_a_confined_candidate_runs_no_program(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    program = shutil.which("true")
    assert program is not None
    # In a child, so that an exec that works does not replace the host: the child's exit
    # status is the exec's errno, or true's 0. Confined, the fork itself is refused (seccomp),
    # and the exec is tried in the host, where Landlock refuses it.
    body = f"""
        char *const argv[] = {{(char *){c_text(program)}, NULL}};
        pid_t child = fork();
        if (child < 0) {{
            execve(argv[0], argv, NULL);
            result = errno;
        }} else if (child == 0) {{
            execve(argv[0], argv, NULL);
            _exit(errno);
        }} else {{
            int status = 0;
            waitpid(child, &status, 0);
            result = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
        }}
    """
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (errno.EACCES, 0)


@needs_landlock
def test_a_confined_candidate_still_reads_files(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # Reads are not refused anywhere (the library itself was loaded after the confinement).
    readable = tmp_path / "readable.txt"
    readable.write_text("42")
    body = f"""
        char text[2] = {{0}};
        int fd = open({c_text(readable)}, O_RDONLY);
        if (fd < 0) result = -errno;
        else result = read(fd, text, 2) == 2 ? (text[0] - '0') * 10 + (text[1] - '0') : -1;
    """
    assert attempt(fake_host, device_dir, tmp_path, body) == 42


@needs_landlock
def test_a_confined_candidate_cannot_reach_into_the_judges_memory(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # Its parent is the judge (here, this test). Landlock refuses a confined process every
    # ptrace access of attach mode to a process outside its domain: /proc/<pid>/mem opened to
    # write, PTRACE_ATTACH, process_vm_writev.
    body = """
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
        result = tried(open(path, O_RDWR));
    """
    confined, unconfined = confined_and_not(fake_host, device_dir, tmp_path, body)
    if unconfined != 0:
        pytest.skip(f"here even an unconfined process may not ({os.strerror(unconfined)}: Yama?)")
    assert confined == errno.EACCES, os.strerror(confined)


@needs_landlock
@needs_abi(4, "TCP")
def test_a_confined_candidate_opens_no_tcp_connection(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        body = """
            struct sockaddr_in to;
            memset(&to, 0, sizeof to);
            to.sin_family = AF_INET;
            to.sin_port = htons((uint16_t)n[0]);
            to.sin_addr.s_addr = htonl(0x7f000001);
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            result = fd < 0 ? errno : tried(connect(fd, (struct sockaddr *)&to, sizeof to));
        """
        outcome = confined_and_not(fake_host, device_dir, tmp_path, body, ints=(port,))
        # Landlock alone refuses the connection; with the seccomp filter the socket itself is
        # refused first (sandbox_syscalls.h).
        landlock_alone = attempt(
            fake_host,
            device_dir,
            tmp_path,
            body,
            ints=(port,),
            environment={"KS_FAKE_SECCOMP": "absent"},
        )
    assert outcome == (errno.EPERM, 0)
    assert landlock_alone == errno.EACCES


@needs_landlock
@needs_abi(6, "signals to other processes")
def test_a_confined_candidate_signals_no_other_process(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # Signal 0 only asks whether the signal may be sent: SIGSTOP to the judge mid-timing would
    # be one that matters.
    body = "result = tried(kill(getppid(), 0));"
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (errno.EPERM, 0)


@pytest.mark.parametrize(
    ("kernel", "said"),
    [
        ("absent", "none: this kernel has no Landlock (ENOSYS)"),
        (
            "disabled",
            "none: Landlock is built into this kernel but not enabled (EOPNOTSUPP; the boot "
            "parameter lsm= must name landlock)",
        ),
    ],
)
def test_without_landlock_the_host_says_it_is_unconfined_and_goes_on(
    fake_host: Path, device_dir: Path, tmp_path: Path, kernel: str, said: str
) -> None:
    host = SandboxHost(fake_host, extra_environment={"KS_FAKE_LANDLOCK": kernel})
    try:
        assert host.confinement() == said + FILTERED
    finally:
        host.close()
    # And a kernel is loaded and called as before.
    body = "result = 7;"
    assert attempt(fake_host, device_dir, tmp_path, body, landlock=kernel) == 7


def test_told_to_the_judge_refuses_a_process_that_could_not_confine_itself(
    fake_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_CONFINEMENT_VARIABLE, "1")
    host = SandboxHost(
        fake_host, who="the best kernel", extra_environment={"KS_FAKE_LANDLOCK": "absent"}
    )
    try:
        with pytest.raises(SandboxError) as refused:
            host.confinement()
    finally:
        host.close()
    assert refused.value.kind == "error"  # the machine's doing, not the kernel's
    assert refused.value.reason == (
        "the best kernel's process could not confine itself (none: this kernel has no "
        f"Landlock (ENOSYS){FILTERED}), and {REQUIRE_CONFINEMENT_VARIABLE}=1 forbids judging a "
        "kernel unconfined"
    )


@needs_landlock
def test_told_to_the_judge_refuses_a_process_without_its_seccomp_filter(
    fake_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_CONFINEMENT_VARIABLE, "1")
    host = SandboxHost(fake_host, extra_environment={"KS_FAKE_SECCOMP": "absent"})
    try:
        with pytest.raises(SandboxError, match="could not confine itself") as refused:
            host.confinement()
    finally:
        host.close()
    assert "no seccomp filter: left out by the stand-in" in refused.value.reason


@needs_landlock
def test_told_to_the_judge_takes_a_confined_process(
    fake_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_CONFINEMENT_VARIABLE, "1")
    host = SandboxHost(fake_host)
    try:
        assert host.confinement().startswith(f"landlock abi {ABI}: ")
    finally:
        host.close()


@needs_landlock
def test_turned_off_by_the_judges_user_the_host_is_unconfined_and_says_so(
    fake_host: Path, device_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The way out for a machine where CUDA cannot start confined: the judge's own variable,
    # read before the host starts. The same attempt is refused where it is left on.
    outside = tmp_path / "outside"
    outside.mkdir()
    body = f"result = tried(open({c_text(outside / 'made')}, O_CREAT | O_WRONLY, 0600));"
    assert attempt(fake_host, device_dir, tmp_path, body) == errno.EACCES
    monkeypatch.setenv(CONFINEMENT_VARIABLE, "off")
    host = SandboxHost(fake_host)
    try:
        assert host.confinement() == "none: turned off (KERNELSEEK_CONFINEMENT=off)"
    finally:
        host.close()
    assert attempt(fake_host, device_dir, tmp_path, body) == 0


# The seccomp filter (evaluate/sandbox_syscalls.h): what Landlock leaves, refused whether or not
# this kernel has Landlock.


def test_a_confined_candidate_starts_no_process(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    body = """
        pid_t child = fork();
        if (child == 0) _exit(0);
        if (child > 0) waitpid(child, NULL, 0);
        result = child < 0 ? errno : 0;
    """
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (errno.EPERM, 0)
    # Nor by the clone call a C library's fork or posix_spawn makes (no CLONE_THREAD).
    body = """
        long child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
        if (child == 0) _exit(0);
        if (child > 0) waitpid((pid_t)child, NULL, 0);
        result = child < 0 ? errno : 0;
    """
    assert confined_and_not(fake_host, device_dir, tmp_path, body) == (errno.EPERM, 0)


def test_a_confined_candidate_still_starts_threads(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # CUDA makes threads of its own: clone with CLONE_THREAD passes, clone3 falls back to it.
    body = """
        pthread_t thread;
        int made = pthread_create(&thread, NULL, nothing, NULL);
        if (made == 0) pthread_join(thread, NULL);
        result = made;
    """
    assert attempt(fake_host, device_dir, tmp_path, body) == 0


@pytest.mark.parametrize(
    ("family", "kind"),
    [("AF_INET", "SOCK_DGRAM"), ("AF_INET6", "SOCK_DGRAM"), ("AF_INET", "SOCK_STREAM")],
)
def test_a_confined_candidate_opens_no_ip_socket(
    fake_host: Path, device_dir: Path, tmp_path: Path, family: str, kind: str
) -> None:
    body = f"""
        int fd = socket({family}, {kind}, 0);
        result = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
    """
    confined, unconfined = confined_and_not(fake_host, device_dir, tmp_path, body)
    if unconfined != 0:
        pytest.skip(f"here even an unconfined process may not ({os.strerror(unconfined)})")
    assert confined == errno.EPERM, os.strerror(confined)


def test_a_confined_candidate_may_open_a_unix_socket(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # The MPS client speaks to its server over one.
    body = """
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        result = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
    """
    assert attempt(fake_host, device_dir, tmp_path, body) == 0


def test_a_confined_candidate_sets_up_no_io_uring(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # io_uring would make sockets and open files without the calls the filter sees.
    body = """
        unsigned char params[120];
        memset(params, 0, sizeof params);
        long ring = syscall(SYS_io_uring_setup, 1L, params);
        result = ring < 0 ? errno : 0;
        if (ring >= 0) close((int)ring);
    """
    confined, unconfined = confined_and_not(fake_host, device_dir, tmp_path, body)
    if unconfined != 0:
        pytest.skip(f"this kernel gives no io_uring to anyone ({os.strerror(unconfined)})")
    assert confined == errno.EPERM, os.strerror(confined)


def test_the_host_says_what_its_filter_refuses_and_when_it_has_none(
    fake_host: Path, device_dir: Path
) -> None:
    said = {}
    for name, environment in (
        ("filtered", {}),
        ("left out", {"KS_FAKE_SECCOMP": "absent"}),
        ("turned off", {"KS_HOST_UNCONFINED": "1"}),
        ("landlock alone", {"KS_HOST_NO_SECCOMP": "1"}),
    ):
        host = SandboxHost(
            fake_host, extra_environment={"KS_FAKE_LOG": str(device_dir / "log"), **environment}
        )
        try:
            said[name] = host.confinement()
        finally:
            host.close()
    assert said["filtered"].endswith(FILTERED)
    assert said["left out"].endswith("; no seccomp filter: left out by the stand-in")
    assert "seccomp" not in said["turned off"]
    assert said["landlock alone"].endswith(
        "; no seccomp filter: turned off (KERNELSEEK_CONFINEMENT=landlock)"
    )


def test_the_judges_user_may_ask_for_landlock_alone(
    fake_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFINEMENT_VARIABLE, "landlock")
    host = SandboxHost(fake_host)
    try:
        assert host.confinement().endswith("turned off (KERNELSEEK_CONFINEMENT=landlock)")
    finally:
        host.close()


def _capabilities_of_this_process() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def test_a_confined_candidate_holds_no_capability(
    fake_host: Path, device_dir: Path, tmp_path: Path
) -> None:
    # Root's capabilities made bpf, perf_event_open and module loading work in a confined child
    # (a review, 2026-12-07); dropped, none is left. Read from /proc/self/status: CapEff.
    body = """
        char line[256];
        FILE *status = fopen("/proc/self/status", "r");
        unsigned long long effective = 1;
        while (status != NULL && fgets(line, sizeof line, status) != NULL)
            if (sscanf(line, "CapEff: %llx", &effective) == 1) break;
        if (status != NULL) fclose(status);
        result = effective != 0;
    """
    confined, unconfined = confined_and_not(fake_host, device_dir, tmp_path, body)
    assert confined == 0
    if _capabilities_of_this_process() == 0:
        pytest.skip("this test runs without capabilities: nothing to drop")
    assert unconfined == 1


@pytest.mark.parametrize(
    ("what", "call"),
    [
        ("bpf", "syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0)"),
        ("perf_event_open", "syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)"),
        ("userfaultfd", "syscall(SYS_userfaultfd, 0)"),
        ("unshare", "syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */)"),
        ("init_module", 'syscall(SYS_init_module, NULL, 0, "")'),
        ("the death signal", "prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)"),
    ],
)
def test_a_confined_candidate_reaches_no_further_as_root(
    fake_host: Path, device_dir: Path, tmp_path: Path, what: str, call: str
) -> None:
    # EPERM from the filter, whatever the call's arguments; unconfined, the same call gets as far
    # as its arguments let it (EFAULT, EINVAL, ENOSYS where this kernel lacks it, or success).
    body = f"result = tried({call});"
    confined, unconfined = confined_and_not(fake_host, device_dir, tmp_path, body)
    assert confined == errno.EPERM, (what, os.strerror(confined))
    assert unconfined != errno.EPERM or _capabilities_of_this_process() == 0, what
