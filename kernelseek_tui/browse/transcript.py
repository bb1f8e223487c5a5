"""The transcript as rows a terminal can show: one short line per event, the full detail on demand.

The lines themselves are written by ``line_summary.line_of``; this module indexes, filters and
searches them. ``TranscriptIndex`` keeps only what every row needs at once (``seq``, ``kind``,
``is_error``, ``ts``) as Python lists; everything else stays in the Arrow segments and is read
per row when a line is first drawn (then cached), so a 30k-event session indexes in a few
milliseconds and a screenful of lines costs a few hundred scalar reads. Search runs over the
lines as they are drawn (label and summary: what a person sees, e.g. ``BLOCK_N=128`` where the
trace stores ``{"BLOCK_N": 128}``), rendered for every row on the first search and kept; it
remembers the matches of the last query.
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa

from kernelseek_tui.browse.event_detail import attrs_lines, detail_title, field_lines
from kernelseek_tui.browse.line_summary import TranscriptLine, json_or_none, line_of

__all__ = ["FILTERS", "TranscriptIndex", "TranscriptLine", "filter_spec"]

# The transcript's filters by name: (kinds shown or None for all, errors only).
FILTERS: Final[dict[str, tuple[frozenset[str] | None, bool]]] = {
    "all": (None, False),
    "questions": (frozenset({"question", "decision"}), False),
    "evals": (frozenset({"eval", "commit"}), False),
    "errors": (None, True),
}


def filter_spec(name: str) -> tuple[frozenset[str] | None, bool]:
    """The ``(kinds, errors_only)`` of a named filter ("all", "questions", "evals", "errors")."""
    try:
        return FILTERS[name]
    except KeyError:
        raise ValueError(f"unknown filter {name!r}; expected one of {tuple(FILTERS)}") from None


class TranscriptIndex:
    """Row-indexed access to a session's events (a table in ``EVENT_SCHEMA``, sorted by seq)."""

    def __init__(self, table: pa.Table) -> None:
        self._segments: list[pa.Table] = []
        self._starts: list[int] = []  # first row index of each segment
        self._seq: list[int] = []
        self._kind: list[str] = []
        self._is_error: list[bool] = []
        self._ts: list[int] = []
        self._lines: dict[int, TranscriptLine] = {}
        self._search_query: str | None = None
        self._search_matches: list[int] = []
        self._searched: list[str] = []  # each row's ``TranscriptLine.searched``, lower-cased
        self._render_lock = threading.Lock()  # a worker may prepare the search (see above)
        self._call_rows: dict[str, int] | None = None  # tool_call_id -> its result's row
        self.extend(table)

    # -- building -------------------------------------------------------------------------

    def extend(self, table: pa.Table) -> None:
        """Append events (a live batch; seqs after the ones already held)."""
        if table.num_rows == 0:
            return
        start = len(self._seq)
        segment = table.combine_chunks()
        self._segments.append(segment)
        self._starts.append(start)
        self._seq.extend(segment.column("seq").to_pylist())
        self._kind.extend(segment.column("kind").to_pylist())
        errors = segment.column("is_error").fill_null(False)
        self._is_error.extend(errors.to_pylist())
        self._ts.extend(segment.column("ts").cast(pa.int64()).to_pylist())
        if self._search_query is not None:
            self._search_matches.extend(self._matching_rows(self._search_query, start))
        if self._call_rows is not None:
            self._index_results(len(self._segments) - 1)

    # -- row access -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._seq)

    def seq_at(self, i: int) -> int:
        """The ``seq`` of row ``i``."""
        return self._seq[i]

    def kind_at(self, i: int) -> str:
        """The ``kind`` of row ``i``."""
        return self._kind[i]

    def row_of_seq(self, seq: int) -> int | None:
        """The row holding ``seq``, else the nearest earlier row; None before the first."""
        row = bisect_right(self._seq, seq) - 1
        return row if row >= 0 else None

    def row(self, i: int) -> dict[str, Any]:
        """Every column of row ``i`` as Python values (``ts`` as integer microseconds)."""
        if not 0 <= i < len(self._seq):
            raise IndexError(i)
        segment_index = bisect_right(self._starts, i) - 1
        segment = self._segments[segment_index]
        offset = i - self._starts[segment_index]
        values = segment.slice(offset, 1).to_pylist()[0]
        values["ts"] = self._ts[i]
        return values

    def line(self, i: int) -> TranscriptLine:
        """Row ``i`` as one line (computed once, then cached)."""
        cached = self._lines.get(i)
        if cached is not None:
            return cached
        line = line_of(self.row(i), self._ts[i])
        self._lines[i] = line
        return line

    def detail_title(self, i: int) -> str:
        """What row ``i`` is and when: ``eval · seq 8 · 2026-12-02 17:15:41 UTC``."""
        return detail_title(self.row(i))

    def detail(self, i: int) -> str:
        """Everything about row ``i`` (its title aside): its fields with their units, full
        text, tool input (pretty JSON) and attrs as ``key: value`` lines."""
        row = self.row(i)
        parts = [field_lines(row)]
        tool_input = json_or_none(row.get("tool_input"))
        if row.get("text"):
            parts.append(_section("text", row["text"]))
        if row.get("tool_input"):
            parts.append(_section("tool input", _pretty(tool_input, row["tool_input"])))
            if isinstance(tool_input, dict):
                for key, value in tool_input.items():
                    if isinstance(value, str) and "\n" in value:
                        parts.append(_section(f"tool input · {key}", value))
        if row.get("attrs"):
            attrs = json_or_none(row["attrs"])
            shown = attrs_lines(attrs) if isinstance(attrs, dict) else row["attrs"]
            parts.append(_section("attrs", shown))
        if row.get("kind") == "tool_call" and row.get("tool_call_id"):
            result_row = self._result_row_of(row["tool_call_id"])
            if result_row is not None:
                result = self.row(result_row)
                marker = " · ERROR" if result.get("is_error") else ""
                title = f"result (seq {result['seq']}{marker})"
                parts.append(_section(title, result.get("text") or ""))
        return "\n\n".join(parts)

    # -- views ----------------------------------------------------------------------------

    def filtered(
        self, kinds: frozenset[str] | None, errors_only: bool, *, start: int = 0
    ) -> list[int]:
        """Row indices of the events of ``kinds`` (None: every kind), errors only if asked,
        from row ``start`` on (a live append filters only its new rows).

        An error is a ``tool_result`` marked ``is_error`` or an ``error`` event.
        """
        kind, is_error = self._kind, self._is_error
        end = len(kind)
        if kinds is None and not errors_only:
            return list(range(start, end))
        if errors_only:
            rows = [i for i in range(start, end) if is_error[i] or kind[i] == "error"]
            return rows if kinds is None else [i for i in rows if kind[i] in kinds]
        assert kinds is not None
        return [i for i in range(start, end) if kind[i] in kinds]

    def search(
        self,
        query: str,
        start: int,
        *,
        backwards: bool = False,
        rows: Sequence[int] | None = None,
    ) -> int | None:
        """The first row at or after ``start`` (at or before, ``backwards``) whose line, as
        drawn, contains ``query`` (case-insensitive), wrapping around the end. ``rows``
        (sorted row indices, e.g. a filter's) limits the rows searched."""
        matches = self.matches(query)
        if rows is not None:
            allowed = set(rows)
            matches = [m for m in matches if m in allowed]
        if not matches:
            return None
        if backwards:
            at = bisect_right(matches, start) - 1
            return matches[at] if at >= 0 else matches[-1]
        at = bisect_left(matches, start)
        return matches[at] if at < len(matches) else matches[0]

    def matches(self, query: str) -> list[int]:
        """Every row matching ``query`` (see ``search``), in order; the last query is cached."""
        if not query:
            return []
        if query != self._search_query:
            self._search_query, self._search_matches = query, self._matching_rows(query, 0)
        return self._search_matches

    def _matching_rows(self, query: str, start: int) -> list[int]:
        """Rows from ``start`` on whose drawn line contains ``query`` (case-insensitive)."""
        self._render_all()
        needle = query.lower()
        texts = self._searched
        return [i for i in range(start, len(texts)) if needle in texts[i]]

    def prepare_search(self) -> None:
        """Render every line a search looks in now (about a second for 30k events), so the
        first search is instant; safe to call from a worker thread while the index is shown."""
        self._render_all()

    def _render_all(self) -> None:
        """Render every row not rendered yet, a segment at a time (one Arrow conversion each,
        not one per row)."""
        with self._render_lock:
            self._render_missing()

    def _render_missing(self) -> None:
        done = len(self._searched)
        for start, segment in zip(self._starts, self._segments, strict=True):
            if start + segment.num_rows <= done:
                continue
            offset = max(0, done - start)
            for i, values in enumerate(segment.slice(offset).to_pylist(), start + offset):
                line = self._lines.get(i)
                if line is None:
                    values["ts"] = self._ts[i]
                    line = self._lines[i] = line_of(values, self._ts[i])
                self._searched.append(line.searched.lower())
            done = len(self._searched)

    # -- tool results ---------------------------------------------------------------------

    def _result_row_of(self, call_id: str) -> int | None:
        if self._call_rows is None:
            self._call_rows = {}
            for segment_index in range(len(self._segments)):
                self._index_results(segment_index)
        return self._call_rows.get(call_id)

    def _index_results(self, segment_index: int) -> None:
        assert self._call_rows is not None
        segment, start = self._segments[segment_index], self._starts[segment_index]
        ids = segment.column("tool_call_id").to_pylist()
        kinds = self._kind[start : start + len(ids)]
        for offset, (call_id, kind) in enumerate(zip(ids, kinds, strict=True)):
            if kind == "tool_result" and call_id is not None:
                self._call_rows[call_id] = start + offset


# -- detail -------------------------------------------------------------------------------


def _section(title: str, body: str) -> str:
    return f"── {title} " + "─" * max(4, 60 - len(title)) + "\n" + body


def _pretty(value: Any, raw: str) -> str:
    if value is None:
        return raw
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
