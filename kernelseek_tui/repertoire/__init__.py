"""The question repertoire: ``repertoire.toml`` -> questions, checks, and the ranking.

``model``    Question, Repertoire, PlainQuestionRecord, Problem, LEVELS
``rules``    what a question's text may not contain (numbers, technique names, leading phrasings)
``load``     reading and checking a repertoire file, every problem at its line
``ranking``  the next question to ask, from the questions' record in past traces
"""

from __future__ import annotations

from kernelseek_tui.decisions import MANUAL, TRIGGERS
from kernelseek_tui.repertoire.load import (
    DEFAULT_REPERTOIRE,
    REPERTOIRE_ENV,
    check_repertoire,
    find_repertoire,
    load_repertoire,
)
from kernelseek_tui.repertoire.model import (
    LEVELS,
    PlainQuestionRecord,
    Problem,
    Question,
    QuestionRecord,
    Repertoire,
    RepertoireError,
)
from kernelseek_tui.repertoire.ranking import (
    DEFAULT_AVOID_LAST,
    expected_jump_rate,
    next_question,
    pooled_jump_rate,
    rank_questions,
)
from kernelseek_tui.repertoire.rules import MAX_QUESTION_CHARS, question_problems

__all__ = [
    "DEFAULT_AVOID_LAST",
    "DEFAULT_REPERTOIRE",
    "LEVELS",
    "MANUAL",
    "MAX_QUESTION_CHARS",
    "REPERTOIRE_ENV",
    "TRIGGERS",
    "PlainQuestionRecord",
    "Problem",
    "Question",
    "QuestionRecord",
    "Repertoire",
    "RepertoireError",
    "check_repertoire",
    "expected_jump_rate",
    "find_repertoire",
    "load_repertoire",
    "next_question",
    "pooled_jump_rate",
    "question_problems",
    "rank_questions",
]
