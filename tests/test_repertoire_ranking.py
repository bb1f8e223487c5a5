"""The ranking: favours good records, never repeats within N, explores the untried, respects
triggers, and is reproducible from a seed."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from kernelseek_tui.repertoire import (
    PlainQuestionRecord,
    Question,
    RepertoireError,
    load_repertoire,
    next_question,
    rank_questions,
)

SHIPPED = Path(__file__).resolve().parents[1] / "repertoire.toml"
SEEDS = range(2000)


def _questions(n: int, triggers: tuple[str, ...] = ("plateau",)) -> list[Question]:
    return [Question(f"q{i}", f"Question {i}?", "measurement", triggers) for i in range(n)]


def _first_counts(questions: list[Question], stats: dict[str, PlainQuestionRecord]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for seed in SEEDS:
        first = next_question(questions, "plateau", stats=stats, rng=seed)
        assert first is not None
        counts[first.id] += 1
    return counts


def test_a_strong_record_comes_first_most_of_the_time() -> None:
    questions = _questions(6)
    stats = {q.id: PlainQuestionRecord(asked=20, followed_by_jump=1) for q in questions}
    stats["q3"] = PlainQuestionRecord(asked=20, followed_by_jump=9)
    counts = _first_counts(questions, stats)
    assert counts["q3"] / len(SEEDS) > 0.9


def test_untried_questions_are_explored_more_than_poor_ones_less_than_proven_ones() -> None:
    questions = _questions(7)
    stats = {f"q{i}": PlainQuestionRecord(asked=30, followed_by_jump=1) for i in range(5)}
    stats["q5"] = PlainQuestionRecord(asked=30, followed_by_jump=12)  # proven; q6 never tried
    counts = _first_counts(questions, stats)
    untried = counts["q6"] / len(SEEDS)
    poor = max(counts[f"q{i}"] for i in range(5)) / len(SEEDS)
    proven = counts["q5"] / len(SEEDS)
    assert 0.03 < untried < proven, (untried, proven)
    assert poor < untried / 2, (poor, untried)


def test_with_no_record_at_all_every_question_gets_its_turn() -> None:
    questions = _questions(5)
    counts = _first_counts(questions, {})
    for question in questions:
        assert 0.12 < counts[question.id] / len(SEEDS) < 0.28, counts


def test_median_gain_tips_the_balance_between_equal_jump_rates() -> None:
    questions = _questions(2)
    stats = {
        "q0": PlainQuestionRecord(asked=20, followed_by_jump=6, median_gain=1.05),
        "q1": PlainQuestionRecord(asked=20, followed_by_jump=6, median_gain=1.60),
    }
    counts = _first_counts(questions, stats)
    assert counts["q1"] > counts["q0"] * 1.5, counts


def test_never_repeats_a_question_within_the_last_n() -> None:
    repertoire = load_repertoire(SHIPPED)
    rng = random.Random(7)
    asked: list[str] = []
    for turn in range(200):
        trigger = ["plateau", "limit_claim", "failure_streak", "finish_request"][turn % 4]
        question = next_question(repertoire, trigger, recent_ids=asked, rng=rng, avoid_last=12)
        assert question is not None
        assert question.id not in asked[-12:]
        asked.append(question.id)
    assert len(set(asked)) > 30  # it wanders over the repertoire rather than cycling a few


def test_recent_questions_are_left_out_of_the_ranking_entirely() -> None:
    questions = _questions(4)
    ranked = rank_questions(
        questions, "plateau", recent_ids=["q0", "q1", "q2"], rng=1, avoid_last=2
    )
    assert {q.id for q in ranked} == {"q0", "q3"}  # q0 is older than the last two
    assert rank_questions(questions, "plateau", recent_ids=["q0", "q1", "q2", "q3"], rng=1) == []
    assert next_question(questions, "plateau", recent_ids=["q0", "q1", "q2", "q3"], rng=1) is None
    every = rank_questions(questions, "plateau", recent_ids=["q0", "q1"], rng=1, avoid_last=0)
    assert len(every) == 4


def test_questions_for_the_trigger_come_first_even_against_a_better_record() -> None:
    fitting = _questions(3, ("limit_claim",))
    other = [Question("other", "Other?", "process", ("failure_streak",))]
    stats = {"other": PlainQuestionRecord(asked=50, followed_by_jump=45)}
    for seed in range(200):
        ranked = rank_questions(other + fitting, "limit_claim", stats=stats, rng=seed)
        assert [q.id for q in ranked][-1] == "other"


def test_manual_offers_any_question_on_its_record() -> None:
    fitting = _questions(3, ("limit_claim",))
    other = [Question("other", "Other?", "process", ("failure_streak",))]
    stats = {"other": PlainQuestionRecord(asked=50, followed_by_jump=45)}
    stats |= {q.id: PlainQuestionRecord(asked=50, followed_by_jump=2) for q in fitting}
    firsts = Counter(
        rank_questions(other + fitting, "manual", stats=stats, rng=s)[0].id for s in range(200)
    )
    assert firsts["other"] > 190


def test_the_same_seed_gives_the_same_ranking() -> None:
    repertoire = load_repertoire(SHIPPED)
    stats = {
        q.id: PlainQuestionRecord(asked=i % 7, followed_by_jump=i % 3 if i % 7 else 0)
        for i, q in enumerate(repertoire)
    }
    one = rank_questions(repertoire, "plateau", stats=stats, rng=42, recent_ids=["least-work"])
    two = rank_questions(
        repertoire, "plateau", stats=stats, rng=random.Random(42), recent_ids=["least-work"]
    )
    three = rank_questions(repertoire, "plateau", stats=stats, rng=43, recent_ids=["least-work"])
    assert one == two
    assert one != three
    assert "least-work" not in {q.id for q in one}


def test_records_that_make_no_sense_are_tamed_not_fatal() -> None:
    questions = _questions(3)
    stats = {
        "q0": PlainQuestionRecord(asked=3, followed_by_jump=10),  # more jumps than asks
        "q1": PlainQuestionRecord(asked=-4, followed_by_jump=-1),
        "q2": PlainQuestionRecord(asked=5, followed_by_jump=1, median_gain=float("nan")),
    }
    assert len(rank_questions(questions, "plateau", stats=stats, rng=0)) == 3


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(RepertoireError, match="unknown trigger 'stuck'"):
        rank_questions(_questions(2), "stuck", rng=0)
    with pytest.raises(RepertoireError, match="avoid_last"):
        rank_questions(_questions(2), "plateau", rng=0, avoid_last=-1)
