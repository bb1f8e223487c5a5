"""Git history of a session: branch, worktree, candidate commits with trailers and notes,
reading the log, diffs, and bisecting for the first bad candidate.

- :mod:`.session`: :class:`SessionHistory` (create/open, commit, read).
- :mod:`.message`: the commit message convention and :class:`Candidate`.
- :mod:`.bisect`: :func:`bisect_candidates` (and its parallel variant) and
  :func:`bisect_exit_code`, and :func:`inverted` for a search for the first candidate that
  meets a rule.
- :mod:`.good_revision`: :func:`check_recorded_good` and :func:`confirm_good`, refusing a
  good revision that is not good.
- :mod:`.git`: the insulated ``git`` subprocess runner.
"""

from __future__ import annotations

from kernelseek_tui.history.bisect import (
    BISECT_ABORT,
    BISECT_BAD,
    BISECT_GOOD,
    BISECT_SKIP,
    METRICS,
    BisectOutcome,
    BisectProgress,
    BisectStep,
    Skip,
    bisect_candidates,
    bisect_candidates_parallel,
    bisect_exit_code,
    bisect_judgement,
    check_criteria,
    check_range,
    inverted,
    predicate_from_evaluator,
)
from kernelseek_tui.history.good_revision import check_recorded_good, confirm_good
from kernelseek_tui.history.message import Candidate
from kernelseek_tui.history.session import (
    NOTES_REF,
    SessionHistory,
    UnverifiedCandidateError,
    check_session_id,
)

__all__ = [
    "BISECT_ABORT",
    "BISECT_BAD",
    "BISECT_GOOD",
    "BISECT_SKIP",
    "METRICS",
    "NOTES_REF",
    "BisectOutcome",
    "BisectProgress",
    "BisectStep",
    "Candidate",
    "SessionHistory",
    "Skip",
    "UnverifiedCandidateError",
    "bisect_candidates",
    "bisect_candidates_parallel",
    "bisect_exit_code",
    "bisect_judgement",
    "check_criteria",
    "check_range",
    "check_recorded_good",
    "check_session_id",
    "confirm_good",
    "inverted",
    "predicate_from_evaluator",
]
