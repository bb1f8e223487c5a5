"""A session's history and original task, wherever its trace has been copied to.

``session.json`` names the repository and task directory of the machine that ran the session.
A recorded session (its trace beside ``<id>.bundle``, as ``traces/demo`` ships them) or an
unpacked copy of one (``kernelseek demo``: a fresh repository with the branch but no checkout
of the task) must still be judged again, for a bisect on a GPU box, so both are found here:
the repository named when it is there, else the bundle beside the trace; the task directory
named when it holds a task, else the task as the session's start commit holds it, which is
what the session was judged by. ``candidate_judge`` judges a candidate exported from that
history, the same for ``kernelseek bisect`` and the app.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import SessionHistory
from kernelseek_tui.history.bundle import clone_bundle
from kernelseek_tui.session.evaluator import Evaluator
from kernelseek_tui.session.knobs import read_knobs
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


def candidate_judge(
    task: Task, evaluator: Evaluator, sets: list[str] | None
) -> Callable[[str, Path], EvalResult]:
    """``(sha, task_dir) -> EvalResult`` for a bisect: the candidate's kernel and its
    ``knobs.json``, as exported from git into ``task_dir``, judged on ``sets`` (None: the
    objective) by ``evaluator``; ``history.predicate_from_evaluator`` turns it into good or bad."""
    kernel = task.source.relative_to(task.dir)

    def judge(sha: str, task_dir: Path) -> EvalResult:
        return evaluator(task_dir / kernel, sets, knobs=read_knobs(task_dir, task))

    return judge
