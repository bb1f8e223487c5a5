"""Importers turn other tools' transcripts into trace sessions (rows with source "importer").

Each importer parses its format into event field dicts with stable ``event_id`` values and hands
them to ``write_imported``, which appends only the events a session does not hold yet, so that
importing the same file twice adds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.durable import write_text_atomic
from kernelseek_tui.trace.layout import scan_session
from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.writer import TraceWriter


@dataclass(slots=True)
class ImportResult:
    """What one import did."""

    session_id: str
    session_dir: Path
    added: int
    already_present: int
    path: Path | None = None
    skipped_records: dict[str, int] = field(default_factory=dict)
    torn_last_line: bool = False
    elsewhere: int = 0  # events left out because another session already holds them


def session_event_ids(session_dir: Path) -> set[str]:
    """The ``event_id`` of every event a session holds (none for a session not written yet)."""
    if not session_dir.is_dir() or not scan_session(session_dir, warn=False).has_events:
        return set()
    ids = read_session(session_dir, columns=["event_id"], resolve_blobs=False)
    return set(pc.unique(ids.column("event_id")).to_pylist())


def write_imported(
    traces: Path,
    session_id: str,
    events: list[dict[str, Any]],
    meta: dict[str, Any],
    *,
    elsewhere: frozenset[str] | set[str] = frozenset(),
) -> ImportResult:
    """Append the events whose ``event_id`` the session lacks; write session.json if absent.

    ``elsewhere``: ids another session already holds (the same lines copied into another
    transcript): left out, so that nothing is counted twice across sessions.
    """
    paths = SessionPaths(Path(traces) / session_id)
    existing = session_event_ids(paths.dir)
    held = [e for e in events if e["event_id"] not in existing]
    new = [e for e in held if e["event_id"] not in elsewhere]
    if new:
        with TraceWriter(paths.dir, session_id) as writer:
            writer.append_many(new)
    if not paths.meta.exists() and (new or existing):
        _write_meta(paths, session_id, events, meta)
    return ImportResult(
        session_id=session_id,
        session_dir=paths.dir,
        added=len(new),
        already_present=len(events) - len(held),
        elsewhere=len(held) - len(new),
    )


def _write_meta(
    paths: SessionPaths, session_id: str, events: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), int)]

    def iso(us: int | None) -> str | None:
        if us is None:
            return None
        return datetime.fromtimestamp(us / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    meta = {
        "session_id": session_id,
        "task_dir": None,
        "agent": None,
        "model": None,
        "repo": None,
        "branch": None,
        "worktree": None,
        "base_sha": None,
        "pid": None,
        "status": "finished",
        "created": iso(min(stamps) if stamps else None),
        "updated": iso(max(stamps) if stamps else None),
        **extra,
    }
    write_text_atomic(paths.meta, json.dumps(meta, indent=2) + "\n")
