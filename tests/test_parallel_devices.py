"""A tuner session on two GPUs through the real evaluator path: ``TaskEvaluator`` per GPU,
``evaluate()``, one worker process per evaluation pinned with CUDA_VISIBLE_DEVICES. A stand-in
worker plays the GPU (it sleeps, and times a candidate by the knobs its build was given) and
the build is stubbed, so this runs on a CPU machine; the real two-GPU run is
scripts/gpu_parallel_session.sh."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.evaluate import api
from kernelseek_tui.evaluate.build import BuildResult
from kernelseek_tui.session.agents.tuner import TunerAgent
from kernelseek_tui.session.config import Budgets
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta
from tests.test_session_support import knob_speed, make_task_repo, read_events, session_config

STAND_IN = """
import json, os, re, signal, sys, time
request = json.loads(sys.stdin.read())
device = os.environ.get("CUDA_VISIBLE_DEVICES")
started = time.monotonic()
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(request)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
emit({"type": "device", "name": "stand-in", "index": device, "uuid": f"GPU-uuid-{device}"})
if device == os.environ.get("STAND_IN_BROKEN_GPU"):
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(0.3)
speed = float(re.search(r"speed-([0-9.]+)\\.so", request["candidate"]).group(1))
for s in request["scenarios"]:
    emit({"type": "scenario", "baseline_ms": 1.0, "result": {"name": s["name"], "set": s["set"],
          "fields": s["fields"], "passed": True, "ms": 1.0 / speed}})
emit({"type": "done"})
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps({"device": device, "pid": os.getpid(), "start": started,
                          "end": time.monotonic(), "speed": speed}) + "\\n")
"""


def fake_build(source: str, *, defines: dict[str, int] | None = None, **_: Any) -> BuildResult:
    # The library's name carries the speed the stand-in worker will report for it.
    speed = knob_speed(defines) if defines else 1.0
    return BuildResult(ok=True, library=Path(f"/stand-in/speed-{speed}.so"), key=f"k{speed}")


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(STAND_IN))
    log = tmp_path / "workers.jsonl"
    monkeypatch.setattr(api, "WORKER_COMMAND", [sys.executable, str(script)])
    monkeypatch.setattr(api, "build", fake_build)
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return log


def run_on_two_gpus(tmp_path: Path, calls: int = 5) -> Engine:
    config = session_config(
        make_task_repo(tmp_path / "user"),
        tmp_path / "traces",
        "two",
        agent="tuner",
        objective_sets=["quick"],
        gpus=["0", "1"],
        budgets=Budgets(calls=calls),
        evaluator_options={"compare": False},
    )
    engine = Engine.start(config)  # no stand-in evaluator: the real one, one per GPU
    engine.run(TunerAgent())
    return engine


def test_each_evaluation_is_a_worker_pinned_to_its_gpu_two_at_once(
    workers: Path, tmp_path: Path
) -> None:
    engine = run_on_two_gpus(tmp_path)
    runs = [json.loads(line) for line in workers.read_text().splitlines()]
    assert len(runs) == 5 and len({r["pid"] for r in runs}) == 5  # a fresh process each time
    assert {r["device"] for r in runs} == {"0", "1"}
    # The two batches of two: each pair ran at the same time, one worker on each GPU.
    spans = sorted(runs, key=lambda r: r["start"])
    pairs = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :] if b["start"] < a["end"]]
    assert len(pairs) == 2 and all(a["device"] != b["device"] for a, b in pairs)
    evals = [e for e in read_events(engine.session_dir) if e.kind == "eval"]
    for event in evals:
        attrs = event.attrs_dict()
        assert attrs["device"]["uuid"] == f"GPU-uuid-{attrs['device']['index']}"
        assert attrs["slot_device"] == attrs["device"]["index"]
        assert attrs["summary"]["baseline_timing"].startswith("measured on this GPU")
        assert event.speedup == pytest.approx(knob_speed(attrs["knobs"]))
    assert read_meta(engine.session_dir).end_reason == "budget_calls"
    best = next(c for c in engine.history.candidates() if c.new_best)
    assert best.speedup == pytest.approx(1.6)


def test_a_worker_killed_on_gpu_1_leaves_gpu_0_judging(
    workers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_BROKEN_GPU", "1")
    engine = run_on_two_gpus(tmp_path, calls=7)
    evals = [e for e in read_events(engine.session_dir) if e.kind == "eval"]
    by_gpu: dict[str, set[str]] = {}
    for event in evals:
        by_gpu.setdefault(event.attrs_dict()["device"]["index"], set()).add(event.verdict)
    assert by_gpu["0"] == {"pass"}
    # Lost before judging anything: the harness's failure ("error"), not the candidate's.
    assert by_gpu["1"] == {"error"}
    lost = next(e for e in evals if e.verdict == "error")
    assert "SIGKILL" in lost.attrs_dict()["reasons"][0]
    assert len(evals) == 7 and read_meta(engine.session_dir).end_reason == "budget_calls"
    # Only GPU 0 ran to the end: every finished worker was one of its.
    finished = [json.loads(line) for line in workers.read_text().splitlines()]
    assert finished and {r["device"] for r in finished} == {"0"}
