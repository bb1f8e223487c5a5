"""The judge's side of a kernel in its own process (evaluate/sandboxed_kernel.py), on the CPU:
the host built on the stand-in runtime (tests/sandbox_support.py), and a stand-in for the few
CuPy calls the class makes (events, IPC handles, the stream). What it shows: each call is
GO recorded, the call enqueued, DONE waited on, in that order on the judge's stream; an event
pair is reused only after the judge's stream has passed its last use; tensors reach the kernel at
their offsets inside their own allocations; a pooled allocation is refused; a scenario's buffers
are unmapped at its end. The GPU side is tests/test_sandbox_gpu.py."""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sandbox_support import build_fake_host, compile_candidate, handle, have_compilers
from test_sandbox_confinement import ABI as LANDLOCK_ABI
from test_sandbox_confinement import needs_landlock

from kernelseek_tui.evaluate import sandbox_host, sandboxed_kernel
from kernelseek_tui.evaluate.buffers import GuardedTensor
from kernelseek_tui.evaluate.proc_stat import stat_fields
from kernelseek_tui.evaluate.sandbox_host import (
    REQUIRE_CONFINEMENT_VARIABLE,
    SandboxError,
    SandboxHost,
)
from kernelseek_tui.evaluate.sandboxed_kernel import SLOTS, SandboxedKernel
from kernelseek_tui.task import TensorSpec

pytestmark = pytest.mark.skipif(not have_compilers(), reason="needs gcc and g++")
GUARD = 128
SPEC = TensorSpec(name="x", dtype="float32", shape=("4",), role="output")


@pytest.fixture(scope="module")
def fake_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_host(tmp_path_factory.mktemp("fake_host"))


@pytest.fixture
def short_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ks", dir="/tmp"))
    log = path / "log"
    log.write_text("")
    monkeypatch.setenv("KS_FAKE_LOG", str(log))
    monkeypatch.setattr(
        sandbox_host, "KEPT_ENVIRONMENT", (*sandbox_host.KEPT_ENVIRONMENT, "KS_FAKE_LOG")
    )
    yield path
    shutil.rmtree(path, ignore_errors=True)


class StandInCupy:
    """Events, IPC handles and a stream that log what the judge enqueues, in order."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.uuid = b"stand-in-gpu-000"  # the stand-in runtime's device (cuda_runtime_api.h)
        self.files: dict[int, Path] = {}  # allocation pointer -> its file
        self._events = 0
        cupy = self

        class Event:
            def __init__(self, block: bool, disable_timing: bool, interprocess: bool = False):
                assert disable_timing, "events that cross processes cannot time"
                cupy._events += 1
                self.ptr = cupy._events
                kind = "ipc" if interprocess else "local"
                self.name = f"{kind}{self.ptr}"

            def record(self, stream: Any) -> None:
                cupy.log.append(f"record {self.name}")

            def synchronize(self) -> None:
                cupy.log.append(f"sync {self.name}")

        self.events: dict[int, Event] = {}

        def event(**kwargs: Any) -> Event:
            made = Event(**kwargs)
            self.events[made.ptr] = made
            return made

        self.directory: Path | None = None  # where cuda.Memory's files go (a short path)

        def memory(size: int) -> SimpleNamespace:
            assert self.directory is not None, "set directory before allocating"
            base = (1 << 30) + len(self.files) * (1 << 20)
            path = self.directory / f"m{len(self.files)}"
            path.write_bytes(b"\xff" * size)  # not zero: the judge must clear it
            self.files[base] = path
            return SimpleNamespace(ptr=base)

        def memset(ptr: int, value: int, size: int) -> None:
            path = self.files[ptr]
            data = bytearray(path.read_bytes())
            data[:size] = bytes([value]) * size
            path.write_bytes(bytes(data))

        self.cuda = SimpleNamespace(
            Device=lambda: SimpleNamespace(id=0),
            Event=event,
            Memory=memory,
            runtime=SimpleNamespace(
                getDeviceProperties=lambda device: {"uuid": self.uuid},
                ipcGetEventHandle=lambda ptr: handle(self.events[ptr].name),
                ipcGetMemHandle=lambda ptr: handle(str(self.files[ptr])),
                memset=memset,
            ),
        )
        self.stream = SimpleNamespace(
            ptr=99, wait_event=lambda e: self.log.append(f"wait {e.name}")
        )

    def tensor(self, path: Path, base: int, floats: int = 4, shared: bool = True) -> GuardedTensor:
        """A tensor at GUARD bytes into an allocation backed by ``path``."""
        path.write_bytes(bytes(GUARD + 4 * floats))
        self.files[base] = path
        raw = SimpleNamespace(data=SimpleNamespace(ptr=base))
        body = SimpleNamespace(data=SimpleNamespace(ptr=base + GUARD))
        return GuardedTensor(spec=SPEC, raw=raw, body=body, shape=(floats,), shared=shared)


def candidate(tmp_path: Path) -> Path:
    source = tmp_path / "count.c"
    source.write_text(
        textwrap.dedent(
            """
            #include <stdint.h>
            int ks_launch(void **t, const int64_t *n, const double *f, void *stream) {
                (void)stream;
                float *out = (float *)t[0];
                out[0] += 1.0f;              /* calls so far */
                out[1] = (float)n[0];
                out[2] = (float)f[0];
                return 0;
            }
            """
        )
    )
    return compile_candidate(source, tmp_path / "libcount.so")


def kernel(fake_host: Path, cupy: StandInCupy, tmp_path: Path) -> SandboxedKernel:
    return SandboxedKernel(
        candidate(tmp_path),
        cp=cupy,
        stream=cupy.stream,
        who="the candidate",
        executable=fake_host,
        handover="events",  # the counters have tests of their own below
    )


def floats(path: Path, count: int = 3) -> tuple[float, ...]:
    return struct.unpack(f"={count}f", path.read_bytes()[GUARD : GUARD + 4 * count])


def test_a_call_is_bracketed_on_the_judges_stream(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    sandboxed = kernel(fake_host, cupy, tmp_path)
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = sandboxed.bind_tensors([out], [5], [0.25], cupy.stream.ptr)
        cupy.log.clear()
        assert call() == 0
        # Slot 0: its GO is ipc1, its DONE ipc(1 + SLOTS), the judge's marker after the wait.
        go, done, passed = "ipc1", f"ipc{1 + SLOTS}", f"local{1 + 2 * SLOTS}"
        assert cupy.log == [f"record {go}", f"wait {done}", f"record {passed}"]
        host_log = (short_dir / "log").read_text().splitlines()
        assert host_log[-2:] == [f"wait {go}", f"record {done}"]
        assert floats(short_dir / "out") == (1.0, 5.0, 0.25)
    finally:
        sandboxed.close()


def test_an_event_pair_is_reused_only_after_the_stream_passed_it(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    sandboxed = kernel(fake_host, cupy, tmp_path)
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = sandboxed.bind_tensors([out], [0], [0.0], cupy.stream.ptr)
        cupy.log.clear()
        for _ in range(SLOTS):
            call()
        assert not any(line.startswith("sync") for line in cupy.log)
        cupy.log.clear()
        call()  # slot 0 again
        assert cupy.log[:2] == [f"sync local{1 + 2 * SLOTS}", "record ipc1"]
        assert floats(short_dir / "out", 1) == (SLOTS + 1.0,)
    finally:
        sandboxed.close()


def test_an_allocation_is_mapped_once_and_unmapped_at_the_end(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    sandboxed = kernel(fake_host, cupy, tmp_path)
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        sandboxed.bind_tensors([out], [0], [0.0], cupy.stream.ptr)
        sandboxed.bind_tensors([out], [1], [0.0], cupy.stream.ptr)
        host_log = (short_dir / "log").read_text()
        assert host_log.count("open ") == 1
        sandboxed.forget_all()
        assert (short_dir / "log").read_text().count("close ") == 1
    finally:
        sandboxed.close()


def test_a_pooled_allocation_or_another_stream_is_refused(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    sandboxed = kernel(fake_host, cupy, tmp_path)
    try:
        pooled = cupy.tensor(short_dir / "pooled", base=1 << 21, shared=False)
        with pytest.raises(ValueError, match="pooled allocation"):
            sandboxed.bind_tensors([pooled], [0], [0.0], cupy.stream.ptr)
        own = cupy.tensor(short_dir / "own", base=1 << 22)
        with pytest.raises(ValueError, match="stream it was made with"):
            sandboxed.bind_tensors([own], [0], [0.0], cupy.stream.ptr + 1)
    finally:
        sandboxed.close()


def test_a_host_whose_device_is_not_the_judges_is_refused(fake_host: Path, tmp_path: Path) -> None:
    # The judge's GPU, by UUID: were the two processes to number devices differently, the
    # kernel would run on another GPU than the one whose events time it.
    cupy = StandInCupy()
    cupy.uuid = b"some-other-gpu-1"
    with pytest.raises(SandboxError, match="not the judge's GPU"):
        kernel(fake_host, cupy, tmp_path)


def test_a_host_started_ahead_takes_its_kernel_and_its_name_later(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # A worker started before its request readies hosts with no kernel; the request's kernels
    # are loaded into them, and their errors then name them.
    cupy = StandInCupy()
    ahead = SandboxedKernel(
        None, cp=cupy, stream=cupy.stream, who="a kernel", executable=fake_host, handover="events"
    )
    try:
        crash = tmp_path / "crash.c"
        crash.write_text(
            "#include <stdint.h>\n"
            "int ks_launch(void **t, const int64_t *n, const double *f, void *s) {\n"
            "    (void)t; (void)n; (void)f; (void)s; *(volatile int *)0 = 1; return 0;\n}\n"
        )
        ahead.load(compile_candidate(crash, tmp_path / "libcrash.so"), who="the best kernel")
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = ahead.bind_tensors([out], [0], [0.0], cupy.stream.ptr)
        with pytest.raises(SandboxError, match=r"the best kernel's process died \(SIGSEGV\)"):
            call()
    finally:
        ahead.close()


@needs_landlock
def test_the_kernels_process_says_how_it_confined_itself(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    sandboxed = kernel(fake_host, StandInCupy(), tmp_path)
    try:
        # The stand-in's device is its log's directory (tests/data/fake_cudart).
        assert sandboxed.confinement.startswith(
            f"landlock abi {LANDLOCK_ABI}: writes only under {short_dir}, /proc/self; no exec"
        )
    finally:
        sandboxed.close()


def test_a_process_left_unconfined_is_said_so_or_refused_when_the_judge_requires(
    fake_host: Path, tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stand-in tells the host there is no Landlock, whatever this machine's kernel has.
    monkeypatch.setenv("KS_FAKE_LANDLOCK", "absent")
    monkeypatch.setattr(
        sandbox_host, "KEPT_ENVIRONMENT", (*sandbox_host.KEPT_ENVIRONMENT, "KS_FAKE_LANDLOCK")
    )
    started: list[SandboxHost] = []

    def recorded(*args: Any, **kwargs: Any) -> SandboxHost:
        started.append(SandboxHost(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(sandboxed_kernel, "SandboxHost", recorded)
    sandboxed = kernel(fake_host, StandInCupy(), tmp_path)
    try:
        assert sandboxed.confinement == (
            "none: this kernel has no Landlock (ENOSYS); seccomp: no new process, no socket but "
            "unix and netlink, no io_uring, no module, bpf, perf, namespace or mount; no "
            "capabilities"
        )
    finally:
        sandboxed.close()
    monkeypatch.setenv(REQUIRE_CONFINEMENT_VARIABLE, "1")
    with pytest.raises(SandboxError, match="could not confine itself") as refused:
        kernel(fake_host, StandInCupy(), tmp_path)
    assert refused.value.kind == "error"
    with pytest.raises(ProcessLookupError):  # the refused host was closed, not left behind
        os.kill(started[-1].pid, 0)


class StandInCounters:
    """The driver's stream memory operations on the stand-in's file-backed allocations: a
    write stores at once, a wait checks at once (work is synchronous here) and fails if short."""

    def __init__(self, cupy: StandInCupy) -> None:
        self.cupy = cupy

    def _place(self, address: int) -> tuple[Path, int]:
        base = max(b for b in self.cupy.files if b <= address)
        return self.cupy.files[base], address - base

    def write(self, stream: int, address: int, value: int) -> None:
        path, offset = self._place(address)
        data = bytearray(path.read_bytes())
        data[offset : offset + 4] = struct.pack("=I", value)
        path.write_bytes(bytes(data))
        self.cupy.log.append(f"write {offset} {value}")

    def wait(self, stream: int, address: int, value: int) -> None:
        path, offset = self._place(address)
        (now,) = struct.unpack("=I", path.read_bytes()[offset : offset + 4])
        assert now >= value, f"the judge would wait forever: counter {now}, wanted {value}"
        self.cupy.log.append(f"wait {offset} {value}")


def counted_kernel(
    fake_host: Path,
    cupy: StandInCupy,
    tmp_path: Path,
    handover: str,
    *,
    fence: Any = None,
    who: str = "the candidate",
) -> SandboxedKernel:
    """A kernel whose calls go through the counters ("counters" or "fenced"), on the stand-ins."""
    return SandboxedKernel(
        candidate(tmp_path),
        cp=cupy,
        stream=cupy.stream,
        who=who,
        executable=fake_host,
        handover=handover,
        counters=StandInCounters(cupy),
        fence=fence,
    )


def test_with_counters_each_call_is_go_written_the_call_enqueued_done_waited_for(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    cupy.directory = short_dir
    sandboxed = counted_kernel(fake_host, cupy, tmp_path, "counters")
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = sandboxed.bind_tensors([out], [5], [0.25], cupy.stream.ptr)
        cupy.log.clear()
        assert call() == 0
        assert call() == 0
        # The judge's stream: GO (byte 0) written, then DONE (byte 64) waited for, per call;
        # no events at all.
        assert cupy.log == ["write 0 1", "wait 64 1", "write 0 2", "wait 64 2"]
        # The host's stream: GO waited for before the call, DONE written after it.
        host_log = (short_dir / "log").read_text().splitlines()
        assert host_log[-4:] == ["wait-value 1", "write-value 1", "wait-value 2", "write-value 2"]
        assert floats(short_dir / "out") == (2.0, 5.0, 0.25)
    finally:
        sandboxed.close()


def test_the_hand_over_is_chosen_by_name_and_a_wrong_name_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE, default_handover

    monkeypatch.delenv(HANDOVER_VARIABLE, raising=False)
    assert default_handover() == "fenced"
    monkeypatch.setenv(HANDOVER_VARIABLE, "events")
    assert default_handover() == "events"
    monkeypatch.setenv(HANDOVER_VARIABLE, "counters")
    assert default_handover() == "counters"
    monkeypatch.setenv(HANDOVER_VARIABLE, "pigeons")
    with pytest.raises(ValueError, match="KERNELSEEK_HANDOVER must be one of events, counters"):
        default_handover()


def test_a_frozen_process_is_settled_then_stopped_and_asked_nothing_until_thawed(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # While the starting kernel or a peer is timed alone, the other kernels' processes are
    # stopped (worker.Evaluation.others_stopped): nothing of theirs runs, so nothing of theirs
    # can be asked (a stopped process answers nothing), and closing one still works.
    cupy = StandInCupy()
    sandboxed = kernel(fake_host, cupy, tmp_path)
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = sandboxed.bind_tensors([out], [3], [0.5], cupy.stream.ptr)
        assert call() == 0
        pid = sandboxed.pid
        settled_while: list[str] = []
        settle = sandboxed.settle

        def watched_settle() -> float:
            settled_while.append(_state(pid))
            return settle()

        sandboxed.settle = watched_settle  # type: ignore[method-assign]
        sandboxed.freeze()
        assert settled_while and settled_while[0] != "T"  # settled first, while it ran
        assert _state(pid) == "T"
        del sandboxed.settle
        assert sandboxed.settle() == 0.0  # answered here: no round trip to a stopped process
        sandboxed.check()
        sandboxed.thaw()
        assert _state(pid) != "T"
        assert call() == 0
        assert floats(short_dir / "out") == (2.0, 3.0, 0.5)
        sandboxed.freeze()
    finally:
        sandboxed.close()  # thaws it to say quit
    assert sandboxed._host._process.returncode == 0


def _state(pid: int) -> str:
    fields = stat_fields(pid)
    assert fields is not None, f"process {pid} is gone"
    return fields[0]


class StandInFence:
    """The judge's GPU fence (evaluate/gpu_fence.py) as a log entry; ``let_go`` says whether a
    fence waited its limit."""

    def __init__(self, cupy: StandInCupy) -> None:
        self.cupy = cupy
        self.let_go = False

    def enqueue(self, stream: Any) -> None:
        assert stream is self.cupy.stream
        self.cupy.log.append("fence")

    def timed_out(self, stream: Any) -> bool:
        return self.let_go


def test_fenced_each_call_waits_for_done_then_for_the_whole_gpu_and_a_fence_that_let_go_fails(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    cupy.directory = short_dir
    fence = StandInFence(cupy)
    sandboxed = counted_kernel(fake_host, cupy, tmp_path, "fenced", fence=fence)
    try:
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = sandboxed.bind_tensors([out], [5], [0.25], cupy.stream.ptr)
        cupy.log.clear()
        assert call() == 0 and call() == 0
        # The counters' hand-over, with the fence between each DONE wait and what follows it
        # on the judge's stream (the sample's end event).
        assert cupy.log == [
            "write 0 1", "wait 64 1", "fence", "write 0 2", "wait 64 2", "fence"
        ]  # fmt: skip
        # The kernel's process sees the counters, as without the fence.
        host_log = (short_dir / "log").read_text().splitlines()
        assert host_log[-4:] == ["wait-value 1", "write-value 1", "wait-value 2", "write-value 2"]
        sandboxed.check()
        fence.let_go = True
        with pytest.raises(SandboxError, match="the GPU was not free after its process said"):
            sandboxed.check()
    finally:
        sandboxed.close()


def test_fenced_the_gpu_itself_is_waited_for_after_a_stop_and_a_busy_one_fails(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    cupy = StandInCupy()
    cupy.directory = short_dir
    fence = StandInFence(cupy)
    made = {
        handover: counted_kernel(
            fake_host, cupy, tmp_path, handover, fence=fence, who=f"the {handover} kernel"
        )
        for handover in ("fenced", "counters")
    }
    try:
        cupy.log.clear()
        made["counters"].wait_until_gpu_free()  # no fence: nothing to wait for
        assert cupy.log == []
        made["fenced"].wait_until_gpu_free()
        assert cupy.log == ["fence"]
        fence.let_go = True
        with pytest.raises(SandboxError, match="the GPU stayed busy after the fenced kernel's"):
            made["fenced"].wait_until_gpu_free()
    finally:
        for sandboxed in made.values():
            sandboxed.close()


def test_the_others_are_stopped_then_the_gpu_waited_for_and_let_go_even_when_it_stays_busy() -> (
    None
):
    from kernelseek_tui.evaluate.worker import Evaluation, FatalError

    class StandInKernel:
        def __init__(self, name: str, log: list[str], busy: bool = False) -> None:
            self.name, self.log, self.busy = name, log, busy

        def freeze(self) -> None:
            self.log.append(f"freeze {self.name}")

        def thaw(self) -> None:
            self.log.append(f"thaw {self.name}")

        def wait_until_gpu_free(self) -> None:
            self.log.append("gpu free?")
            if self.busy:
                raise SandboxError("the GPU stayed busy", "fail")

    log: list[str] = []
    timed, other = StandInKernel("timed", log), StandInKernel("other", log)
    judge = SimpleNamespace(sandboxes=[timed, other])
    with Evaluation.others_stopped(judge, timed):  # type: ignore[arg-type]
        log.append("timing")
    assert log == ["freeze other", "gpu free?", "timing", "thaw other"]
    log.clear()
    other.busy = True
    with (
        pytest.raises(FatalError, match="the GPU stayed busy"),
        Evaluation.others_stopped(judge, timed),  # type: ignore[arg-type]
    ):
        log.append("timing")
    assert log == ["freeze other", "gpu free?", "thaw other"]  # no timing, and let go


def started_ahead_with_counters(fake_host: Path, cupy: StandInCupy) -> SandboxedKernel:
    """A host started with no kernel, its calls through the counters, on the stand-ins."""
    return SandboxedKernel(
        None,
        cp=cupy,
        stream=cupy.stream,
        who="a kernel",
        executable=fake_host,
        handover="counters",
        counters=StandInCounters(cupy),
    )


def library_returning(tmp_path: Path, name: str, code: int) -> Path:
    """A ks_launch that touches nothing and returns ``code``: the judge's probe, stood in."""
    source = tmp_path / f"{name}.c"
    source.write_text(
        "#include <stdint.h>\n"
        "int ks_launch(void **t, const int64_t *n, const double *f, void *s) {\n"
        f"    (void)t; (void)n; (void)f; (void)s; return {code};\n}}\n"
    )
    return compile_candidate(source, tmp_path / f"lib{name}.so")


def test_after_load_the_probe_is_called_in_turn_with_the_kernel_on_the_same_counters(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The hand-over timed in turn (evaluate/handover_cost.py): the probe given before load stays
    # callable after it, in the same process, through the same GO and DONE as the kernel's calls.
    cupy = StandInCupy()
    cupy.directory = short_dir
    ahead = started_ahead_with_counters(fake_host, cupy)
    try:
        with pytest.raises(ValueError, match="given no probe"):
            ahead.probe_call()
        ahead.probe(library_returning(tmp_path, "probe", 7))
        ahead.load(candidate(tmp_path), who="the candidate")
        out = cupy.tensor(short_dir / "out", base=1 << 20)
        call = ahead.bind_tensors([out], [5], [0.25], cupy.stream.ptr)
        probe_call = ahead.probe_call()
        cupy.log.clear()
        assert call() == 0
        assert probe_call() == 7  # the probe's own return code: its ks_launch ran
        assert call() == 0
        assert cupy.log == [f"{w} {n}" for n in (1, 2, 3) for w in ("write 0", "wait 64")]
        assert floats(short_dir / "out") == (2.0, 5.0, 0.25)  # the kernel ran twice, no more
        # Its binding holds no buffer: it outlives the scenario's, unmapped at its end.
        ahead.forget_all()
        assert probe_call() == 7
    finally:
        ahead.close()


def test_in_turn_the_judge_times_its_empty_kernel_here_and_in_each_probed_process(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The worker's side (Evaluation.in_turn_probes, in_turn_costs, net): what is timed in turn
    # with a scenario's calls, and which figure each kernel's samples are then net of.
    from kernelseek_tui.evaluate.handover_cost import HandoverCost
    from kernelseek_tui.evaluate.timing import TimingStats
    from kernelseek_tui.evaluate.worker import Evaluation

    cupy = StandInCupy()
    cupy.directory = short_dir
    empty = library_returning(tmp_path, "empty", 0)
    probed = started_ahead_with_counters(fake_host, cupy)
    try:
        probed.probe(empty)
        probed.load(candidate(tmp_path), who="the candidate")
        before = HandoverCost([4.0], [16.0])  # 12 us, measured before the load
        judge = SimpleNamespace(
            probe_in_turn=False,
            handover_probe=empty,
            candidate=probed,
            paired=None,
            start_beside=None,
            handover_costs={id(probed): before},
            _empty_here=None,
            stream=cupy.stream,
        )
        assert Evaluation.in_turn_probes(judge) == []  # type: ignore[arg-type]
        judge.probe_in_turn = True
        probes = Evaluation.in_turn_probes(judge)  # type: ignore[arg-type]
        assert [kernel for kernel, _ in probes] == [None, probed]
        cupy.log.clear()
        for _, call in probes:
            call(0)
        assert cupy.log == ["write 0 1", "wait 64 1"]  # only the probe there went through GO
        # Net of the in-turn figure where there is one, else of the one from before the load.
        here = TimingStats(median_ms=0.004, samples_ms=[0.004])
        there = TimingStats(median_ms=0.010, samples_ms=[0.010])
        costs = Evaluation.in_turn_costs(judge, probes, [here, there])  # type: ignore[arg-type]
        assert list(costs) == [id(probed)] and abs(costs[id(probed)].us - 6.0) < 1e-9
        stats = TimingStats(median_ms=0.200, samples_ms=[0.200])
        in_turn = Evaluation.net(judge, stats, probed, costs)  # type: ignore[arg-type]
        assert abs(in_turn.median_ms - 0.194) < 1e-12
        # A probe slowed in turn (the kernel's code is in that process now) takes out no more
        # than the figure from before the load.
        slowed = TimingStats(median_ms=0.030, samples_ms=[0.030])  # 26 us against 12
        capped = Evaluation.in_turn_costs(judge, probes, [here, slowed])  # type: ignore[arg-type]
        assert capped[id(probed)] is before
        assert abs(Evaluation.net(judge, stats, probed).median_ms - 0.188) < 1e-12  # type: ignore[arg-type]
        # A kernel whose hand-over was never measured (not timed) gets no probe call.
        judge.handover_costs = {}
        assert Evaluation.in_turn_probes(judge) == []  # type: ignore[arg-type]
    finally:
        probed.close()


def test_when_the_probe_is_timed_is_chosen_by_name_and_a_wrong_name_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelseek_tui.evaluate.handover_cost import PROBE_VARIABLE, probe_time

    monkeypatch.delenv(PROBE_VARIABLE, raising=False)
    assert probe_time() == "before"
    monkeypatch.setenv(PROBE_VARIABLE, "in-turn")
    assert probe_time() == "in-turn"
    monkeypatch.setenv(PROBE_VARIABLE, "after")
    with pytest.raises(
        ValueError, match="KERNELSEEK_HANDOVER_PROBE must be one of before, in-turn"
    ):
        probe_time()
