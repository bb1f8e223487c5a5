"""One event in full: its fields, the whole text, tool input and attrs; for an evaluation,
its per-scenario table (read from its full result in a worker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kernelseek_tui.browse.event_detail import scenario_table
from kernelseek_tui.evaluate.result import EvalResult


class EventDetailScreen(ModalScreen[None]):
    """A scrollable modal over the app; escape or q closes it."""

    DEFAULT_CSS = """
    EventDetailScreen {
        align: center middle;
    }
    EventDetailScreen > #event-detail-frame {
        width: 94%;
        height: 90%;
        border: round $accent;
        background: $surface;
    }
    EventDetailScreen #event-detail-title {
        height: 1;
        text-style: bold;
        padding: 0 1;
    }
    EventDetailScreen #event-detail-body {
        height: 1fr;
        padding: 0 1;
    }
    EventDetailScreen #event-detail-hint {
        height: 1;
        color: $text-muted;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="event_detail.close"),
        Binding("j,down", "scroll_body(1)", "Down", show=False, id="event_detail.down"),
        Binding("k,up", "scroll_body(-1)", "Up", show=False, id="event_detail.up"),
        Binding("g,home", "body_home", "Top", show=False, id="event_detail.top"),
        Binding("G,end", "body_end", "Bottom", show=False, id="event_detail.bottom"),
        Binding("pagedown,space", "body_page(1)", "Page down", show=False),
        Binding("pageup", "body_page(-1)", "Page up", show=False),
    ]

    def __init__(
        self,
        detail: str,
        title: str = "",
        load_result: Callable[[], EvalResult | None] | None = None,
    ) -> None:
        super().__init__()
        self.detail = detail
        self.title_text = title
        self._load_result = load_result
        self.scenarios: str | None = None  # the table shown, once loaded

    def compose(self) -> ComposeResult:
        with Vertical(id="event-detail-frame"):
            yield Static(Text(self.title_text or "event", no_wrap=True), id="event-detail-title")
            with VerticalScroll(id="event-detail-body"):
                # Text, not markup: tool output is full of brackets that markup would eat.
                yield Static(Text(self.detail), id="event-detail-text")
            yield Static("j/k scroll · g/G top/bottom · escape/q close", id="event-detail-hint")

    def on_mount(self) -> None:
        self.query_one("#event-detail-body", VerticalScroll).focus()
        if self._load_result is not None:
            self._read_result(self._load_result)

    @work(thread=True, exclusive=True, group="event-detail")
    def _read_result(self, load: Callable[[], EvalResult | None]) -> None:
        result = load()
        if result is not None and result.scenarios:
            self.app.call_from_thread(self._show_scenarios, scenario_table(result))

    def _show_scenarios(self, table: str) -> None:
        self.scenarios = table
        # First: what an evaluation found is what one opens its detail for.
        title = "── scenarios " + "─" * 48
        self.body.mount(
            Static(Text(f"{title}\n{table}\n"), id="event-detail-scenarios"),
            before="#event-detail-text",
        )

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#event-detail-body", VerticalScroll)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_scroll_body(self, lines: int) -> None:
        self.body.scroll_relative(y=lines, animate=False)

    def action_body_page(self, pages: int) -> None:
        body = self.body
        page = max(1, body.scrollable_content_region.height - 1)
        body.scroll_relative(y=pages * page, animate=False)

    def action_body_home(self) -> None:
        self.body.scroll_home(animate=False)

    def action_body_end(self) -> None:
        self.body.scroll_end(animate=False)
