"""The engine: one agent, one task, one trace, one branch.

The engine hands the agent an ``AgentContext`` (itself) and records everything the agent does:

- every tool call as a ``tool_call`` event flushed to the WAL *before* the tool runs, and its
  ``tool_result`` after, so a crash never hides a call that ran (see ``resume``);
- every evaluation as an ``eval`` event; a verified candidate (every scenario of the objective
  passed) is committed to the session branch with the last question as its ``Question``
  trailer, then recorded as a ``commit`` event;
- decision moments (plateau, limit claim, finish request, failure streak) as ``decision``
  events, each answered by a ``question``: typed by a person when one is attached (the TUI's
  heartbeat, see ``inbox``) and answers within ``attach_wait_s``, else drawn from the repertoire;
- the control inbox (questions, pause, resume, stop) and the budgets, checked at every tool
  call and before every model call; a spent budget ends the session with a ``control`` event.

The judge is the Task loaded from the original task directory when the session started; only
the candidate kernel (and its ``knobs.json``) are read from the workspace.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.decisions import DecisionMoment
from kernelseek_tui.errors import KernelseekError, one_line
from kernelseek_tui.history import SessionHistory, check_session_id
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.agents.base import Agent, SessionStop
from kernelseek_tui.session.config import SessionConfig
from kernelseek_tui.session.engine.asking import AskingMixin
from kernelseek_tui.session.engine.batch import evaluate_many
from kernelseek_tui.session.engine.judging import JudgingMixin
from kernelseek_tui.session.engine.resume import reconcile
from kernelseek_tui.session.evaluator import Evaluator
from kernelseek_tui.session.meta import (
    FINISHED,
    RUNNING,
    SessionMeta,
    is_live,
    process_start_ticks,
    read_meta,
    write_meta,
)
from kernelseek_tui.session.shell_confinement import ShellConfinement
from kernelseek_tui.session.tools import (
    FILE_TOOLS,
    TOOL_NAMES,
    ToolError,
    ToolOutcome,
    run_shell,
    scrubbed_env,
)
from kernelseek_tui.task import load_task
from kernelseek_tui.trace.schema import Event


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """How a run of the engine ended."""

    session_id: str
    session_dir: Path
    reason: str  # finish, done, stop, budget_calls, budget_usd, budget_hours, interrupted, error
    detail: str
    stats: dict[str, Any]


class Engine(JudgingMixin, AskingMixin):
    """One session (see the module docstring). Build it with ``start`` or ``resume``."""

    # -- building -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        config: SessionConfig,
        *,
        evaluator: Evaluator | Sequence[Evaluator] | None = None,
        on_event: Callable[[Event], None] | None = None,
        writer_options: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Engine:
        """A new session: its branch and worktree, its directory, its ``session.json``.

        ``evaluator``: the judge (default: the task's own, see ``config.evaluator``); a list
        of them is one per GPU, named by ``config.gpus`` (else ``0``, ``1``, ...).
        """
        check_session_id(config.session_id)
        session_dir = config.session_dir
        if SessionPaths(session_dir).meta.exists():
            raise KernelseekError(
                f"session {config.session_id!r} already exists under {config.traces_root}: "
                "resume it with --resume, or pick another --session-id"
            )
        task = load_task(config.task_dir, config.source)
        config.task_dir = task.dir
        for name in config.objective_sets or []:
            task.scenarios(name)  # an unknown set is an error now, not at the first evaluation
        history = SessionHistory.create(task.dir, config.session_id)
        session_dir.mkdir(parents=True, exist_ok=True)
        meta = SessionMeta(
            session_id=config.session_id,
            task_dir=str(task.dir),
            task=task.name,
            agent=config.agent,
            model=config.model,
            repo=str(history.repo),
            branch=history.branch,
            worktree=str(history.worktree),
            base_sha=history.base_sha,
            status=RUNNING,
            pid=os.getpid(),
            pid_start=process_start_ticks(os.getpid()),
            host=socket.gethostname(),
            objective_sets=config.objective_sets,
            config=config.to_dict(),
        )
        write_meta(session_dir, meta)
        return cls(
            config=config,
            meta=meta,
            history=history,
            task=task,
            events=[],
            evaluator=evaluator,
            resumed=False,
            on_event=on_event,
            writer_options=writer_options,
            sleep=sleep,
        )

    @classmethod
    def resume(
        cls,
        session_dir: Path,
        *,
        evaluator: Evaluator | Sequence[Evaluator] | None = None,
        overrides: dict[str, Any] | None = None,
        on_event: Callable[[Event], None] | None = None,
        writer_options: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Engine:
        """Continue a session that is not running (crashed, or ended) from its trace and branch.

        ``overrides`` replaces settings stored in ``session.json`` (new budgets, say).
        """
        from kernelseek_tui.trace.reader import read_session, table_to_events

        session_dir = Path(session_dir).resolve()
        meta = read_meta(session_dir)
        if is_live(meta):
            raise KernelseekError(
                f"session {meta.session_id} is still {meta.status} (pid {meta.pid}); "
                "stop it first or attach to it"
            )
        data = dict(meta.config)
        if not data:
            raise KernelseekError(f"{session_dir}/session.json has no settings to resume from")
        events = table_to_events(read_session(session_dir))
        _check_judging_settings(data, events, session_dir)
        data.update({k: v for k, v in (overrides or {}).items() if v is not None})
        data["traces_root"] = str(session_dir.parent)
        data["session_id"] = meta.session_id
        config = SessionConfig.from_dict(data)
        task = load_task(meta.task_dir, config.source)
        history = SessionHistory.open(Path(meta.repo), meta.session_id)
        return cls(
            config=config,
            meta=meta,
            history=history,
            task=task,
            events=events,
            evaluator=evaluator,
            resumed=True,
            on_event=on_event,
            writer_options=writer_options,
            sleep=sleep,
        )

    # -- running --------------------------------------------------------------------------

    def run(self, agent: Agent) -> SessionOutcome:
        """Run ``agent`` until it is done or the session must end; record how it ended."""
        self._decisions_enabled = bool(getattr(agent, "raises_decisions", True))
        self._run_clock = time.monotonic()
        self.meta.pid = os.getpid()
        self.meta.pid_start = process_start_ticks(os.getpid())
        self.meta.host = socket.gethostname()
        self.meta.status = RUNNING
        self.meta.end_reason = None
        self.meta.config = self.config.to_dict()  # a resume may have changed budgets
        self.meta.extra["questions_mode"] = self.config.questions_mode
        self._write_meta()
        self._collected = []
        self._append(
            "control",
            flush=True,
            text=f"session {'resumed' if self.resumed else 'started'}: {agent.name} on "
            f"{self._task.name}",
            attrs={
                "action": "resume" if self.resumed else "start",
                "agent": agent.name,
                "model": self.config.model,
                "pid": os.getpid(),
                "budgets": self.config.budgets.describe(),
                "objective_sets": self.objective_sets,
                "workspace": str(self.workspace),
                "branch": self.history.branch,
                "questions_mode": self.questions_mode,
                "tools": [spec.name for spec in self.offered_tools],
                "judging": judging_settings(self.config.to_dict()),
            },
        )
        reason, detail = "done", f"the {agent.name} agent has nothing more to do"
        restore = self._install_signal_handlers()
        try:
            if self.resumed:
                reconcile(self)
            self._past_events.extend(self._collected)
            self._collected = None
            agent.run(self)
            if self._stop is not None:
                reason, detail = self._stop
        except SessionStop as stop:
            reason, detail = stop.reason, stop.detail
        except KeyboardInterrupt:
            reason, detail = "interrupted", "interrupted from the keyboard"
        except KernelseekError as error:  # said for a person already: one line, no traceback
            self.record_error(str(error), attrs={"where": "agent"})
            reason, detail = "error", str(error)
        except Exception as error:
            self.record_exception(error, where="agent")
            reason, detail = "error", one_line(error)
        finally:
            restore()
            self._close_slots()
        self._end(reason, detail)
        return SessionOutcome(self.session_id, self.session_dir, reason, detail, self._stats())

    def _end(self, reason: str, detail: str) -> None:
        self._append(
            "control",
            flush=True,
            text=f"session ended: {reason}" + (f" ({detail})" if detail else ""),
            attrs={"action": "end", "reason": reason, "detail": detail, **self._stats()},
        )
        self.writer.close()
        self.meta.status = FINISHED
        self.meta.end_reason = reason
        self._write_meta()

    def _install_signal_handlers(self) -> Callable[[], None]:
        """SIGTERM asks the session to stop at the next checkpoint (only in the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def on_term(signum: int, frame: object) -> None:
            self._terminate.set()

        previous = signal.signal(signal.SIGTERM, on_term)

        def restore() -> None:
            signal.signal(signal.SIGTERM, previous)

        return restore

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
        from kernelseek_tui.trace.pricing import estimate_cost

        tokens = {
            key: usage.get(key)
            for key in (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            )
        }
        cost = estimate_cost(model, **tokens)
        event = self._append(
            "message",
            flush=True,
            role="assistant",
            source="agent",
            model=model,
            response_id=response_id,
            stop_reason=stop_reason,
            cost_usd=cost,
            text=text or None,
            turn=turn,
            duration_ms=duration_ms,
            attrs={"content": content, **(attrs or {})},
            **tokens,
        )
        budget = self.config.budgets.usd
        if budget is not None:
            if cost is None and not self._warned_unpriced:
                self._warned_unpriced = True
                self.record_error(
                    f"no price known for model {model!r}: the USD budget cannot be kept",
                    attrs={"warning": "unpriced_model", "model": model},
                )
            if self.state.cost_usd >= budget:
                self._request_stop("budget_usd", f"${self.state.cost_usd:.4f} of ${budget:g}")
        self._touch_meta()
        return event

    # -- tools ----------------------------------------------------------------------------

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
        self.checkpoint()
        call = self.record_tool_call(
            name,
            tool_input,
            call_id=call_id,
            turn=turn if turn is not None else self.state.turn + 1,
            parent_event_id=parent_event_id,
            attrs=attrs,
        )
        started = time.monotonic()
        outcome: ToolOutcome | None = None
        stop: SessionStop | None = None
        try:
            if not isinstance(tool_input, dict):
                raise ToolError("the tool input must be a JSON object")
            outcome, moment = self._dispatch(name, tool_input, call)
            if moment is not None:
                self.decide(moment)
        except (ToolError, KernelseekError) as error:
            outcome = ToolOutcome(str(error), is_error=True)
        except SessionStop as error:
            stop = error
        except Exception as error:
            self.record_exception(error, tool=name)
            outcome = ToolOutcome(f"internal error in {name}: {error}", is_error=True)
        if outcome is None:
            assert stop is not None
            outcome = ToolOutcome(f"not completed: the session is ending ({stop.reason})", True)
        self.record_tool_result(call, outcome, duration_ms=(time.monotonic() - started) * 1000)
        self.after_tool_call()
        if stop is not None:
            raise stop
        return outcome

    def evaluate_many(
        self,
        inputs: list[dict[str, Any]],
        *,
        turn: int | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> list[ToolOutcome]:
        """``evaluate`` once per input, up to ``eval_slots`` at once (see ``session.batch``)."""
        return evaluate_many(self, inputs, turn=turn, attrs=attrs)

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
        call = self.record_tool_call(
            name,
            tool_input,
            call_id=call_id,
            turn=turn,
            parent_event_id=parent_event_id,
            attrs={"skipped": True},
            flush=False,  # it never runs: its result, flushed, follows at once
        )
        outcome = ToolOutcome(f"not run: {reason}", is_error=True)
        self.record_tool_result(call, outcome, attrs={"skipped": True})
        return outcome

    def _shell_confinement(self) -> ShellConfinement | None:
        """How the agent's shell runs, settled on its first command (session/
        shell_confinement.py); None where the session asked for no confinement. Where it asked
        and the machine cannot, an ``error`` event says so once and the shell runs as before."""
        if not self.config.confine_shell:
            return None
        if self._shell is None:
            self._shell = ShellConfinement.start(self._workspace.root, self.paths.dir / "shell-tmp")
            if not self._shell.confined:
                self.record_error(f"the agent's shell runs unconfined: {self._shell.said}")
        return self._shell

    def _dispatch(
        self, name: str, args: dict[str, Any], call: Event
    ) -> tuple[ToolOutcome, DecisionMoment | None]:
        ws = self._workspace
        if name in FILE_TOOLS:
            if name == "read_file":
                return ws.read_file(args.get("path"), args.get("offset"), args.get("limit")), None
            if name == "write_file":
                return ws.write_file(args.get("path"), args.get("content")), None
            if name == "edit_file":
                return ws.edit_file(
                    args.get("path"), args.get("old_text"), args.get("new_text")
                ), None
            return ws.list_files(args.get("path")), None
        if name == "run_shell":
            limit = self.config.shell_timeout_s
            asked = args.get("timeout_s")
            if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
                limit = min(limit, float(asked))
            confinement = self._shell_confinement()
            outcome = run_shell(
                args.get("command"),
                ws.root,
                timeout_s=limit,
                output_chars=self.config.shell_output_chars,
                env=confinement.environment(scrubbed_env()) if confinement else None,
                prefix=confinement.prefix if confinement else (),
            )
            return outcome, None
        if name == "evaluate":
            return self._evaluate(args, call)
        if name == "draw_question":
            return self._draw_question(), None
        if name == "finish":
            return self._finish(str(args.get("reason") or "")), None
        raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")


# The settings that decide how a candidate is judged or whether the agent is confined: a resume
# takes them from session.json, a file the agent's user can write (a review, 2026-12-07 late:
# a stand-in evaluator and the quick set as the objective gave a 42x "new best").
JUDGING_SETTINGS = (
    "evaluator",
    "evaluator_options",
    "objective_sets",
    "source",
    "confine_shell",
    "paired_timing",
)


def judging_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {key: config.get(key) for key in JUDGING_SETTINGS}


def _check_judging_settings(stored: dict[str, Any], events: list[Event], where: Path) -> None:
    """Refuse a resume whose session.json holds other judging settings than the trace's record
    of the session's start (sessions from before that record: nothing to compare). Overrides
    given to the resume itself are the person's and are applied after."""
    started = next(
        (e for e in events if e.kind == "control" and e.attrs_dict().get("action") == "start"),
        None,
    )
    recorded = started.attrs_dict().get("judging") if started is not None else None
    if not isinstance(recorded, dict):
        return
    now = judging_settings(stored)
    differ = sorted(
        key for key in JUDGING_SETTINGS if key in recorded and recorded[key] != now[key]
    )
    if differ:
        said = "; ".join(f"{key}: {recorded[key]!r} then, {now[key]!r} now" for key in differ)
        raise KernelseekError(
            f"{where}/session.json no longer holds the judging settings the session started "
            f"with ({said}): not resumed. Put them back, or give them to the resume as options"
        )
