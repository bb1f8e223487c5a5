"""Decision moments: the points in a session where the harness puts one question to the agent.

A ``DecisionDetector`` is fed what happens in a session (evaluations, the agent's text, a call to
finish) and answers each observation with a ``DecisionMoment`` or ``None``:

  plateau         ``plateau_evals`` passing evaluations in a row without a new best speedup
                  (failed evaluations neither count nor break the run)
  failure_streak  ``failure_streak`` failed or errored evaluations in a row
  limit_claim     the agent writes that it has hit a limit ("this is optimal", "we are at the
                  hardware's peak", "memory-bound, so nothing more can be gained")
  finish_request  the agent asked to finish (answered with a question at most
                  ``finish_questions`` times per session)
  manual          never detected: a person typed the question

Every trigger has a cooldown: once it fires it stays quiet until ``cooldown_evals`` further
evaluations have run, so a question is not asked after every evaluation or every message.

Resume: the engine records each moment it acts on as a ``decision`` event (see
``DecisionMoment.event_fields``); ``DecisionDetector.replay(events)`` rebuilds the detector's
state from the ``eval`` and ``decision`` events of a trace, without firing anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.noise import gain_threshold, summary_noise
from kernelseek_tui.evaluate.paired import eval_paired_new_best
from kernelseek_tui.trace.schema import parse_attrs

if TYPE_CHECKING:
    from kernelseek_tui.evaluate.result import EvalResult
    from kernelseek_tui.trace.schema import Event

PLATEAU: Final = "plateau"
LIMIT_CLAIM: Final = "limit_claim"
FINISH_REQUEST: Final = "finish_request"
FAILURE_STREAK: Final = "failure_streak"
MANUAL: Final = "manual"
TRIGGERS: Final = (PLATEAU, LIMIT_CLAIM, FINISH_REQUEST, FAILURE_STREAK, MANUAL)

PASSING_VERDICTS: Final = frozenset({"pass"})
FAILING_VERDICTS: Final = frozenset({"fail", "error"})

_DETAIL_CHARS = 200


@dataclass(frozen=True, slots=True)
class DecisionConfig:
    """Thresholds of the detectors. All counts are in evaluations."""

    plateau_evals: int = 4
    # A speedup counts as a new best only when it beats the best so far by this fraction:
    # timing noise should not pass for progress.
    new_best_margin: float = 0.01
    # The best speedup at the start: the baseline kernel is 1.0 by definition, so candidates
    # slower than where the session began are no progress.
    start_best: float = 1.0
    failure_streak: int = 3
    cooldown_evals: int = 2
    finish_questions: int = 2

    def __post_init__(self) -> None:
        for name in ("plateau_evals", "failure_streak"):
            if getattr(self, name) < 1:
                raise KernelseekError(f"decision config: {name} must be at least 1")
        for name in ("cooldown_evals", "finish_questions"):
            if getattr(self, name) < 0:
                raise KernelseekError(f"decision config: {name} must not be negative")
        if not (math.isfinite(self.new_best_margin) and self.new_best_margin >= 0):
            raise KernelseekError("decision config: new_best_margin must be a finite number >= 0")
        if not (math.isfinite(self.start_best) and self.start_best > 0):
            raise KernelseekError("decision config: start_best must be a finite number > 0")


@dataclass(frozen=True, slots=True)
class DecisionMoment:
    """A moment to put a question to the agent; ``detail`` says why, for the person and trace."""

    trigger: str
    detail: str

    def event_fields(self) -> dict[str, Any]:
        """The fields of the ``decision`` trace event that records this moment."""
        return {
            "kind": "decision",
            "role": "harness",
            "source": "harness",
            "trigger": self.trigger,
            "text": self.detail,
        }


class DecisionDetector:
    """Watches a session and says when a decision moment has come (see the module docstring)."""

    def __init__(self, config: DecisionConfig | None = None) -> None:
        self.config = config or DecisionConfig()
        self._evals = 0
        self._best = self.config.start_best
        self._best_noise: float | None = None  # the best's measured noise (None: the start)
        self._stale_passes = 0
        self._failures_in_row = 0
        self._finish_questions = 0
        self._fired_at: dict[str, int] = {}  # trigger -> evaluations seen when it last fired

    @property
    def evals_seen(self) -> int:
        return self._evals

    @property
    def best_speedup(self) -> float:
        """The speedup progress is measured from: the last one that counted as a new best."""
        return self._best

    @property
    def passes_without_new_best(self) -> int:
        return self._stale_passes

    @property
    def failures_in_row(self) -> int:
        return self._failures_in_row

    @property
    def finish_questions_asked(self) -> int:
        return self._finish_questions

    def observe_eval(
        self,
        verdict: str,
        speedup: float | None = None,
        noise: float | None = None,
        *,
        paired_new_best: bool | None = None,
    ) -> DecisionMoment | None:
        """Count one evaluation ("pass", "fail" or "error"); a plateau or failure streak or None.

        ``noise``: the evaluation's measured relative noise (``summary.noise``); a speedup is a
        new best when it beats the best by more than this noise and the best's combined (the
        engine's rule for a new best), or by ``new_best_margin`` where neither measured any.
        ``paired_new_best``: where the engine judged the evaluation beside the best so far, its
        verdict, which this then takes instead (the paired rule sees what the unpaired figures,
        timed in separate runs, cannot)."""
        if verdict not in PASSING_VERDICTS | FAILING_VERDICTS:
            raise KernelseekError(f"unknown verdict {verdict!r}; expected pass, fail or error")
        self._count_eval(verdict, speedup, noise, paired_new_best)
        if verdict in PASSING_VERDICTS:
            if self._stale_passes >= self.config.plateau_evals and self._cooled(PLATEAU):
                detail = (
                    f"{self._stale_passes} passing evaluations without a new best "
                    f"(best {self._best:.3g}x)"
                )
                return self._fire(PLATEAU, detail)
        elif self._failures_in_row >= self.config.failure_streak and self._cooled(FAILURE_STREAK):
            return self._fire(
                FAILURE_STREAK, f"{self._failures_in_row} failed evaluations in a row"
            )
        return None

    def observe_result(self, result: EvalResult) -> DecisionMoment | None:
        """``observe_eval`` for an ``EvalResult``: its verdict and geometric-mean speedup."""
        return self.observe_eval(
            result.verdict, result.summary.geomean_speedup, result.summary.noise
        )

    def observe_assistant_text(self, text: str) -> DecisionMoment | None:
        """A limit claim in the agent's text, or None."""
        if not self._cooled(LIMIT_CLAIM):
            return None
        claim = find_limit_claim(text)
        if claim is None:
            return None
        return self._fire(LIMIT_CLAIM, f"limit claim: {_clip(claim)}")

    def observe_finish(self, reason: str | None = None) -> DecisionMoment | None:
        """The agent asked to finish: a moment, or None to let it finish.

        None once ``finish_questions`` finish requests have been answered with a question, and
        also when the agent asks again with fewer than ``cooldown_evals`` evaluations since the
        last such question: it has weighed the question and still wants to stop.
        """
        if self._finish_questions >= self.config.finish_questions:
            return None
        if not self._cooled(FINISH_REQUEST):
            return None
        detail = "the agent asked to finish"
        if reason and reason.strip():
            detail += f": {_clip(reason.strip())}"
        return self._fire(FINISH_REQUEST, detail)

    @classmethod
    def replay(
        cls, events: Iterable[Event | Mapping[str, Any]], config: DecisionConfig | None = None
    ) -> DecisionDetector:
        """A detector in the state a live one reached over ``events`` (in ``seq`` order).

        ``eval`` events update the counters; ``decision`` events mark their trigger as fired
        (resetting its counter and starting its cooldown), exactly as when the live detector
        returned that moment. Nothing fires during a replay, and other kinds are ignored, so
        the rows of ``read_session(...).to_pylist()`` or ``Event`` objects can be passed as is.
        """
        detector = cls(config)
        for event in events:
            kind = _field(event, "kind")
            if kind == "eval":
                verdict = _field(event, "verdict")
                # An eval row without a known verdict (an interrupted evaluation) judged nothing.
                if verdict in PASSING_VERDICTS | FAILING_VERDICTS:
                    attrs = parse_attrs(_field(event, "attrs"))  # read once for both
                    detector._count_eval(
                        verdict,
                        _field(event, "speedup"),
                        summary_noise(attrs.get("summary")),
                        eval_paired_new_best(attrs),
                    )
            elif kind == "decision":
                trigger = _field(event, "trigger")
                if trigger in TRIGGERS:
                    detector._mark_fired(trigger)
        return detector

    def _count_eval(
        self,
        verdict: str,
        speedup: float | None,
        noise: float | None,
        paired_new_best: bool | None = None,
    ) -> None:
        self._evals += 1
        if verdict in FAILING_VERDICTS:
            self._failures_in_row += 1
            return
        self._failures_in_row = 0
        usable = speedup is not None and math.isfinite(speedup)
        if paired_new_best is not None:
            stepped = paired_new_best
        else:
            threshold = gain_threshold(noise, self._best_noise, self.config.new_best_margin)
            stepped = usable and speedup > self._best * (1 + threshold)  # type: ignore[operator]
        if stepped:
            if usable:  # paired, a step forward may read slower unpaired: the best stays
                self._best = max(self._best, float(speedup))  # type: ignore[arg-type]
            self._best_noise = noise
            self._stale_passes = 0
        else:
            self._stale_passes += 1

    def _cooled(self, trigger: str) -> bool:
        fired_at = self._fired_at.get(trigger)
        return fired_at is None or self._evals - fired_at >= self.config.cooldown_evals

    def _fire(self, trigger: str, detail: str) -> DecisionMoment:
        self._mark_fired(trigger)
        return DecisionMoment(trigger, detail)

    def _mark_fired(self, trigger: str) -> None:
        self._fired_at[trigger] = self._evals
        if trigger == PLATEAU:
            self._stale_passes = 0
        elif trigger == FAILURE_STREAK:
            self._failures_in_row = 0
        elif trigger == FINISH_REQUEST:
            self._finish_questions += 1


def _field(event: Event | Mapping[str, Any], name: str) -> Any:
    if isinstance(event, Mapping):
        return event.get(name)
    return getattr(event, name, None)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


# --- limit claims -------------------------------------------------------------------------------
#
# A claim is a sentence in which the agent states, not asks or supposes, that the kernel cannot
# get faster. Each pattern below is one way of saying so; a match is dropped when the sentence
# is a question, when the words just before it negate it ("not", "haven't", "nowhere near"), when
# it sits inside a condition ("if", "whether", "once"), or when the words around it show a
# different sense of the same word ("the loop limit", "peak memory usage").

_LIMIT_NOUN = r"(?:limits?|ceiling|wall|peak|maximum|roofline|speed[- ]of[- ]light)"
# Verbs that arrive at a limit on their own ("we hit the limit") ...
_ARRIVE = (
    r"(?:hit|hits|hitting|reached|reaches|reaching|reach|nearing|approaching|matching|matches)"
)
# ... and prepositions that need something to be there first ("we're at the limit", "runs at
# peak"), so that "the speedup at the peak was" is no claim.
_BE = (
    r"(?:is|are|'s|'re|am|be|been|being|was|were|runs?|running|sits?|sitting|stays?|"
    r"remains?|operating|performing|stuck|now)"
)
_BE_FILLER = (
    r"(?:(?:now|already|essentially|basically|effectively|practically|probably|likely|right|"
    r"pretty\s+much|very|really|roughly|about|nearly|almost|so|running|sitting|operating|"
    r"squarely|firmly|still|just)\s+){0,2}"
)
_AT = r"(?:at|against|up\s+against|near|close\s+to|within\s+noise\s+of)"
_DET = r"(?:(?:the|a|an|our|its|this|that|their|what\s+the|what)\s+)?"
_BOUND_BY = r"(?:memory|bandwidth|compute|math|latency|hbm|dram|io|i/o|arithmetic|hardware)"
_ADVERBS = (
    r"(?:(?:already|now|essentially|basically|effectively|practically|probably|likely|"
    r"pretty\s+much|more\s+or\s+less|about|nearly|almost|very|fully|truly|really)\s+)*"
)

_CLAIM_PATTERNS: Final = tuple(
    re.compile(pattern)
    for pattern in (
        # "we've hit the hardware limit", "hitting a wall", "we're at the theoretical peak"
        rf"\b(?:{_ARRIVE}|{_BE}\s+{_BE_FILLER}{_AT})\s+{_DET}(?:[\w'-]+\s+){{0,3}}?"
        rf"{_LIMIT_NOUN}\b",
        # "is at the theoretical bound", "reached the physical floor"
        rf"\b(?:{_ARRIVE}|{_BE}\s+{_BE_FILLER}{_AT})\s+{_DET}(?:theoretical|physical|"
        r"fundamental|hardware'?s?)\s+(?:lower\s+|upper\s+)?(?:bound|floor|minimum|best)\b",
        # "further optimization is not possible", "we have squeezed out everything"
        r"\bfurther\s+(?:\w+\s+)?(?:optimi[sz]ations?|improvements?|gains?|speedups?)\s+"
        r"(?:is|are|seems?|looks?)\s+(?:not\s+possible|impossible|unlikely|out\s+of\s+reach)\b",
        r"\bsqueezed\s+(?:out\s+)?(?:everything|all|every\s+\w+|what(?:ever)?\s+(?:we|i)\s+can)\b",
        # "this is a fundamental limit", "that's the theoretical maximum"
        r"\b(?:is|are|'s|'re|was)\s+(?:a\s+|the\s+)?(?:hard|fundamental|physical|hardware|"
        r"theoretical|real)\s+(?:limit|ceiling|bound|wall|maximum|peak)\b",
        # "this is optimal", "is already near-optimal", "looks essentially optimal"
        rf"\b(?:is|are|'s|'re|was|looks|seems|appears|be)\s+{_ADVERBS}"
        r"(?:near[- ]?|close\s+to\s+)?optimal\b",
        # "this is the best we can do", "as fast as it can get", "as good as it gets"
        rf"\b(?:is|are|'s|'re)\s+{_ADVERBS}(?:the\s+|as\s+)?(?:best|fastest|good|fast)\s+"
        r"(?:as\s+(?:it|this|we)\s+(?:gets|can\s+get|will\s+get|can\s+go|can\s+be)|"
        r"possible|achievable|attainable|(?:we|i|anyone|one)\s+can\s+(?:do|get|hope\s+for|achieve))",
        # "cannot go further", "can't make it any faster", "unable to improve further"
        r"\b(?:cannot|can't|can\s+not|couldn't|could\s+not|won't|will\s+not|unable\s+to|"
        r"impossible\s+to)\s+(?:\w+\s+){0,2}?(?:go|get|push|make|squeeze|improve|optimi[sz]e|"
        r"speed|gain|do)\b(?:\s+[\w']+){0,3}?\s+(?:further|faster|quicker|better|more)\b",
        # "no further improvement is possible", "no more headroom"
        r"\bno\s+(?:more\s+|further\s+|remaining\s+)?(?:headroom|room\s+(?:left|for\s+"
        r"improvement|to\s+improve))\b",
        r"\bno\s+(?:more|further)\s+(?:\w+\s+)?(?:gains?|improvements?|speedups?|"
        r"optimi[sz]ations?)\s+(?:is\s+|are\s+)?(?:possible|available|achievable|left|"
        r"remaining|to\s+be\s+(?:had|gained|found))\b",
        # "nothing more to gain", "nothing left to optimize", "nothing more can be done"
        r"\bnothing\s+(?:more|else|left|further)\s+(?:\w+\s+)?(?:to|can|could)\s+(?:be\s+)?"
        r"(?:gain(?:ed)?|squeeze[d]?|optimi[sz]ed?|improved?|win|won)\b",
        r"\bnothing\s+(?:more|else|further)\s+(?:can|could)\s+be\s+done\b",
        # "we are saturating memory bandwidth"
        r"\bsaturat(?:e|es|ed|ing)\s+(?:the\s+)?(?:[\w/-]+\s+){0,2}?(?:bandwidth|memory|"
        r"compute|hbm|dram|tensor\s+cores?|hardware|machine|gpu)\b",
        r"\bdiminishing\s+returns\b",
    )
)

# Being bound by a resource is a diagnosis, not yet a claim: it becomes one only together with
# a word of finality ("memory-bound, so nothing more can be gained", "fully compute-bound").
_BOUND_PATTERN: Final = re.compile(
    rf"\b(?:{_BOUND_BY}|tensor[- ]core|flops?|issue|instruction)[- ]bound\b"
    rf"|\b(?:bound|limited)\s+by\s+(?:the\s+)?(?:{_BOUND_BY})\b"
)
_FINALITY: Final = re.compile(
    r"\b(?:nothing|no\s+(?:more|further|room|headroom)|cannot|can't|can\s+not|won't|"
    r"impossible|fully|entirely|completely|purely|fundamentally|limit|ceiling|peak|optimal|"
    r"as\s+fast)\b"
)

_NEGATORS: Final = frozenset(
    {"not", "no", "never", "nowhere", "far", "without", "hardly", "yet", "below", "short"}
)
_CONDITIONALS: Final = frozenset(
    {
        "if",
        "whether",
        "unless",
        "once",
        "until",
        "when",
        "whenever",
        "before",
        "assuming",
        "suppose",
        "supposing",
        "hypothetically",
        "check",
        "checking",
        "see",
        "verify",
    }
)
_CLAUSE_BREAK: Final = re.compile(r"[,;:()]|\bbut\b|\bhowever\b|\balthough\b|\bthough\b")
# The same words in another sense: loop bounds, budgets, sizes, memory usage, a row's maximum.
_OTHER_SENSE: Final = re.compile(
    r"\b(?:loop|iteration|index|array|range|rate|time|token|context|recursion|retry|register|"
    r"size|count|trip|upper|lower)[- ]limits?\b"
    r"|\blimits?\s+(?:of|on|for)\s+(?:the\s+)?(?:loop|array|range|index|iterations?|buffer|row|"
    r"column|count|grid|block|number|tokens?|budget|time)\b"
    r"|\bpeak\s+(?:memory\s+)?(?:usage|allocation|footprint|rss)\b"
    r"|\bpeak\s+at\b"
    r"|\bmax(?:imum)?\s+(?:\w+\s+)?(?:size|count|number|width|depth|length)\b"
    r"|\bmaximum\s+(?:value|element|index|of\s+(?:the\s+)?(?:row|array|column|block|scores?))\b"
    r"|\bwall[- ]?(?:clock|time)\b"
    r"|\bmore\s+(?:information|info|details?|output|context|insight|evidence|logs?)\b"
    r"|\b(?:time|turn|token|cost|eval(?:uation)?s?)\s+budget\b"
)
_HOLD_ON: Final = re.compile(r"^\s*(?:[\w']+\s+){0,3}?(?:without|until|unless|before|if)\b")
_CODE: Final = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n+")


def find_limit_claim(text: str) -> str | None:
    """The first sentence of ``text`` that claims the kernel cannot get faster, or None."""
    prose = _CODE.sub(" ", text.replace("’", "'").replace("‘", "'"))
    for raw in _SENTENCE_END.split(prose):
        sentence = raw.strip().lstrip("-*> ").strip()
        if not sentence or sentence.endswith("?"):
            continue
        lowered = " ".join(sentence.lower().split())
        if _sentence_claims_limit(lowered):
            return sentence
    return None


def _sentence_claims_limit(sentence: str) -> bool:
    other_senses = [m.span() for m in _OTHER_SENSE.finditer(sentence)]
    for pattern in _CLAIM_PATTERNS:
        for match in pattern.finditer(sentence):
            if _stands(sentence, match, other_senses):
                return True
    for match in _BOUND_PATTERN.finditer(sentence):
        if _FINALITY.search(sentence) and _stands(sentence, match, other_senses):
            return True
    return False


def _stands(sentence: str, match: re.Match[str], other_senses: list[tuple[int, int]]) -> bool:
    """Whether a match is an assertion: not negated, not conditional, not another sense."""
    start, end = match.span()
    if any(s < end and start < e for s, e in other_senses):
        return False
    clause = _CLAUSE_BREAK.split(sentence[:start])[-1]
    words = re.findall(r"[\w']+", clause)
    if any(word in _CONDITIONALS for word in words):
        return False
    if any(word in _NEGATORS or word.endswith("n't") for word in words[-4:]):
        return False
    return not _HOLD_ON.match(sentence[end:])
