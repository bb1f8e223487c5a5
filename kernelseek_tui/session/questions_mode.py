"""How a session's decision moments are answered: the arm an experiment compares.

- ``repertoire`` (the default): a person attached to the session may answer within
  ``attach_wait_s``; otherwise the repertoire's top-ranked question answers at once.
- ``person``: every decision moment waits ``attach_wait_s`` for a person's question, attached
  or not; only then does the repertoire answer.
- ``person-then-repertoire``: as ``person`` until the first decision moment nobody answers in
  time; from then on as ``repertoire`` (the person has gone: stop making the agent wait).
- ``off``: the control arm. No decision moment is raised (a finish request ends the session),
  and the agent is not offered ``draw_question``. A question a person types into the inbox is
  still recorded and delivered: the control arm keeps the harness quiet, not the person.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.tools import TOOL_SPECS, ToolSpec

if TYPE_CHECKING:  # the command line imports the mode names; it need not load the trace
    from kernelseek_tui.trace.schema import Event

REPERTOIRE: Final = "repertoire"
PERSON: Final = "person"
PERSON_THEN_REPERTOIRE: Final = "person-then-repertoire"
OFF: Final = "off"
QUESTIONS_MODES: Final = (REPERTOIRE, PERSON, PERSON_THEN_REPERTOIRE, OFF)
DRAW_QUESTION: Final = "draw_question"


def check_questions_mode(mode: str) -> str:
    """``mode`` when it is one of ``QUESTIONS_MODES``, else a KernelseekError naming them."""
    if mode not in QUESTIONS_MODES:
        raise KernelseekError(
            f"unknown questions mode {mode!r}; choose one of {', '.join(QUESTIONS_MODES)}"
        )
    return mode


def raises_questions(mode: str) -> bool:
    """Whether decision moments are raised and answered with a question."""
    return mode != OFF


def offered_tools(mode: str) -> tuple[ToolSpec, ...]:
    """The tools an agent of a session in ``mode`` is offered."""
    if mode == OFF:
        return tuple(spec for spec in TOOL_SPECS if spec.name != DRAW_QUESTION)
    return TOOL_SPECS


def person_wait_s(mode: str, *, attached: bool, attach_wait_s: float, person_gone: bool) -> float:
    """How long a decision moment waits for a person's question before the repertoire answers.

    ``person_gone``: an earlier decision moment of the session went unanswered by a person (it
    ends the person phase of ``person-then-repertoire``).
    """
    if mode == OFF:
        return 0.0
    if mode == PERSON or (mode == PERSON_THEN_REPERTOIRE and not person_gone):
        return attach_wait_s
    return attach_wait_s if attached else 0.0


def waits_while_detached(mode: str, *, person_gone: bool) -> bool:
    """Whether the wait goes on when no person is attached (``person`` modes: a person may
    attach during it)."""
    return mode == PERSON or (mode == PERSON_THEN_REPERTOIRE and not person_gone)


def person_gone(events: Iterable[Event]) -> bool:
    """Whether a decision moment among ``events`` was answered by the repertoire after waiting
    for a person in vain."""
    return any(
        e.kind == "question"
        and e.source == "repertoire"
        and bool(e.attrs_dict().get("waited_s"))
        and bool(e.attrs_dict().get("person_awaited"))
        for e in events
    )
