"""Git history of a session: branch, worktree, candidate commits with trailers and notes,
reading the log, diffs, and bisecting for the first bad candidate.

- :mod:`.session`: :class:`SessionHistory` (create/open, commit, read).
- :mod:`.message`: the commit message convention and :class:`Candidate`.
- :mod:`.bisect`: :func:`bisect_candidates` (and its parallel variant) and
  :func:`bisect_exit_code`.
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
    bisect_candidates,
    bisect_candidates_parallel,
    bisect_exit_code,
    check_criteria,
    predicate_from_evaluator,
)
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
    "UnverifiedCandidateError",
    "bisect_candidates",
    "bisect_candidates_parallel",
    "bisect_exit_code",
    "check_criteria",
    "check_session_id",
    "predicate_from_evaluator",
]
