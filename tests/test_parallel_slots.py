"""Evaluation slots: what ``--gpus`` names, and jobs on two slots running at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.baseline_cache import BaselineCache
from kernelseek_tui.session.slots import EvalSlots, SlotRun, resolve_gpus
from kernelseek_tui.task import load_task
from tests.test_parallel_support import SleepyGPU, Span, overlapping
from tests.test_session_support import FLASH


def two() -> list[str]:
    return ["0", "1"]


def test_gpus_auto_n_and_lists() -> None:
    assert resolve_gpus(None, two) == []
    assert resolve_gpus("1", two) == []  # one at a time, as without --gpus
    assert resolve_gpus("auto", two) == ["0", "1"]
    assert resolve_gpus("auto", lambda: ["3"]) == []  # one GPU: nothing to share out
    assert resolve_gpus("2", lambda: ["4", "5", "6"]) == ["4", "5"]
    # Indices count within the visible GPUs, as --device does; UUIDs pass as they are.
    assert resolve_gpus("1,0", lambda: ["5", "7"]) == ["7", "5"]
    assert resolve_gpus("GPU-a,GPU-b", two) == ["GPU-a", "GPU-b"]
    assert resolve_gpus("0,1", list) == ["0", "1"]  # nothing visible to map through


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0", "at least 1"),
        ("3", r"only 2 GPU\(s\) visible \(0,1\)"),
        ("0,2", "GPU index 2 is not among 0,1"),
        ("1,1", "names GPU 1 twice"),
        ("0,,1", "wants auto, a count or a list"),
    ],
)
def test_bad_gpu_lists_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(KernelseekError, match=message):
        resolve_gpus(spec, two)
    with pytest.raises(KernelseekError, match="no GPU visible"):
        resolve_gpus("auto", list)


def run_jobs(slots: int, log: list[Span]) -> float:
    task = load_task(FLASH)
    evaluators = {str(i): SleepyGPU(str(i), log, delay=0.3) for i in range(slots)}
    began = time.monotonic()
    with EvalSlots(task, evaluators) as pool:
        runs = [SlotRun(), SlotRun()]
        futures = [
            pool.submit(task.source, ["quick"], knobs={"BLOCK_M": m}, run=run)
            for m, run in zip((32, 128), runs, strict=True)
        ]
        results = [f.result() for f in futures]
    elapsed = time.monotonic() - began
    assert [r.device["index"] for r in results] == [run.device for run in runs]
    assert all(run.seconds is not None and run.seconds >= 0.3 for run in runs)
    return elapsed


def test_two_slots_run_two_jobs_at_once_and_one_slot_does_not() -> None:
    one: list[Span] = []
    two_log: list[Span] = []
    alone = run_jobs(1, one)
    shared = run_jobs(2, two_log)
    assert overlapping(one) == []
    assert len(overlapping(two_log)) == 1
    assert {s.device for s in two_log} == {"0", "1"}
    assert shared < 0.75 * alone, (shared, alone)


def test_a_job_that_raises_on_one_gpu_leaves_the_other_job_alone() -> None:
    task = load_task(FLASH)
    log: list[Span] = []
    evaluators = {
        "0": SleepyGPU("0", log, delay=0.2),
        "1": SleepyGPU("1", log, delay=0.05, raises=RuntimeError("device lost")),
    }
    done: list[str] = []
    with EvalSlots(task, evaluators) as pool:
        runs = [SlotRun(), SlotRun()]
        futures = [
            pool.submit(
                task.source, None, run=run, on_done=lambda result, run: done.append(run.device)
            )
            for run in runs
        ]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result().verdict)
            except RuntimeError as error:
                outcomes.append(str(error))
    by_device = dict(zip([r.device for r in runs], outcomes, strict=True))
    assert by_device == {"0": "pass", "1": "device lost"}
    assert done == ["0"]  # on_done sees finished results only


def test_baseline_times_are_kept_per_gpu(tmp_path: Path) -> None:
    # What makes speedups on two GPUs comparable: each GPU's candidates are divided by the
    # starting kernel's time on that same GPU, never by a time another GPU measured.
    fields = {"seqlen_q": 128}
    first = BaselineCache(tmp_path, "key", {"uuid": "GPU-aaa", "name": "H200"})
    first.put("s", fields, 2.5)
    first.save()
    second = BaselineCache(tmp_path, "key", {"uuid": "GPU-bbb", "name": "H200"})
    assert second.get("s", fields) is None
    second.put("s", fields, 2.7)
    second.save()
    assert BaselineCache(tmp_path, "key", {"uuid": "GPU-aaa"}).get("s", fields) == 2.5
    assert BaselineCache(tmp_path, "key", {"uuid": "GPU-bbb"}).get("s", fields) == 2.7
    assert len(list(tmp_path.glob("key-GPU-*.json"))) == 2


def test_the_starting_kernels_times_are_kept_per_duration_of_timing(tmp_path: Path) -> None:
    # The quick set times for 20 ms, the task for 100 ms: a card at its power limit runs the
    # same code faster in the short run, so one is never read for the other.
    from kernelseek_tui.evaluate.baseline_cache import timing_tag
    from kernelseek_tui.task import load_task

    task = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")
    quick, bench = timing_tag(task.timing_for("quick")), timing_tag(task.timing_for("bench"))
    assert quick != bench and "rep_ms=20" in quick and "rep_ms=100" in bench
    fields = {"seqlen": 8192}
    cache = BaselineCache(tmp_path, "key", {"uuid": "GPU-aaa"})
    cache.put("s", fields, 1.0, quick)
    assert cache.get("s", fields, bench) is None
    cache.put("s", fields, 1.1, bench)
    cache.save()
    again = BaselineCache(tmp_path, "key", {"uuid": "GPU-aaa"})
    assert (again.get("s", fields, quick), again.get("s", fields, bench)) == (1.0, 1.1)
