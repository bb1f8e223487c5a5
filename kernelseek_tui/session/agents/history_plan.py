"""A replay plan from a kernel's git history: each committed version written and evaluated,
and each question its NOTES record as drawn at a plateau, asked where it was drawn.

The demo replays this project's own climb: ``kernels/flash_fwd/sm90.cu`` as each ``sm90 vN:``
commit left it, judged again today. It is a replay of recorded work, not a model at work.

Which commits are versions: the commits of ``rev`` (oldest first) that touch the kernel and
whose subject starts with ``<stem> vN`` or ``<stem> vN-vM`` followed by ``:`` or a word then
``:`` (``sm90 v5: ...``, ``sm90 v2-v4 measured: ...``), where ``<stem>`` is the kernel file's
name without its suffix. Other commits touching the file (``sm90: ...`` fixes, knobs, notes)
are not versions. A version's number is its highest: ``v2-v4`` is 4.

Where a question goes: NOTES lines starting ``Question: `<id>``` name a question drawn from
the repertoire; its trigger is the ``--trigger X`` of that line or the lines of its paragraph
(``plateau`` when none is written). The rule: take the highest ``vN`` mentioned in any ``## ``
heading above the ``Question:`` line (``## sm90 v12-v17 ...`` mentions 17); the question is
asked right after the evaluation of the last committed version whose number is at most that.
A question with no version mentioned above it comes after the first version; one whose headings
name a version past the history's last (a version prepared but never committed, or a NOTES file
newer than ``rev``) comes after the last. NOTES are read as they are now, not as of ``rev``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history.git import git, resolve_commit, toplevel
from kernelseek_tui.repertoire.model import Repertoire
from kernelseek_tui.session.agents.replay_step import ReplayStep

DEFAULT_KERNEL_IN_REPO: Final = "kernels/flash_fwd/sm90.cu"
DEFAULT_TRIGGER: Final = "plateau"

_VERSION_MENTION: Final = re.compile(r"\bv(\d+)\b")
_QUESTION_LINE: Final = re.compile(r"^Question:\s*`([^`]+)`")
_TRIGGER: Final = re.compile(r"--trigger\s+`?([a-z_]+)")


@dataclass(frozen=True, slots=True)
class KernelVersion:
    """One committed version of the kernel: its label (``v2-v4``), number (4), commit and text."""

    label: str
    number: int
    commit: str
    subject: str
    content: str


@dataclass(frozen=True, slots=True)
class NotedQuestion:
    """A question the NOTES record as drawn, and the version it follows (see the module doc)."""

    question_id: str
    trigger: str
    after_version: int  # the highest version mentioned in the headings above it (0: none)
    line: int  # 1-based, for messages


def version_subject_pattern(kernel_stem: str) -> re.Pattern[str]:
    """The subject of a version commit: ``<stem> vN[-vM][ words]:``."""
    return re.compile(rf"^{re.escape(kernel_stem)} (v(\d+)(?:-v(\d+))?)\b[^:\n]*:")


def kernel_versions(repo: Path, kernel_in_repo: str, *, rev: str = "HEAD") -> list[KernelVersion]:
    """The versions of ``kernel_in_repo`` in ``rev``'s history, oldest first."""
    root = _repo_root(repo)
    commit = resolve_commit(rev, root)
    if commit is None:
        raise KernelseekError(f"{rev!r} names no commit in {root}")
    log = git(["log", "--reverse", "--format=%H%x09%s", commit, "--", kernel_in_repo], root).stdout
    pattern = version_subject_pattern(PurePosixPath(kernel_in_repo).stem)
    versions: list[KernelVersion] = []
    for line in log.splitlines():
        sha, _, subject = line.partition("\t")
        match = pattern.match(subject)
        if match is None:
            continue
        first, last = int(match.group(2)), match.group(3)
        content = git(["show", f"{sha}:{kernel_in_repo}"], root).stdout
        versions.append(
            KernelVersion(match.group(1), int(last) if last else first, sha, subject, content)
        )
    return versions


def noted_questions(notes_text: str) -> list[NotedQuestion]:
    """The questions a NOTES file records as drawn, in file order (see the module doc)."""
    lines = notes_text.splitlines()
    found: list[NotedQuestion] = []
    highest_heading_version = 0
    for index, line in enumerate(lines):
        if line.startswith("## "):
            mentioned = [int(n) for n in _VERSION_MENTION.findall(line)]
            highest_heading_version = max([highest_heading_version, *mentioned])
            continue
        match = _QUESTION_LINE.match(line)
        if match is None:
            continue
        # The trigger may be written on the line or wrapped onto the next lines of the paragraph.
        paragraph = [line]
        for following in lines[index + 1 :]:
            if not following.strip() or following.startswith(("## ", "Question:")):
                break
            paragraph.append(following)
        trigger = _TRIGGER.search(" ".join(paragraph))
        found.append(
            NotedQuestion(
                question_id=match.group(1),
                trigger=trigger.group(1) if trigger else DEFAULT_TRIGGER,
                after_version=highest_heading_version,
                line=index + 1,
            )
        )
    return found


def plan_history_replay(
    repo: Path,
    *,
    repertoire: Repertoire,
    kernel_in_repo: str = DEFAULT_KERNEL_IN_REPO,
    notes: Path | None = None,
    session_kernel: str | None = None,
    rev: str = "HEAD",
) -> list[ReplayStep]:
    """The replay steps of a kernel's history: per version a ``write_file`` of its content to
    ``session_kernel`` (the path the session edits, relative to its workspace; default the
    kernel's file name) and an ``evaluate`` of the whole objective, with the noted questions
    after the versions they follow. ``notes`` defaults to NOTES.md beside the kernel."""
    root = _repo_root(repo)
    versions = kernel_versions(root, kernel_in_repo, rev=rev)
    if not versions:
        raise KernelseekError(
            f"no versions of {kernel_in_repo} in the history of {rev} in {root}: no commit "
            f"subject starts with '{PurePosixPath(kernel_in_repo).stem} vN:'"
        )
    notes_path = (
        notes if notes is not None else root / PurePosixPath(kernel_in_repo).parent / "NOTES.md"
    )
    questions = noted_questions(notes_path.read_text()) if notes_path.is_file() else []
    target = session_kernel or PurePosixPath(kernel_in_repo).name

    questions_after: dict[int, list[NotedQuestion]] = {}
    for question in questions:
        if repertoire.get(question.question_id) is None:
            raise KernelseekError(
                f"{notes_path}:{question.line}: question {question.question_id!r} is not in the "
                f"repertoire {repertoire.path}"
            )
        committed = [i for i, v in enumerate(versions) if v.number <= question.after_version]
        questions_after.setdefault(committed[-1] if committed else 0, []).append(question)

    steps: list[ReplayStep] = []

    def add(**fields: Any) -> None:
        steps.append(ReplayStep(len(steps), **fields))

    for position, version in enumerate(versions):
        origin = {"commit": version.commit, "version": version.label}
        add(tool="write_file", tool_input={"path": target, "content": version.content}, **origin)
        add(tool="evaluate", tool_input={}, **origin)
        for question in questions_after.get(position, []):
            drawn = repertoire.get(question.question_id)
            assert drawn is not None  # checked above
            add(
                text=drawn.text,
                question_id=drawn.id,
                source="repertoire",
                trigger=question.trigger,
                **origin,
            )
    return steps


def _repo_root(path: Path) -> Path:
    root = toplevel(Path(path))
    if root is None:
        raise KernelseekError(f"{path} is not in a git repository: no history to replay")
    return root
