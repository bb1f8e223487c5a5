"""Open (or resume) a session whose agent is outside the process, and run its engine.

The engine runs ``ExternalAgent`` on a thread of its own, so the process that hosts it (the MCP
server's event loop, or ``kernelseek session start`` in the background) stays free to take
requests; each request waits for its reply from the engine. When the engine stops (a finish,
a stop from the inbox, a spent budget, the outside agent leaving) every request still queued,
and every later one, is answered that the session has ended.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.external.agent import AGENT_NAME, DETACHED, ExternalAgent
from kernelseek_tui.external.replies import ExternalReply
from kernelseek_tui.external.transcript_sync import TranscriptSync
from kernelseek_tui.session.config import SessionConfig
from kernelseek_tui.session.engine import Engine, Evaluator, SessionOutcome
from kernelseek_tui.trace.schema import Event


def new_session_id(task_name: str) -> str:
    """A fresh id that sorts by time and says it is an external agent's session."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", task_name).strip("-")[:40] or "task"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-ext-{secrets.token_hex(2)}"


class ExternalHost:
    """One external session's engine on its thread, and the way requests reach it."""

    def __init__(self, engine: Engine, agent: ExternalAgent) -> None:
        self.engine = engine
        self.agent = agent
        self.outcome: SessionOutcome | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def open(
        cls,
        *,
        traces_root: Path,
        task_dir: Path | None = None,
        session_id: str | None = None,
        source: str | None = None,
        objective_sets: list[str] | None = None,
        evaluator: Evaluator | Sequence[Evaluator] | None = None,
        evaluator_spec: str | None = None,
        evaluator_options: dict[str, Any] | None = None,
        decisions: dict[str, Any] | None = None,
        repertoire: Path | None = None,
        attach_wait_s: float | None = None,
        transcripts: TranscriptSync | None = None,
        base_dir: Path | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> ExternalHost:
        """Resume session ``session_id`` when it exists under ``traces_root``, else start it
        (a new id when none is given) on ``task_dir``."""
        from kernelseek_tui.paths import SessionPaths
        from kernelseek_tui.task import load_task

        traces_root = Path(traces_root).resolve()
        existing = traces_root / session_id if session_id else None
        if existing is not None and SessionPaths(existing).meta.exists():
            overrides: dict[str, Any] = {}
            if evaluator_spec:
                overrides["evaluator"] = evaluator_spec
            engine = Engine.resume(
                existing, evaluator=evaluator, overrides=overrides, on_event=on_event
            )
            if engine.config.agent != AGENT_NAME:
                raise KernelseekError(
                    f"session {session_id} is a {engine.config.agent} session, not an external "
                    "agent's: resume it with kernelseek run --resume"
                )
        else:
            if task_dir is None:
                raise KernelseekError("give a TASK_DIR to start a session")
            task = load_task(task_dir, source)
            traces_root.mkdir(parents=True, exist_ok=True)
            # Unset, the config's own default wait holds.
            wait: dict[str, Any] = {} if attach_wait_s is None else {"attach_wait_s": attach_wait_s}
            config = SessionConfig(
                task_dir=task.dir,
                traces_root=traces_root,
                session_id=session_id or new_session_id(task.name),
                agent=AGENT_NAME,
                objective_sets=objective_sets,
                decisions=dict(decisions or {}),
                repertoire=repertoire,
                evaluator=evaluator_spec,
                evaluator_options=dict(evaluator_options or {}),
                source=task.source.relative_to(task.dir).as_posix(),
                **wait,
            )
            engine = Engine.start(config, evaluator=evaluator, on_event=on_event)
        agent = ExternalAgent(
            session_dir=engine.session_dir,
            stats=lambda: engine.state.stats(),
            transcripts=transcripts,
            base_dir=base_dir,
        )
        return cls(engine, agent)

    @property
    def session_id(self) -> str:
        return self.engine.session_id

    @property
    def session_dir(self) -> Path:
        return self.engine.session_dir

    def start(self) -> ExternalHost:
        """Run the engine on its thread (it records the session's start or resume first)."""
        self._thread = threading.Thread(
            target=self._run, name=f"kernelseek-engine-{self.session_id}", daemon=True
        )
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.outcome = self.engine.run(self.agent)
            detail = self.outcome.reason
        except BaseException as error:  # the engine records its own errors; never hang callers
            detail = f"error: {error}"
            raise
        finally:
            self.agent.ended(detail)

    def call(
        self,
        tool: str,
        tool_input: dict[str, Any] | None = None,
        *,
        via: str = "mcp",
        transcript: str | None = None,
    ) -> ExternalReply:
        """Run one request and wait for its reply."""
        return self.agent.submit(tool, tool_input or {}, via=via, transcript=transcript).result()

    async def call_async(
        self, tool: str, tool_input: dict[str, Any] | None = None, *, via: str = "mcp"
    ) -> ExternalReply:
        """``call`` for an event loop: waits without blocking it."""
        future = self.agent.submit(tool, tool_input or {}, via=via)
        return await asyncio.wrap_future(future)

    def leave(self, reason: str = DETACHED, detail: str = "the outside agent went away") -> None:
        """End the session (the outside agent left without finishing)."""
        self.agent.leave(reason, detail)

    def wait(self, timeout_s: float | None = None) -> SessionOutcome | None:
        """Wait for the engine to stop; its outcome (None while it still runs)."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        return self.outcome
