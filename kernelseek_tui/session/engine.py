"""The session engine: one agent, one task, one trace, one branch.

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

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.decisions import DecisionConfig, DecisionDetector, DecisionMoment
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history import SessionHistory, check_session_id
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session import evaluation, inbox
from kernelseek_tui.session.agents.base import Agent, SessionStop
from kernelseek_tui.session.config import SessionConfig
from kernelseek_tui.session.evaluator import (
    Evaluator,
    TaskEvaluator,
    candidate_sha,
    load_evaluator_factory,
)
from kernelseek_tui.session.inbox import InboxCommand, InboxReader
from kernelseek_tui.session.knobs import KNOBS_FILE, check_knobs, read_knobs, write_knobs
from kernelseek_tui.session.meta import (
    FINISHED,
    PAUSED,
    RUNNING,
    SessionMeta,
    is_live,
    process_start_ticks,
    read_meta,
    write_meta,
)
from kernelseek_tui.session.questions import SUGGESTIONS, QuestionDesk
from kernelseek_tui.session.state import SessionState, better, event_attrs
from kernelseek_tui.session.tools import (
    FILE_TOOLS,
    TOOL_NAMES,
    ToolError,
    ToolOutcome,
    Workspace,
    run_shell,
)
from kernelseek_tui.task import Task, load_task
from kernelseek_tui.trace.schema import Event

__all__ = ["Engine", "Evaluator", "SessionOutcome"]

log = logging.getLogger("kernelseek_tui.session")

EVALS_DIR = "evals"  # full evaluation results, one JSON file per eval event
POLL_S = 0.2
META_EVERY_S = 5.0
AGENT_EVENT_KINDS = frozenset({"message", "thinking", "compaction", "error", "control"})


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """How a run of the engine ended."""

    session_id: str
    session_dir: Path
    reason: str  # finish, done, stop, budget_calls, budget_usd, budget_hours, interrupted, error
    detail: str
    stats: dict[str, Any]


class Engine:
    """One session (see the module docstring). Build it with ``start`` or ``resume``."""

    def __init__(
        self,
        *,
        config: SessionConfig,
        meta: SessionMeta,
        history: SessionHistory,
        task: Task,
        events: list[Event],
        evaluator: Evaluator | None,
        resumed: bool,
        on_event: Callable[[Event], None] | None = None,
        writer_options: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from kernelseek_tui.trace.writer import TraceWriter

        self.config = config
        self.meta = meta
        self.history = history
        self._task = task
        self.paths = SessionPaths(config.session_dir)
        self._workspace = Workspace(history.task_dir)
        self._kernel_path = task.source.relative_to(task.dir).as_posix()
        self._evaluator = evaluator
        self.resumed = resumed
        self._on_event = on_event
        self._sleep = sleep
        self._past_events = list(events)
        self.state = SessionState.from_events(events)
        self.decision_config = DecisionConfig(**config.decisions)
        judged = [e for e in events if e.kind == "decision" or _is_objective_eval(e)]
        self.detector = DecisionDetector.replay(judged, self.decision_config)
        self.desk = QuestionDesk(
            repertoire_path=config.repertoire,
            traces_root=config.traces_root,
            session_id=config.session_id,
            seed=config.seed,
        )
        self.inbox = InboxReader(self.paths.inbox, self.state.inbox_offset)
        self._inbox_queue: deque[InboxCommand] = deque()
        self._pending_questions: list[str] = []
        self._stop: tuple[str, str] | None = None
        self._decisions_enabled = True
        self._commit_policy = "verified"
        self._run_clock = time.monotonic()
        self._meta_written = 0.0
        self._collected: list[Event] | None = None
        self._reported_problems = 0
        self._warned_unpriced = False
        self._terminate = threading.Event()
        self.writer = TraceWriter(self.paths.dir, config.session_id, **(writer_options or {}))

    # -- building -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        config: SessionConfig,
        *,
        evaluator: Evaluator | None = None,
        on_event: Callable[[Event], None] | None = None,
        writer_options: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Engine:
        """A new session: its branch and worktree, its directory, its ``session.json``."""
        check_session_id(config.session_id)
        session_dir = config.session_dir
        if SessionPaths(session_dir).meta.exists():
            raise KernelseekError(
                f"session {config.session_id!r} already exists under {config.traces_root}: "
                "resume it with --resume, or pick another --session-id"
            )
        task = load_task(config.task_dir)
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
        evaluator: Evaluator | None = None,
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
        data.update({k: v for k, v in (overrides or {}).items() if v is not None})
        data["traces_root"] = str(session_dir.parent)
        data["session_id"] = meta.session_id
        config = SessionConfig.from_dict(data)
        task = load_task(meta.task_dir)
        history = SessionHistory.open(Path(meta.repo), meta.session_id)
        events = table_to_events(read_session(session_dir))
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

    # -- what the agent sees --------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.config.session_id

    @property
    def session_dir(self) -> Path:
        return self.paths.dir

    @property
    def task(self) -> Task:
        return self._task

    @property
    def workspace(self) -> Path:
        return self._workspace.root

    @property
    def kernel_path(self) -> str:
        return self._kernel_path

    @property
    def objective_sets(self) -> list[str] | None:
        return list(self.config.objective_sets) if self.config.objective_sets else None

    @property
    def past_events(self) -> list[Event]:
        return self._past_events

    @property
    def finishing(self) -> bool:
        return self._stop is not None

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            options = self.config.evaluator_options
            if self.config.evaluator:
                factory = load_evaluator_factory(self.config.evaluator)
                self._evaluator = factory(self._task, **options)
            else:
                self._evaluator = TaskEvaluator(self._task, **options)
        return self._evaluator

    # -- running --------------------------------------------------------------------------

    def run(self, agent: Agent) -> SessionOutcome:
        """Run ``agent`` until it is done or the session must end; record how it ended."""
        self._decisions_enabled = bool(getattr(agent, "raises_decisions", True))
        self._commit_policy = getattr(agent, "commit_policy", "verified")
        self._run_clock = time.monotonic()
        self.meta.pid = os.getpid()
        self.meta.pid_start = process_start_ticks(os.getpid())
        self.meta.host = socket.gethostname()
        self.meta.status = RUNNING
        self.meta.end_reason = None
        self.meta.config = self.config.to_dict()  # a resume may have changed budgets
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
            },
        )
        reason, detail = "done", f"the {agent.name} agent has nothing more to do"
        restore = self._install_signal_handlers()
        try:
            if self.resumed:
                from kernelseek_tui.session.resume import reconcile

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
        except Exception as error:
            self._append(
                "error",
                flush=True,
                text=traceback.format_exc()[-6000:],
                attrs={"error": f"{type(error).__name__}: {error}", "where": "agent"},
            )
            reason, detail = "error", f"{type(error).__name__}: {error}"
        finally:
            restore()
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

    # -- the trace ------------------------------------------------------------------------

    def _append(self, kind: str, *, flush: bool = False, **fields: Any) -> Event:
        fields.setdefault("role", "harness")
        fields.setdefault("source", "harness")
        event = self.writer.append(kind=kind, **fields)
        self.state.observe(event)
        if flush:
            self.writer.flush()
        if self._collected is not None:
            self._collected.append(event)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:  # a display callback must never break the session
                log.exception("on_event callback failed")
        return event

    def record(self, kind: str, *, flush: bool = False, **fields: Any) -> Event:
        """Append an agent's own event (message, thinking, compaction, error, control)."""
        if kind not in AGENT_EVENT_KINDS:
            raise KernelseekError(f"agents record {sorted(AGENT_EVENT_KINDS)}, not {kind!r}")
        return self._append(kind, flush=flush, **fields)

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
                self._append(
                    "error",
                    flush=True,
                    text=f"no price known for model {model!r}: the USD budget cannot be kept",
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
        call_id = call_id or f"ks_{uuid.uuid4().hex[:20]}"
        turn = turn if turn is not None else self.state.turn + 1
        call = self._append(
            "tool_call",
            flush=True,
            role="assistant",
            source="agent",
            tool_name=name,
            tool_call_id=call_id,
            tool_input=tool_input if isinstance(tool_input, dict) else {"input": tool_input},
            turn=turn,
            parent_event_id=parent_event_id,
            attrs=attrs or None,
        )
        started = time.monotonic()
        outcome: ToolOutcome | None = None
        stop: SessionStop | None = None
        try:
            if not isinstance(tool_input, dict):
                raise ToolError("the tool input must be a JSON object")
            outcome, moment = self._dispatch(name, tool_input, call)
            if moment is not None:
                self._decide(moment)
        except (ToolError, KernelseekError) as error:
            outcome = ToolOutcome(str(error), is_error=True)
        except SessionStop as error:
            stop = error
        except Exception as error:
            self._append(
                "error",
                flush=True,
                text=traceback.format_exc()[-6000:],
                attrs={"error": f"{type(error).__name__}: {error}", "tool": name},
            )
            outcome = ToolOutcome(f"internal error in {name}: {error}", is_error=True)
        if outcome is None:
            assert stop is not None
            outcome = ToolOutcome(f"not completed: the session is ending ({stop.reason})", True)
        self._append(
            "tool_result",
            flush=True,
            role="user",
            source="harness",
            tool_name=name,
            tool_call_id=call_id,
            text=outcome.text,
            is_error=outcome.is_error,
            duration_ms=(time.monotonic() - started) * 1000,
            turn=turn,
            parent_event_id=call.event_id,
        )
        self._after_call()
        if stop is not None:
            raise stop
        return outcome

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
        call = self._append(
            "tool_call",
            role="assistant",
            source="agent",
            tool_name=name,
            tool_call_id=call_id,
            tool_input=tool_input if isinstance(tool_input, dict) else {"input": tool_input},
            turn=turn,
            parent_event_id=parent_event_id,
            attrs={"skipped": True},
        )
        outcome = ToolOutcome(f"not run: {reason}", is_error=True)
        self._append(
            "tool_result",
            flush=True,
            role="user",
            tool_name=name,
            tool_call_id=call_id,
            text=outcome.text,
            is_error=True,
            turn=turn,
            parent_event_id=call.event_id,
            attrs={"skipped": True},
        )
        return outcome

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
            outcome = run_shell(
                args.get("command"),
                ws.root,
                timeout_s=limit,
                output_chars=self.config.shell_output_chars,
            )
            return outcome, None
        if name == "evaluate":
            return self._evaluate(args, call)
        if name == "draw_question":
            return self._draw_question(), None
        if name == "finish":
            return self._finish(str(args.get("reason") or "")), None
        raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")

    def _after_call(self) -> None:
        budget = self.config.budgets.calls
        if budget is not None and self.state.tool_calls >= budget:
            self._request_stop("budget_calls", f"{self.state.tool_calls} tool calls")
        self._check_time()
        self._touch_meta()

    # -- evaluating and committing --------------------------------------------------------

    def _evaluate(
        self, args: dict[str, Any], call: Event
    ) -> tuple[ToolOutcome, DecisionMoment | None]:
        task = self._task
        set_name = args.get("set")
        if set_name is not None and (not isinstance(set_name, str) or set_name not in task.sets):
            known = ", ".join(sorted(task.sets))
            raise ToolError(f"unknown scenario set {set_name!r}; the sets are {known}")
        root = self._workspace.root
        if args.get("knobs") is not None:
            knobs: dict[str, int] | None = check_knobs(task, args["knobs"])
            write_knobs(root, knobs or {})
        else:
            knobs = read_knobs(root, task)
        source = root / self._kernel_path
        if not source.is_file():
            raise ToolError(f"the kernel {self._kernel_path!r} is missing from the workspace")
        override = self.objective_sets
        if set_name is None:
            sets, objective = override, True
        else:
            sets, objective = [set_name], override == [set_name]
        what = _describe_sets(task, sets) if objective else f"set {set_name!r}"
        identity = candidate_sha(source.read_bytes(), knobs)
        try:
            result = self.evaluator(source, sets, knobs=knobs or None)
        except KernelseekError as error:
            raise ToolError(f"the evaluation could not be made: {error}") from None
        verified = evaluation.is_verified(result)
        speedup = evaluation.finite_or_none(result.summary.geomean_speedup)
        vs_fa3 = evaluation.finite_or_none(result.summary.vs_fa3)
        best = better(self.state.best_speedup, speedup) if objective and verified else None
        best = best if best is not None else self.state.best_speedup
        will_commit = objective and verified and self._worth_committing(speedup)
        result_file = f"{EVALS_DIR}/{call.seq}-{result.eval_id}.json"
        (self.paths.dir / EVALS_DIR).mkdir(exist_ok=True)
        (self.paths.dir / result_file).write_text(result.to_json())
        eval_event = self._append(
            "eval",
            flush=True,
            eval_id=result.eval_id,
            candidate_sha=identity,
            verdict=result.verdict,
            scenarios_passed=result.summary.passed,
            scenarios_total=result.summary.total,
            speedup=speedup,
            best_speedup=best,
            vs_fa3=vs_fa3,
            text=evaluation.summary_text(result, what=what, best=best),
            parent_event_id=call.event_id,
            turn=call.turn,
            attrs={
                **evaluation.summary_attrs(result),
                "objective": objective,
                "verified": verified,
                "requested_set": set_name,
                "knobs": knobs,
                "will_commit": will_commit,
                "result_file": result_file,
                "tool_call_id": call.tool_call_id,
            },
        )
        committed: tuple[int | None, str] | None = None
        not_committed = None
        if will_commit:
            committed = self.commit_eval(eval_event, result, knobs is not None)
        elif objective and verified:
            not_committed = "not committed: not faster than the best committed candidate"
        elif verified:
            not_committed = "not committed: only an evaluation of the objective verifies"
        self._touch_meta(force=True)
        text = evaluation.summary_text(
            result, what=what, best=best, committed=committed, not_committed=not_committed
        )
        moment = None
        if objective and self._decisions_enabled:
            moment = self.detector.observe_eval(result.verdict, speedup)
        return ToolOutcome(text, data={"result": result, "committed": committed}), moment

    def _worth_committing(self, speedup: float | None) -> bool:
        if self._commit_policy != "improvements":
            return True
        # The starting kernel is 1.0x by definition: only something faster is an improvement.
        floor = max(1.0, self.state.best_committed or 0.0)
        return speedup is not None and speedup > floor

    def commit_eval(
        self, eval_event: Event, result: Any, with_knobs: bool, *, question: str | None = None
    ) -> tuple[int | None, str] | None:
        """Commit the workspace candidate of ``eval_event`` and record the ``commit`` event."""
        root = self._workspace.root
        paths = [root / self._kernel_path]
        if with_knobs or (root / KNOBS_FILE).exists():
            paths.append(root / KNOBS_FILE)
        try:
            sha = self.history.commit_candidate(
                paths,
                result,
                seq=eval_event.seq,
                question=question if question is not None else self.state.last_question,
            )
            candidate = self.history.candidate_at(sha)
        except KernelseekError as error:
            self._append(
                "error",
                flush=True,
                text=f"could not commit the candidate of eval seq {eval_event.seq}: {error}",
                attrs={"eval_seq": eval_event.seq},
            )
            return None
        number = candidate.n if candidate else None
        self.record_commit(eval_event, sha, number)
        return number, sha

    def record_commit(self, eval_event: Event, sha: str, number: int | None, **extra: Any) -> Event:
        """The ``commit`` event of a candidate committed for ``eval_event``."""
        return self._append(
            "commit",
            flush=True,
            git_sha=sha,
            branch=self.history.branch,
            candidate_sha=eval_event.candidate_sha,
            eval_id=eval_event.eval_id,
            speedup=eval_event.speedup,
            vs_fa3=eval_event.vs_fa3,
            scenarios_passed=eval_event.scenarios_passed,
            scenarios_total=eval_event.scenarios_total,
            parent_event_id=eval_event.event_id,
            text=f"candidate {number}: {evaluation.fmt_ratio(eval_event.speedup)} ({sha[:10]})",
            attrs={"eval_seq": eval_event.seq, "n": number, "speedup": eval_event.speedup, **extra},
        )

    # -- questions ------------------------------------------------------------------------

    def _draw_question(self) -> ToolOutcome:
        ranked = self.desk.rank("manual", self.state.question_ids)
        self._report_desk_problems()
        if not ranked:
            raise ToolError("the repertoire has no question to give")
        question = ranked[0]
        self.ask(
            question.text,
            question_id=question.id,
            source="agent",
            trigger=None,
            deliver=False,
            attrs={"level": question.level, "delivered_in": "tool_result"},
        )
        return ToolOutcome(question.text)

    def _finish(self, reason: str) -> ToolOutcome:
        if self._answer_finish(reason):
            return ToolOutcome("Not finished: the harness has a question for you first.")
        return ToolOutcome("Finishing the session.")

    def request_finish(self, reason: str) -> bool:
        return not self._answer_finish(reason)

    def _answer_finish(self, reason: str) -> bool:
        """A finish request: True when it was answered with a question, else the session ends."""
        moment = self.detector.observe_finish(reason) if self._decisions_enabled else None
        if moment is not None and self._decide(moment):
            return True
        self._request_stop("finish", reason)
        return False

    def observe_text(self, text: str) -> None:
        if self._decisions_enabled and text.strip():
            self._decide(self.detector.observe_assistant_text(text))

    def take_questions(self) -> list[str]:
        taken, self._pending_questions = self._pending_questions, []
        return taken

    def add_question(
        self,
        text: str,
        *,
        question_id: str | None,
        source: str,
        trigger: str | None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        return self.ask(text, question_id=question_id, source=source, trigger=trigger, attrs=attrs)

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
        extra = dict(attrs or {})
        if decision is not None:
            extra["decision_event_id"] = decision.event_id
        event = self._append(
            "question",
            flush=True,
            role="human" if source == "human" else "harness",
            source=source,
            question_id=question_id,
            question_text=text,
            trigger=trigger,
            parent_event_id=decision.event_id if decision is not None else None,
            attrs=extra or None,
        )
        if deliver:
            self._pending_questions.append(text)
        return event

    def _decide(self, moment: DecisionMoment | None) -> bool:
        """Record a decision moment and put a question for it; False when none could be found."""
        if moment is None:
            return False
        ranked = self.desk.rank(moment.trigger, self.state.question_ids)
        self._report_desk_problems()
        attached = inbox.is_attached(self.paths.dir, fresh_s=self.config.attached_fresh_s)
        wait = self.config.attach_wait_s if attached else 0.0
        decision = self._append(
            "decision",
            flush=True,
            trigger=moment.trigger,
            text=moment.detail,
            attrs={
                "attached": attached,
                "wait_s": wait,
                "suggestions": [{"id": q.id, "text": q.text} for q in ranked[:SUGGESTIONS]],
            },
        )
        return self.answer_decision(decision, ranked, wait)

    def answer_decision(self, decision: Event, ranked: list[Any], wait: float) -> bool:
        """Answer a recorded decision: a person's question within ``wait`` s, else the top
        ranked one. False when there is no question at all."""
        human = self._wait_for_human(wait) if wait > 0 else None
        if human is not None:
            assert human.text is not None
            known = self.desk.lookup(human.question_id)
            self.ask(
                human.text,
                question_id=human.question_id,
                source="human",
                trigger=decision.trigger,
                decision=decision,
                attrs={**human.to_attrs(), **({"level": known.level} if known else {})},
            )
            return True
        if not ranked:
            self._append(
                "error",
                flush=True,
                text="no question to ask at this decision moment (the repertoire is empty)",
                parent_event_id=decision.event_id,
            )
            return False
        question = ranked[0]
        self.ask(
            question.text,
            question_id=question.id,
            source="repertoire",
            trigger=decision.trigger,
            decision=decision,
            attrs={"level": question.level, **({"waited_s": wait} if wait else {})},
        )
        return True

    def _wait_for_human(self, wait: float) -> InboxCommand | None:
        deadline = time.monotonic() + wait
        while True:
            self._fill_inbox_queue()
            while self._inbox_queue:
                command = self._inbox_queue.popleft()
                if command.type == inbox.QUESTION:
                    return command
                self._handle_command(command)
            if time.monotonic() >= deadline or self._terminate.is_set():
                return None
            if not inbox.is_attached(self.paths.dir, fresh_s=self.config.attached_fresh_s):
                return None  # the person left: no point waiting out the timeout
            self._sleep(POLL_S)

    def _report_desk_problems(self) -> None:
        for problem in self.desk.problems[self._reported_problems :]:
            self._append("error", flush=True, text=problem, attrs={"where": "questions"})
        self._reported_problems = len(self.desk.problems)

    # -- the inbox, pausing, budgets ------------------------------------------------------

    def checkpoint(self) -> None:
        self._fill_inbox_queue()
        while self._inbox_queue:
            self._handle_command(self._inbox_queue.popleft())
        self._check_time()
        self._touch_meta()
        if self._stop is not None:
            raise SessionStop(*self._stop)

    def _fill_inbox_queue(self) -> None:
        self._inbox_queue.extend(self.inbox.read())

    def _handle_command(self, command: InboxCommand) -> None:
        if command.type == inbox.QUESTION:
            assert command.text is not None
            self.ask(
                command.text,
                question_id=command.question_id,
                source=command.source,
                trigger="manual",
                attrs=command.to_attrs(),
            )
        elif command.type == inbox.PAUSE:
            self._pause(command)
        elif command.type == inbox.RESUME:
            self._append("control", flush=True, text="resume: not paused", attrs=command.to_attrs())
        elif command.type == inbox.STOP:
            self._append("control", flush=True, text="stop requested", attrs=command.to_attrs())
            self._request_stop("stop", "stopped from the inbox")
        else:
            self._append(
                "error", flush=True, text=f"inbox: {command.error}", attrs=command.to_attrs()
            )

    def _pause(self, command: InboxCommand) -> None:
        self._append(
            "control", flush=True, text="paused", attrs={**command.to_attrs(), "action": "pause"}
        )
        self.meta.status = PAUSED
        self._write_meta()
        try:
            while True:
                self._fill_inbox_queue()
                while self._inbox_queue:
                    nxt = self._inbox_queue.popleft()
                    if nxt.type == inbox.RESUME:
                        self._append(
                            "control",
                            flush=True,
                            text="resumed",
                            attrs={**nxt.to_attrs(), "action": "unpause"},
                        )
                        return
                    if nxt.type == inbox.STOP:
                        self._handle_command(nxt)
                        return
                    if nxt.type == inbox.PAUSE:
                        self._append(
                            "control", flush=True, text="already paused", attrs=nxt.to_attrs()
                        )
                    else:
                        self._handle_command(nxt)
                if self._terminate.is_set():
                    self._request_stop("terminated", "SIGTERM while paused")
                    return
                self._touch_meta()
                self._sleep(POLL_S)
        finally:
            self.meta.status = RUNNING
            self._write_meta()

    def _request_stop(self, reason: str, detail: str) -> None:
        if self._stop is None:
            self._stop = (reason, detail)

    def active_seconds(self) -> float:
        """Engine time over every run of this session, this one included."""
        return self.state.active_s + (time.monotonic() - self._run_clock)

    def _check_time(self) -> None:
        if self._terminate.is_set():
            self._request_stop("terminated", "SIGTERM")
        hours = self.config.budgets.hours
        if hours is not None and self.active_seconds() >= hours * 3600:
            self._request_stop("budget_hours", f"{self.active_seconds() / 3600:.2f} h")

    # -- session.json ---------------------------------------------------------------------

    def _stats(self) -> dict[str, Any]:
        return {**self.state.stats(), "active_s": round(self.active_seconds(), 1)}

    def _write_meta(self) -> None:
        self.meta.stats = self._stats()
        write_meta(self.paths.dir, self.meta)
        self._meta_written = time.monotonic()

    def _touch_meta(self, *, force: bool = False) -> None:
        if force or time.monotonic() - self._meta_written >= META_EVERY_S:
            with contextlib.suppress(OSError):
                self._write_meta()


def _is_objective_eval(event: Event) -> bool:
    return event.kind == "eval" and bool(event_attrs(event).get("objective"))


def _describe_sets(task: Task, sets: list[str] | None) -> str:
    if sets is None:
        names = ", ".join(task.objective_sets)
        extra = f" + {task.objective_random} fresh random" if task.objective_random else ""
        return f"the objective ({names}{extra})"
    return f"the objective ({', '.join(sets)})"


def load_result(session_dir: Path, event: Event) -> Any:
    """The full EvalResult an ``eval`` event points to (its ``result_file``), or None."""
    from kernelseek_tui.evaluate.result import EvalResult

    name = event_attrs(event).get("result_file")
    if not name:
        return None
    try:
        return EvalResult.from_json((Path(session_dir) / name).read_text())
    except (OSError, ValueError, TypeError):
        return None
