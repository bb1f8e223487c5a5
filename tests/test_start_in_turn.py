"""The starting kernel timed in turn with the candidate (``evaluate(start_in_turn=...)``,
``KERNELSEEK_BASELINE=in-turn``): the request pairs the starting kernel instead of timing it
first, each scenario's speedup comes from the paired run, and nothing changes without it or
where a best so far is already paired. A stand-in worker; CPU only (nvcc builds the kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelseek_tui.evaluate import api
from tests.test_evaluate_cpu import (
    TASK_DIR,
    _scripted_worker,
    _source,
    needs_nvcc,
    private_cache,  # noqa: F401 (an autouse fixture: the build cache stays in tmp)
    task,  # noqa: F401 (the fixture)
)
from tests.test_paired_evaluation import WORKER  # logs its request; 2.0 ms, 2.1 paired, 4.0 first


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
def test_a_best_so_far_already_paired_keeps_the_starting_kernel_timed_first(
    task,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    best = tmp_path / "best.cu"
    best.write_text((TASK_DIR / "baseline.cu").read_text() + "\n// the best so far\n")
    result, request = _run(
        task, monkeypatch, tmp_path, start_in_turn=True, pair_with=api.PairedKernel(best)
    )
    assert request["baseline"] and request["paired_as"] == "the best kernel"
    timed = [s for s in result.scenarios if s.ms is not None and s.baseline_ms]
    assert timed and all(s.speedup == pytest.approx(2.0) for s in timed)


def test_the_variable_is_read_only_where_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(api.BASELINE_VARIABLE, "in-turn")
    assert api.wants_start_in_turn(None)
    assert not api.wants_start_in_turn(False)
    monkeypatch.setenv(api.BASELINE_VARIABLE, "first")
    assert not api.wants_start_in_turn(None)
    assert api.wants_start_in_turn(True)
