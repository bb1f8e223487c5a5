"""Import Claude Code JSONL session transcripts as trace sessions (source ``importer``).

A transcript has one JSON object per line. The lines that matter have ``type`` user,
assistant, system or summary; user/assistant/system lines carry ``uuid``, ``parentUuid``,
``sessionId``, ``timestamp`` and ``message`` (role, model, content blocks, usage). Other types
(file-history snapshots, queue operations, progress) are counted and skipped.

How lines become events:
- Lines are ordered along the ``parentUuid`` tree (parents first, siblings in file order), not
  by file position.
- One API response is often split over several assistant lines that share ``message.id``,
  each holding one content block and repeating the usage: they become one response, its blocks
  in order (``text`` -> message, ``thinking`` -> thinking, ``tool_use`` -> tool_call), with
  model, ``response_id``, tokens and cost on its first event only, so usage counts once.
- User lines become messages (typed text) or tool_result events (matched to their tool call's
  name); system lines harness messages (``compact_boundary`` a compaction); summary lines
  harness messages.
- Event ids are derived from the transcript's own ids, so importing a file again adds only
  events that were not there before (a transcript that grew adds its new lines).
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.trace.importers import ImportResult, write_imported
from kernelseek_tui.trace.pricing import estimate_cost
from kernelseek_tui.trace.schema import datetime_to_us, to_json_text

# A fixed namespace so that the same transcript line always yields the same event id.
_NAMESPACE: Final = uuid.UUID("6c1f3f7e-2b1e-4d7c-9a8f-1c2d3e4f5a6b")
_KNOWN_TYPES: Final = frozenset({"user", "assistant", "system", "summary"})
# Lines Claude Code writes beside the conversation: a file of only these is a transcript with
# nothing to import (Claude Code leaves such files behind), not a foreign file.
_AUXILIARY_TYPES: Final = frozenset({"file-history-snapshot", "queue-operation", "progress"})
_USAGE_KEYS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
SESSION_PREFIX: Final = "cc-"


class TranscriptError(KernelseekError):
    """A file that is not a Claude Code JSONL transcript."""


@dataclass(slots=True)
class Transcript:
    """What one transcript file holds, as event field dicts in trace order."""

    path: Path
    session_id: str
    events: list[dict[str, Any]]
    skipped_records: dict[str, int] = field(default_factory=dict)
    torn_last_line: bool = False
    models: list[str] = field(default_factory=list)


def default_session_id(path: Path) -> str:
    """``cc-<file stem>``, with characters a directory name should not hold replaced."""
    stem = "".join(c if c.isalnum() or c in "._-" else "-" for c in path.stem)
    return SESSION_PREFIX + (stem or "transcript")


def parse_transcript(path: Path, session_id: str | None = None) -> Transcript:
    """Parse a transcript file into trace events; raise ``TranscriptError`` for a bad file."""
    path = Path(path)
    records, torn, skipped = _read_records(path)
    builder = _Builder(path)
    ordered = _tree_order([r for r in records if r.get("type") != "summary"])
    builder.group_lines(ordered)
    for record in ordered:
        builder.add(record)
    summaries = [r for r in records if r.get("type") == "summary"]
    events = builder.summaries(summaries) + builder.events
    return Transcript(
        path=path,
        session_id=session_id or default_session_id(path),
        events=events,
        skipped_records=skipped,
        torn_last_line=torn,
        models=builder.models,
    )


def transcript_files(paths: Iterable[Path]) -> list[Path]:
    """The transcript files named: files as given, directories searched for ``*.jsonl``."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(path.rglob("*.jsonl"))
            if not inside:
                raise TranscriptError(f"{path}: no *.jsonl transcripts in this directory")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise TranscriptError(f"{path}: no such file or directory")
    return found


# -- reading ------------------------------------------------------------------------------


def _read_records(path: Path) -> tuple[list[dict[str, Any]], bool, dict[str, int]]:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TranscriptError(f"{path}: cannot read: {error.strerror}") from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TranscriptError(
            f"{path}: not a Claude Code JSONL transcript (not UTF-8 text)"
        ) from error
    lines = text.split("\n")
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = defaultdict(int)
    torn = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines) and not text.endswith("\n") and records:
                torn = True  # the last line of a transcript still being written
                continue
            raise TranscriptError(
                f"{path}:{number}: not a Claude Code JSONL transcript "
                f"(line is not JSON: {error.msg})"
            ) from error
        if not isinstance(value, dict):
            raise TranscriptError(
                f"{path}:{number}: not a Claude Code JSONL transcript (line is not a JSON object)"
            )
        kind = value.get("type")
        if kind in _KNOWN_TYPES:
            value["_line"] = number
            records.append(value)
        else:
            skipped[str(kind)] += 1
    if not records and not _AUXILIARY_TYPES & set(skipped):
        raise TranscriptError(
            f"{path}: not a Claude Code JSONL transcript (no user/assistant/system/summary lines)"
        )
    return records, torn, dict(skipped)


def _tree_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in parentUuid-tree pre-order: parents first, siblings in file order."""
    by_uuid: dict[str, dict[str, Any]] = {}
    unique: list[dict[str, Any]] = []
    for record in records:
        key = record.get("uuid")
        if isinstance(key, str):
            if key in by_uuid:
                continue  # the same line copied twice (resumed sessions repeat history)
            by_uuid[key] = record
        unique.append(record)
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    roots: list[dict[str, Any]] = []
    for record in unique:
        parent = record.get("parentUuid")
        if isinstance(parent, str) and parent in by_uuid and parent != record.get("uuid"):
            children[parent].append(record)
        else:
            roots.append(record)
    ordered: list[dict[str, Any]] = []
    seen: set[int] = set()
    stack = list(reversed(roots))
    while stack:
        record = stack.pop()
        if id(record) in seen:
            continue
        seen.add(id(record))
        ordered.append(record)
        stack.extend(reversed(children.get(record.get("uuid") or "", [])))
    # Records caught in a parent cycle are unreachable from any root; keep them, in file order.
    ordered.extend(r for r in unique if id(r) not in seen)
    return ordered


# -- building events ----------------------------------------------------------------------


class _Builder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        self.models: list[str] = []
        self._last_event_of: dict[str, str] = {}  # transcript uuid -> last event id from it
        self._tool_names: dict[str, str] = {}
        self._responses_done: set[str] = set()
        self._groups: dict[str, list[dict[str, Any]]] = {}
        self._turn = 0
        self._last_ts: int | None = None

    def add(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "assistant":
            self._assistant(record)
        elif kind == "user":
            self._user(record)
        elif kind == "system":
            self._system(record)

    def summaries(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first_ts = self.events[0]["ts"] if self.events else self._ts({})
        out = []
        for record in records:
            text = record.get("summary")
            out.append(
                {
                    "event_id": _event_id("summary", record.get("leafUuid"), str(text)),
                    "kind": "message",
                    "role": "harness",
                    "source": "importer",
                    "ts": first_ts,
                    "text": text if isinstance(text, str) else to_json_text(text),
                    "attrs": to_json_text(
                        {"cc_type": "summary", "cc_leaf_uuid": record.get("leafUuid")}
                    ),
                }
            )
        return out

    def group_lines(self, records: Iterable[dict[str, Any]]) -> None:
        """Remember every line of each response (by message.id), in tree order."""
        for record in records:
            if record.get("type") == "assistant":
                self._groups.setdefault(_response_key(record), []).append(record)

    # assistant responses

    def _assistant(self, record: dict[str, Any]) -> None:
        key = _response_key(record)
        if key in self._responses_done:
            return
        self._responses_done.add(key)
        lines = self._groups.get(key, [record])
        message = _message(record)
        blocks = _merged_blocks(lines)
        usage = _merged_usage(lines)
        model = message.get("model") if isinstance(message.get("model"), str) else None
        if model and model not in self.models and not model.startswith("<"):
            self.models.append(model)
        stop_reason = None
        for line in lines:
            line_message = line.get("message")
            if isinstance(line_message, dict) and line_message.get("stop_reason"):
                stop_reason = line_message["stop_reason"]
        parent: str | None = self._parent(record)
        is_error = bool(record.get("isApiErrorMessage"))
        cost = _cost(lines, model, usage)
        common = self._common_attrs(record) | (
            {"cc_request_id": record["requestId"]} if record.get("requestId") else {}
        )
        made: list[dict[str, Any]] = []
        for index, (line, block) in enumerate(blocks or [(record, None)]):
            event: dict[str, Any] = {
                "event_id": _event_id(key, index),
                "kind": "error" if is_error else "message",
                "role": "assistant",
                "source": "importer",
                "ts": self._ts(line),
                "turn": self._turn,
                "parent_event_id": parent,
            }
            event.update(_assistant_block(block, self._tool_names))
            attrs = dict(common)
            if "attrs" in event:
                attrs.update(json.loads(event["attrs"]))
            event["attrs"] = to_json_text(attrs)
            if index == 0:
                event.update(
                    model=model,
                    response_id=message.get("id"),
                    stop_reason=stop_reason,
                    cost_usd=cost,
                    **usage,
                )
            made.append({k: v for k, v in event.items() if v is not None})
            parent = event["event_id"]
        self.events.extend(made)
        for line in lines:
            if isinstance(line.get("uuid"), str):
                self._last_event_of[line["uuid"]] = made[-1]["event_id"]

    # user lines: typed text, or results of tool calls

    def _user(self, record: dict[str, Any]) -> None:
        message = _message(record)
        content = message.get("content")
        ts = self._ts(record)
        parent = self._parent(record)
        common = self._common_attrs(record)
        is_meta = bool(record.get("isMeta"))
        if is_meta:
            common["cc_is_meta"] = True
        blocks: list[Any] = [content] if isinstance(content, str) else list(content or [])
        prompts = [b for b in blocks if isinstance(b, str) or _block_type(b) == "text"]
        if prompts and not is_meta:
            self._turn += 1
        key = str(record.get("uuid") or f"line{record['_line']}")
        made = []
        for index, block in enumerate(blocks):
            event: dict[str, Any] = {
                "event_id": _event_id(key, index),
                "role": "user",
                "source": "importer",
                "ts": ts,
                "turn": self._turn,
                "parent_event_id": parent,
            }
            attrs = dict(common)
            if _block_type(block) == "tool_result":
                call_id = block.get("tool_use_id")
                event.update(
                    kind="tool_result",
                    tool_call_id=call_id,
                    tool_name=self._tool_names.get(str(call_id)),
                    text=_result_text(block.get("content")),
                    is_error=bool(block.get("is_error")),
                )
                if "toolUseResult" in record and index == _first_result(blocks):
                    # Claude Code's own structured copy of the result (file contents, diffs):
                    # kept whole; the writer moves a large one to the blob store.
                    attrs["cc_tool_use_result"] = record["toolUseResult"]
            elif isinstance(block, str):
                event.update(kind="message", text=block)
            elif _block_type(block) == "text":
                event.update(kind="message", text=block.get("text"))
            else:
                event.update(kind="message", text=_describe_block(block))
                attrs["cc_block_type"] = _block_type(block)
            event["attrs"] = to_json_text(attrs)
            made.append({k: v for k, v in event.items() if v is not None})
            parent = event["event_id"]
        self.events.extend(made)
        if made and isinstance(record.get("uuid"), str):
            self._last_event_of[record["uuid"]] = made[-1]["event_id"]

    def _system(self, record: dict[str, Any]) -> None:
        subtype = record.get("subtype")
        content = record.get("content")
        attrs = self._common_attrs(record) | {
            k: v
            for k, v in (("cc_subtype", subtype), ("cc_level", record.get("level")))
            if v is not None
        }
        if record.get("compactMetadata") is not None:
            attrs["cc_compact_metadata"] = record["compactMetadata"]
        event: dict[str, Any] = {
            "event_id": _event_id(str(record.get("uuid") or f"line{record['_line']}"), 0),
            "kind": "compaction" if subtype == "compact_boundary" else "message",
            "role": "harness",
            "source": "importer",
            "ts": self._ts(record),
            "turn": self._turn,
            "parent_event_id": self._parent(record),
            "text": content
            if isinstance(content, str) or content is None
            else to_json_text(content),
            "attrs": to_json_text(attrs),
        }
        self.events.append({k: v for k, v in event.items() if v is not None})
        if isinstance(record.get("uuid"), str):
            self._last_event_of[record["uuid"]] = event["event_id"]

    # shared pieces

    def _common_attrs(self, record: dict[str, Any]) -> dict[str, Any]:
        attrs: dict[str, Any] = {"cc_type": record.get("type"), "cc_line": record.get("_line")}
        for source_key, key in (
            ("uuid", "cc_uuid"),
            ("parentUuid", "cc_parent_uuid"),
            ("sessionId", "cc_session_id"),
        ):
            if record.get(source_key) is not None:
                attrs[key] = record[source_key]
        if record.get("isSidechain"):
            attrs["cc_is_sidechain"] = True
        return attrs

    def _parent(self, record: dict[str, Any]) -> str | None:
        parent = record.get("parentUuid")
        return self._last_event_of.get(parent) if isinstance(parent, str) else None

    def _ts(self, record: dict[str, Any]) -> int:
        raw = record.get("timestamp")
        value: int | None = None
        if isinstance(raw, str):
            try:
                parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
                value = datetime_to_us(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
            except ValueError:
                value = None
        if value is None:
            value = self._last_ts if self._last_ts is not None else _mtime_us(self.path)
        self._last_ts = value
        return value


def _message(record: dict[str, Any]) -> dict[str, Any]:
    message = record.get("message")
    return message if isinstance(message, dict) else {}


def _response_key(record: dict[str, Any]) -> str:
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("id"), str):
        return message["id"]
    return str(record.get("uuid") or f"line{record.get('_line')}")


def _merged_blocks(lines: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """The content blocks of all lines of one response, in order, each block once, with the
    line each came from."""
    blocks: list[tuple[dict[str, Any], Any]] = []
    seen: set[str] = set()
    for line in lines:
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        items = [content] if isinstance(content, str) else list(content or [])
        for block in items:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
                key = "tool_use:" + str(block["id"])
            else:
                key = json.dumps(block, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                blocks.append((line, block))
    return blocks


def _merged_usage(lines: list[dict[str, Any]]) -> dict[str, int]:
    """Usage of one response: each line repeats it (streaming may grow output_tokens), so the
    largest value of each counter is the response's, counted once."""
    usage: dict[str, int] = {}
    for line in lines:
        message = line.get("message")
        raw = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(raw, dict):
            continue
        for key in _USAGE_KEYS:
            value = raw.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                usage[key] = max(usage.get(key, 0), value)
    return usage


def _cost(lines: list[dict[str, Any]], model: str | None, usage: dict[str, int]) -> float | None:
    for line in lines:
        recorded = line.get("costUSD")
        if isinstance(recorded, int | float) and not isinstance(recorded, bool):
            return float(recorded)  # older Claude Code versions wrote the cost themselves
    if not usage:
        return None
    return estimate_cost(
        model,
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        usage.get("cache_creation_input_tokens"),
        usage.get("cache_read_input_tokens"),
    )


def _assistant_block(block: Any, tool_names: dict[str, str]) -> dict[str, Any]:
    kind = _block_type(block)
    if block is None:
        return {}
    if isinstance(block, str) or kind == "text":
        return {"text": block if isinstance(block, str) else block.get("text")}
    if kind == "thinking":
        return {"kind": "thinking", "text": block.get("thinking")}
    if kind == "redacted_thinking":
        return {"kind": "thinking", "attrs": to_json_text({"cc_redacted": True})}
    if kind in ("tool_use", "server_tool_use"):
        call_id = block.get("id")
        name = block.get("name")
        if call_id and name:
            tool_names[str(call_id)] = str(name)
        return {
            "kind": "tool_call",
            "tool_name": name,
            "tool_call_id": call_id,
            "tool_input": to_json_text(block.get("input", {})),
        }
    return {"text": _describe_block(block), "attrs": to_json_text({"cc_block_type": kind})}


def _block_type(block: Any) -> str | None:
    return block.get("type") if isinstance(block, dict) else None


def _first_result(blocks: list[Any]) -> int:
    return next(i for i, b in enumerate(blocks) if _block_type(b) == "tool_result")


def _result_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if _block_type(item) == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, str):
                parts.append(item)
            else:
                parts.append(_describe_block(item))
        return "\n".join(parts)
    return to_json_text(content)


def _describe_block(block: Any) -> str:
    kind = _block_type(block)
    if kind == "image":
        return "[image]"
    return to_json_text(block)


def _event_id(*parts: Any) -> str:
    return uuid.uuid5(_NAMESPACE, ":".join(str(p) for p in parts)).hex


def _mtime_us(path: Path) -> int:
    try:
        return int(path.stat().st_mtime * 1_000_000)
    except OSError:
        return 0


def import_claude_code(
    path: Path,
    traces: Path,
    *,
    session_id: str | None = None,
    elsewhere: frozenset[str] | set[str] = frozenset(),
) -> ImportResult:
    """Import one transcript into ``traces/<session_id>/``; events already there are skipped,
    and so are those whose ids are in ``elsewhere`` (held by another session)."""
    return write_transcript(parse_transcript(path, session_id), traces, elsewhere=elsewhere)


def write_transcript(
    transcript: Transcript, traces: Path, *, elsewhere: frozenset[str] | set[str] = frozenset()
) -> ImportResult:
    """Write a parsed transcript as its session (see :func:`import_claude_code`)."""
    path = transcript.path
    meta = {
        "agent": "claude-code (imported)",
        "model": transcript.models[0] if transcript.models else None,
        "imported_from": str(Path(path).resolve()),
    }
    result = write_imported(
        traces, transcript.session_id, transcript.events, meta, elsewhere=elsewhere
    )
    result.path = Path(path)
    result.skipped_records = transcript.skipped_records
    result.torn_last_line = transcript.torn_last_line
    return result
