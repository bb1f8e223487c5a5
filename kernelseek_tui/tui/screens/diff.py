"""A diff between two commits of a session, coloured, in a modal that escape or q closes.

The diff is computed in a thread worker (``SessionHistory.diff``); the text is shown by a
line-API view that styles only the lines on screen, so a diff of many thousand lines scrolls
as fast as a small one.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history import SessionHistory

_ADDED = Style(color="green")
_REMOVED = Style(color="red")
_HUNK = Style(color="cyan")
_HEADER = Style(bold=True)
_PLAIN = Style()


def line_style(line: str) -> Style:
    """How a line of a unified diff is drawn: + green, - red, @@ cyan, file headers bold."""
    if line.startswith(("+++", "---", "diff --git", "index ")):
        return _HEADER
    if line.startswith("+"):
        return _ADDED
    if line.startswith("-"):
        return _REMOVED
    if line.startswith("@@"):
        return _HUNK
    return _PLAIN


class DiffView(ScrollView, can_focus=True):
    """The diff's lines, virtual: ``render_line`` styles one visible line at a time."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "Bottom", show=False),
        Binding("h,left", "scroll_left", "Left", show=False),
        Binding("l,right", "scroll_right", "Right", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    DiffView {
        height: 1fr;
        width: 1fr;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._lines: list[str] = []

    @property
    def lines(self) -> list[str]:
        return self._lines

    def set_text(self, text: str) -> None:
        """Show this diff text (tabs expanded so columns line up)."""
        self._lines = [line.expandtabs(4) for line in text.splitlines()]
        widest = max((len(line) for line in self._lines), default=0)
        self.virtual_size = Size(widest, len(self._lines))
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def action_top(self) -> None:
        self.scroll_to(y=0, animate=False, immediate=True)

    def action_bottom(self) -> None:
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width)
        line = self._lines[index]
        strip = Strip([Segment(line, line_style(line))], len(line))
        return strip.crop(scroll_x, scroll_x + width).extend_cell_length(width)


class DiffScreen(ModalScreen[None]):
    """``a..b`` of a session's history: a title with both subjects, then the coloured diff."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="diff.close"),
    ]

    DEFAULT_CSS = """
    DiffScreen {
        align: center middle;
    }
    DiffScreen > Vertical {
        width: 95%;
        height: 95%;
        border: round $accent;
        background: $surface;
    }
    DiffScreen #diff-title {
        height: auto;
        padding: 0 1;
        text-style: bold;
    }
    DiffScreen #diff-stats {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def __init__(self, history: SessionHistory, a: str, b: str) -> None:
        super().__init__()
        self._history = history
        self._a = a
        self._b = b
        self.diff_text: str | None = None  # set once the worker is done
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"{self._a[:12]}..{self._b[:12]}", id="diff-title")
            yield Static("computing the diff…", id="diff-stats")
            yield DiffView(id="diff-view")

    def on_mount(self) -> None:
        self.query_one(DiffView).focus()
        self._compute()

    @work(thread=True, exclusive=True, group="diff")
    def _compute(self) -> None:
        history = self._history
        try:
            old, new = history.resolve(self._a), history.resolve(self._b)
            title = f"{old[:10]}..{new[:10]}  {self._subject(old)} → {self._subject(new)}"
            text = history.diff(old, new)
        except KernelseekError as error:
            self.app.call_from_thread(self._show_error, str(error))
            return
        self.app.call_from_thread(self._show, title, text)

    def _subject(self, sha: str) -> str:
        history = self._history
        if sha == history.base_sha:
            return "start of the session"
        candidate = history.candidate_at(sha)
        return candidate.subject if candidate is not None else "before the session"

    def _show(self, title: str, text: str) -> None:
        self.diff_text = text
        self.query_one("#diff-title", Static).update(title)
        lines = text.splitlines()
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        files = sum(1 for x in lines if x.startswith("diff --git"))
        stats = (
            f"{files} file{'s' if files != 1 else ''} changed, +{added} -{removed}"
            if text
            else "no differences"
        )
        self.query_one("#diff-stats", Static).update(f"{stats}   (escape or q closes)")
        self.query_one(DiffView).set_text(text)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.query_one("#diff-stats", Static).update(f"cannot show the diff: {message}")

    def action_close(self) -> None:
        self.dismiss(None)
