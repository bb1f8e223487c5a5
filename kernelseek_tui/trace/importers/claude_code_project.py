"""Importing many Claude Code transcripts at once: every good file, each line only once.

Two things a plain file-by-file import gets wrong:

- A bad file must not stop the others: each file is parsed on its own, a bad one becomes an
  outcome with its one-line error, and the good ones are imported all the same.
- ``claude --resume`` starts a new transcript file that begins with a copy of the earlier
  conversation (the same message uuids). Imported as two sessions, its tool calls and tokens
  would count twice. Event ids derive from those uuids, so the files of one project (one
  directory, as Claude Code keeps ``~/.claude/projects/<project>/``) are imported oldest first
  and a line already held by another session of the project is left out of the later one.
  Sessions imported earlier from the same directory (their ``session.json``
  ``imported_from``) count too, so the order of the commands does not matter either.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.importers import ImportResult, session_event_ids
from kernelseek_tui.trace.importers.claude_code import (
    Transcript,
    TranscriptError,
    parse_transcript,
    write_transcript,
)


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """One transcript file: what its import did, or why it could not be imported."""

    path: Path
    result: ImportResult | None = None
    error: str | None = None


def import_transcripts(
    files: Iterable[Path], traces: Path, *, session_id: str | None = None
) -> list[FileOutcome]:
    """Import each file (see the module docstring); the outcomes come in the files' order."""
    files = list(files)
    outcomes: dict[Path, FileOutcome] = {}
    projects: dict[Path, list[Transcript]] = defaultdict(list)
    for path in files:
        try:
            transcript = parse_transcript(path, session_id)
        except TranscriptError as error:
            outcomes[path] = FileOutcome(path, error=str(error))
            continue
        projects[Path(path).resolve().parent].append(transcript)
    for project, transcripts in projects.items():
        held = _held_by_sessions(traces, project)
        for transcript in sorted(transcripts, key=_first_ts):
            others: set[str] = set()
            for owner, ids in held.items():
                if owner != transcript.session_id:
                    others |= ids
            result = write_transcript(transcript, traces, elsewhere=others)
            held[transcript.session_id] |= {e["event_id"] for e in transcript.events} - others
            outcomes[transcript.path] = FileOutcome(transcript.path, result=result)
    return [outcomes[path] for path in files]


def _first_ts(transcript: Transcript) -> int:
    stamps = [e["ts"] for e in transcript.events if isinstance(e.get("ts"), int)]
    return min(stamps) if stamps else 0


def _held_by_sessions(traces: Path, project: Path) -> defaultdict[str, set[str]]:
    """The event ids of each session under ``traces`` imported from a file in ``project``."""
    held: defaultdict[str, set[str]] = defaultdict(set)
    if not traces.is_dir():
        return held
    for child in traces.iterdir():
        paths = SessionPaths(child)
        try:
            meta = json.loads(paths.meta.read_text())
        except (OSError, ValueError):
            continue  # no session, or not ours to judge here: `ls` reports unreadable ones
        source = meta.get("imported_from") if isinstance(meta, dict) else None
        if isinstance(source, str) and Path(source).parent == project:
            held[paths.session_id] |= session_event_ids(paths.dir)
    return held
