"""Summarise one Nsight Compute profile of a kernel: how busy the SMs were and where warps wait.

    python3 scripts/ncu_stalls.py PROFILE.txt PROFILE_sass.csv

PROFILE.txt is `ncu --import X.ncu-rep --page details`; the CSV is `--page source --csv
--print-source sass` of the same report (scripts/gpu_ncu.sh writes both). Prints the SM-busy
counters (the mean SM's active cycles and the busiest's over the mean: a spread near 1 means the
tiles were dealt evenly), then the stall reasons over all samples and the instructions that
hold the most samples, at their offset from the kernel's first instruction (compare with
`cuobjdump --dump-sass` of the same build).
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

COUNTERS = (
    "gpu__time_duration.sum",
    "launch__grid_size",
    "sm__cycles_active.avg",
    "sm__cycles_active.max",
    "sm__cycles_active.min",
    "sm__warps_active.avg.per_cycle_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
)


def counters(details: str) -> dict[str, float]:
    """The COUNTERS from a details page (units dropped, thousands separators removed)."""
    found: dict[str, float] = {}
    for line in details.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in COUNTERS:
            try:
                found[parts[0]] = float(parts[-1].replace(",", ""))
            except ValueError:
                continue
    return found


def stalls(rows: list[list[str]], top: int = 8) -> tuple[float, Counter[str], list[tuple]]:
    """All samples, samples by stall reason, and the ``top`` instructions by samples."""
    header, data = rows[1], rows[2:]
    address = header.index("Address")
    source = header.index("Source")
    samples = header.index("Warp Stall Sampling (All Samples)")
    reasons = [
        (i, name[len("stall_") :])
        for i, name in enumerate(header)
        if name.startswith("stall_") and "Not Issued" not in name
    ]
    total = 0.0
    by_reason: Counter[str] = Counter()
    per_instruction = []
    base = None
    for row in data:
        if len(row) < len(header) or not re.fullmatch(r"0x[0-9a-fA-F]+", row[address]):
            continue
        base = int(row[address], 16) if base is None else base
        count = float(row[samples] or 0)
        total += count
        for i, name in reasons:
            by_reason[name] += float(row[i] or 0)
        per_instruction.append((count, int(row[address], 16) - base, row[source].strip()))
    per_instruction.sort(reverse=True)
    return total, by_reason, per_instruction[:top]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    found = counters(Path(argv[1]).read_text(errors="replace"))
    for name in COUNTERS:
        if name in found:
            print(f"  {name} {found[name]:,.2f}")
    if {"sm__cycles_active.avg", "sm__cycles_active.max"} <= found.keys():
        mean = found["sm__cycles_active.avg"]
        print(f"  busiest SM / mean SM: {found['sm__cycles_active.max'] / mean:.3f}")
    with open(argv[2], newline="") as handle:
        rows = list(csv.reader(handle))
    if len(rows) < 3:
        print("  no per-instruction samples in the CSV")
        return 0
    total, by_reason, top = stalls(rows)
    if not total:
        print("  no stall samples")
        return 0
    reasons = ", ".join(f"{name} {count / total:.0%}" for name, count in by_reason.most_common(8))
    print(f"  {total:.0f} samples: {reasons}")
    for count, offset, text in top:
        print(f"   {count / total:5.1%} +0x{offset:x} {text[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
