"""The replay agent: a recorded session's file edits, evaluations and questions, run again.

It reads the recorded trace and repeats, in order, every ``write_file`` and ``edit_file`` call
that succeeded, every ``evaluate`` call, and every question (with its text, id, source and
trigger), against the real evaluator of the new session. Shell commands are not replayed (they
may do anything, anywhere); the decisions of the new session are the recorded ones, so the
engine raises none of its own. Used for the demo and for regression tests: the same edits
judged today.

Each replayed step carries ``replay_step`` in its attrs, so a resumed replay skips the steps it
has already taken (an interrupted one included: it is never run twice).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.agents.base import AgentContext
from kernelseek_tui.trace.schema import Event

REPLAYED_TOOLS = frozenset({"write_file", "edit_file", "evaluate"})


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """One thing to do again: a tool call (``tool`` set) or a question."""

    index: int
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    question_id: str | None = None
    source: str | None = None
    trigger: str | None = None


def plan_replay(events: list[Event]) -> list[ReplayStep]:
    """The steps a recorded trace holds, in seq order (see the module docstring)."""
    failed = {e.tool_call_id for e in events if e.kind == "tool_result" and e.is_error}
    steps: list[ReplayStep] = []
    for event in events:
        if event.kind == "tool_call" and event.tool_name in REPLAYED_TOOLS:
            if event.attrs_dict().get("skipped"):
                continue
            if event.tool_name != "evaluate" and event.tool_call_id in failed:
                continue
            steps.append(
                ReplayStep(len(steps), tool=event.tool_name, tool_input=event.tool_input_dict())
            )
        elif event.kind == "question" and event.question_text:
            if event.attrs_dict().get("delivered_in") == "tool_result":
                continue  # drawn by the agent with draw_question, which is not replayed
            steps.append(
                ReplayStep(
                    len(steps),
                    text=event.question_text,
                    question_id=event.question_id,
                    source=event.source,
                    trigger=event.trigger,
                )
            )
    return steps


class ReplayAgent:
    """Replays the session recorded in ``replay_from`` (a session directory)."""

    name: str = "replay"
    raises_decisions: bool = False

    def __init__(self, replay_from: str | Path) -> None:
        self.source_dir = Path(replay_from).expanduser().resolve()
        if not self.source_dir.is_dir():
            raise KernelseekError(f"--replay-from {str(self.source_dir)!r} is not a directory")

    def steps(self) -> list[ReplayStep]:
        from kernelseek_tui.trace.reader import read_session, table_to_events

        events = table_to_events(read_session(self.source_dir))
        if not events:
            raise KernelseekError(f"{self.source_dir} holds no recorded events to replay")
        return plan_replay(events)

    def run(self, ctx: AgentContext) -> None:
        done = -1
        for event in ctx.past_events:
            step = event.attrs_dict().get("replay_step")
            if isinstance(step, int):
                done = max(done, step)
        origin = str(self.source_dir)
        for step in self.steps():
            if step.index <= done:
                continue
            attrs = {"replay_step": step.index, "replayed_from": origin}
            if step.tool is not None:
                ctx.call_tool(step.tool, step.tool_input, attrs=attrs)
            else:
                ctx.checkpoint()
                assert step.text is not None
                source = step.source if step.source in ("human", "repertoire", "agent") else "human"
                ctx.add_question(
                    step.text,
                    question_id=step.question_id,
                    source=source,
                    trigger=step.trigger,
                    attrs=attrs,
                )
