"""What an agent is, and what the engine offers it.

An agent drives a session: it decides which tool to call next and calls it through the
``AgentContext`` the engine hands to ``Agent.run``. The context records everything in the trace
(a ``tool_call`` before a tool runs, its ``tool_result`` after), enforces budgets and the control
inbox, raises decision moments and queues the questions the agent must be told. When the
session has to end (a budget spent, a stop command, an accepted finish) the context raises
``SessionStop`` out of ``call_tool`` or ``checkpoint``; the agent lets it propagate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from kernelseek_tui.session.tools import ToolOutcome, ToolSpec
from kernelseek_tui.task import Task
from kernelseek_tui.trace.schema import Event


class SessionStop(Exception):
    """The session ends now; ``reason`` is what the final control event records."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class AgentContext(Protocol):
    """The engine as an agent sees it."""

    @property
    def session_id(self) -> str: ...

    @property
    def task(self) -> Task:
        """The judge's task, loaded from the original task directory."""
        ...

    @property
    def workspace(self) -> Path:
        """The directory the agent's tools work in (the worktree's task directory)."""
        ...

    @property
    def kernel_path(self) -> str:
        """The candidate kernel, relative to the workspace."""
        ...

    @property
    def objective_sets(self) -> list[str] | None:
        """The objective override (``--set``), or None for the task's own objective."""
        ...

    @property
    def past_events(self) -> list[Event]:
        """The trace so far when resuming (empty for a fresh session), in seq order."""
        ...

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools to offer the model (no ``draw_question`` in a session without questions)."""
        ...

    @property
    def finishing(self) -> bool:
        """True once the session is ending (a finish was accepted, a budget spent, a stop)."""
        ...

    def call_tool(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        call_id: str | None = None,
        turn: int | None = None,
        parent_event_id: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> ToolOutcome:
        """Record the call, run it once, record and return its result (raises SessionStop)."""
        ...

    @property
    def eval_slots(self) -> int:
        """How many evaluations may run at once (GPUs of the session; 1 by default)."""
        ...

    def evaluate_many(
        self,
        inputs: list[dict[str, Any]],
        *,
        turn: int | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> list[ToolOutcome]:
        """``evaluate`` once per input, up to ``eval_slots`` at once: each its own recorded
        call, result and eval, in input order (raises SessionStop; a calls budget may cut the
        batch short)."""
        ...

    def skip_tool(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        call_id: str,
        reason: str,
        turn: int | None = None,
        parent_event_id: str | None = None,
    ) -> ToolOutcome:
        """Record a call the agent asked for that will not run, with an error result."""
        ...

    def record(self, kind: str, *, flush: bool = False, **fields: Any) -> Event:
        """Append any other event (message, thinking, compaction, error) to the trace."""
        ...

    def record_imported(self, fields: dict[str, Any]) -> Event:
        """Append an event of an outside agent's own transcript (an importer's field dict)."""
        ...

    def record_model_call(
        self,
        *,
        model: str,
        response_id: str | None,
        stop_reason: str | None,
        usage: dict[str, int | None],
        text: str,
        content: list[dict[str, Any]],
        turn: int,
        duration_ms: float | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        """Record one model response (tokens, cost) and count it against the USD budget."""
        ...

    def observe_text(self, text: str) -> None:
        """The agent's own words: a limit claim in them is a decision moment."""
        ...

    def request_finish(self, reason: str) -> bool:
        """The agent wants to stop without the finish tool: True when the session ends."""
        ...

    def take_questions(self) -> list[str]:
        """The questions to put to the agent now, as short user messages (each once)."""
        ...

    def add_question(
        self,
        text: str,
        *,
        question_id: str | None,
        source: str,
        trigger: str | None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        """Ask a question the agent brings itself (replay); it is delivered like any other."""
        ...

    def checkpoint(self) -> None:
        """Read the inbox, wait while paused, check budgets; raises SessionStop to end."""
        ...


class Agent(Protocol):
    """An agent: a name and ``run``, which returns when it is done. Every verified evaluation
    of the objective is committed, whichever agent made it."""

    name: str
    raises_decisions: bool  # False: the engine raises no decision moments for it

    def run(self, ctx: AgentContext) -> None: ...
