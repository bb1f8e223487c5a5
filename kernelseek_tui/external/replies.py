"""What an outside agent reads back from a request: the text, plus the same facts as data."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.session.engine.evaluation import Committed, failure_lines
from kernelseek_tui.session.tools import ToolOutcome

QUESTION_PREFIX = "Question from the harness: "


@dataclass(slots=True)
class ExternalReply:
    """The answer to one request.

    ``questions`` are the harness's questions the agent must read now (a decision moment's,
    a person's typed one); ``ended`` says the session is over and takes no more requests.
    """

    text: str
    is_error: bool = False
    questions: list[str] = field(default_factory=list)
    ended: bool = False
    data: dict[str, Any] = field(default_factory=dict)

    def full_text(self) -> str:
        """The text with each question on its own line after it, as the agent reads it."""
        lines = [self.text] if self.text else []
        lines.extend(QUESTION_PREFIX + question for question in self.questions)
        return "\n\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExternalReply:
        return cls(
            text=str(data.get("text") or ""),
            is_error=bool(data.get("is_error")),
            questions=[str(q) for q in data.get("questions") or []],
            ended=bool(data.get("ended")),
            data=dict(data.get("data") or {}),
        )


def reply_from_outcome(
    outcome: ToolOutcome, questions: list[str], *, ended: bool = False
) -> ExternalReply:
    """A tool's outcome told to an outside agent; an evaluation's figures also as data."""
    data: dict[str, Any] = {}
    result = outcome.data.get("result")
    if isinstance(result, EvalResult):
        data = evaluation_data(result, outcome.data.get("committed"))
    return ExternalReply(
        outcome.text, is_error=outcome.is_error, questions=questions, ended=ended, data=data
    )


def evaluation_data(result: EvalResult, committed: Committed | None) -> dict[str, Any]:
    """The verdict, the failing scenarios with their reasons, speedup, vs-FA3, the commit."""
    summary = result.summary
    failures, count = failure_lines(result, limit=20)
    return {
        "verdict": result.verdict,
        "scenarios_passed": summary.passed,
        "scenarios_total": summary.total,
        "speedup": _finite(summary.geomean_speedup),
        "vs_fa3": _finite(summary.vs_fa3),
        "failures": failures,
        "failure_count": count,
        "commit": committed.sha if committed is not None else None,
        "new_best": bool(committed and committed.new_best),
    }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
