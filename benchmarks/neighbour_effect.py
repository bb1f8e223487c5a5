"""Does a kernel's measured time depend on what runs next to it? FA3 and a candidate on a few
bench shapes, timed alone (do_bench; the judge's time_calls) and in turn with different
neighbours (the judge's time_interleaved: FA3 with a copy of itself, with the candidate, with the
candidate and cuDNN; runs of 1, 4 or 16 samples of one before the next), while nvidia-smi
samples the SM clock and the power draw every 20 ms.

Run by hand on the GPU box (not in CI), after 2026-12-04's finding that FA3 read 6-13% faster
in turn with the candidate than alone at d128 causal 4k-16k, where the candidate read the same:

    python3 benchmarks/neighbour_effect.py --source kernels/flash_fwd/sm90.cu [--only d128,c1]
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.fa_bench import (
    Candidate,
    bench_shapes,
    load_flops,
    peers,
    time_by_judge,
    time_in_turn,
)
from kernelseek_tui.evaluate.build import build
from kernelseek_tui.task import load_task


class ClockLog:
    """nvidia-smi's SM clock and power every 20 ms in the background; ``between`` summarises
    the samples taken between two perf_counter marks."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "20"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._samples: list[tuple[float, float, float]] = []
        import threading

        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self._samples.append((time.perf_counter(), mhz, watts))

    def between(self, began: float, ended: float) -> str:
        picked = [(m, w) for t, m, w in self._samples if began <= t <= ended]
        if not picked:
            return "no clock samples"
        mhz = statistics.median(m for m, _ in picked)
        watts = statistics.median(w for _, w in picked)
        return f"SM {mhz:.0f} MHz, {watts:.0f} W (median of {len(picked)})"

    def close(self) -> None:
        self._process.terminate()


def measure_shape(
    label: str,
    work: float,
    fa3: Any,
    cand: Any,
    cudnn: Any,
    timing: Any,
    clocks: ClockLog,
    long_ms: int = 0,
) -> None:
    """One shape: FA3 and the candidate by each method, one line each."""
    import torch
    from triton.testing import do_bench

    def tf(ms: float) -> str:
        return f"{work / (ms * 1e-3) / 1e12:.1f}"

    def alone() -> tuple[float, float]:
        return do_bench(fa3, return_mode="median"), do_bench(cand, return_mode="median")

    methods: list[tuple[str, Any]] = [
        ("do_bench alone", alone),
        ("time_calls alone",
         lambda: (time_by_judge(fa3, timing, None), time_by_judge(cand, timing, None))),
        ("in turn: fa3, fa3 | cand, cand",
         lambda: (time_in_turn([fa3, fa3], timing)[0][0],
                  time_in_turn([cand, cand], timing)[0][0])),
        *[(f"in turn: fa3, cand, runs of {n}",
           lambda n=n: tuple(time_in_turn([fa3, cand], replace(timing, turn_run=n))[0]))
          for n in (1, 4, 16)],
        *[(f"in turn: cand, fa3, cudnn, runs of {n}",
           lambda n=n: tuple(
               time_in_turn([cand, fa3, cudnn], replace(timing, turn_run=n))[0][1::-1]))
          for n in (1, 4)],
        ("do_bench alone, again", alone),
    ]  # fmt: skip
    if long_ms:
        # Each alone for long_ms, then both in turn for as long: the clock each settles at.
        methods = [
            ("do_bench fa3 alone, long",
             lambda: (do_bench(fa3, rep=long_ms, return_mode="median"), float("nan"))),
            ("do_bench cand alone, long",
             lambda: (float("nan"), do_bench(cand, rep=long_ms, return_mode="median"))),
            ("in turn: fa3, cand, long",
             lambda: tuple(time_in_turn([fa3, cand], replace(timing, rep_ms=long_ms,
                                                               max_reps=100000))[0])),
        ]  # fmt: skip
    for name, run in methods:
        began = time.perf_counter()
        fa3_ms, cand_ms = run()
        torch.cuda.synchronize()
        seen = clocks.between(began, time.perf_counter())
        print(f"{label} | {name} | {tf(fa3_ms)} | {tf(cand_ms)} | {seen}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=Path("kernels/flash_fwd"))
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--only", default="d128,c1")
    parser.add_argument(
        "--long-ms",
        type=int,
        default=0,
        help="instead: FA3 alone, the candidate alone, then both in turn, each for this long",
    )
    args = parser.parse_args()

    import torch

    task = load_task(args.task)
    flops = load_flops(args.task)
    built = build(args.source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    if not built.ok or built.library is None:
        print(f"{args.source}: build failed: {'; '.join(built.reasons)}")
        return 1
    candidate = Candidate(args.source.stem, built.library)
    others = peers()
    clocks = ClockLog()
    stream = torch.cuda.current_stream().cuda_stream
    print("shape | method | FA3 TF/s | candidate TF/s | clocks over the method")
    try:
        for shape in bench_shapes(task, args.only):
            if shape["seqlen_q"] < 2048:
                continue
            torch.manual_seed(0)
            b, s, h, d = shape["batch"], shape["seqlen_q"], shape["nheads"], shape["headdim"]
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in "qkv")
            out = torch.empty_like(q)
            lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
            scale = 1.0 / math.sqrt(d)
            fa3 = functools.partial(others["fa3"], q, k, v, scale, bool(shape["causal"]))
            cand = candidate.bind([q, k, v, out, lse], shape, scale, stream)
            cudnn = functools.partial(others["cudnn"], q, k, v, scale, bool(shape["causal"]))
            label = f"d{d} c{shape['causal']} s{s}"
            measure_shape(label, flops(shape), fa3, cand, cudnn, task.timing, clocks, args.long_ms)
    finally:
        clocks.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
