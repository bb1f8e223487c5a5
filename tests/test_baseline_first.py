"""The starting kernel is timed on every timed scenario before the candidate makes a single
call (worker._time_baselines_first): timed after each scenario's candidate, it came after
seconds of the candidate's work, and a card left hot runs the next kernel at a lower clock
(docs/RELIABILITY.md, "Heat before the starting kernel"). The order only, on stand-ins; the
timing itself runs on the GPU box."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate import worker
from kernelseek_tui.evaluate.compile_watch import CompileWatch
from kernelseek_tui.evaluate.result import ScenarioResult

SCENARIOS = [
    {"name": "a", "set": "quick", "fields": {}, "timed": True},
    {"name": "untimed", "set": "quick", "fields": {}, "timed": False},
    {"name": "b", "set": "quick", "fields": {}, "timed": True},
    {"name": "fails", "set": "quick", "fields": {}, "timed": True},
]


def run(monkeypatch: pytest.MonkeyPatch, **request: Any) -> tuple[list[str], list[dict]]:
    order: list[str] = []
    emitted: list[dict] = []

    def time_baseline(ev: Any, scenario: dict, index: int) -> float:
        order.append(f"baseline {scenario['name']}")
        return 2.0 + index

    def run_scenario(ev: Any, scenario: dict, index: int) -> ScenarioResult:
        order.append(f"candidate {scenario['name']}")
        result = ScenarioResult(name=scenario["name"], set=scenario["set"], fields={})
        result.passed = scenario["name"] != "fails"
        result.ms = 1.0 if scenario["timed"] and result.passed else None
        return result

    monkeypatch.setattr(worker, "_time_baseline", time_baseline)
    monkeypatch.setattr(worker, "run_scenario", run_scenario)
    pool = SimpleNamespace(free_all_blocks=lambda: None)
    ev = SimpleNamespace(
        baseline=object(),
        baseline_cache=None,
        cp=SimpleNamespace(get_default_memory_pool=lambda: pool),
        release_shared=lambda: None,
        begin_phases=lambda phase: None,
        phases_so_far=lambda: {},
        compiles=CompileWatch(None),
    )
    worker._evaluate_scenarios(ev, {"scenarios": SCENARIOS, **request}, emitted.append)  # type: ignore[arg-type]
    return order, emitted


def test_every_timed_scenarios_starting_kernel_is_timed_before_the_candidates_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order, emitted = run(monkeypatch)
    assert order == [
        "baseline a",
        "baseline b",
        "baseline fails",
        "candidate a",
        "candidate untimed",
        "candidate b",
        "candidate fails",
    ]
    baselines = {m["result"]["name"]: m["baseline_ms"] for m in emitted if m["type"] == "scenario"}
    # Each time goes with its own scenario; none where the candidate was not timed.
    assert baselines == {"a": 2.0, "untimed": None, "b": 4.0, "fails": None}
    assert emitted[-1] == {"type": "done"}


def test_a_candidate_that_is_its_own_starting_kernel_times_nothing_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order, emitted = run(monkeypatch, baseline_is_candidate=True)
    assert not [step for step in order if step.startswith("baseline")]
    assert {m["result"]["name"]: m["baseline_ms"] for m in emitted if m["type"] == "scenario"}[
        "a"
    ] == 1.0
