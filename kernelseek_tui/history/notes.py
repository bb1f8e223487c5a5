"""The git notes of a session: each commit's evaluation, and the evaluations attached to it.

- ``refs/notes/kernelseek``: the full evaluation JSON of the evaluation a commit was made from.
- ``refs/notes/kernelseek-evals``: later evaluations of the very same code. A candidate whose
  files are unchanged since the branch tip is no new candidate: rather than an empty commit
  with a different speedup, the evaluation is attached to the tip, one JSON line each
  (``seq``, ``eval_id``, ``speedup``, ``vs_fa3``, ``passed``, ``total``). Its full result stays
  in the trace (``evals/``); the line is what lets a resumed session find where seq went.

Two sessions of one repository share both refs, so a write that loses a race is retried.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history.git import git, git_out

NOTES_REF: Final = "refs/notes/kernelseek"
ATTACHED_REF: Final = "refs/notes/kernelseek-evals"
_NOTE_ATTEMPTS: Final = 6
_FIELD_SEP: Final = "\x1f"


def add_note(repo: Path, ref: str, sha: str, text: str) -> None:
    """Set the note of ``sha`` under ``ref`` to ``text`` (retried: the ref is shared)."""
    args = ["notes", f"--ref={ref}", "add", "--force", "-F", "-", sha]
    for attempt in range(_NOTE_ATTEMPTS):
        proc = git(args, repo, input=text, check=False)
        if proc.returncode == 0:
            return
        time.sleep(0.02 * 2**attempt)
    raise KernelseekError(
        f"could not add a note under {ref} to {sha[:10]} ({proc.stderr.strip()}): "
        "committing the same seq again adds it"
    )


def attachment(result: EvalResult, seq: int) -> dict[str, Any]:
    """The line an evaluation of unchanged code leaves on the commit it re-evaluated."""
    summary = result.summary
    return {
        "seq": int(seq),
        "eval_id": result.eval_id,
        "speedup": summary.geomean_speedup,
        "vs_fa3": summary.vs_fa3,
        "passed": summary.passed,
        "total": summary.total,
    }


def attach_evaluation(repo: Path, sha: str, result: EvalResult, seq: int) -> None:
    """Add the evaluation at ``seq`` to the evaluations attached to commit ``sha``."""
    lines = [json.dumps(entry) for entry in attached_to(repo, sha)]
    lines.append(json.dumps(attachment(result, seq)))
    add_note(repo, ATTACHED_REF, sha, "\n".join(lines) + "\n")


def attached_to(repo: Path, sha: str) -> list[dict[str, Any]]:
    """The evaluations attached to commit ``sha``, oldest first."""
    proc = git(["notes", f"--ref={ATTACHED_REF}", "show", sha], repo, check=False)
    return _entries(proc.stdout) if proc.returncode == 0 else []


def attached_on_branch(repo: Path, branch_ref: str, base_sha: str) -> dict[str, list[int]]:
    """The seqs attached to each commit from ``base_sha`` (included) to the branch tip, with
    one ``git log``."""
    out = git_out(
        [
            "log",
            "--first-parent",
            "-z",
            f"--notes={ATTACHED_REF}",
            f"--format=%H{_FIELD_SEP}%N",
            branch_ref,
            "--not",
            f"{base_sha}^@",
        ],
        repo,
    )
    found: dict[str, list[int]] = {}
    for record in out.split("\0"):
        sha, _, note = record.strip("\n").partition(_FIELD_SEP)
        seqs = [entry["seq"] for entry in _entries(note) if isinstance(entry.get("seq"), int)]
        if sha and seqs:
            found[sha] = seqs
    return found


def _entries(text: str) -> list[dict[str, Any]]:
    entries = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line someone edited by hand is skipped, not fatal
        if isinstance(value, dict):
            entries.append(value)
    return entries
