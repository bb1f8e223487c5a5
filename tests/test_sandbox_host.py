"""The candidate's own process (evaluate/sandbox_host.cpp and .py), on the CPU.

The host is built here against a stand-in CUDA runtime (tests/data/fake_cudart): "device
memory" is a file both processes map, so what a test candidate writes through its tensor
pointers is read back here as the judge reads its buffers through CUDA IPC. What this covers:
the protocol, the arguments reaching ks_launch exactly, GO waited on before and DONE recorded
after every call, a crash or a fault named, the candidate's printf kept out of the replies, the
judge's environment kept from the candidate, and the host dying with the judge. What it cannot:
CUDA IPC itself and the timing through it (tests/test_sandbox_gpu.py, on a GPU).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import build_fake_host, compile_candidate, have_compilers
from sandbox_support import handle as stand_in_handle

from kernelseek_tui.evaluate.sandbox_host import (
    SandboxDied,
    SandboxError,
    SandboxHost,
    bind_command,
)

pytestmark = pytest.mark.skipif(not have_compilers(), reason="needs gcc and g++")
GUARD = 256


@pytest.fixture(scope="module")
def fake_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The host built on the stand-in runtime."""
    return build_fake_host(tmp_path_factory.mktemp("fake_host"))


def candidate(tmp_path: Path, body: str, name: str = "candidate") -> Path:
    """A test candidate: ``body`` is the C body of ks_launch (tensors t, ints n, floats f)."""
    source = tmp_path / f"{name}.c"
    source.write_text(
        textwrap.dedent(
            """
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            void ks_fake_fault(void);
            void ks_fake_leave_work(void *stream);
            void ks_fake_busy_ms(long ms);
            int ks_launch(void **t, const int64_t *n, const double *f, void *stream) {
                (void)stream;
            """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "\n}\n"
    )
    return compile_candidate(source, tmp_path / f"lib{name}.so")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: the stand-in's handles hold a path of under 64 bytes."""
    path = Path(tempfile.mkdtemp(prefix="ks", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def shared_buffer(directory: Path, name: str, floats: int) -> Path:
    """A "device allocation": guard bytes, then ``floats`` float32 values (zero)."""
    path = directory / name
    path.write_bytes(b"\x5a" * GUARD + bytes(4 * floats))
    return path


def handle(text: str) -> str:
    return stand_in_handle(text).hex()


def read_floats(path: Path, count: int) -> list[float]:
    return list(struct.unpack(f"={count}f", path.read_bytes()[GUARD : GUARD + 4 * count]))


class Rig:
    """A host with one slot and two buffers mapped: buffer 0 ("in") and 1 ("out")."""

    def __init__(self, host: Path, buffers: Path, library: Path, **kwargs: object) -> None:
        self.log = buffers / "fake.log"
        self.log.write_text("")
        environment = {"KS_FAKE_LOG": str(self.log)}
        environment.update(kwargs.pop("extra_environment", {}))  # type: ignore[arg-type]
        self.host = SandboxHost(host, extra_environment=environment, **kwargs)  # type: ignore[arg-type]
        self.inputs = shared_buffer(buffers, "in.bin", 4)
        self.outputs = shared_buffer(buffers, "out.bin", 4)
        self.inputs.write_bytes(b"\x5a" * GUARD + struct.pack("=4f", 1.0, 2.0, 3.0, 4.0))
        self.host.ask("device", 0)
        self.host.ask("slot", 0, handle("go0"), handle("done0"))
        self.host.ask("load", library)
        self.host.ask("buffer", 0, handle(str(self.inputs)))
        self.host.ask("buffer", 1, handle(str(self.outputs)))

    def bind(self, ints: list[int], floats: list[float]) -> None:
        self.host.ask(bind_command(0, [(0, GUARD), (1, GUARD)], ints, floats))


SCALE_AND_ADD = """
    const float *in = (const float *)t[0];
    float *out = (float *)t[1];
    for (int i = 0; i < 4; ++i) out[i] = in[i] * (float)f[0] + (float)n[0];
    return 0;
"""


def test_a_call_reaches_ks_launch_with_the_exact_arguments(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, SCALE_AND_ADD))
    try:
        rig.bind([10], [0.5])
        assert rig.host.ask("call", 0, 0) == "0"
        assert read_floats(rig.outputs, 4) == [10.5, 11.0, 11.5, 12.0]
        # GO waited on before the call, DONE recorded after it: the judge's events bracket it.
        assert rig.log.read_text().splitlines()[-2:] == ["wait go0", "record done0"]
    finally:
        rig.host.close()


def test_floats_and_ints_cross_bit_for_bit(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The candidate writes the bits it was given back: a float that decimal text would round.
    body = """
        memcpy(t[1], &f[1], sizeof(double));
        memcpy((char *)t[1] + 8, &n[1], sizeof(int64_t));
        return 0;
    """
    rig = Rig(fake_host, short_dir, candidate(tmp_path, body))
    try:
        rig.bind([0, -(2**62) - 3], [0.0, 0.1 + 2**-52])
        raw = rig.outputs.read_bytes()[GUARD : GUARD + 16]
        assert struct.unpack("=d", raw[:8])[0] == 0.0  # nothing written before the call
        rig.host.ask("call", 0, 0)
        raw = rig.outputs.read_bytes()[GUARD : GUARD + 16]
        assert struct.unpack("=dq", raw) == (0.1 + 2**-52, -(2**62) - 3)
    finally:
        rig.host.close()


def test_the_return_code_of_ks_launch_comes_back(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, "return 7;"))
    try:
        rig.bind([], [])
        assert rig.host.ask("call", 0, 0) == "7"
    finally:
        rig.host.close()


def test_a_crash_in_the_candidate_is_named_and_the_judge_lives(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, "*(volatile int *)0 = 1; return 0;"))
    try:
        rig.bind([], [])
        with pytest.raises(SandboxDied, match=r"the candidate's process died \(SIGSEGV\)"):
            rig.host.ask("call", 0, 0)
    finally:
        rig.host.close()


def test_a_fault_found_later_is_reported_by_the_watcher(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # As on a GPU: the call itself returns, the fault shows on the stream afterwards, while the
    # judge would be waiting on the GPU and reading nothing.
    reported: list[str] = []
    seen = threading.Event()

    def on_death(reason: str) -> None:
        reported.append(reason)
        seen.set()

    rig = Rig(
        fake_host,
        short_dir,
        candidate(tmp_path, "ks_fake_fault(); return 0;"),
        who="the best kernel",
        on_death=on_death,
    )
    try:
        rig.bind([], [])
        assert rig.host.ask("call", 0, 0) == "0"
        assert seen.wait(5), "the watcher never reported the fault"
        # Rig sends device, slot, load, two buffers and bind before it: the call is the 7th.
        assert reported == [
            "the best kernel's kernel faulted: cudaErrorIllegalAddress: "
            "an illegal memory access was encountered (found after its process's command 7, "
            "'call 0 0')"
        ]
    finally:
        rig.host.close()


def test_a_host_found_dead_by_a_write_closes_without_raising(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The command written after the host died stays in the pipe's buffer; closing flushes it
    # again. Seen on an H100 (2026-12-06): illegal_address.cu's evaluation ended "error"
    # with a BrokenPipeError instead of "fail" with the fault, when the host died first.
    seen = threading.Event()
    rig = Rig(
        fake_host,
        short_dir,
        candidate(tmp_path, "ks_fake_fault(); return 0;"),
        on_death=lambda _reason: seen.set(),
    )
    rig.bind([], [])
    assert rig.host.ask("call", 0, 0) == "0"
    assert seen.wait(5), "the watcher never reported the fault"
    with pytest.raises(SandboxDied, match="faulted"):
        rig.host.ask("sync")
    rig.host.close()


@pytest.mark.parametrize(
    ("stream", "named"),
    [("(void *)0x1", "the legacy default stream"), ("(void *)0x2", "the per-thread stream")],
)
def test_work_left_on_a_default_stream_is_named(
    fake_host: Path, tmp_path: Path, short_dir: Path, stream: str, named: str
) -> None:
    body = f"ks_fake_leave_work({stream}); return 0;"
    rig = Rig(fake_host, short_dir, candidate(tmp_path, body))
    try:
        rig.bind([], [])
        with pytest.raises(SandboxError, match=f"work outside the given stream: {named}"):
            rig.host.ask("call", 0, 0)
        # DONE was recorded all the same: the judge's stream waits on it.
        assert rig.log.read_text().splitlines()[-1] == "record done0"
    finally:
        rig.host.close()


def test_devsync_reports_how_long_the_kernels_process_waited(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The judge takes an isolated run's tail from this figure, not from the pipe's round trip
    # (timing._run_tail_ms): it must be the wait for the work the candidate left, by the host's
    # clock.
    rig = Rig(fake_host, short_dir, candidate(tmp_path, "ks_fake_busy_ms(40); return 0;"))
    try:
        rig.bind([], [])
        assert rig.host.ask("call", 0, 0) == "0"
        waited_us = int(rig.host.ask("devsync"))
        assert 40_000 <= waited_us < 1_000_000
        assert int(rig.host.ask("devsync")) < 40_000  # nothing left: an idle synchronize
        assert rig.host.ask("sync") == ""  # the stream's synchronize reports no figure
    finally:
        rig.host.close()


def test_with_counters_the_host_waits_for_go_before_the_call_and_writes_done_after(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, SCALE_AND_ADD))
    counters = short_dir / "counters"
    counters.write_bytes(bytes(128))
    try:
        rig.bind([10], [0.5])
        with pytest.raises(SandboxError, match="counters are not mapped"):
            rig.host.ask("count", 0, 1)
        rig.host.ask("counters", handle(str(counters)))
        # GO is still 0: on a GPU the call would wait; the stand-in's wait fails instead, and
        # the candidate must not have run.
        with pytest.raises(SandboxError, match="cuStreamWaitValue32 failed"):
            rig.host.ask("count", 0, 1)
        assert read_floats(rig.outputs, 4) == [0.0, 0.0, 0.0, 0.0]
        counters.write_bytes(struct.pack("=I", 1) + bytes(124))  # the judge's GO = 1
        assert rig.host.ask("count", 0, 1) == "0"
        assert read_floats(rig.outputs, 4) == [10.5, 11.0, 11.5, 12.0]
        assert struct.unpack("=I", counters.read_bytes()[64:68]) == (1,)  # DONE = 1
        assert rig.log.read_text().splitlines()[-2:] == ["wait-value 1", "write-value 1"]
    finally:
        rig.host.close()


def test_the_candidate_printing_does_not_reach_the_replies(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    body = 'printf("ok 99\\n"); fflush(stdout); fprintf(stderr, "error x\\n"); return 0;'
    rig = Rig(fake_host, short_dir, candidate(tmp_path, body))
    try:
        rig.bind([], [])
        assert rig.host.ask("call", 0, 0) == "0"
        assert rig.host.ask("call", 0, 0) == "0"
    finally:
        rig.host.close()


def test_the_candidate_sees_none_of_the_judges_environment(
    fake_host: Path, tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELSEEK_CACHE", "/where/the/baseline/timings/are")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-kernels")
    body = """
        float *out = (float *)t[1];
        out[0] = getenv("KERNELSEEK_CACHE") != NULL;
        out[1] = getenv("ANTHROPIC_API_KEY") != NULL;
        out[2] = getenv("KS_FAKE_LOG") != NULL;
        return 0;
    """
    rig = Rig(fake_host, short_dir, candidate(tmp_path, body))
    try:
        rig.bind([], [])
        rig.host.ask("call", 0, 0)
        # KS_FAKE_LOG is the test's own, passed on purpose: the check can see a variable.
        assert read_floats(rig.outputs, 3) == [0.0, 0.0, 1.0]
    finally:
        rig.host.close()


def test_a_forgotten_buffer_takes_its_bindings_with_it(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, SCALE_AND_ADD))
    try:
        rig.bind([1], [1.0])
        rig.host.ask("forget", 1)
        with pytest.raises(SandboxError, match="binding 0 does not exist"):
            rig.host.ask("call", 0, 0)
        with pytest.raises(SandboxError, match="buffer 1 is not mapped"):
            rig.bind([1], [1.0])
        assert "close -" in rig.log.read_text()
    finally:
        rig.host.close()


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("bind 0 2 0:0", "usage: bind"),
        ("bind 0 1 7:0 0 0", "buffer 7 is not mapped"),
        ("bind 0 1 0:-4 0 0", "usage: bind"),
        ("call 3 0", "binding 3 does not exist"),
        ("slot 1 00 00", "usage: slot"),
        ("frobnicate", "unknown command frobnicate"),
    ],
)
def test_malformed_commands_are_refused_by_name(
    fake_host: Path, tmp_path: Path, short_dir: Path, command: str, words: str
) -> None:
    rig = Rig(fake_host, short_dir, candidate(tmp_path, "return 0;"))
    try:
        with pytest.raises(SandboxError, match=words):
            rig.host.ask(command)
        assert rig.host.ask("sync") == ""  # and the host still answers
    finally:
        rig.host.close()


def test_nothing_runs_before_the_device_is_set(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    host = SandboxHost(fake_host)
    try:
        with pytest.raises(SandboxError, match="device is not set"):
            host.ask("load", candidate(tmp_path, "return 0;"))
    finally:
        host.close()


def test_a_library_without_ks_launch_is_refused(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    source = tmp_path / "other.c"
    source.write_text("int something_else(void) { return 0; }\n")
    library = tmp_path / "libother.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    host = SandboxHost(fake_host)
    try:
        host.ask("device", 0)
        with pytest.raises(SandboxError, match="does not export ks_launch"):
            host.ask("load", library)
    finally:
        host.close()


def test_a_library_path_may_hold_spaces_and_one_host_loads_one_kernel(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    spaced = tmp_path / "a dir with spaces"
    spaced.mkdir()
    library = candidate(spaced, "return 3;")
    host = SandboxHost(fake_host)
    try:
        host.ask("device", 0)
        host.ask("load", library)
        with pytest.raises(SandboxError, match="loaded already"):
            host.ask("load", library)
        host.ask("slot", 0, handle("go0"), handle("done0"))
        host.ask(bind_command(0, [], [], []))
        assert host.ask("call", 0, 0) == "3"
    finally:
        host.close()


def test_the_host_dies_with_its_judge(fake_host: Path, tmp_path: Path, short_dir: Path) -> None:
    # A judge process that starts a host, says its pid, and dies without closing it.
    library = candidate(tmp_path, "return 0;")
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from kernelseek_tui.evaluate.sandbox_host import SandboxHost
        host = SandboxHost(Path({str(fake_host)!r}))
        host.ask("device", 0)
        host.ask("load", {str(library)!r})
        print(host.pid, flush=True)
        os._exit(0)
        """
    )
    judge = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    pid = int(judge.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the host outlived its judge")


def test_bind_command_spells_floats_as_their_bits() -> None:
    line = bind_command(2, [(0, 64), (1, 0)], [3, -4], [0.5])
    assert line == f"bind 2 2 0:64 1:0 2 3 -4 1 {struct.pack('=d', 0.5).hex()}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_real_host_is_built_once_and_names_a_missing_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelseek_tui.evaluate.sandbox_host import host_executable

    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    first = host_executable()
    built_at = first.stat().st_mtime_ns
    assert host_executable() == first and first.stat().st_mtime_ns == built_at
    if shutil.which("nvidia-smi") is not None:
        pytest.skip("a GPU may be visible here: the missing-GPU reply is for machines without")
    host = SandboxHost(first)
    try:
        with pytest.raises(SandboxError, match=r"the candidate's process: cudaError\w+"):
            host.ask("device", 0)
    finally:
        host.close()


def test_the_probe_runs_until_the_kernel_replaces_it_and_nothing_replaces_the_kernel(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The judge measures the hand-over of the very process a kernel will be timed in, with its
    # own empty kernel loaded there first (evaluate/handover_cost.py).
    probe = candidate(tmp_path, "return 5;", name="probe")
    kernel = candidate(tmp_path, "return 9;", name="kernel")
    host = SandboxHost(fake_host, extra_environment={"KS_FAKE_LOG": str(short_dir / "log")})
    try:
        host.ask("device", 0)
        host.ask("slot", 0, handle("go0"), handle("done0"))
        host.ask("probe", probe)
        buffer = shared_buffer(short_dir, "probe.bin", 1)
        host.ask("buffer", 0, handle(str(buffer)))
        host.ask(bind_command(0, [(0, GUARD)], [], []))
        assert host.ask("call", 0, 0) == "5"
        with pytest.raises(SandboxError, match="buffers are still mapped"):
            host.ask("load", kernel)
        host.ask("forget", 0)
        with pytest.raises(SandboxError, match="binding 0 does not exist"):
            host.ask("call", 0, 0)  # the probe's binding went with its buffer
        host.ask("load", kernel)
        host.ask("buffer", 1, handle(str(buffer)))
        host.ask(bind_command(1, [(1, GUARD)], [], []))
        assert host.ask("call", 1, 0) == "9"
        with pytest.raises(SandboxError, match="loaded already"):
            host.ask("load", probe)
        with pytest.raises(SandboxError, match="loaded already"):
            host.ask("probe", probe)
    finally:
        host.close()


def test_after_load_a_call_ending_in_probe_runs_the_probe_in_turn_with_the_kernel(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # The hand-over measured in turn (evaluate/handover_cost.py): the probe's calls alternate
    # with the kernel's once it is loaded, so whatever a call leaves in the process reaches
    # both. The probe takes no buffer (the judge's empty kernel reads nothing).
    probe = candidate(tmp_path, "return 5;", name="probe")
    kernel = candidate(tmp_path, "return 9;", name="kernel")
    counters = short_dir / "counters"
    counters.write_bytes(struct.pack("=I", 4) + bytes(124))  # the judge's GO = 4
    host = SandboxHost(fake_host, extra_environment={"KS_FAKE_LOG": str(short_dir / "log")})
    try:
        host.ask("device", 0)
        host.ask("slot", 0, handle("go0"), handle("done0"))
        host.ask("counters", handle(str(counters)))
        host.ask(bind_command(0, [], [], []))
        with pytest.raises(SandboxError, match="the candidate is not loaded"):
            host.ask("count", 0, 1)
        with pytest.raises(SandboxError, match="no probe was given"):
            host.ask("count", 0, 1, "probe")
        host.ask("probe", probe)
        assert host.ask("count", 0, 1) == "5"  # before load, the loaded one is the probe
        host.ask("load", kernel)
        assert host.ask("count", 0, 2) == "9"
        assert host.ask("count", 0, 3, "probe") == "5"
        assert host.ask("call", 0, 0, "probe") == "5"
        assert host.ask("call", 0, 0) == "9"
        with pytest.raises(SandboxError, match="may only be probe"):
            host.ask("count", 0, 4, "kernel")
        with pytest.raises(SandboxError, match=r"usage: call <b> <k> \[probe\]"):
            host.ask("call", 0, 0, "probe", "again")
    finally:
        host.close()


def test_the_judges_trailing_launch_follows_every_calls_done_the_probes_and_the_kernels(
    fake_host: Path, tmp_path: Path, short_dir: Path
) -> None:
    # A process that launched a kernel after its calls read them about 6 us cheaper than the
    # same process idle (H100, 2026-12-06); the judge's own launch after every call puts every
    # process in that state, its probe's calls included (docs/RELIABILITY.md).
    probe = candidate(tmp_path, "return 0;", name="probe")
    kernel = candidate(tmp_path, "return 9;", name="kernel")
    counters = short_dir / "counters"
    counters.write_bytes(struct.pack("=I", 2) + bytes(124))  # the judge's GO = 2
    log = short_dir / "log"
    host = SandboxHost(fake_host, extra_environment={"KS_FAKE_LOG": str(log)})
    try:
        host.ask("device", 0)
        host.ask("counters", handle(str(counters)))
        with pytest.raises(SandboxError, match="usage: trail"):
            host.ask("trail", probe)
        host.ask("trail")
        with pytest.raises(SandboxError, match="set already"):
            host.ask("trail")
        host.ask("probe", probe)
        buffer = shared_buffer(short_dir, "probe.bin", 1)
        host.ask("buffer", 0, handle(str(buffer)))
        host.ask(bind_command(0, [(0, GUARD)], [], []))
        assert host.ask("count", 0, 1) == "0"  # the probe's call
        host.ask("forget", 0)
        host.ask("load", kernel)
        host.ask(bind_command(1, [], [], []))
        assert host.ask("count", 1, 2) == "9"  # the kernel's
        # Each call: its DONE, then the trail's stream waits for the call's, then the launch.
        trailed = ("record trail", "wait trail", "launch trail")
        lines = [line for line in log.read_text().splitlines() if not line.startswith("open ")]
        assert lines == [
            *("wait-value 1", "write-value 1", *trailed),
            "close -",  # the probe's buffer, forgotten
            *("wait-value 2", "write-value 2", *trailed),
        ]
    finally:
        host.close()


def test_the_trail_comes_before_the_kernel(fake_host: Path, tmp_path: Path) -> None:
    kernel = candidate(tmp_path, "return 0;", name="kernel")
    host = SandboxHost(fake_host)
    try:
        with pytest.raises(SandboxError, match="device is not set"):
            host.ask("trail")
        host.ask("device", 0)
        host.ask("load", kernel)
        with pytest.raises(SandboxError, match="comes before the probe and the kernel"):
            host.ask("trail")
    finally:
        host.close()


def test_the_gpu_tests_patched_hosts_still_apply_to_the_host_source() -> None:
    # Those hosts are built on the GPU box only: a change to the host that breaks a patch
    # should fail here, in CI, not in the next GPU session.
    from test_sandbox_gpu import (
        EARLY_DONE_PATCHES,
        FENCE_PROBE_PATCHES,
        HEAT_AFTER_CALL_PATCHES,
        HEATER_PATCHES,
        KEEP_ALIVE_PATCHES,
        WAIT_AFTER_CALL_PATCHES,
    )

    from kernelseek_tui.evaluate.sandbox_host import HOST_SOURCE

    text = HOST_SOURCE.read_text()
    patches = (
        *EARLY_DONE_PATCHES,
        *HEATER_PATCHES,
        *FENCE_PROBE_PATCHES,
        *HEAT_AFTER_CALL_PATCHES,
        *KEEP_ALIVE_PATCHES,
        *WAIT_AFTER_CALL_PATCHES,
    )
    for old, _new in patches:
        assert text.count(old) == 1, old
