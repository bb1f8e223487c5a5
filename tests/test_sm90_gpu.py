"""The Hopper kernel (kernels/flash_fwd/sm90.cu) on the GPU: the whole correctness grid and a
batch of fresh random shapes, judged by the evaluator exactly as a session would judge it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"
SM90 = TASK_DIR / "sm90.cu"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def test_sm90_passes_all_182(task) -> None:
    result = evaluate(task, SM90, sets=["correctness"], random_count=0, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 182


def test_sm90_passes_fresh_random_shapes(task) -> None:
    result = evaluate(task, SM90, sets=[], random_count=12, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 12
