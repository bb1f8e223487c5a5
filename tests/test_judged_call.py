"""One measured call, drawn at random, judged on its own outputs, with the inputs perturbed
before every measured call: the choice, the replay of the perturbations, and a whole timed run
on the stand-in GPU with numpy inputs and a toy candidate that skips calls."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kernelseek_tui.evaluate import timing as timing_module
from kernelseek_tui.evaluate.dtypes import from_float32, to_float32
from kernelseek_tui.evaluate.judged_call import (
    MeasuredCallWatch,
    Perturbation,
    choose_judged_call,
    replay,
)
from kernelseek_tui.evaluate.perturb import flip_signs_host
from kernelseek_tui.evaluate.timing import MeasuredCall, time_calls
from kernelseek_tui.task import Timing
from tests.test_timing_method import FakeGpu


@pytest.fixture(autouse=True)
def fresh_flush_buffers(monkeypatch) -> None:
    monkeypatch.setattr(timing_module, "_flush_buffers", {})
    monkeypatch.setattr(timing_module, "_hold_kernels", {})


def test_every_measured_call_can_be_chosen() -> None:
    rng = random.Random(1)
    drawn = {choose_judged_call(7, 1, rng) for _ in range(500)}
    assert drawn == set(range(7))


def test_batched_runs_judge_only_the_last_call_of_a_batch() -> None:
    rng = random.Random(2)
    drawn = {choose_judged_call(12, 4, rng) for _ in range(500)}
    assert drawn == {3, 7, 11}


def test_a_plan_with_no_whole_sample_is_refused() -> None:
    with pytest.raises(ValueError):
        choose_judged_call(3, 4, random.Random(0))
    with pytest.raises(ValueError):
        choose_judged_call(3, 0, random.Random(0))


def test_replay_captures_what_the_judged_call_saw() -> None:
    log = [
        Perturbation(0, 0, 10),
        Perturbation(1, 1, 11),
        Perturbation(2, 0, 12),
        Perturbation(3, 1, 13),
        Perturbation(4, 0, 14),
    ]
    applied: dict[int, list[int]] = {0: [], 1: []}
    captured: list[list[int]] = []

    def capture(set_index: int) -> None:
        captured.append(list(applied[set_index]))

    replay(log, MeasuredCall(2, 0), lambda s, key: applied[s].append(key), capture)
    assert captured == [[10, 12]]  # its own perturbation included, the later one not
    assert applied == {0: [10, 12, 14], 1: [11, 13]}  # and every perturbation applied
    captured.clear()
    replay(log, MeasuredCall(3, 1), lambda s, key: None, lambda s: captured.append([s]))
    assert captured == [[1]]  # the last on its set: captured after the whole log


def test_a_batch_is_perturbed_once_per_set_before_it() -> None:
    perturbed: list[tuple[int, int]] = []
    watch = MeasuredCallWatch(
        2, random.Random(3), lambda s, key: perturbed.append((s, key)), lambda s, keep: {}
    )
    watch.plan(8, 4)
    watch.before_sample([MeasuredCall(4 + i, i % 2) for i in range(4)])
    assert [p.set_index for p in watch.log] == [0, 1] and [p.ordinal for p in watch.log] == [4, 4]
    assert perturbed == [(p.set_index, p.key) for p in watch.log]


class ToyRun:
    """The timed part of run_scenario in miniature, on numpy: three input sets of two bf16
    inputs and a float32 output ``out = 2 x + y``; a candidate that does the work on one call
    in ``every`` (1: every call); the watch perturbing and copying as the worker's does."""

    N_SETS = 3

    def __init__(self, every: int, seed: int, method: str = "flushed") -> None:
        self.every, self.method = every, method
        self.fill = np.random.default_rng(seed)
        self.sets = [self._fresh_set() for _ in range(self.N_SETS)]
        self.pristine: list[dict[str, np.ndarray]] = []
        self.computed: list[bool] = []  # per call of the candidate, in order
        self.contents: list[bytes] = []  # the inputs each call saw
        self.first_measured = -1
        self.copies: list[tuple[int, bool]] = []  # (set, kept) of every copy, in order
        self.watch = MeasuredCallWatch(
            self.N_SETS, random.Random(seed), self._perturb, self._copy_aside
        )

    def _fresh_set(self) -> dict[str, np.ndarray]:
        values = self.fill.standard_normal((2, 256), dtype=np.float32)
        return {
            "x": from_float32(np, values[0], "bfloat16"),
            "y": from_float32(np, values[1], "bfloat16"),
            "out": np.zeros(256, np.float32),
        }

    @staticmethod
    def expected(inputs: dict[str, np.ndarray]) -> np.ndarray:
        return 2 * to_float32(np, inputs["x"], "bfloat16") + to_float32(np, inputs["y"], "bfloat16")

    # The inputs each perturbation flips (a subclass may list fewer; "every" flips both).
    LISTED: tuple[str, ...] = ("x", "y")

    @staticmethod
    def _flip(tensors: dict[str, np.ndarray], names: tuple[str, ...], key: int) -> None:
        flip_signs_host([(tensors[name], "bfloat16") for name in names], key)

    def _perturb(self, set_index: int, key: int) -> None:
        self._flip(self.sets[set_index], self.LISTED, key)

    def _copy_aside(self, set_index: int, keep: bool) -> dict[str, Any]:
        self.copies.append((set_index, keep))
        return {name: array.copy() for name, array in self.sets[set_index].items()}

    def _refill(self) -> None:
        self.first_measured = len(self.computed)
        self.pristine.clear()
        for tensors in self.sets:
            tensors.update({k: v for k, v in self._fresh_set().items() if k != "out"})
            self.pristine.append({name: tensors[name].copy() for name in ("x", "y")})

    def _call(self, gpu: FakeGpu, set_index: int) -> None:
        tensors = self.sets[set_index]
        self.contents.append(tensors["x"].tobytes() + tensors["y"].tobytes())
        compute = len(self.computed) % self.every == 0
        if compute:
            tensors["out"][...] = self.expected(tensors)
        self.computed.append(compute)
        gpu.call(set_index)

    def _timing(self) -> Timing:
        return Timing(method=self.method, warmup_ms=2, rep_ms=6, max_reps=30)

    def run(self) -> None:
        gpu = FakeGpu(kernel_ms=0.2, flush_ms=0.05)
        self.stats = time_calls(
            gpu.cp,
            gpu.stream,
            lambda set_index: self._call(gpu, set_index),
            self.N_SETS,
            self._timing(),
            after_warmup=self._refill,
            hooks=self.watch,
        )

    def replayed(self) -> dict[str, np.ndarray]:
        """The worker's _replay_perturbations on numpy: ``pristine`` becomes what the inputs
        must hold now; returns what the judged call saw."""
        seen: dict[str, np.ndarray] = {}

        def apply(set_index: int, key: int) -> None:
            self._flip(self.pristine[set_index], self.LISTED, key)

        def apply_every(set_index: int, key: int) -> None:
            self._flip(self.pristine[set_index], ("x", "y"), key)

        def capture(set_index: int) -> None:
            seen.update({name: array.copy() for name, array in self.pristine[set_index].items()})

        assert self.watch.judged is not None
        replay(self.watch.log, self.watch.judged, apply, capture, apply_every)
        return seen


@pytest.mark.parametrize("method", ["flushed", "batched"])
def test_an_honest_candidate_passes_and_the_inputs_are_accounted_for(method: str) -> None:
    for seed in range(10):
        run = ToyRun(every=1, seed=seed, method=method)
        run.run()
        seen = run.replayed()
        aside = run.watch.aside
        assert aside is not None
        # the replay reproduces every input bit for bit, and what the judged call saw
        for tensors, expected in zip(run.sets, run.pristine, strict=True):
            assert all(np.array_equal(tensors[n], expected[n]) for n in ("x", "y"))
        assert all(np.array_equal(seen[n], aside[n]) for n in ("x", "y"))
        assert np.array_equal(aside["out"], ToyRun.expected(seen))


@pytest.mark.parametrize("method", ["flushed", "batched"])
def test_every_sample_ends_with_the_same_copy_and_only_the_judged_one_is_kept(
    method: str,
) -> None:
    # Copied after the judged call alone, the copy's gap before the next sample told a kernel
    # timing itself that the judged call was past (judged_call.py).
    for seed in range(5):
        run = ToyRun(every=1, seed=seed, method=method)
        run.run()
        judged = run.watch.judged
        assert judged is not None
        per_sample = 1 if method == "flushed" else run.watch.calls // len(run.copies)
        assert len(run.copies) * per_sample == run.watch.calls >= 4
        assert [keep for _, keep in run.copies].count(True) == 1
        kept = next(i for i, (_, keep) in enumerate(run.copies) if keep)
        assert (kept + 1) * per_sample - 1 == judged.ordinal
        # each copy is of the set its sample ended on
        assert all(
            set_index == ((i + 1) * per_sample - 1) % run.N_SETS
            for i, (set_index, _) in enumerate(run.copies)
        )


def test_no_two_measured_calls_see_the_same_inputs() -> None:
    run = ToyRun(every=1, seed=5)
    run.run()
    measured = run.contents[run.first_measured : run.first_measured + run.watch.calls]
    assert len(measured) == run.watch.calls >= 10
    assert len(set(measured)) == len(measured)


# "batched" judges only a batch's last call, and a batch is a whole number of rotations: a
# candidate working on one call in three on three sets would work on every batch's last call.
@pytest.mark.parametrize(("method", "every", "least"), [("flushed", 3, 15), ("batched", 2, 8)])
def test_a_candidate_that_skips_calls_is_caught_whenever_the_judged_call_was_skipped(
    method: str, every: int, least: int
) -> None:
    caught = 0
    for seed in range(40):
        run = ToyRun(every=every, seed=seed, method=method)
        run.run()
        seen = run.replayed()
        aside = run.watch.aside
        assert aside is not None and run.watch.judged is not None
        skipped = not run.computed[run.first_measured + run.watch.judged.ordinal]
        right = np.array_equal(aside["out"], ToyRun.expected(seen))
        # a skipped call left the outputs of an earlier call, on inputs perturbed since
        assert right != skipped, (seed, run.watch.describe())
        caught += skipped
    # the draw lands on a skipped call (every - 1) / every of the time, give or take
    assert least <= caught <= 40 - least // 2


def test_the_reason_names_the_call_one_based_with_its_set() -> None:
    watch = MeasuredCallWatch(3, random.Random(0), lambda s, k: None, lambda s, keep: {})
    watch.plan(120, 1)
    assert watch.judged is not None
    k = watch.judged.ordinal
    assert watch.describe() == f"measured call {k + 1} of 120 (input set {k % 3})"
    watch.label = "timed after the peers"
    assert watch.describe().endswith(f"of 120 timed after the peers (input set {k % 3})")
