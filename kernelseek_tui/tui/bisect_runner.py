"""Bisect from the history pane: the glue to :func:`bisect_candidates`, the words for its
progress and outcome, and the status line the pane shows them in.

The app decides whether candidates can be judged here: it hands the pane a *predicate
factory* (called in the bisect's worker thread, since building an evaluator may be slow) that
returns ``is_good(sha, task_dir) -> bool | None``. Without one the pane says plainly that a
bisect needs an evaluator, which means a GPU box, instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from kernelseek_tui.history import (
    BisectOutcome,
    BisectProgress,
    SessionHistory,
    Skip,
    bisect_candidates,
)
from kernelseek_tui.history.message import Candidate

Predicate = Callable[[str, Path], bool | Skip | None]
PredicateFactory = Callable[[], Predicate]

NO_EVALUATOR = (
    "bisect needs an evaluator to judge candidates, and there is none here: "
    "run `kernelseek bisect` on a GPU box"
)


def run_bisect(
    history: SessionHistory,
    good: str,
    bad: str,
    predicate: Predicate,
    progress: Callable[[BisectProgress], None] | None = None,
) -> BisectOutcome:
    """Find the first bad candidate after ``good`` up to ``bad`` (blocking: call it in a worker).

    ``predicate(sha, task_dir)`` judges one candidate exported to a temporary directory: True
    good, False bad, None skip. ``progress`` hears of each test before and after it runs.
    """
    return bisect_candidates(history, good, bad, predicate, progress)


def candidate_label(candidate: Candidate) -> str:
    """``candidate 5 1a2b3c4 (1.30x)``: how the pane names a candidate in a sentence."""
    speed = f" ({candidate.speedup:.2f}x)" if candidate.speedup is not None else ""
    return f"candidate {candidate.n} {candidate.short_sha}{speed}"


def describe_progress(progress: BisectProgress) -> str:
    """One line for a test about to run (``verdict`` None) or just judged."""
    what = candidate_label(progress.candidate)
    if progress.verdict is None:
        more = f", about {progress.steps_left} more after it" if progress.steps_left else ""
        return (
            f"bisect step {progress.step}: testing {what}; "
            f"{progress.remaining} may be the first bad one{more}"
        )
    why = f" ({progress.reason})" if progress.reason else ""
    return f"bisect step {progress.step}: {what} is {progress.verdict}{why}"


def describe_outcome(outcome: BisectOutcome) -> str:
    """One line for the end of a bisect: the first bad candidate, or the suspects."""
    tests = len(outcome.steps)
    counted = f"{tests} test{'s' if tests != 1 else ''}"
    last_good = outcome.last_good[:10]
    if outcome.first_bad is not None:
        return (
            f"bisect done: the first bad one is {candidate_label(outcome.first_bad)} "
            f"(last good {last_good}; {counted})"
        )
    if not outcome.suspects:
        return f"bisect done: nothing between the two to blame ({counted})"
    names = ", ".join(f"{c.n} {c.short_sha}" for c in outcome.suspects)
    return (
        f"bisect done: skipped candidates hide the first bad one; it is one of {names} ({counted})"
    )


class BisectStatus(Static):
    """The pane's status line: marks, bisect progress, outcomes and plain refusals."""

    DEFAULT_CSS = """
    BisectStatus {
        height: auto;
        width: 1fr;
    }
    """

    def say(self, text: str, style: str = "") -> None:
        """Show a plain message."""
        self.update(Text(text, style=style))

    def show_progress(self, progress: BisectProgress) -> None:
        style = {"good": "green", "bad": "red", "skip": "yellow"}.get(progress.verdict or "", "")
        self.update(Text(describe_progress(progress), style=style or "bold"))

    def show_outcome(self, outcome: BisectOutcome) -> None:
        self.update(Text(describe_outcome(outcome), style="bold red" if outcome.found else "bold"))
