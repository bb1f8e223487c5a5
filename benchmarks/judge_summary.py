"""One judge result (`kernelseek eval --json`), in a few lines: verdict, counts, the failures,
the largest `out` error as a fraction of its tolerance, (isolated) how long the gates held
the GPU per sample, and the range of the kept-work ratio (samples after every input changed
over the others, evaluate/kept_work.py). For the GPU-box scripts.

    python3 benchmarks/judge_summary.py eval.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    try:
        result = json.loads(Path(sys.argv[1]).read_text())
    except (OSError, ValueError) as error:
        print(f"no judge result: {error}")
        return 1
    summary = result["summary"]
    print(
        result["verdict"],
        f"{summary['passed']}/{summary['total']}",
        result["reasons"][:5],
        "vs peers",
        summary.get("vs_peers"),
    )
    worst = 0.0
    for scenario in result["scenarios"]:
        if scenario["max_error"] is not None and scenario["tolerance"]:
            worst = max(worst, scenario["max_error"] / scenario["tolerance"])
        if scenario["passed"] is not True:
            print("  FAIL", scenario["name"], scenario["fields"], scenario["reasons"][:3])
    print(f"max out error / tolerance: {worst:.3f}")
    holds = sorted(s["gate_hold_us"] for s in result["scenarios"] if s.get("gate_hold_us"))
    if holds:
        # How long each timed sample's gate held the GPU before its release (isolated runs).
        print(
            f"gate holds per sample, us (median of each timed scenario): {holds[0]:.0f}-"
            f"{holds[-1]:.0f}, median {holds[len(holds) // 2]:.0f}"
        )
    ratios = sorted(
        s["every_input_ratio"] for s in result["scenarios"] if s.get("every_input_ratio")
    )
    if ratios:
        print(
            f"every input changed / only the listed (median of each): {ratios[0]:.3f}-"
            f"{ratios[-1]:.3f} over {len(ratios)} timed scenarios"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
