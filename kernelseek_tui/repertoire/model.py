"""What a repertoire is: questions, their levels and triggers, and their record in past traces."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from kernelseek_tui.decisions import MANUAL
from kernelseek_tui.errors import KernelseekError

# The levels of the system a question can send the agent to, plus the two families that are
# about the agent's reasoning rather than the machine.
LEVELS: Final = (
    "measurement",
    "memory",
    "instruction",
    "synchronization",
    "scheduling",
    "algorithm",
    "limit-pushback",
    "process",
)


class RepertoireError(KernelseekError):
    """A repertoire file that cannot be used; ``problems`` holds every problem found."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a repertoire file, at a line (1-based)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class Question:
    """One question of the repertoire."""

    id: str
    text: str
    level: str
    triggers: tuple[str, ...]
    line: int = 0  # where its table starts in the file, for messages

    def fits(self, trigger: str) -> bool:
        """Whether the question is meant for this decision moment (``manual`` fits any)."""
        return trigger == MANUAL or trigger in self.triggers


@dataclass(frozen=True, slots=True)
class Repertoire:
    """The questions of one repertoire file, in file order."""

    path: Path
    questions: tuple[Question, ...]

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def get(self, question_id: str) -> Question | None:
        """The question with this id, or None."""
        return next((q for q in self.questions if q.id == question_id), None)

    def select(self, *, level: str | None = None, trigger: str | None = None) -> list[Question]:
        """The questions of a level and/or fitting a trigger, in file order."""
        return [
            q
            for q in self.questions
            if (level is None or q.level == level) and (trigger is None or q.fits(trigger))
        ]


class QuestionRecord(Protocol):
    """A question's record in past traces: how often asked, how often a jump followed."""

    @property
    def asked(self) -> int: ...

    @property
    def followed_by_jump(self) -> int: ...

    @property
    def median_gain(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class PlainQuestionRecord:
    """A ``QuestionRecord`` as plain values, what ``clean_record`` returns (the store's own
    record, with the question's id, is ``trace.store.QuestionStats``)."""

    asked: int = 0
    followed_by_jump: int = 0
    median_gain: float | None = None
