"""Which question to ask next: the best record in past traces, with room for the untried.

Each question's chance of being followed by a speedup jump is a Beta distribution: a weak prior
centred on the pooled jump rate of the whole repertoire, updated with the question's own record
(asked, followed by a jump). Ranking draws one sample per question (Thompson sampling), so a
question with a strong record usually comes first, an untried one, whose distribution is wide,
sometimes does, and one with a poor record rarely does. The median gain that followed a
question tips the balance between questions with similar jump rates. The draws come from the
caller's ``random.Random`` (or a seed), so a ranking is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from kernelseek_tui.decisions import TRIGGERS
from kernelseek_tui.repertoire.model import (
    PlainQuestionRecord,
    Question,
    QuestionRecord,
    RepertoireError,
)

DEFAULT_AVOID_LAST: Final = 8
# In pseudo-observations: weak enough that a handful of asks outweighs it.
PRIOR_STRENGTH: Final = 2.0
# How far the best median gain can lift a question's score (the worst gets no lift).
GAIN_WEIGHT: Final = 0.5


def rank_questions(
    repertoire: Iterable[Question],
    trigger: str,
    *,
    stats: Mapping[str, QuestionRecord] | None = None,
    recent_ids: Sequence[str] = (),
    rng: random.Random | int | None = None,
    avoid_last: int = DEFAULT_AVOID_LAST,
    prior_strength: float = PRIOR_STRENGTH,
    gain_weight: float = GAIN_WEIGHT,
) -> list[Question]:
    """The questions to offer at a decision moment, best first.

    Questions that fit ``trigger`` come before those that do not (``manual`` fits all); within
    each group the order is by sampled score. A question among the last ``avoid_last`` of
    ``recent_ids`` (the ids asked so far in this session, oldest first) is left out entirely,
    so the list may be shorter than the repertoire, or empty. ``stats`` maps question ids to
    their record in past traces; missing ids are untried. ``rng`` is a ``random.Random`` or a
    seed; the same seed and inputs give the same ranking.
    """
    if trigger not in TRIGGERS:
        raise RepertoireError(f"unknown trigger {trigger!r}; expected one of {', '.join(TRIGGERS)}")
    if avoid_last < 0:
        raise RepertoireError("avoid_last must not be negative")
    if not (prior_strength > 0 and math.isfinite(prior_strength)):
        raise RepertoireError("prior_strength must be a finite number > 0")
    questions = list(repertoire)
    recent = set(list(recent_ids)[-avoid_last:]) if avoid_last else set()
    records = {q.id: clean_record((stats or {}).get(q.id)) for q in questions}
    prior = pooled_jump_rate(records.values())
    gains = gain_percentiles(records)
    generator = rng if isinstance(rng, random.Random) else random.Random(rng)

    ranked: list[tuple[bool, float, int, Question]] = []
    # One draw per eligible question, in file order: the order of draws is part of what makes
    # a seeded ranking reproducible.
    for index, question in enumerate(q for q in questions if q.id not in recent):
        record = records[question.id]
        misses = record.asked - record.followed_by_jump
        sample = generator.betavariate(
            prior_strength * prior + record.followed_by_jump,
            prior_strength * (1 - prior) + misses,
        )
        score = sample * (1 + gain_weight * gains.get(question.id, 0.5))
        ranked.append((not question.fits(trigger), -score, index, question))
    ranked.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in ranked]


def next_question(
    repertoire: Iterable[Question],
    trigger: str,
    *,
    stats: Mapping[str, QuestionRecord] | None = None,
    recent_ids: Sequence[str] = (),
    rng: random.Random | int | None = None,
    avoid_last: int = DEFAULT_AVOID_LAST,
    prior_strength: float = PRIOR_STRENGTH,
    gain_weight: float = GAIN_WEIGHT,
) -> Question | None:
    """The first of ``rank_questions(...)``, or None when every question was asked too recently."""
    ranked = rank_questions(
        repertoire,
        trigger,
        stats=stats,
        recent_ids=recent_ids,
        rng=rng,
        avoid_last=avoid_last,
        prior_strength=prior_strength,
        gain_weight=gain_weight,
    )
    return ranked[0] if ranked else None


def clean_record(record: QuestionRecord | None) -> PlainQuestionRecord:
    """A record with counts that make sense (jumps within asks, none negative, finite gain)."""
    if record is None:
        return PlainQuestionRecord()
    asked = max(int(record.asked or 0), 0)
    jumps = min(max(int(record.followed_by_jump or 0), 0), asked)
    gain = record.median_gain
    usable = gain is not None and math.isfinite(gain)
    return PlainQuestionRecord(asked, jumps, float(gain) if usable else None)  # type: ignore[arg-type]


def pooled_jump_rate(records: Iterable[QuestionRecord]) -> float:
    """The repertoire's overall jump rate, smoothed so it is never exactly 0 or 1."""
    asked = jumps = 0
    for record in records:
        asked += record.asked
        jumps += record.followed_by_jump
    return (jumps + 1) / (asked + 2)


def expected_jump_rate(
    record: QuestionRecord, prior: float, prior_strength: float = PRIOR_STRENGTH
) -> float:
    """The mean of a question's jump-rate distribution: its record pulled toward the prior."""
    return (prior_strength * prior + record.followed_by_jump) / (prior_strength + record.asked)


def gain_percentiles(records: Mapping[str, QuestionRecord]) -> dict[str, float]:
    """Each asked question's median gain as a rank in [0, 1] among those with a gain.

    A rank rather than the value, so the ranking does not depend on how the trace store
    measures a gain (a ratio or a difference); ties share the mean rank.
    """
    gains = sorted(
        (r.median_gain, qid)
        for qid, r in records.items()
        if r.asked > 0 and r.median_gain is not None
    )
    if len(gains) < 2:
        return {qid: 0.5 for _, qid in gains}
    ranks: dict[str, float] = {}
    start = 0
    while start < len(gains):
        end = start
        while end + 1 < len(gains) and gains[end + 1][0] == gains[start][0]:
            end += 1
        for position in range(start, end + 1):
            ranks[gains[position][1]] = (start + end) / 2 / (len(gains) - 1)
        start = end + 1
    return ranks
