"""The question bar: where a person answers a decision moment of a live session.

Docked at the bottom and hidden until ``open``: it names the moment (its trigger and detail),
numbers the repertoire's suggestions (a number key asks one), takes a question of one's own
(enter asks it), counts down the time before the repertoire answers instead, and closes on
escape without asking anything. Asking posts ``QuestionSubmitted``; the app writes it to the
session's inbox (``browse.live.send_question``).

Number keys pick only while the input is empty, so a typed question may still contain digits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar, Final

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static

from kernelseek_tui.tui.messages import QuestionSubmitted

log = logging.getLogger("kernelseek_tui.tui")

MAX_SUGGESTIONS: Final = 9  # one digit each
MANUAL: Final = "manual"

SuggestionLoader = Callable[[], list[dict[str, Any]]]


class QuestionInput(Input):
    """The bar's text box: a digit typed into it while it is empty picks a suggestion."""

    class Picked(Message):
        """A number key picked suggestion ``number`` (1-based)."""

        def __init__(self, number: int) -> None:
            super().__init__()
            self.number = number

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pick_count = 0

    async def _on_key(self, event: events.Key) -> None:
        character = event.character
        if (
            not self.value
            and character is not None
            and character.isdigit()
            and 1 <= int(character) <= self.pick_count
        ):
            event.stop()
            event.prevent_default()  # the Input's own handler would type the digit
            self.post_message(self.Picked(int(character)))
            return
        await super()._on_key(event)


class QuestionBar(Widget):
    """Ask the live session's agent a question (see the module docstring)."""

    # The countdown's clock (a test may hand an instance one that moves only when told).
    clock: Callable[[], float] = staticmethod(time.monotonic)

    DEFAULT_CSS = """
    QuestionBar {
        dock: bottom;
        height: auto;
        max-height: 16;
        display: none;
        padding: 0 1;
        border-top: solid $accent;
        background: $panel;
    }
    QuestionBar.-open {
        display: block;
    }
    QuestionBar #question-title {
        text-style: bold;
    }
    QuestionBar #question-countdown {
        color: $warning;
    }
    QuestionBar #question-hint {
        color: $text-muted;
    }
    QuestionBar QuestionInput {
        margin: 1 0 0 0;
        background: $boost;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="question.close"),
        *(
            Binding(
                str(n), f"pick({n})", f"Ask suggestion {n}", show=False, id=f"question.pick_{n}"
            )
            for n in range(1, MAX_SUGGESTIONS + 1)
        ),
    ]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.trigger: str | None = None
        self.detail = ""
        self.suggestions: list[dict[str, Any]] = []
        self.wait_s: float | None = None
        self._deadline: float | None = None
        self._countdown_timer: Timer | None = None
        self._focus_before: Widget | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="question-title")
        yield Static(id="question-countdown")
        yield Static(id="question-suggestions")
        yield QuestionInput(
            placeholder="your own question; enter asks it", id="question-input", compact=True
        )
        yield Static(id="question-hint")

    # -- public -------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(
        self,
        trigger: str | None,
        suggestions: list[dict[str, Any]],
        detail: str = "",
        wait_s: float | None = None,
    ) -> None:
        """Show the bar for a decision moment (or ``manual``) and focus its input.

        ``suggestions`` are ``{"id", "text"}`` dicts (the first nine are numbered);
        ``wait_s`` starts a countdown to the moment the repertoire answers instead.
        Opening an open bar replaces what it shows (keeping anything typed).
        """
        self.trigger = trigger
        self.detail = detail
        self.wait_s = wait_s
        self._deadline = self.clock() + wait_s if wait_s is not None else None
        self._set_suggestions(suggestions)
        self._render_title()
        self._render_countdown()
        if self._countdown_timer is not None:
            self._countdown_timer.stop()
            self._countdown_timer = None
        if wait_s is not None:
            self._countdown_timer = self.set_interval(1.0, self._render_countdown)
        if not self.is_open:
            focused = self.screen.focused if self.is_attached else None
            in_bar = focused is not None and self in focused.ancestors_with_self
            self._focus_before = None if in_bar else focused
            self.add_class("-open")
        self.query_one(QuestionInput).focus()

    def open_manual(self, loader: SuggestionLoader | None = None) -> None:
        """Open the bar for a question of one's own (trigger ``manual``).

        ``loader`` returns the suggestions (e.g. ``lambda: live.suggestions_for("manual",
        session_dir=...)``); it reads the trace store, so it runs in a worker thread and the
        suggestions appear when it is done. The input works at once.
        """
        self.open(MANUAL, [])
        if loader is not None:
            self._load_suggestions(loader)

    def close(self) -> None:
        """Hide the bar without asking, and give the focus back to where it was."""
        if self._countdown_timer is not None:
            self._countdown_timer.stop()
            self._countdown_timer = None
        if not self.is_open:
            return
        self.remove_class("-open")
        self.query_one(QuestionInput).value = ""
        self._deadline = None
        before, self._focus_before = self._focus_before, None
        if before is not None and before.is_attached and before.focusable:
            before.focus()
        elif self.is_attached:
            self.screen.set_focus(None)

    def remaining_s(self) -> float | None:
        """Seconds left before the repertoire answers (None without a countdown)."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - self.clock())

    # -- actions and events ---------------------------------------------------------------

    def action_close(self) -> None:
        self.close()

    def action_pick(self, number: int) -> None:
        """Ask suggestion ``number`` (1-based); a number without a suggestion does nothing."""
        if not self.is_open or not 1 <= number <= min(len(self.suggestions), MAX_SUGGESTIONS):
            return
        chosen = self.suggestions[number - 1]
        question_id = chosen.get("id")
        self._submit(str(chosen["text"]), str(question_id) if question_id is not None else None)

    def on_question_input_picked(self, message: QuestionInput.Picked) -> None:
        message.stop()
        self.action_pick(message.number)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        text = message.value.strip()
        if text:
            self._submit(text, None)

    # -- internals --------------------------------------------------------------------------

    def _submit(self, text: str, question_id: str | None) -> None:
        self.post_message(QuestionSubmitted(text, question_id, self.trigger))
        self.close()

    def _set_suggestions(self, suggestions: list[dict[str, Any]]) -> None:
        self.suggestions = [s for s in suggestions if s.get("text")][:MAX_SUGGESTIONS]
        self.query_one(QuestionInput).pick_count = len(self.suggestions)
        lines = Text()
        for number, suggestion in enumerate(self.suggestions, start=1):
            if number > 1:
                lines.append("\n")
            lines.append(f" {number} ", style="bold reverse")
            lines.append(" " + str(suggestion["text"]))
        self.query_one("#question-suggestions", Static).update(lines)
        self.query_one("#question-suggestions", Static).display = bool(self.suggestions)
        count = len(self.suggestions)
        picks = "1 picks the suggestion" if count == 1 else f"1-{count} pick a suggestion"
        hint = ", ".join(
            [*([picks] if count else []), "enter asks what you typed", "escape closes"]
        )
        self.query_one("#question-hint", Static).update(hint)

    def _render_title(self) -> None:
        title = Text()
        if self.trigger == MANUAL or self.trigger is None:
            title.append("Ask the agent a question")
        else:
            title.append("Decision moment: ")
            title.append(self.trigger.replace("_", " "), style="bold")
        if self.detail:
            title.append(" - ")
            title.append(self.detail, style="italic")
        self.query_one("#question-title", Static).update(title)

    def _render_countdown(self) -> None:
        countdown = self.query_one("#question-countdown", Static)
        remaining = self.remaining_s()
        if remaining is None:
            countdown.display = False
            return
        countdown.display = True
        seconds = int(remaining + 0.5)
        if seconds > 0:
            countdown.update(f"the repertoire answers in {seconds} s")
        else:
            countdown.update("the repertoire answers now")
            if self._countdown_timer is not None:
                self._countdown_timer.stop()
                self._countdown_timer = None

    @work(thread=True, exclusive=True, group="question-suggestions")
    def _load_suggestions(self, loader: SuggestionLoader) -> None:
        try:
            suggestions = loader()
        except Exception:  # no suggestions is fine: the input still works
            log.exception("could not rank suggestions for a manual question")
            suggestions = []
        self.app.call_from_thread(self._loaded, suggestions)

    def _loaded(self, suggestions: list[dict[str, Any]]) -> None:
        if self.is_open and self.trigger == MANUAL:
            self._set_suggestions(suggestions)
