"""Inputs are read-only: the judge keeps a copy of every input set the measured calls start
from and names any input that no longer matches it (the reference is built from the buffers
after timing, so a rewrite would otherwise be judged against itself)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kernelseek_tui.evaluate.buffers import allocate, fill_random
from kernelseek_tui.evaluate.worker import changed_inputs, snapshot_inputs
from kernelseek_tui.task import load_task

TASK = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")
FIELDS = {"batch": 1, "seqlen_q": 8, "seqlen_k": 8, "nheads": 2, "nheads_kv": 2, "headdim": 64}


def _sets(count: int):
    rng = np.random.default_rng(0)
    sets = []
    for _ in range(count):
        tensors = {s.name: allocate(np, s, s.dims(FIELDS)) for s in TASK.tensors}
        for spec in TASK.inputs:
            fill_random(np, tensors[spec.name], rng)
        sets.append(tensors)
    return sets


def test_untouched_inputs_are_kept() -> None:
    sets = _sets(2)
    snapshots = [snapshot_inputs(TASK, tensors) for tensors in sets]
    for tensors in sets:  # outputs may change freely
        tensors["out"].body[...] = 0
    assert changed_inputs(np, sets, snapshots) == []


def test_a_rewritten_input_is_named_with_its_set() -> None:
    sets = _sets(3)
    snapshots = [snapshot_inputs(TASK, tensors) for tensors in sets]
    sets[1]["v"].body[...] = 0  # zeroed values: nothing left to compute
    sets[2]["q"].body[0, 0, 0, 0] += 1
    assert changed_inputs(np, sets, snapshots) == [(1, "v"), (2, "q")]


def test_the_snapshot_is_a_copy_not_a_view() -> None:
    (tensors,) = _sets(1)
    snapshot = snapshot_inputs(TASK, tensors)
    tensors["k"].body[...] = 0
    assert not np.array_equal(snapshot["k"], tensors["k"].body)
