"""What judging a kernel in a process of its own costs its figure, run by hand on the GPU box.

1. The hand-over alone: an empty kernel, timed by the judge's "flushed" method
   (evaluate/timing.py) loaded in-process and in its own process (evaluate/sandboxed_kernel.py,
   behind the gate, as the worker times it), in turn, ``--rounds`` times each. The difference
   of the medians is what the two streams' hand-over (GO and DONE across processes, and
   contexts) adds to every timed call.
2. The same on real work: ``--source`` (default sm90.cu) on the bench shapes given, each
   evaluated in-process and isolated in turn (A B B A), FA3 and cuDNN beside it in each run:
   per shape the candidate's milliseconds both ways, their ratio, and x FA3 both ways. The
   isolated figures are the judge's: net of the hand-over its worker measured before loading
   the kernel (evaluate/handover_cost.py), which is printed after the table.

Prints Markdown tables with the machine; writes the raw numbers as JSON under ``--out``.

    python3 benchmarks/sandbox_handover.py [--out DIR] [--rounds 4] [--shapes 6]
        [--handover counters|events]

The processes share the GPU through the MPS server the judge uses for isolation
(evaluate/private_mps.py): its own, started here, or the one ``CUDA_MPS_PIPE_DIRECTORY`` names
(scripts/with_private_mps.sh); ``KERNELSEEK_MPS=off`` for none.

``--handover``: how each call is handed to the kernel's process (evaluate/stream_counters.py),
for both parts; it sets ``KERNELSEEK_HANDOVER`` for the evaluations' workers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.evaluate.gpu_sharing import gpu_line
from kernelseek_tui.evaluate.private_mps import join_for_isolation
from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE, HANDOVERS
from kernelseek_tui.task import Task, Timing, load_task


def empty_kernel_handover(rounds: int, handover: str) -> dict[str, list[float]]:
    """The judge's empty kernel (evaluate/empty_kernel.cu) timed in-process and in a process
    of its own, as the worker measures the hand-over (``handover_cost.time_empty_kernel``),
    with the task's default timing; microseconds, median per round, and the process's start."""
    import cupy as cp

    from kernelseek_tui.evaluate.handover_cost import time_empty_kernel
    from kernelseek_tui.evaluate.sandbox_host import empty_kernel_library
    from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel
    from kernelseek_tui.evaluate.worker import Kernel

    library = empty_kernel_library()
    stream = cp.cuda.Stream(non_blocking=True)
    # What a process of its own costs an evaluation once per kernel: start, context, events,
    # load (the worker makes up to three: the candidate, the starting kernel, the best so far).
    began = time.perf_counter()
    isolated = SandboxedKernel(
        library, cp=cp, stream=stream, who="the empty kernel", handover=handover
    )
    start_ms = (time.perf_counter() - began) * 1000.0
    try:
        cost = time_empty_kernel(
            cp,
            stream,
            {"in-process": Kernel(str(library)), "isolated": isolated},
            timing=Timing(),
            rounds=rounds,
        )
    finally:
        isolated.forget_all()
        isolated.close()
    return {
        "in-process": cost.in_process_us,
        "process": cost.isolated_us,
        "host start (ms)": [start_ms],
    }


def bench_shapes(task: Task, count: int) -> Path:
    """``count`` bench scenarios spread evenly over the set, from its first (d64, 512, one of
    its shortest calls) to its last (d256, 16k, causal), as a scenarios file."""
    bench = task.scenarios("bench")
    picks = sorted({round(i * (len(bench) - 1) / max(1, count - 1)) for i in range(count)})
    chosen = [bench[i] for i in picks]
    lines = []
    for scenario in chosen:
        lines.append("[[scenario]]")
        lines.append(f'name = "{scenario.name}"')
        for key, value in scenario.fields.items():
            lines.append(f"{key} = {value}")
        lines.append("")
    path = Path(tempfile.mkdtemp(prefix="ks-handover-")) / "shapes.toml"
    path.write_text("\n".join(lines))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=Path, default=Path("kernels/flash_fwd"))
    parser.add_argument("--source", type=Path, default=Path("kernels/flash_fwd/sm90.cu"))
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--shapes", type=int, default=6)
    parser.add_argument("--handover", choices=HANDOVERS, default="counters")
    args = parser.parse_args()
    os.environ[HANDOVER_VARIABLE] = args.handover  # the evaluations' workers read it
    # The first part times a kernel's process from this one: both become clients of the MPS
    # server the judge would use (its own, unless CUDA_MPS_PIPE_DIRECTORY names one), before
    # CUDA starts here; the evaluations of the second part then find it named.
    mps = join_for_isolation()
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = gpu_line()
    print(f"machine: {gpu}; {platform.node()}; hand-over: {args.handover}; MPS: {mps.said}")

    medians = empty_kernel_handover(args.rounds, args.handover)
    print("\n| empty kernel, flushed | median of medians (us) | per round (us) |\n|---|---|---|")
    for name in ("in-process", "process"):
        rounds = ", ".join(f"{v:.1f}" for v in medians[name])
        print(f"| {name} | {statistics.median(medians[name]):.1f} | {rounds} |")
    print(f"\nthe kernel's process started in {medians['host start (ms)'][0]:.0f} ms")
    handover = statistics.median(medians["process"]) - statistics.median(medians["in-process"])
    print(f"\nhand-over added per call: {handover:.1f} us")

    record: dict[str, Any] = {
        "machine": gpu,
        "handover": args.handover,
        "mps": mps.said,
        "empty_us": medians,
    }
    out = args.out / f"sandbox_handover-{args.handover}.json"
    out.write_text(json.dumps(record, indent=2))  # the hand-over kept, whatever follows
    task = load_task(args.task)
    shapes = bench_shapes(task, args.shapes)
    runs: dict[str, list[Any]] = {"in-process": [], "process": []}
    for order in (("in-process", "process"), ("process", "in-process")):
        for isolation in order:
            result = evaluate(task, args.source, scenarios_file=shapes, isolation=isolation)
            if result.verdict != "pass":
                print(f"{isolation}: {result.verdict}: {result.reasons}")
                # What the failed run measured, scenario by scenario, for the one who finds
                # out why (a tail near its limit on the shapes that passed says as much as the
                # reason of the one that failed).
                print_tails(result)
                record["failed"] = {"isolation": isolation, "result": result.to_dict()}
                out.write_text(json.dumps(record, indent=2))
                return 1
            runs[isolation].append(result)
    # The longest tail of each shape's runs beside its limit, on a pass too: whether an
    # isolated tail sits far below the limit or near it tells a rare stall of `settle`'s round
    # trip from work that outlives the stream (docs/RELIABILITY.md).
    print(
        "\n| shape | ms in-process | ms isolated | isolated / in-process "
        "| x FA3 in-process | x FA3 isolated | longest tail in-process / isolated (ms) "
        "| tail limit (ms) |\n|---|---|---|---|---|---|---|---|"
    )
    table = []
    for i, scenario in enumerate(runs["in-process"][0].scenarios):
        ms = {k: statistics.median(r.scenarios[i].ms for r in v) for k, v in runs.items()}
        fa3 = {}
        for k, v in runs.items():
            ratios = [
                r.scenarios[i].peers["fa3"].ms / r.scenarios[i].ms
                for r in v
                if "fa3" in r.scenarios[i].peers and r.scenarios[i].peers["fa3"].ms
            ]
            fa3[k] = statistics.median(ratios) if ratios else None
        tails = {
            k: max((r.scenarios[i].tail_ms for r in v if r.scenarios[i].tail_ms is not None),
                   default=None)
            for k, v in runs.items()
        }  # fmt: skip
        limit = scenario.tail_limit_ms
        row = {"shape": scenario.name, "ms": ms, "x_fa3": fa3, "tail_ms": tails, "limit": limit}
        table.append(row)

        print(
            f"| {scenario.name} | {ms['in-process']:.4f} | {ms['process']:.4f} | "
            f"{ms['process'] / ms['in-process']:.3f} | {fmt(fa3['in-process'])} | "
            f"{fmt(fa3['process'])} | {fmt(tails['in-process'])} / {fmt(tails['process'])} | "
            f"{fmt(limit)} |"
        )
    record["shapes"] = table
    # What each isolated evaluation's worker measured with the judge's empty kernel and took
    # out of its figures (evaluate/handover_cost.py): the table's isolated ms are net of it.
    taken = [r.handover_us for r in runs["process"]]
    record["handover_taken_out_us"] = taken
    print("\nhand-over taken out of each isolated evaluation (us): " + ", ".join(
        fmt(v, 1) for v in taken))  # fmt: skip
    out.write_text(json.dumps(record, indent=2))
    return 0


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def print_tails(result: Any) -> None:
    """Each scenario of ``result``: verdict, milliseconds, and its measured runs' longest tail
    against the limit (evaluate/timing.py)."""
    print("\n| shape | passed | ms | tail (ms) | tail limit (ms) |\n|---|---|---|---|---|")
    for scenario in result.scenarios:
        print(
            f"| {scenario.name} | {scenario.passed} | {fmt(scenario.ms, 4)} | "
            f"{fmt(scenario.tail_ms)} | {fmt(scenario.tail_limit_ms)} |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
