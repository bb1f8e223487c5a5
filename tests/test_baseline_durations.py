"""The worker's starting-kernel timing keyed by its scenario set's durations: a cached time is
read back only for the durations it was timed with (the worker's side of
evaluate/baseline_cache.timing_tag; the GPU side, the timing itself, runs on the GPU box)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kernelseek_tui.evaluate.baseline_cache import BaselineCache, timing_tag
from kernelseek_tui.evaluate.worker import Evaluation, _time_baseline
from kernelseek_tui.task import load_task

TASK = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")


def test_a_cached_time_is_read_for_its_own_sets_durations_only(tmp_path: Path) -> None:
    (first,) = [s for s in TASK.scenarios("quick") if s.name == "bench-s16384-d128-c1"]
    quick = {"name": first.name, "set": "quick", "fields": first.fields, "timed": True}
    bench = {**quick, "set": "bench"}  # the same scenario, in a set timed for the task's 100 ms
    cache = BaselineCache(tmp_path, "key", {"uuid": "GPU-aaa"})
    cache.put(quick["name"], quick["fields"], 1.47, timing_tag(TASK.timing_for("quick")))
    ev = SimpleNamespace(baseline=object(), baseline_cache=cache, task=TASK)
    # The quick set's own time comes from the cache, without touching the GPU (ev has none).
    assert _time_baseline(ev, quick, 0) == 1.47  # type: ignore[arg-type]
    # The bench set times for longer: that entry is not its own, so it would be timed.
    request = {"scenarios": [bench]}
    assert Evaluation._baseline_will_be_timed(ev, request) is True  # type: ignore[arg-type]
    assert Evaluation._baseline_will_be_timed(ev, {"scenarios": [quick]}) is False  # type: ignore[arg-type]
    no_cache = SimpleNamespace(baseline=object(), baseline_cache=None, task=TASK)
    assert Evaluation._baseline_will_be_timed(no_cache, request) is True  # type: ignore[arg-type]
