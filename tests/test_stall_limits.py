"""The stall limit follows the phase: scaled from the scenario where the candidate's code runs,
the fixed ceiling for the harness's own work. Pure rules first, then stand-in workers that hang
or go quiet (no GPU: a scripted process speaks the worker's protocol)."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from kernelseek_tui.evaluate import api
from kernelseek_tui.evaluate.stall import StallLimits, expected_call_ms, phase_limit
from kernelseek_tui.task import Timing, load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


# -- the rule -------------------------------------------------------------------------------


def test_a_candidate_phase_is_scaled_from_the_starting_kernels_time() -> None:
    limits = StallLimits(ceiling_s=180, floor_s=2, factor=20, extra_calls=100)
    timing = Timing(warmup_ms=25, rep_ms=100)
    call_ms, basis = expected_call_ms(40.0, 1e12, limits)
    assert call_ms == 40.0 and "starting kernel's 40 ms" in basis
    # One checked call: 20 x 40 ms = 0.8 s, under the floor.
    assert phase_limit("check", call_ms, basis, timing, limits).seconds == 2
    # Timed calls: 20 x (0.125 s + 100 x 40 ms) = 82.5 s.
    timed = phase_limit("time", call_ms, basis, timing, limits)
    assert timed.seconds == pytest.approx(82.5)
    assert "20x the 4.12 s expected from the starting kernel's 40 ms per call" in timed.why


def test_the_harness_phases_and_an_unknown_scenario_keep_the_ceiling() -> None:
    limits = StallLimits(ceiling_s=180)
    for phase in ("setup", "start", "judge", "peers", "baseline"):
        assert phase_limit(phase, 0.01, "x", Timing(), limits).seconds == 180
    call_ms, basis = expected_call_ms(None, None, limits)
    assert call_ms is None
    assert phase_limit("time", call_ms, basis, Timing(), limits).seconds == 180


def test_no_phase_gets_more_than_the_ceiling() -> None:
    limits = StallLimits(ceiling_s=60, floor_s=10, factor=20)
    assert phase_limit("time", 1000.0, "slow", Timing(), limits).seconds == 60


def test_without_a_cached_time_the_flops_give_the_estimate() -> None:
    limits = StallLimits(slowest_tflops=5.0)
    call_ms, basis = expected_call_ms(None, 1e10, limits)
    assert call_ms == pytest.approx(2.0) and "at 5 TFLOP/s" in basis


def test_every_quick_scenario_names_a_hang_within_30_seconds(task) -> None:
    from kernelseek_tui.evaluate.comparators import load_module

    flops = getattr(load_module(task.reference_module, "flops_under_test"), task.flops_function)
    limits = StallLimits()
    worst = {"check": 0.0, "time": 0.0}
    for scenario in task.scenarios("quick"):
        # The cache as the starting kernel fills it: 24 TFLOP/s, its geomean on the H200.
        cached_ms = flops(scenario.fields) / 24e12 * 1e3
        call_ms, basis = expected_call_ms(cached_ms, None, limits)
        for phase in worst:
            limit = phase_limit(phase, call_ms, basis, task.timing, limits).seconds
            worst[phase] = max(worst[phase], limit)
    assert worst["check"] == limits.floor_s == 10
    assert limits.floor_s < worst["time"] <= 30


# -- stand-in workers -----------------------------------------------------------------------

# The stand-in writes the starting kernel's time of the first scenario into the cache, as a
# real worker does after timing it, then speaks the protocol.
PREAMBLE = """
import json, os, sys, time
from pathlib import Path
from kernelseek_tui.evaluate.baseline_cache import BaselineCache, timing_tag
from kernelseek_tui.task import load_task
req = json.loads(sys.stdin.read())
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
device = {"name": "stand-in", "index": "0", "uuid": "GPU-standin"}
cache = BaselineCache(Path(req["baseline_cache"]), req["baseline_key"], device)
first = req["scenarios"][0]
durations = timing_tag(load_task(Path(req["task_dir"])).timing_for(first["set"]))
cache.put(first["name"], first["fields"], 0.05, durations)
cache.save()
emit({"type": "device", **device})
def progress(i, phase):
    s = req["scenarios"][i]
    emit({"type": "progress", "index": i, "total": len(req["scenarios"]), "scenario": s["name"],
          "phase": phase})
"""


def _scripted_worker(monkeypatch, tmp_path: Path, body: str) -> None:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(PREAMBLE + body))
    monkeypatch.setattr(api, "WORKER_COMMAND", [sys.executable, str(script)])


def _candidate(tmp_path: Path) -> Path:
    source = tmp_path / "k.cu"
    source.write_text((TASK_DIR / "baseline.cu").read_text() + "\n// a changed candidate\n")
    return source


@needs_nvcc
def test_a_hung_candidate_is_named_from_the_scenarios_own_time(task, monkeypatch, tmp_path) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        """
progress(0, "start")
progress(0, "check")
time.sleep(60)
""",
    )
    result = api.evaluate(
        task,
        _candidate(tmp_path),
        sets=["quick"],
        baseline_cache=tmp_path / "baseline",
        stall_limits=StallLimits(floor_s=1.0),
    )
    assert result.verdict == "fail"
    reason = result.reasons[0]
    assert "no progress for 1 s" in reason and "starting kernel's 0.05 ms per call" in reason
    assert "(check)" in reason
    assert result.scenarios[0].passed is False and result.scenarios[1].passed is None


@needs_nvcc
def test_the_harness_may_stay_quiet_longer_than_a_candidate_phase(
    task, monkeypatch, tmp_path
) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        """
for i, s in enumerate(req["scenarios"]):
    progress(i, "start")
    progress(i, "check")
    progress(i, "time")
    progress(i, "peers")
    if i == 0:
        time.sleep(2.5)  # a first peer call loading its library: the harness, not a hang
    result = {"name": s["name"], "set": s["set"], "fields": s["fields"], "passed": True,
              "reasons": [], "ms": 1.0, "tflops": 10.0}
    emit({"type": "scenario", "result": result, "baseline_ms": 2.0})
emit({"type": "done"})
""",
    )
    result = api.evaluate(
        task,
        _candidate(tmp_path),
        sets=["quick"],
        baseline_cache=tmp_path / "baseline",
        stall_limits=StallLimits(floor_s=1.0),
    )
    assert result.verdict == "pass", result.reasons


@needs_nvcc
def test_a_quiet_timed_phase_under_its_limit_is_no_hang(task, monkeypatch, tmp_path) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        """
for i, s in enumerate(req["scenarios"]):
    progress(i, "start")
    progress(i, "time")
    # Scenario 0 has a cached time (floor 3 s); the others an estimate from their FLOPs.
    time.sleep(1.5 if i == 0 else 0.0)
    result = {"name": s["name"], "set": s["set"], "fields": s["fields"], "passed": True,
              "reasons": [], "ms": 1.0, "tflops": 10.0}
    emit({"type": "scenario", "result": result, "baseline_ms": 2.0})
emit({"type": "done"})
""",
    )
    result = api.evaluate(
        task,
        _candidate(tmp_path),
        sets=["quick"],
        baseline_cache=tmp_path / "baseline",
        stall_limits=StallLimits(floor_s=3.0),
    )
    assert result.verdict == "pass", result.reasons
