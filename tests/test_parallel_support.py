"""Helpers the parallel-evaluation tests share (no tests here): stand-in GPUs that sleep and
log when they ran, and evaluator factories for engine and bisect subprocesses."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import Task
from tests.test_session_support import KnobEvaluator, knob_speed, make_result, source_evaluator


@dataclass(frozen=True, slots=True)
class Span:
    """One evaluation as a stand-in GPU ran it."""

    device: str
    thread: str
    point: tuple[tuple[str, int], ...]
    start: float
    end: float


def overlapping(spans: list[Span]) -> list[tuple[Span, Span]]:
    """The pairs of spans that ran at the same time."""
    ordered = sorted(spans, key=lambda s: s.start)
    return [
        (a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :] if b.start < a.end - 1e-3
    ]


class SleepyGPU(KnobEvaluator):
    """A stand-in for one GPU: sleeps ``delay`` seconds per point (or ``delays(point)``), logs a
    Span, and names itself in the result's ``device`` as the real worker does."""

    def __init__(
        self,
        device: str,
        log: list[Span],
        *,
        delay: float = 0.5,
        delays: Any = None,
        raises: BaseException | None = None,
        lost: bool = False,
    ) -> None:
        super().__init__()
        self.device = device
        self.log = log
        self.delay = delay
        self.delays = delays
        self.raises = raises
        self.lost = lost
        self._lock = threading.Lock()

    def __call__(
        self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        point = {"BLOCK_M": 64, "BLOCK_N": 64, **(knobs or {})}
        start = time.monotonic()
        time.sleep(self.delays(point) if self.delays is not None else self.delay)
        with self._lock:
            self.log.append(
                Span(
                    self.device,
                    threading.current_thread().name,
                    tuple(sorted(point.items())),
                    start,
                    time.monotonic(),
                )
            )
        if self.raises is not None:
            raise self.raises
        if self.lost:
            # What evaluate() gives for a worker killed before it judged anything.
            result = make_result(None, verdict="error", total=4, failed=4)
            result.reasons = ["the worker died (SIGKILL) (setup)"]
        else:
            with self._lock:
                result = super().__call__(source, sets, knobs=knobs)
            result.summary.baseline_timing = (
                "measured on this GPU (cached per GPU and starting kernel)"
            )
        result.device = {"index": self.device, "uuid": f"GPU-{self.device}-uuid", "name": "stub"}
        return result


def speed_of(point: tuple[tuple[str, int], ...]) -> float:
    return knob_speed(dict(point))


def device_source_evaluator(task: Task, **options: Any) -> Any:
    """For ``kernelseek bisect --gpus`` subprocesses: ``source_evaluator`` (speed from a
    ``// speed X`` line) that names the GPU it was given and takes a while, so rounds overlap."""
    judge = source_evaluator(task)
    device = options.get("device")

    def on_gpu(
        source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        time.sleep(0.2)
        result = judge(source, sets, knobs=knobs)
        result.device = {"index": str(device), "uuid": f"GPU-{device}"}
        result.duration_s = 0.2
        return result

    return on_gpu
