"""What an evaluation returns: plain data, JSON round-trippable, no GPU imports.

The verdict is "pass" only when every scenario that ran passed; "fail" when the candidate was
judged and found wanting (wrong numbers, a forbidden include, a crash of the kernel); "error"
when the harness itself could not judge (no GPU, the reference failed, a timeout of the harness).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Verdict = Literal["pass", "fail", "error"]


@dataclass(slots=True)
class PeerTiming:
    """One comparator's time on one scenario, measured in the same process and run."""

    name: str
    ms: float | None = None
    tflops: float | None = None
    absent: str | None = None  # why there is no number (not importable, unsupported shape)
    notes: list[str] = field(default_factory=list)  # e.g. the peer's own output off tolerance


@dataclass(slots=True)
class ScenarioResult:
    """The judgement of one scenario."""

    name: str
    set: str
    fields: dict[str, Any]
    passed: bool | None = None  # None: not reached (an earlier fatal error)
    reasons: list[str] = field(default_factory=list)
    max_error: float | None = None
    tolerance: float | None = None
    output_errors: dict[str, float | None] = field(default_factory=dict)  # max |x - ref|
    ms: float | None = None
    tflops: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None  # baseline_ms / ms
    peers: dict[str, PeerTiming] = field(default_factory=dict)
    timing_notes: list[str] = field(default_factory=list)
    # (p90 - p10) / median of the candidate's timed calls in this run: how noisy ``ms`` is.
    spread: float | None = None
    samples: int | None = None  # how many timed samples of the candidate ``ms`` is the median of
    # The candidate's fastest timed sample over ``ms`` (the hand-over taken out of both): far
    # below 1 means a call that skipped its work; the task's `[timing] min_fastest` fails it
    # (worker.skipped_work; docs/RELIABILITY.md, "Skipped calls and the paired figure").
    fastest: float | None = None
    # The longest tail of the candidate's measured runs: how long the device stayed busy after
    # the stream's last work (evaluate/timing.py), and the limit it was held to (ms). Kept on
    # a pass too, so that a tail close to its limit shows before it fails anyone.
    tail_ms: float | None = None
    tail_limit_ms: float | None = None
    wall_s: float | None = None  # how long judging this scenario took, everything included
    # ``wall_s`` by phase ("start": its inputs made; "check", "time", "peers", "judge",
    # "reference": the fp32 reference, wherever built; "baseline": the starting kernel timed),
    # in seconds by the worker's clock: where a slow scenario spends its time.
    phase_s: dict[str, float] = field(default_factory=dict)
    # With pair_with (api.evaluate): the best-so-far kernel's time, timed interleaved with the
    # candidate's calls, and each round's best_ms / candidate_ms (evaluate/paired.py).
    paired_ms: float | None = None
    paired_ratios: list[float] = field(default_factory=list)
    # With the starting kernel timed in turn beside a best so far (api.evaluate's
    # start_in_turn with pair_with): its time, interleaved with the candidate's calls too.
    start_ms: float | None = None
    # With the probe timed in turn (KERNELSEEK_HANDOVER_PROBE=in-turn, evaluate/handover_cost.py):
    # the hand-over taken out of this scenario's figures, timed with its calls, in microseconds;
    # None where the one measured before the candidate's load was taken out.
    handover_us: float | None = None
    # Isolated: the median time a timed sample's gate held the GPU idle while the call was
    # handed over (evaluate/gate.py), in microseconds; None in-process. Beside ``ms``, how far
    # from back-to-back the timed calls ran (docs/BENCHMARKS.md, "The judge's clock against
    # fa_bench's").
    gate_hold_us: float | None = None
    # Where the task perturbs only some inputs: the median of the candidate's samples after
    # every input changed over the median of the others (evaluate/kept_work.py); near 1 for an
    # honest kernel, above it for one that keeps work across calls. None: not compared.
    every_input_ratio: float | None = None
    # The kernels CuPy compiled for the judge's own work on this scenario (its checks, the
    # reference, the inputs), counted as files its kernel cache gained: a first-use cost on a
    # machine whose cache lacked them (evaluate/compile_watch.py), not the candidate's.
    compiles: int = 0

    def ratio_to(self, peer: str) -> float | None:
        """How much faster than the peer (>1 is faster), or None without both numbers."""
        timing = self.peers.get(peer)
        if self.ms is None or timing is None or timing.ms is None or self.ms <= 0:
            return None
        return timing.ms / self.ms


@dataclass(slots=True)
class EvalSummary:
    passed: int = 0
    total: int = 0
    geomean_speedup: float | None = None
    geomean_tflops: float | None = None
    vs_peers: dict[str, float] = field(default_factory=dict)  # geomean of peer_ms / ms
    absent_peers: dict[str, str] = field(default_factory=dict)
    baseline_timing: str | None = None  # "same run", or where cached baseline times came from
    # Relative noise of geomean_speedup, from the scenarios' spreads (evaluate/noise.py).
    noise: float | None = None
    # With pair_with: the geomean of best_ms / candidate_ms over the timed scenarios, timed
    # interleaved in this run, and its relative 95% half-width (evaluate/paired.py).
    paired_speedup: float | None = None
    paired_spread: float | None = None
    # Of paired_spread, what the hand-overs' uncertainty adds (kernels in processes of their
    # own; None in the judge's process): the part more rounds cannot shrink.
    paired_handover: float | None = None

    @property
    def vs_fa3(self) -> float | None:
        return self.vs_peers.get("fa3")


@dataclass(slots=True)
class EvalResult:
    eval_id: str
    verdict: Verdict
    reasons: list[str] = field(default_factory=list)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    summary: EvalSummary = field(default_factory=EvalSummary)
    source_sha256: str | None = None
    task: str | None = None
    sets: list[str] = field(default_factory=list)
    seed: int | None = None
    device: dict[str, Any] = field(default_factory=dict)  # index, name, uuid
    build: dict[str, Any] = field(default_factory=dict)  # flags, cache hit, seconds
    # Where the kernels ran while judged: "in-process" (loaded into the judge's worker) or
    # "process" (each in a process of its own): a figure's method, recorded with it.
    isolation: str = "in-process"
    # With isolation "process", how each call was handed to a kernel's process: "fenced" (the
    # default), "counters" or "events" (evaluate/stream_counters.py); None in-process.
    handover: str | None = None
    # With isolation "process" and the flushed method, what the hand-over added to each of the
    # candidate's calls, in microseconds, measured with the judge's empty kernel in the
    # candidate's process before the candidate was loaded there; its figures (ms, TFLOP/s,
    # speedups) are net of it (evaluate/handover_cost.py). ``handovers_us``: the same for every
    # kernel of the evaluation ("the candidate", "the starting kernel", "the best kernel"),
    # each measured in its own process and taken out of its own figures.
    handover_us: float | None = None
    handovers_us: dict[str, float] = field(default_factory=dict)
    # When the probe was timed (KERNELSEEK_HANDOVER_PROBE): "before" the load (the figures
    # above taken out everywhere) or also "in-turn" with each timed scenario's calls (each
    # scenario's own ``handover_us`` taken out of its figures); None in-process.
    handover_probe_time: str | None = None
    # How far each of those figures can be from what a real call paid (the task's [timing]
    # handover_uncertainty_us): counted in the noise and the paired spread of the summary.
    handover_uncertainty_us: float | None = None
    # With isolation "process", the MPS server the processes shared the GPU through (or none,
    # and what that costs), and whether it was restarted after this evaluation.
    mps: str | None = None
    # With isolation "process", how the kernels' processes were confined (evaluate/
    # sandbox_confinement.h): "landlock abi 7: writes only under /dev ...", or "none: <why>"
    # where the machine's kernel could not (judged unconfined, unless
    # KERNELSEEK_REQUIRE_CONFINEMENT=1 refused); each kernel's named where they differ.
    confinement: str | None = None
    # Processes not ours on the GPU at the start or the end of a timed evaluation
    # (evaluate/gpu_sharing.py): [] checked and none; None not checked (no nvidia-smi, or one
    # that cannot see our own worker).
    other_gpu_processes: list[str] | None = None
    started_at: str | None = None
    duration_s: float | None = None
    # Where the wall time went: seconds from the start of the evaluation to each milestone
    # reached, in order (api.TIMELINE names them), so that a slow loop shows which part is slow.
    timeline: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def verified(self) -> bool:
        """Every scenario ran and passed: what earns a commit and counts towards the best.

        Stricter than ``passed``: a pass with no scenario, or with one that did not run, is
        not evidence the kernel is correct."""
        summary = self.summary
        return (
            self.verdict == "pass"
            and summary.total > 0
            and summary.passed == summary.total
            and all(s.passed is True for s in self.scenarios)
        )

    def to_dict(self) -> dict[str, Any]:
        return _finite(asdict(self))

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        scenarios = []
        for raw in data.get("scenarios", []):
            raw = dict(raw)
            raw["peers"] = {k: PeerTiming(**v) for k, v in raw.get("peers", {}).items()}
            scenarios.append(ScenarioResult(**raw))
        summary = EvalSummary(**data.get("summary", {}))
        rest = {k: v for k, v in data.items() if k not in ("scenarios", "summary")}
        return cls(scenarios=scenarios, summary=summary, **rest)

    @classmethod
    def from_json(cls, text: str) -> EvalResult:
        return cls.from_dict(json.loads(text))


def geomean(values: list[float]) -> float | None:
    """Geometric mean of positive values; None for an empty list."""
    positive = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))


def _finite(value: Any) -> Any:
    """JSON has no inf or NaN: write them as strings so the output stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
