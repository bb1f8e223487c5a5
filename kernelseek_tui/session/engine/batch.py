"""Several ``evaluate`` calls at once, one per evaluation slot (GPU): ``Engine.evaluate_many``.

The trace tells a batch exactly as it tells single calls, in an order that does not depend on
which GPU finishes first:

1. every call of the batch is a ``tool_call`` event (attrs ``batch``, ``batch_index``,
   ``batch_size``), all flushed before any evaluation starts;
2. the evaluations run at once through the session's ``EvalSlots``; each result that finishes
   is kept at once in ``evals/pending-<call seq>.json.gz``, so that a crash while an earlier
   point still runs loses nothing that was judged;
3. the results are recorded in the calls' order, each as it would be alone: its ``eval`` event
   (attrs ``slot_device``: the GPU it ran on, beside the worker's own ``device``), its commit
   when it earns one, its ``tool_result``.

On resume (``session.engine.resume``) a call of a batch without a result but with a pending file is
recorded from that file; one without either was still running, gets the "harness restarted"
answer, and the tuner judges it again. A recorded one is never judged twice.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.session.agents.base import SessionStop
from kernelseek_tui.session.engine.core import DEFAULT_SLOT
from kernelseek_tui.session.engine.judging import EvalRequest
from kernelseek_tui.session.engine.public import PublicEngine
from kernelseek_tui.session.eval_files import PendingResult, drop_pending, save_pending
from kernelseek_tui.session.knobs import write_knobs
from kernelseek_tui.session.slots import SlotRun
from kernelseek_tui.session.tools import ToolError, ToolOutcome
from kernelseek_tui.trace.schema import Event


@dataclass(slots=True)
class _Job:
    call: Event
    request: EvalRequest | None = None
    future: Future[EvalResult] | None = None
    run: SlotRun | None = None
    outcome: ToolOutcome | None = None  # set when the call could not even start


def evaluate_many(
    engine: PublicEngine,
    inputs: list[dict[str, Any]],
    *,
    turn: int | None = None,
    attrs: dict[str, Any] | None = None,
) -> list[ToolOutcome]:
    """Run ``evaluate`` once per input, as many at once as there are slots; outcomes in order.

    A calls budget cuts the batch to the calls it has left (the points after those are never
    called, as a one-at-a-time search would never reach them). Raises SessionStop, after every
    call of the batch has its result, when the session must end.
    """
    engine.checkpoint()
    asked = len(inputs)
    budget = engine.config.budgets.calls
    if budget is not None:
        inputs = inputs[: max(1, budget - engine.state.tool_calls)]
    if not inputs:
        return []
    turn = turn if turn is not None else engine.state.turn + 1
    batch = uuid.uuid4().hex[:12]
    jobs = [
        _Job(
            engine.record_tool_call(
                "evaluate",
                tool_input,
                turn=turn,
                attrs={
                    **(attrs or {}),
                    "batch": batch,
                    "batch_index": index,
                    "batch_size": len(inputs),
                },
                flush=False,  # flushed together below
            )
        )
        for index, tool_input in enumerate(inputs)
    ]
    engine.writer.flush()  # every call is on disk before any of them runs
    started = time.monotonic()
    for job, tool_input in zip(jobs, inputs, strict=True):
        _submit(engine, job, tool_input)

    outcomes: list[ToolOutcome] = []
    stop: SessionStop | None = None
    for job in jobs:
        outcome, stopped = _finish(engine, job, batch)
        stop = stop or stopped
        run = job.run
        seconds = run.seconds if run is not None and run.seconds is not None else None
        engine.record_tool_result(
            job.call,
            outcome,
            duration_ms=(seconds if seconds is not None else time.monotonic() - started) * 1000,
            attrs={"batch": batch, "device": _gpu(run), "queued_s": _queued(run, started)},
        )
        drop_pending(engine.session_dir, job.call.seq)
        engine.after_tool_call()
        outcomes.append(outcome)
    if stop is not None:
        raise stop
    if len(outcomes) < asked:
        engine.checkpoint()  # the budget that cut the batch is spent: this ends the session
    return outcomes


def _submit(engine: PublicEngine, job: _Job, tool_input: Any) -> None:
    try:
        if not isinstance(tool_input, dict):
            raise ToolError("the tool input must be a JSON object")
        job.request = engine.prepare_evaluation(tool_input)
    except (ToolError, KernelseekError) as error:
        job.outcome = ToolOutcome(str(error), is_error=True)
        return
    request, call = job.request, job.call
    job.run = SlotRun()
    job.future = engine.slots().submit(
        request.source,
        request.sets,
        knobs=request.knobs or None,
        run=job.run,
        on_done=_stasher(engine.session_dir, call.seq, request.identity),
    )


def _finish(engine: PublicEngine, job: _Job, batch: str) -> tuple[ToolOutcome, SessionStop | None]:
    """Wait for ``job`` and record its result (the eval event and any commit)."""
    if job.outcome is not None:
        return job.outcome, None
    assert job.future is not None and job.request is not None and job.run is not None
    run = job.run
    try:
        result = job.future.result()
    except KernelseekError as error:
        return ToolOutcome(f"the evaluation could not be made: {error}", is_error=True), None
    except Exception as error:
        # One slot's failure is that call's failure only; the other slots' calls go on.
        engine.record_exception(error, tool="evaluate", batch=batch, device=_gpu(run))
        where = f" on GPU {_gpu(run)}" if _gpu(run) is not None else ""
        return ToolOutcome(f"internal error in evaluate{where}: {error}", is_error=True), None
    return record_result(engine, job.call, job.request, result, run=run, batch=batch)


def record_result(
    engine: PublicEngine,
    call: Event,
    request: EvalRequest,
    result: EvalResult,
    *,
    run: SlotRun | None,
    batch: str | None,
    extra: dict[str, Any] | None = None,
) -> tuple[ToolOutcome, SessionStop | None]:
    """Record one finished evaluation of a batch as a single ``evaluate`` call would have."""
    outcome: ToolOutcome | None = None
    try:
        # knobs.json holds this point while its eval is recorded and committed, so the commit
        # (and a resume that must commit it) has exactly the candidate that was judged.
        if request.knobs_given:
            write_knobs(engine.workspace, request.knobs or {})
        seconds = run.seconds if run is not None else None
        outcome, moment = engine.record_evaluation(
            call,
            request,
            result,
            duration_ms=seconds * 1000 if seconds is not None else None,
            extra={"batch": batch, "slot_device": _gpu(run), **(extra or {})},
        )
        engine.note_gpu(result)
        if moment is not None:
            engine.decide(moment)
    except SessionStop as error:
        if outcome is None:
            outcome = ToolOutcome(f"not completed: the session is ending ({error.reason})", True)
        return outcome, error
    except (ToolError, KernelseekError) as error:
        return ToolOutcome(str(error), is_error=True), None
    return outcome, None


def _stasher(
    session_dir: Path, call_seq: int, identity: str
) -> Callable[[EvalResult, SlotRun], None]:
    def stash(result: EvalResult, run: SlotRun) -> None:
        save_pending(session_dir, call_seq, PendingResult(result, identity, run.device))

    return stash


def _gpu(run: SlotRun | None) -> str | None:
    """The GPU a slot ran on (None for the one slot of a session without --gpus)."""
    if run is None or run.device in (None, DEFAULT_SLOT):
        return None
    return run.device


def _queued(run: SlotRun | None, started: float) -> float | None:
    if run is None or run.started is None:
        return None
    return round(run.started - started, 3)
