"""The files the judge reads, fingerprinted when a session's engine starts or resumes (the
task's own against the session's start commit) and checked around every evaluation.

Why: the agent's file tools stay inside its workspace, but its shell runs as the user, and an
agent outside the harness (Claude Code, Codex) has a shell of its own. One line appended to
the task's starting kernel (a spin before it returns) would make every candidate read faster
than it is; a wider tolerance in ``task.toml``, a reference that returns the candidate's own
output, or an edit to the judge's own code would pass kernels that are wrong. None of these
files is in the workspace, and none changes during an honest session, so any change is named
and the evaluation refused (before it starts) or voided (found after it ended).

What is fingerprinted: the task's ``task.toml``, its starting kernel, its reference and
comparator modules, its scenario files and every ``.py`` beside them (modules they may import);
and the judge itself, every source file of this package. What is not: the libraries the judge
and the peers run on (CuPy, torch, FlashAttention-3, the CUDA toolkit), the Python
environment's start-up files, the build cache, the cache of the starting kernel's times and
git's object store. For the harness's own agent its shell is confined instead
(session/shell_confinement.py); an outside agent's shell is not the harness's to confine
(docs/RELIABILITY.md, "The agent's shell and the judge's files").
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import kernelseek_tui
from kernelseek_tui.history.git import SAFE_CONFIG, git_env
from kernelseek_tui.history.session import SessionHistory, git_blob_sha
from kernelseek_tui.task import Task

# The judge's own files: what a worker imports, compiles or reads.
PACKAGE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".h", ".toml")
_GONE = "gone"


def judge_paths(task: Task, package: Path | None = None) -> list[Path]:
    """The files whose content decides how ``task`` is judged (``package``: the judge's source
    tree, this package by default)."""
    found = {task.dir / "task.toml", task.source, task.reference_module}
    if task.comparator_module is not None:
        found.add(task.comparator_module)
    found.update(spec.file for spec in task.sets.values())
    found.update(task.dir.glob("*.py"))
    root = package or Path(kernelseek_tui.__file__).parent
    found.update(
        path
        for path in root.rglob("*")
        if path.suffix in PACKAGE_SUFFIXES and "__pycache__" not in path.parts and path.is_file()
    )
    return sorted(path.resolve() for path in found)


def _digest(path: Path) -> str:
    """``path``'s content as "sha256:<hex>"; "gone" where there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _GONE
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _as_git_would_store(paths: list[Path]) -> dict[Path, str]:
    """Each file's blob sha as git would store it from where it lies ("git:<hex>"): through
    the repository's filters (a ``.gitattributes`` that converts line endings, say), so that a
    file unchanged since the start commit reads the same; "gone" where there is no such file."""
    found = {p: _GONE for p in paths if not p.is_file()}
    present = [p for p in paths if p not in found]
    if not present:
        return found
    try:
        done = subprocess.run(
            ["git", *SAFE_CONFIG, "hash-object", "--stdin-paths"],
            cwd=present[0].parent,
            env=git_env(),
            input="".join(f"{p}\n" for p in present),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        shas = done.stdout.split() if done.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        shas = []
    if len(shas) != len(present):  # no git: the bytes as they are
        shas = [git_blob_sha(p.read_bytes()) for p in present]
    found.update({p: f"git:{sha}" for p, sha in zip(present, shas, strict=True)})
    return found


@dataclass(frozen=True, slots=True)
class JudgeFiles:
    """The judge's files as they were when taken: ``changed`` names those that differ now."""

    digests: dict[Path, str]

    @classmethod
    def take(cls, paths: list[Path], start: dict[Path, str] | None = None) -> JudgeFiles:
        """The files at ``paths`` as they are now, or where ``start`` names a file, as the
        session's start commit holds it (its git blob sha): a change made before the
        fingerprint was taken, or before a resume, still shows."""
        start = start or {}
        return cls({p: f"git:{start[p]}" if p in start else _digest(p) for p in paths})

    def changed(self) -> list[Path]:
        """The files whose content is not what it was (removed ones included), in order."""
        in_git = [p for p, digest in self.digests.items() if digest.startswith("git:")]
        now = _as_git_would_store(in_git)
        now.update({p: _digest(p) for p, d in self.digests.items() if not d.startswith("git:")})
        return [path for path, digest in self.digests.items() if now[path] != digest]

    def check(self, when: str) -> None:
        """Raise ``JudgeFilesChanged`` naming what changed, if anything did; ``when`` says
        which check it is ("before this evaluation")."""
        changed = self.changed()
        if changed:
            raise JudgeFilesChanged(changed, when)


class JudgeFilesChanged(Exception):
    """The judge's files differ from the ones the session started with."""

    def __init__(self, paths: list[Path], when: str) -> None:
        self.paths = paths
        shown = ", ".join(str(path) for path in paths[:5])
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        super().__init__(
            f"the judge's own files changed since this session started ({when}): {shown}{more}. "
            "They are outside the workspace and no evaluation is made while they differ; "
            "restore them (git checkout or git restore in their repository) to go on"
        )


def session_judge_files(task: Task, history: SessionHistory) -> JudgeFiles:
    """The judge's files for a session of ``task``: the task's own as the session's start
    commit holds them (where it holds them: the task directory's copy at the start), the
    judge's package as it is on disk now. Taken when the engine starts or resumes, before the
    agent's first turn."""
    blobs = history.task_blobs(history.base_sha)
    paths = judge_paths(task)
    task_dir = task.dir.resolve()
    start = {}
    for path in paths:
        if not path.is_relative_to(task_dir):
            continue  # the package's
        relative = path.relative_to(task_dir).as_posix()
        if relative in blobs:
            start[path] = blobs[relative]
    return JudgeFiles.take(paths, start)
