"""Where a scenario's wall time goes: the worker's phase clock (``Evaluation.switch``), which
fills ``ScenarioResult.phase_s``, on the CPU with a stand-in clock."""

from __future__ import annotations

import pytest

from kernelseek_tui.evaluate import worker


class StandInClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_phase_gets_the_time_until_the_next_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = StandInClock()
    monkeypatch.setattr(worker.time, "perf_counter", clock)
    # The clock alone, without a GPU: the Evaluation's set-up needs one.
    ev = worker.Evaluation.__new__(worker.Evaluation)
    ev.phase, ev.phase_s, ev._phase_began = "setup", {"setup": 9.0}, 0.0
    ev.begin_phases("start")  # a new scenario: nothing of the last one carried over
    clock.now += 0.25
    ev.switch("check")
    clock.now += 0.5
    ev.switch("reference")  # the reference built inside the check, then back
    clock.now += 1.0
    ev.switch("check")
    clock.now += 0.125
    ev.switch("time")
    clock.now += 2.0
    assert ev.phases_so_far() == {"start": 0.25, "check": 0.625, "reference": 1.0, "time": 2.0}
    assert ev.phase == "time"  # counting up to now does not end the running phase
    clock.now += 1.0
    assert ev.phases_so_far()["time"] == 3.0
