"""Evaluation slots: one evaluator per GPU, so that a session can judge several points at once.

``--gpus auto|N|0,1`` names the GPUs (:func:`resolve_gpus`); :class:`EvalSlots` holds one
``Evaluator`` per GPU (the real one runs every evaluation in its own worker process pinned to
its GPU) and runs jobs through an :class:`~kernelseek_tui.evaluate.pool.EvalPool`, which hands
each job the next free GPU. A job that raises, or a worker lost on one GPU, ends that job only:
the other GPUs' jobs go on.

Speedups stay comparable across the GPUs of one session because each is a ratio to the
starting kernel timed *on the same GPU* (the baseline cache is keyed by the GPU's UUID), never
a time measured on one GPU against a time measured on another.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.session.evaluator import Evaluator
from kernelseek_tui.task import Task

log = logging.getLogger("kernelseek_tui.session")


def resolve_gpus(spec: str | None, visible: Callable[[], list[str]] | None = None) -> list[str]:
    """The GPUs ``--gpus`` names, as CUDA_VISIBLE_DEVICES entries.

    ``auto``: every visible GPU; ``N``: the first N visible; ``0,1``: those indices among the
    visible GPUs (as ``--device`` counts them), or UUIDs. ``None`` or ``1`` is one evaluation at
    a time on the default GPU: an empty list. Raises KernelseekError for anything else.
    """
    if spec is None:
        return []
    if visible is None:
        from kernelseek_tui.evaluate.pool import visible_devices

        visible = visible_devices
    text = str(spec).strip()
    if text == "auto":
        found = visible()
        if not found:
            raise KernelseekError("--gpus auto: no GPU visible")
        return found if len(found) > 1 else []
    if text.isdigit():
        count = int(text)
        if count < 1:
            raise KernelseekError("--gpus wants at least 1")
        if count == 1:
            return []
        found = visible()
        if len(found) < count:
            shown = ",".join(found) or "none"
            raise KernelseekError(f"--gpus {count}: only {len(found)} GPU(s) visible ({shown})")
        return found[:count]
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(not p for p in parts):
        raise KernelseekError(f"--gpus wants auto, a count or a list like 0,1; got {spec!r}")
    found = visible()
    chosen: list[str] = []
    for part in parts:
        if part.isdigit():
            index = int(part)
            if found and index >= len(found):
                raise KernelseekError(f"GPU index {index} is not among {','.join(found)}")
            part = found[index] if found else part
        if part in chosen:
            raise KernelseekError(f"--gpus names GPU {part} twice")
        chosen.append(part)
    return chosen


@dataclass(slots=True)
class SlotRun:
    """Where and when one job ran (monotonic seconds): filled in by the slot that ran it."""

    device: str | None = None
    started: float | None = None
    ended: float | None = None

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


class EvalSlots:
    """One evaluator per GPU (``{device: evaluator}``); a job runs on the next free one."""

    def __init__(self, task: Task, evaluators: dict[str, Evaluator]) -> None:
        from kernelseek_tui.evaluate.pool import EvalPool

        if not evaluators:
            raise KernelseekError("evaluation slots need at least one GPU")
        self.task = task
        self.evaluators = dict(evaluators)
        self._pool = EvalPool(list(self.evaluators), evaluator=self._run)

    @property
    def devices(self) -> list[str]:
        return list(self.evaluators)

    def __len__(self) -> int:
        return len(self.evaluators)

    def submit(
        self,
        source: Path,
        sets: list[str] | None,
        *,
        knobs: dict[str, int] | None = None,
        run: SlotRun | None = None,
        on_done: Callable[[EvalResult, SlotRun], None] | None = None,
    ) -> Future[EvalResult]:
        """Judge ``source`` on the next free GPU; ``run`` (when given) says which, and when.

        ``on_done`` is called with the result in the slot's thread before the future completes
        (to keep a finished result safe while earlier jobs still run); what it raises is logged.
        """
        return self._pool.submit(
            self.task, source, sets=sets, knobs=knobs, run=run or SlotRun(), on_done=on_done
        )

    def __call__(
        self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        """The ``Evaluator`` signature: one job, waited for."""
        return self.submit(source, sets, knobs=knobs).result()

    def _run(
        self,
        task: Task,
        source: Path,
        *,
        device: str,
        sets: list[str] | None,
        knobs: dict[str, int] | None,
        run: SlotRun,
        on_done: Callable[[EvalResult, SlotRun], None] | None,
    ) -> EvalResult:
        run.device = device
        run.started = time.monotonic()
        try:
            result = self.evaluators[device](source, sets, knobs=knobs)
        finally:
            run.ended = time.monotonic()
        if on_done is not None:
            try:
                on_done(result, run)
            except Exception:
                log.exception("on_done of an evaluation on GPU %s failed", device)
        return result

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> EvalSlots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
