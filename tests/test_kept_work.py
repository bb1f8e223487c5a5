"""Work kept across calls (evaluate/kept_work.py): where the task perturbs only some inputs,
a secret share of the samples has every input perturbed, and a kernel that keeps work done on
the unlisted inputs shows up in those samples' times."""

from __future__ import annotations

import dataclasses
import random
import statistics

import numpy as np
import pytest

from kernelseek_tui.evaluate import timing as timing_module
from kernelseek_tui.evaluate.judged_call import MeasuredCallWatch, Perturbation, replay
from kernelseek_tui.evaluate.kept_work import (
    BOUND,
    MIN_GROUP,
    compare_groups,
    held_ms,
    held_speedups,
    rank_z,
)
from kernelseek_tui.evaluate.result import ScenarioResult
from kernelseek_tui.evaluate.timing import MeasuredCall
from kernelseek_tui.evaluate.worker import every_input_checked, kept_work_fails
from kernelseek_tui.task import Timing, load_task
from tests.test_judged_call import ToyRun
from tests.test_timing_method import FakeGpu


@pytest.fixture(autouse=True)
def fresh_flush_buffers(monkeypatch) -> None:
    monkeypatch.setattr(timing_module, "_flush_buffers", {})
    monkeypatch.setattr(timing_module, "_hold_kernels", {})


def test_rank_z_is_zero_for_equal_groups_and_grows_with_a_shift() -> None:
    same = [1.0, 2.0, 3.0, 4.0]
    assert rank_z(same, same) == pytest.approx(0.0)
    assert rank_z([5.0] * 10, [5.0] * 10) == 0.0  # all tied: no evidence either way
    high = [10.0 + i for i in range(10)]
    low = [float(i) for i in range(10)]
    # every value above every other: U = n * m, z = (n m / 2) / sqrt(n m (n + m + 1) / 12)
    assert rank_z(high, low) == pytest.approx(50 / np.sqrt(100 * 21 / 12))
    assert rank_z(low, high) == pytest.approx(-rank_z(high, low))


def test_groups_too_small_are_not_compared() -> None:
    samples = [1.0] * 40
    flags = [i < MIN_GROUP - 1 for i in range(40)]
    assert compare_groups(samples, flags) is None
    flags = [i < MIN_GROUP for i in range(40)]
    assert compare_groups(samples, flags) is not None
    with pytest.raises(ValueError):
        compare_groups(samples, flags[:-1])


def _simulated(rng: random.Random, slowdown: float, n: int = 70, share: float = 0.25):
    """A run of ``n`` samples with 2% noise, the every-input ones ``slowdown`` times longer."""
    flags = [rng.random() < share for _ in range(n)]
    samples = [(slowdown if f else 1.0) * rng.gauss(1.4, 0.028) for f in flags]
    return samples, flags


def test_honest_runs_are_not_named_in_two_thousand_tries() -> None:
    rng = random.Random(11)
    named = 0
    for _ in range(2000):
        check = compare_groups(*_simulated(rng, 1.0))
        named += check is not None and check.kept_work()
    assert named == 0


def test_a_kernel_paying_its_kept_work_again_after_every_change_is_named() -> None:
    rng = random.Random(12)
    named = 0
    for _ in range(200):
        check = compare_groups(*_simulated(rng, 1.3))
        named += check is not None and check.kept_work()
    assert named >= 195
    # a gain inside the bound is not named: a few percent is not worth a verdict on noise
    small = [compare_groups(*_simulated(rng, 1.0 + BOUND / 2)) for _ in range(200)]
    assert not any(c is not None and c.kept_work() for c in small)


def _decoyed(rng: random.Random, n: int, kept: float = 0.10, decoys: float = 0.30):
    """A kernel keeping ``kept`` of its work on the inputs the judge does not list (its full
    time 1.0), that knows each sample's group and runs ``decoys`` of its other samples slower
    still (1.1), so that its every-input samples rank in the middle while the median of the
    whole run stays below its full time."""
    flags = [rng.random() < 0.25 for _ in range(n)]
    times = [1.0 if f else 1.1 if rng.random() < decoys else 1.0 - kept for f in flags]
    return [t * rng.gauss(1.0, 0.02) for t in times], flags


def test_decoy_samples_hide_kept_work_from_the_rule_but_not_from_the_figure() -> None:
    rng = random.Random(13)
    runs = [_decoyed(rng, rng.randrange(48, 100)) for _ in range(300)]
    checks = [compare_groups(samples, flags) for samples, flags in runs]
    named = sum(c is not None and c.kept_work() for c in checks)
    # the hole: few such runs are named (the review's simulation: 1-9% under 100 samples)
    assert named < len(runs) // 10
    medians = [statistics.median(samples) for samples, _ in runs]
    held = [held_ms(m, c) for m, c in zip(medians, checks, strict=True)]
    # the median alone reads the kept work as speed (some 6% on average) ...
    assert statistics.mean(medians) < 0.96
    # ... the held figure reads the full time, 1.0, whatever the rule said
    assert min(h for h, c in zip(held, checks, strict=True) if c is not None) > 0.975


def test_an_honest_run_pays_little_for_the_held_figure() -> None:
    rng = random.Random(14)
    rises = []
    for _ in range(2000):
        samples, flags = _simulated(rng, 1.0, n=48)
        median = statistics.median(samples)
        rises.append(held_ms(median, compare_groups(samples, flags)) / median - 1.0)
    # 2% noise: a median of 48 samples moves by about 0.4%, one of 12 by about 0.7%
    assert 0.0005 < statistics.mean(rises) < 0.004
    assert max(rises) < 0.03
    assert held_ms(1.0, None) == 1.0  # groups too small to compare: the median


def test_paired_speedups_are_held_to_the_every_input_rounds() -> None:
    flags = [True] * 10 + [False] * 30
    # a keeper: 1.2x faster than the best so far on its other rounds, 1.0x on the every-input
    speedups = [1.0] * 10 + [1.2] * 30
    held = held_speedups(speedups, flags)
    assert statistics.median(held) == pytest.approx(1.0)
    # the rounds' scatter is kept: the same ratios of one round to another
    assert held[-1] / held[0] == pytest.approx(1.2)
    # an honest run whose every-input rounds read faster keeps its figure
    assert held_speedups(list(reversed(speedups)), flags) == list(reversed(speedups))
    # too few rounds in a group: as given
    assert held_speedups([1.0] * 3 + [1.2] * 30, [True] * 3 + [False] * 30)[-1] == 1.2
    with pytest.raises(ValueError, match="rounds"):
        held_speedups(speedups, flags[:-1])


def test_the_worker_reports_the_held_figure_and_says_so() -> None:
    from kernelseek_tui.evaluate.timing import TimingStats
    from kernelseek_tui.evaluate.worker import _hold_to_every_input, _paired_speedups

    flags = [True] * 10 + [False] * 30
    samples = [1.0] * 10 + [0.9] * 30
    stats = TimingStats(median_ms=0.9, samples_ms=samples, calls_per_sample=1)
    result = ScenarioResult(name="s", set="bench", fields={})
    result.ms, result.tflops = 0.9, 100.0
    _hold_to_every_input(result, stats, flags, flops=1e11)
    assert result.ms == 1.0 and result.tflops == pytest.approx(100.0)
    assert any("11.1% slower" in note for note in result.timing_notes)
    untouched = ScenarioResult(name="s", set="bench", fields={})
    _hold_to_every_input(untouched, stats, [], flops=None)
    assert untouched.ms is None and not untouched.timing_notes
    # the rounds: best over candidate, a round with a sample not positive left out
    best = [1.2] * 40
    mine = [1.2] * 10 + [1.0] * 29 + [0.0]
    speedups = _paired_speedups(best, mine, flags)
    assert len(speedups) == 39 and statistics.median(speedups) == pytest.approx(1.0)
    assert _paired_speedups(best, mine, []) == [1.0] * 10 + [1.2] * 29


def test_the_reason_gives_both_medians_and_the_listed_inputs() -> None:
    samples = [2.0] * 10 + [1.0] * 30
    check = compare_groups(samples, [True] * 10 + [False] * 30)
    assert check is not None and check.kept_work()
    reason = check.reason(["q"])
    assert "the 10 measured samples after every input changed took 2.000" in reason
    assert "the 30 after only 'q' changed" in reason
    assert "2000.0 us against 1000.0 us" in reason
    result = ScenarioResult(name="s", set="bench", fields={})
    task = load_task("kernels/flash_fwd")
    assert kept_work_fails(task, samples, [True] * 10 + [False] * 30, result)
    assert result.passed is False and result.every_input_ratio == 2.0
    honest = ScenarioResult(name="s", set="bench", fields={})
    assert not kept_work_fails(task, [1.0] * 40, [True] * 10 + [False] * 30, honest)
    assert honest.every_input_ratio == 1.0 and honest.passed is None


def test_flash_fwd_gets_the_check_and_a_task_perturbing_every_input_does_not() -> None:
    task = load_task("kernels/flash_fwd")
    assert task.timing.perturb == ("q",) and task.timing.every_input_share == 0.25
    assert every_input_checked(task)
    everything = dataclasses.replace(task.timing, perturb=())
    assert not every_input_checked(dataclasses.replace(task, timing=everything))
    off = dataclasses.replace(task.timing, every_input_share=0.0)
    assert not every_input_checked(dataclasses.replace(task, timing=off))


def test_a_watch_without_the_every_input_flipper_draws_nothing_more() -> None:
    # The draws of the judged call and the keys stay those of before for tasks without it.
    plain = MeasuredCallWatch(2, random.Random(4), lambda s, k: None, lambda s, keep: {})
    old_rng = random.Random(4)
    plain.plan(10, 1)
    old_rng.randrange(10)
    for i in range(10):
        plain.before_sample([MeasuredCall(i, i % 2)])
    assert [p.key for p in plain.log] == [old_rng.getrandbits(64) for _ in range(10)]
    assert not any(p.every for p in plain.log) and plain.every_sample == [False] * 10


def test_replay_needs_the_every_input_flipper_for_such_a_perturbation() -> None:
    log = [Perturbation(0, 0, 1), Perturbation(1, 0, 2, every=True)]
    applied: list[tuple[str, int]] = []
    replay(
        log,
        MeasuredCall(1, 0),
        lambda s, k: applied.append(("listed", k)),
        lambda s: None,
        lambda s, k: applied.append(("every", k)),
    )
    assert applied == [("listed", 1), ("every", 2)]
    with pytest.raises(ValueError, match="nothing to replay"):
        replay(log, MeasuredCall(1, 0), lambda s, k: None, lambda s: None)


class KeptWorkRun(ToyRun):
    """ToyRun with x alone listed for perturbation and y flipped on the secret share too; the
    candidate pays ``extra_ms`` for its work on y on every call (honest) or, keeping that work
    (``keeps``), only on calls where y changed since it last looked at it."""

    LISTED = ("x",)

    def __init__(self, seed: int, keeps: bool, extra_ms: float = 0.1) -> None:
        super().__init__(every=1, seed=seed)
        self.keeps, self.extra_ms = keeps, extra_ms
        self.watch = MeasuredCallWatch(
            self.N_SETS,
            random.Random(seed),
            self._perturb,
            self._copy_aside,
            perturb_every=lambda set_index, key: self._flip(self.sets[set_index], ("x", "y"), key),
            every_share=0.25,
        )
        self.last_y: dict[int, bytes] = {}

    def _call(self, gpu: FakeGpu, set_index: int) -> None:
        tensors = self.sets[set_index]
        y = tensors["y"].tobytes()
        if not self.keeps or self.last_y.get(set_index) != y:
            gpu.now += self.extra_ms  # the work on y, done again
            self.last_y[set_index] = y
        tensors["out"][...] = self.expected(tensors)
        gpu.call(set_index)

    def _timing(self) -> Timing:
        return Timing(warmup_ms=2, rep_ms=40, max_reps=160)


def test_a_kernel_keeping_work_on_unperturbed_inputs_is_named_and_an_honest_one_is_not() -> None:
    for seed in range(5):
        honest, keeper = KeptWorkRun(seed, keeps=False), KeptWorkRun(seed, keeps=True)
        honest.run()
        keeper.run()
        # both did the same on the judged call's inputs, and the replay accounts for every flip
        for run in (honest, keeper):
            assert any(p.every for p in run.watch.log) and not all(p.every for p in run.watch.log)
            seen, aside = run.replayed(), run.watch.aside
            for tensors, expected in zip(run.sets, run.pristine, strict=True):
                assert all(np.array_equal(tensors[n], expected[n]) for n in ("x", "y"))
            assert aside is not None and np.array_equal(aside["out"], ToyRun.expected(seen))
        check = compare_groups(honest.stats.samples_ms, honest.watch.every_sample)
        assert check is not None and not check.kept_work() and check.ratio == pytest.approx(1.0)
        check = compare_groups(keeper.stats.samples_ms, keeper.watch.every_sample)
        # the keeper's median is the cheap call's, 0.20 ms against the honest 0.30
        assert keeper.stats.median_ms == pytest.approx(0.2)
        assert check is not None and check.kept_work() and check.ratio == pytest.approx(1.5)


def test_a_run_the_rule_applies_to_has_enough_samples_for_it_to_decide() -> None:
    from kernelseek_tui.evaluate.kept_work import MIN_SAMPLES, with_sample_floor

    # A review's simulation (2026-12-07): a kernel slow only in the judge's probe cut its runs
    # to 10-12 samples, where two groups of MIN_GROUP cannot form; the floor does not move.
    task = load_task("kernels/flash_fwd")
    floored = with_sample_floor(task.timing_for("bench"))
    assert floored.min_reps == MIN_SAMPLES >= 4 * MIN_GROUP
    assert floored.rep_ms == task.timing.rep_ms  # how long it aims for: unchanged
    plenty = dataclasses.replace(task.timing, min_reps=100)
    assert with_sample_floor(plenty) is plenty
    # and at the floor, a complete separation of a quarter from the rest passes the test
    samples = [2.0] * (MIN_SAMPLES // 4) + [1.0] * (MIN_SAMPLES - MIN_SAMPLES // 4)
    flags = [True] * (MIN_SAMPLES // 4) + [False] * (MIN_SAMPLES - MIN_SAMPLES // 4)
    check = compare_groups(samples, flags)
    assert check is not None and check.z > 5.0 and check.kept_work()
