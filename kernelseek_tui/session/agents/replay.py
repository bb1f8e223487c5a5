"""The replay agent: a recorded session's file edits, evaluations and questions, run again.

It reads the recorded trace and repeats, in order, every ``write_file`` and ``edit_file`` call
that succeeded, every ``evaluate`` call, and every question (with its text, id, source and
trigger), against the real evaluator of the new session. Shell commands are not replayed (they
may do anything, anywhere); the decisions of the new session are the recorded ones, so the
engine raises none of its own. Used for the demo and for regression tests: the same edits
judged today.

Given ``replay_history`` instead of a session, the steps come from a kernel's git history
(``history_plan``): each committed version written and evaluated, each question its NOTES record
asked where it was drawn. Such steps also carry ``replayed_commit`` and ``replayed_version``.

Each replayed step carries ``replay_step`` in its attrs, so a resumed replay skips the steps it
has already taken (an interrupted one included: it is never run twice).
"""

from __future__ import annotations

from pathlib import Path

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.agents.base import AgentContext
from kernelseek_tui.session.agents.replay_step import ReplayStep
from kernelseek_tui.trace.schema import Event

__all__ = ["REPLAYED_TOOLS", "ReplayAgent", "ReplayStep", "plan_replay"]

REPLAYED_TOOLS = frozenset({"write_file", "edit_file", "evaluate"})


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
    """Replays the session recorded in ``replay_from`` (a session directory), or, given
    ``replay_history`` instead, a kernel's git history (see ``history_plan``).

    ``replay_history`` holds ``repo``, ``kernel`` (the kernel's path in the repo), ``notes``,
    ``repertoire`` (paths), ``rev`` (the commit whose history is replayed, resolved when the
    session starts so a resumed session replays the same plan) and ``session_kernel`` (the
    file the session edits, relative to its workspace)."""

    name: str = "replay"
    raises_decisions: bool = False

    def __init__(
        self, replay_from: str | Path | None = None, replay_history: dict[str, str] | None = None
    ) -> None:
        if (replay_from is None) == (replay_history is None):
            raise KernelseekError("a replay takes a recorded session or a history, one of them")
        self.history = dict(replay_history) if replay_history is not None else None
        self.source_dir: Path | None = None
        if replay_from is not None:
            self.source_dir = Path(replay_from).expanduser().resolve()
            if not self.source_dir.is_dir():
                raise KernelseekError(f"--replay-from {str(self.source_dir)!r} is not a directory")

    @property
    def origin(self) -> str:
        """What is replayed, for each step's ``replayed_from``."""
        if self.history is not None:
            return f"git history of {self.history['kernel']} in {self.history['repo']}"
        return str(self.source_dir)

    def steps(self) -> list[ReplayStep]:
        if self.history is not None:
            return self._history_steps(self.history)
        from kernelseek_tui.trace.reader import read_session, table_to_events

        assert self.source_dir is not None

        events = table_to_events(read_session(self.source_dir))
        if not events:
            raise KernelseekError(f"{self.source_dir} holds no recorded events to replay")
        return plan_replay(events)

    @staticmethod
    def _history_steps(history: dict[str, str]) -> list[ReplayStep]:
        from kernelseek_tui.repertoire import load_repertoire
        from kernelseek_tui.session.agents.history_plan import plan_history_replay

        return plan_history_replay(
            Path(history["repo"]),
            repertoire=load_repertoire(history["repertoire"]),
            kernel_in_repo=history["kernel"],
            notes=Path(history["notes"]),
            session_kernel=history.get("session_kernel"),
            rev=history.get("rev", "HEAD"),
        )

    def run(self, ctx: AgentContext) -> None:
        done = -1
        for event in ctx.past_events:
            step = event.attrs_dict().get("replay_step")
            if isinstance(step, int):
                done = max(done, step)
        origin = self.origin
        for step in self.steps():
            if step.index <= done:
                continue
            attrs = {"replay_step": step.index, "replayed_from": origin, **step.origin_attrs()}
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
