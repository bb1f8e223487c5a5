"""How much does work a kernel's process does after its calls change the figure the judge gives
it? The hole "A process that lowers its own hand-over" (docs/RELIABILITY.md): a host whose
process spins one warp for 20 us on a side stream after each call read sm90.cu 4.6-5.5% fast
against FA3 (H100, 2026-12-06). This sweeps the spin's length, each host judged isolated on one
timed scenario (tests/data/flash_timed.toml), the hosts alternated, and prints per run the
verdict, x FA3, the candidate's and FA3's times and the hand-over taken out. A gain that grows
with the spin points at the process's state after its call; one that does not, at the spin's
mere presence. Run by hand on the GPU box (not in CI):

    python3 benchmarks/keep_alive_sweep.py [--ns 0,2000,20000,200000] [--rounds 1]

``0`` is the same build with the spin compiled in and never started (the control).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the GPU tests' host patches, one copy of them

from test_evaluate_gpu import TIMED  # noqa: E402
from test_sandbox_gpu import keep_alive_patches  # noqa: E402

import kernelseek_tui.evaluate.api as api  # noqa: E402
from kernelseek_tui.evaluate.sandbox_host import HOST_SOURCE  # noqa: E402
from kernelseek_tui.task import load_task  # noqa: E402


def build_host(folder: Path, ns: int) -> Path:
    """The kernels' host with the keep-alive patch for ``ns`` (0: compiled in, never called)."""
    text = HOST_SOURCE.read_text()
    for old, new in keep_alive_patches(ns or None):
        if text.count(old) != 1:
            raise SystemExit(f"the host's source changed; the patch no longer applies: {old}")
        text = text.replace(old, new)
    source = folder / f"keep_alive_{ns}.cu"
    source.write_text(text)
    host = folder / f"keep_alive_{ns}"
    subprocess.run(["nvcc", "-O2", "-o", str(host), str(source), "-ldl"], check=True)
    return host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", default="0,2000,20000,200000", help="spin lengths, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the spin lengths")
    parser.add_argument("--source", default=str(ROOT / "kernels/flash_fwd/sm90.cu"))
    args = parser.parse_args()
    lengths = [int(n) for n in args.ns.split(",")]
    task = load_task(ROOT / "kernels/flash_fwd")
    with tempfile.TemporaryDirectory() as folder:
        hosts = {ns: build_host(Path(folder), ns) for ns in lengths}
        # The control again at the end, so drift over the run shows.
        order = [ns for _ in range(args.rounds) for ns in lengths] + [lengths[0]]
        print("spin_ns verdict x_fa3 candidate_us fa3_us handover_us seconds reasons")
        for ns in order:
            api.host_executable = lambda host=hosts[ns]: host  # type: ignore[assignment]
            began = time.perf_counter()
            result = api.evaluate(
                task, Path(args.source), isolation="process", scenarios_file=TIMED
            )
            scenario = result.scenarios[0]
            fa3 = (scenario.peers or {}).get("fa3")
            fa3_ms = getattr(fa3, "ms", None)
            print(
                ns,
                result.verdict,
                f"{result.summary.vs_fa3:.4f}" if result.summary.vs_fa3 else "-",
                f"{scenario.ms * 1000:.2f}" if scenario.ms else "-",
                f"{fa3_ms * 1000:.2f}" if fa3_ms else "-",
                result.handovers_us.get("the candidate"),
                f"{time.perf_counter() - began:.1f}",
                result.reasons[:1],
                flush=True,
            )


if __name__ == "__main__":
    main()
