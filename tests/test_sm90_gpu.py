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


def test_sm90_with_the_dynamic_scheduler_passes_all_182(task, tmp_path) -> None:
    """SM90_DYNAMIC_CAUSAL (off by default): its causal kernels take their tiles from a counter.
    Before 2026-12-05 they hung (setmaxnreg) and then left the rows that see no key unwritten
    (causal, seqlen_q > seqlen_k); the grid has such scenarios."""
    source = tmp_path / "sm90_dynamic.cu"
    source.write_text("#define SM90_DYNAMIC_CAUSAL 1\n" + SM90.read_text())
    result = evaluate(task, source, sets=["correctness"], random_count=0, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 182


def test_sm90_with_the_next_tiles_first_s_in_the_last_turn_passes_all_182(task, tmp_path) -> None:
    """SM90_CROSS_TILE (off by default, built 2026-12-05 on the CPU): a tile's last P V and the
    next tile's first S in one turn, the epilogue after it. The grid has the cases its choice
    turns on: causal tiles whose consumers skip key tiles, seqlen_q > seqlen_k (rows that see
    no key), ragged last tiles, one work tile per CTA and many."""
    source = tmp_path / "sm90_cross.cu"
    source.write_text("#define SM90_CROSS_TILE 1\n" + SM90.read_text())
    result = evaluate(task, source, sets=["correctness"], random_count=12, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 194
