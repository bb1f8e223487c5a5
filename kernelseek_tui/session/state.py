"""What a session has done so far, as counters the engine keeps and rebuilds from its trace.

A fresh session starts from zeros; a resumed one replays its events through ``observe`` and
arrives at the same numbers the engine had when it stopped: tool calls spent, money spent,
active time, the best speedup, the questions asked, the inbox offset consumed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kernelseek_tui.evaluate.noise import summary_noise
from kernelseek_tui.evaluate.paired import eval_paired_new_best
from kernelseek_tui.trace.schema import Event

# attrs["action"] of the control events that open a run of the engine (a start or a resume).
RUN_OPENERS = frozenset({"start", "resume"})


@dataclass(slots=True)
class SessionState:
    """Counters over a session's events (see the module docstring)."""

    tool_calls: int = 0  # tool calls executed (skipped ones do not count)
    cost_usd: float = 0.0
    model_calls: int = 0
    evals: int = 0
    commits: int = 0
    best_speedup: float | None = None  # best objective speedup of a verified candidate
    best_noise: float | None = None  # the timing noise of the evaluation that set it
    best_commit: str | None = None  # the git sha of the last new best (None: the start)
    last_question: str | None = None
    question_ids: list[str] = field(default_factory=list)
    questions: int = 0
    inbox_offset: int = 0
    turn: int = 0
    active_s: float = 0.0  # engine time of the runs before this one
    _run_start: int | None = None
    _last_ts: int | None = None

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> SessionState:
        state = cls()
        for event in events:
            state.observe(event)
        state.close_run()
        return state

    def observe(self, event: Event) -> None:
        """Count one event (in seq order)."""
        attrs = event.attrs_dict()
        kind = event.kind
        if kind == "control" and attrs.get("action") in RUN_OPENERS:
            self.close_run()
            self._run_start = event.ts
        self._last_ts = event.ts
        if event.turn is not None:
            self.turn = max(self.turn, event.turn)
        offset = attrs.get("inbox_offset")
        if isinstance(offset, int):
            self.inbox_offset = max(self.inbox_offset, offset)
        if kind == "tool_call" and not attrs.get("skipped"):
            self.tool_calls += 1
        elif kind == "message" and event.role == "assistant" and event.model is not None:
            self.model_calls += 1
            if event.cost_usd is not None:
                self.cost_usd += event.cost_usd
        elif kind == "eval":
            self.evals += 1
            if attrs.get("objective") and attrs.get("verified", event.verdict == "pass"):
                best = best_after(
                    self.best_speedup, event.speedup, paired_new_best=eval_paired_new_best(attrs)
                )
                if best is not None and best != self.best_speedup:
                    self.best_noise = summary_noise(attrs.get("summary"))
                self.best_speedup = best
        elif kind == "commit" and not attrs.get("attached"):
            self.commits += 1  # an evaluation attached to an existing commit makes none
            if attrs.get("new_best") and event.git_sha:
                self.best_commit = event.git_sha
        elif kind == "question" and event.question_text:
            self.questions += 1
            self.last_question = event.question_text
            if event.question_id:
                self.question_ids.append(event.question_id)

    def close_run(self) -> None:
        """Add the run being read to ``active_s`` (its first to its last event)."""
        if self._run_start is not None and self._last_ts is not None:
            self.active_s += max(0, self._last_ts - self._run_start) / 1e6
        self._run_start = None

    def stats(self) -> dict[str, Any]:
        """The summary ``session.json`` carries for ``kernelseek ls``."""
        return {
            "tool_calls": self.tool_calls,
            "model_calls": self.model_calls,
            "evals": self.evals,
            "commits": self.commits,
            "best_speedup": self.best_speedup,
            "cost_usd": round(self.cost_usd, 6) if self.model_calls else None,
            "questions": self.questions,
        }


def best_after(
    previous: float | None, speedup: float | None, *, paired_new_best: bool | None
) -> float | None:
    """The session's best speedup once a verified evaluation of the objective gave ``speedup``.
    Judged unpaired (``paired_new_best`` None), the larger of the two. Judged paired with the
    best so far, the candidate's own speedup if that run found it faster than the best, else
    the best's as it was: a higher unpaired figure from another process is not a faster
    kernel (an H100 tuner session, 2026-12-06, read 1.100x for a candidate its paired run put
    2.4% behind the best), and the best shown must be the candidate the judge kept."""
    if paired_new_best is None:
        return better(previous, speedup)
    if paired_new_best and speedup is not None and math.isfinite(speedup):
        return speedup
    return previous


def better(best: float | None, value: float | None) -> float | None:
    """The larger of two speedups, ignoring missing and non-finite ones."""
    if value is None or not math.isfinite(value):
        return best
    return value if best is None or value > best else best
