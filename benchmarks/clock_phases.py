"""The GPU's clocks and power in each phase of a device call, from nvidia-smi's samples.

Why: on an H100 (2026-12-07) every kernel read 4-5% faster under the judge, once its gate held
the whole GPU through each call's hand-over, than fa_bench read the same kernels (the x FA3
ratio unchanged). One suspect is the clock: a GPU that idles between calls can hold a higher
clock than one timed back to back, as do_bench times. This reads the samples of

    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
        --format=csv,noheader,nounits -lms 20 > clocks.csv

and a file of phase marks, one line each, ``<name> <start|end> <unix seconds>`` (what
scripts/gpu_isolation_check.sh writes with CLOCKS=1), and prints per phase the number of
samples and the median (p10-p90) of the SM clock, the power and the temperature. It prints what
it read; it decides nothing.

    python3 benchmarks/clock_phases.py OUT/clocks.csv OUT/phases.txt
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # unix seconds
    sm_mhz: float
    mem_mhz: float
    power_w: float
    temperature_c: float


def read_samples(text: str) -> list[Sample]:
    """nvidia-smi's lines (``2026/12/07 07:32:07.123, 1980, 2619, 512.31, 45``), times taken
    as UTC; lines it could not read (a header, "[N/A]") are left out."""
    samples = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 5:
            continue
        try:
            stamp = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC)
            values = [float(part) for part in parts[1:]]
        except ValueError:
            continue
        samples.append(Sample(stamp.timestamp(), *values))
    return samples


def read_phases(text: str) -> list[tuple[str, float, float]]:
    """(name, start, end) for each phase with both marks, in the order they started."""
    starts: dict[str, float] = {}
    phases = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("start", "end"):
            continue
        name, mark, at = parts[0], parts[1], float(parts[2])
        if mark == "start":
            starts[name] = at
        elif name in starts:
            phases.append((name, starts.pop(name), at))
    return phases


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    low = ordered[int(0.1 * (len(ordered) - 1))]
    high = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{statistics.median(ordered):.0f} ({low:.0f}-{high:.0f})"


def summary(samples: list[Sample], phases: list[tuple[str, float, float]]) -> list[str]:
    """One line per phase: its samples' SM clock, power and temperature."""
    lines = ["phase | seconds | samples | SM MHz median (p10-p90) | power W | temperature C"]
    for name, start, end in phases:
        inside = [s for s in samples if start <= s.at < end]
        if not inside:
            lines.append(f"{name} | {end - start:.1f} | 0 | - | - | -")
            continue
        lines.append(
            f"{name} | {end - start:.1f} | {len(inside)} | "
            f"{_spread([s.sm_mhz for s in inside])} | {_spread([s.power_w for s in inside])} | "
            f"{_spread([s.temperature_c for s in inside])}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clocks", type=Path, help="nvidia-smi's samples (csv, no header)")
    parser.add_argument("phases", type=Path, help="lines of '<name> <start|end> <unix seconds>'")
    args = parser.parse_args(argv)
    samples = read_samples(args.clocks.read_text())
    phases = read_phases(args.phases.read_text())
    if not samples or not phases:
        print(f"read {len(samples)} samples and {len(phases)} phases: nothing to compare")
        return 1
    print("\n".join(summary(samples, phases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
