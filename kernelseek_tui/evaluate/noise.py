"""How noisy an evaluation's geomean speedup is, from the spread of its own timed calls.

Each timed scenario reports its spread: (p90 - p10) / median of the candidate's calls in that
run. Taken as the relative uncertainty of the scenario's figure (on purpose more than the
uncertainty of a median of many calls: it stands in for the drift between runs that one run
cannot see), and the scenarios as independent, the geomean's relative uncertainty is the root
sum of squares of the spreads over the number of scenarios.
"""

from __future__ import annotations

import math


def geomean_noise(spreads: list[float | None]) -> float | None:
    """The relative noise of a geomean over scenarios with these spreads; None without any."""
    measured = [s for s in spreads if s is not None and math.isfinite(s) and s >= 0]
    if not measured:
        return None
    return math.sqrt(sum(s * s for s in measured)) / len(measured)


def combined_noise(*noises: float | None) -> float | None:
    """Two independent figures' noise on their ratio (root sum of squares); None without any."""
    measured = [n for n in noises if n is not None and math.isfinite(n) and n >= 0]
    if not measured:
        return None
    return math.sqrt(sum(n * n for n in measured))


def is_new_best(
    speedup: float | None,
    previous_best: float | None,
    margin: float,
    *,
    noise: float | None = None,
    previous_noise: float | None = None,
) -> bool:
    """Faster than the starting kernel (1.0x by definition) and every verified evaluation
    before, by more than the timing noise: the noise measured in this run and in the best's
    (each geomean's spread, combined), or ``margin`` where neither measured any (a stand-in
    evaluator, a result from before spreads were recorded). A gain inside the noise is no step
    forward, however large the noise; one outside it is, however small."""
    floor = max(1.0, previous_best or 0.0) * (1.0 + gain_threshold(noise, previous_noise, margin))
    return speedup is not None and speedup > floor


def summary_noise(summary: object) -> float | None:
    """The noise an evaluation's summary recorded (``summary["noise"]`` as written to an eval
    event's attrs), or None where it recorded none or something unreadable."""
    noise = summary.get("noise") if isinstance(summary, dict) else None
    if isinstance(noise, int | float) and math.isfinite(noise):
        return float(noise)
    return None


def gain_threshold(noise: float | None, previous_noise: float | None, margin: float) -> float:
    """The relative gain a figure must show over another to count as a step forward: both
    figures' measured noise combined, or ``margin`` where neither measured any."""
    measured = combined_noise(noise, previous_noise)
    return measured if measured is not None else margin
