"""The fastest timed sample over the median, recorded per scenario (evaluate/timing.py,
``TimingStats.fastest``): the figure a rule against skipped calls would read."""

from __future__ import annotations

import pytest

from kernelseek_tui.evaluate.handover_cost import HandoverCost, net_of_handover
from kernelseek_tui.evaluate.result import EvalResult, ScenarioResult
from kernelseek_tui.evaluate.timing import TimingStats


def test_a_skipped_call_reads_far_below_the_median_and_honest_calls_near_it() -> None:
    honest = TimingStats(median_ms=1.0, samples_ms=[0.98, 1.0, 1.01, 1.03])
    skipping = TimingStats(median_ms=1.0, samples_ms=[0.98, 1.0, 0.004, 1.03])
    assert honest.fastest == pytest.approx(0.98)
    assert skipping.fastest == pytest.approx(0.004)
    assert TimingStats(median_ms=1.0).fastest is None


def test_it_is_read_after_the_hand_over_is_taken_out() -> None:
    # A skipped call in a process of its own costs its hand-over alone: net, the floor.
    gross = TimingStats(median_ms=1.01, samples_ms=[1.0, 1.01, 1.02, 0.011])
    cost = HandoverCost(in_process_us=[4.0, 4.0], isolated_us=[14.0, 14.0])  # 10 us
    net = net_of_handover(gross, cost)
    assert net.median_ms == pytest.approx(1.0)
    assert net.fastest == pytest.approx(cost.floor_ms / 1.0)
    assert net.fastest < 0.01


def test_it_survives_the_results_json() -> None:
    scenario = ScenarioResult(name="s", set="bench", fields={}, fastest=0.97)
    result = EvalResult.from_json(
        EvalResult(eval_id="e", verdict="pass", scenarios=[scenario]).to_json()
    )
    assert result.scenarios[0].fastest == 0.97
