"""A pool of evaluation slots, one per visible GPU, so a tuner or a bisect can judge several
candidates at once. Each evaluation still runs in its own worker process, pinned to its GPU
with CUDA_VISIBLE_DEVICES, so a worker lost on one GPU never touches the others, and each
result names the GPU it was timed on (speedups are only compared on the same device). A pool's
evaluations come one after another on each GPU, so each leaves a spare worker ready for the
next on its GPU (``evaluate(prestart_next=True)``, ``evaluate.spare``).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import Task


def visible_devices() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (indices or UUIDs)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    count = sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))
    return [str(i) for i in range(count)]


def evaluate_in_a_loop(task: Task, source: Path, **kwargs: Any) -> EvalResult:
    """``evaluate``, leaving a spare worker for the next evaluation unless told otherwise."""
    kwargs.setdefault("prestart_next", True)
    return evaluate(task, source, **kwargs)


class EvalPool:
    """``submit`` takes ``evaluate``'s arguments and runs it on the next free GPU."""

    def __init__(
        self,
        devices: list[str] | None = None,
        *,
        evaluator: Callable[..., EvalResult] = evaluate_in_a_loop,
    ) -> None:
        self.devices = list(devices) if devices is not None else visible_devices()
        if not self.devices:
            raise KernelseekError("no GPU visible: an evaluation pool needs at least one")
        self._free: queue.Queue[str] = queue.Queue()
        for device in self.devices:
            self._free.put(device)
        self._evaluator = evaluator
        self._executor = ThreadPoolExecutor(
            max_workers=len(self.devices), thread_name_prefix="kernelseek-eval"
        )

    def __len__(self) -> int:
        return len(self.devices)

    def submit(self, task: Task, source: Path, **kwargs: Any) -> Future[EvalResult]:
        return self._executor.submit(self._run, task, source, kwargs)

    def _run(self, task: Task, source: Path, kwargs: dict[str, Any]) -> EvalResult:
        device = self._free.get()
        try:
            return self._evaluator(task, source, device=device, **kwargs)
        finally:
            self._free.put(device)

    def map(self, jobs: list[tuple[Task, Path, dict[str, Any]]]) -> list[EvalResult]:
        """Run every job, as many at once as there are GPUs; results in job order."""
        futures = [self.submit(task, source, **kwargs) for task, source, kwargs in jobs]
        return [future.result() for future in futures]

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> EvalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
