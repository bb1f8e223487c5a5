"""The paired speedup of a candidate over the best so far, and whether it is a step forward.

With ``pair_with`` the judge times the candidate and the best kernel interleaved, one sample of
each in turn (timing.time_interleaved), and records per timed scenario the ratio of each
round's two samples, best_ms / candidate_ms (above 1: the candidate is faster). Both samples
of a round ran next to each other, so what drifts between runs (clocks, temperature, another
process) moves both alike and leaves the ratio.

The statistic: per scenario, the mean of the log ratios, and its 95% half-width (Student's t
times the standard error of that mean); over scenarios, the mean of the means (the log of the
geomean speedup) and, the scenarios independent, the root sum of squares of their half-widths
over the number of scenarios. A standard error, not the p10-p90 spread that the unpaired noise
rule takes (noise.py): that rule's spread stands in for the drift between runs, which the
pairing removes; what is left is the scatter of independent rounds, whose effect on a mean
shrinks with their number. An outlying round widens the half-width, so it errs towards
refusing, never towards accepting. The spread reported is the half-width as a relative figure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Student's t at 0.975 by degrees of freedom, for the few rounds of a slow kernel; beyond the
# table it is rounded up to the value at the next tabulated step, so it never understates.
_T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
_T_975_STEPS = ((10, 2.23), (20, 2.21), (30, 2.09), (60, 2.04))
_T_975_LIMIT = 2.0

# A paired gain smaller than this is not a step forward even when it is measured to be real:
# half the fixed margin of the unpaired rule (decisions.new_best_margin), since pairing
# removes the drift that margin also had to cover.
PAIRED_FLOOR = 0.005


@dataclass(frozen=True, slots=True)
class PairedKernel:
    """A verified kernel to time interleaved with the candidate (the best so far): its source
    file and the knobs it was built with. Its outputs are not judged."""

    source: Path
    knobs: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class PairedSpeedup:
    speedup: float  # geomean over the timed scenarios of best_ms / candidate_ms
    spread: float  # relative 95% half-width of ``speedup`` (0.01: +-1%)
    scenarios: int  # how many scenarios the figure is over


def t_975(degrees_of_freedom: int) -> float:
    """Student's t at 0.975 for ``degrees_of_freedom`` (>= 1), rounded up between table rows."""
    if degrees_of_freedom in _T_975:
        return _T_975[degrees_of_freedom]
    for limit, value in _T_975_STEPS:
        if degrees_of_freedom <= limit:
            return value
    return _T_975_LIMIT


def scenario_log_ratio(ratios: Sequence[float]) -> tuple[float, float] | None:
    """The mean log ratio of one scenario's rounds and its 95% half-width; None with fewer
    than two usable rounds (no scatter to measure)."""
    logs = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    if len(logs) < 2:
        return None
    standard_error = statistics.stdev(logs) / math.sqrt(len(logs))
    return statistics.fmean(logs), t_975(len(logs) - 1) * standard_error


def paired_speedup(ratios_per_scenario: Sequence[Sequence[float]]) -> PairedSpeedup | None:
    """The paired speedup and its spread from each timed scenario's per-round ratios
    (best_ms / candidate_ms); None when no scenario has two usable rounds."""
    measured = [m for m in map(scenario_log_ratio, ratios_per_scenario) if m is not None]
    if not measured:
        return None
    count = len(measured)
    mean_log = sum(mean for mean, _ in measured) / count
    half_width = math.sqrt(sum(width * width for _, width in measured)) / count
    return PairedSpeedup(math.exp(mean_log), math.expm1(half_width), count)


def is_new_best_paired(speedup: float, spread: float, floor: float = PAIRED_FLOOR) -> bool:
    """Faster than the best so far by more than the paired figure's own spread, and by more
    than ``floor``: a gain the run cannot tell from its scatter is no step forward, however
    large it looks; one outside it is, however small (above the floor)."""
    if not (math.isfinite(speedup) and math.isfinite(spread)):
        return False
    return speedup > 1.0 + max(spread, floor, 0.0)


def summary_paired(summary: object) -> tuple[float, float] | None:
    """The paired speedup and spread an evaluation's summary recorded (as written to an eval
    event's attrs), or None where it recorded none or something unreadable."""
    if not isinstance(summary, dict):
        return None
    speedup, spread = summary.get("paired_speedup"), summary.get("paired_spread")
    figures = (speedup, spread)
    if all(isinstance(f, int | float) and math.isfinite(f) for f in figures):
        return float(speedup), float(spread)  # type: ignore[arg-type]
    return None
