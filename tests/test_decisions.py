"""Decision moments: plateau, failure streak, limit claim, finish request; cooldowns; replay."""

from __future__ import annotations

import json

import pytest

from kernelseek_tui.decisions import (
    FAILURE_STREAK,
    FINISH_REQUEST,
    LIMIT_CLAIM,
    PLATEAU,
    DecisionConfig,
    DecisionDetector,
    DecisionMoment,
    find_limit_claim,
)
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary
from kernelseek_tui.trace.schema import Event

# The agent stating that the kernel cannot get faster, in the many ways it says so.
LIMIT_CLAIMS = [
    "We've hit the hardware limit.",
    "I think we have reached the limit of what this GPU can do.",
    "At this point the kernel is at the hardware's peak.",
    "We're now close to the theoretical maximum for this shape.",
    "This is the theoretical maximum for this problem size.",
    "This is optimal.",
    "The kernel is already near-optimal.",
    "At 1.8x this looks essentially optimal, so I'll stop here.",
    "It's memory-bound so nothing more can be gained.",
    "The kernel is fully compute-bound now.",
    "We are bound by HBM bandwidth; there is no headroom left.",
    "I cannot go further with this kernel.",
    "I can't make it any faster.",
    "We are unable to improve it further.",
    "No further improvement is possible.",
    "There's no more headroom.",
    "There is nothing more to gain here.",
    "There's nothing left to optimize.",
    "Nothing more can be done.",
    "This is a fundamental limit of the hardware.",
    "We are saturating memory bandwidth already.",
    "This is as fast as it can get.",
    "This is the best we can do on this hardware.",
    "We're hitting a wall.",
    "We are seeing diminishing returns.",
    "We are right up against the roofline.",
    "The kernel now runs at the speed of light for this GPU.",
    "Profiling shows the loads dominate. I believe we're at the limit now.",
    "We’re at the limit.",  # a typographic apostrophe
    "Further optimization is not possible.",
    "I think we have squeezed out everything we can.",
    "The kernel sits right at the roofline.",
]

# Sentences with the same words in another sense, negated, hypothetical or asked: none claims
# a limit.
NOT_LIMIT_CLAIMS = [
    "Let me look at the limit of the loop.",
    "The loop limit is seqlen_k / BLOCK_N.",
    "I added a bounds check on the last tile.",
    "The load was out of bounds for the ragged tile.",
    "The upper bound of the loop depends on causal masking.",
    "I set __launch_bounds__(256) on the kernel.",
    "The kernel is memory-bound, so let's cut the traffic.",
    "It is not memory-bound any more.",
    "We are nowhere near the hardware limit.",
    "We haven't hit the limit yet.",
    "This is not optimal.",
    "This version is far from optimal.",
    "The current schedule is suboptimal.",
    "I'll pick the optimal tile size for each shape.",
    "Is this optimal?",
    "Are we at the limit?",
    "I wonder whether this is optimal.",
    "If we were at the limit, the timings would be flat across shapes.",
    "Check if we are at the peak before deciding.",
    "The theoretical peak is 989 TFLOPs; we are at 40% of it.",
    "Compared with the theoretical maximum we are at about half.",
    "Peak memory usage is 2 GB.",
    "Compute the row maximum first, then the exponentials.",
    "Each thread reaches the maximum value of its row after the reduction.",
    "We are near the time limit of the session budget.",
    "I can't go further without seeing the test output.",
    "I can't get more information from this log.",
    "Nothing else to do in the build script; moving on to the kernel.",
    "No further changes to the loader.",
    "The wall clock time includes the build.",
    "Use `if (i < limit) break;` to stop the loop.",
    "```\n// this is optimal\nint limit = n;\n```\nNow the host code.",
    "There is still headroom.",
    "We are far from the theoretical peak.",
    "We're nowhere near the peak.",
    "The new version hits the peak at seqlen 4096 and then drops.",
    "The speedup at the peak was 1.9x.",
    "The kernel reaches the maximum tile size the shared memory allows.",
    "This change brought us closer to peak, from 45% to 60%.",
]


@pytest.mark.parametrize("text", LIMIT_CLAIMS)
def test_limit_claims_are_found(text: str) -> None:
    assert find_limit_claim(text) is not None, text


@pytest.mark.parametrize("text", NOT_LIMIT_CLAIMS)
def test_near_misses_are_not_limit_claims(text: str) -> None:
    assert find_limit_claim(text) is None, text


def test_the_claiming_sentence_is_the_detail() -> None:
    text = "I tried the new layout. Timings are flat. We've hit the hardware limit. Done for now."
    detector = DecisionDetector()
    moment = detector.observe_assistant_text(text)
    assert moment == DecisionMoment(LIMIT_CLAIM, "limit claim: We've hit the hardware limit.")


def test_plateau_fires_after_k_passing_evals_without_a_new_best() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=3))
    assert detector.observe_eval("pass", 1.5) is None  # a new best
    assert detector.observe_eval("pass", 1.4) is None
    assert detector.observe_eval("pass", 1.5) is None  # equal is not new
    moment = detector.observe_eval("pass", 1.2)
    assert moment is not None and moment.trigger == PLATEAU
    assert "3 passing evaluations" in moment.detail and "1.5x" in moment.detail


def test_a_new_best_for_the_plateau_is_one_outside_the_measured_noise() -> None:
    # The engine's rule (evaluate.noise.is_new_best): 0.6% over the best with 0.2% noise on
    # each is a step forward, where the fixed 1% margin said no; 3% inside 5% noise is not.
    detector = DecisionDetector(DecisionConfig(plateau_evals=2))
    assert detector.observe_eval("pass", 1.2, noise=0.002) is None  # new best over 1.0x
    assert detector.observe_eval("pass", 1.207, noise=0.002) is None  # +0.6%: new best
    assert detector.best_speedup == 1.207
    assert detector.observe_eval("pass", 1.243, noise=0.05) is None  # +3% inside 5%: stale
    moment = detector.observe_eval("pass", 1.2, noise=0.002)
    assert moment is not None and moment.trigger == PLATEAU and detector.best_speedup == 1.207


def test_replay_reads_each_evals_noise_from_its_summary() -> None:
    summary = '{"summary": {"noise": 0.002}}'
    events = [
        Event("s", 0, "eval", verdict="pass", speedup=1.2, attrs=summary),
        Event("s", 1, "eval", verdict="pass", speedup=1.207, attrs=summary),
    ]
    for rows in (events, [e.to_row() for e in events]):
        replayed = DecisionDetector.replay(rows, DecisionConfig(plateau_evals=2))
        assert replayed.best_speedup == 1.207  # the fixed 1% margin would have kept 1.2
        assert replayed.passes_without_new_best == 0


def test_a_paired_verdict_decides_the_plateau_live_and_replayed() -> None:
    # Paired, the engine's verdict stands: a step forward whose unpaired figure reads slower
    # (another run, another clock) still resets the count; a faster-reading one the pairing
    # refused does not.
    detector = DecisionDetector(DecisionConfig(plateau_evals=2))
    assert detector.observe_eval("pass", 1.06, noise=0.09, paired_new_best=False) is None
    assert detector.passes_without_new_best == 1 and detector.best_speedup == 1.0
    assert detector.observe_eval("pass", 0.98, noise=0.09, paired_new_best=True) is None
    assert detector.passes_without_new_best == 0 and detector.best_speedup == 1.0
    moment = detector.observe_eval("pass", 1.3, noise=0.001, paired_new_best=False)
    assert moment is None and detector.passes_without_new_best == 1
    assert detector.observe_eval("pass", 1.3, paired_new_best=False) is not None

    def row(seq: int, speedup: float, new_best: bool, paired: bool) -> Event:
        summary = {
            "noise": 0.09,
            **({"paired_speedup": 1.0, "paired_spread": 0.01} if paired else {}),
        }
        attrs = json.dumps({"summary": summary, "new_best": new_best})
        return Event("s", seq, "eval", verdict="pass", speedup=speedup, attrs=attrs)

    replayed = DecisionDetector.replay(
        [row(0, 1.06, False, True), row(1, 0.98, True, True)], DecisionConfig(plateau_evals=2)
    )
    assert replayed.passes_without_new_best == 0
    # unpaired, the recorded flag is not read: the detector's own rule decides, as it did live
    unpaired = DecisionDetector.replay([row(0, 1.5, False, False)], DecisionConfig())
    assert unpaired.best_speedup == 1.5 and unpaired.passes_without_new_best == 0


def test_failed_evals_neither_count_toward_nor_break_a_plateau() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=3, failure_streak=10))
    detector.observe_eval("pass", 1.5)
    detector.observe_eval("pass", 1.4)
    detector.observe_eval("fail", None)
    detector.observe_eval("error", None)
    assert detector.observe_eval("pass", 1.3) is None
    moment = detector.observe_eval("pass", 1.3)
    assert moment is not None and moment.trigger == PLATEAU


def test_a_new_best_resets_the_plateau_count() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=3))
    for speedup in (1.1, 1.0, 1.0, 1.5, 1.4, 1.4):
        assert detector.observe_eval("pass", speedup) is None
    assert detector.passes_without_new_best == 2
    assert detector.best_speedup == 1.5


def test_gains_within_the_margin_are_not_progress() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=3, new_best_margin=0.02))
    detector.observe_eval("pass", 1.50)
    detector.observe_eval("pass", 1.51)
    detector.observe_eval("pass", 1.52)
    moment = detector.observe_eval("pass", 1.525)
    assert moment is not None and moment.trigger == PLATEAU


def test_candidates_slower_than_the_baseline_are_no_progress() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=2))
    assert detector.observe_eval("pass", 0.7) is None
    moment = detector.observe_eval("pass", 0.9)
    assert moment is not None and moment.trigger == PLATEAU


def test_plateau_needs_k_fresh_evals_to_fire_again() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=2, cooldown_evals=0))
    fired = [detector.observe_eval("pass", 1.0) for _ in range(6)]
    assert [m.trigger if m else None for m in fired] == [None, PLATEAU] * 3


def test_failure_streak_fires_after_m_failures_in_a_row() -> None:
    detector = DecisionDetector(DecisionConfig(failure_streak=3))
    assert detector.observe_eval("fail") is None
    assert detector.observe_eval("error") is None
    moment = detector.observe_eval("fail")
    assert moment == DecisionMoment(FAILURE_STREAK, "3 failed evaluations in a row")


def test_a_pass_breaks_the_failure_streak() -> None:
    detector = DecisionDetector(DecisionConfig(failure_streak=3, plateau_evals=10))
    for verdict in ("fail", "fail", "pass", "fail", "fail"):
        assert detector.observe_eval(verdict, 1.0 if verdict == "pass" else None) is None
    assert detector.failures_in_row == 2


def test_cooldown_keeps_a_limit_claim_from_firing_on_every_message() -> None:
    detector = DecisionDetector(DecisionConfig(cooldown_evals=2, plateau_evals=10))
    claim = "This is optimal."
    assert detector.observe_assistant_text(claim) is not None
    assert detector.observe_assistant_text(claim) is None
    detector.observe_eval("pass", 1.0)
    assert detector.observe_assistant_text(claim) is None
    detector.observe_eval("pass", 1.0)
    moment = detector.observe_assistant_text(claim)
    assert moment is not None and moment.trigger == LIMIT_CLAIM


def test_cooldown_delays_a_plateau_that_is_due() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=1, cooldown_evals=3))
    fired = [detector.observe_eval("pass", 1.0) for _ in range(7)]
    assert [m is not None for m in fired] == [True, False, False, True, False, False, True]


def test_finish_is_questioned_a_limited_number_of_times() -> None:
    detector = DecisionDetector(DecisionConfig(finish_questions=2, cooldown_evals=1))
    moment = detector.observe_finish("the kernel is at the limit")
    assert moment == DecisionMoment(
        FINISH_REQUEST, "the agent asked to finish: the kernel is at the limit"
    )
    # Asked again straight away, with no evaluation in between: let it finish.
    assert detector.observe_finish() is None
    detector.observe_eval("pass", 1.0)
    assert detector.observe_finish() == DecisionMoment(FINISH_REQUEST, "the agent asked to finish")
    detector.observe_eval("pass", 1.0)
    assert detector.observe_finish() is None  # two questions already
    assert detector.finish_questions_asked == 2


def test_observe_result_reads_verdict_and_geomean_speedup() -> None:
    detector = DecisionDetector(DecisionConfig(plateau_evals=1))
    result = EvalResult("e1", "pass", summary=EvalSummary(geomean_speedup=1.0))
    moment = detector.observe_result(result)
    assert moment is not None and moment.trigger == PLATEAU


def test_unknown_verdict_and_bad_config_are_errors() -> None:
    with pytest.raises(KernelseekError, match="unknown verdict"):
        DecisionDetector().observe_eval("passed", 1.0)
    with pytest.raises(KernelseekError, match="plateau_evals"):
        DecisionConfig(plateau_evals=0)
    with pytest.raises(KernelseekError, match="cooldown_evals"):
        DecisionConfig(cooldown_evals=-1)


def _live_session(config: DecisionConfig) -> tuple[DecisionDetector, list[Event]]:
    """Run a detector live over a scripted session, recording events as the engine would."""
    detector = DecisionDetector(config)
    events: list[Event] = []
    script: list[tuple[str, object]] = [
        ("eval", ("pass", 1.2)),
        ("eval", ("pass", 1.1)),
        ("eval", ("pass", 1.2)),
        ("text", "We are at the hardware limit."),
        ("eval", ("fail", None)),
        ("eval", ("fail", None)),
        ("eval", ("pass", 1.19)),
        ("eval", ("pass", 1.6)),
        ("eval", ("pass", 1.5)),
        ("finish", "done"),
        ("eval", ("error", None)),
    ]
    for kind, payload in script:
        seq = len(events)
        if kind == "eval":
            verdict, speedup = payload  # type: ignore[misc]
            events.append(Event("s", seq, "eval", verdict=verdict, speedup=speedup))
            moment = detector.observe_eval(verdict, speedup)
        elif kind == "text":
            events.append(Event("s", seq, "message", role="assistant", text=str(payload)))
            moment = detector.observe_assistant_text(str(payload))
        else:
            events.append(Event("s", seq, "tool_call", tool_name="finish"))
            moment = detector.observe_finish(str(payload))
        if moment is not None:
            events.append(Event("s", len(events), **moment.event_fields()))
    return detector, events


def _state(detector: DecisionDetector) -> tuple[object, ...]:
    return (
        detector.evals_seen,
        detector.best_speedup,
        detector.passes_without_new_best,
        detector.failures_in_row,
        detector.finish_questions_asked,
    )


@pytest.mark.parametrize("as_rows", [False, True])
def test_replay_restores_the_live_state(as_rows: bool) -> None:
    config = DecisionConfig(plateau_evals=2, failure_streak=2, cooldown_evals=2)
    live, events = _live_session(config)
    fired = [e.trigger for e in events if e.kind == "decision"]
    assert fired == [PLATEAU, LIMIT_CLAIM, FAILURE_STREAK, FINISH_REQUEST]

    replayed = DecisionDetector.replay([e.to_row() for e in events] if as_rows else events, config)
    assert _state(replayed) == _state(live)
    # The resumed detector goes on exactly as the live one would, cooldowns included.
    for detector in (live, replayed):
        continued = [
            detector.observe_assistant_text("This is optimal."),
            detector.observe_eval("error"),
            detector.observe_assistant_text("This is optimal."),  # still cooling down
            detector.observe_eval("pass", 1.6),
        ]
        assert [m.trigger if m else None for m in continued] == [
            LIMIT_CLAIM,
            FAILURE_STREAK,
            None,
            PLATEAU,
        ]


def test_replay_fires_nothing_and_skips_unjudged_evals() -> None:
    events = [
        {"kind": "eval", "verdict": "pass", "speedup": 1.0},
        {"kind": "eval", "verdict": None, "speedup": None},
        {"kind": "message", "role": "assistant", "text": "This is optimal."},
        {"kind": "eval", "verdict": "pass", "speedup": 1.0},
    ]
    detector = DecisionDetector.replay(events, DecisionConfig(plateau_evals=5))
    assert detector.evals_seen == 2
    assert detector.passes_without_new_best == 2
