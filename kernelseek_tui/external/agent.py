"""The engine's agent for an agent outside the process: it runs the requests it is given.

Each request (``evaluate``, ``draw_question``, ``finish``, ``status``) becomes a tool call of
the engine exactly as a native agent's would, so the ``tool_call`` is flushed before it runs,
a verified candidate is committed, a decision moment is raised and answered; the questions the
engine queues for the agent (a decision moment's, a person's typed one) go back in the reply.
Between requests the agent passes the engine's checkpoint, so the inbox (pause, stop, a typed
question) and the budgets work while the outside agent is busy elsewhere.
"""

from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek_tui.external.mailbox import Mailbox
from kernelseek_tui.external.replies import ExternalReply, reply_from_outcome
from kernelseek_tui.external.transcript_sync import TranscriptSync
from kernelseek_tui.session.agents.base import AgentContext, SessionStop
from kernelseek_tui.session.tools import ToolOutcome

AGENT_NAME = "external"
TOOLS = ("evaluate", "draw_question", "finish", "status")
DETACHED = "detached"  # the end reason when the outside agent went away without finishing
POLL_S = 0.2


@dataclass(slots=True)
class ExternalRequest:
    """One request from the MCP server in this process; its reply arrives in ``future``."""

    tool: str
    tool_input: dict[str, Any]
    via: str = "mcp"
    transcript: str | None = None
    future: Future[ExternalReply] = field(default_factory=Future)


class ExternalAgent:
    """An ``Agent`` whose decisions are made outside the process (see the module docstring)."""

    name = AGENT_NAME
    raises_decisions = True

    def __init__(
        self,
        *,
        session_dir: Path,
        stats: Callable[[], dict[str, Any]] | None = None,
        transcripts: TranscriptSync | None = None,
        poll_s: float = POLL_S,
        base_dir: Path | None = None,
    ) -> None:
        self._requests: queue.Queue[ExternalRequest | None] = queue.Queue()
        self._mailbox = Mailbox(session_dir)
        self._stats = stats or dict
        self._transcripts = transcripts
        self._poll_s = poll_s
        self._base_dir = base_dir or Path.cwd()  # where a relative ``path`` of evaluate starts
        self._stop_after: SessionStop | None = None
        self._leaving: tuple[str, str] | None = None
        self._ended = threading.Event()
        self._end_text = "the session has ended"

    # -- the outside's side ------------------------------------------------------------------

    def submit(
        self,
        tool: str,
        tool_input: dict[str, Any],
        *,
        via: str = "mcp",
        transcript: str | None = None,
    ) -> Future[ExternalReply]:
        """Queue a request; its reply arrives in the returned future."""
        request = ExternalRequest(tool, dict(tool_input), via, transcript)
        if self._ended.is_set():
            request.future.set_result(ExternalReply(self._end_text, is_error=True, ended=True))
        else:
            self._requests.put(request)
        return request.future

    def leave(self, reason: str = DETACHED, detail: str = "the outside agent went away") -> None:
        """End the session at the agent's next wait (the MCP client disconnected, SIGTERM);
        the first reason given is the one recorded."""
        if self._leaving is None:
            self._leaving = (reason, detail)
        self._requests.put(None)

    def ended(self, detail: str) -> None:
        """The engine has stopped: answer what is still queued, and every later request."""
        self._end_text = f"the session has ended ({detail})"
        self._ended.set()
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                break
            if request is not None:
                request.future.set_result(ExternalReply(self._end_text, is_error=True, ended=True))
        for mail in self._mailbox.take():
            self._mailbox.answer(mail, ExternalReply(self._end_text, is_error=True, ended=True))

    # -- the engine's side -------------------------------------------------------------------

    def run(self, ctx: AgentContext) -> None:
        try:
            while True:
                if self._leaving is not None:
                    raise SessionStop(*self._leaving)
                for mail in self._mailbox.take():
                    reply = self._serve(ctx, mail.tool, mail.tool_input, mail.via, mail.transcript)
                    self._mailbox.answer(mail, reply)
                    self._raise_pending_stop()
                try:
                    request = self._requests.get(timeout=self._poll_s)
                except queue.Empty:
                    request = None
                if request is not None:
                    try:
                        reply = self._serve(
                            ctx, request.tool, request.tool_input, request.via, request.transcript
                        )
                    except BaseException as error:  # the future must never wait forever
                        request.future.set_result(
                            ExternalReply(f"not completed: {error}", is_error=True, ended=True)
                        )
                        raise
                    request.future.set_result(reply)
                    self._raise_pending_stop()
                ctx.checkpoint()
        except SessionStop:
            self._sync_transcript(ctx)  # the end: the agent's last words join the trace
            raise

    def _serve(
        self,
        ctx: AgentContext,
        tool: str,
        tool_input: dict[str, Any],
        via: str,
        transcript: str | None,
    ) -> ExternalReply:
        """Run one request through the engine and tell its outcome."""
        imported = self._sync_transcript(ctx, transcript)
        if tool == "status":
            return self._status(ctx, via)
        if tool == "import_transcript":
            where = self._transcripts.path if self._transcripts is not None else None
            if where is None:
                return ExternalReply("no Claude Code transcript found to import", is_error=True)
            return ExternalReply(f"{imported} new events imported from {where}")
        if tool not in TOOLS:
            return ExternalReply(
                f"unknown request {tool!r}; the tools are {', '.join(TOOLS)}", is_error=True
            )
        attrs = {"via": via}
        if tool == "evaluate":
            refused = self._take_given_file(ctx, tool_input)
            if refused is not None:
                outcome = ctx.skip_tool(tool, tool_input, call_id=_call_id(), reason=refused)
                return reply_from_outcome(outcome, ctx.take_questions())
        if tool == "finish":
            ctx.checkpoint()  # a question typed just now comes before the finish
            waiting = ctx.take_questions()
            if waiting:
                outcome = ctx.skip_tool(
                    tool,
                    tool_input,
                    call_id=_call_id(),
                    reason="the harness has a question for you first",
                )
                return ExternalReply(
                    "Not finished: the harness has a question for you first.", questions=waiting
                )
        try:
            outcome = ctx.call_tool(tool, tool_input, attrs=attrs)
        except SessionStop as stop:
            # The call was recorded with its result; the agent is told, then the session ends.
            self._stop_after = stop
            end = ToolOutcome(f"not completed: the session is ending ({stop.reason})", True)
            return reply_from_outcome(end, ctx.take_questions(), ended=True)
        return reply_from_outcome(outcome, ctx.take_questions(), ended=ctx.finishing)

    def _raise_pending_stop(self) -> None:
        if self._stop_after is not None:
            stop, self._stop_after = self._stop_after, None
            raise stop

    def _status(self, ctx: AgentContext, via: str) -> ExternalReply:
        stats = self._stats()
        data = {
            "session_id": ctx.session_id,
            "task": ctx.task.name,
            "workspace": str(ctx.workspace),
            "kernel": str(ctx.workspace / ctx.kernel_path),
            "objective_sets": ctx.objective_sets,
            **stats,
        }
        best = stats.get("best_speedup")
        text = (
            f"session {ctx.session_id} on {ctx.task.name}: {stats.get('evals', 0)} evaluations, "
            f"{stats.get('commits', 0)} commits, best verified speedup "
            + (f"{best:.3f}x" if isinstance(best, float) else "none")
            + f"\nthe kernel judged: {ctx.workspace / ctx.kernel_path}"
            + "\n(edit it there, or pass evaluate a file of yours to copy over it)"
        )
        ctx.record(
            "control", flush=True, text="status asked", attrs={"action": "status", "via": via}
        )
        return ExternalReply(text, questions=ctx.take_questions(), data=data)

    def _take_given_file(self, ctx: AgentContext, tool_input: dict[str, Any]) -> str | None:
        """``evaluate`` with ``path``: that file becomes the workspace's kernel before it is
        judged (so the commit holds exactly what was judged). None, or why it is refused."""
        given = tool_input.get("path")
        if given in (None, ""):
            return None
        if not isinstance(given, str):
            return "path must be a string"
        source = Path(given).expanduser()
        if not source.is_absolute():
            source = self._base_dir / source
        if not source.is_file():
            return f"no such file: {given}"
        target = ctx.workspace / ctx.kernel_path
        if source.resolve() != target.resolve():
            shutil.copyfile(source, target)
        return None

    def _sync_transcript(self, ctx: AgentContext, hint: str | None = None) -> int:
        if self._transcripts is None:
            return 0
        return self._transcripts.sync(ctx, hint=Path(hint) if hint else None)


def _call_id() -> str:
    import uuid

    return f"ks_{uuid.uuid4().hex[:20]}"
