"""The benchmark table of one evaluation as plain rows: what the benchmark pane shows.

No Textual here: the rows, the summary over them and the sort are plain data so they can be
tested (and reused by a report) without a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kernelseek_tui.evaluate.result import EvalResult, ScenarioResult, geomean

_DIGITS: Final = re.compile(r"(\d+)")
PEER: Final = "fa3"  # the peer the table has columns for; the others show in the summary

# The columns one can sort by, in the order the pane cycles through them.
SORT_KEYS: Final[tuple[str, ...]] = (
    "scenario",
    "passed",
    "speedup",
    "ratio_fa3",
    "tflops",
    "fa3_tflops",
    "ms",
    "max_error",
)


@dataclass(frozen=True, slots=True)
class BenchmarkRow:
    """One scenario of an evaluation, the numbers the table shows."""

    scenario: str
    passed: bool | None  # None: not reached (an earlier fatal error)
    max_error: float | None
    tolerance: float | None
    ms: float | None
    tflops: float | None
    fa3_tflops: float | None
    ratio_fa3: float | None  # fa3 time / candidate time (> 1: faster than FA3)
    speedup: float | None  # baseline time / candidate time
    reasons: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Judged and found wanting (a scenario not reached is not a failure of its own)."""
        return self.passed is False

    @classmethod
    def from_scenario(cls, scenario: ScenarioResult, peer: str = PEER) -> BenchmarkRow:
        timing = scenario.peers.get(peer)
        return cls(
            scenario=scenario.name,
            passed=scenario.passed,
            max_error=scenario.max_error,
            tolerance=scenario.tolerance,
            ms=scenario.ms,
            tflops=scenario.tflops,
            fa3_tflops=timing.tflops if timing is not None else None,
            ratio_fa3=scenario.ratio_to(peer),
            speedup=scenario.speedup,
            reasons=tuple(scenario.reasons),
        )


@dataclass(frozen=True, slots=True)
class BenchmarkSummary:
    """The line above the table: how many passed and the geomeans."""

    verdict: str
    passed: int
    total: int
    geomean_speedup: float | None
    geomean_tflops: float | None
    vs_peers: dict[str, float] = field(default_factory=dict)  # geomean of peer ms / ms
    absent_peers: dict[str, str] = field(default_factory=dict)  # peer -> why no number
    reasons: tuple[str, ...] = ()  # the evaluation's own reasons (a build error, ...)
    # What makes its figures less sure without failing it: the GPU shared with others.
    warnings: tuple[str, ...] = ()

    @property
    def vs_fa3(self) -> float | None:
        return self.vs_peers.get(PEER)

    @classmethod
    def from_result(cls, result: EvalResult) -> BenchmarkSummary:
        """The evaluation's own summary; recomputed from its scenarios if it has none."""
        s = result.summary
        if s.total or not result.scenarios:
            return cls(
                verdict=result.verdict,
                passed=s.passed,
                total=s.total,
                geomean_speedup=s.geomean_speedup,
                geomean_tflops=s.geomean_tflops,
                vs_peers=dict(s.vs_peers),
                absent_peers=dict(s.absent_peers),
                reasons=tuple(result.reasons),
                warnings=_warnings(result),
            )
        # An older or hand-written result without a summary: the same numbers from the rows.
        scenarios = result.scenarios
        peers = sorted({name for sc in scenarios for name in sc.peers})
        vs_peers: dict[str, float] = {}
        absent: dict[str, str] = {}
        for peer in peers:
            value = geomean([r for sc in scenarios if (r := sc.ratio_to(peer)) is not None])
            if value is not None:
                vs_peers[peer] = value
            else:
                whys = [t.absent for sc in scenarios if (t := sc.peers.get(peer)) and t.absent]
                absent[peer] = whys[0] if whys else "no timing"
        return cls(
            verdict=result.verdict,
            passed=sum(1 for sc in scenarios if sc.passed),
            total=len(scenarios),
            geomean_speedup=geomean([v for sc in scenarios if (v := sc.speedup) is not None]),
            geomean_tflops=geomean([v for sc in scenarios if (v := sc.tflops) is not None]),
            vs_peers=vs_peers,
            absent_peers=absent,
            reasons=tuple(result.reasons),
            warnings=_warnings(result),
        )

    def line(self) -> str:
        """One line of text: ``3/4 passed  speedup 1.234x  412.0 TFLOP/s  vs fa3 0.91x``."""
        parts = [
            f"{self.verdict} {self.passed}/{self.total} passed",
            f"speedup {fmt(self.geomean_speedup, '.3f')}x",
            f"{fmt(self.geomean_tflops, '.1f')} TFLOP/s",
        ]
        parts += [f"vs {name} {value:.2f}x" for name, value in sorted(self.vs_peers.items())]
        parts += [f"{name} absent ({why})" for name, why in sorted(self.absent_peers.items())]
        return "  ".join(parts)


def _warnings(result: EvalResult) -> tuple[str, ...]:
    if not result.other_gpu_processes:
        return ()
    return ("GPU shared with " + ", ".join(result.other_gpu_processes) + ": times may be slow",)


def rows_of(result: EvalResult, peer: str = PEER) -> list[BenchmarkRow]:
    """One row per scenario, in the evaluation's order."""
    return [BenchmarkRow.from_scenario(scenario, peer) for scenario in result.scenarios]


def summary_of(result: EvalResult) -> BenchmarkSummary:
    """The summary above the table (see ``BenchmarkSummary.from_result``)."""
    return BenchmarkSummary.from_result(result)


def sort_rows(
    rows: Sequence[BenchmarkRow], key: str | None, descending: bool = False
) -> list[BenchmarkRow]:
    """Rows sorted by the column ``key`` (a ``SORT_KEYS`` name), None values last either way.

    ``key=None`` keeps the evaluation's order (reversed when ``descending``). The sort is
    stable, so equal values keep the evaluation's order.
    """
    if key is None:
        return list(reversed(rows)) if descending else list(rows)
    if key not in SORT_KEYS:
        raise ValueError(f"no column {key!r} to sort by; choose from {', '.join(SORT_KEYS)}")
    present = [row for row in rows if getattr(row, key) is not None]
    missing = [row for row in rows if getattr(row, key) is None]
    present.sort(key=lambda row: _sortable(getattr(row, key)), reverse=descending)
    return present + missing


def fmt(value: float | None, spec: str) -> str:
    """A number in ``spec``, or ``-`` when there is none."""
    return "-" if value is None else format(value, spec)


def _sortable(value: Any) -> Any:
    # bool sorts as int (False < True); strings case-insensitively so "B" sits with "b", and
    # by the value of their numbers, so s2048 comes before s16384 (not after, as text would).
    if isinstance(value, str):
        return natural_key(value)
    return value


def natural_key(text: str) -> tuple[tuple[int, str | int], ...]:
    """A sort key that orders the numbers inside ``text`` by value: ``s2048`` < ``s16384``."""
    return tuple(
        (1, int(part)) if part.isdigit() else (0, part.casefold())
        for part in _DIGITS.split(text)
        if part
    )
