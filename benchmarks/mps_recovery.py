"""What a private MPS server does after a kernel judged in a process of its own hangs, and whether
restarting the server brings the GPU back.

    python3 benchmarks/mps_recovery.py [--stall-timeout 20] [--by-hand]

With every kernel in a process of its own, the stream counters as hand-over, on the small
scenarios: the starting kernel, then tests/kernels/hang.cu (its process killed by the stall
watchdog), then the starting kernel again. By default under the judge's own MPS server
(evaluate/private_mps.py), which the judge restarts after the hang. ``--by-hand``: under a
server this script starts and names in the environment (so the judge leaves it alone): the
starting kernel after the hang on the same server, then after the script restarts it (how
long, and whether ``quit`` was enough or what was left had to be killed). Prints each step's
verdict, reasons, wall time and the result's MPS line. Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.evaluate.gpu_sharing import gpu_line
from kernelseek_tui.evaluate.private_mps import PrivateMps
from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
SMALL = ROOT / "tests" / "data" / "flash_small.toml"
HANG = ROOT / "tests" / "kernels" / "hang.cu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stall-timeout", type=float, default=20.0)
    parser.add_argument(
        "--by-hand", action="store_true", help="a server of this script's, restarted by it"
    )
    args = parser.parse_args()
    os.environ[HANDOVER_VARIABLE] = "counters"
    gpu = gpu_line()
    print(f"machine: {gpu}; {platform.node()}")
    task = load_task(TASK_DIR)

    def step(name: str, source: Path, **kwargs: float) -> str:
        began = time.perf_counter()
        result = evaluate(
            task,
            source,
            scenarios_file=SMALL,
            timed=False,
            compare=False,
            isolation="process",
            **kwargs,
        )
        wall = time.perf_counter() - began
        reasons = "; ".join(result.reasons)[:300]
        print(f"{name}: {result.verdict} in {wall:.1f} s: {reasons}")
        print(f"  MPS: {result.mps}")
        return result.verdict

    if args.by_hand:  # what the server does when nobody restarts it
        mps = PrivateMps()
        os.environ.update(mps.start())  # named in the environment: the judge leaves it be
        try:
            step("the starting kernel", task.source)
            step("hang.cu", HANG, stall_timeout_s=args.stall_timeout)
            step("the starting kernel after the hang, same server", task.source)
            began = time.perf_counter()
            notes = mps.restart()
            print(f"restart: {time.perf_counter() - began:.2f} s; {notes or 'quit was enough'}")
            step("the starting kernel after a restart", task.source)
        finally:
            print(f"stop: {mps.stop() or 'quit was enough'}")
        return
    # The judge's own server, restarted by the judge after the hang.
    step("the starting kernel", task.source)
    step("hang.cu", HANG, stall_timeout_s=args.stall_timeout)
    step("the starting kernel after the hang", task.source)


if __name__ == "__main__":
    main()
