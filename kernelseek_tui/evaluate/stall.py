"""How long the worker may stay silent before the judge names a hang.

One fixed limit had to cover the slowest thing the harness does (a cold start, the first peer
call), so a hung candidate cost minutes. The limit now follows the phase: where the candidate's
own code runs (its checked call, its timed calls) it is scaled from what the scenario should
take (the starting kernel's cached time per call, or failing that the scenario's FLOPs at a
rate no working kernel falls below), times a generous factor, with a floor; the harness's own
phases (buffers, the reference, peers, the starting kernel) keep the fixed ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelseek_tui.task import Timing

# The worker's phases in which the candidate's code runs; see worker.run_scenario.
CANDIDATE_PHASES = frozenset({"check", "time"})


@dataclass(frozen=True, slots=True)
class StallLimits:
    """The knobs of the rule. With the starting kernel's times cached, the defaults name a hang
    on the quick set within 10 s where it hangs in its checked call, 30 s in its timed calls."""

    ceiling_s: float = 180.0  # the harness's phases, and the most any phase gets
    floor_s: float = 10.0  # covers a cold CuPy kernel cache and a loaded host
    factor: float = 20.0  # a candidate this much slower than expected is as good as hung
    # A timed phase lasts its warm-up and measured time (the task's warmup_ms + rep_ms) plus
    # at most this many calls beyond it: the probe, the minimum warm-up and measured calls and
    # the cross-check come to under 30 with the task's 8 input sets (evaluate/timing.py).
    extra_calls: int = 30
    # Without a cached time: the scenario's FLOPs at this rate, a fifth of the slowest the
    # starting kernel reached on the H200 (22 TFLOP/s, docs/BENCHMARKS.md).
    slowest_tflops: float = 5.0


@dataclass(frozen=True, slots=True)
class PhaseLimit:
    seconds: float
    why: str  # where the number came from, for the reason a hang gets


def expected_call_ms(
    cached_ms: float | None, flops: float | None, limits: StallLimits
) -> tuple[float | None, str]:
    """What one call of the scenario should take, and where that figure comes from."""
    if cached_ms is not None and cached_ms > 0:
        return cached_ms, f"the starting kernel's {cached_ms:.3g} ms per call"
    if flops is not None and flops > 0:
        ms = flops / (limits.slowest_tflops * 1e12) * 1e3
        return ms, f"{ms:.3g} ms per call at {limits.slowest_tflops:g} TFLOP/s"
    return None, "no estimate of the scenario's time"


def phase_limit(
    phase: str,
    call_ms: float | None,
    basis: str,
    timing: Timing,
    limits: StallLimits,
) -> PhaseLimit:
    """The silence allowed in ``phase`` of a scenario whose call should take ``call_ms``."""
    if phase not in CANDIDATE_PHASES or call_ms is None:
        return PhaseLimit(limits.ceiling_s, "the harness's fixed limit")
    expected_s = call_ms / 1e3
    if phase == "time":
        expected_s = (timing.warmup_ms + timing.rep_ms) / 1e3 + limits.extra_calls * expected_s
    scaled = max(limits.floor_s, limits.factor * expected_s)
    seconds = min(limits.ceiling_s, scaled)
    why = f"{limits.factor:g}x the {expected_s:.3g} s expected from {basis}, at least "
    return PhaseLimit(seconds, why + f"{limits.floor_s:g} s")
