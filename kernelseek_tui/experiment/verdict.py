"""Whether two arms' sessions differ, said only when their number allows it.

The test is an exact two-sided rank test (Mann-Whitney U, every way of splitting the pooled
sessions into the two arms enumerated): it assumes nothing about how speedups are
distributed, which a handful of agent sessions cannot show. With n sessions per arm the
smallest p-value it can give is 2 / C(2n, n); below ``min_sessions_per_arm`` that is above the
level, so no verdict can come out of those sessions and we say how many it would take.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import median

LEVEL = 0.05
# Splits enumerated at most; beyond (about 10 sessions per arm) the normal approximation.
MAX_ENUMERATED = 200_000


@dataclass(frozen=True, slots=True)
class Verdict:
    """What can be said of arm ``a`` against arm ``b`` on one number."""

    a: str
    b: str
    metric: str
    n_a: int
    n_b: int
    p_value: float | None  # None: too few sessions for any verdict
    median_a: float
    median_b: float
    needed_per_arm: int

    def sentence(self) -> str:
        if self.p_value is None:
            return (
                f"no verdict on {self.metric}: {self.n_a} and {self.n_b} sessions cannot show a "
                f"difference (an exact rank test at {LEVEL:g} needs at least "
                f"{self.needed_per_arm} sessions per arm)"
            )
        if self.p_value < LEVEL:
            ordered = [(self.a, self.median_a), (self.b, self.median_b)]
            (higher, high), (lower, low) = sorted(ordered, key=lambda arm: -arm[1])
            return (
                f"{higher} reached a higher {self.metric} than {lower} (medians "
                f"{high:.3f} vs {low:.3f}; exact rank test p = "
                f"{self.p_value:.3g}, {self.n_a} and {self.n_b} sessions)"
            )
        return (
            f"no difference shown in {self.metric} between {self.a} and {self.b} (medians "
            f"{self.median_a:.3f} vs {self.median_b:.3f}; exact rank test p = "
            f"{self.p_value:.3g}, {self.n_a} and {self.n_b} sessions)"
        )


def min_sessions_per_arm(level: float = LEVEL) -> int:
    """The fewest sessions per arm for which the exact two-sided test can reach ``level``."""
    n = 1
    while 2 / math.comb(2 * n, n) > level:
        n += 1
    return n


def smallest_p(n_a: int, n_b: int) -> float:
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def rank_test_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value of the rank-sum difference between ``a`` and ``b``: exact, or the
    normal approximation past ``MAX_ENUMERATED`` splits."""
    pooled = a + b
    ranks = _ranks(pooled)
    n_a = len(a)
    observed = sum(ranks[:n_a])
    expected = n_a * (len(pooled) + 1) / 2
    distance = abs(observed - expected)
    splits = math.comb(len(pooled), n_a)
    if splits > MAX_ENUMERATED:
        n_b = len(b)
        spread = math.sqrt(n_a * n_b * (n_a + n_b + 1) / 12)
        return math.erfc(distance / spread / math.sqrt(2)) if spread else 1.0
    extreme = 0
    for chosen in itertools.combinations(range(len(pooled)), n_a):
        if abs(sum(ranks[i] for i in chosen) - expected) >= distance - 1e-9:
            extreme += 1
    return extreme / splits


def _ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for position in range(i, j + 1):
            ranks[order[position]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def verdict(a: str, values_a: list[float], b: str, values_b: list[float], metric: str) -> Verdict:
    """The verdict on ``metric`` of arm ``a`` against arm ``b`` (see the module docstring)."""
    needed = min_sessions_per_arm()
    p = None
    if values_a and values_b and smallest_p(len(values_a), len(values_b)) <= LEVEL:
        p = rank_test_p(values_a, values_b)
    return Verdict(
        a, b, metric, len(values_a), len(values_b), p,
        median(values_a) if values_a else math.nan,
        median(values_b) if values_b else math.nan,
        needed,
    )  # fmt: skip
