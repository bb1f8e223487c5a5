"""How much the hand-over the judge takes out of isolated figures varies, and whether a call of
real length pays the same as the empty kernel it is measured with. Run by hand on the GPU box.

Why: on an H100 (2026-12-06) the worker's measure (evaluate/handover_cost.py) read 6.4, 12.1,
14.2, 14.4 and 14.4 us in five evaluations, while sm90.cu's isolated figures against
fa_bench's in-turn ones implied about 6 us on the short bench shapes: taking out 14 read the
candidate up to 7% fast there. This times, in ``--fresh`` kernel processes started one after
another, the judge's empty kernel and kernels that spin for ``--spin-us`` on the GPU, each by
the worker's own measure (``handover_cost.time_empty_kernel``, its timing, ``--rounds``
rounds), and prints every round's medians with the CPU each process last ran on.

    python3 benchmarks/handover_spread.py [--fresh 6] [--rounds 6] [--spin-us 0 100]
        [--idle-hosts N] [--freeze-idle] [--json FILE]

Also prints every command sent to the kernels' processes, timed (how many, the total, the
slowest): a measure took 5 s on an H100 where its timed calls account for well under one.

The processes share the GPU through the MPS server the judge uses (its own, started here,
unless ``CUDA_MPS_PIPE_DIRECTORY`` names one); ``KERNELSEEK_HANDOVER`` picks the hand-over.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.gpu_sharing import gpu_line
from kernelseek_tui.evaluate.private_mps import join_for_isolation
from kernelseek_tui.evaluate.proc_stat import stat_fields
from kernelseek_tui.evaluate.sandbox_host import EMPTY_RECIPE, empty_kernel_library
from kernelseek_tui.evaluate.stream_counters import default_handover

# The empty kernel's calling convention, with a wait of SPIN_NS nanoseconds on the GPU's clock.
SPIN_SOURCE = r"""
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

extern "C" int ks_launch(void **, const int64_t *, const double *, void *stream) {
    spin<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(SPIN_NS);
    return static_cast<int>(cudaGetLastError());
}
"""

# /proc/<pid>/stat's 39th field, the CPU the process last ran on, past pid, name and state.
PROCESSOR_FIELD = 39 - 3


def spin_library(us: int, folder: Path) -> Path:
    """The spinning kernel built as a library (0 us: the judge's own empty kernel)."""
    if us == 0:
        return empty_kernel_library()
    source = folder / f"spin{us}.cu"
    source.write_text(SPIN_SOURCE)
    target = folder / f"libspin{us}.so"
    nvcc = shutil.which("nvcc") or "nvcc"
    subprocess.run(
        [nvcc, *EMPTY_RECIPE, f"-DSPIN_NS={us * 1000}ULL", "-o", str(target), str(source)],
        check=True,
    )
    return target


def processor(pid: int) -> str:
    fields = stat_fields(pid)
    return fields[PROCESSOR_FIELD] if fields and len(fields) > PROCESSOR_FIELD else "?"


def time_asks(kernel: Any) -> dict[str, list[float]]:
    """Each command the judge sends ``kernel``'s process from now on, timed (seconds, by the
    command's first word): on an H100 (2026-12-06) one measure took 5 s, nearly all of it in
    the few gated calls of each run's probe (cProfile), not in the timed ones."""
    asks: dict[str, list[float]] = {}
    host = kernel._host  # the benchmark looks inside; the judge never needs to
    ask = host.ask

    def timed(*words: object) -> str:
        began = time.perf_counter()
        try:
            return ask(*words)
        finally:
            asks.setdefault(str(words[0]), []).append(time.perf_counter() - began)

    host.ask = timed
    return asks


def measure(library: Path, rounds: int, handover: str) -> dict[str, Any]:
    """One fresh kernel process: the worker's measure with ``library``, and where it ran."""
    import cupy as cp

    from kernelseek_tui.evaluate.handover_cost import time_empty_kernel
    from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel
    from kernelseek_tui.evaluate.worker import Kernel

    stream = cp.cuda.Stream(non_blocking=True)
    began = time.perf_counter()
    isolated = SandboxedKernel(
        library, cp=cp, stream=stream, who="the spin kernel", handover=handover
    )
    started_s = time.perf_counter() - began
    asks = time_asks(isolated)
    try:
        began = time.perf_counter()
        cost = time_empty_kernel(
            cp, stream, {"in-process": Kernel(str(library)), "isolated": isolated}, rounds=rounds
        )
        measured_s = time.perf_counter() - began
        cpus = {"judge": processor(os.getpid()), "kernel": processor(isolated.pid)}
    finally:
        isolated.forget_all()
        began = time.perf_counter()
        isolated.close()
        closed_s = time.perf_counter() - began
    return {
        "start_s": started_s,
        "close_s": closed_s,
        "measure_s": measured_s,
        "asks": asks,
        "in_process_us": cost.in_process_us,
        "isolated_us": cost.isolated_us,
        "handover_us": cost.us,
        "cpus": cpus,
    }


def idle_hosts(count: int, handover: str) -> list[Any]:
    """``count`` kernels' processes with no kernel, started and left waiting."""
    import cupy as cp

    from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel

    stream = cp.cuda.Stream(non_blocking=True)
    began = time.perf_counter()
    hosts = [
        SandboxedKernel(None, cp=cp, stream=stream, who="an idle host", handover=handover)
        for _ in range(count)
    ]
    if count:
        print(f"{count} idle kernels' processes started in {time.perf_counter() - began:.2f} s")
    return hosts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--spin-us", type=int, nargs="+", default=[0, 100])
    parser.add_argument(
        "--idle-hosts",
        type=int,
        default=0,
        help="kernels' processes started first and left idle, as a worker's hosts ahead are",
    )
    parser.add_argument(
        "--freeze-idle",
        action="store_true",
        help="stop the idle processes (SIGSTOP), as while the starting kernel is timed",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"idle kernels' processes beside: {args.idle_hosts}")
    mps = join_for_isolation()
    handover = default_handover()
    gpu = gpu_line()
    print(f"machine: {gpu}; {platform.node()}; {os.cpu_count()} CPUs; hand-over: {handover}")
    print(f"MPS: {mps.said}")
    idle = idle_hosts(args.idle_hosts, handover)
    if args.freeze_idle:
        for host in idle:
            host.freeze()
        print("the idle processes stopped")
    folder = Path(tempfile.mkdtemp(prefix="ks-spin-"))
    libraries = {us: spin_library(us, folder) for us in args.spin_us}
    print(
        "\n| process | kernel (us on GPU) | in-process per round (us) | isolated per round (us) "
        "| hand-over (us) | CPU judge / kernel | start / measure / close (s) |\n"
        "|---|---|---|---|---|---|---|"
    )
    rows = []
    for fresh in range(args.fresh):
        for us, library in libraries.items():
            row = measure(library, args.rounds, handover)
            row.update(process=fresh, spin_us=us)
            rows.append(row)
            print(
                f"| {fresh} | {us} | {', '.join(f'{v:.1f}' for v in row['in_process_us'])} | "
                f"{', '.join(f'{v:.1f}' for v in row['isolated_us'])} | "
                f"{row['handover_us']:.1f} | {row['cpus']['judge']} / {row['cpus']['kernel']} | "
                f"{row['start_s']:.2f} / {row['measure_s']:.2f} / {row['close_s']:.2f} |"
            )
    print("\n| command | asks | total (s) | slowest five (ms) |\n|---|---|---|---|")
    commands = sorted({name for row in rows for name in row["asks"]})
    for name in commands:
        times = [t for row in rows for t in row["asks"].get(name, [])]
        slowest = ", ".join(f"{1000 * t:.1f}" for t in sorted(times)[-5:])
        print(f"| {name} | {len(times)} | {sum(times):.2f} | {slowest} |")
    print("\n| kernel (us on GPU) | hand-over per process (us) | median | min | max |")
    print("|---|---|---|---|---|")
    for us in libraries:
        values = [r["handover_us"] for r in rows if r["spin_us"] == us]
        print(
            f"| {us} | {', '.join(f'{v:.1f}' for v in values)} | "
            f"{statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |"
        )
    for host in idle:
        host.close()
    if args.json:
        args.json.write_text(json.dumps({"machine": gpu, "handover": handover, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
