"""Recorded sessions shipped as files: a trace directory plus a git bundle of its branch.

A recorded session travels as ``<id>/`` (session.json, events.parquet, evals/) and
``<id>.bundle`` (the branch ``kernelseek/<id>`` and its notes refs), because a git
repository cannot live inside another one's tree. ``unpack_recorded`` makes them browsable
again: the trace copied under a traces root, the bundle fetched into a fresh repository, and
session.json pointed at the new places. The demo (`traces/demo/`) and the TUI's test fixture
are such recordings.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history.bundle import clone_bundle, write_bundle
from kernelseek_tui.paths import DEMO_DIR, SessionPaths


@dataclass(frozen=True, slots=True)
class UnpackedSession:
    session_id: str
    session_dir: Path
    repo: Path


def recorded_sessions(source: Path = DEMO_DIR) -> list[str]:
    """The ids of the recorded sessions in ``source`` (each a directory with a bundle)."""
    if not source.is_dir():
        raise KernelseekError(f"no recorded sessions at {source}")
    return sorted(
        p.name for p in source.iterdir() if p.is_dir() and (source / f"{p.name}.bundle").is_file()
    )


def unpack_recorded(source: Path, dest: Path) -> list[UnpackedSession]:
    """Unpack every recorded session of ``source`` into ``dest``: traces under
    ``dest/traces/<id>``, repositories under ``dest/repos/<id>``. Idempotent: a session already
    unpacked there is left as it is."""
    traces = dest / "traces"
    repos = dest / "repos"
    unpacked = []
    for session_id in recorded_sessions(source):
        session_dir = traces / session_id
        repo = repos / session_id
        if not SessionPaths(session_dir).meta.is_file() or not (repo / ".git").exists():
            shutil.rmtree(session_dir, ignore_errors=True)
            shutil.rmtree(repo, ignore_errors=True)
            _copy_trace(source / session_id, session_dir)
            clone_bundle(source / f"{session_id}.bundle", repo)
            _repoint_meta(session_dir, repo)
        unpacked.append(UnpackedSession(session_id, session_dir, repo))
    return unpacked


def unpack_demo(dest: Path) -> Path:
    """Unpack the shipped demo sessions into ``dest``; returns the traces root."""
    unpack_recorded(DEMO_DIR, dest)
    return dest / "traces"


def pack_session(session_dir: Path, dest: Path) -> Path:
    """Record a finished session into ``dest`` (the inverse of ``unpack_recorded``): its trace
    directory and a bundle of its branch and notes. Returns the bundle's path."""
    meta = json.loads(SessionPaths(session_dir).meta.read_text())
    session_id, repo, branch = meta["session_id"], Path(meta["repo"]), meta["branch"]
    target = dest / session_id
    shutil.rmtree(target, ignore_errors=True)
    _copy_trace(session_dir, target)
    return write_bundle(repo, branch, dest / f"{session_id}.bundle")


def _copy_trace(source: Path, target: Path) -> None:
    # Files of a live session that mean nothing in a copy (a lock of a writer long gone).
    live = SessionPaths(source)
    skipped = {path.name for path in (live.writer_lock, live.attached, live.launch)}
    shutil.copytree(source, target, ignore=lambda _dir, names: [n for n in names if n in skipped])


def _repoint_meta(session_dir: Path, repo: Path) -> None:
    """session.json names the repository and worktree of the machine it was recorded on."""
    path = SessionPaths(session_dir).meta
    meta = json.loads(path.read_text())
    old_task = Path(meta.get("task_dir") or ".")
    old_repo = Path(meta.get("repo") or ".")
    try:
        task_subdir = old_task.relative_to(old_repo)
    except ValueError:
        task_subdir = Path(".")
    meta["repo"] = str(repo)
    meta["worktree"] = str(repo / ".kernelseek" / "worktrees" / meta["session_id"])
    meta["task_dir"] = str(repo / task_subdir)
    meta.setdefault("recorded_host", meta.get("host"))
    config = meta.get("config") or {}
    config["task_dir"] = meta["task_dir"]
    config["traces_root"] = str(session_dir.parent)
    meta["config"] = config
    path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
