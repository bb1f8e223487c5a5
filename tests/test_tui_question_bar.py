"""The question bar in a tiny app, driven by keys; and the inbox line a question becomes."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from kernelseek_tui.browse.live import send_question
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.inbox import InboxReader
from kernelseek_tui.tui.messages import QuestionSubmitted
from kernelseek_tui.tui.widgets.question_bar import QuestionBar
from tests.tui_support import settle


def run_async(test: Callable[[], Coroutine[None, None, None]]) -> Callable[[], None]:
    """Run an async Pilot test on its own event loop (no async pytest plugin here)."""

    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())

    return run


SUGGESTIONS = [
    {"id": "measure-first", "text": "What did you measure last, and what did it say?"},
    {"id": "memory-level", "text": "Where does the data wait on its way to the math?"},
    {"id": "limit-pushback", "text": "What would have to be true for that limit to move?"},
]


class BarApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[QuestionSubmitted] = []

    def compose(self) -> ComposeResult:
        yield Static("the panes", id="panes")
        yield QuestionBar(id="bar")

    def on_question_submitted(self, message: QuestionSubmitted) -> None:
        self.asked.append(message)


def _text(app: App[None], selector: str) -> str:
    return str(app.query_one(selector, Static).render())


@run_async
async def test_hidden_until_opened_then_shows_the_moment_and_numbered_suggestions() -> None:
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        assert not bar.display or not bar.is_open
        assert bar.region.height == 0
        bar.open("plateau", SUGGESTIONS, detail="no gain in the last 5 evaluations")
        await pilot.pause()
        assert bar.is_open and bar.region.height > 0
        title = _text(app, "#question-title")
        assert "plateau" in title and "no gain in the last 5 evaluations" in title
        listed = _text(app, "#question-suggestions")
        for number, suggestion in enumerate(SUGGESTIONS, start=1):
            assert f"{number}  {suggestion['text']}" in listed
        assert "1-3 pick" in _text(app, "#question-hint")
        assert not app.query_one("#question-countdown").display


@run_async
async def test_pressing_2_asks_the_second_suggestion_and_closes() -> None:
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        bar.open("plateau", SUGGESTIONS)
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        assert [(m.text, m.question_id, m.trigger) for m in app.asked] == [
            (SUGGESTIONS[1]["text"], "memory-level", "plateau")
        ]
        assert not bar.is_open
        await pilot.press("1")  # a closed bar asks nothing
        await pilot.pause()
        assert len(app.asked) == 1


@run_async
async def test_a_number_without_a_suggestion_is_typed_not_asked() -> None:
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        bar.open("limit_claim", SUGGESTIONS[:2])
        await pilot.pause()
        await pilot.press("7")
        await pilot.pause()
        assert app.asked == [] and bar.is_open


@run_async
async def test_typing_and_enter_asks_the_text_even_with_digits_in_it() -> None:
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        bar.open("plateau", SUGGESTIONS)
        await pilot.pause()
        await pilot.press("enter")  # nothing typed: nothing asked
        await pilot.pause()
        assert app.asked == [] and bar.is_open
        await pilot.press(*"why 2 passes?")
        await pilot.press("enter")
        await pilot.pause()
        assert [(m.text, m.question_id, m.trigger) for m in app.asked] == [
            ("why 2 passes?", None, "plateau")
        ]
        assert not bar.is_open


@run_async
async def test_escape_closes_without_asking_and_gives_the_focus_back() -> None:
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.query_one("#panes", Static)
        panes.can_focus = True
        panes.focus()
        await pilot.pause()
        bar = app.query_one(QuestionBar)
        bar.open("plateau", SUGGESTIONS)
        await pilot.pause()
        assert app.focused is not panes
        await pilot.press(*"half a thought")
        await pilot.press("escape")
        await pilot.pause()
        assert app.asked == []
        assert not bar.is_open and bar.region.height == 0
        assert app.focused is panes
        bar.open("plateau", SUGGESTIONS)  # opened again: the old text is gone
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.asked == []


@run_async
async def test_the_countdown_shows_and_counts_down() -> None:
    # The bar's clock is a stand-in that moves only when told: what is shown follows it, not
    # how long a loaded machine took between two looks (the interval still fires in real time).
    now = [1000.0]
    app = BarApp()
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        bar.clock = lambda: now[0]  # type: ignore[method-assign]
        bar.open("plateau", SUGGESTIONS, wait_s=42)
        await pilot.pause()
        assert _text(app, "#question-countdown") == "the repertoire answers in 42 s"
        now[0] += 1.2
        await pilot.pause(1.2)  # the interval's next tick
        assert _text(app, "#question-countdown") == "the repertoire answers in 41 s"
        bar.open("plateau", SUGGESTIONS, wait_s=0.5)
        now[0] += 1.2
        await pilot.pause(1.2)
        assert _text(app, "#question-countdown") == "the repertoire answers now"


@run_async
async def test_opened_manually_the_suggestions_arrive_from_a_worker() -> None:
    app = BarApp()
    release = threading.Event()

    def loader() -> list[dict[str, str]]:
        release.wait(5)
        return SUGGESTIONS[:2]

    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.query_one(QuestionBar)
        bar.open_manual(loader)
        await pilot.pause()
        assert bar.is_open and "Ask the agent a question" in _text(app, "#question-title")
        assert bar.suggestions == []  # the app did not wait for the ranking
        release.set()
        await settle(pilot, rounds=1, grace_s=0)
        assert "1  " + SUGGESTIONS[0]["text"] in _text(app, "#question-suggestions")
        await pilot.press("1")
        await pilot.pause()
        assert [(m.question_id, m.trigger) for m in app.asked] == [("measure-first", "manual")]


def test_send_question_writes_a_line_the_engine_s_inbox_reader_parses(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    session.mkdir()
    send_question(session, "  What did you measure last?  ", "measure-first", "plateau")
    send_question(session, "why 2 passes?", None, None)
    with pytest.raises(KernelseekError):
        send_question(session, "   ", None, None)
    commands = InboxReader(SessionPaths(session).inbox).read()
    assert [(c.type, c.text, c.question_id, c.source) for c in commands] == [
        ("question", "What did you measure last?", "measure-first", "human"),
        ("question", "why 2 passes?", None, "human"),
    ]
    assert all(c.error is None and c.ts for c in commands)
