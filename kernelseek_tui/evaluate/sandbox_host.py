"""The process a candidate runs in when the judge isolates it: building it, starting it, talking
to it, and naming how it died.

The host (``sandbox_host.cpp``) is a small C++ program with no Python in it: the candidate's
library is loaded there, never into the judge. The judge shares the candidate's buffers with it
through CUDA IPC and brackets every call with events on its own stream
(``evaluate.sandboxed_kernel``), so what the host replies is never trusted for a figure or a
verdict; it says only what was enqueued, or why not.

The host confines itself with Landlock at its start (``sandbox_confinement.h``): no write
outside its device files and its MPS server's directories, no exec, no TCP. It says how, or why
not (``SandboxHost.confinement``); the judge goes on unconfined where the kernel has no
Landlock, and says so in the result, unless ``KERNELSEEK_REQUIRE_CONFINEMENT=1`` refuses.

This module holds no CUDA: the protocol is plain text lines over pipes, so it is tested on a
machine with no GPU against the host built on a stand-in runtime (tests/test_sandbox_host.py,
tests/test_sandbox_confinement.py).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kernelseek_tui.evaluate.build import cache_root
from kernelseek_tui.evaluate.proc_stat import stat_fields

HOST_SOURCE = Path(__file__).with_name("sandbox_host.cpp")
# What the host's source includes from beside it: part of what its build is keyed by.
HOST_HEADERS = (
    Path(__file__).with_name("sandbox_confinement.h"),
    Path(__file__).with_name("sandbox_syscalls.h"),
)
# The nvcc flags besides the source and output: compiled as CUDA (``-x cu``) for the host's
# own trailing kernel; the CPU tests build the same source as plain C++ on a stand-in.
HOST_RECIPE = ("-x", "cu", "-O2", "-ldl")
EMPTY_SOURCE = Path(__file__).with_name("empty_kernel.cu")
EMPTY_RECIPE = ("-O2", "-shared", "-Xcompiler", "-fPIC")
# What the host's environment keeps of the judge's: which GPU and how devices are numbered,
# the MPS server the judge may be a client of (the host must join the same one), how CUDA loads
# modules (as the judge's in-process kernels would), where the driver is. Nothing else (no
# cache paths, no keys, no Python settings), so a candidate that reads its environment learns
# nothing of the judge.
KEPT_ENVIRONMENT = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "CUDA_MODULE_LOADING",
    "LD_LIBRARY_PATH",
    "PATH",
)
# "1": a kernel's process that could not confine itself (no Landlock in this kernel) is
# refused, its evaluation an error, instead of judged unconfined with the result saying so.
REQUIRE_CONFINEMENT_VARIABLE = "KERNELSEEK_REQUIRE_CONFINEMENT"
# "off": the kernels' processes are not confined (a way out for a machine where CUDA cannot
# start confined; the result then says so). Passed to the host as HOST_UNCONFINED_VARIABLE,
# set before the host starts, so no candidate can set it. "landlock": Landlock without the
# seccomp filter (sandbox_syscalls.h), to tell which of the two a machine's CUDA cannot bear.
CONFINEMENT_VARIABLE = "KERNELSEEK_CONFINEMENT"
HOST_UNCONFINED_VARIABLE = "KS_HOST_UNCONFINED"
HOST_UNFILTERED_VARIABLE = "KS_HOST_NO_SECCOMP"
# How a confined host's answer to ``confinement`` begins ("landlock abi 7: writes only ..."),
# and what it holds when its seccomp filter is in place too (sandbox_syscalls.h).
CONFINED_BY = "landlock "
FILTERED_BY = "; seccomp: "
_REPLY_LIMIT = 1 << 16
# After the host dies, how long the watcher leaves the judge's own thread to notice (it reads
# EOF on its next reply) before the watcher reports the death itself.
_WATCH_GRACE_S = 0.2
# How long ``freeze`` waits for the kernel to report the host stopped (a SIGSTOP is delivered
# asynchronously; on an idle machine within microseconds).
_FREEZE_WAIT_S = 1.0


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (or gone)."""
    fields = stat_fields(pid)
    return fields is None or fields[0] in ("T", "t", "Z", "X")


def confinement_required() -> bool:
    """Whether a kernel's process that could not confine itself is refused
    (``KERNELSEEK_REQUIRE_CONFINEMENT=1``)."""
    return os.environ.get(REQUIRE_CONFINEMENT_VARIABLE) == "1"


class SandboxError(Exception):
    """The host refused or failed a command; ``reason`` says why, in the host's words.
    ``kind`` is whose doing it is, as the worker's fatal lines say: "fail" (the candidate's)
    or "error" (the harness's, or a kernel the judge trusted: the starting or the best one)."""

    def __init__(self, reason: str, kind: str = "error") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


class SandboxDied(SandboxError):
    """The host is gone: the candidate crashed it, or its kernel faulted."""


@functools.cache
def _build_key(
    compiler: str,
    source: Path = HOST_SOURCE,
    recipe: tuple[str, ...] = HOST_RECIPE,
    headers: tuple[Path, ...] = HOST_HEADERS,
) -> str:
    """What determines a built binary: its source and the headers it includes from beside it,
    the recipe, the compiler's version. Once per process, compiler and binary (``nvcc
    --version`` is a subprocess; evaluations and a worker's hosts started ahead each ask for
    the host)."""
    version = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, check=False
    ).stdout
    digest = hashlib.sha256()
    sources = [source.read_bytes(), *(header.read_bytes() for header in headers)]
    for part in (*sources, " ".join(recipe).encode(), version.encode()):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def host_executable(nvcc: str = "nvcc") -> Path:
    """The host built with ``nvcc`` (CUDA runtime linked statically), cached by its source (and
    the header it includes), the recipe and the compiler's version; built on first use (a few
    seconds)."""
    return build_cached(
        nvcc, HOST_SOURCE, HOST_RECIPE, "sandbox_host", "the candidate's process", HOST_HEADERS
    )


def empty_kernel_library(nvcc: str = "nvcc") -> Path:
    """The judge's own empty kernel as a library (evaluate/handover_cost.py), built and cached
    as the host is."""
    return build_cached(nvcc, EMPTY_SOURCE, EMPTY_RECIPE, "libempty.so", "the judge's empty kernel")


def build_cached(
    nvcc: str,
    source: Path,
    recipe: tuple[str, ...],
    name: str,
    what: str,
    headers: tuple[Path, ...] = (),
) -> Path:
    """``source`` built by the compiler ``nvcc`` names (any compiler that takes ``-o``) with
    ``recipe``, cached under the judge's cache by what determines it (``_build_key``); ``what``
    names it in errors."""
    compiler = shutil.which(nvcc)
    if compiler is None:
        raise SandboxError(f"{nvcc} not found: it builds {what}", "error")
    key = _build_key(compiler, source, recipe, headers)
    target = cache_root().parent / "sandbox" / key / name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{name}.{os.getpid()}.partial")
    # Libraries after the source: the linker resolves left to right.
    flags = [flag for flag in recipe if not flag.startswith("-l")]
    libraries = [flag for flag in recipe if flag.startswith("-l")]
    built = subprocess.run(
        [compiler, *flags, "-o", str(partial), str(source), *libraries],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SandboxError(f"{what} did not build:\n{built.stderr.strip()}", "error")
    os.replace(partial, target)  # atomic: a concurrent build leaves one whole file
    return target


def bind_command(
    binding: int, tensors: Sequence[tuple[int, int]], ints: Sequence[int], floats: Sequence[float]
) -> str:
    """The ``bind`` line: tensors as (buffer id, byte offset), ints in decimal, floats as the
    hex of their IEEE bits (exact, whatever the locale)."""
    words = ["bind", str(binding), str(len(tensors))]
    words += [f"{buffer}:{offset}" for buffer, offset in tensors]
    words += [str(len(ints)), *(str(int(v)) for v in ints)]
    words += [str(len(floats)), *(struct.pack("=d", float(v)).hex() for v in floats)]
    return " ".join(words)


class SandboxHost:
    """One host process for one kernel: ``ask`` sends a command and returns its reply. The
    kernel comes with ``load`` (``ask("load", path)``), after the device and the events, so a
    host can be started before its kernel is known.

    ``who`` names the kernel in every reason ("the candidate", "the best kernel"), ``kind``
    says whose doing its errors are (SandboxError). ``on_death``
    is called, from a watcher thread, when the host dies while the judge is not reading from it
    (waiting on the GPU, say, for a DONE event a faulted kernel will never record); the judge's
    own thread, when it is the one to find the host gone, gets SandboxDied instead, and the
    watcher then stays quiet.
    """

    def __init__(
        self,
        executable: Path,
        *,
        who: str = "the candidate",
        kind: str = "fail",
        on_death: Callable[[str], None] | None = None,
        extra_environment: dict[str, str] | None = None,
    ) -> None:
        self.who, self.kind = who, kind
        self._on_death = on_death
        self._closing = False
        self._frozen = False
        self._death_claimed = False
        self._claim_lock = threading.Lock()
        self._reason_lock = threading.Lock()
        self._reason: str | None = None
        self._workdir = tempfile.mkdtemp(prefix="kernelseek-sandbox-")
        reply_read, reply_write = os.pipe()
        fault_read, fault_write = os.pipe()
        environment = {k: os.environ[k] for k in KEPT_ENVIRONMENT if k in os.environ}
        environment.update(extra_environment or {})
        if os.environ.get(CONFINEMENT_VARIABLE) == "off":
            environment[HOST_UNCONFINED_VARIABLE] = "1"
        if os.environ.get(CONFINEMENT_VARIABLE) == "landlock":
            environment[HOST_UNFILTERED_VARIABLE] = "1"
        try:
            self._process = subprocess.Popen(
                [str(executable), str(reply_write), str(fault_write)],
                stdin=subprocess.PIPE,
                # The candidate's printf goes to the judge's stderr, never into a reply.
                stdout=2,
                stderr=2,
                pass_fds=(reply_write, fault_write),
                close_fds=True,
                cwd=self._workdir,
                env=environment,
            )
        finally:
            # Only the host keeps the write ends, so its death is EOF here.
            os.close(reply_write)
            os.close(fault_write)
        self._replies = os.fdopen(reply_read, "r", encoding="utf-8", errors="replace")
        self._faults = os.fdopen(fault_read, "r", encoding="utf-8", errors="replace")
        self._watcher = threading.Thread(
            target=self._watch, name=f"sandbox-{self.pid}", daemon=True
        )
        self._watcher.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def ask(self, *words: object) -> str:
        """Send one command; the reply after "ok" ("" for a bare "ok").

        Raises SandboxError when the host refuses it, SandboxDied when the host is gone."""
        line = " ".join(str(w) for w in words)
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
            reply = self._replies.readline(_REPLY_LIMIT)
        except (BrokenPipeError, ValueError):
            reply = ""
        if not reply.endswith("\n"):
            self._claim_death()
            raise SandboxDied(self.death_reason(), self.kind)
        reply = reply.rstrip("\n")
        if reply == "ok" or reply.startswith("ok "):
            return reply[3:]
        if reply.startswith("error "):
            raise SandboxError(f"{self.who}'s process: {reply[6:]}", self.kind)
        raise SandboxError(f"{self.who}'s process replied {reply[:200]!r}", self.kind)

    def confinement(self) -> str:
        """How the host confined itself at its start: "landlock abi 7: writes only under
        /dev ...; seccomp: ..." or "none: <why not>" (sandbox_confinement.h,
        sandbox_syscalls.h).

        Raises SandboxError ("error": the machine's, not the kernel's) for a host left without
        Landlock or without its seccomp filter when ``KERNELSEEK_REQUIRE_CONFINEMENT=1``."""
        said = self.ask("confinement")
        confined = said.startswith(CONFINED_BY) and FILTERED_BY in said
        if not confined and confinement_required():
            raise SandboxError(
                f"{self.who}'s process could not confine itself ({said}), and "
                f"{REQUIRE_CONFINEMENT_VARIABLE}=1 forbids judging a kernel unconfined",
                "error",
            )
        return said

    def death_reason(self) -> str:
        """Why the host is gone, from its fault line or its exit status (waits for the exit)."""
        with self._reason_lock:
            if self._reason is None:
                self._reason = self._read_death_reason()
            return self._reason

    def _read_death_reason(self) -> str:
        code = self._process.wait()
        fault = self._faults.read(_REPLY_LIMIT).strip()
        if fault.startswith("fault "):
            return f"{self.who}'s kernel faulted: {fault[6:]}"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{self.who}'s process died ({name})"
        return f"{self.who}'s process ended (exit status {code})"

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Stop the host (SIGSTOP): no thread of it runs, so it enqueues nothing, until
        ``thaw``. Returns once the kernel says it is stopped."""
        if self._frozen or self._process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGSTOP)
        self._frozen = True
        deadline = time.monotonic() + _FREEZE_WAIT_S
        while not _stopped(self.pid) and time.monotonic() < deadline:
            time.sleep(0.0005)

    def thaw(self) -> None:
        """Let a frozen host run again (SIGCONT)."""
        if not self._frozen:
            return
        self._frozen = False
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGCONT)

    def assign(self, *, who: str, kind: str, on_death: Callable[[str], None] | None) -> None:
        """Name the kernel a host started ahead of its request now serves."""
        self.who, self.kind, self._on_death = who, kind, on_death

    def close(self) -> None:
        """Ask the host to quit, then make sure it has; idempotent."""
        if self._closing:
            return
        self._closing = True
        self.thaw()  # a stopped host could not read its quit
        if self._process.poll() is None:
            with contextlib.suppress(SandboxError):
                self.ask("quit")
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdin, self._replies, self._faults):
            if stream is not None:
                # Closing stdin flushes what a write to a dead host left in its buffer: the
                # host is gone either way, and its death was reported where it was found.
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def _claim_death(self) -> bool:
        """True for the first of the judge's thread and the watcher to report the death."""
        with self._claim_lock:
            first = not self._death_claimed
            self._death_claimed = True
            return first

    def _watch(self) -> None:
        self._process.wait()
        if self._closing or self._on_death is None:
            return
        # The judge's thread may be about to read EOF and raise SandboxDied itself.
        threading.Event().wait(_WATCH_GRACE_S)
        if not self._closing and self._claim_death():
            self._on_death(self.death_reason())
