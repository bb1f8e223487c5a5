"""The starting kernel timed in turn with the candidate (``evaluate(start_in_turn=...)``,
``KERNELSEEK_BASELINE=in-turn``): the request pairs the starting kernel instead of timing it
first and each scenario's speedup comes from the paired run; beside a paired best so far it is
timed in turn too, the paired figure staying the best's; nothing changes without it. A
stand-in worker; CPU only (nvcc builds the kernels)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelseek_tui.evaluate import api, worker
from kernelseek_tui.evaluate.result import ScenarioResult
from kernelseek_tui.evaluate.timing import TimingStats
from tests.test_evaluate_cpu import (
    TASK_DIR,
    _scripted_worker,
    _source,
    needs_nvcc,
    private_cache,  # noqa: F401 (an autouse fixture: the build cache stays in tmp)
    task,  # noqa: F401 (the fixture)
)
from tests.test_paired_evaluation import WORKER  # logs its request; 2.0 ms, 2.1 paired, 4.0 first


def _best_so_far(tmp_path: Path) -> Path:
    """A best so far: the starting kernel with a change, in a file of its own."""
    best = tmp_path / "best.cu"
    best.write_text((TASK_DIR / "baseline.cu").read_text() + "\n// the best so far\n")
    return best


def _run(loaded, monkeypatch, tmp_path: Path, **kwargs):
    """One evaluation of a changed candidate on the quick set with the stand-in worker, and
    the request it received."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    _scripted_worker(monkeypatch, tmp_path, WORKER)
    log = tmp_path / "request.json"
    monkeypatch.setenv("KS_TEST_REQUEST_LOG", str(log))
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// a changed candidate\n")
    result = api.evaluate(loaded, source, sets=["quick"], **kwargs)
    return result, json.loads(log.read_text())


@needs_nvcc
def test_asked_the_starting_kernel_is_paired_and_the_speedups_come_from_its_run(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv(api.BASELINE_VARIABLE, raising=False)
    result, request = _run(task, monkeypatch, tmp_path, start_in_turn=True)
    assert request["baseline"] is None  # not timed first, alone
    assert request["paired"] and Path(request["paired"]).is_file()
    assert request["paired_as"] == "the starting kernel"
    timed = [s for s in result.scenarios if s.ms is not None and s.paired_ms]
    assert timed
    for scenario in timed:
        assert scenario.baseline_ms == 2.1
        assert scenario.speedup == pytest.approx(2.1 / 2.0)
    assert result.summary.geomean_speedup == pytest.approx(1.05)
    assert result.summary.baseline_timing == api.START_IN_TURN_NOTE


@needs_nvcc
def test_the_variable_asks_for_it_and_without_it_nothing_changes(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(api.BASELINE_VARIABLE, "in-turn")
    result, request = _run(task, monkeypatch, tmp_path / "on")
    assert request["baseline"] is None and request["paired_as"] == "the starting kernel"
    assert result.summary.baseline_timing == api.START_IN_TURN_NOTE

    monkeypatch.delenv(api.BASELINE_VARIABLE)
    result, request = _run(task, monkeypatch, tmp_path / "off")
    assert request["baseline"] and request["paired"] is None
    timed = [s for s in result.scenarios if s.ms is not None and s.baseline_ms]
    assert timed and all(s.speedup == pytest.approx(2.0) for s in timed)
    assert result.summary.baseline_timing != api.START_IN_TURN_NOTE


@needs_nvcc
def test_beside_a_paired_best_the_starting_kernel_is_timed_in_turn_too(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    best = _best_so_far(tmp_path)
    result, request = _run(
        task, monkeypatch, tmp_path, start_in_turn=True, pair_with=api.PairedKernel(best)
    )
    assert request["baseline"] is None and request["paired_as"] == "the best kernel"
    assert request["paired"] and request["start_in_turn"]
    assert Path(request["start_in_turn"]).is_file()
    assert request["paired"] != request["start_in_turn"]
    timed = [s for s in result.scenarios if s.ms is not None and s.paired_ms]
    assert timed
    for scenario in timed:
        assert scenario.start_ms == 2.2 and scenario.baseline_ms == 2.2
        assert scenario.speedup == pytest.approx(2.2 / 2.0)
    # The paired figure stays the best so far's (round ratios 1.04 and 1.06).
    assert result.summary.paired_speedup == pytest.approx(1.05, abs=0.01)
    assert result.summary.baseline_timing == api.START_IN_TURN_NOTE


@needs_nvcc
def test_a_best_that_does_not_build_leaves_the_start_beside_not_paired(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A caller reads the paired figure as over its best: the starting kernel must not stand in
    for a best that did not build."""
    best = tmp_path / "best.cu"
    best.write_text("this is not CUDA\n")
    result, request = _run(
        task, monkeypatch, tmp_path, start_in_turn=True, pair_with=api.PairedKernel(best)
    )
    assert request["paired"] is None and request["start_in_turn"]
    assert result.summary.paired_speedup is None
    timed = [s for s in result.scenarios if s.ms is not None and s.start_ms]
    assert timed and all(s.speedup == pytest.approx(1.1) for s in timed)


@needs_nvcc
def test_without_it_a_paired_best_keeps_the_starting_kernel_timed_first(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv(api.BASELINE_VARIABLE, raising=False)
    best = _best_so_far(tmp_path)
    result, request = _run(task, monkeypatch, tmp_path, pair_with=api.PairedKernel(best))
    assert request["baseline"] and request["start_in_turn"] is None
    timed = [s for s in result.scenarios if s.ms is not None and s.baseline_ms]
    assert timed and all(s.speedup == pytest.approx(2.0) for s in timed)


@needs_nvcc
def test_in_turn_the_stall_limits_still_find_the_starting_kernels_cached_times(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The key the request names for the cache of the starting kernel's times (read for the
    stall limits, api._StallWatch) is the starting kernel's whether it is timed first or in
    turn; before, in turn, it was the candidate's, and the limits fell back to the FLOPs."""
    _, first = _run(task, monkeypatch, tmp_path / "first", start_in_turn=False)
    _, in_turn = _run(task, monkeypatch, tmp_path / "in-turn", start_in_turn=True)
    assert first["baseline"] and in_turn["baseline"] is None
    assert in_turn["baseline_key"] == first["baseline_key"]


def test_the_variable_is_read_only_where_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(api.BASELINE_VARIABLE, "in-turn")
    assert api.wants_start_in_turn(None)
    assert not api.wants_start_in_turn(False)
    monkeypatch.setenv(api.BASELINE_VARIABLE, "first")
    assert not api.wants_start_in_turn(None)
    assert api.wants_start_in_turn(True)


def _stand_in_evaluation(paired: object | None, start: object | None, paired_as: str | None):
    return SimpleNamespace(
        paired=paired, start_beside=start, request={"paired_as": paired_as} if paired_as else {}
    )


def test_the_worker_times_the_best_then_the_starting_kernel_beside_the_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's side, on stand-ins: the companions' order (the round's turns), their names,
    their random streams kept apart, and which figure each one's timing fills."""
    made: list[dict] = []

    def paired_calls(ev, kernel, shapes, ints, floats, n_sets, scenario, who="", role="paired"):
        made.append({"kernel": kernel, "scenario": scenario, "who": who, "role": role})
        return SimpleNamespace(kernel=kernel, role=role)

    monkeypatch.setattr(worker, "_PairedCalls", paired_calls)
    best, start = object(), object()
    both = worker._companions(_stand_in_evaluation(best, start, None), {}, [], [], 1, "3:s")
    assert [c.kernel for c in both] == [best, start]
    assert [m["who"] for m in made] == ["the best kernel", "the starting kernel"]
    assert [m["scenario"] for m in made] == ["3:s", "3:s:start"]  # seeds of their own
    made.clear()
    alone = worker._companions(
        _stand_in_evaluation(start, None, "the starting kernel"), {}, [], [], 1, "3:s"
    )
    assert [c.role for c in alone] == ["paired"] and made[0]["who"] == "the starting kernel"
    assert worker._companions(_stand_in_evaluation(None, None, None), {}, [], [], 1, "x") == []

    result = ScenarioResult(name="s", set="quick", fields={})
    candidate = TimingStats(median_ms=2.0, samples_ms=[2.0, 2.0, 2.0], calls_per_sample=1)
    watch = SimpleNamespace(every_sample=[])
    best_figure = TimingStats(median_ms=2.1, samples_ms=[2.1, 2.2, 2.0], calls_per_sample=1)
    start_figure = TimingStats(median_ms=4.0, samples_ms=[4.0, 4.1, 3.9], calls_per_sample=1)
    worker._take_companion_figure(result, both[0], best_figure, candidate, watch)
    worker._take_companion_figure(result, both[1], start_figure, candidate, watch)
    assert result.paired_ms == 2.1 and result.start_ms == 4.0
    assert result.paired_ratios == pytest.approx([1.05, 1.1, 1.0])
