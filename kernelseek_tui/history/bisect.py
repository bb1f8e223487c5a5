"""Finding the first bad candidate of a session: a binary search run by kernelseek itself, and
the exit-code mapping that lets plain ``git bisect run`` do the same.

Both judge a candidate the same way (:func:`bisect_exit_code`): an evaluation the harness could
not make is a skip; with ``scenario`` the candidate is good when that scenario passes; with
``metric`` and ``threshold`` it is good when it is correct and the metric reaches the threshold;
with neither it is good when it is correct.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary
from kernelseek_tui.history.message import Candidate

if TYPE_CHECKING:
    from kernelseek_tui.history.session import SessionHistory

# The exit codes `git bisect run` understands. Any code from 1 to 127 other than 125 means bad,
# so a command that cannot evaluate at all must exit BISECT_ABORT (>= 128) to stop the bisect
# rather than mark the commit bad.
BISECT_GOOD = 0
BISECT_BAD = 1
BISECT_SKIP = 125
BISECT_ABORT = 128

METRICS: dict[str, Callable[[EvalSummary], float | None]] = {
    "speedup": lambda s: s.geomean_speedup,
    "vs_fa3": lambda s: s.vs_fa3,
    "tflops": lambda s: s.geomean_tflops,
}

Verdict = Literal["good", "bad", "skip"]


@dataclass(frozen=True, slots=True)
class Skip:
    """An ``is_good`` answer: this candidate could not be judged, and why (None says the same
    without a reason)."""

    reason: str


IsGood = Callable[[str, Path], bool | Skip | None]


@dataclass(frozen=True, slots=True)
class BisectProgress:
    """What a bisect is doing: sent before each test (``verdict`` None) and after it."""

    step: int  # 1 for the first candidate tested
    candidate: Candidate
    remaining: int  # candidates that may still be the first bad one, this one included
    steps_left: int  # roughly how many tests follow this one
    verdict: Verdict | None
    round: int | None = None  # a parallel bisect: the round of tests run at once (from 1)
    reason: str | None = None  # why a skip is a skip


@dataclass(frozen=True, slots=True)
class BisectStep:
    """One candidate tested and what it turned out to be."""

    candidate: Candidate
    verdict: Verdict
    round: int | None = None  # a parallel bisect: the round it was tested in (from 1)
    reason: str | None = None  # why a skip is a skip


@dataclass(frozen=True, slots=True)
class BisectOutcome:
    """The end of a bisect.

    ``first_bad`` is the first bad candidate when the search pinned it down. When skipped
    candidates sit right before the first known bad one it cannot be, and ``suspects`` lists
    every candidate that may be it (oldest first, the first known bad one last).
    """

    first_bad: Candidate | None
    suspects: tuple[Candidate, ...]
    last_good: str  # sha of the newest commit known good (the start commit counts)
    steps: tuple[BisectStep, ...]

    @property
    def found(self) -> bool:
        return self.first_bad is not None

    @property
    def rounds(self) -> int:
        """How many times the search waited for tests: one per test, or per parallel round."""
        numbered = {s.round for s in self.steps if s.round is not None}
        return len(numbered) + sum(1 for s in self.steps if s.round is None)


def check_criteria(
    *, scenario: str | None = None, metric: str | None = None, threshold: float | None = None
) -> None:
    """Raise :class:`KernelseekError` unless the criteria make one clear question."""
    if scenario is not None and metric is not None:
        raise KernelseekError("bisect on a scenario or on a metric, not both")
    if metric is not None:
        if metric not in METRICS:
            raise KernelseekError(
                f"unknown metric {metric!r}: choose one of {', '.join(sorted(METRICS))}"
            )
        if threshold is None:
            raise KernelseekError(f"metric {metric!r} needs a threshold")
        if not math.isfinite(threshold):
            raise KernelseekError(f"threshold {threshold!r} is not a finite number")
    elif threshold is not None:
        raise KernelseekError("a threshold needs a metric")


def bisect_exit_code(
    result: EvalResult,
    *,
    scenario: str | None = None,
    metric: str | None = None,
    threshold: float | None = None,
) -> int:
    """Map an evaluation to ``git bisect run``'s codes: 0 good, 1 bad, 125 skip (see
    :func:`bisect_judgement`, which also says why a skip is one)."""
    return bisect_judgement(result, scenario=scenario, metric=metric, threshold=threshold)[0]


def bisect_judgement(
    result: EvalResult,
    *,
    scenario: str | None = None,
    metric: str | None = None,
    threshold: float | None = None,
) -> tuple[int, str | None]:
    """An evaluation as ``git bisect run``'s code (0 good, 1 bad, 125 skip) and, for a skip,
    the reason in words.

    - verdict ``error`` (the harness could not judge): skip;
    - ``scenario``: good when it passed, bad when it failed, skip when it did not run;
    - ``metric`` with ``threshold``: bad when the candidate is not correct, skip when the
      metric is missing (no timing), else good when the metric is at least the threshold;
    - neither: good when the verdict is ``pass``.
    Raises :class:`KernelseekError` for unusable criteria or a scenario the evaluation lacks.
    """
    check_criteria(scenario=scenario, metric=metric, threshold=threshold)
    first_reason = result.reasons[0] if result.reasons else "no reason given"
    if result.verdict == "error":
        return BISECT_SKIP, f"the harness could not judge it: {first_reason}"
    if scenario is not None:
        if not result.scenarios:
            # Judged before any scenario ran (a build failure).
            return BISECT_SKIP, f"no scenario ran: {first_reason}"
        match = next((s for s in result.scenarios if s.name == scenario), None)
        if match is None:
            names = ", ".join(s.name for s in result.scenarios[:5])
            raise KernelseekError(f"scenario {scenario!r} is not in this evaluation ({names}, …)")
        if match.passed is None:
            return BISECT_SKIP, f"scenario {scenario} did not run: {first_reason}"
        return (BISECT_GOOD if match.passed else BISECT_BAD), None
    if result.verdict != "pass":
        return BISECT_BAD, None
    if metric is not None and threshold is not None:
        value = METRICS[metric](result.summary)
        if value is None or not math.isfinite(value):
            return BISECT_SKIP, f"no {metric} was measured (nothing timed, or no peer)"
        return (BISECT_GOOD if value >= threshold else BISECT_BAD), None
    return BISECT_GOOD, None


def inverted(is_good: IsGood) -> IsGood:
    """``is_good`` with good and bad swapped (a skip stays a skip): the search for the first
    candidate that meets a rule, in a climb whose older end fails it, is the search for the
    first bad candidate under the opposite rule."""

    def meets_not(sha: str, task_dir: Path) -> bool | Skip | None:
        answer = is_good(sha, task_dir)
        return answer if answer is None or isinstance(answer, Skip) else not answer

    return meets_not


def predicate_from_evaluator(
    evaluate: Callable[[str, Path], EvalResult],
    *,
    scenario: str | None = None,
    metric: str | None = None,
    threshold: float | None = None,
) -> IsGood:
    """An ``is_good`` for :func:`bisect_candidates` that evaluates ``(sha, task_dir)`` and
    judges it with :func:`bisect_exit_code` (so both ways of bisecting agree)."""
    check_criteria(scenario=scenario, metric=metric, threshold=threshold)

    def is_good(sha: str, task_dir: Path) -> bool | Skip:
        code, reason = bisect_judgement(
            evaluate(sha, task_dir), scenario=scenario, metric=metric, threshold=threshold
        )
        return Skip(reason or "skipped") if code == BISECT_SKIP else code == BISECT_GOOD

    return is_good


def bisect_candidates(
    history: SessionHistory,
    good: str,
    bad: str,
    is_good: IsGood,
    progress: Callable[[BisectProgress], None] | None = None,
) -> BisectOutcome:
    """Find the first bad candidate between ``good`` and ``bad`` by binary search.

    ``good`` is the session's start commit or a candidate, ``bad`` a later candidate (any
    revisions that name them). Each candidate tested is written to a temporary directory
    (:meth:`SessionHistory.export_task`) and ``is_good(sha, task_dir)`` judges it: True good,
    False bad, None skip. The endpoints are taken as given, as ``git bisect`` does. Nothing is
    checked out anywhere, so the user's checkout and the session worktree stay as they are.
    """
    chain, by_sha, lo, hi = _search_range(history, good, bad)

    skipped: set[int] = set()
    steps: list[BisectStep] = []
    while True:
        pool = [i for i in range(lo + 1, hi) if i not in skipped]
        if not pool:
            break
        middle = (lo + hi) / 2
        pick = min(pool, key=lambda i: (abs(i - middle), i))
        candidate = by_sha[chain[pick]]
        report = _reporter(progress, len(steps) + 1, candidate, len(pool) + 1)
        verdict, reason = _test_one(history, is_good, candidate, report)
        if verdict == "good":
            lo = pick
        elif verdict == "bad":
            hi = pick
        else:
            skipped.add(pick)
        steps.append(BisectStep(candidate, verdict, reason=reason))

    return _outcome(chain, by_sha, lo, hi, steps)


def bisect_candidates_parallel(
    history: SessionHistory,
    good: str,
    bad: str,
    is_good: IsGood,
    slots: int,
    progress: Callable[[BisectProgress], None] | None = None,
) -> BisectOutcome:
    """:func:`bisect_candidates` testing up to ``slots`` candidates at once.

    Each round splits what is left into ``slots + 1`` parts and tests the ``slots`` candidates
    at the cuts together; then the range narrows to between the newest good one below the
    oldest bad one and that bad one. ``is_good`` and ``progress`` are called from that many
    threads at once: give an ``is_good`` that hands each call its own GPU (one backed by
    ``EvalPool`` does). With a predicate that is good up to some candidate and bad after it,
    this finds the same first bad candidate as the binary search, in about
    log(n) / log(slots + 1) rounds instead of log2(n). ``slots`` 1 is the binary search.
    """
    if slots < 1:
        raise KernelseekError("a bisect needs at least one evaluation slot")
    if slots == 1:
        return bisect_candidates(history, good, bad, is_good, progress)
    from concurrent.futures import ThreadPoolExecutor

    chain, by_sha, lo, hi = _search_range(history, good, bad)

    skipped: set[int] = set()
    steps: list[BisectStep] = []
    round_number = 0
    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="kernelseek-bisect") as pool:
        while True:
            open_places = [i for i in range(lo + 1, hi) if i not in skipped]
            if not open_places:
                break
            round_number += 1
            picks = _cuts(open_places, lo, hi, slots)
            remaining = len(open_places) + 1
            steps_left = max(0, math.ceil(math.log(remaining, slots + 1)) - 1)

            first_step = len(steps) + 1
            futures = [
                pool.submit(
                    _test_one,
                    history,
                    is_good,
                    by_sha[chain[pick]],
                    _reporter(
                        progress,
                        first_step + k,
                        by_sha[chain[pick]],
                        remaining,
                        steps_left,
                        round_number,
                    ),
                )
                for k, pick in enumerate(picks)
            ]
            judged = [future.result() for future in futures]
            verdicts = [verdict for verdict, _ in judged]
            for pick, (verdict, reason) in zip(picks, judged, strict=True):
                steps.append(BisectStep(by_sha[chain[pick]], verdict, round_number, reason))
                if verdict == "skip":
                    skipped.add(pick)
            bads = [p for p, v in zip(picks, verdicts, strict=True) if v == "bad"]
            if bads:
                hi = min(bads)
            goods = [p for p, v in zip(picks, verdicts, strict=True) if v == "good" and p < hi]
            if goods:
                lo = max(goods)

    return _outcome(chain, by_sha, lo, hi, steps)


def check_range(history: SessionHistory, good: str, bad: str) -> None:
    """Raise :class:`KernelseekError` unless ``good`` and ``bad`` make a range to search (before
    anything is evaluated)."""
    _search_range(history, good, bad)


def _search_range(
    history: SessionHistory, good: str, bad: str
) -> tuple[list[str], dict[str, Candidate], int, int]:
    """The start commit and the candidates oldest first, and the places of ``good`` and
    ``bad`` in that chain (refused unless good comes first)."""
    newest_first = history.candidates()
    chain: list[str] = [history.base_sha, *(c.sha for c in reversed(newest_first))]
    by_sha = {c.sha: c for c in newest_first}
    place = {sha: i for i, sha in enumerate(chain)}
    lo = _place_of(history, good, place, "good")
    hi = _place_of(history, bad, place, "bad")
    if lo >= hi:
        raise KernelseekError(f"the good revision {good!r} must come before the bad one {bad!r}")
    return chain, by_sha, lo, hi


def _outcome(
    chain: list[str], by_sha: dict[str, Candidate], lo: int, hi: int, steps: list[BisectStep]
) -> BisectOutcome:
    """What is left between the last good (``lo``) and the first bad (``hi``) of ``chain``."""
    suspects = tuple(by_sha[chain[i]] for i in range(lo + 1, hi + 1))
    return BisectOutcome(
        first_bad=suspects[0] if len(suspects) == 1 else None,
        suspects=suspects,
        last_good=chain[lo],
        steps=tuple(steps),
    )


def _test_one(
    history: SessionHistory,
    is_good: IsGood,
    candidate: Candidate,
    report: Callable[[Verdict | None, str | None], None],
) -> tuple[Verdict, str | None]:
    """Judge one candidate in a temporary export of its task directory: its verdict and, for a
    skip, why."""
    report(None, None)
    with tempfile.TemporaryDirectory(prefix="kernelseek-bisect-") as tmp:
        answer = is_good(candidate.sha, history.export_task(candidate.sha, Path(tmp)))
    verdict, reason = verdict_of(answer)
    report(verdict, reason)
    return verdict, reason


def verdict_of(answer: bool | Skip | None) -> tuple[Verdict, str | None]:
    """An ``is_good`` answer as a verdict and the reason of a skip."""
    if isinstance(answer, Skip):
        return "skip", answer.reason
    if answer is None:
        return "skip", None
    return ("good" if answer else "bad"), None


def _cuts(open_places: list[int], lo: int, hi: int, slots: int) -> list[int]:
    """Up to ``slots`` untested places that split (lo, hi) into ``slots + 1`` even parts."""
    if len(open_places) <= slots:
        return list(open_places)
    picks: list[int] = []
    for k in range(1, slots + 1):
        target = lo + (hi - lo) * k / (slots + 1)
        free = [i for i in open_places if i not in picks]
        picks.append(min(free, key=lambda i: (abs(i - target), i)))
    return sorted(picks)


def _place_of(history: SessionHistory, rev: str, place: dict[str, int], role: str) -> int:
    sha = history.resolve(rev)
    if sha not in place:
        raise KernelseekError(
            f"the {role} revision {rev!r} is neither the start nor a candidate of session "
            f"{history.session_id}"
        )
    return place[sha]


def _reporter(
    progress: Callable[[BisectProgress], None] | None,
    step: int,
    candidate: Candidate,
    remaining: int,
    steps_left: int | None = None,
    round_number: int | None = None,
) -> Callable[[Verdict | None, str | None], None]:
    # Roughly log2 of what is left, after this test: the same estimate `git bisect` prints.
    if steps_left is None:
        steps_left = max(0, math.ceil(math.log2(remaining)) - 1)
    left = steps_left

    def report(verdict: Verdict | None, reason: str | None) -> None:
        if progress is not None:
            progress(
                BisectProgress(step, candidate, remaining, left, verdict, round_number, reason)
            )

    return report
