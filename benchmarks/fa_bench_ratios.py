"""Column against column of `benchmarks/fa_bench.py --json` files, shape by shape.

    python3 benchmarks/fa_bench_ratios.py flips.json:sm90@judgeqc flips.json:sm90@loop \
        [--pair paused.json:fa3@turn turn.json:fa3@turn ...]

Each side names a file and a column (TFLOP/s, as fa_bench writes it); the two files may be one.
Prints, per pair, the ratio first/second on every shape both have (above 1: the first side
reads faster), grouped by head dim and causal so a row holds one seqlen sweep, then the geomean,
the range, and how many shapes lie within 3%. Prints what it read; decides nothing.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

KEYS = ("headdim", "causal", "seqlen_q")
WITHIN = 0.03


def read_column(side: str) -> dict[tuple[int, ...], float]:
    """``file.json:column`` -> {(headdim, causal, seqlen_q): TFLOP/s} where the column has one."""
    path, _, column = side.rpartition(":")
    if not path or not column:
        raise SystemExit(f"{side!r}: expected FILE.json:COLUMN")
    rows = json.loads(Path(path).read_text())["rows"]
    figures = {tuple(int(row[k]) for k in KEYS): row.get(column) for row in rows}
    kept = {shape: float(value) for shape, value in figures.items() if value}
    if not kept:
        columns = sorted({name for row in rows for name in row if name not in KEYS})
        raise SystemExit(f"{path}: no figures in column {column!r}; columns: {columns}")
    return kept


def ratios(first: dict, second: dict) -> dict[tuple[int, ...], float]:
    return {shape: first[shape] / second[shape] for shape in first if shape in second}


def summary_lines(label: str, by_shape: dict[tuple[int, ...], float]) -> list[str]:
    if not by_shape:
        return [f"{label}: no shape in both"]
    lines = [label]
    groups: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for (headdim, causal, seqlen), ratio in sorted(by_shape.items()):
        groups.setdefault((headdim, causal), []).append((seqlen, ratio))
    for (headdim, causal), sweep in groups.items():
        cells = " ".join(f"s{seqlen}:{ratio:.3f}" for seqlen, ratio in sweep)
        lines.append(f"  d{headdim} c{causal}  {cells}")
    values = list(by_shape.values())
    geomean = math.exp(sum(math.log(v) for v in values) / len(values))
    within = sum(abs(v - 1.0) <= WITHIN for v in values)
    lines.append(
        f"  geomean {geomean:.3f}, range {min(values):.3f}-{max(values):.3f}, "
        f"within {WITHIN:.0%}: {within}/{len(values)}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="FILE.json:COLUMN")
    parser.add_argument("second", help="FILE.json:COLUMN")
    parser.add_argument("--pair", nargs=2, action="append", default=[], metavar=("FIRST", "SECOND"))
    args = parser.parse_args(argv)
    for first, second in [(args.first, args.second), *args.pair]:
        label = f"{first} / {second}"
        print("\n".join(summary_lines(label, ratios(read_column(first), read_column(second)))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
