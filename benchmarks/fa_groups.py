"""Versions of a kernel side by side, by head dim and causality, from one fa_bench run.

    python3 benchmarks/fa_groups.py fa_bench.json [--against v21] [--method turn|do_bench]

Reads the JSON `benchmarks/fa_bench.py --json` wrote and prints, for each candidate in it, the
geomean of its x FA3 in each (head dim, causal) group of the shapes, over all shapes, and its
worst shape; with `--against NAME`, also each candidate's geomean ratio to NAME per group (the
gain of a variant over the version it changes, read from the same run). `turn` (the default)
reads the `NAME@turn/fa3` columns of `--in-turn` (the method the judge agrees with); `do_bench`
reads each entry's own do_bench column over FA3's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

PEERS = ("fa3", "cudnn")
NOT_KERNELS = ("max_abs_diff_vs_fa3",)  # fa_bench's other float columns


# Not fa_bench's geomean: importing benchmarks.fa_bench needs the repository on PYTHONPATH
# (scripts/gpu_env.sh sets it on the GPU box), and this file is read where the JSON comes back.
def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def candidates(rows: list[dict[str, Any]], method: str) -> list[str]:
    """The candidates' names, in the JSON's column order."""
    if method == "turn":
        return [key[: -len("@turn/fa3")] for key in rows[0] if key.endswith("@turn/fa3")]
    return [
        key
        for key, value in rows[0].items()
        if isinstance(value, float)
        and "@" not in key
        and not key.endswith("_graph")
        and key not in PEERS + NOT_KERNELS
    ]


def ratio(row: dict[str, Any], name: str, method: str) -> float:
    return row[f"{name}@turn/fa3"] if method == "turn" else row[name] / row["fa3"]


def groups(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    keyed: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for row in rows:
        keyed.setdefault((row["headdim"], row["causal"]), []).append(row)
    return [(f"d{d} {'causal' if c else 'non-causal'}", keyed[(d, c)]) for d, c in sorted(keyed)]


def report(data: dict[str, Any], method: str, against: str | None) -> str:
    rows = [r for r in data["rows"] if r.get("fa3")]
    names = candidates(rows, method)
    if not names:
        raise SystemExit(f"no candidate columns for the {method!r} method in this JSON")
    if against is not None and against not in names:
        raise SystemExit(f"--against {against!r} is not a candidate here ({', '.join(names)})")
    lines = [f"x FA3 ({method}), geomean by group"]
    lines.append("group".ljust(18) + "".join(n.rjust(10) for n in names))
    for label, members in [*groups(rows), ("all", rows)]:
        cells = [f"{geomean([ratio(r, n, method) for r in members]):10.3f}" for n in names]
        lines.append(f"{label:18s}" + "".join(cells))
    for name in names:
        worst = min(rows, key=lambda r: ratio(r, name, method))
        lines.append(
            f"{name}: worst d{worst['headdim']} causal={worst['causal']} s{worst['seqlen_q']} "
            f"at {ratio(worst, name, method):.3f}x FA3"
        )
    if against is not None:
        others = [n for n in names if n != against]
        lines.append(f"against {against}, geomean of the per-shape ratios")
        lines.append("group".ljust(18) + "".join(n.rjust(10) for n in others))
        for label, members in [*groups(rows), ("all", rows)]:
            gains = [
                geomean([ratio(r, n, method) / ratio(r, against, method) for r in members])
                for n in others
            ]
            cells = [f"{gain:10.3f}" for gain in gains]
            lines.append(f"{label:18s}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json", type=Path)
    parser.add_argument("--against")
    parser.add_argument("--method", choices=("turn", "do_bench"), default="turn")
    args = parser.parse_args(argv)
    print(report(json.loads(args.json.read_text()), args.method, args.against))
    return 0


if __name__ == "__main__":
    sys.exit(main())
