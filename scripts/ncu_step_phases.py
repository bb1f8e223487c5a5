#!/usr/bin/env python3
"""Where a consumer's steady step spends its stall samples, phase by phase.

    python3 scripts/ncu_step_phases.py PROFILE_sass.csv START END

PROFILE_sass.csv is ncu's `--page source --csv --print-source sass` (scripts/gpu_ncu.sh writes
it); START and END are the step's loop range as offsets from the kernel's first instruction
(hex, as `scripts/sass_loops.py` prints them for the same build). The step is cut at its
landmarks, in address order: the turn (`BAR.SYNC`), the S wgmmas (`HGMMA` without `tnspB`), the
P V wgmmas (`tnspB`), the hand-over (`BAR.ARV`), the wait for S (`DEPBAR.LE gsb0, 0x1`), the
wait for P V (`DEPBAR.LE gsb0, 0x0`). For each phase: its stall samples (share of the whole
kernel's) and warp instructions executed; then, for the softmax (everything after the wait
for S), the stall reasons and the samples and executions of each opcode, which tell the same
instructions taking longer (dependency waits, contention) from more instructions.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


@dataclass
class Phase:
    samples: float = 0.0
    executed: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)
    samples_by_op: Counter[str] = field(default_factory=Counter)
    executed_by_op: Counter[str] = field(default_factory=Counter)


def opcode(text: str) -> str:
    words = text.split()
    word = words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def next_phase(current: str, text: str) -> str:
    """The phase an instruction belongs to, from the landmark it is or the phase before it."""
    if "BAR.SYNC" in text:
        return "turn"
    if "HGMMA" in text:
        return "P V issue" if "tnspB" in text else "S issue"
    if "BAR.ARV" in text:
        return "hand-over"
    if "DEPBAR.LE gsb0, 0x1" in text:
        return "wait for S"
    if "DEPBAR.LE gsb0, 0x0" in text:
        return "wait for P V"
    follows = {
        "turn": "after the turn",
        "wait for S": "softmax before the P V wait",
        "wait for P V": "after the P V wait",
    }
    return follows.get(current, current)


def read(path: str) -> tuple[list[tuple[int, str, float, float, Counter[str]]], float]:
    """(offset, source, samples, executed, samples by reason) per instruction; all samples."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[1]
    column = {name: i for i, name in enumerate(header)}
    reasons = [
        (i, name[len("stall_") :])
        for i, name in enumerate(header)
        if name.startswith("stall_") and "Not Issued" not in name
    ]
    out = []
    base = None
    total = 0.0
    for row in rows[2:]:
        if len(row) < len(header) or not re.fullmatch(r"0x[0-9a-fA-F]+", row[column["Address"]]):
            continue
        address = int(row[column["Address"]], 16)
        base = address if base is None else base
        samples = float(row[column[SAMPLES]] or 0)
        total += samples
        by_reason = Counter({name: float(row[i] or 0) for i, name in reasons})
        executed = float(row[column[EXECUTED]] or 0)
        out.append((address - base, row[column["Source"]].strip(), samples, executed, by_reason))
    return out, total


def phases(rows: list[tuple[int, str, float, float, Counter[str]]], start: int, end: int):
    found: dict[str, Phase] = {}
    current = "before the turn"
    for offset, text, samples, executed, by_reason in rows:
        if not start <= offset <= end or not text:
            continue
        current = next_phase(current, text)
        phase = found.setdefault(current, Phase())
        phase.samples += samples
        phase.executed += executed
        phase.reasons += by_reason
        phase.samples_by_op[opcode(text)] += samples
        phase.executed_by_op[opcode(text)] += executed
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    rows, total = read(argv[1])
    found = phases(rows, int(argv[2], 16), int(argv[3], 16))
    if not total or not found:
        print("no samples in that range")
        return 1
    step = sum(p.samples for p in found.values())
    print(f"kernel {total:.0f} samples; step {step:.0f} ({step / total:.1%})")
    for name, phase in found.items():
        print(f"  {name:28s} {phase.samples:7.0f} ({phase.samples / total:5.1%})"
              f"  executed {phase.executed:12,.0f}")  # fmt: skip
    softmax = Phase()
    for name in ("wait for S", "softmax before the P V wait", "wait for P V", "after the P V wait"):
        if name in found and name != "wait for S":
            part = found[name]
            softmax.samples += part.samples
            softmax.reasons += part.reasons
            softmax.samples_by_op += part.samples_by_op
            softmax.executed_by_op += part.executed_by_op
    if softmax.samples:
        print(f"after the wait for S: {softmax.samples:.0f} samples")
        reasons = ", ".join(f"{n} {c:.0f}" for n, c in softmax.reasons.most_common(8) if c)
        print(f"  reasons: {reasons}")
        for op, count in softmax.samples_by_op.most_common(10):
            print(f"  {op:8s} samples {count:6.0f}  executed {softmax.executed_by_op[op]:12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
