"""Paired timing on the GPU: the candidate timed sample by sample against another kernel in one
run (api.evaluate's pair_with). Written 2026-12-03 with the pairing, before it had run on a
GPU; passed there since (H100, 2026-12-06: 04:17, 13:53 and 19:11 UTC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import PairedKernel, evaluate
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def test_the_hopper_kernel_paired_with_the_starting_kernel_is_many_times_faster(task) -> None:
    result = evaluate(
        task,
        TASK_DIR / "sm90.cu",
        sets=["quick"],
        random_count=0,
        compare=False,
        pair_with=PairedKernel(TASK_DIR / "baseline.cu"),
    )
    assert result.verdict == "pass", result.reasons
    summary = result.summary
    assert summary.paired_speedup is not None and summary.paired_spread is not None
    # The starting kernel runs at about 0.05x FA3, sm90 at about 1x (docs/BENCHMARKS.md): a
    # loose floor.
    assert summary.paired_speedup > 3.0, summary.paired_speedup
    timed = [s for s in result.scenarios if s.ms is not None]
    assert timed and all(s.paired_ms is not None and s.paired_ms > s.ms for s in timed)


def test_a_kernel_paired_with_itself_is_within_its_spread(task) -> None:
    sm90 = TASK_DIR / "sm90.cu"
    result = evaluate(
        task, sm90, sets=["quick"], random_count=0, compare=False, pair_with=PairedKernel(sm90)
    )
    assert result.verdict == "pass", result.reasons
    summary = result.summary
    assert summary.paired_speedup is not None and summary.paired_spread is not None
    assert abs(summary.paired_speedup - 1.0) <= max(summary.paired_spread, 0.02), summary
