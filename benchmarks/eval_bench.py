"""Evaluator benchmark, run by hand on the GPU box (not in CI).

Measures, in one process and run: the starting kernel's TFLOP/s on the task's bench set beside
FA3 and cuDNN (timed interleaved by the evaluator itself), the wall time of a full evaluation
(the objective: correctness + bench + fresh random scenarios) with a warm build cache, and the
wall time of `--set quick`. Prints a Markdown table; writes the raw results as JSON.

`--warm` times the quick set as an agent's loop sees it: every evaluation leaves a spare worker
started for the next (`prestart_next`), and `--pause` seconds pass between evaluations (the
agent's edit), so each quick run after the first finds its worker ready; the judge's target is
5 s a quick run.

    python3 benchmarks/eval_bench.py [--task kernels/flash_fwd] [--out DIR] [--quick-runs 2]
        [--warm --pause 10] [--source kernels/flash_fwd/sm90.cu] [--skip-full]
        [--isolation process]

`--isolation process` judges every kernel in a process of its own (evaluate/sandboxed_kernel.py),
through the judge's own MPS server unless CUDA_MPS_PIPE_DIRECTORY names one.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.evaluate.build import build
from kernelseek_tui.evaluate.gpu_sharing import gpu_line
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import load_task


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def timeline_line(result: EvalResult) -> str:
    """Each milestone of ``result.timeline`` with the time since the one before it ("built
    +0.10 s, worker_asked +0.02 s, device +0.88 s, ..."), then the scenarios' own wall times
    added up, which the steps from the first scenario to the last contain."""
    steps, previous = [], 0.0
    for name, at in result.timeline.items():
        steps.append(f"{name} +{at - previous:.2f} s")
        previous = at
    own = sum(s.wall_s or 0.0 for s in result.scenarios)
    return ", ".join(steps) + f" (the scenarios' own wall times add up to {own:.2f} s)"


def phase_line(result: EvalResult) -> str:
    """The scenarios' wall times added up by phase (``ScenarioResult.phase_s``), longest first,
    each with the scenario that spent most in it."""
    totals: dict[str, float] = {}
    worst: dict[str, tuple[float, str]] = {}
    for scenario in result.scenarios:
        for phase, seconds in scenario.phase_s.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
            if seconds > worst.get(phase, (-1.0, ""))[0]:
                worst[phase] = (seconds, scenario.name)
    ordered = sorted(totals.items(), key=lambda item: -item[1])
    return ", ".join(
        f"{phase} {seconds:.2f} s (most: {worst[phase][1]} {worst[phase][0]:.2f} s)"
        for phase, seconds in ordered
    )


def compile_line(result: EvalResult) -> str:
    """The kernels CuPy compiled for the judge's own work (``ScenarioResult.compiles``) and the
    scenario that compiled most: a first-use cost of the machine's CuPy cache, inside the
    phases above."""
    count = sum(s.compiles for s in result.scenarios)
    if count == 0:
        return "none"
    worst = max(result.scenarios, key=lambda s: s.compiles)
    whole = worst.wall_s or 0.0
    return f"{count} kernels (most: {worst.name}, {worst.compiles}, {whole:.2f} s whole)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=Path, default=Path("kernels/flash_fwd"))
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--quick-runs", type=int, default=2)
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument(
        "--full-runs",
        type=int,
        default=1,
        help="full objectives, one after another (with --warm: each finds a spare worker)",
    )
    parser.add_argument("--warm", action="store_true", help="a spare worker between quick runs")
    parser.add_argument("--pause", type=float, default=10.0, help="seconds between warm runs")
    parser.add_argument("--source", type=Path, help="the kernel to judge (default: the task's)")
    parser.add_argument(
        "--isolation",
        choices=("in-process", "process"),
        help="where the kernels run while judged (default: the task's)",
    )
    args = parser.parse_args()
    task = load_task(args.task)
    source = args.source or task.source
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = gpu_line()
    began = time.monotonic()
    warm = build(source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    print(
        f"machine: {gpu}; {platform.node()}; build cache warmed in "
        f"{time.monotonic() - began:.1f} s (hit: {warm.cache_hit}); "
        f"isolation: {args.isolation or task.isolation}"
    )

    quick = []
    for run in range(args.quick_runs):
        if args.warm and run > 0:
            time.sleep(args.pause)
        result = evaluate(
            task, source, sets=["quick"], prestart_next=args.warm, isolation=args.isolation
        )
        quick.append(result)
        (args.out / f"quick-{run}.json").write_text(result.to_json())
        print(
            f"quick run {run}{' (warm)' if args.warm and run > 0 else ''}: {result.verdict} "
            f"{result.summary.passed}/{result.summary.total} in {result.duration_s:.1f} s"
        )
        print(f"  where the time went: {timeline_line(result)}")
        if result.isolation != "in-process":
            print(f"  hand-over taken out (us): {result.handovers_us}; MPS: {result.mps}")
        print(f"  the scenarios by phase: {phase_line(result)}")
        print(f"  compiled by CuPy for the judge: {compile_line(result)}")

    full_runs = 0 if args.skip_full else args.full_runs
    for run in range(full_runs):
        # With --warm the full objective is timed as an agent's loop sees it: the evaluation
        # before it (a quick run or a full one) left a spare worker, and the edit's pause passed.
        warm_start = args.warm and (run > 0 or args.quick_runs > 0)
        if warm_start:
            time.sleep(args.pause)
        full = evaluate(task, source, prestart_next=args.warm, isolation=args.isolation)
        (args.out / ("full.json" if run == 0 else f"full-{run}.json")).write_text(full.to_json())
        slowest = sorted(full.scenarios, key=lambda s: -(s.wall_s or 0))[:5]
        print(
            f"full evaluation {run}{' (warm)' if warm_start else ''}: {full.verdict} "
            f"{full.summary.passed}/{full.summary.total} in {full.duration_s:.1f} s; slowest: "
            + ", ".join(f"{s.name} {s.wall_s:.1f}s" for s in slowest if s.wall_s)
        )
        print(f"  where the time went: {timeline_line(full)}")
        print(f"  the scenarios by phase: {phase_line(full)}")
        print(f"  compiled by CuPy for the judge: {compile_line(full)}")
        print(f"reasons: {full.reasons[:3]}")
    if full_runs:
        print()
        print(
            "| shape | baseline ms | baseline TFLOP/s | FA3 TFLOP/s | cuDNN TFLOP/s"
            " | FA3/baseline |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for s in full.scenarios:
            if s.set != "bench":
                continue
            fa3, cudnn = s.peers.get("fa3"), s.peers.get("cudnn")
            ratio = (fa3.tflops / s.tflops) if fa3 and fa3.tflops and s.tflops else None
            print(
                f"| {s.name} | {_fmt(s.ms, '.3f')} | {_fmt(s.tflops)} | "
                f"{_fmt(fa3.tflops if fa3 else None)} | "
                f"{_fmt(cudnn.tflops if cudnn else None)} | {_fmt(ratio, '.1f')} |"
            )
        summary = full.summary
        print(
            f"\ngeomean TFLOP/s over bench: baseline {_fmt(summary.geomean_tflops)}; "
            f"vs peers {json.dumps(summary.vs_peers)}; absent {json.dumps(summary.absent_peers)}"
        )
        notes = {n for s in full.scenarios for p in s.peers.values() for n in p.notes}
        print(f"peer notes: {sorted(notes)[:6]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
