"""One judge result (`kernelseek eval --json`), in a few lines: verdict, counts, the failures,
and the largest `out` error as a fraction of its tolerance. For the GPU-box scripts.

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
