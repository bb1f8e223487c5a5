"""benchmarks/clock_history.py's arithmetic (the GPU side ran on an H100, 2026-12-07): a probe's
clock from its cycles and time, and samples grouped by seconds since the load began."""

from __future__ import annotations

import pytest

from benchmarks.clock_history import PROBE_CYCLES, bucketed, mhz_of


def test_a_probe_of_200k_cycles_in_101_us_ran_at_1980_mhz() -> None:
    assert PROBE_CYCLES == 200_000
    assert mhz_of(200_000, 0.101) == pytest.approx(1980.2, abs=0.1)
    assert mhz_of(200_000, 0.128) == pytest.approx(1562.5)


def test_samples_are_grouped_by_when_they_ran_and_empty_buckets_left_out() -> None:
    rows = bucketed([0.01, 0.06, 0.07, 1.5, 20.0], [1.0, 2.0, 4.0, 8.0, 99.0])
    assert rows == [(0.0, 0.05, 1, 1.0), (0.05, 0.1, 2, 3.0), (1.0, 2.0, 1, 8.0)]
