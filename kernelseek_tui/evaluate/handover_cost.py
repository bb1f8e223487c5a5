"""What handing a call to a kernel's own process adds to its timed figure, measured in that
process before its kernel is loaded, and taken out of that kernel's figures.

Why: with every kernel in a process of its own (evaluate/sandboxed_kernel.py), each timed call
carries the hand-over between the judge's stream and the kernel's (GO there, DONE back): 5.6 us
with the stream counters under MPS on an H100, 12.0 with interprocess events (2026-12-06,
benchmarks/sandbox_handover.py). Left in, it reads the candidate up to 5% slow on the
shortest bench calls (d64 at 512 tokens, 0.19 ms), while the peers, timed in the worker, carry
none: the "x FA3" would then be the method's, not the kernel's.

What: in each kernel's own process, before its kernel is loaded there, the worker times the
judge's own empty kernel (evaluate/empty_kernel.cu) by the flushed method, loaded in the worker
and loaded in that process behind the gate (the host's ``probe``), in alternating order (A B B
A); that process's hand-over is the difference of the medians. Per process, because it is not
one constant: on an H100 (2026-12-06, benchmarks/handover_spread.py) it was 5.4-6.9 us in
some processes and 11-15 us in others (more often in those started after other kernels'
processes), and one figure for all read sm90.cu up to 7.5% fast on the shortest shapes.
Every isolated sample of that kernel's, by the flushed method, is then reported less that
much, never below the empty kernel's own in-process time (no call can take less by this
method). A call of 100 us on the GPU paid what the empty one paid within 1 us on two machines
and about 3 us more on a third (benchmarks/handover_spread.py): the empty kernel's figure can
leave part of a real call's hand-over in, which reads the kernel slow, never fast.

The state it is measured in: a process that launches any kernel after its calls' DONE hands
its calls over about 6 us faster than the same process idle (H100, 2026-12-06), so a kernel
whose process did that read fast by as much. So every process the judge probes is first given
the host's trailing launch (``trail``, evaluate/sandbox_host.cpp): an empty kernel of the
host's own after every call's DONE, the probe's included. The hand-over is then measured in
the state such a launch puts a process in (8-9 us against 12-14 idle on that H100), and a
launch of the candidate's own after its calls gained nothing more in 5 runs; a 20 us spin
still gained 2.6-2.8% (docs/RELIABILITY.md, "A process that lowers its own hand-over").

Why a candidate cannot move the figure itself: it is measured before the candidate's library
exists in its process (the candidate's own is measured before it is loaded, the others' in
processes the candidate never enters), and subtracting more than the true hand-over would need
the empty kernel's isolated calls slowed, which only another GPU user could do. Every other kernel's
process is stopped (SIGSTOP) while one is measured, as while the starting kernel is timed: the
candidate's, loaded by the time the starting kernel's process is measured, can put nothing on
the GPU then.

In turn (``KERNELSEEK_HANDOVER_PROBE=in-turn``; off by default, built 2026-12-06 late, CPU-tested
only). What the phase before load leaves open: a process that launches a kernel of its own after
each call's DONE read its calls 1-2% fast against FA3 with the fence and the trailing launch
(H100 and H200, 2026-12-06), and the same launch after the probe's calls did not take it back
(the probe's figure rose, the calls' gross did not; docs/BENCHMARKS.md, "The fence by default
on the H200"): a call seems to leave the process in a state that shortens its next call's
hand-over, which a probe measured apart never meets. So, in turn: in every timed scenario the
judge's empty kernel, in-process and in the kernel's process (the host's probe kept after
load), is timed with the scenario's calls, sample by sample (``timing.time_interleaved``), and
the difference of those two medians is what that scenario's figures are net of. Whatever a
kernel's call leaves then reaches a probe call about as often as a kernel call (the rounds run
forward and reversed in turn), so a gain that state gives the kernel's calls also lowers the
figure taken out of them. But the probe then runs where the kernel's code is: code that
slowed the probe's calls (a launch after them: the `0p` variant's probe read 2.5 us higher)
would have more taken out of its own calls. So the figure in turn is capped at the one
measured before the load (``in_turn_cost``): a kernel can only lower it, which reads the kernel
slower. The starting kernel, timed alone and cached, keeps the figure measured before its
load. Whether this closes the hole is for a GPU to say (not yet run).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelseek_tui.evaluate.buffers import allocate
from kernelseek_tui.evaluate.gate import GateLetGo, StreamGate
from kernelseek_tui.evaluate.sandbox_host import SandboxError
from kernelseek_tui.evaluate.timing import TimingStats, time_calls
from kernelseek_tui.task import TensorSpec, Timing

# When the probe is timed: "before" the kernel is loaded (the default), or also "in-turn" with
# every timed scenario's calls (the docstring's last part).
PROBE_VARIABLE = "KERNELSEEK_HANDOVER_PROBE"
PROBE_TIMES = ("before", "in-turn")


def probe_time() -> str:
    """When the probe is timed, from ``KERNELSEEK_HANDOVER_PROBE`` ("before" when unset)."""
    chosen = os.environ.get(PROBE_VARIABLE, "before")
    if chosen not in PROBE_TIMES:
        choices = ", ".join(PROBE_TIMES)
        raise ValueError(f"{PROBE_VARIABLE} must be one of {choices}, not {chosen!r}")
    return chosen


# In-process and isolated, each this many times, alternating (A B B A). Measured once per kernel
# of an evaluation, so it must be short: on an H100 a process's medians stayed within 1 us of
# each other, round after round (benchmarks/handover_spread.py).
ROUNDS = 2
# Short runs: the empty call is a few microseconds; a few dozen samples a run.
EMPTY_TIMING = Timing(warmup_ms=1.0, rep_ms=5.0, min_reps=30, max_reps=60)


@dataclass(frozen=True, slots=True)
class HandoverCost:
    """The empty kernel's median per round, in microseconds, both ways."""

    in_process_us: list[float]
    isolated_us: list[float]

    @property
    def us(self) -> float:
        """The hand-over added to each isolated call (never negative)."""
        return max(0.0, statistics.median(self.isolated_us) - statistics.median(self.in_process_us))

    @property
    def floor_ms(self) -> float:
        """The least a call can take by this method: the empty kernel in-process."""
        return statistics.median(self.in_process_us) / 1000.0

    def message(self) -> dict[str, Any]:
        """The worker's line for the judge (``api`` keeps it in the result)."""
        return {
            "type": "handover",
            "us": round(self.us, 3),
            "in_process_us": [round(v, 3) for v in self.in_process_us],
            "isolated_us": [round(v, 3) for v in self.isolated_us],
        }


def measure_handover(time_us: Callable[[str], float], rounds: int = ROUNDS) -> HandoverCost:
    """``time_us(way)``: one timed run of the empty kernel, "in-process" or "isolated", its
    median in microseconds. The order alternates round by round, so a drift of the clocks
    falls on both ways alike."""
    medians: dict[str, list[float]] = {"in-process": [], "isolated": []}
    for r in range(rounds):
        order = ("in-process", "isolated") if r % 2 == 0 else ("isolated", "in-process")
        for way in order:
            medians[way].append(time_us(way))
    return HandoverCost(medians["in-process"], medians["isolated"])


def time_empty_kernel(
    cp: Any,
    stream: Any,
    kernels: Mapping[str, Any],
    timing: Timing = EMPTY_TIMING,
    rounds: int = ROUNDS,
) -> HandoverCost:
    """The judge's empty kernel, ``kernels["in-process"]`` loaded in this process and
    ``kernels["isolated"]`` in a process of its own, timed by the flushed method in turn
    (``measure_handover``), the isolated one behind a gate as the kernels are timed."""
    gates = {"in-process": None, "isolated": StreamGate(cp, stream)}
    spec = TensorSpec(name="x", dtype="float32", shape=("1",), role="output")
    tensor = allocate(cp, spec, (1,), shared=True)

    def time_us(way: str) -> float:
        launch = kernels[way].bind_tensors([tensor], [], [], stream.ptr)

        def call(_set: int) -> None:
            if launch() != 0:
                raise SandboxError("the judge's empty kernel failed to launch", "error")

        return time_calls(cp, stream, call, 1, timing, gate=gates[way]).median_ms * 1000.0

    gate = gates["isolated"]
    try:
        with stream:
            cost = measure_handover(time_us, rounds)
        held = gate is None or not gate.timed_out()
    except GateLetGo:
        held = False
    if not held:
        raise SandboxError(
            "the judge's gate let go by its limit while the hand-over was measured (the judge's "
            "empty kernel, before any kernel was loaded: the GPU was not the judge's alone)",
            "error",
        )
    return cost


def in_turn_cost(
    in_process: TimingStats, isolated: TimingStats, before: HandoverCost | None
) -> HandoverCost:
    """The hand-over from the empty kernel's samples timed in turn with a scenario's calls
    (in-process and in the kernel's process, one median each), never more than ``before``,
    the one measured in that process before its kernel was loaded. Why the cap: in turn, the
    probe runs in a process the kernel's code is in, and code that slowed the probe's calls
    would have more taken out of its own; it can then only make the figure taken out smaller,
    which reads itself slower."""
    in_turn = HandoverCost([in_process.median_ms * 1000.0], [isolated.median_ms * 1000.0])
    return before if before is not None and before.us < in_turn.us else in_turn


def net_of_handover(stats: TimingStats, cost: HandoverCost | None) -> TimingStats:
    """``stats`` of an isolated kernel's flushed calls, each sample less the hand-over (never
    below ``cost.floor_ms``); unchanged without a cost."""
    if cost is None:
        return stats
    less, floor = cost.us / 1000.0, cost.floor_ms
    samples = [max(floor, ms - less) for ms in stats.samples_ms]
    median = max(floor, stats.median_ms - less)
    return dataclasses.replace(stats, median_ms=median, samples_ms=samples)
