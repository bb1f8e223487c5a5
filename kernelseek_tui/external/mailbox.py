"""Requests to a running external session from other processes, as files.

The Claude Code Stop hook and ``kernelseek session eval|ask|finish`` run in processes of their
own, while one process (``kernelseek mcp`` or ``kernelseek session start``) holds the engine and
is the trace's only writer. They meet in ``<session>/external/``: a request is one JSON file in
``requests/`` (written to a temporary name and renamed, so the engine never reads half of
one), named so that names sort in the order they were sent; the engine's agent takes it, runs
it, and writes the reply to ``replies/<id>.json`` the same way. The sender waits for that file,
and gives up when the engine's process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.external.replies import ExternalReply
from kernelseek_tui.session.meta import is_live, read_meta

MAILBOX_DIR = "external"
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class MailRequest:
    """One request from another process."""

    request_id: str
    tool: str
    tool_input: dict[str, Any]
    via: str  # who sent it: claude-code-stop-hook, shell
    transcript: str | None  # the sender's Claude Code transcript, when it knows it


def requests_dir(session_dir: Path) -> Path:
    return Path(session_dir) / MAILBOX_DIR / "requests"


def replies_dir(session_dir: Path) -> Path:
    return Path(session_dir) / MAILBOX_DIR / "replies"


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def session_is_running(session_dir: Path) -> bool:
    """Whether a process holds this session's engine now."""
    try:
        return is_live(read_meta(session_dir))
    except Exception:  # no session.json, or a torn one: nobody to answer
        return False


def send_request(
    session_dir: Path,
    tool: str,
    tool_input: dict[str, Any],
    *,
    via: str,
    transcript: str | None = None,
    timeout_s: float | None = None,
    running: Callable[[Path], bool] = session_is_running,
) -> ExternalReply:
    """Send one request to the session's engine and wait for its reply.

    Without a running engine the reply says so (``ended``); past ``timeout_s`` it is an error
    and the request is withdrawn if it was not taken yet.
    """
    session_dir = Path(session_dir)
    if not running(session_dir):
        return ExternalReply(
            f"session {session_dir.name} is not running", is_error=True, ended=True
        )
    request_id = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    request = requests_dir(session_dir) / f"{request_id}.json"
    reply = replies_dir(session_dir) / f"{request_id}.json"
    _write_atomically(
        request,
        {"tool": tool, "input": tool_input, "via": via, "transcript": transcript},
    )
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        if reply.exists():
            data = json.loads(reply.read_text())
            reply.unlink(missing_ok=True)
            return ExternalReply.from_dict(data)
        gone = not running(session_dir)
        late = deadline is not None and time.monotonic() >= deadline
        if gone or late:
            with contextlib.suppress(FileNotFoundError):
                request.unlink()
                return ExternalReply(
                    "the session ended before it took the request"
                    if gone
                    else f"no reply within {timeout_s:g} s",
                    is_error=True,
                    ended=gone,
                )
            if gone and not reply.exists():
                return ExternalReply("the session ended", is_error=True, ended=True)
        time.sleep(POLL_S)


class Mailbox:
    """The engine's side: take the waiting requests in order, answer each."""

    def __init__(self, session_dir: Path) -> None:
        self.session_dir = Path(session_dir)

    def take(self) -> list[MailRequest]:
        folder = requests_dir(self.session_dir)
        if not folder.is_dir():
            return []
        taken: list[MailRequest] = []
        for path in sorted(folder.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                path.unlink()
            except (OSError, ValueError):
                continue  # withdrawn by its sender meanwhile, or not ours
            tool_input = data.get("input")
            taken.append(
                MailRequest(
                    request_id=path.stem,
                    tool=str(data.get("tool") or ""),
                    tool_input=tool_input if isinstance(tool_input, dict) else {},
                    via=str(data.get("via") or "mailbox"),
                    transcript=data.get("transcript") or None,
                )
            )
        return taken

    def answer(self, request: MailRequest, reply: ExternalReply) -> None:
        _write_atomically(
            replies_dir(self.session_dir) / f"{request.request_id}.json", reply.to_dict()
        )
