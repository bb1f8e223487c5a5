"""One short line per event, for the transcript: its clock, its kind in short, a summary of
what it says (a tool call's target first, an edit by its line counts, an eval's verdict and
speedup) and a style. ``line_of`` is the one entry; ``transcript.TranscriptIndex`` calls it for
the rows it draws and for search, which looks in the lines as drawn.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Final

from kernelseek_tui.trace.schema import parse_attrs

__all__ = ["TranscriptLine", "json_or_none", "line_of"]

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


_NO_BREAKS: Final = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def line_of(row: dict[str, Any], ts_us: int) -> TranscriptLine:
    """One event (a trace row as Python values) as one line; ``ts_us`` is its time in µs."""
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
    arguments = json_or_none(row.get("tool_input"))
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
    if attrs.get("replayed_version"):  # a replayed history: which committed version this is
        commit = str(attrs.get("replayed_commit") or "")[:7]
        parts.append(f"[replayed {attrs['replayed_version']}{' ' + commit if commit else ''}]")
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


# -- small helpers ------------------------------------------------------------------------


def json_or_none(text: str | None) -> Any:
    """``text`` parsed as JSON, or None when it is unset or not JSON."""
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
