"""The state every part of the engine shares, and the trace and ``session.json`` writes.

``EngineCore`` holds the session (config, meta, history, task, workspace, trace writer, the
counters rebuilt from the trace, the decision detector, the question desk, the inbox reader),
the one place events are appended, and the public ways to record what every caller records
the same way: a tool call, its result, an error. The parts of the engine build on it:
``control`` (the inbox, pausing), ``asking`` (decision moments and questions), ``judging``
(evaluations and commits) and ``engine`` (the lifecycle and the tool calls); ``batch`` and
``resume`` use only its public face (``public.PublicEngine``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelseek_tui.decisions import DecisionConfig, DecisionDetector
from kernelseek_tui.errors import KernelseekError, one_line
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import SessionHistory
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.config import SessionConfig
from kernelseek_tui.session.evaluator import Evaluator, TaskEvaluator, load_evaluator_factory
from kernelseek_tui.session.inbox import InboxCommand, InboxReader
from kernelseek_tui.session.judge_files import session_judge_files
from kernelseek_tui.session.meta import SessionMeta, write_meta
from kernelseek_tui.session.questions import QuestionDesk
from kernelseek_tui.session.shell_confinement import ShellConfinement
from kernelseek_tui.session.state import SessionState
from kernelseek_tui.session.tools import ToolOutcome, Workspace
from kernelseek_tui.task import Task
from kernelseek_tui.trace.schema import Event

if TYPE_CHECKING:
    from kernelseek_tui.session.slots import EvalSlots

log = logging.getLogger("kernelseek_tui.session")

META_EVERY_S = 5.0
DEFAULT_SLOT = "default"  # the one slot of a session without --gpus: no GPU of its own
AGENT_EVENT_KINDS = frozenset({"message", "thinking", "compaction", "error", "control"})


class EngineCore:
    """The shared state of a session's engine (see the module docstring)."""

    def __init__(
        self,
        *,
        config: SessionConfig,
        meta: SessionMeta,
        history: SessionHistory,
        task: Task,
        events: list[Event],
        evaluator: Evaluator | Sequence[Evaluator] | None,
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
        # The judge's files as the session's start commit holds them (the package's as they
        # are now), before the agent's first turn (session/judge_files.py).
        self._judge_files = session_judge_files(task, history)
        self._kernel_path = task.source.relative_to(task.dir).as_posix()
        # A list is one evaluator per GPU (tests stand in for several GPUs that way).
        self._evaluator: Evaluator | None = None
        self._slot_evaluators: dict[str, Evaluator] | None = None
        if isinstance(evaluator, Sequence):
            self._slot_evaluators = self._name_slots(list(evaluator))
        else:
            self._evaluator = evaluator
        self._slots: EvalSlots | None = None
        self._gpu_models: dict[str, str] = {}  # GPU uuid (or index) -> model name, seen so far
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
        self._run_clock = time.monotonic()
        self._meta_written = 0.0
        self._collected: list[Event] | None = None
        self._reported_problems = 0
        self._warned_unpriced = False
        self._terminate = threading.Event()
        self._shell: ShellConfinement | None = None  # settled on the agent's first command
        self.writer = TraceWriter(self.paths.dir, config.session_id, **(writer_options or {}))

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
        """The judge of one evaluation at a time (with several GPUs: the first one's)."""
        if self._evaluator is None:
            if self.gpus:
                self._evaluator = self.slot_evaluators()[self.gpus[0]]
            else:
                self._evaluator = self._make_evaluator({})
        return self._evaluator

    @property
    def gpus(self) -> list[str]:
        """The GPUs of the evaluation slots; empty for one evaluation at a time."""
        if self._slot_evaluators is not None:
            return list(self._slot_evaluators)
        return list(self.config.gpus or [])

    @property
    def eval_slots(self) -> int:
        """How many evaluations may run at once."""
        return max(1, len(self.gpus))

    def slot_evaluators(self) -> dict[str, Evaluator]:
        """One evaluator per GPU, each pinned to its GPU."""
        if self._slot_evaluators is None:
            self._slot_evaluators = {
                gpu: self._make_evaluator({"device": gpu}) for gpu in self.config.gpus or []
            }
        return self._slot_evaluators

    def slots(self) -> EvalSlots:
        """The slots that run a batch of evaluations at once (made on first use); without
        GPUs named, one slot: the evaluator of one evaluation at a time."""
        if self._slots is None:
            from kernelseek_tui.session.slots import EvalSlots

            evaluators = self.slot_evaluators() or {DEFAULT_SLOT: self.evaluator}
            self._slots = EvalSlots(self._task, evaluators)
        return self._slots

    def _close_slots(self) -> None:
        if self._slots is not None:
            self._slots.close()
            self._slots = None

    def note_gpu(self, result: EvalResult) -> None:
        """Warn once when the session's GPUs are not all the same model.

        Each speedup is a ratio to the starting kernel timed on the candidate's own GPU, so the
        ratios of two identical GPUs compare; on two different models they may not.
        """
        device = result.device or {}
        key, name = device.get("uuid") or device.get("index"), device.get("name")
        if key is None or name is None or str(key) in self._gpu_models:
            return
        self._gpu_models[str(key)] = str(name)
        if len(set(self._gpu_models.values())) == 2:
            self.record_error(
                "the evaluation GPUs are not all the same model ("
                + ", ".join(sorted(set(self._gpu_models.values())))
                + "): speedups from different models may not compare",
                attrs={"warning": "mixed_gpus", "gpus": dict(self._gpu_models)},
            )

    def _make_evaluator(self, extra: dict[str, Any]) -> Evaluator:
        options = {**self.config.evaluator_options, **extra}
        if self.config.evaluator:
            return load_evaluator_factory(self.config.evaluator)(self._task, **options)
        # A session's evaluations come one after another: each leaves the next one's worker ready.
        return TaskEvaluator(
            self._task, **{"prestart_next": True, "judge_files": self._judge_files, **options}
        )

    def _name_slots(self, given: list[Evaluator]) -> dict[str, Evaluator]:
        names = list(self.config.gpus or [])
        if len(names) != len(given):
            names = [str(i) for i in range(len(given))]
        return dict(zip(names, given, strict=True))

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

    def record_imported(self, fields: dict[str, Any]) -> Event:
        """Append an event an agent outside the process wrote in its own transcript (its
        messages, the tool calls it ran itself and their results), as the importer made it.

        The transcript's event id is kept, so a line imported once is known again; the
        harness never runs these calls, it only records that they happened.
        """
        return self._append(
            str(fields["kind"]),
            flush=True,
            **{k: v for k, v in fields.items() if k not in ("kind", "seq", "session_id")},
        )

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
        """The ``tool_call`` event of a call about to run (flushed by default: a crash must
        never hide a call that ran). An input that is no JSON object is kept under ``input``."""
        return self._append(
            "tool_call",
            flush=flush,
            role="assistant",
            source="agent",
            tool_name=name,
            tool_call_id=call_id or new_call_id(),
            tool_input=tool_input if isinstance(tool_input, dict) else {"input": tool_input},
            turn=turn,
            parent_event_id=parent_event_id,
            attrs=attrs or None,
        )

    def record_tool_result(
        self,
        call: Event,
        outcome: ToolOutcome,
        *,
        duration_ms: float | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        """The ``tool_result`` event answering ``call``, flushed."""
        return self._append(
            "tool_result",
            flush=True,
            role="user",
            source="harness",
            tool_name=call.tool_name,
            tool_call_id=call.tool_call_id,
            text=outcome.text,
            is_error=outcome.is_error,
            duration_ms=duration_ms,
            turn=call.turn,
            parent_event_id=call.event_id,
            attrs=attrs or None,
        )

    def record_error(
        self, text: str, *, attrs: dict[str, Any] | None = None, parent_event_id: str | None = None
    ) -> Event:
        """An ``error`` event of the harness, flushed: ``text`` is the one line a person reads,
        ``attrs`` the rest (a traceback, where it happened)."""
        return self._append(
            "error", flush=True, text=text, parent_event_id=parent_event_id, attrs=attrs or None
        )

    def record_exception(self, error: BaseException, **where: Any) -> Event:
        """An ``error`` event for an unexpected exception, from inside its ``except`` block:
        the line a person reads names the innermost cause; the traceback stays in attrs."""
        return self.record_error(
            one_line(error),
            attrs={
                "error": f"{type(error).__name__}: {error}",
                **where,
                "traceback": traceback.format_exc()[-6000:],
            },
        )

    def after_tool_call(self) -> None:
        """Count a finished tool call against the budgets and keep ``session.json`` fresh."""
        budget = self.config.budgets.calls
        if budget is not None and self.state.tool_calls >= budget:
            self._request_stop("budget_calls", f"{self.state.tool_calls} tool calls")
        self._check_time()
        self._touch_meta()

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


def new_call_id() -> str:
    """A tool call id for a call the harness makes itself (the model's carry its own)."""
    return f"ks_{uuid.uuid4().hex[:20]}"


def _is_objective_eval(event: Event) -> bool:
    return event.kind == "eval" and bool(event.attrs_dict().get("objective"))
