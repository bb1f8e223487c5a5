"""The fastest timed sample over the median, recorded per scenario (evaluate/timing.py,
``TimingStats.fastest``), and the rule that fails a scenario where it falls far below 1
(worker.skipped_work, the task's ``[timing] min_fastest``)."""

from __future__ import annotations

import pytest

from kernelseek_tui.evaluate.handover_cost import HandoverCost, net_of_handover
from kernelseek_tui.evaluate.result import EvalResult, ScenarioResult
from kernelseek_tui.evaluate.timing import TimingStats
from kernelseek_tui.evaluate.worker import skipped_work
from kernelseek_tui.task import Timing


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


def scenario(ms: float, fastest: float) -> ScenarioResult:
    return ScenarioResult(name="s", set="bench", fields={}, passed=True, ms=ms, fastest=fastest)


def test_a_scenario_with_a_call_far_below_its_median_fails_with_what_it_took() -> None:
    rule = Timing(min_fastest=0.5)
    skipper = scenario(ms=0.5, fastest=0.007)
    assert skipped_work(skipper, rule) and not skipper.passed
    assert "a measured call took 0.007 of the median (3.5 us against 500.0 us" in skipper.reasons[0]
    # the figures of honest sm90.cu on an H100 (2026-12-07): 0.94 and up
    honest = scenario(ms=0.5, fastest=0.942)
    assert not skipped_work(honest, rule) and honest.passed and not honest.reasons


def test_the_rule_leaves_short_scenarios_and_tasks_without_it_alone() -> None:
    # Under 30 us the hand-over's jitter is a large part of every sample (honest: 0.76 at 7 us).
    assert not skipped_work(scenario(ms=0.007, fastest=0.3), Timing(min_fastest=0.5))
    assert not skipped_work(scenario(ms=0.5, fastest=0.007), Timing())
    assert not skipped_work(ScenarioResult(name="s", set="q", fields={}), Timing(min_fastest=0.5))


def test_flash_fwd_sets_the_rule() -> None:
    from pathlib import Path

    from kernelseek_tui.task import load_task

    timing = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd").timing
    assert timing.min_fastest == 0.5 and timing.fastest_floor_ms == 0.03
