"""The judge's timing methods on a stand-in CUDA runtime whose clock only the calls move."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate import timing as timing_module
from kernelseek_tui.evaluate.timing import time_calls
from kernelseek_tui.task import Timing


class FakeGpu:
    """A stream whose clock moves by what is enqueued: kernels, flushes and launch gaps."""

    def __init__(self, kernel_ms: float, flush_ms: float, launch_gap_ms: float = 0.0) -> None:
        self.now = 0.0
        self.kernel_ms, self.flush_ms, self.launch_gap_ms = kernel_ms, flush_ms, launch_gap_ms
        self.log: list[str] = []
        gpu = self

        class Event:
            def __init__(self) -> None:
                self.t = 0.0

            def record(self, stream: Any) -> None:
                self.t = gpu.now

            def synchronize(self) -> None:
                pass

        def memset(ptr: int, value: int, size: int, stream: int) -> None:
            gpu.now += gpu.flush_ms
            gpu.log.append("flush")

        def raw_kernel(source: str, name: str) -> Any:
            def launch(grid: Any, block: Any, args: Any, stream: Any) -> None:
                gpu.now += args[0] / 1e6
                gpu.log.append("hold")

            return launch

        self.cp = SimpleNamespace(
            uint8="uint8",
            uint64=int,
            RawKernel=raw_kernel,
            empty=lambda size, dtype: SimpleNamespace(data=SimpleNamespace(ptr=1), nbytes=size),
            cuda=SimpleNamespace(
                Event=Event,
                Device=lambda: SimpleNamespace(id=0, attributes={"L2CacheSize": 60 << 20}),
                get_elapsed_time=lambda a, b: b.t - a.t,
                runtime=SimpleNamespace(memsetAsync=memset, deviceSynchronize=lambda: None),
            ),
        )
        self.stream = SimpleNamespace(ptr=7, synchronize=lambda: None)

    def call(self, index: int) -> None:
        # A slow Python-side launch leaves the GPU idle before a back-to-back call only.
        if self.log and self.log[-1].startswith("call"):
            self.now += self.launch_gap_ms
        self.now += self.kernel_ms
        self.log.append(f"call {index}")


@pytest.fixture(autouse=True)
def fresh_flush_buffers(monkeypatch) -> None:
    monkeypatch.setattr(timing_module, "_flush_buffers", {})
    monkeypatch.setattr(timing_module, "_hold_kernels", {})


def test_flushed_times_each_call_alone_after_a_flush() -> None:
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 3, Timing(method="flushed", max_reps=40))
    assert stats.median_ms == pytest.approx(0.2)
    assert stats.calls_per_sample == 1
    assert 5 <= len(stats.samples_ms) <= 40
    timed = [i for i, entry in enumerate(gpu.log) if entry.startswith("call")]
    # every timed call but the cross-check's back-to-back batch follows a flush
    flushed_calls = [i for i in timed if gpu.log[i - 1] == "flush"]
    assert len(flushed_calls) >= len(stats.samples_ms)


def test_flushed_sees_the_kernel_not_the_launch_gap_that_batched_counts() -> None:
    flushed = FakeGpu(kernel_ms=0.2, flush_ms=0.05, launch_gap_ms=0.05)
    batched = FakeGpu(kernel_ms=0.2, flush_ms=0.05, launch_gap_ms=0.05)
    a = time_calls(flushed.cp, flushed.stream, flushed.call, 2, Timing(method="flushed"))
    b = time_calls(batched.cp, batched.stream, batched.call, 2, Timing(method="batched"))
    assert a.median_ms == pytest.approx(0.2)
    assert b.median_ms > 0.22  # the gaps between back-to-back calls are in the batch


def test_flushed_keeps_the_refill_between_warm_up_and_the_measured_calls() -> None:
    gpu = FakeGpu(kernel_ms=1.0, flush_ms=0.1)
    marks: list[int] = []
    time_calls(
        gpu.cp,
        gpu.stream,
        gpu.call,
        2,
        Timing(method="flushed", warmup_ms=5, rep_ms=10),
        after_warmup=lambda: marks.append(len(gpu.log)),
    )
    (mark,) = marks
    assert any(e.startswith("call") for e in gpu.log[:mark])
    assert any(e.startswith("call") for e in gpu.log[mark:])


def test_a_task_names_only_a_known_method(tmp_path) -> None:
    from kernelseek_tui.task import TaskError, _timing

    assert _timing({}, tmp_path, ()).method == "flushed"
    with pytest.raises(TaskError, match="method 'fast'"):
        _timing({"method": "fast"}, tmp_path, ())
    with pytest.raises(TaskError, match="timing"):
        _timing({"wamup_ms": 3}, tmp_path, ())


def test_a_slow_host_launch_gets_the_stream_held_before_the_calls() -> None:
    gpu = FakeGpu(kernel_ms=0.05, flush_ms=0.01)

    def slow_launch(index: int) -> None:
        time.sleep(0.0005)  # the host takes ten times the kernel's time to launch it
        gpu.call(index)

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=2, max_reps=20)
    stats = time_calls(gpu.cp, gpu.stream, slow_launch, 2, timing)
    holds = [i for i, entry in enumerate(gpu.log) if entry == "hold"]
    assert len(holds) == 1
    after = [e for e in gpu.log[holds[0] + 1 :] if e.startswith("call")]
    assert len(after) >= len(stats.samples_ms)
    assert stats.median_ms == pytest.approx(0.05)


def test_a_fast_host_launch_gets_no_hold() -> None:
    gpu = FakeGpu(kernel_ms=5.0, flush_ms=0.1)
    time_calls(gpu.cp, gpu.stream, gpu.call, 2, Timing(method="flushed"))
    assert "hold" not in gpu.log


class RecordingHooks:
    """MeasuredCallHooks that log what they are told and keep the stand-in GPU busy for
    ``busy_ms`` each time (the evaluator's perturbation and copies), so any of their work that
    fell between a pair of events would show in the samples."""

    def __init__(self, gpu: FakeGpu, busy_ms: float) -> None:
        self.gpu, self.busy_ms = gpu, busy_ms
        self.plans: list[tuple[int, int]] = []
        self.before: list[list[tuple[int, int]]] = []
        self.after: list[list[tuple[int, int]]] = []

    def plan(self, calls: int, calls_per_sample: int) -> None:
        self.plans.append((calls, calls_per_sample))
        self.gpu.log.append("plan")

    def before_sample(self, calls) -> None:
        self.before.append([tuple(c) for c in calls])
        self.gpu.now += self.busy_ms
        self.gpu.log.append(f"before {calls[0].ordinal}")

    def after_sample(self, calls) -> None:
        self.after.append([tuple(c) for c in calls])
        self.gpu.now += self.busy_ms
        self.gpu.log.append(f"after {calls[-1].ordinal}")


def test_flushed_hooks_run_around_every_measured_call_outside_its_events() -> None:
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    hooks = RecordingHooks(gpu, busy_ms=3.0)
    marks: list[int] = []
    timing = Timing(method="flushed", warmup_ms=2, rep_ms=4, max_reps=40)
    stats = time_calls(
        gpu.cp,
        gpu.stream,
        gpu.call,
        3,
        timing,
        after_warmup=lambda: marks.append(len(gpu.log)),
        hooks=hooks,
    )
    # 3 ms of hook work per call, and not a microsecond of it in the samples
    assert stats.median_ms == pytest.approx(0.2)
    assert max(stats.samples_ms) == pytest.approx(0.2)
    calls = len(stats.samples_ms)
    assert hooks.plans == [(calls, 1)]
    measured = [[(k, k % 3)] for k in range(calls)]
    assert hooks.before == measured and hooks.after == measured
    # the plan comes after the refill, and each call sits between its own hooks, after its flush
    assert gpu.log.index("plan") >= marks[0]
    for k in range(calls):
        at = gpu.log.index(f"before {k}")
        assert gpu.log[at : at + 4] == ["before " + str(k), "flush", f"call {k % 3}", f"after {k}"]


def test_batched_hooks_run_only_at_batch_boundaries() -> None:
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    hooks = RecordingHooks(gpu, busy_ms=3.0)
    timing = Timing(method="batched", warmup_ms=2, rep_ms=4, max_reps=40)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 2, timing, hooks=hooks)
    assert stats.median_ms == pytest.approx(0.2)
    batch = stats.calls_per_sample
    assert batch >= 2 and batch % 2 == 0
    assert hooks.plans == [(len(stats.samples_ms) * batch, batch)]
    for rep, (before, after) in enumerate(zip(hooks.before, hooks.after, strict=True)):
        expected = [(rep * batch + i, i % 2) for i in range(batch)]
        assert before == expected and after == expected
        # the whole batch runs back to back between the two hooks
        at = gpu.log.index(f"before {rep * batch}")
        between = gpu.log[at + 1 : gpu.log.index(f"after {rep * batch + batch - 1}")]
        assert between == [f"call {i % 2}" for i in range(batch)]


def test_without_hooks_nothing_changes() -> None:
    plain = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    hooked = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    timing = Timing(method="flushed", warmup_ms=2, rep_ms=4, max_reps=40)
    a = time_calls(plain.cp, plain.stream, plain.call, 2, timing)
    b = time_calls(
        hooked.cp, hooked.stream, hooked.call, 2, timing, hooks=RecordingHooks(hooked, 0)
    )
    assert a.samples_ms == b.samples_ms
    assert [e for e in hooked.log if not e.startswith(("before", "after", "plan"))] == plain.log


def test_the_cross_check_waits_for_work_in_another_process_before_it_stops_the_clock() -> None:
    # A kernel in a process of its own: the judge's device synchronize cannot see work that
    # process left running; `settle` waits for it, and the cross-check's wall clock includes it.
    hidden_s = 0.1
    settled: list[str] = []

    def settle() -> None:
        # The first settle comes before the clock starts, the second after the batch.
        if settled:
            time.sleep(hidden_s)
        settled.append("settle")

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=settle)
    assert settled == ["settle", "settle"]
    assert stats.hidden_work
    # The same kernel with nothing left running elsewhere is not flagged.
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    assert not time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=lambda: None).hidden_work


class LoggingGate:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu

    def hold(self) -> None:
        self.gpu.log.append("gate")

    def release(self) -> None:
        self.gpu.log.append("open")


def test_a_gate_holds_each_sample_from_after_its_flush_until_it_is_enqueued() -> None:
    # A slow host (a kernel in another process): with a gate, every sample is held after its
    # flush, before its start event, and opened only once its end event is enqueued; the
    # head-start hold the slow host would get without a gate is not needed.
    gpu = FakeGpu(kernel_ms=0.05, flush_ms=0.01)

    def slow_launch(index: int) -> None:
        time.sleep(0.0005)
        gpu.call(index)

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=2, max_reps=20)
    stats = time_calls(gpu.cp, gpu.stream, slow_launch, 2, timing, gate=LoggingGate(gpu))
    assert "hold" not in gpu.log
    gates = [i for i, line in enumerate(gpu.log) if line == "gate"]
    assert len(gates) >= len(stats.samples_ms)
    for i in gates:
        assert gpu.log[i - 1] == "flush" and gpu.log[i + 1].startswith("call")
        assert gpu.log[i + 2] == "open"
    # No sample goes ungated: a call right after a flush is always behind a gate.
    pairs = zip(gpu.log, gpu.log[1:], strict=False)
    assert not any(a == "flush" and b.startswith("call") for a, b in pairs)
