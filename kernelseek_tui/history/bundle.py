"""A session's git history as one file: a bundle of its branch and its notes.

A recorded session travels as its trace directory plus ``<id>.bundle`` (``traces/demo`` ships
them so); ``write_bundle`` makes the file and ``clone_bundle`` turns it back into a repository.
"""

from __future__ import annotations

from pathlib import Path

from kernelseek_tui.history.git import git, ref_exists
from kernelseek_tui.history.notes import ATTACHED_REF, NOTES_REF


def write_bundle(repo: Path, branch: str, bundle: Path) -> Path:
    """A bundle of ``branch`` and the evaluation notes (those that exist) of ``repo``."""
    refs = [branch, *(notes for notes in (NOTES_REF, ATTACHED_REF) if ref_exists(notes, repo))]
    git(["bundle", "create", "--quiet", str(bundle), *refs], repo)
    return bundle


def clone_bundle(bundle: Path, repo: Path) -> None:
    """A fresh repository at ``repo`` holding the bundle's branches and notes."""
    repo.mkdir(parents=True, exist_ok=True)
    git(["init", "--quiet"], repo)
    git(
        ["fetch", "--quiet", str(bundle), "refs/heads/*:refs/heads/*", "refs/notes/*:refs/notes/*"],
        repo,
    )
