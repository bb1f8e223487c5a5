"""The commit message convention of a session branch, written and read back.

A session branch holds one *start* commit (where the session forked from the user's history,
carrying a snapshot of the task directory) followed by one commit per verified candidate:

    candidate 3: 1.42x (48/48)

    Kernelseek-Session: 20261202-flash
    Kernelseek-Seq: 517
    Speedup: 1.42131
    Vs-FA3: 0.873
    Scenarios: 48/48
    New-Best: yes
    Question: What does the profiler say the kernel waits on?

``New-Best`` says whether the candidate was faster than every verified one before it (and than
the starting kernel); commits made before it existed leave it unknown. ``Question`` is left out
when no question was asked before the candidate; ``Speedup`` and ``Vs-FA3`` read ``none`` when
the evaluation had no such number. The log is read with one ``git log`` whose format ends in
``%(trailers:only,unfold)``, parsed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from kernelseek_tui.evaluate.result import EvalResult

SESSION_KEY = "Kernelseek-Session"
SEQ_KEY = "Kernelseek-Seq"
SPEEDUP_KEY = "Speedup"
VS_FA3_KEY = "Vs-FA3"
SCENARIOS_KEY = "Scenarios"
QUESTION_KEY = "Question"
NEW_BEST_KEY = "New-Best"
BASE_KEY = "Kernelseek-Base"  # on the start commit: the user's commit it forked from
TASK_KEY = "Kernelseek-Task"  # on the start commit: the task directory, relative to the repo

NONE = "none"

# Field and record separators of the log format: bytes that never occur in a message we write.
FIELD_SEP = "\x1f"
LOG_FORMAT = "%H%x1f%ct%x1f%s%x1f%(trailers:only,unfold)"

_SUBJECT_N = re.compile(r"^candidate (\d+):")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One verified candidate as the session branch records it."""

    sha: str
    n: int  # 1 for the session's first candidate
    seq: int  # the trace seq of the evaluation event it came from
    speedup: float | None
    vs_fa3: float | None
    passed: int
    total: int
    question: str | None  # the last question asked before it
    subject: str
    timestamp: datetime  # committer time, UTC
    new_best: bool | None = None  # faster than every verified candidate before it; None: unknown

    @property
    def short_sha(self) -> str:
        return self.sha[:10]


def one_line(text: str) -> str:
    """Collapse whitespace so a free-form text fits in a single trailer line."""
    return " ".join(text.split())


def format_number(value: float | None) -> str:
    """A trailer value for a float: six significant digits, or ``none``."""
    return NONE if value is None else f"{value:.6g}"


def candidate_message(
    result: EvalResult,
    *,
    n: int,
    session_id: str,
    seq: int,
    question: str | None,
    new_best: bool = False,
) -> str:
    """The full commit message of candidate ``n``."""
    summary = result.summary
    speed = summary.geomean_speedup
    shown = "untimed" if speed is None else f"{speed:.2f}x"
    lines = [
        f"candidate {n}: {shown} ({summary.passed}/{summary.total})",
        "",
        f"{SESSION_KEY}: {session_id}",
        f"{SEQ_KEY}: {seq}",
        f"{SPEEDUP_KEY}: {format_number(speed)}",
        f"{VS_FA3_KEY}: {format_number(summary.vs_fa3)}",
        f"{SCENARIOS_KEY}: {summary.passed}/{summary.total}",
        f"{NEW_BEST_KEY}: {'yes' if new_best else 'no'}",
    ]
    if question is not None and one_line(question):
        lines.append(f"{QUESTION_KEY}: {one_line(question)}")
    return "\n".join(lines) + "\n"


def start_message(
    *, session_id: str, fork_sha: str | None, task_subdir: str, snapshot: bool
) -> str:
    """The message of a session's start commit."""
    origin = fork_sha[:10] if fork_sha else "an empty repository"
    what = (
        "Snapshot of the task directory's uncommitted changes, taken when the session began."
        if snapshot
        else "The task directory had no uncommitted changes; this commit only marks the start."
    )
    return (
        f"kernelseek session {session_id}: start from {origin}\n\n{what}\n\n"
        f"{SESSION_KEY}: {session_id}\n"
        f"{BASE_KEY}: {fork_sha or NONE}\n"
        f"{TASK_KEY}: {task_subdir}\n"
    )


def parse_trailers(block: str) -> dict[str, str]:
    """``Key: value`` lines to a dict keyed by the lower-cased key (first occurrence wins)."""
    trailers: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            trailers.setdefault(key.strip().lower(), value.strip())
    return trailers


def _number(raw: str | None) -> float | None:
    if raw is None or raw.lower() == NONE or not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def _scenarios(raw: str | None) -> tuple[int, int]:
    passed, _, total = (raw or "").partition("/")
    try:
        return int(passed), int(total)
    except ValueError:
        return 0, 0


def parse_log_record(record: str, session_id: str) -> Candidate | None:
    """One ``LOG_FORMAT`` record to a Candidate, or None when it is not one of this session's."""
    fields = record.strip("\n").split(FIELD_SEP)
    if len(fields) < 4:
        return None
    sha, ctime, subject, block = fields[0], fields[1], fields[2], FIELD_SEP.join(fields[3:])
    trailers = parse_trailers(block)
    if trailers.get(SESSION_KEY.lower()) != session_id:
        return None
    try:
        seq = int(trailers.get(SEQ_KEY.lower(), ""))
    except ValueError:
        return None  # the start commit, or a commit someone else made on the branch
    match = _SUBJECT_N.match(subject)
    passed, total = _scenarios(trailers.get(SCENARIOS_KEY.lower()))
    question = trailers.get(QUESTION_KEY.lower()) or None
    best = trailers.get(NEW_BEST_KEY.lower())
    return Candidate(
        sha=sha,
        n=int(match.group(1)) if match else 0,
        seq=seq,
        speedup=_number(trailers.get(SPEEDUP_KEY.lower())),
        vs_fa3=_number(trailers.get(VS_FA3_KEY.lower())),
        passed=passed,
        total=total,
        question=None if question is None or question.lower() == NONE else question,
        subject=subject,
        timestamp=datetime.fromtimestamp(int(ctime), tz=UTC),
        new_best={"yes": True, "no": False}.get(best.lower()) if best else None,
    )


def parse_log(output: str, session_id: str) -> list[Candidate]:
    """The NUL-separated output of ``git log -z --format=LOG_FORMAT`` to candidates, in order."""
    found = []
    for record in output.split("\0"):
        candidate = parse_log_record(record, session_id) if record.strip() else None
        if candidate is not None:
            found.append(candidate)
    return found
