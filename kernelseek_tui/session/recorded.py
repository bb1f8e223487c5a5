"""A session's history and original task, wherever its trace has been copied to.

``session.json`` names the repository and task directory of the machine that ran the session.
A recorded session (its trace beside ``<id>.bundle``, as ``traces/demo`` ships them) or an
unpacked copy of one (``kernelseek demo``: a fresh repository with the branch but no checkout
of the task) must still be judged again, for a bisect on a GPU box, so both are found here:
the repository named when it is there, else the bundle beside the trace; the task directory
named when it holds a task, else the task as the session's start commit holds it, which is
what the session was judged by.
"""

from __future__ import annotations

from pathlib import Path

from kernelseek_tui.browse.unpack import clone_bundle
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history import SessionHistory
from kernelseek_tui.session.meta import SessionMeta
from kernelseek_tui.task import Task, load_task


def open_history(session_dir: Path, meta: SessionMeta, scratch: Path) -> SessionHistory:
    """The session's git history: its recorded repository, or its bundle fetched under
    ``scratch`` (a directory that must outlive the history's use)."""
    if meta.repo and Path(meta.repo).is_dir():
        return SessionHistory.open(Path(meta.repo), meta.session_id)
    bundle = Path(session_dir).parent / f"{meta.session_id}.bundle"
    if not bundle.is_file():
        raise KernelseekError(
            f"the repository of session {meta.session_id} ({meta.repo}) is not on this machine "
            f"and there is no {bundle.name} beside its trace: copy the repository or the bundle"
        )
    repo = scratch / "repo"
    clone_bundle(bundle, repo)
    return SessionHistory.open(repo, meta.session_id)


def original_task(meta: SessionMeta, history: SessionHistory, scratch: Path) -> Task:
    """The task the session was judged by: its recorded directory when that holds a task,
    else the task directory of the session's start commit, written under ``scratch``."""
    recorded = Path(meta.task_dir) if meta.task_dir else None
    if recorded is not None and (recorded / "task.toml").is_file():
        return load_task(recorded)
    return load_task(history.export_task(history.base_sha, scratch / "start"))
