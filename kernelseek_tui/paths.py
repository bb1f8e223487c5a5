"""Where things live on disk: the traces root and the files of one session under it.

A session's directory, ``<traces>/<session_id>/``, holds:
  session.json      what the session is (task, agent, model, branch, worktree, pid, status)
  wal.jsonl         the write-ahead log of events not yet in Parquet
  segments/         finished Parquet segments (``*.parquet``; ``*.tmp`` while being written)
  events.parquet    the compacted trace, sorted by seq
  blobs/            content-addressed large payloads the trace rows point to
  inbox.jsonl       the control inbox: human questions, pause, resume, stop
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.errors import KernelseekError

TRACES_ENV = "KERNELSEEK_TRACES"
DEFAULT_TRACES = Path("traces")


def traces_root(explicit: str | os.PathLike[str] | None = None, *, must_exist: bool = True) -> Path:
    """The traces root: ``--traces``, else ``$KERNELSEEK_TRACES``, else ``./traces``."""
    raw = explicit if explicit is not None else os.environ.get(TRACES_ENV) or DEFAULT_TRACES
    root = Path(raw).expanduser()
    if must_exist and not root.is_dir():
        raise KernelseekError(f"traces root {str(root)!r} does not exist or is not a directory")
    return root


@dataclass(frozen=True, slots=True)
class SessionPaths:
    """The files of one session directory (see the module docstring)."""

    dir: Path

    @property
    def session_id(self) -> str:
        return self.dir.name

    @property
    def meta(self) -> Path:
        return self.dir / "session.json"

    @property
    def wal(self) -> Path:
        return self.dir / "wal.jsonl"

    @property
    def segments(self) -> Path:
        return self.dir / "segments"

    @property
    def events(self) -> Path:
        return self.dir / "events.parquet"

    @property
    def blobs(self) -> Path:
        return self.dir / "blobs"

    @property
    def inbox(self) -> Path:
        return self.dir / "inbox.jsonl"


def session_paths(root: Path, session_id: str) -> SessionPaths:
    return SessionPaths(root / session_id)
