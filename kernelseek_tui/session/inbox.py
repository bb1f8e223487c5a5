"""The control inbox of a running session, and the heartbeat that says a person is watching.

``inbox.jsonl`` holds one JSON object per line, appended by the TUI or a ``kernelseek``
command: ``{"type": "question", "text": ..., "question_id": null, "source": "human"}``,
``{"type": "pause"}``, ``{"type": "resume"}``, ``{"type": "stop"}``; any may carry ``id`` and
``ts``. The engine reads it from a byte offset and records the offset it has consumed in the
trace, so a resumed engine never acts on a command twice. A line still being written (no
newline yet) is left for the next read.

A person is *attached* while the file ``attached`` in the session directory has been touched
within ``ATTACHED_FRESH_S`` seconds; the TUI touches it every ``ATTACHED_TOUCH_S`` seconds while
it shows a live session. At a decision moment the engine waits for a typed question only then.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths

QUESTION: Final = "question"
PAUSE: Final = "pause"
RESUME: Final = "resume"
STOP: Final = "stop"
COMMAND_TYPES: Final = (QUESTION, PAUSE, RESUME, STOP)

ATTACHED_TOUCH_S: Final = 5.0
ATTACHED_FRESH_S: Final = 15.0

_MAX_LINE: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class InboxCommand:
    """One line of the inbox. ``offset`` is the byte offset just after it; ``error`` says why
    a line could not be used (its ``type`` is then ``"invalid"``)."""

    type: str
    offset: int
    text: str | None = None
    question_id: str | None = None
    source: str = "human"
    id: str | None = None
    ts: str | None = None
    error: str | None = None

    def to_attrs(self) -> dict[str, Any]:
        """What the trace records about the command."""
        values = {"command": self.type, "inbox_offset": self.offset}
        if self.id is not None:
            values["command_id"] = self.id
        if self.error is not None:
            values["error"] = self.error
        return values


def parse_line(line: bytes, offset: int) -> InboxCommand:
    """One inbox line (without its newline) as a command; a bad line gives type ``invalid``."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return InboxCommand("invalid", offset, error=f"not JSON: {error}")
    if not isinstance(data, dict):
        return InboxCommand("invalid", offset, error="not a JSON object")
    kind = data.get("type")
    if kind not in COMMAND_TYPES:
        return InboxCommand("invalid", offset, error=f"unknown command type {kind!r}")
    text = data.get("text")
    if kind == QUESTION and (not isinstance(text, str) or not text.strip()):
        return InboxCommand("invalid", offset, error="a question needs a non-empty text")
    question_id = data.get("question_id")
    source = data.get("source") or "human"
    return InboxCommand(
        type=kind,
        offset=offset,
        text=text.strip() if isinstance(text, str) else None,
        question_id=question_id if isinstance(question_id, str) else None,
        source=source if source in ("human", "repertoire") else "human",
        id=str(data["id"]) if data.get("id") is not None else None,
        ts=str(data["ts"]) if data.get("ts") is not None else None,
    )


class InboxReader:
    """Reads new commands from ``inbox.jsonl`` starting at a byte offset."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset

    def read(self) -> list[InboxCommand]:
        """The complete lines appended since the last read, in order."""
        try:
            with self.path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self.offset:
                    # The file was replaced by a shorter one: nothing we consumed is in it.
                    self.offset = 0
                handle.seek(self.offset)
                data = handle.read(size - self.offset)
        except FileNotFoundError:
            return []
        commands: list[InboxCommand] = []
        position = self.offset
        while True:
            newline = data.find(b"\n", position - self.offset)
            if newline < 0:
                break
            line = data[position - self.offset : newline]
            position = self.offset + newline + 1
            if not line.strip():
                continue
            if len(line) > _MAX_LINE:
                commands.append(InboxCommand("invalid", position, error="line too long"))
                continue
            commands.append(parse_line(line, position))
        self.offset = position
        return commands


def append_command(session_dir: Path, command: dict[str, Any]) -> dict[str, Any]:
    """Append one command to a session's inbox (one ``write`` of one line, so writers that
    share the file never interleave). Returns the command as written, with ``ts`` set."""
    kind = command.get("type")
    if kind not in COMMAND_TYPES:
        raise KernelseekError(f"unknown inbox command {kind!r}; expected one of {COMMAND_TYPES}")
    if kind == QUESTION and not str(command.get("text") or "").strip():
        raise KernelseekError("a question needs a text")
    written = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **command}
    line = (json.dumps(written, separators=(",", ":")) + "\n").encode()
    if len(line) > _MAX_LINE:
        raise KernelseekError("inbox command too long")
    path = SessionPaths(Path(session_dir)).inbox
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return written


def attached_path(session_dir: Path) -> Path:
    return SessionPaths(Path(session_dir)).attached


def touch_attached(session_dir: Path) -> None:
    """Say that a person is watching the session (call every ``ATTACHED_TOUCH_S`` seconds)."""
    path = attached_path(session_dir)
    path.touch()
    os.utime(path)


def clear_attached(session_dir: Path) -> None:
    """Say that nobody is watching any more (a stale file means the same, only later)."""
    with contextlib.suppress(FileNotFoundError):
        attached_path(session_dir).unlink()


def is_attached(
    session_dir: Path, *, fresh_s: float = ATTACHED_FRESH_S, now: float | None = None
) -> bool:
    """Whether a person touched the heartbeat within ``fresh_s`` seconds."""
    try:
        mtime = attached_path(session_dir).stat().st_mtime
    except FileNotFoundError:
        return False
    return (now if now is not None else time.time()) - mtime <= fresh_s
