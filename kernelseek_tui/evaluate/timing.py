"""Timing on the stream the kernel is given: CUDA events, warm-up, rotated inputs, a median.

A second, device-synchronised wall-clock measurement of the same calls catches work that the
events cannot see (a kernel launched on another stream).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelseek_tui.task import Timing

# A batch of calls between two events should last at least this long, so that event
# resolution and launch gaps are small beside it.
_MIN_BATCH_MS = 0.5


@dataclass(slots=True)
class TimingStats:
    median_ms: float
    samples_ms: list[float] = field(default_factory=list)
    calls_per_sample: int = 1
    wall_ms_per_call: float | None = None
    event_ms_per_call: float | None = None
    hidden_work: bool = False

    @property
    def spread(self) -> float:
        """(p90 - p10) / median over the samples: how noisy the number is."""
        if len(self.samples_ms) < 3 or self.median_ms <= 0:
            return 0.0
        ordered = sorted(self.samples_ms)
        low = ordered[int(0.1 * (len(ordered) - 1))]
        high = ordered[math.ceil(0.9 * (len(ordered) - 1))]
        return (high - low) / self.median_ms


def time_calls(
    cp: Any,
    stream: Any,
    call: Callable[[int], None],
    n_sets: int,
    timing: Timing,
    after_warmup: Callable[[], None] | None = None,
) -> TimingStats:
    """Median milliseconds per call of ``call(set_index)``, rotating through ``n_sets`` sets.

    ``after_warmup`` runs between the warm-up and the measured calls (on the same stream): the
    evaluator changes the inputs there, so that the measured calls must really compute.
    """
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def run_batch(calls: int, offset: int = 0) -> float:
        start.record(stream)
        for i in range(calls):
            call((offset + i) % n_sets)
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end)

    first = run_batch(1)
    estimate = max(first, 1e-3)
    calls = max(n_sets, math.ceil(_MIN_BATCH_MS / estimate))
    calls = n_sets * math.ceil(calls / n_sets)
    warmup_batches = max(1, math.ceil(timing.warmup_ms / (estimate * calls)))
    for _ in range(warmup_batches):
        estimate = max(run_batch(calls) / calls, 1e-3)
    if after_warmup is not None:
        after_warmup()
    reps = int(min(timing.max_reps, max(timing.min_reps, timing.rep_ms / (estimate * calls))))
    samples = [run_batch(calls) / calls for _ in range(reps)]
    stats = TimingStats(
        median_ms=statistics.median(samples), samples_ms=samples, calls_per_sample=calls
    )
    _cross_check(cp, stream, call, n_sets, calls, start, end, stats)
    return stats


def _cross_check(
    cp: Any,
    stream: Any,
    call: Callable[[int], None],
    n_sets: int,
    calls: int,
    start: Any,
    end: Any,
    stats: TimingStats,
) -> None:
    # cudaDeviceSynchronize waits for every stream; the events see only the one handed over.
    cp.cuda.runtime.deviceSynchronize()
    began = time.perf_counter()
    start.record(stream)
    for i in range(calls):
        call(i % n_sets)
    end.record(stream)
    cp.cuda.runtime.deviceSynchronize()
    wall_ms = (time.perf_counter() - began) * 1000.0
    event_ms = cp.cuda.get_elapsed_time(start, end)
    stats.wall_ms_per_call = wall_ms / calls
    stats.event_ms_per_call = event_ms / calls
    stats.hidden_work = wall_ms > 1.5 * event_ms + 1.0
