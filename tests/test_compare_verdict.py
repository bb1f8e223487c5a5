"""The verdict of `compare`: said only where the number of sessions allows one."""

from __future__ import annotations

import pytest

from kernelseek_tui.experiment.metrics import session_metrics
from kernelseek_tui.experiment.verdict import min_sessions_per_arm, rank_test_p, verdict


def test_four_sessions_per_arm_is_the_fewest_that_can_show_a_difference() -> None:
    assert min_sessions_per_arm() == 4
    assert verdict("a", [1.0, 1.1, 1.2], "b", [2.0, 2.1, 2.2], "best").p_value is None


def test_separated_arms_get_a_verdict_and_mixed_ones_do_not() -> None:
    apart = verdict("on", [1.9, 2.0, 2.1, 2.2], "off", [1.0, 1.1, 1.2, 1.3], "best speedup")
    assert apart.p_value == pytest.approx(2 / 70)
    assert apart.sentence().startswith("on reached a higher best speedup than off (medians 2.050")
    mixed = verdict("on", [1.0, 1.3, 1.1, 1.4], "off", [1.05, 1.35, 1.15, 1.2], "best speedup")
    assert mixed.p_value is not None and mixed.p_value > 0.05
    assert mixed.sentence().startswith("no difference shown")


def test_ties_share_ranks() -> None:
    assert rank_test_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def row(seq: int, kind: str, **fields: object) -> dict[str, object]:
    return {"seq": seq, "ts": seq * 1_000_000, "kind": kind, **fields}


def test_a_jump_follows_a_question_within_k_evaluations() -> None:
    def ev(seq: int, speedup: float, sha: str) -> dict[str, object]:
        return row(seq, "eval", verdict="pass", speedup=speedup, candidate_sha=sha,
                   attrs='{"objective": true, "verified": true}')  # fmt: skip

    rows = [
        row(0, "tool_call"), ev(1, 1.0, "a"),
        row(2, "question", question_id="q1", question_text="?", source="repertoire"),
        row(3, "tool_call"), ev(4, 1.0, "a"),
        row(5, "tool_call"), ev(6, 1.2, "b"),   # second eval after q1: follows it (k=3)
        row(7, "tool_call"), ev(8, 1.2, "b"),   # the same candidate timed again: no jump
        row(9, "tool_call"), ev(10, 1.1, "c"),
        row(11, "tool_call"), ev(12, 1.5, "d"),  # fourth eval after q1: no longer follows it
    ]  # fmt: skip
    metrics = session_metrics(rows, session_id="s", arm="a")
    assert (metrics.jumps, metrics.jumps_after_question) == (2, 1)
    assert metrics.final_best == 1.5 and metrics.evals_to_reach(1.2) == 3
    assert metrics.best_at_calls(3) == 1.2 and metrics.best_at_calls(2) == 1.0
    assert metrics.tool_calls == 6 and metrics.seconds == 12.0
