"""The starting kernel is timed with the candidate's own work between samples
(worker._time_baseline): the flips before each sample and the copy of the outputs after it.
Without them, sm90.cu judged against itself read 1.026x over the bench set on an H100
(2026-12-07 16:10), when only the candidate had that work (one of two differences then; the
method belongs to both sides alike whatever the cause). Its figure is held to its every-input
samples as the candidate's is (kept_work.py). The wiring only, on stand-ins; the timing itself
runs on the GPU box."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate import worker
from kernelseek_tui.evaluate.baseline_cache import METHOD, BaselineCache, timing_tag
from kernelseek_tui.evaluate.timing import TimingStats
from kernelseek_tui.task import load_task

TASK = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")
SCENARIO = {
    "name": "s",
    "set": "bench",
    "timed": True,
    "fields": {
        "batch": 1,
        "seqlen_q": 64,
        "seqlen_k": 64,
        "nheads": 2,
        "nheads_kv": 2,
        "headdim": 64,
        "causal": 0,
    },
}


def stand_in(cache: BaselineCache | None = None) -> SimpleNamespace:
    rng = SimpleNamespace(random=lambda *a, **k: None)
    return SimpleNamespace(
        baseline=SimpleNamespace(bind_tensors=lambda *args: lambda: 0),
        baseline_cache=cache,
        task=TASK,
        cp=SimpleNamespace(random=SimpleNamespace(default_rng=lambda seed: rng)),
        seed=7,
        entropy="e",
        l2_bytes=50 << 20,
        allocate=lambda spec, shape: SimpleNamespace(spec=spec, shape=shape),
        stream=SimpleNamespace(ptr=0),
        switch=lambda who: None,
        emit=lambda message: None,
        others_stopped=lambda kernel: contextlib.nullcontext(),
        settle=None,
        gate=None,
        sync=lambda what: None,
        gates_held_within_their_limit=lambda: True,
        net=lambda stats, kernel: stats,
    )


def test_the_starting_kernel_is_timed_with_the_candidates_work_between_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    # a quarter of the samples after every input changed, and slower: the figure is held
    every = [i % 4 == 0 for i in range(40)]
    samples = [2.0 if flag else 1.5 for flag in every]
    watch = SimpleNamespace(every_sample=every)

    def watch_measured_calls(ev: Any, sets: list, rng: Any, label: str = "") -> object:
        seen["sets"], seen["label"] = sets, label
        return watch

    def time_calls(cp: Any, stream: Any, call: Any, n_sets: int, timing: Any, **kw: Any):
        seen["hooks"], seen["n_sets"] = kw.get("hooks"), n_sets
        return TimingStats(median_ms=1.5, samples_ms=samples, calls_per_sample=1)

    monkeypatch.setattr(worker, "_watch_measured_calls", watch_measured_calls)
    monkeypatch.setattr(worker, "time_calls", time_calls)
    monkeypatch.setattr(worker, "fill_random", lambda *args: None)
    assert worker._time_baseline(stand_in(), SCENARIO, 0) == 2.0  # type: ignore[arg-type]
    # the hooks of a timed run, on the starting kernel's own input sets, every one of them
    assert seen["hooks"] is watch and seen["label"] == "the starting kernel"
    assert len(seen["sets"]) == seen["n_sets"] >= 1
    assert set(seen["sets"][0]) == {spec.name for spec in TASK.tensors}


def test_a_time_cached_by_the_method_before_is_not_reused(tmp_path: Path) -> None:
    durations = timing_tag(TASK.timing_for("bench"))
    assert durations.endswith("|" + METHOD)
    cache = BaselineCache(tmp_path, "key", {"uuid": "gpu"})
    # a figure from before the method changed: the durations alone in its key
    cache.put(SCENARIO["name"], SCENARIO["fields"], 1.0, durations.removesuffix("|" + METHOD))
    assert cache.get(SCENARIO["name"], SCENARIO["fields"], durations) is None
