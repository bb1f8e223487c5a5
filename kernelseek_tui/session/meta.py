"""``session.json``: what a session is and whether it is still alive.

The engine writes the file (atomically: a temporary file renamed over it) when the session
starts, on every status change and after each evaluation; ``ls``, ``attach`` and the TUI read
it. A session whose status says ``running`` or ``paused`` but whose engine process is gone was
killed: its *effective* status is ``crashed``, and ``kernelseek run --resume`` continues it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.experiments import experiment_dirs

RUNNING: Final = "running"
PAUSED: Final = "paused"
FINISHED: Final = "finished"
CRASHED: Final = "crashed"
STATUSES: Final = (RUNNING, PAUSED, FINISHED, CRASHED)
LIVE_STATUSES: Final = frozenset({RUNNING, PAUSED})


def utc_now() -> str:
    """The current UTC time as ISO 8601 with a ``Z``, to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class SessionMeta:
    """The contents of ``session.json`` (see docs/INTERNALS.md). Unknown keys are kept."""

    session_id: str
    task_dir: str
    agent: str
    repo: str
    branch: str
    worktree: str
    base_sha: str
    status: str = RUNNING
    model: str | None = None
    task: str | None = None  # the task's name
    pid: int | None = None
    pid_start: int | None = None  # the process's start time (clock ticks), against pid reuse
    host: str | None = None
    created: str = field(default_factory=utc_now)
    updated: str = field(default_factory=utc_now)
    end_reason: str | None = None
    objective_sets: list[str] | None = None  # None: the task's own objective
    config: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        return {**extra, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionMeta:
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)


def read_meta(session_dir: Path) -> SessionMeta:
    """The session's ``session.json``; raises KernelseekError when missing or unreadable."""
    path = SessionPaths(Path(session_dir)).meta
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise KernelseekError(f"{path.parent} is not a session: it has no session.json") from None
    except (OSError, ValueError) as error:
        raise KernelseekError(f"cannot read {path}: {error}") from None
    if not isinstance(data, dict) or "session_id" not in data:
        raise KernelseekError(f"{path} is not a kernelseek session file")
    try:
        return SessionMeta.from_dict(data)
    except TypeError as error:
        raise KernelseekError(f"{path} lacks a required field ({error})") from None


def write_meta(session_dir: Path, meta: SessionMeta) -> None:
    """Write ``session.json`` atomically, stamping ``updated``."""
    meta.updated = utc_now()
    path = SessionPaths(Path(session_dir)).meta
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(meta.to_dict(), indent=2, sort_keys=True, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".session.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def process_start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    rest = stat.rsplit(")", 1)[-1].split()
    try:
        return int(rest[19])  # field 22 overall
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int | None, start_ticks: int | None = None) -> bool:
    """Whether the process is alive (a zombie, or a new process reusing the pid, is not)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: kill(0) is all we can know
    if stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
        return False
    if start_ticks is not None:
        now = process_start_ticks(pid)
        if now is not None and now != start_ticks:
            return False
    return True


def same_host(meta: SessionMeta) -> bool:
    return meta.host in (None, socket.gethostname())


def effective_status(meta: SessionMeta) -> str:
    """The status to show: ``crashed`` for a live status whose engine process is gone.

    A session started on another host cannot be checked from here and keeps its status.
    """
    if meta.status in LIVE_STATUSES and same_host(meta) and not pid_alive(meta.pid, meta.pid_start):
        return CRASHED
    return meta.status


def is_live(meta: SessionMeta) -> bool:
    """Whether an engine process is (as far as this host can tell) running the session."""
    return effective_status(meta) in LIVE_STATUSES


@dataclass(frozen=True, slots=True)
class SessionListing:
    """One session found under a traces root."""

    dir: Path
    meta: SessionMeta
    status: str  # effective

    @property
    def alive(self) -> bool | None:
        """Whether the engine process lives; None when it ran on another host or never had one."""
        if self.meta.pid is None or not same_host(self.meta):
            return None
        return pid_alive(self.meta.pid, self.meta.pid_start)


def list_sessions(root: Path) -> list[SessionListing]:
    """Every session directory under ``root`` (oldest first); unreadable ones are skipped."""
    found: list[SessionListing] = []
    if not root.is_dir():
        return found
    for child in sorted(root.iterdir()):
        if not SessionPaths(child).meta.is_file():
            continue
        try:
            meta = read_meta(child)
        except KernelseekError:
            continue
        found.append(SessionListing(child, meta, effective_status(meta)))
    found.sort(key=lambda s: (s.meta.created, s.meta.session_id))
    return found


def find_session(root: Path, ref: str) -> Path:
    """The session directory ``ref`` names: a path to one, an id under ``root`` or inside one
    of its experiments (``<root>/<experiment>/<id>``), or a unique prefix of such an id.
    Raises KernelseekError naming the choices when it is ambiguous."""
    as_path = Path(ref).expanduser()
    if SessionPaths(as_path).meta.is_file():
        return as_path.resolve()
    if SessionPaths(root / ref).meta.is_file():
        return (root / ref).resolve()
    # An experiment's sessions lie one level down; a user knows them by id, as `ls` shows them.
    exact = [d / ref for d in experiment_dirs(root) if SessionPaths(d / ref).meta.is_file()]
    if len(exact) == 1:
        return exact[0].resolve()
    if exact:
        raise KernelseekError(
            f"{ref!r} is a session of {len(exact)} experiments "
            f"({', '.join(d.parent.name for d in exact)}): give its directory or --traces"
        )
    matches = [s for s in sessions_within(root) if s.meta.session_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0].dir.resolve()
    if not matches:
        raise KernelseekError(f"no session {ref!r} under {root} (see `kernelseek ls`)")
    names = ", ".join(s.meta.session_id for s in matches[:8])
    raise KernelseekError(f"{ref!r} matches {len(matches)} sessions ({names}): give more of the id")


def sessions_within(root: Path) -> list[SessionListing]:
    """The sessions under ``root`` and those of its experiments, one level down."""
    found = list_sessions(root)
    for experiment_dir in experiment_dirs(root):
        found.extend(list_sessions(experiment_dir))
    return found
