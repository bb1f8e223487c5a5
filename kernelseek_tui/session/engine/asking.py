"""Decision moments and the questions that answer them: a person's, when one is attached and
answers in time, else the repertoire's top-ranked one; plus the agent's own ``draw_question``
and ``finish``."""

from __future__ import annotations

import time
from typing import Any

from kernelseek_tui.decisions import DecisionMoment
from kernelseek_tui.session import inbox
from kernelseek_tui.session.engine.control import POLL_S, ControlMixin
from kernelseek_tui.session.inbox import InboxCommand
from kernelseek_tui.session.questions import SUGGESTIONS
from kernelseek_tui.session.questions_mode import (
    DRAW_QUESTION,
    offered_tools,
    person_gone,
    person_wait_s,
    raises_questions,
    waits_while_detached,
)
from kernelseek_tui.session.tools import ToolError, ToolOutcome, ToolSpec
from kernelseek_tui.trace.schema import Event


class AskingMixin(ControlMixin):
    """Questions, decisions and finish requests."""

    _person_gone: bool | None = None  # see questions_mode.person_gone; read once, then kept

    @property
    def questions_mode(self) -> str:
        return self.config.questions_mode

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the agent is offered: every tool, less ``draw_question`` when off."""
        return offered_tools(self.questions_mode)

    def _is_person_gone(self) -> bool:
        if self._person_gone is None:
            self._person_gone = person_gone(self.past_events)
        return self._person_gone

    def _draw_question(self) -> ToolOutcome:
        if not raises_questions(self.questions_mode):
            raise ToolError(
                f"unknown tool {DRAW_QUESTION!r}: this session offers no questions "
                f"(questions mode {self.questions_mode})"
            )
        ranked = self.desk.rank("manual", self.state.question_ids)
        self._report_desk_problems()
        if not ranked:
            raise ToolError("the repertoire has no question to give")
        question = ranked[0]
        self.ask(
            question.text,
            question_id=question.id,
            source="agent",
            trigger=None,
            deliver=False,
            attrs={"level": question.level, "delivered_in": "tool_result"},
        )
        return ToolOutcome(question.text)

    def _finish(self, reason: str) -> ToolOutcome:
        if self._answer_finish(reason):
            return ToolOutcome("Not finished: the harness has a question for you first.")
        return ToolOutcome("Finishing the session.")

    def request_finish(self, reason: str) -> bool:
        return not self._answer_finish(reason)

    def _answer_finish(self, reason: str) -> bool:
        """A finish request: True when it was answered with a question, else the session ends."""
        moment = self.detector.observe_finish(reason) if self._decisions_enabled else None
        if moment is not None and self.decide(moment):
            return True
        self._request_stop("finish", reason)
        return False

    def observe_text(self, text: str) -> None:
        if self._decisions_enabled and text.strip():
            self.decide(self.detector.observe_assistant_text(text))

    def take_questions(self) -> list[str]:
        taken, self._pending_questions = self._pending_questions, []
        return taken

    def add_question(
        self,
        text: str,
        *,
        question_id: str | None,
        source: str,
        trigger: str | None,
        attrs: dict[str, Any] | None = None,
    ) -> Event:
        return self.ask(text, question_id=question_id, source=source, trigger=trigger, attrs=attrs)

    def decide(self, moment: DecisionMoment | None) -> bool:
        """Record a decision moment and put a question for it; False when none could be found."""
        if moment is None or not raises_questions(self.questions_mode):
            return False
        ranked = self.desk.rank(moment.trigger, self.state.question_ids)
        self._report_desk_problems()
        attached = inbox.is_attached(self.paths.dir, fresh_s=self.config.attached_fresh_s)
        wait = person_wait_s(
            self.questions_mode,
            attached=attached,
            attach_wait_s=self.config.attach_wait_s,
            person_gone=self._is_person_gone(),
        )
        decision = self._append(
            "decision",
            flush=True,
            trigger=moment.trigger,
            text=moment.detail,
            attrs={
                "attached": attached,
                "wait_s": wait,
                "questions_mode": self.questions_mode,
                "suggestions": [{"id": q.id, "text": q.text} for q in ranked[:SUGGESTIONS]],
            },
        )
        return self.answer_decision(decision, ranked, wait)

    def answer_decision(self, decision: Event, ranked: list[Any], wait: float) -> bool:
        """Answer a recorded decision: a person's question within ``wait`` s, else the top
        ranked one. False when there is no question at all."""
        human = self._wait_for_human(wait) if wait > 0 else None
        if human is not None:
            assert human.text is not None
            known = self.desk.lookup(human.question_id)
            self.ask(
                human.text,
                question_id=human.question_id,
                source="human",
                trigger=decision.trigger,
                decision=decision,
                attrs={**human.to_attrs(), **({"level": known.level} if known else {})},
            )
            return True
        if not ranked:
            self.record_error(
                "no question to ask at this decision moment (the repertoire is empty)",
                parent_event_id=decision.event_id,
            )
            return False
        question = ranked[0]
        # A person mode waited for a person who did not come: that ends the person phase of
        # person-then-repertoire (recorded, so a resumed session knows it too).
        awaited = wait > 0 and waits_while_detached(
            self.questions_mode, person_gone=self._is_person_gone()
        )
        if awaited:
            self._person_gone = True
        self.ask(
            question.text,
            question_id=question.id,
            source="repertoire",
            trigger=decision.trigger,
            decision=decision,
            attrs={
                "level": question.level,
                **({"waited_s": wait} if wait else {}),
                **({"person_awaited": True} if awaited else {}),
            },
        )
        return True

    def _wait_for_human(self, wait: float) -> InboxCommand | None:
        deadline = time.monotonic() + wait
        while True:
            self._fill_inbox_queue()
            while self._inbox_queue:
                command = self._inbox_queue.popleft()
                if command.type == inbox.QUESTION:
                    return command
                self._handle_command(command)
            if time.monotonic() >= deadline or self._terminate.is_set():
                return None
            detached = not inbox.is_attached(self.paths.dir, fresh_s=self.config.attached_fresh_s)
            if detached and not waits_while_detached(
                self.questions_mode, person_gone=self._is_person_gone()
            ):
                return None  # the person left: no point waiting out the timeout
            self._sleep(POLL_S)

    def _report_desk_problems(self) -> None:
        for problem in self.desk.problems[self._reported_problems :]:
            self.record_error(problem, attrs={"where": "questions"})
        self._reported_problems = len(self.desk.problems)
