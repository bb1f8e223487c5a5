"""A session's git history: its branch, its worktree, one commit per verified candidate.

Where things go:
- The repository is the one that holds the task directory. A task directory outside any
  repository gets one initialised in the task directory itself (``git init`` plus one commit of
  its files), so the session has something to branch from; the user's files are not changed.
- The session works on branch ``kernelseek/<session_id>`` in a worktree at
  ``<repo>/.kernelseek/worktrees/<session_id>``. ``/.kernelseek/`` is added to
  ``.git/info/exclude`` (never to the user's ``.gitignore``) so the user's ``git status`` stays
  clean.
- The branch starts with one *start* commit on top of the user's HEAD. Its tree is the user's
  HEAD with the task directory as it is on disk (a user's uncommitted edits to the kernel are
  what the session should improve), built in a temporary index so the user's own index is
  never written. ``base_sha`` is this commit; its trailers record the task directory and the
  user's commit, which is how :meth:`SessionHistory.open` finds both again after a crash.

The user's checkout, index and current branch are never touched: every write happens in the
session worktree, in a temporary index, or in refs that only kernelseek uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import message
from kernelseek_tui.history.git import (
    git,
    git_bytes,
    git_out,
    ref_exists,
    resolve_commit,
    toplevel,
)
from kernelseek_tui.history.message import Candidate
from kernelseek_tui.history.notes import (
    NOTES_REF,
    add_note,
    attach_evaluation,
    attached_on_branch,
    attached_to,
)

BRANCH_PREFIX = "kernelseek/"
WORKTREES_DIR = Path(".kernelseek") / "worktrees"
EXCLUDE_LINE = "/.kernelseek/"

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class UnverifiedCandidateError(KernelseekError):
    """A candidate that did not pass every scenario was offered for a commit."""


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` if it can name a branch and a directory, else raise."""
    if (
        not _SESSION_ID.match(session_id)
        or ".." in session_id
        or session_id.endswith((".", ".lock"))
    ):
        raise KernelseekError(
            f"session id {session_id!r} is not usable as a branch name: use letters, digits, "
            "'.', '_' and '-', starting with a letter or digit"
        )
    return session_id


class SessionHistory:
    """The git side of one session (see the module docstring for the layout)."""

    def __init__(
        self, *, repo: Path, session_id: str, worktree: Path, base_sha: str, task_subdir: str
    ) -> None:
        self._repo = repo
        self._session_id = session_id
        self._worktree = worktree
        self._worktree_git_dir: Path | None = None  # found when first needed (_in_worktree)
        self._base_sha = base_sha
        self._task_subdir = task_subdir

    # -- creating and opening -------------------------------------------------------------

    @classmethod
    def create(cls, task_dir: Path, session_id: str) -> SessionHistory:
        """Start a session's history for the task in ``task_dir``.

        Finds the task's repository (initialising one in ``task_dir`` when it is in none),
        makes the start commit, branch ``kernelseek/<session_id>`` and its worktree. Raises
        :class:`KernelseekError` when the branch or the worktree directory already exists.
        """
        check_session_id(session_id)
        task_dir = Path(task_dir).expanduser().resolve()
        if not task_dir.is_dir():
            raise KernelseekError(f"task directory {str(task_dir)!r} does not exist")
        repo = toplevel(task_dir) or _init_repo(task_dir)
        branch = BRANCH_PREFIX + session_id
        if ref_exists(f"refs/heads/{branch}", repo):
            raise KernelseekError(
                f"branch {branch} already exists in {repo}: open it to resume, or pick another "
                "session id"
            )
        worktree = repo / WORKTREES_DIR / session_id
        if worktree.exists():
            raise KernelseekError(f"worktree directory {str(worktree)!r} already exists")
        task_subdir = task_dir.relative_to(repo).as_posix()
        if "\n" in task_subdir:
            raise KernelseekError(f"task directory {str(task_dir)!r} has a newline in its path")
        _ensure_excluded(repo)
        ignored = git(["check-ignore", "--quiet", "--", f"{task_subdir}/"], repo, check=False)
        if ignored.returncode == 0:
            raise _ignored_task(task_subdir, repo)

        fork_sha = resolve_commit("HEAD", repo)
        tree, snapshot = _snapshot_tree(repo, fork_sha, task_subdir)
        text = message.start_message(
            session_id=session_id, fork_sha=fork_sha, task_subdir=task_subdir, snapshot=snapshot
        )
        parents = ["-p", fork_sha] if fork_sha else []
        start_sha = git_out(["commit-tree", tree, *parents, "-F", "-"], repo, input=text)
        git(["worktree", "add", "--quiet", "-b", branch, str(worktree), start_sha], repo)
        history = cls(
            repo=repo,
            session_id=session_id,
            worktree=worktree,
            base_sha=start_sha,
            task_subdir=task_subdir,
        )
        if not history.task_dir.is_dir():
            # The task directory is ignored (or empty) in the user's repository, so the branch
            # would not contain it; a session there could never be committed or bisected.
            history.remove_worktree()
            git(["branch", "-q", "-D", branch], repo)
            raise _ignored_task(task_subdir, repo)
        return history

    @classmethod
    def open(cls, repo: Path, session_id: str) -> SessionHistory:
        """Reopen an existing session (for resume, the TUI, bisect).

        ``repo`` is any directory of the repository (the session worktree works too). A
        worktree that was removed, or deleted by hand, is added back from the branch.
        """
        check_session_id(session_id)
        top = toplevel(Path(repo).expanduser().resolve())
        if top is None:
            raise KernelseekError(f"{str(repo)!r} is not inside a git repository")
        if (
            top.parent.name == WORKTREES_DIR.name
            and top.parent.parent.name == WORKTREES_DIR.parent.name
        ):
            top = top.parents[2]  # given a session worktree: the repository is the one holding it
        branch = BRANCH_PREFIX + session_id
        if not ref_exists(f"refs/heads/{branch}", top):
            raise KernelseekError(f"no session branch {branch} in {top}")
        base_sha, task_subdir = _find_start(top, session_id)
        worktree = _attach_worktree(top, branch, top / WORKTREES_DIR / session_id)
        return cls(
            repo=top,
            session_id=session_id,
            worktree=worktree,
            base_sha=base_sha,
            task_subdir=task_subdir,
        )

    # -- what it is -----------------------------------------------------------------------

    @property
    def repo(self) -> Path:
        """The root of the user's working tree that holds the task."""
        return self._repo

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def branch(self) -> str:
        """``kernelseek/<session_id>`` (a short branch name, not the full ref)."""
        return BRANCH_PREFIX + self._session_id

    @property
    def worktree(self) -> Path:
        """The session's own checkout of the branch, where the agent works."""
        return self._worktree

    @property
    def base_sha(self) -> str:
        """The session's start commit: every candidate descends from it on the first parent."""
        return self._base_sha

    @property
    def task_subdir(self) -> str:
        """The task directory relative to the repository root (POSIX, ``.`` for the root)."""
        return self._task_subdir

    @property
    def task_dir(self) -> Path:
        """The task directory inside the worktree: what the agent edits."""
        return self._worktree / self._task_subdir

    def head_sha(self) -> str:
        """The tip of the session branch."""
        return git_out(["rev-parse", "--verify", f"refs/heads/{self.branch}"], self._repo)

    def __repr__(self) -> str:
        return f"SessionHistory(repo={str(self._repo)!r}, session_id={self._session_id!r})"

    # -- committing -----------------------------------------------------------------------

    def commit_candidate(
        self,
        paths: list[Path],
        result: EvalResult,
        *,
        seq: int,
        question: str | None,
        new_best: bool = False,
        check_staged: Callable[[dict[Path, bytes | None]], str | None] | None = None,
    ) -> str:
        """Commit a verified candidate's files and attach its evaluation as a note.

        ``paths`` are files or directories in the worktree (absolute, or relative to the
        worktree root); only they are committed, new and deleted files included. When none of
        them changed since the branch tip (the same code evaluated again), no empty commit is
        made: the evaluation is attached to the tip (``attached``) and the tip is returned.
        ``new_best`` marks a candidate faster than every one before it (trailer ``New-Best``).
        Raises :class:`UnverifiedCandidateError` unless ``result`` passed every scenario.
        ``check_staged``: given each path's bytes as git staged them (None where absent), why
        they are not what was judged, or None; a reason unstages them and raises
        :class:`KernelseekError` (git's clean filters, or a file changed after the judge read
        it, would otherwise commit code that was never judged).

        Safe to call again for the same ``seq`` after a crash: the existing commit is returned,
        and its note is added if the crash came before it.
        """
        _require_verified(result, seq)
        existing = self.find_commit_for_seq(seq)
        if existing is not None:
            made = self.candidate_at(existing)
            if made is not None and made.seq == seq and not self.has_note(existing):
                self._add_note(existing, result)
            return existing
        self._require_on_branch()
        specs = [self._pathspec(path) for path in paths]
        if specs:
            git(["add", "--all", "--", *specs], self._worktree, env=self._in_worktree())
        if check_staged is not None:
            why = check_staged(
                {path: self._staged(spec) for path, spec in zip(paths, specs, strict=True)}
            )
            if why is not None:
                git(
                    ["reset", "--quiet", "--", *specs],
                    self._worktree,
                    check=False,
                    env=self._in_worktree(),
                )
                raise KernelseekError(why)
        if not self._changed(specs):
            tip = self.head_sha()
            attach_evaluation(self._repo, tip, result, seq)
            return tip
        text = message.candidate_message(
            result,
            n=self._next_n(),
            session_id=self._session_id,
            seq=seq,
            question=question,
            new_best=new_best,
        )
        commit = ["commit", "--quiet", "--no-verify", "--cleanup=verbatim"]
        where = self._in_worktree()
        git([*commit, "-F", "-", "--only", "--", *specs], self._worktree, input=text, env=where)
        sha = git_out(["rev-parse", "HEAD"], self._worktree, env=where)
        self._add_note(sha, result)
        return sha

    def _staged(self, spec: str) -> bytes | None:
        """The bytes git has staged at ``spec`` (a worktree pathspec), None where none."""
        listed = git_bytes(
            ["ls-files", "--stage", "-z", "--", spec], self._worktree, env=self._in_worktree()
        )
        entry = listed.split(b"\0")[0]
        if not entry:
            return None
        blob = entry.split()[1].decode()
        return _read_blobs([blob], self._repo)[blob]

    def find_commit_for_seq(self, seq: int) -> str | None:
        """The sha of the commit that holds trace ``seq``'s evaluation: the candidate made from
        it, or the commit it was attached to (see :meth:`commit_candidate`); None if neither."""
        out = git_out(
            [
                "log",
                "-1",
                "--first-parent",
                "--format=%H",
                "--all-match",
                f"--grep=^{message.SESSION_KEY}: {_bre(self._session_id)}$",
                f"--grep=^{message.SEQ_KEY}: {int(seq)}$",
                f"{self._base_sha}..refs/heads/{self.branch}",
            ],
            self._repo,
        )
        if out:
            return out
        attached = attached_on_branch(self._repo, f"refs/heads/{self.branch}", self._base_sha)
        return next((sha for sha, seqs in attached.items() if int(seq) in seqs), None)

    def attached(self, sha: str) -> list[dict[str, Any]]:
        """The evaluations of unchanged code attached to commit ``sha`` (oldest first), each
        ``{seq, eval_id, speedup, vs_fa3, passed, total}``."""
        return attached_to(self._repo, self.resolve(sha))

    # -- reading --------------------------------------------------------------------------

    def candidates(self) -> list[Candidate]:
        """Every candidate on the branch, newest first, read with one ``git log``."""
        out = git_out(
            [
                "log",
                "--first-parent",
                "-z",
                f"--format={message.LOG_FORMAT}",
                f"{self._base_sha}..refs/heads/{self.branch}",
            ],
            self._repo,
        )
        found = message.parse_log(out, self._session_id)
        # A subject someone reworded loses its number; its place on the branch still gives one.
        return [c if c.n else replace(c, n=len(found) - i) for i, c in enumerate(found)]

    def candidate_at(self, rev: str) -> Candidate | None:
        """The candidate that ``rev`` names, or None when it is a commit but no candidate.

        Revisions resolve in the session worktree, so ``HEAD`` is the session's tip. Raises
        :class:`KernelseekError` when ``rev`` names no commit.
        """
        sha = self.resolve(rev)
        out = git_out(["log", "-1", "-z", f"--format={message.LOG_FORMAT}", sha], self._repo)
        found = message.parse_log(out, self._session_id)
        return found[0] if found else None

    def resolve(self, rev: str) -> str:
        """The full sha of the commit ``rev`` names (``HEAD`` is the session's tip)."""
        if self._worktree.is_dir():
            sha = resolve_commit(rev, self._worktree, env=self._in_worktree())
        else:
            sha = resolve_commit(rev, self._repo)
        if sha is None:
            raise KernelseekError(f"{rev!r} names no commit in {self._repo}")
        return sha

    def diff(self, a: str, b: str, *, paths: list[str] | None = None) -> str:
        """The unified diff from commit ``a`` to commit ``b`` (any revisions), as text.

        Immune to the user's diff settings: no colour, no external diff, no textconv, the
        usual ``a/`` and ``b/`` prefixes. ``paths`` limits it to paths relative to the repo.
        """
        old, new = self.resolve(a), self.resolve(b)
        limit = [f":(literal){p}" for p in paths] if paths else []
        return git(
            [
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                old,
                new,
                "--",
                *limit,
            ],
            self._repo,
        ).stdout

    def note(self, sha: str) -> dict[str, Any]:
        """The evaluation JSON stored with a candidate (``EvalResult.from_dict`` reads it)."""
        commit = self.resolve(sha)
        proc = git(["notes", f"--ref={NOTES_REF}", "show", commit], self._repo, check=False)
        if proc.returncode != 0:
            raise KernelseekError(f"commit {commit[:10]} has no kernelseek evaluation note")
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise KernelseekError(f"the note on {commit[:10]} is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise KernelseekError(f"the note on {commit[:10]} is not a JSON object")
        return data

    def has_note(self, sha: str) -> bool:
        """Whether ``sha`` carries a kernelseek evaluation note."""
        proc = git(["notes", f"--ref={NOTES_REF}", "list", sha], self._repo, check=False)
        return proc.returncode == 0 and bool(proc.stdout.strip())

    def export_task(self, rev: str, dest: Path) -> Path:
        """Write the task directory as commit ``rev`` has it under ``dest``; return its path.

        Reads blobs straight from the object store (two git calls), so nothing is checked out
        and no worktree is registered. Files keep their executable bit; symlinks stay links.
        """
        entries = self._task_blobs(rev)
        contents = _read_blobs([blob for _, blob, _ in entries], self._repo)
        for mode, blob, path in entries:
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                target.symlink_to(os.fsdecode(contents[blob]))
                continue
            target.write_bytes(contents[blob])
            if mode == "100755":
                target.chmod(0o755)
        task = dest / self._task_subdir
        task.mkdir(parents=True, exist_ok=True)
        return task

    def export_changed(self, rev: str, dest: Path) -> list[str]:
        """The files of an ``export_task(rev, dest)`` whose content on disk is no longer the
        commit's (removed ones included), and files there the commit does not hold (a
        ``knobs.json`` added, say), as paths under ``dest``; links are not compared."""
        entries = self._task_blobs(rev)
        held = {path for _, _, path in entries} | _EXPORT_MARKERS
        task = dest / self._task_subdir
        on_disk = (
            found.relative_to(dest).as_posix()
            for found in (task.rglob("*") if task.is_dir() else [])
            if not found.is_dir()
        )
        changed = sorted(path for path in on_disk if path not in held)
        for mode, blob, path in entries:
            if mode == "120000":
                continue
            try:
                data = (dest / path).read_bytes()
            except OSError:
                changed.append(path)
                continue
            if git_blob_sha(data) != blob:
                changed.append(path)
        return changed

    def task_blobs(self, rev: str) -> dict[str, str]:
        """The task directory's regular files in commit ``rev``: their paths relative to the
        task directory, each with its blob sha."""
        prefix = "" if self._task_subdir in ("", ".") else self._task_subdir.rstrip("/") + "/"
        return {
            path[len(prefix) :]: blob
            for mode, blob, path in self._task_blobs(rev)
            if mode != "120000" and path.startswith(prefix)
        }

    def _task_blobs(self, rev: str) -> list[tuple[str, str, str]]:
        """(mode, blob sha, path) of every file of the task directory in commit ``rev``."""
        sha = self.resolve(rev)
        listing = git_bytes(
            ["ls-tree", "-r", "-z", "--full-tree", sha, "--", self._task_subdir], self._repo
        )
        entries = []
        for raw in listing.split(b"\0"):
            if not raw:
                continue
            meta, _, name = raw.partition(b"\t")
            mode, kind, blob = meta.decode().split()
            if kind == "blob":  # submodules ("commit") have no content here
                entries.append((mode, blob, os.fsdecode(name)))
        return entries

    # -- cleaning up ----------------------------------------------------------------------

    def remove_worktree(self) -> None:
        """Remove the session worktree (uncommitted files in it go too); the branch stays."""
        if self._worktree.exists():
            git(["worktree", "remove", "--force", str(self._worktree)], self._repo)
        git(["worktree", "prune"], self._repo)
        # Leave no empty .kernelseek/worktrees behind in the user's tree.
        for empty in (self._worktree.parent, self._worktree.parent.parent):
            try:
                empty.rmdir()
            except OSError:
                break

    # -- helpers --------------------------------------------------------------------------

    def _pathspec(self, path: Path) -> str:
        path = Path(path)
        full = path if path.is_absolute() else self._worktree / path
        try:
            rel = Path(os.path.normpath(full)).relative_to(self._worktree)
        except ValueError:
            raise KernelseekError(f"{str(path)!r} is not inside the session worktree") from None
        return f":(literal){rel.as_posix()}"

    def _require_on_branch(self) -> None:
        proc = git(
            ["symbolic-ref", "--quiet", "HEAD"],
            self._worktree,
            check=False,
            env=self._in_worktree(),
        )
        if proc.stdout.strip() != f"refs/heads/{self.branch}":
            raise KernelseekError(
                f"the session worktree {self._worktree} is not on branch {self.branch}"
            )

    def _next_n(self) -> int:
        tip = git_out(
            ["log", "-1", "-z", f"--format={message.LOG_FORMAT}", f"refs/heads/{self.branch}"],
            self._repo,
        )
        if tip.startswith(self._base_sha):
            return 1
        last = message.parse_log(tip, self._session_id)
        if last and last[0].n:
            return last[0].n + 1
        return len(self.candidates()) + 1  # someone committed on the branch by hand

    def _add_note(self, sha: str, result: EvalResult) -> None:
        add_note(self._repo, NOTES_REF, sha, result.to_json())

    def _changed(self, specs: list[str]) -> bool:
        """Whether the staged ``specs`` differ from the branch tip (no specs: nothing does)."""
        if not specs:
            return False
        diff = ["diff", "--cached", "--quiet", "HEAD", "--", *specs]
        proc = git(diff, self._worktree, check=False, env=self._in_worktree())
        return proc.returncode != 0

    def _in_worktree(self) -> dict[str, str]:
        """The environment of a git call in the session worktree, its git directory named
        rather than found through the worktree's ``.git`` file: where the task directory is
        its repository's root that file is in the agent's workspace, and a ``.git`` pointing
        at a git directory of the agent's making (its configuration naming a program for git
        to run, ``core.fsmonitor`` say) would run that program outside the agent's shell's
        confinement (a review, 2026-12-07 late). Found once, from the repository's own list of
        its worktrees."""
        if self._worktree_git_dir is None:
            self._worktree_git_dir = _worktree_git_dir(self._repo, self._worktree)
        return {"GIT_DIR": str(self._worktree_git_dir), "GIT_WORK_TREE": str(self._worktree)}


def _require_verified(result: EvalResult, seq: int) -> None:
    summary = result.summary
    if not result.verified:
        raise UnverifiedCandidateError(
            f"refusing to commit seq {seq}: verdict {result.verdict!r}, "
            f"{summary.passed}/{summary.total} scenarios passed; only verified candidates are "
            "committed"
        )


def _ignored_task(task_subdir: str, repo: Path) -> KernelseekError:
    return KernelseekError(
        f"task directory {task_subdir!r} has no files git tracks in {repo} (is it ignored?): "
        "commit its files or move it out of the ignored path"
    )


def _bre(text: str) -> str:
    """Escape ``text`` for a git --grep basic regular expression."""
    return re.sub(r"([.\[\]\\*^$])", r"\\\1", text)


def _init_repo(task_dir: Path) -> Path:
    """Make ``task_dir`` a repository with one commit of its files (it was in none)."""
    git(["init", "--quiet"], task_dir)
    _ensure_excluded(task_dir)
    git(["add", "--all"], task_dir)
    git(
        ["commit", "--quiet", "--allow-empty", "--no-verify", "-m", "kernelseek: task as found"],
        task_dir,
    )
    return task_dir


def _ensure_excluded(repo: Path) -> None:
    """Add ``/.kernelseek/`` to the repository's ``info/exclude`` unless it is there."""
    exclude = Path(git_out(["rev-parse", "--git-path", "info/exclude"], repo))
    if not exclude.is_absolute():
        exclude = repo / exclude
    text = exclude.read_text() if exclude.exists() else ""
    if any(
        line.strip() in (EXCLUDE_LINE, ".kernelseek/", ".kernelseek") for line in text.splitlines()
    ):
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not text or text.endswith("\n") else "\n"
    with exclude.open("a") as handle:
        handle.write(f"{prefix}# session worktrees of kernelseek\n{EXCLUDE_LINE}\n")


def _snapshot_tree(repo: Path, fork_sha: str | None, task_subdir: str) -> tuple[str, bool]:
    """The tree of the user's HEAD with the task directory as on disk; and whether they differ.

    Built in a temporary index file, so the user's index is read by nobody and written by nobody.
    """
    with tempfile.TemporaryDirectory(prefix="kernelseek-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(["read-tree", fork_sha] if fork_sha else ["read-tree", "--empty"], repo, env=env)
        git(["add", "--all", "--", f":(literal){task_subdir}"], repo, env=env)
        tree = git_out(["write-tree"], repo, env=env)
    head_tree = git_out(["rev-parse", f"{fork_sha}^{{tree}}"], repo) if fork_sha else None
    return tree, tree != head_tree


def _read_blobs(shas: list[str], repo: Path) -> dict[str, bytes]:
    """The contents of many blobs from one ``git cat-file --batch``."""
    unique = list(dict.fromkeys(shas))
    if not unique:
        return {}
    out = git_bytes(["cat-file", "--batch"], repo, input="".join(f"{s}\n" for s in unique).encode())
    contents: dict[str, bytes] = {}
    pos = 0
    for _ in unique:
        header_end = out.index(b"\n", pos)
        sha, _kind, size = out[pos:header_end].decode().split()
        start = header_end + 1
        contents[sha] = out[start : start + int(size)]
        pos = start + int(size) + 1  # each object's content is followed by a newline
    return contents


def _find_start(repo: Path, session_id: str) -> tuple[str, str]:
    """The start commit of a session branch and the task directory it records."""
    out = git_out(
        [
            "log",
            "-1",
            "--first-parent",
            "--format=%H%x1f%(trailers:only,unfold)",
            "--all-match",
            f"--grep=^{message.SESSION_KEY}: {_bre(session_id)}$",
            f"--grep=^{message.TASK_KEY}: ",
            f"refs/heads/{BRANCH_PREFIX}{session_id}",
        ],
        repo,
    )
    sha, _, block = out.partition(message.FIELD_SEP)
    task = message.parse_trailers(block).get(message.TASK_KEY.lower())
    if not sha or task is None:
        raise KernelseekError(
            f"branch {BRANCH_PREFIX}{session_id} has no kernelseek start commit: "
            "it was not made by kernelseek"
        )
    return sha, task


def _attach_worktree(repo: Path, branch: str, wanted: Path) -> Path:
    """The worktree that has ``branch`` checked out, adding it at ``wanted`` when there is none."""
    # Porcelain records are blank-line separated "key value" lines (no -z: that needs git 2.36).
    listing = git_out(["worktree", "list", "--porcelain"], repo)
    for record in listing.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in record.splitlines() if line)
        if fields.get("branch") == f"refs/heads/{branch}":
            path = Path(fields["worktree"])
            if path.is_dir():
                return path
            git(["worktree", "prune"], repo)  # deleted by hand: forget it, then add it back
            break
    if wanted.exists() and any(wanted.iterdir()):
        raise KernelseekError(
            f"{str(wanted)!r} exists but is not the worktree of {branch}: move it away to resume"
        )
    _ensure_excluded(repo)
    git(["worktree", "add", "--quiet", str(wanted), branch], repo)
    return wanted


def git_blob_sha(data: bytes) -> str:
    """The sha git gives a blob with these bytes (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# Files a caller of export_task keeps beside the export (the session's "written once the
# export is whole" marker): not the commit's, and not an added file.
_EXPORT_MARKERS = frozenset({".exported"})


def _worktree_git_dir(repo: Path, worktree: Path) -> Path:
    """The git directory git keeps for ``worktree`` (``<common>/worktrees/<name>``), found from
    the repository's side: the one whose ``gitdir`` file names ``worktree``'s ``.git``."""
    common = Path(git_out(["rev-parse", "--git-common-dir"], repo))
    common = common if common.is_absolute() else (repo / common)
    wanted = (worktree / ".git").resolve()
    for admin in sorted((common / "worktrees").glob("*")):
        try:
            named = Path((admin / "gitdir").read_text().strip())
        except OSError:
            continue
        if named.resolve() == wanted:
            return admin.resolve()
    raise KernelseekError(f"{repo} lists no worktree at {worktree}")
