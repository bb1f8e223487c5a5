"""How much does work a kernel's process does after its calls change the figure the judge gives
it, and does the same work after the judge's probe's calls take the gain back? The hole "A
process that lowers its own hand-over" (docs/RELIABILITY.md): a host whose process spins one
warp for 20 us on a side stream after each call read sm90.cu 4.6-5.5% fast against FA3 (H100,
2026-12-06). Each variant's host is judged isolated on one timed scenario
(tests/data/flash_timed.toml), the variants alternated; per run it prints the verdict, x FA3, the
candidate's time net and gross of the hand-over, FA3's time and the hand-over taken out. Run by
hand on the GPU box (not in CI):

    python3 benchmarks/keep_alive_sweep.py [--variants off,0,2000,20000,200000,0p,20000p,w4000]
                                           [--rounds 1] [--handovers counters]
                                           [--probe-times before,in-turn]

A variant names what runs after each call, one warp on a side stream of the process's, once the
call's DONE is written:
- ``off``: nothing (the spin compiled in, never started: the control);
- ``N``: a spin of N ns after the kernel's calls only (``0``: the spin kernel launched, ending at
  once), the probe's calls left idle: a cheating process;
- ``Np``: the same after every call, the judge's probe's included: the defence "the judge's host
  does the same work after every call" in a cheater's clothes;
- ``N+Mp``: M ns after every call and N after the kernel's (the longer of the two runs): a
  cheater on top of that defence;
- ``wN``: no launch; the host's thread waits N ns on the CPU after each of the kernel's calls'
  DONE (what a launch costs that thread), putting off the judge's trailing launch and the reply
  as a launch of the cheat's would. Reading as ``0`` points at the timing of the judge's own
  launches, not at the cheat's launch.
Each variant runs once per hand-over named (``KERNELSEEK_HANDOVER``: counters, fenced) and per
probe time named (``KERNELSEEK_HANDOVER_PROBE``: before, the default; in-turn, the probe also
timed with the scenario's calls, evaluate/handover_cost.py; the hand-over printed is then the
one the scenario's figure is net of). A gain
that grows with N points at the process's state when its next GO comes; one that ``0``
already gives, at a launch after the call; ``Np`` reading as ``off`` means a probe measured in
the same state takes the gain back.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the GPU tests' host patches, one copy of them

from test_evaluate_gpu import TIMED  # noqa: E402
from test_sandbox_gpu import (  # noqa: E402
    after_each_call_patches,
    patched_host,
    wait_after_call_patches,
)

import kernelseek_tui.evaluate.api as api  # noqa: E402
from kernelseek_tui.evaluate.handover_cost import PROBE_TIMES, PROBE_VARIABLE  # noqa: E402
from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE  # noqa: E402
from kernelseek_tui.task import load_task  # noqa: E402

VARIANT = re.compile(r"^(?:off|(\d+)(?:\+(\d+)p|(p))?)$")
WAIT_VARIANT = re.compile(r"^w(\d+)$")


def spins(variant: str) -> tuple[int | None, int | None]:
    """(ns after the kernel's calls, ns after the probe's), None for none."""
    match = VARIANT.match(variant)
    if match is None:
        raise SystemExit(f"not a variant: {variant!r} (off, N, Np, N+Mp or wN)")
    if variant == "off":
        return None, None
    n = int(match.group(1))
    if match.group(2) is not None:
        m = int(match.group(2))
        return max(n, m), m
    return n, (n if match.group(3) else None)


def host_patches(variant: str) -> tuple[tuple[str, str], ...]:
    """The GPU tests' patches for the variant: its spins, one warp each, or its wait on the CPU;
    exits with the variants' syntax when ``variant`` is none of them."""
    wait = WAIT_VARIANT.match(variant)
    if wait is not None:
        return wait_after_call_patches(int(wait.group(1)))
    return after_each_call_patches("1", 32, *spins(variant))


def build_host(folder: Path, variant: str) -> Path:
    """The kernels' host built with the variant's patches."""
    return patched_host(folder, "keep_alive_" + variant.replace("+", "_"), host_patches(variant))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="off,0,2000,20000,200000,0p,20000p")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the variants")
    parser.add_argument(
        "--handovers", default="fenced", help="KERNELSEEK_HANDOVER values (fenced: the default)"
    )
    parser.add_argument(
        "--probe-times",
        default="before",
        help="KERNELSEEK_HANDOVER_PROBE values (before: the default; in-turn)",
    )
    parser.add_argument("--source", default=str(ROOT / "kernels/flash_fwd/sm90.cu"))
    args = parser.parse_args()
    variants = args.variants.split(",")
    for variant in variants:
        host_patches(variant)  # a wrong name stops here, before any build
    for when in args.probe_times.split(","):
        if when not in PROBE_TIMES:
            raise SystemExit(f"not a probe time: {when!r} ({', '.join(PROBE_TIMES)})")
    task = load_task(ROOT / "kernels/flash_fwd")
    with tempfile.TemporaryDirectory() as folder:
        hosts = {v: build_host(Path(folder), v) for v in variants}
        # The first run again at the end, so drift over the run shows.
        handovers = args.handovers.split(",")
        probe_times = args.probe_times.split(",")
        order = [
            (v, h, p)
            for _ in range(args.rounds)
            for h in handovers
            for p in probe_times
            for v in variants
        ]
        order.append(order[0])
        print(
            "variant handover probe verdict x_fa3 candidate_us gross_us fa3_us handover_us "
            "seconds reasons"
        )
        for variant, handover_mode, probe_when in order:
            os.environ[HANDOVER_VARIABLE] = handover_mode
            os.environ[PROBE_VARIABLE] = probe_when
            api.host_executable = lambda host=hosts[variant]: host  # type: ignore[assignment]
            began = time.perf_counter()
            result = api.evaluate(
                task, Path(args.source), isolation="process", scenarios_file=TIMED
            )
            scenario = result.scenarios[0]
            fa3 = (scenario.peers or {}).get("fa3")
            fa3_ms = getattr(fa3, "ms", None)
            handover = (
                scenario.handover_us
                if scenario.handover_us is not None
                else result.handovers_us.get("the candidate")
            )
            net_us = scenario.ms * 1000 if scenario.ms else None
            print(
                variant,
                handover_mode,
                probe_when,
                result.verdict,
                f"{result.summary.vs_fa3:.4f}" if result.summary.vs_fa3 else "-",
                f"{net_us:.2f}" if net_us else "-",
                f"{net_us + handover:.2f}" if net_us and handover is not None else "-",
                f"{fa3_ms * 1000:.2f}" if fa3_ms else "-",
                handover,
                f"{time.perf_counter() - began:.1f}",
                result.reasons[:1],
                flush=True,
            )


if __name__ == "__main__":
    main()
