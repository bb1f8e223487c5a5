"""The hand-over taken out of isolated figures (kernelseek_tui/evaluate/handover_cost.py), on
numbers: measured in alternating order, never negative, and subtracted from every sample of an
isolated kernel, never below the empty kernel's own in-process time."""

from __future__ import annotations

from kernelseek_tui.evaluate.handover_cost import HandoverCost, measure_handover, net_of_handover
from kernelseek_tui.evaluate.timing import TimingStats


def test_the_two_ways_are_timed_in_alternating_order() -> None:
    order: list[str] = []
    figures = {"in-process": iter([4.0, 4.2, 3.8, 4.1]), "isolated": iter([9.6, 9.8, 9.5, 9.7])}

    def time_us(way: str) -> float:
        order.append(way)
        return next(figures[way])

    cost = measure_handover(time_us, rounds=4)
    assert order == ["in-process", "isolated", "isolated", "in-process"] * 2
    assert cost.in_process_us == [4.0, 4.2, 3.8, 4.1]
    # The difference of the medians: 9.65 - 4.05.
    assert abs(cost.us - 5.6) < 1e-9
    assert abs(cost.floor_ms - 0.00405) < 1e-12
    assert cost.message() == {
        "type": "handover",
        "us": 5.6,
        "in_process_us": [4.0, 4.2, 3.8, 4.1],
        "isolated_us": [9.6, 9.8, 9.5, 9.7],
    }


def test_a_hand_over_is_never_negative() -> None:
    assert HandoverCost([5.0, 5.0], [4.0, 4.5]).us == 0.0


def test_every_sample_is_net_of_the_hand_over_and_its_checks_are_kept() -> None:
    cost = HandoverCost([4.0], [10.0])  # 6 us
    stats = TimingStats(
        median_ms=0.200,
        samples_ms=[0.198, 0.200, 0.205],
        hidden_by_cross_check=True,
        max_tail_ms=0.07,
        tail_limit_ms=1.0,
    )
    net = net_of_handover(stats, cost)
    assert abs(net.median_ms - 0.194) < 1e-12
    assert [round(v, 6) for v in net.samples_ms] == [0.192, 0.194, 0.199]
    # What the run's own checks saw stays as they saw it.
    assert net.hidden_by_cross_check and net.max_tail_ms == 0.07 and net.tail_limit_ms == 1.0
    assert stats.median_ms == 0.200  # the raw figures are not changed in place
    assert net_of_handover(stats, None) is stats


def test_no_call_is_made_faster_than_the_empty_kernel_in_process() -> None:
    cost = HandoverCost([4.0], [10.0])
    net = net_of_handover(TimingStats(median_ms=0.007, samples_ms=[0.005, 0.007, 0.009]), cost)
    assert net.samples_ms == [0.004, 0.004, 0.004]
    assert net.median_ms == 0.004
