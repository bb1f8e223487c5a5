"""The engine's public face: what the parts of the engine outside its class use.

``batch`` (several evaluations at once) and ``resume`` (repairing a crash) record what the
engine records, the same way, through these methods and never through a private member. They
are typed against this protocol rather than ``Engine`` itself, so that ``engine`` imports them
and they import nothing of it: the import graph has no cycle. ``Engine`` satisfies it (mypy
checks that where it passes itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kernelseek_tui.decisions import DecisionMoment
    from kernelseek_tui.evaluate.result import EvalResult
    from kernelseek_tui.history import Candidate, SessionHistory
    from kernelseek_tui.session.config import SessionConfig
    from kernelseek_tui.session.engine.evaluation import Committed
    from kernelseek_tui.session.engine.judging import EvalRequest
    from kernelseek_tui.session.questions import QuestionDesk
    from kernelseek_tui.session.slots import EvalSlots
    from kernelseek_tui.session.state import SessionState
    from kernelseek_tui.session.tools import ToolOutcome
    from kernelseek_tui.task import Task
    from kernelseek_tui.trace.schema import Event
    from kernelseek_tui.trace.writer import TraceWriter


class PublicEngine(Protocol):
    """A session's engine as ``batch`` and ``resume`` see it."""

    config: SessionConfig
    history: SessionHistory
    state: SessionState
    desk: QuestionDesk
    writer: TraceWriter

    @property
    def session_dir(self) -> Path: ...

    @property
    def task(self) -> Task: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def kernel_path(self) -> str: ...

    @property
    def past_events(self) -> list[Event]: ...

    def checkpoint(self) -> None:
        """Read the inbox, wait while paused, check budgets; raises SessionStop to end."""
        ...

    def slots(self) -> EvalSlots:
        """The evaluation slots (one per GPU) a batch runs through."""
        ...

    # -- recording ------------------------------------------------------------------------

    def record(self, kind: str, *, flush: bool = False, **fields: Any) -> Event:
        """Append an event of an agent's kinds (message, thinking, compaction, error, control)."""
        ...

    def record_tool_call(
        self,
        name: str,
        tool_input: object,
        *,
        call_id: str | None = None,
        turn: int | None,
        parent_event_id: str | None = None,
        attrs: dict[str, Any] | None = None,
        flush: bool = True,
    ) -> Event:
        """The ``tool_call`` event of a call about to run."""
        ...

    def record_tool_result(
        self,
        call: Event,
        outcome: ToolOutcome,
        *,
        duration_ms: float | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        """The ``tool_result`` event answering ``call``."""
        ...

    def record_error(
        self, text: str, *, attrs: dict[str, Any] | None = None, parent_event_id: str | None = None
    ) -> Event:
        """An ``error`` event of the harness."""
        ...

    def record_exception(self, error: BaseException, **where: Any) -> Event:
        """An ``error`` event for an unexpected exception (from its ``except`` block)."""
        ...

    def after_tool_call(self) -> None:
        """Count a finished tool call against the budgets."""
        ...

    # -- evaluations, commits, questions ---------------------------------------------------

    def prepare_evaluation(self, args: dict[str, Any]) -> EvalRequest:
        """What an ``evaluate`` call asks for, checked (raises ToolError for a bad request)."""
        ...

    def record_evaluation(
        self,
        call: Event,
        request: EvalRequest,
        result: EvalResult,
        *,
        duration_ms: float | None = None,
        extra: dict[str, Any] | None = None,
        paired_with_best: bool = False,
    ) -> tuple[ToolOutcome, DecisionMoment | None]:
        """The ``eval`` event of ``call``'s result, the commit it earns, the agent's text."""
        ...

    def note_gpu(self, result: EvalResult) -> None:
        """Warn once when the session's GPUs are not all the same model."""
        ...

    def commit_eval(
        self,
        eval_event: Event,
        result: Any,
        with_knobs: bool,
        *,
        question: str | None = None,
        new_best: bool = False,
    ) -> Committed | None:
        """Commit the workspace candidate of ``eval_event`` and record its ``commit`` event."""
        ...

    def record_commit(
        self,
        eval_event: Event,
        sha: str,
        candidate: Candidate | None,
        *,
        new_best: bool = False,
        **extra: Any,
    ) -> Event:
        """The ``commit`` event of ``eval_event`` for a commit already in git."""
        ...

    def decide(self, moment: DecisionMoment | None) -> bool:
        """Record a decision moment and put a question for it."""
        ...

    def ask(
        self,
        text: str,
        *,
        question_id: str | None,
        source: str,
        trigger: str | None,
        decision: Event | None = None,
        deliver: bool = True,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        """Record a question and queue it for the agent (unless it was delivered already)."""
        ...
