"""benchmarks/judge_summary.py on made-up judge results: the failures named, the gates' holds
summed up where the kernels ran isolated and nothing said of them where not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scenario(name: str, passed: bool, hold: float | None) -> dict:
    return {
        "name": name,
        "fields": {"seqlen_q": 512},
        "passed": passed,
        "reasons": [] if passed else ["a measured call took 0.01x its median"],
        "max_error": 0.001,
        "tolerance": 0.004,
        "gate_hold_us": hold,
        "every_input_ratio": None if hold is None else hold / 100.0,
    }


def summary(tmp_path: Path, scenarios: list[dict]) -> str:
    result = {
        "verdict": "fail" if any(not s["passed"] for s in scenarios) else "pass",
        "summary": {"passed": sum(s["passed"] for s in scenarios), "total": len(scenarios)},
        "reasons": [],
        "scenarios": scenarios,
    }
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(result))
    done = subprocess.run(
        [sys.executable, "benchmarks/judge_summary.py", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_isolated_holds_and_failures_are_printed(tmp_path: Path) -> None:
    out = summary(tmp_path, [scenario("a", True, 70.0), scenario("b", False, 150.0)])
    assert out.startswith("fail 1/2")
    assert "FAIL b" in out and "0.01x its median" in out
    assert "max out error / tolerance: 0.250" in out
    assert "gate holds per sample, us (median of each timed scenario): 70-150, median 150" in out
    assert "every input changed / only the listed (median of each): 0.700-1.500 over 2" in out


def test_in_process_results_say_nothing_of_gates(tmp_path: Path) -> None:
    out = summary(tmp_path, [scenario("a", True, None)])
    assert out.startswith("pass 1/1") and "gate holds" not in out
    assert "every input changed" not in out
