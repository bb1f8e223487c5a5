"""The `out` tolerance's margins, per shape: how close honest kernels come to it, how far the
reduced-precision ones are over it, under the rule before and after the row's own units.

    python benchmarks/tolerance_margins.py [--headdims 64 128] [--jitters 0.5 1.5] [--quick]

Runs the emulated kernels of benchmarks/flash_emulation.py on the CPU (numpy) against the
judge's reference, judges each with `check_output` under the task's `out` rule ("after") and
under the rule it replaced ("before": FA3's shift, twice the bf16 rounding at +0.3, plus one
unit at the row's largest value), and prints the worst row's error / tolerance: for the honest
kernels the largest over them (the judge must keep it under 1, with room), for each cheat its
own (the judge must see it over 1). Shapes: rows that see N keys (non-causal, N = seqlen_k: a
causal row that sees N keys is judged the same), and causal squares with all their rows; head
dims and softmax-scale factors (the task's jitter, 0.5..1.5 of 1/sqrt(headdim)) as given.
The full grid takes about four minutes on one core; --quick keeps d128, jitters 0.5 and 1.5.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.flash_emulation import BORDERLINE, CHEATS, HONEST, attend, inputs, reference
from kernelseek_tui.evaluate.check import check_output
from kernelseek_tui.evaluate.dtypes import from_float32
from kernelseek_tui.task import Tolerance, load_task

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"
# Keys per row, non-causal; query rows per shape (fewer for the long rows: numpy's time).
ROW_KEYS = ((1, 256), (128, 256), (512, 256), (2048, 256), (4096, 128), (8192, 128), (16384, 128))
CAUSAL_SQUARES = (512, 2048)


@dataclass(frozen=True, slots=True)
class Shape:
    headdim: int
    seqlen_q: int
    seqlen_k: int
    causal: int

    @property
    def label(self) -> str:
        if self.causal:
            return f"d{self.headdim} causal {self.seqlen_q}x{self.seqlen_k}"
        return f"d{self.headdim} rows of {self.seqlen_k} keys"


def rule_before(after: Tolerance) -> Tolerance:
    """The task's `out` rule before the row's own units: FA3's shift plus one unit."""
    return replace(after, atol_shift=0.3, atol_shift_factor=2.0, row_ulps=1.0)


def worst_row(stored: np.ndarray, ref: dict[str, np.ndarray], rule: Tolerance) -> float:
    """The worst row's error / tolerance of one stored `out` under ``rule``."""
    check = check_output(np, "out", "bfloat16", stored, ref["out"], ref["out:lowp"], rule)
    if check.max_error is None or not check.tolerance:
        return float("inf") if check.max_error else 0.0
    return check.max_error / check.tolerance


def margins(
    shape: Shape, jitter: float, rules: tuple[Tolerance, ...]
) -> tuple[float, dict[str, list[float]]]:
    """The median of the rows' largest |out| and, per kernel, its worst row under each rule."""
    seed = shape.headdim * 100_003 + shape.seqlen_k * 7 + int(jitter * 10)
    q, k, v = inputs(shape.seqlen_q, shape.seqlen_k, shape.headdim, seed)
    scale = jitter / np.sqrt(shape.headdim)
    ref = reference(q, k, v, scale, shape.causal)
    ratios = {}
    for kernel in (*HONEST, *CHEATS, *BORDERLINE):
        stored = from_float32(np, attend(kernel, q, k, v, scale, shape.causal), "bfloat16")
        ratios[kernel.name] = [worst_row(stored, ref, rule) for rule in rules]
    return float(np.median(np.abs(ref["out"]).max(axis=-1))), ratios


def shapes(headdims: list[int]) -> list[Shape]:
    grid = [Shape(d, rows, keys, 0) for d in headdims for keys, rows in ROW_KEYS]
    grid += [Shape(d, n, n, 1) for d in headdims for n in CAUSAL_SQUARES]
    return grid


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--headdims", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--jitters", type=float, nargs="+", default=[0.5, 1.0, 1.5])
    parser.add_argument("--quick", action="store_true", help="d128, jitters 0.5 and 1.5")
    args = parser.parse_args()
    headdims, jitters = ([128], [0.5, 1.5]) if args.quick else (args.headdims, args.jitters)
    after = load_task(TASK_DIR).tolerances["out"]
    before = rule_before(after)
    others = (*CHEATS, *BORDERLINE)
    names = [c.name for c in others]
    print(
        "error / tolerance of the worst row (before -> after); honest: the largest of "
        f"{len(HONEST)} variants; cheats must be > 1; the last, borderline, is only reported"
    )
    print("shape | jitter | median row max |out| | honest | " + " | ".join(names))
    summary: dict[str, list[list[float]]] = {}
    for shape in shapes(headdims):
        for jitter in jitters:
            started = time.perf_counter()
            magnitude, ratios = margins(shape, jitter, (before, after))
            honest = [max(ratios[h.name][i] for h in HONEST) for i in range(2)]
            cells = [honest, *[ratios[c.name] for c in others]]
            # Over the jitters: the honest kernels' largest, each other's smallest.
            kept = summary.setdefault(shape.label, cells)
            summary[shape.label] = [
                [pick(a, b) for a, b in zip(old, new, strict=True)]
                for pick, old, new in zip([max] + [min] * len(others), kept, cells, strict=True)
            ]
            text = " | ".join(f"{b:.2f} -> {a:.2f}" for b, a in cells)
            print(
                f"{shape.label} | {jitter:g} | {magnitude:.3g} | {text} "
                f"({time.perf_counter() - started:.1f} s)",
                flush=True,
            )
    print(
        "\nper shape, over the jitters: honest the largest, each other its smallest "
        "(before -> after)"
    )
    print("shape | honest | " + " | ".join(names))
    for label, cells in summary.items():
        print(f"{label} | " + " | ".join(f"{b:.2f} -> {a:.2f}" for b, a in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
