"""pair_with through evaluate(): the request names the best's built library, the summary carries
the paired figure from the scenarios' ratios, results round-trip, and nothing changes without."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kernelseek_tui.evaluate import api
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from tests.test_evaluate_cpu import (
    PREAMBLE,
    TASK_DIR,
    _scripted_worker,
    _source,
    needs_nvcc,
    private_cache,  # noqa: F401 (an autouse fixture: the build cache stays in tmp)
    task,  # noqa: F401 (the fixture)
)

# A stand-in worker (tests/test_start_in_turn.py uses it too): writes its request's "paired",
# "paired_as", "baseline", "baseline_key" and "start_in_turn" entries aside, then passes every
# scenario at 2.0 ms, with round ratios best_ms / candidate_ms of 1.04 and 1.06 (a paired time
# of 2.1 ms) on timed ones when paired, a starting kernel's time of 4.0 ms on timed ones when
# the request names one, and of 2.2 ms timed in turn when it names one for that.
WORKER = (
    PREAMBLE
    + """
with open(os.environ["KS_TEST_REQUEST_LOG"], "w") as log:
    kept = ("paired", "paired_as", "baseline", "baseline_key", "start_in_turn")
    json.dump({k: req.get(k) for k in kept}, log)
for i, s in enumerate(req["scenarios"]):
    emit({"type": "progress", "index": i, "total": 1, "scenario": s["name"], "phase": "start"})
    result = {"name": s["name"], "set": s["set"], "fields": s["fields"], "passed": True,
              "reasons": [], "ms": 2.0}
    if s["timed"] and req.get("paired"):
        result["paired_ms"] = 2.1
        result["paired_ratios"] = [1.04, 1.06] * 4
    if s["timed"] and req.get("start_in_turn"):
        result["start_ms"] = 2.2
    baseline_ms = 4.0 if s["timed"] and req.get("baseline") else None
    emit({"type": "scenario", "result": result, "baseline_ms": baseline_ms})
emit({"type": "done"})
"""
)


@needs_nvcc
def test_pair_with_builds_the_best_and_the_summary_carries_the_paired_figure(
    task,  # noqa: F811
    monkeypatch,
    tmp_path: Path,
) -> None:
    _scripted_worker(monkeypatch, tmp_path, WORKER)
    log = tmp_path / "request.json"
    monkeypatch.setenv("KS_TEST_REQUEST_LOG", str(log))
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// a changed candidate\n")
    best = tmp_path / "best.cu"
    best.write_text((TASK_DIR / "baseline.cu").read_text() + "\n// the best so far\n")

    paired = api.evaluate(task, source, sets=["quick"], pair_with=api.PairedKernel(best))
    library = json.loads(log.read_text())["paired"]
    assert library and Path(library).is_file()
    assert paired.verdict == "pass", paired.reasons
    # per scenario: mean log of (1.04, 1.06) x4; identical scenarios, so that is the geomean
    expected = math.exp((math.log(1.04) + math.log(1.06)) / 2)
    assert paired.summary.paired_speedup == pytest.approx(expected)
    assert 0 < paired.summary.paired_spread < 0.01  # type: ignore[operator]
    assert paired.scenarios[0].paired_ms == 2.1

    unpaired = api.evaluate(task, source, sets=["quick"])
    assert json.loads(log.read_text())["paired"] is None
    assert unpaired.summary.paired_speedup is None and unpaired.summary.paired_spread is None
    assert unpaired.summary.geomean_speedup == paired.summary.geomean_speedup


def test_paired_figures_round_trip_and_old_results_stay_readable() -> None:
    scenario = ScenarioResult(
        name="s", set="bench", fields={"s": 1}, ms=1.0, paired_ms=1.1, paired_ratios=[1.1, 1.09]
    )
    result = EvalResult(
        eval_id="e",
        verdict="pass",
        scenarios=[scenario],
        summary=EvalSummary(paired_speedup=1.095, paired_spread=0.004),
    )
    again = EvalResult.from_json(result.to_json())
    assert again == result
    old = result.to_dict()
    for key in ("paired_speedup", "paired_spread"):
        del old["summary"][key]
    for key in ("paired_ms", "paired_ratios"):
        del old["scenarios"][0][key]
    read = EvalResult.from_dict(old)
    assert read.summary.paired_speedup is None and read.scenarios[0].paired_ratios == []


def test_the_summary_prints_the_paired_figure_only_where_there_is_one() -> None:
    from kernelseek_tui.evaluate.display import format_summary

    paired = EvalResult(
        eval_id="e", verdict="pass", summary=EvalSummary(paired_speedup=1.095, paired_spread=0.004)
    )
    assert "1.095x +- 0.4% (95%)" in format_summary(paired)
    assert "timed beside it" not in format_summary(EvalResult(eval_id="e", verdict="pass"))


def test_eval_pair_with_a_missing_file_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "kernelseek_tui", "eval", "kernels/flash_fwd"]
    result = subprocess.run(
        [*command, "--pair-with", str(tmp_path / "nope.cu")],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--pair-with: no such file" in result.stderr and "Traceback" not in result.stderr


def _finished(handovers_us: dict[str, float], uncertainty_us: float | None) -> EvalSummary:
    """A two-scenario result (a 9 us and a 1 ms one, both 10% faster than the starting kernel
    and paired with a best 10% slower) finished as evaluate() finishes it."""
    scenarios = [
        ScenarioResult(
            name=f"s{ms}",
            set="quick",
            fields={},
            passed=True,
            ms=ms,
            baseline_ms=1.1 * ms,
            speedup=1.1,
            spread=0.002,
            paired_ms=1.1 * ms,
            paired_ratios=[1.099, 1.101] * 10,
        )
        for ms in (0.009, 1.0)
    ]
    result = EvalResult(eval_id="e", verdict="error", scenarios=scenarios)
    result.handovers_us = handovers_us
    result.handover_uncertainty_us = uncertainty_us
    return api._finish(result, 0.0).summary


def test_hand_overs_taken_out_widen_the_noise_and_the_paired_spread() -> None:
    in_process = _finished({}, None)
    # an uncertainty recorded, but no hand-over taken out (the batched method): nothing changes
    assert _finished({}, 3.0) == in_process
    isolated = _finished({"the candidate": 6.0, "the best kernel": 11.0}, 3.0)
    assert in_process.paired_handover is None and isolated.paired_handover is not None
    assert isolated.paired_handover > 0.005
    assert isolated.paired_spread > in_process.paired_spread + isolated.paired_handover * 0.99  # type: ignore[operator]
    assert isolated.paired_speedup == pytest.approx(1.1, rel=1e-3)
    # the 9 us scenario's hand-overs: 3 us over 9 and over 9.9 us, in the unpaired noise too
    assert isolated.noise > in_process.noise + 0.3  # type: ignore[operator]
    assert isolated.geomean_speedup == in_process.geomean_speedup


def test_the_summary_prints_the_speedups_noise_with_it() -> None:
    from kernelseek_tui.evaluate.display import format_summary

    noisy = EvalResult(
        eval_id="e", verdict="pass", summary=EvalSummary(geomean_speedup=1.062, noise=0.09)
    )
    assert "speedup vs the starting kernel (geomean): 1.062x +- 9.0% noise" in format_summary(noisy)
    quiet = EvalResult(eval_id="e", verdict="pass", summary=EvalSummary(geomean_speedup=1.062))
    text = format_summary(quiet)
    assert "speedup vs the starting kernel (geomean): 1.062x" in text and "noise" not in text
