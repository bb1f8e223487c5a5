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
