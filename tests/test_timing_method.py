"""The judge's timing methods on a stand-in CUDA runtime whose clock only the calls move."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate import timing as timing_module
from kernelseek_tui.evaluate.timing import TimingStats, time_calls, time_interleaved
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
        # The first settle ends the measured run's tail; then each attempt of the cross-check
        # settles before its clock starts and after its batch: work left there, every time.
        if len(settled) >= 2 and len(settled) % 2 == 0:
            time.sleep(hidden_s)
        settled.append("settle")

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=settle)
    assert stats.cross_check_attempts == 3
    assert len(settled) == 1 + 2 * 3
    assert stats.hidden_by_cross_check and not stats.hidden_by_tail
    assert stats.hidden_work
    assert stats.wall_ms_per_call is not None and stats.wall_ms_per_call > 10  # 100 ms a batch
    # The same kernel with nothing left running elsewhere is not flagged.
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    assert not time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=lambda: None).hidden_work


def test_one_stall_of_the_host_in_a_cross_check_does_not_flag_an_honest_kernel() -> None:
    # The first attempt's batch waits 100 ms for the host (as sm90.cu's did once on an H100,
    # 2026-12-07 19:09: 3.643 ms wall per call against 0.805); the second runs clean.
    settled: list[str] = []

    def settle() -> None:
        if len(settled) == 2:  # after the first attempt's batch only
            time.sleep(0.1)
        settled.append("settle")

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=settle)
    assert stats.cross_check_attempts == 2
    assert not stats.hidden_by_cross_check and not stats.hidden_work
    assert stats.wall_ms_per_call is not None and stats.wall_ms_per_call < 10  # the clean one


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


class SideStreamGpu(FakeGpu):
    """FakeGpu with a second stream that a kernel can hide work on: ``side_done`` is when that
    stream's work ends on the device clock. A device synchronize waits for it, sleeping for as
    long as it outlasts the given stream's work (so the host clock sees what the events do not),
    and leaves the device idle until the next flush or call."""

    def __init__(self, kernel_ms: float, flush_ms: float) -> None:
        super().__init__(kernel_ms, flush_ms)
        self.side_done = 0.0
        self.idle = True
        runtime = self.cp.cuda.runtime
        flush = runtime.memsetAsync

        def memset(ptr: int, value: int, size: int, stream: int) -> None:
            self.idle = False
            flush(ptr, value, size, stream)

        def device_synchronize() -> None:
            # (no sleep(0) when nothing is left: it would yield the host thread to any other)
            if self.side_done > self.now:
                time.sleep((self.side_done - self.now) / 1000.0)
            self.now = self.side_done = max(self.now, self.side_done)
            self.idle = True

        runtime.memsetAsync, runtime.deviceSynchronize = memset, device_synchronize

    def kernel(self, visible_ms: float, hidden_ms: float = 0.0) -> Callable[[int], None]:
        """A kernel of ``visible_ms + hidden_ms`` of work. When it finds the device idle (after
        a device-wide synchronize, as the cross-check's first call does) it does all of it on
        the given stream; otherwise ``hidden_ms`` of it goes to the side stream, beside the rest."""

        def call(index: int) -> None:
            began = self.now
            if self.idle or not hidden_ms:
                self.now += visible_ms + hidden_ms
            else:
                self.now += visible_ms
                self.side_done = max(self.side_done, began) + hidden_ms
            self.idle = False
            self.log.append(f"call {index}")

        return call


TIMING_BY_METHOD = {
    # One input set and calls of 0.5 ms and more: the cross-check's batch is one call, made on
    # an idle device, so the cheat below is honest there, and the cross-check alone misses it.
    "flushed": Timing(method="flushed", warmup_ms=2, rep_ms=10, max_reps=20),
    "batched": Timing(method="batched", warmup_ms=5, rep_ms=10, max_reps=20),
}


@pytest.mark.parametrize("method", ["flushed", "batched"])
def test_hidden_work_that_outlives_a_measured_run_is_caught_by_the_runs_tail(method) -> None:
    # 1.6 ms of work, 1.0 ms of it on a side stream whenever the device is busy: the measured
    # samples read 0.6 ms, and the hidden work piles up behind the given stream's. ("batched"
    # now drains the device after every measured batch, as before the cross-check's, so the
    # cheat behaves from the second batch on; the first still follows the warm-up's pile.)
    gpu = SideStreamGpu(kernel_ms=0.0, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.kernel(0.6, 1.0), 1, TIMING_BY_METHOD[method])
    assert stats.samples_ms[0] == pytest.approx(0.6)  # the measured run did hide work
    assert not stats.hidden_by_cross_check  # honest in the cross-check's batch
    assert stats.hidden_by_tail and stats.hidden_work
    assert stats.max_tail_ms is not None and stats.tail_limit_ms is not None
    assert stats.max_tail_ms > 1.5 * stats.tail_limit_ms


@pytest.mark.parametrize("method", ["flushed", "batched"])
@pytest.mark.parametrize("kernel_ms", [0.6, 4.0])
def test_an_honest_kernels_tail_stays_under_its_limit(method, kernel_ms: float) -> None:
    gpu = SideStreamGpu(kernel_ms=0.0, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.kernel(kernel_ms), 1, TIMING_BY_METHOD[method])
    assert stats.median_ms == pytest.approx(kernel_ms)
    assert not stats.hidden_work
    # every measured run's tail was taken, and the limit is 1 ms or half the median call
    assert stats.max_tail_ms is not None and 0.0 <= stats.max_tail_ms < 1.0
    assert stats.tail_limit_ms == pytest.approx(max(1.0, 0.5 * kernel_ms))


class MarkMeasured:
    """MeasuredCallHooks that only mark when a measured sample is being enqueued."""

    def __init__(self) -> None:
        self.measuring = False

    def plan(self, calls: int, calls_per_sample: int) -> None:
        pass

    def before_sample(self, calls) -> None:
        self.measuring = True

    def after_sample(self, calls) -> None:
        self.measuring = False


@pytest.mark.parametrize("method", ["flushed", "batched"])
def test_work_left_in_another_process_after_a_measured_run_shows_in_its_tail(method) -> None:
    # A kernel in a process of its own leaves 3 ms of work there after its measured calls only
    # (not in the cross-check's, which no hooks mark): the judge's device synchronize cannot see
    # it; `settle`, which waits for it, ends every measured run's tail.
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    marks = MarkMeasured()
    left: list[bool] = []
    waited: list[bool] = []

    def call(index: int) -> None:
        gpu.call(index)
        left.append(marks.measuring)

    def settle() -> None:
        waited.append(any(left))
        if any(left):
            time.sleep(0.003)
        left.clear()

    timing = Timing(method=method, warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)
    stats = time_calls(gpu.cp, gpu.stream, call, 1, timing, hooks=marks, settle=settle)
    # a settle after every measured run (one for "flushed", one a batch for "batched"), each
    # waiting for that run's work; then the cross-check's two, with nothing to wait for
    runs = 1 if method == "flushed" else len(stats.samples_ms)
    assert waited == [True] * runs + [False, False]
    assert stats.hidden_by_tail and not stats.hidden_by_cross_check
    assert stats.max_tail_ms is not None and stats.max_tail_ms >= 3.0


def test_the_worker_names_the_check_that_saw_hidden_work_with_its_figures() -> None:
    from kernelseek_tui.evaluate.result import ScenarioResult
    from kernelseek_tui.evaluate.worker import _hidden_work_fails

    def reasons(stats: TimingStats) -> list[str]:
        result = ScenarioResult(name="s", set="quick", fields={})
        assert _hidden_work_fails(stats, result) == (result.passed is False)
        assert (result.tail_ms, result.tail_limit_ms) == (stats.max_tail_ms, stats.tail_limit_ms)
        return result.reasons

    tail = TimingStats(median_ms=0.6, max_tail_ms=7.25, tail_limit_ms=1.0)
    (reason,) = reasons(tail)
    assert reason.startswith("work outside the given stream: the device stayed busy 7.250 ms")
    assert "measured run (limit 1.000 ms)" in reason and "cross-check" not in reason
    cross = TimingStats(
        median_ms=0.6, wall_ms_per_call=2.0, event_ms_per_call=0.5, hidden_by_cross_check=True
    )
    cross.max_tail_ms, cross.tail_limit_ms = 0.01, 1.0
    (reason,) = reasons(cross)
    assert reason == (
        "work outside the given stream: cross-check: 2.000 ms wall per call "
        "against 0.500 ms on the stream"
    )
    assert reasons(TimingStats(median_ms=0.6, max_tail_ms=0.99, tail_limit_ms=1.0)) == []


@pytest.mark.parametrize("method", ["flushed", "batched"])
def test_an_isolated_runs_tail_is_the_wait_its_process_reports_not_the_round_trip(method) -> None:
    # Kernels in processes of their own: `settle` reports how long their device synchronize
    # waited. A stall of the pipe around an idle wait (5 ms here) is not work of the kernel's and
    # must not fail it; a reported wait of 3 ms is, and must.
    timing = Timing(method=method, warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)

    def stalled_but_idle() -> float:
        time.sleep(0.005)
        return 0.02

    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=stalled_but_idle)
    assert not stats.hidden_by_tail
    assert stats.max_tail_ms is not None and stats.max_tail_ms < 1.0

    def waited_for_left_work() -> float:
        time.sleep(0.003)
        return 3.0

    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=waited_for_left_work)
    assert stats.hidden_by_tail
    assert stats.max_tail_ms is not None and stats.max_tail_ms >= 3.0


def test_a_reported_wait_never_makes_a_tail_longer_than_the_round_trip() -> None:
    timing = Timing(method="flushed", warmup_ms=1, rep_ms=5, min_reps=5, max_reps=20)
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    stats = time_calls(gpu.cp, gpu.stream, gpu.call, 1, timing, settle=lambda: 50.0)
    assert stats.max_tail_ms is not None and stats.max_tail_ms < 1.0


def test_with_a_gate_each_callable_is_first_called_once_ungated_and_waited_for() -> None:
    # A kernel's process may load its module at the first launch and wait for its stream, which
    # behind a gate waits for the judge's: a first call behind a gate stalled until the gate let
    # go by itself (5 s a time on an H100, 2026-12-06).
    gpu = FakeGpu(kernel_ms=0.05, flush_ms=0.01)
    gpu.stream = SimpleNamespace(ptr=7, synchronize=lambda: gpu.log.append("sync"))

    def other(index: int) -> None:
        gpu.now += gpu.kernel_ms
        gpu.log.append(f"other {index}")

    timing = Timing(method="flushed", warmup_ms=1, rep_ms=2, max_reps=20)
    time_calls(gpu.cp, gpu.stream, gpu.call, 2, timing, gate=LoggingGate(gpu))
    assert gpu.log[:2] == ["call 0", "sync"]
    assert gpu.log.index("gate") > 1
    gpu.log.clear()
    time_interleaved(gpu.cp, gpu.stream, [gpu.call, other], 2, timing, gate=LoggingGate(gpu))
    assert gpu.log[:3] == ["call 0", "other 0", "sync"]
    # Without a gate nothing is called before the plan's own flushed samples.
    gpu.log.clear()
    time_calls(gpu.cp, gpu.stream, gpu.call, 2, timing)
    assert gpu.log[0] == "flush"
