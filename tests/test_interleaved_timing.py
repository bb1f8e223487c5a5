"""Interleaved timing (evaluate/timing.py: time_interleaved) on the stand-in CUDA runtime of
test_timing_method: two kernels of known cost share one clock, sample by sample."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kernelseek_tui.evaluate import timing as timing_module
from kernelseek_tui.evaluate.timing import InterleavedTimings, round_order, time_interleaved
from kernelseek_tui.task import Timing
from tests.test_timing_method import FakeGpu, RecordingHooks, SideStreamGpu

TIMING = Timing(method="flushed", warmup_ms=2, rep_ms=6, max_reps=60)


@pytest.fixture(autouse=True)
def fresh_flush_buffers(monkeypatch) -> None:
    monkeypatch.setattr(timing_module, "_flush_buffers", {})
    monkeypatch.setattr(timing_module, "_hold_kernels", {})


def fake_kernel(
    gpu: FakeGpu,
    name: str,
    ms: float,
    noise: float = 0.0,
    rng: random.Random | None = None,
    drift_per_ms: float = 0.0,
) -> Callable[[int], None]:
    """A kernel on ``gpu``'s clock costing ``ms``, times a relative jitter of sd ``noise``,
    times a slow-down the whole GPU suffers as its clock moves (``drift_per_ms``: a heating
    chip, a clock stepping down), which every kernel run at the same moment shares."""

    def call(index: int) -> None:
        jitter = rng.gauss(0.0, noise) if rng is not None and noise else 0.0
        gpu.now += ms * (1.0 + drift_per_ms * gpu.now) * (1.0 + jitter)
        gpu.log.append(f"{name} {index}")

    return call


class TaggedHooks(RecordingHooks):
    """RecordingHooks whose log lines name the kernel they belong to."""

    def __init__(self, gpu: FakeGpu, busy_ms: float, tag: str) -> None:
        super().__init__(gpu, busy_ms)
        self.tag = tag

    def plan(self, calls: int, calls_per_sample: int) -> None:
        super().plan(calls, calls_per_sample)
        self.gpu.log[-1] = f"{self.tag} plan"

    def before_sample(self, calls) -> None:
        super().before_sample(calls)
        self.gpu.log[-1] = f"{self.tag} {self.gpu.log[-1]}"

    def after_sample(self, calls) -> None:
        super().after_sample(calls)
        self.gpu.log[-1] = f"{self.tag} {self.gpu.log[-1]}"


def test_the_ratios_of_two_kernels_of_known_cost_come_out_right() -> None:
    gpu = FakeGpu(kernel_ms=0.0, flush_ms=0.05)
    slow, fast = fake_kernel(gpu, "A", 0.3), fake_kernel(gpu, "B", 0.2)
    timed = time_interleaved(gpu.cp, gpu.stream, [slow, fast], 2, TIMING)
    a, b = timed.stats
    assert a.median_ms == pytest.approx(0.3) and b.median_ms == pytest.approx(0.2)
    assert len(a.samples_ms) == len(b.samples_ms) >= TIMING.min_reps
    assert len(a.samples_ms) % 2 == 0  # as many rounds led by each kernel
    assert timed.ratios(0, 1) == pytest.approx([1.5] * len(a.samples_ms))
    assert timed.ratios(1, 0) == pytest.approx([0.2 / 0.3] * len(a.samples_ms))


def _a_and_b_in_turn(n_sets: int, timing: Timing) -> tuple[FakeGpu, InterleavedTimings, int]:
    """Kernels A (0.3 ms) and B (0.2 ms) timed in turn on a fresh stand-in GPU; and the index in
    its log where the measured samples begin (just after the warm-up's refill)."""
    gpu = FakeGpu(kernel_ms=0.0, flush_ms=0.05)
    marks: list[int] = []
    timed = time_interleaved(
        gpu.cp,
        gpu.stream,
        [fake_kernel(gpu, "A", 0.3), fake_kernel(gpu, "B", 0.2)],
        n_sets,
        timing,
        after_warmup=lambda: marks.append(len(gpu.log)),
    )
    return gpu, timed, marks[0]


def test_samples_alternate_a_b_b_a_each_after_its_own_flush() -> None:
    gpu, timed, first_measured = _a_and_b_in_turn(3, TIMING)
    rounds = len(timed.stats[0].samples_ms)
    measured = gpu.log[first_measured : first_measured + 4 * rounds]
    assert measured[0::2] == ["flush"] * 2 * rounds
    expected = [
        f"{'AB'[k]} {r % 3}" for r in range(rounds) for k in round_order(2, r)
    ]  # A B, B A, A B, ... each on the round's input set
    assert measured[1::2] == expected
    assert expected[:4] == ["A 0", "B 0", "B 1", "A 1"]
    # the warm-up before the refill interleaves too: never three samples of one kernel in a row
    warm = "".join(e[0] for e in gpu.log[:first_measured] if e[0] in "AB")
    assert warm.count("A") == warm.count("B") > 3
    assert "AAA" not in warm and "BBB" not in warm


def test_each_kernels_hooks_run_only_around_its_own_measured_samples_outside_events() -> None:
    gpu = FakeGpu(kernel_ms=0.0, flush_ms=0.05)
    hooks = [TaggedHooks(gpu, 3.0, "a"), TaggedHooks(gpu, 3.0, "b")]
    marks: list[int] = []
    timed = time_interleaved(
        gpu.cp,
        gpu.stream,
        [fake_kernel(gpu, "A", 0.3), fake_kernel(gpu, "B", 0.2)],
        2,
        TIMING,
        after_warmup=lambda: marks.append(len(gpu.log)),
        hooks=hooks,
    )
    # 3 ms of hook work per sample, and none of it in the samples
    assert max(timed.stats[0].samples_ms) == pytest.approx(0.3)
    assert max(timed.stats[1].samples_ms) == pytest.approx(0.2)
    rounds = len(timed.stats[0].samples_ms)
    for tag, hook in zip("ab", hooks, strict=True):
        assert hook.plans == [(rounds, 1)]
        assert hook.before == hook.after == [[(k, k % 2)] for k in range(rounds)]
        assert gpu.log.index(f"{tag} plan") >= marks[0]  # no hook work in the warm-up
        for k in range(rounds):
            at = gpu.log.index(f"{tag} before {k}")
            name = tag.upper()
            assert gpu.log[at : at + 4] == [
                f"{tag} before {k}",
                "flush",
                f"{name} {k % 2}",
                f"{tag} after {k}",
            ]


def test_pairing_sees_through_a_drift_that_separate_runs_take_for_a_gain() -> None:
    # The GPU slows by 0.2% per ms of its clock: the same kernel timed later looks slower.
    gpu = FakeGpu(kernel_ms=0.0, flush_ms=0.05)
    same = [
        fake_kernel(gpu, "A", 0.3, drift_per_ms=0.002),
        fake_kernel(gpu, "B", 0.3, drift_per_ms=0.002),
    ]
    first = timing_module.time_calls(gpu.cp, gpu.stream, same[0], 2, TIMING)
    second = timing_module.time_calls(gpu.cp, gpu.stream, same[1], 2, TIMING)
    assert second.median_ms / first.median_ms > 1.01  # separate runs: a 1%+ "difference"
    paired = time_interleaved(gpu.cp, gpu.stream, same, 2, TIMING)
    ratios = sorted(paired.ratios(1, 0))
    assert ratios[len(ratios) // 2] == pytest.approx(1.0, abs=0.002)


def test_it_refuses_one_callable_or_the_batched_method() -> None:
    gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
    with pytest.raises(ValueError, match="two"):
        time_interleaved(gpu.cp, gpu.stream, [gpu.call], 1, TIMING)
    with pytest.raises(ValueError, match="flushed"):
        time_interleaved(gpu.cp, gpu.stream, [gpu.call, gpu.call], 1, Timing(method="batched"))


def test_runs_of_samples_keep_sample_r_of_each_kernel_paired_and_each_leading_as_often() -> None:
    run = Timing(method="flushed", warmup_ms=2, rep_ms=6, max_reps=60, turn_run=3)
    gpu, timed, first_measured = _a_and_b_in_turn(2, run)
    samples = len(timed.stats[0].samples_ms)
    assert samples == len(timed.stats[1].samples_ms) and samples % 6 == 0
    measured = [e for e in gpu.log[first_measured:] if e[0] in "AB"][: 2 * samples]
    # A A A B B B, then B B B A A A: each kernel's sample r on input set r % 2
    assert measured[:12] == ["A 0", "A 1", "A 0", "B 0", "B 1", "B 0",
                             "B 1", "B 0", "B 1", "A 1", "A 0", "A 1"]  # fmt: skip
    assert timed.stats[0].median_ms == pytest.approx(0.3)
    assert timed.ratios(0, 1) == pytest.approx([1.5] * samples)


def test_a_turn_run_below_one_is_refused(tmp_path) -> None:
    from kernelseek_tui.task import TaskError, _timing

    with pytest.raises(TaskError, match="turn_run"):
        _timing({"turn_run": 0}, tmp_path / "task.toml", ())


def test_a_candidate_hiding_work_beside_honest_peers_is_flagged_and_the_peers_are_not() -> None:
    # The candidate (first, as the worker passes it) hides 2 ms a call on a side stream whenever
    # the device is busy, more than the stream runs in a round: the hidden work piles up behind
    # the run. It is honest after a device-wide synchronize, so in its cross-check's one call.
    gpu = SideStreamGpu(kernel_ms=0.0, flush_ms=0.05)
    peers = [fake_kernel(gpu, "B", 0.3), fake_kernel(gpu, "C", 0.3)]
    timed = time_interleaved(gpu.cp, gpu.stream, [gpu.kernel(0.6, 2.0), *peers], 1, TIMING)
    candidate, *honest = timed.stats
    assert candidate.median_ms == pytest.approx(0.6)  # the measured samples did hide work
    assert not candidate.hidden_by_cross_check
    assert candidate.hidden_by_tail and candidate.hidden_work
    for peer in honest:
        assert peer.median_ms == pytest.approx(0.3)
        assert not peer.hidden_work and peer.max_tail_ms is None


@pytest.mark.parametrize("turn_run", [1, 2])
def test_the_runs_tail_is_charged_to_the_callable_whose_sample_ends_it(turn_run: int) -> None:
    gpu = SideStreamGpu(kernel_ms=0.0, flush_ms=0.05)
    marks: list[int] = []
    kernels = [fake_kernel(gpu, name, 0.3) for name in "ABC"]
    timing = Timing(method="flushed", warmup_ms=2, rep_ms=6, max_reps=60, turn_run=turn_run)
    timed = time_interleaved(
        gpu.cp, gpu.stream, kernels, 1, timing, after_warmup=lambda: marks.append(len(gpu.log))
    )
    measured = [e for e in gpu.log[marks[0] :] if e[0] in "ABC"]
    samples = sum(len(stats.samples_ms) for stats in timed.stats)
    last = "ABC".index(measured[samples - 1][0])
    assert last == 0  # the rounds are even in number: the last, reversed, ends with the first
    assert [stats.max_tail_ms is not None for stats in timed.stats] == [True, False, False]
    charged = timed.stats[last]
    assert charged.max_tail_ms is not None and charged.max_tail_ms < 1.0
    assert not any(stats.hidden_work for stats in timed.stats)
