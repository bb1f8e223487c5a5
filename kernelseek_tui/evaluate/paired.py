"""The paired speedup of a candidate over the best so far, and whether it is a step forward.

With ``pair_with`` the judge times the candidate and the best kernel interleaved, one sample of
each in turn (timing.time_interleaved), and records per timed scenario the ratio of each
round's two samples, best_ms / candidate_ms (above 1: the candidate is faster). Both samples
of a round ran next to each other, so what drifts between runs (clocks, temperature, another
process) moves both alike and leaves the ratio.

The statistic: per scenario, the median of the log ratios, and its 95% half-width (Student's t
times the standard error of that median, taken as 1.2533 times the standard error of a mean,
its value for normal scatter); over scenarios, the mean of the medians (the log of the geomean
speedup) and, the scenarios independent, the root sum of squares of their half-widths over the
number of scenarios. A standard error, not the p10-p90 spread that the unpaired noise rule
takes (noise.py): that rule's spread stands in for the drift between runs, which the pairing
removes; what is left is the scatter of independent rounds, whose effect shrinks with their
number. The spread reported is the half-width as a relative figure.

Why the median, not the mean (until 2026-12-07 the mean): a call that does no work reads as a
round of ratio hundreds (a 1 ms kernel against the hand-over's floor of a few microseconds, a
log ratio of about 5.5), so a candidate that skipped one measured call in a hundred moved a
scenario's mean log ratio by about 5%, more than the one outlier widened its half-width: a
review simulated it with this module's own functions and found 38 of 40 such runs new bests at
1.053x against an identical best, 25 of them with the randomly judged call missing every skip
(tests/test_paired_speedup.py has the case). The unpaired figures were medians already. The
median moves by a fraction of the rounds' scatter however large the outliers; the standard
deviation in the half-width still takes them in full, so an outlying round widens the
half-width, erring towards refusing. On the recorded H100 tuner sessions (the tests' fixture)
the median and the mean took the same decisions.

Kernels timed in processes of their own add an error the rounds cannot show: each process's
hand-over is measured once and taken out of all its calls, and that figure is off by up to a few
microseconds for a real kernel's call, the same way on every call of the process (measured on an
H100, 2026-12-06: one code in two processes of one run read 9.7 and 7.4 us on a 9 us scenario;
docs/RELIABILITY.md, "Paired timing and the hand-over"). On a 9 us scenario that is a quarter of
the ratio; on a 1 ms one, well under a new best's 0.5% floor. So each scenario carries a
hand-over term, the uncertainty in microseconds over each kernel's time (``handover_terms``),
and the mean is weighted by 1 / (term^2 + WEIGHT_FLOOR^2): scenarios the hand-over blurs by less
than about 2% count nearly alike, as the objective counts them (in one process every term is 0
and the mean is the plain one); those it blurs more count less, a 9 us one a thousandth as much.
Measured on three H100 tuner sessions (2026-12-06, docs/BENCHMARKS.md "Paired timing and the
hand-over"): a floor of 0.5% gave the longest scenario a quarter of the weight and once missed
the persistent grid (the change that gains on most scenarios); 2% leaves the 0.25-1.5 ms
scenarios within a factor of two of each other and took it in all three. The term is one error
for all of a process's calls, not a scatter that averages out, so it enters the spread as the
weighted mean of the terms, added to the rounds' half-width.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Student's t at 0.975 by degrees of freedom, for the few rounds of a slow kernel; beyond the
# table it is rounded up to the value at the next tabulated step, so it never understates.
_T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
_T_975_STEPS = ((10, 2.23), (20, 2.21), (30, 2.09), (60, 2.04))
_T_975_LIMIT = 2.0

# A paired gain smaller than this is not a step forward even when it is measured to be real:
# half the fixed margin of the unpaired rule (decisions.new_best_margin), since pairing
# removes the drift that margin also had to cover.
PAIRED_FLOOR = 0.005

# A scenario whose hand-over term is below this counts nearly fully in the paired mean; one
# above it counts as 1 / term^2 (the module's docstring).
WEIGHT_FLOOR = 0.02


@dataclass(frozen=True, slots=True)
class PairedKernel:
    """A verified kernel to time interleaved with the candidate (the best so far): its source
    file and the knobs it was built with. Its outputs are not judged."""

    source: Path
    knobs: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class PairedSpeedup:
    # geomean over the timed scenarios of best_ms / candidate_ms, weighted by precision (plain
    # where no hand-over blurs a scenario)
    speedup: float
    spread: float  # relative 95% half-width of ``speedup`` (0.01: +-1%), hand-over's part included
    scenarios: int  # how many scenarios the figure is over
    handover_part: float = 0.0  # of ``spread``, what the hand-over's uncertainty adds


def t_975(degrees_of_freedom: int) -> float:
    """Student's t at 0.975 for ``degrees_of_freedom`` (>= 1), rounded up between table rows."""
    if degrees_of_freedom in _T_975:
        return _T_975[degrees_of_freedom]
    for limit, value in _T_975_STEPS:
        if degrees_of_freedom <= limit:
            return value
    return _T_975_LIMIT


# The standard error of a median over that of a mean, for normal scatter: sqrt(pi / 2).
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)


def scenario_log_ratio(ratios: Sequence[float]) -> tuple[float, float] | None:
    """The median log ratio of one scenario's rounds and its 95% half-width; None with fewer
    than two usable rounds (no scatter to measure)."""
    logs = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    if len(logs) < 2:
        return None
    standard_error = _MEDIAN_EFFICIENCY * statistics.stdev(logs) / math.sqrt(len(logs))
    return statistics.median(logs), t_975(len(logs) - 1) * standard_error


def paired_speedup(
    ratios_per_scenario: Sequence[Sequence[float]],
    handover_terms: Sequence[float] | None = None,
    weight_floor: float = WEIGHT_FLOOR,
) -> PairedSpeedup | None:
    """The paired speedup and its spread from each timed scenario's per-round ratios
    (best_ms / candidate_ms); None when no scenario has two usable rounds.

    ``handover_terms`` (one per scenario, as given; None: all 0): the relative error the
    hand-over's correction can put in that scenario's ratio (the module's docstring)."""
    terms = list(handover_terms) if handover_terms is not None else [0.0] * len(ratios_per_scenario)
    if len(terms) != len(ratios_per_scenario):
        raise ValueError("one hand-over term per scenario")
    # A scenario whose term cannot be known (a time missing) cannot be weighed: left out.
    measured = [
        (m, max(0.0, term))
        for m, term in zip(map(scenario_log_ratio, ratios_per_scenario), terms, strict=True)
        if m is not None and math.isfinite(term)
    ]
    if not measured:
        return None
    weights = [1.0 / (term * term + weight_floor * weight_floor) for _, term in measured]
    total = sum(weights)
    mean_log = sum(w * mean for w, ((mean, _), _) in zip(weights, measured, strict=True)) / total
    rounds = math.sqrt(
        sum((w * width) ** 2 for w, ((_, width), _) in zip(weights, measured, strict=True))
    )
    handover = sum(w * term for w, (_, term) in zip(weights, measured, strict=True)) / total
    half_width = rounds / total + handover
    return PairedSpeedup(
        math.exp(mean_log), math.expm1(half_width), len(measured), math.expm1(handover)
    )


def handover_term(uncertainty_us: float | None, *kernel_ms: float | None) -> float:
    """The relative error that hand-overs known to ``uncertainty_us`` can put in a ratio of
    kernels taking ``kernel_ms`` each: the sum of the uncertainty over each time (0 without an
    uncertainty: kernels timed in the judge's own process). A time that is missing or not
    positive cannot be corrected for: infinite."""
    if not uncertainty_us:
        return 0.0
    if any(ms is None or not ms > 0 for ms in kernel_ms):
        return math.inf
    return sum(uncertainty_us / (ms * 1000.0) for ms in kernel_ms if ms)


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


def eval_paired_new_best(attrs: Mapping[str, Any]) -> bool | None:
    """An eval event's new-best verdict (from its parsed attrs) where the engine judged it
    paired with the best so far (its summary carries a paired figure), else None: there the
    reader's own unpaired rule decides, as the engine's did."""
    new_best = attrs.get("new_best")
    if summary_paired(attrs.get("summary")) is None or not isinstance(new_best, bool):
        return None
    # Since 2026-12-07 late the engine says whether it judged paired: a paired figure over the
    # starting kernel (timed in turn, nothing else paired) is no verdict over the best.
    if attrs.get("judged_paired") is False:
        return None
    return new_best
