"""What ``compare`` measures of one session, read from its trace and ``session.json``.

The curve is the best verified speedup (and the best vs FA3) after each objective evaluation,
against the tool calls and the seconds spent so far; the numbers are read off it. A *jump* is
an objective evaluation faster than the best before it by more than ``threshold`` (the same
rule as the trace store's ``jumps`` view); it *follows a question* when it is among the first
``k`` evaluations after one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.paired import eval_paired_new_best
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.queries import DEFAULT_K, DEFAULT_THRESHOLD
from kernelseek_tui.trace.schema import parse_attrs

COLUMNS = [
    "seq", "ts", "kind", "verdict", "speedup", "vs_fa3", "question_id", "question_text",
    "source", "cost_usd", "attrs", "candidate_sha", "git_sha", "tool_name", "best_speedup",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The session after one evaluation: where it stood and what that evaluation gave."""

    tool_calls: int
    seconds: float
    evals: int  # evaluations so far, this one included
    best: float  # best verified objective speedup so far (1.0: the starting kernel)
    best_vs_fa3: float | None  # the best candidate's vs FA3 (its own evaluation's)
    speedup: float | None  # this evaluation's, None when it failed
    passed: bool
    seq: int


@dataclass(frozen=True, slots=True)
class QuestionMark:
    """A question, where it came in the session."""

    tool_calls: int
    seconds: float
    evals: int  # evaluations before it
    question_id: str | None
    text: str
    source: str | None


@dataclass(frozen=True, slots=True)
class Jump:
    """An evaluation faster than the best before it, and the question it may have followed."""

    seq: int
    tool_calls: int
    before: float
    after: float
    question: QuestionMark | None  # the latest question within k evaluations before it


@dataclass(slots=True)
class SessionMetrics:
    """One session as ``compare`` sees it."""

    session_id: str
    arm: str
    curve: list[CurvePoint]
    questions: list[QuestionMark]
    tool_calls: int
    seconds: float
    cost_usd: float | None
    model: str | None
    jumps: int = 0
    jumps_after_question: int = 0
    commits: list[int] = field(default_factory=list)  # tool calls at each new commit
    jump_list: list[Jump] = field(default_factory=list)

    @property
    def final_best(self) -> float:
        return self.curve[-1].best if self.curve else 1.0

    @property
    def final_vs_fa3(self) -> float | None:
        return self.curve[-1].best_vs_fa3 if self.curve else None

    def best_at_calls(self, calls: int) -> float:
        """The best speedup once ``calls`` tool calls were spent (1.0 before any evaluation)."""
        best = 1.0
        for point in self.curve:
            if point.tool_calls > calls:
                break
            best = point.best
        return best

    def evals_to_reach(self, target: float) -> int | None:
        """How many evaluations it took to reach ``target``; None when it never did."""
        for point in self.curve:
            if point.best >= target:
                return point.evals
        return None


def session_metrics(
    rows: list[dict[str, Any]],
    *,
    session_id: str,
    arm: str,
    model: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    k: int = DEFAULT_K,
) -> SessionMetrics:
    """The metrics of one session from its events (dicts with ``COLUMNS``, in seq order)."""
    calls = evals = 0
    best, best_fa3 = 1.0, None
    fastest = -math.inf  # the fastest verified candidate so far, whose vs FA3 is reported
    last_recorded: float | None = None  # the engine's last recorded best (``best_speedup``)
    highest = 1.0  # the highest verified figure so far, which jumps are measured from
    cost: float | None = None
    start = rows[0]["ts"] if rows else None
    curve: list[CurvePoint] = []
    questions: list[QuestionMark] = []
    commits: list[int] = []
    timed: set[str] = set()
    jumps = after_question = 0
    jump_list: list[Jump] = []
    for row in rows:
        kind = row["kind"]
        seconds = _seconds(row["ts"], start)
        if kind == "tool_call" and not parse_attrs(row.get("attrs")).get("skipped"):
            calls += 1
        elif kind == "message" and row.get("cost_usd") is not None:
            cost = (cost or 0.0) + float(row["cost_usd"])
        elif kind == "question":
            questions.append(
                QuestionMark(calls, seconds, evals, row.get("question_id"),
                             row.get("question_text") or "", row.get("source"))
            )  # fmt: skip
        elif kind == "commit" and not parse_attrs(row.get("attrs")).get("attached"):
            commits.append(calls)
        elif kind == "eval":
            evals += 1
            attrs = parse_attrs(row.get("attrs"))
            raw_speedup = row.get("speedup")
            passed = row.get("verdict") == "pass" and _finite(raw_speedup)
            speedup = float(raw_speedup) if passed and raw_speedup is not None else 0.0
            objective = attrs.get("objective", True) and attrs.get("verified", passed)
            if passed and objective:
                sha = row.get("candidate_sha")
                again = sha is not None and sha in timed
                if sha is not None:
                    timed.add(sha)
                # A jump is over the highest figure before it, as the trace store's `jumps`
                # view reads it (a study of the figures, not of the engine's verdicts).
                if not again and speedup > highest * (1.0 + threshold):
                    jumps += 1
                    near = [q for q in questions if 0 <= evals - 1 - q.evals < k]
                    after_question += bool(near)
                    jump_list.append(
                        Jump(row["seq"], calls, highest, speedup, near[-1] if near else None)
                    )
                highest = max(highest, speedup)
                # vs FA3 is the best candidate's own ratio, not the highest ratio seen: that
                # would pick whichever evaluation timed FA3 slowest.
                fa3 = row.get("vs_fa3")
                recorded = row.get("best_speedup")
                if recorded is not None and _finite(recorded):
                    # The engine's own record (judged paired: the candidate it kept, not the
                    # highest unpaired figure); the evaluation that set it gives vs FA3.
                    if recorded != last_recorded and recorded == speedup:
                        best_fa3 = fa3 if _finite(fa3) else None
                    last_recorded = recorded
                    best = max(1.0, float(recorded))
                elif last_recorded is None and eval_paired_new_best(attrs) is None:
                    if _finite(fa3) and speedup > fastest:
                        fastest, best_fa3 = speedup, fa3
                    best = max(best, speedup)
                # else: judged paired with no candidate kept yet (or after a record): unchanged
            curve.append(
                CurvePoint(calls, seconds, evals, best, best_fa3,
                           speedup if passed else None, passed, row["seq"])
            )  # fmt: skip
    seconds_total = _seconds(rows[-1]["ts"], start) if rows else 0.0
    return SessionMetrics(
        session_id=session_id,
        arm=arm,
        curve=curve,
        questions=questions,
        tool_calls=calls,
        seconds=seconds_total,
        cost_usd=cost,
        model=model,
        jumps=jumps,
        jumps_after_question=after_question,
        commits=commits,
        jump_list=jump_list,
    )


def load_session_metrics(session_dir: Path, arm: str, **options: Any) -> SessionMetrics:
    """``session_metrics`` of a session directory (its trace, and its model from session.json)."""
    from kernelseek_tui.trace.reader import read_session

    table = read_session(session_dir, columns=COLUMNS)
    model = None
    meta_file = SessionPaths(session_dir).meta
    if meta_file.is_file():
        model = json.loads(meta_file.read_text()).get("model")
    return session_metrics(
        table.to_pylist(), session_id=session_dir.name, arm=arm, model=model, **options
    )


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _seconds(ts: Any, start: Any) -> float:
    """Seconds between two trace timestamps (datetimes, or microseconds since the epoch)."""
    if ts is None or start is None:
        return 0.0
    delta = ts - start
    return delta.total_seconds() if hasattr(delta, "total_seconds") else delta / 1e6
