"""The transcript as rows a terminal can show: one short line per event, the full detail on demand.

``TranscriptIndex`` keeps only what every row needs at once (``seq``, ``kind``, ``is_error``,
``ts``) as Python lists; everything else stays in the Arrow segments and is read per row when a
line is first drawn (then cached), so a 30k-event session indexes in a few milliseconds and a
screenful of lines costs a few hundred scalar reads. Search runs over the lines as they are
drawn (label and summary: what a person sees, e.g. ``BLOCK_N=128`` where the trace stores
``{"BLOCK_N": 128}``), rendered for every row on the first search and kept; it remembers the
matches of the last query.
"""

from __future__ import annotations

import json
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from kernelseek_tui.browse.event_detail import attrs_lines, detail_title, field_lines
from kernelseek_tui.trace.schema import parse_attrs

__all__ = ["FILTERS", "TranscriptIndex", "TranscriptLine", "filter_spec"]

# The transcript's filters by name: (kinds shown or None for all, errors only).
FILTERS: Final[dict[str, tuple[frozenset[str] | None, bool]]] = {
    "all": (None, False),
    "questions": (frozenset({"question", "decision"}), False),
    "evals": (frozenset({"eval", "commit"}), False),
    "errors": (None, True),
}

_LABELS: Final = {
    "message": "msg",
    "thinking": "think",
    "tool_call": "call",
    "tool_result": "result",
    "eval": "eval",
    "question": "question",
    "decision": "decision",
    "commit": "commit",
    "compaction": "compact",
    "error": "error",
    "control": "control",
}

# Rich style strings; named colours so that 256-colour terminals render them faithfully.
_STYLES: Final = {
    "message": "",
    "thinking": "italic grey62",
    "tool_call": "",
    "tool_result": "grey62",
    "eval": "bold green",
    "question": "bold black on yellow",
    "decision": "bold yellow",
    "commit": "bold cyan",
    "compaction": "magenta",
    "error": "bold red",
    "control": "blue",
}
_ERROR_STYLE: Final = "bold red"
_FAILED_EVAL_STYLE: Final = "bold dark_orange"
_HUMAN_MESSAGE_STYLE: Final = "bold"

# Line summaries are cut here; the widget crops again to its width.
_SUMMARY_CHARS: Final = 400
_ARG_CHARS: Final = 60
_THINKING_WORDS: Final = 14

# The order of a tool call's arguments in its summary: what names the target comes first.
_LEADING_ARGS: Final = (
    "path",
    "file_path",
    "command",
    "pattern",
    "url",
    "query",
    "set",
    "knobs",
    "reason",
    "description",
)
# Arguments whose bulk is the payload, summarised by their line count rather than shown.
_BULK_ARGS: Final = frozenset(
    {"content", "old_text", "new_text", "old_string", "new_string", "old", "new", "prompt", "todos"}
)


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One event as one line: ``clock`` HH:MM:SS (UTC), ``label`` its kind in short."""

    seq: int
    kind: str
    clock: str
    label: str
    summary: str
    style: str
    is_error: bool

    @property
    def searched(self) -> str:
        """The text a search looks in: the line as drawn, less its clock (a search for ``12``
        should find numbers, not every event of the twelfth hour)."""
        return f"{self.label} {self.summary}"


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
        line = _line_of(self.row(i), self._ts[i])
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
        tool_input = _loads(row.get("tool_input"))
        if row.get("text"):
            parts.append(_section("text", row["text"]))
        if row.get("tool_input"):
            parts.append(_section("tool input", _pretty(tool_input, row["tool_input"])))
            if isinstance(tool_input, dict):
                for key, value in tool_input.items():
                    if isinstance(value, str) and "\n" in value:
                        parts.append(_section(f"tool input · {key}", value))
        if row.get("attrs"):
            attrs = _loads(row["attrs"])
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
                    line = self._lines[i] = _line_of(values, self._ts[i])
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


# -- one line per event -------------------------------------------------------------------


_NO_BREAKS: Final = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def _line_of(row: dict[str, Any], ts_us: int) -> TranscriptLine:
    kind = row["kind"]
    summarise = _SUMMARISERS.get(kind, _summarise_other)
    summary, style = summarise(row)
    is_error = bool(row.get("is_error")) or kind == "error"
    if is_error:
        style = _ERROR_STYLE
    # Keep the double spaces between parts; only line breaks may not reach the terminal.
    summary = summary.translate(_NO_BREAKS)
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[: _SUMMARY_CHARS - 1] + "…"
    return TranscriptLine(
        seq=row["seq"],
        kind=kind,
        clock=time.strftime("%H:%M:%S", time.gmtime(ts_us / 1_000_000)),
        label=_LABELS.get(kind, kind[:8]),
        summary=summary,
        style=style,
        is_error=is_error,
    )


def _summarise_message(row: dict[str, Any]) -> tuple[str, str]:
    role = row.get("role") or ""
    text = _first_line(row.get("text")) or "(no text)"
    if row.get("stop_reason") == "max_tokens":
        text = f"[cut off at max_tokens] {text}"
    if role == "assistant":
        return text, _STYLES["message"]
    return f"{role or 'message'}: {text}", _HUMAN_MESSAGE_STYLE


def _summarise_thinking(row: dict[str, Any]) -> tuple[str, str]:
    words = (row.get("text") or "").split()
    head = " ".join(words[:_THINKING_WORDS])
    return (head + " …" if len(words) > _THINKING_WORDS else head), _STYLES["thinking"]


def _summarise_tool_call(row: dict[str, Any]) -> tuple[str, str]:
    name = row.get("tool_name") or "?"
    arguments = _loads(row.get("tool_input"))
    parts = [name]
    if isinstance(arguments, dict):
        described = _describe_arguments(name, arguments)
        if described:
            parts.append(described)
    elif row.get("tool_input"):
        parts.append(_shorten(str(row["tool_input"]), _ARG_CHARS))
    attrs = parse_attrs(row.get("attrs"))
    if attrs.get("batch_size"):
        parts.append(f"[batch {int(attrs.get('batch_index', 0)) + 1}/{attrs['batch_size']}]")
    if attrs.get("skipped"):
        parts.append("(skipped)")
    return "  ".join(parts), _STYLES["tool_call"]


def _describe_arguments(name: str, arguments: dict[str, Any]) -> str:
    """A tool call's arguments in short: the target first, payloads as line counts."""
    if name in ("read_file", "Read"):
        path = arguments.get("path") or arguments.get("file_path")
        start = arguments.get("offset", arguments.get("start"))
        count = arguments.get("limit", arguments.get("lines"))
        if path is not None:
            where = str(path)
            if start is not None or count is not None:
                where += f":{start if start is not None else 1}"
                where += f"+{count}" if count is not None else ""
            return where
    if name in ("run_shell", "bash", "Bash") and isinstance(arguments.get("command"), str):
        return "$ " + _shorten(_one_line(arguments["command"]), 2 * _ARG_CHARS)
    if name == "evaluate":
        pieces = [f"set {arguments['set']}" if arguments.get("set") else "objective"]
        knobs = arguments.get("knobs")
        if isinstance(knobs, dict) and knobs:
            pieces.append(" ".join(f"{k}={v}" for k, v in knobs.items()))
        rest = {k: v for k, v in arguments.items() if k not in ("set", "knobs")}
        return "  ".join([" ".join(pieces), *([_generic_arguments(rest)] if rest else [])])
    edit = _edit_sizes(arguments)
    if edit is not None:
        path = arguments.get("path") or arguments.get("file_path") or "?"
        return f"{path}  {edit}"
    return _generic_arguments(arguments)


def _generic_arguments(arguments: dict[str, Any]) -> str:
    ordered: list[str] = [k for k in _LEADING_ARGS if k in arguments]
    ordered += [k for k in arguments if k not in ordered]
    pieces = []
    for key in ordered:
        value = arguments[key]
        if key in _BULK_ARGS:
            pieces.append(f"{key}: {_size_of(value)}")
        elif key in ("path", "file_path") and isinstance(value, str):
            pieces.append(value)
        elif isinstance(value, str):
            pieces.append(f"{key}={_shorten(_one_line(value), _ARG_CHARS)!r}")
        else:
            compact = json.dumps(value, separators=(",", ":"), default=str)
            pieces.append(f"{key}={_shorten(compact, _ARG_CHARS)}")
    return "  ".join(pieces)


_EDIT_PAIRS: Final = (("old_text", "new_text"), ("old_string", "new_string"), ("old", "new"))


def _edit_sizes(arguments: dict[str, Any]) -> str | None:
    """``-3 +5 lines`` for an edit, ``(120 lines)`` for a whole-file write, else None."""
    for old_key, new_key in _EDIT_PAIRS:
        old, new = arguments.get(old_key), arguments.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            return f"-{_line_count(old)} +{_line_count(new)} lines"
    content = arguments.get("content")
    if isinstance(content, str) and len(arguments) <= 3:
        return f"({_size_of(content)})"
    return None


def _line_count(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def _summarise_tool_result(row: dict[str, Any]) -> tuple[str, str]:
    name = row.get("tool_name") or "?"
    text = row.get("text") or ""
    head = _first_line(text) or "(empty)"
    extra = []
    lines = text.count("\n") + 1 if text else 0
    if lines > 1:
        extra.append(f"{lines} lines")
    if row.get("duration_ms") is not None:
        extra.append(_duration(row["duration_ms"]))
    tail = f"  ({', '.join(extra)})" if extra else ""
    prefix = "ERROR " if row.get("is_error") else ""
    return f"{prefix}{name} → {head}{tail}", _STYLES["tool_result"]


def _summarise_eval(row: dict[str, Any]) -> tuple[str, str]:
    verdict = (row.get("verdict") or "?").upper()
    parts = [verdict]
    passed, total = row.get("scenarios_passed"), row.get("scenarios_total")
    if total is not None:
        parts.append(f"{passed if passed is not None else '?'}/{total}")
    if row.get("speedup") is not None:
        parts.append(f"{row['speedup']:.3f}x")
    if row.get("vs_fa3") is not None:
        parts.append(f"vs FA3 {row['vs_fa3']:.2f}x")
    if row.get("best_speedup") is not None:
        parts.append(f"best {row['best_speedup']:.3f}x")
    attrs = parse_attrs(row.get("attrs"))
    if attrs.get("objective") is False or (attrs.get("sets") and not attrs.get("objective")):
        sets = attrs.get("sets")
        if isinstance(sets, list) and sets:
            parts.append("set " + ",".join(str(s) for s in sets))
    knobs = attrs.get("knobs")
    if isinstance(knobs, dict) and knobs:
        parts.append(" ".join(f"{k}={v}" for k, v in knobs.items()))
    if row.get("candidate_sha"):
        parts.append(f"cand {row['candidate_sha'][:7]}")
    reasons = attrs.get("reasons")
    if verdict != "PASS" and isinstance(reasons, list) and reasons:
        parts.append(f"— {reasons[0]}")
    good = verdict == "PASS" and (total is None or passed == total)
    return "  ".join(parts), _STYLES["eval"] if good else _FAILED_EVAL_STYLE


def _summarise_question(row: dict[str, Any]) -> tuple[str, str]:
    trigger = row.get("trigger") or "drawn"
    source = row.get("source") or "?"
    text = row.get("question_text") or row.get("text") or "(no text)"
    return f"[{trigger}] {source}: {text}", _STYLES["question"]


def _summarise_decision(row: dict[str, Any]) -> tuple[str, str]:
    attrs = parse_attrs(row.get("attrs"))
    parts = [f"{row.get('trigger') or '?'}: {_first_line(row.get('text')) or 'decision'}"]
    extra = []
    if attrs.get("wait_s") is not None:
        extra.append(f"waits {attrs['wait_s']:g} s")
    suggestions = attrs.get("suggestions")
    if isinstance(suggestions, list) and suggestions:
        extra.append(f"{len(suggestions)} suggestions")
    if attrs.get("attached"):
        extra.append("attached")
    if extra:
        parts.append(f"({', '.join(extra)})")
    return "  ".join(parts), _STYLES["decision"]


def _summarise_commit(row: dict[str, Any]) -> tuple[str, str]:
    sha = (row.get("git_sha") or "?")[:7]
    subject = _first_line(row.get("text"))
    if not subject:
        attrs = parse_attrs(row.get("attrs"))
        n = attrs.get("n")
        speedup = row.get("speedup", attrs.get("speedup"))
        subject = f"candidate {n if n is not None else '?'}"
        if speedup is not None:
            subject += f": {speedup:.3f}x"
    return f"{sha} {subject}", _STYLES["commit"]


def _summarise_compaction(row: dict[str, Any]) -> tuple[str, str]:
    attrs = parse_attrs(row.get("attrs"))
    cleared = attrs.get("cleared")
    count = len(cleared) if isinstance(cleared, list) else cleared
    parts = [f"cleared {count if count is not None else '?'} tool results"]
    if attrs.get("prompt_tokens") is not None:
        budget = attrs.get("budget_tokens")
        tokens = f"prompt {_tokens(attrs['prompt_tokens'])}"
        parts.append(f"({tokens} / budget {_tokens(budget)})" if budget else f"({tokens})")
    return " ".join(parts), _STYLES["compaction"]


def _summarise_error(row: dict[str, Any]) -> tuple[str, str]:
    attrs = parse_attrs(row.get("attrs"))
    head = " ".join(str(attrs[k]) for k in ("error_type", "status") if attrs.get(k) is not None)
    text = _first_line(row.get("text")) or "error"
    extra = []
    if attrs.get("attempt") is not None:
        extra.append(f"attempt {attrs['attempt']}")
    if attrs.get("final"):
        extra.append("final")
    elif attrs.get("wait_s") is not None:
        extra.append(f"retry in {attrs['wait_s']:g} s")
    tail = f"  ({', '.join(extra)})" if extra else ""
    return (f"{head}: {text}" if head else text) + tail, _STYLES["error"]


def _summarise_control(row: dict[str, Any]) -> tuple[str, str]:
    attrs = parse_attrs(row.get("attrs"))
    action = attrs.get("action") or attrs.get("command") or "control"
    parts = [str(action)]
    for key in ("reason", "detail"):
        if attrs.get(key):
            parts.append(_shorten(_one_line(str(attrs[key])), 2 * _ARG_CHARS))
    text = _first_line(row.get("text"))
    if text and len(parts) == 1:
        parts.append(text)
    return ": ".join(parts[:2]) + ("  " + "  ".join(parts[2:]) if parts[2:] else ""), _STYLES[
        "control"
    ]


def _summarise_other(row: dict[str, Any]) -> tuple[str, str]:
    return _first_line(row.get("text")) or row["kind"], ""


_SUMMARISERS: Final = {
    "message": _summarise_message,
    "thinking": _summarise_thinking,
    "tool_call": _summarise_tool_call,
    "tool_result": _summarise_tool_result,
    "eval": _summarise_eval,
    "question": _summarise_question,
    "decision": _summarise_decision,
    "commit": _summarise_commit,
    "compaction": _summarise_compaction,
    "error": _summarise_error,
    "control": _summarise_control,
}


# -- detail -------------------------------------------------------------------------------


def _section(title: str, body: str) -> str:
    return f"── {title} " + "─" * max(4, 60 - len(title)) + "\n" + body


def _pretty(value: Any, raw: str) -> str:
    if value is None:
        return raw
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# -- small helpers ------------------------------------------------------------------------


def _loads(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _first_line(text: str | None) -> str:
    if not text:
        return ""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size_of(value: Any) -> str:
    if isinstance(value, str):
        lines = value.count("\n") + 1 if value else 0
        return f"{lines} line{'s' if lines != 1 else ''}"
    if isinstance(value, list):
        return f"{len(value)} items"
    return _shorten(json.dumps(value, default=str), _ARG_CHARS)


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _tokens(count: Any) -> str:
    if not isinstance(count, int | float):
        return str(count)
    return f"{count / 1000:.0f}k" if count >= 10_000 else str(int(count))
