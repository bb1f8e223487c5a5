"""Parallel evaluation benchmark, run by hand on a GPU box (not in CI).

Evaluates the same knob points twice, in one run: one at a time on the first GPU, then through
an EvalPool over every visible GPU. Prints wall time per point for each, and each result's GPU,
so that the drop from one GPU to several is measured, not assumed.

    python3 benchmarks/pool_bench.py [--task kernels/flash_fwd] [--set quick] [--points 4]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

from kernelseek_tui.evaluate.pool import EvalPool, visible_devices
from kernelseek_tui.task import load_task


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=Path, default=Path("kernels/flash_fwd"))
    parser.add_argument("--set", default="quick")
    parser.add_argument("--points", type=int, default=4)
    args = parser.parse_args()
    task = load_task(args.task)
    grid = [
        dict(zip([k.name for k in task.knobs], values, strict=True))
        for values in itertools.product(*(k.values for k in task.knobs))
    ]
    points = grid[: args.points]
    devices = visible_devices()
    print(f"visible GPUs: {devices}; points: {points}")
    jobs = [(task, task.source, {"sets": [args.set], "knobs": p, "compare": False}) for p in points]

    began = time.monotonic()
    with EvalPool(devices[:1]) as single:
        one = single.map(jobs)
    one_gpu = time.monotonic() - began
    began = time.monotonic()
    with EvalPool(devices) as pool:
        many = pool.map(jobs)
    all_gpus = time.monotonic() - began

    print(f"one GPU:   {one_gpu:.1f} s, {one_gpu / len(jobs):.1f} s per point")
    print(
        f"{len(devices)} GPU(s): {all_gpus:.1f} s, {all_gpus / len(jobs):.1f} s per point "
        f"({one_gpu / all_gpus:.2f}x)"
    )
    for point, a, b in zip(points, one, many, strict=True):
        print(
            f"{point}: one-GPU {a.verdict} {a.summary.geomean_tflops or 0:.1f} TFLOP/s on GPU "
            f"{a.device.get('index')}; pool {b.verdict} {b.summary.geomean_tflops or 0:.1f} "
            f"TFLOP/s on GPU {b.device.get('index')}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
