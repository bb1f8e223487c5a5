"""The session's progress along its tool calls: the best verified speedup after each
evaluation, where questions were asked, and which eval each commit came from.

Built once from the events table (no textual here), then drawn by the history pane as a
sparkline with a row of ``?`` markers under it. The x axis is tool calls, not time: a session
that waited an hour for a person should not look like it stalled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kernelseek_tui.trace.schema import parse_attrs

# Eight levels; the lowest is still visible so a flat line at the minimum reads as a line.
BLOCKS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class SpeedupPoint:
    """The session's best verified speedup right after the eval at ``seq``."""

    seq: int
    tool_calls: int  # tool calls made up to and including the eval's own call
    best_speedup: float


@dataclass(frozen=True, slots=True)
class QuestionMarker:
    """A question put to the agent, and how far into the session it came."""

    seq: int
    tool_calls: int
    text: str
    trigger: str | None
    source: str | None


class Timeline:
    """Best speedup over tool calls, question markers and the commit <-> eval links."""

    def __init__(
        self,
        points: list[SpeedupPoint],
        questions: list[QuestionMarker],
        commit_evals: list[tuple[str, int, bool]],
        total_tool_calls: int,
    ) -> None:
        """``commit_evals``: (sha, eval seq, attached) of each commit event, in order; an
        attached one is a later evaluation of a commit's unchanged code."""
        self.points = points
        self.questions = questions
        self.total_tool_calls = total_tool_calls
        self._eval_of_commit = {sha: seq for sha, seq, attached in commit_evals if not attached}
        self._commit_of_eval = {seq: sha for sha, seq, _ in commit_evals}

    @classmethod
    def from_events(cls, table: pa.Table) -> Timeline:
        """Read a session's events (``EVENT_SCHEMA``, sorted by ``seq``) into a timeline.

        The best speedup is the ``best_speedup`` column the engine writes on each eval; an
        imported trace without it falls back to the running maximum of passing evals.
        """
        names = set(table.column_names)

        def column(name: str) -> list[Any]:
            return table.column(name).to_pylist() if name in names else [None] * table.num_rows

        kinds = column("kind")
        seqs = column("seq")
        best_col = column("best_speedup")
        speed_col = column("speedup")
        verdicts = column("verdict")
        question_texts = column("question_text")
        triggers = column("trigger")
        sources = column("source")
        git_shas = column("git_sha")
        attrs_col = column("attrs")

        points: list[SpeedupPoint] = []
        questions: list[QuestionMarker] = []
        commit_evals: list[tuple[str, int, bool]] = []
        tool_calls = 0
        best: float | None = None
        for i, kind in enumerate(kinds):
            if kind == "tool_call":
                tool_calls += 1
            elif kind == "eval":
                recorded = best_col[i]
                speedup = speed_col[i]
                if isinstance(recorded, float):
                    best = recorded
                elif verdicts[i] == "pass" and isinstance(speedup, float):
                    best = speedup if best is None else max(best, speedup)
                if best is not None:
                    points.append(SpeedupPoint(int(seqs[i]), tool_calls, best))
            elif kind == "question":
                questions.append(
                    QuestionMarker(
                        seq=int(seqs[i]),
                        tool_calls=tool_calls,
                        text=str(question_texts[i] or ""),
                        trigger=triggers[i] if isinstance(triggers[i], str) else None,
                        source=sources[i] if isinstance(sources[i], str) else None,
                    )
                )
            elif kind == "commit" and isinstance(git_shas[i], str):
                eval_seq, attached = commit_link(attrs_col[i])
                if eval_seq is not None:
                    commit_evals.append((str(git_shas[i]), eval_seq, attached))
        return cls(points, questions, commit_evals, tool_calls)

    @property
    def best_speedup(self) -> float | None:
        """The best verified speedup of the whole session, None before any."""
        return self.points[-1].best_speedup if self.points else None

    @property
    def best_eval_seq(self) -> int | None:
        """The seq of the eval that reached the session's best speedup first, None before any."""
        best = self.best_speedup
        return next((p.seq for p in self.points if p.best_speedup == best), None)

    def eval_seq_for_commit(self, sha: str) -> int | None:
        """The seq of the eval a commit was made from (not those attached to it later)."""
        found = self._eval_of_commit.get(sha)
        if found is not None or len(sha) >= 40:
            return found
        # An abbreviated sha: the unique full one it starts.
        matches = [seq for full, seq in self._eval_of_commit.items() if full.startswith(sha)]
        return matches[0] if len(matches) == 1 else None

    def commit_for_eval_seq(self, seq: int) -> str | None:
        """The sha of the commit that holds the eval at ``seq`` (made from it, or the one it was
        attached to); None when it was not committed."""
        return self._commit_of_eval.get(seq)

    def question_before(self, seq: int) -> QuestionMarker | None:
        """The last question asked before the event at ``seq``."""
        last: QuestionMarker | None = None
        for question in self.questions:
            if question.seq >= seq:
                break
            last = question
        return last

    def column_of(self, tool_calls: int, width: int) -> int:
        """The column (0..width-1) that a point this many tool calls in falls on."""
        span = max(self.total_tool_calls, 1)
        return min(width - 1, max(0, tool_calls * width // span))

    def sparkline(self, width: int) -> str:
        """The best speedup as ``width`` unicode blocks (blank before the first eval).

        Each column shows the best speedup reached by the end of its slice of tool calls,
        scaled between the session's lowest and highest best; a flat session sits mid-height.
        """
        if width <= 0:
            return ""
        if not self.points:
            return " " * width
        at_column: list[float | None] = [None] * width
        for point in self.points:
            at_column[self.column_of(point.tool_calls, width)] = point.best_speedup
        values = [p.best_speedup for p in self.points]
        low, high = min(values), max(values)
        cells: list[str] = []
        current: float | None = None
        for value in at_column:
            if value is not None:
                current = value
            cells.append(" " if current is None else _block(current, low, high))
        return "".join(cells)

    def markers_line(self, width: int) -> str:
        """A line as wide as the sparkline with a ``?`` under each question's column."""
        if width <= 0:
            return ""
        cells = [" "] * width
        for question in self.questions:
            cells[self.column_of(question.tool_calls, width)] = "?"
        return "".join(cells)


def _block(value: float, low: float, high: float) -> str:
    if high <= low:
        return BLOCKS[len(BLOCKS) // 2]
    level = round((value - low) / (high - low) * (len(BLOCKS) - 1))
    return BLOCKS[max(0, min(len(BLOCKS) - 1, level))]


def commit_link(attrs: object) -> tuple[int | None, bool]:
    """A commit event's ``eval_seq`` and whether it was attached to an existing commit."""
    parsed = parse_attrs(attrs)
    value = parsed.get("eval_seq")
    seq = value if isinstance(value, int) and not isinstance(value, bool) else None
    return seq, bool(parsed.get("attached"))
