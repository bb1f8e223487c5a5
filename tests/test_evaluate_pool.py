"""The evaluation pool: one slot per GPU, each evaluation pinned to its own device, a worker
lost on one GPU leaving the others alone. Stand-in workers play the GPUs on a CPU machine;
the real two-GPU run is a GPU-box job (see docs/BENCHMARKS.md)."""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate import api
from kernelseek_tui.evaluate.pool import EvalPool, visible_devices
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

STAND_IN = """
import json, os, signal, sys, time
req = json.loads(sys.stdin.read())
device = os.environ.get("CUDA_VISIBLE_DEVICES")
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
emit({"type": "device", "name": "stand-in", "index": device})
if device == os.environ.get("STAND_IN_BROKEN_GPU"):
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(1.0)
for i, s in enumerate(req["scenarios"]):
    emit({"type": "scenario", "baseline_ms": None, "result": {"name": s["name"], "set": s["set"],
          "fields": s["fields"], "passed": True}})
emit({"type": "done"})
"""


@pytest.fixture
def stand_in(monkeypatch, tmp_path: Path) -> Path:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(STAND_IN))
    monkeypatch.setattr(api, "WORKER_COMMAND", [sys.executable, str(script)])
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    source = tmp_path / "k.cu"
    source.write_text((TASK_DIR / "baseline.cu").read_text())
    api.evaluate(load_task(TASK_DIR), source, sets=["quick"])  # warm the build cache
    return source


def _evaluate_on_two_gpus(source: Path) -> tuple[list[EvalResult], float]:
    task = load_task(TASK_DIR)
    jobs = [(task, source, {"sets": ["quick"]}) for _ in range(2)]
    with EvalPool(["0", "1"]) as pool:
        began = time.monotonic()
        results = pool.map(jobs)
        return results, time.monotonic() - began


def test_two_gpus_evaluate_each_on_its_own_device(stand_in: Path) -> None:
    results, _ = _evaluate_on_two_gpus(stand_in)
    assert [r.verdict for r in results] == ["pass", "pass"]
    assert sorted(r.device["index"] for r in results) == ["0", "1"]


@pytest.mark.perf
def test_two_gpus_evaluate_at_once(stand_in: Path) -> None:
    _, elapsed = _evaluate_on_two_gpus(stand_in)
    # Each stand-in takes over a second; two in sequence would take over two.
    assert elapsed < 1.9, elapsed


def test_a_worker_lost_on_one_gpu_does_not_stop_the_other(stand_in, monkeypatch) -> None:
    monkeypatch.setenv("STAND_IN_BROKEN_GPU", "1")
    task = load_task(TASK_DIR)
    with EvalPool(["0", "1"]) as pool:
        results = pool.map([(task, stand_in, {"sets": ["quick"]}) for _ in range(4)])
    by_device: dict[str, set[str]] = {}
    for result in results:
        by_device.setdefault(result.device["index"], set()).add(result.verdict)
    assert by_device["0"] == {"pass"}
    # Lost before judging anything: the harness's failure ("error"), not the candidate's.
    assert by_device["1"] == {"error"}
    lost = next(r for r in results if r.device["index"] == "1")
    assert "SIGKILL" in lost.reasons[0]


def test_one_visible_gpu_gives_a_pool_of_one(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert visible_devices() == ["3"]
    assert len(EvalPool()) == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(KernelseekError, match="no GPU visible"):
        EvalPool()


def test_an_index_counts_within_the_visible_devices(stand_in, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    result = api.evaluate(load_task(TASK_DIR), stand_in, sets=["quick"], device=1)
    assert result.device["index"] == "7"
    with pytest.raises(KernelseekError, match="not among"):
        api.evaluate(load_task(TASK_DIR), stand_in, sets=["quick"], device=2)
