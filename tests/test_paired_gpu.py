"""Paired timing on the GPU: the candidate timed sample by sample against another kernel in one
run (api.evaluate's pair_with). Written 2026-12-03 with the pairing, before it had run on a
GPU; passed there since (H100, 2026-12-06: 04:17, 13:53 and 19:11 UTC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import PairedKernel, evaluate
from kernelseek_tui.evaluate.paired import is_new_best_paired
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


# A skipper built from sm90.cu: once past its first few hundred calls (the checks before timing,
# the warm-up), every 100th call returns having launched nothing. The judged call is drawn at
# random among the measured ones, so most runs never judge a skipped call.
SKIP_ONE_IN_A_HUNDRED = (
    "    Params p;\n    p.out = static_cast<__nv_bfloat16*>(tensors[3]);",
    "    static unsigned long long ks_calls = 0;\n"
    "    if (++ks_calls > 400 && ks_calls % 100 == 0) return 0;  // nothing launched\n"
    "    Params p;\n    p.out = static_cast<__nv_bfloat16*>(tensors[3]);",
)


def test_a_kernel_skipping_one_measured_call_in_a_hundred_is_no_new_best_over_itself(
    task, tmp_path: Path
) -> None:
    """RELIABILITY's "Skipped calls and the paired figure" on the GPU. Written 2026-12-07 before
    it ran on one; the CPU case is tests/test_paired_speedup.py's ``skipping_run``. Under the
    mean log ratio (before 2026-12-07) a skipper read about 5% faster than its own honest build;
    under the median it reads within its spread. It also prints each scenario's ``fastest``
    beside the honest build's: the data a rule naming skippers would rest on (NOTES, 05:20)."""
    sm90 = TASK_DIR / "sm90.cu"
    text = sm90.read_text()
    old, new = SKIP_ONE_IN_A_HUNDRED
    assert text.count(old) == 1
    skipper = tmp_path / "sm90_skipper.cu"
    skipper.write_text(text.replace(old, new))
    result = evaluate(
        task, skipper, sets=["quick"], random_count=0, compare=False, pair_with=PairedKernel(sm90)
    )
    for scenario in result.scenarios:
        print(f"skipper {scenario.name}: ms {scenario.ms} fastest {scenario.fastest}")
    if result.verdict != "pass":
        # The judged call fell on a skip: caught as wrong, the other right answer.
        reasons = [*result.reasons, *(r for s in result.scenarios for r in s.reasons)]
        assert any("measured call" in r for r in reasons), reasons
        return
    summary = result.summary
    assert summary.paired_speedup is not None and summary.paired_spread is not None
    print(f"skipper paired {summary.paired_speedup:.4f} +- {summary.paired_spread:.4f}")
    assert not is_new_best_paired(summary.paired_speedup, summary.paired_spread), summary
