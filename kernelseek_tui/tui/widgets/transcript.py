"""The transcript pane: every event of a session as one line, virtual (only visible lines drawn).

The view holds a ``TranscriptIndex`` and the row indices its filter shows; the cursor is a
position among those rows. Search is a prompt drawn on the view's last line (like ``less``):
``/`` opens it, typing edits it, enter finds the next match, escape closes it, and ``n``/``N``
repeat the last query afterwards.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from typing import ClassVar

import pyarrow as pa
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernelseek_tui.browse.columns import clip
from kernelseek_tui.browse.transcript import FILTERS, TranscriptIndex, filter_spec
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.tui.messages import EventSelected
from kernelseek_tui.tui.screens.event_detail import EventDetailScreen

__all__ = ["FILTER_CYCLE", "TranscriptView"]

# The order ``f`` walks the filters in.
FILTER_CYCLE = ("all", "questions", "evals", "errors")

_LABEL_WIDTH = 8
_CLOCK_STYLE = Style(dim=True)
_CURSOR_STYLE = Style(reverse=True)
_PROMPT_STYLE = Style(bold=True)
_NOTE_STYLE = Style(italic=True)
_EVAL_KINDS = frozenset({"eval"})
# Keys that still move the cursor while the search prompt is open.
_PROMPT_NAVIGATION = {
    "down": "cursor_down",
    "up": "cursor_up",
    "pagedown": "cursor_page(1)",
    "pageup": "cursor_page(-1)",
}


class TranscriptView(ScrollView, can_focus=True):
    """A virtual list of a session's events with a cursor, filters and search."""

    DEFAULT_CSS = """
    TranscriptView {
        overflow-x: hidden;
        overflow-y: auto;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "cursor_down", "Down", show=False, id="transcript.down"),
        Binding("k,up", "cursor_up", "Up", show=False, id="transcript.up"),
        Binding("g,home", "cursor_top", "Top", show=False, id="transcript.top"),
        Binding("G,end", "cursor_bottom", "Bottom", show=False, id="transcript.bottom"),
        Binding("pageup", "cursor_page(-1)", "Page up", show=False, id="transcript.page_up"),
        Binding("pagedown", "cursor_page(1)", "Page down", show=False, id="transcript.page_down"),
        Binding("enter", "detail", "Detail", id="transcript.detail"),
        Binding("slash", "search", "Find", id="transcript.search"),
        Binding("n", "next_match", "Next match", show=False, id="transcript.next_match"),
        Binding("N", "prev_match", "Prev match", show=False, id="transcript.prev_match"),
        Binding("f", "cycle_filter", "Filter", id="transcript.filter"),
        Binding("right_square_bracket", "next_eval", "Next eval", id="transcript.next_eval"),
        Binding("left_square_bracket", "prev_eval", "Prev eval", id="transcript.prev_eval"),
    ]

    def __init__(
        self,
        index: TranscriptIndex | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._index: TranscriptIndex | None = None
        self._rows: list[int] = []
        self._cursor = 0
        self._filter_name = "all"
        self._query = ""
        self._searching = False
        self._buffer = ""
        self._note = ""  # one line of feedback ("no match"), shown in the prompt line
        # seq -> the eval's full result, for the per-scenario table of its detail view.
        self.eval_loader: Callable[[int], EvalResult | None] | None = None
        if index is not None:
            self.set_index(index)

    # -- public -----------------------------------------------------------------------------

    @property
    def index(self) -> TranscriptIndex | None:
        """The index shown, None until the app hands one over."""
        return self._index

    @property
    def selected_seq(self) -> int | None:
        """The ``seq`` of the event under the cursor; None when nothing is shown."""
        row = self.selected_row
        return None if row is None or self._index is None else self._index.seq_at(row)

    @property
    def selected_row(self) -> int | None:
        """The index row under the cursor; None when nothing is shown."""
        return self._rows[self._cursor] if self._rows else None

    @property
    def filter_name(self) -> str:
        """The filter shown: "all", "questions", "evals" or "errors"."""
        return self._filter_name

    @property
    def visible_rows(self) -> list[int]:
        """The index rows the filter shows, in order."""
        return self._rows

    @property
    def search_query(self) -> str:
        """The last search query (what ``n``/``N`` look for)."""
        return self._query

    @property
    def searching(self) -> bool:
        """Whether the search prompt is open."""
        return self._searching

    def set_index(self, index: TranscriptIndex) -> None:
        """Show ``index`` (replacing any), cursor on the first row of the current filter."""
        self._index = index
        self._rows = self._compute_rows()
        self._cursor = 0
        self._rows_changed()
        self.scroll_to(y=0, animate=False, immediate=True)

    def set_filter(self, name: str) -> None:
        """Show only the rows of filter ``name``; the cursor stays on the same event, or the
        nearest earlier one the filter shows."""
        filter_spec(name)  # rejects an unknown name before anything changes
        row = self.selected_row
        self._filter_name = name
        self._rows = self._compute_rows()
        self._cursor = self._position_at_or_before(row) if row is not None else 0
        self._rows_changed()
        self._scroll_to_cursor(center=True)

    def jump_to_seq(self, seq: int, *, announce: bool = False) -> None:
        """Put the cursor on event ``seq`` (or the nearest earlier event shown).

        Programmatic: it posts ``EventSelected`` only when ``announce`` is set, so that the app
        can answer another pane's selection without an echo.
        """
        if self._index is None or not self._rows:
            return
        row = self._index.row_of_seq(seq)
        self._move_to(self._position_at_or_before(row if row is not None else -1), announce)

    def append(self, table: pa.Table) -> None:
        """Add a live batch of events; the cursor stays put, or follows the tail when it was
        on the last row."""
        if table.num_rows == 0:
            return
        if self._index is None:
            self.set_index(TranscriptIndex(table))
            return
        following = not self._rows or self._cursor == len(self._rows) - 1
        first_new = len(self._index)
        self._index.extend(table)
        kinds, errors_only = filter_spec(self._filter_name)
        new_rows = self._index.filtered(kinds, errors_only, start=first_new)
        self._rows.extend(new_rows)
        self._rows_changed()
        if following and self._rows:
            self._cursor = len(self._rows) - 1
            self._scroll_to_cursor()
        self.refresh()

    # -- actions ----------------------------------------------------------------------------

    def action_cursor_down(self) -> None:
        self._move_to(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self._move_to(self._cursor - 1)

    def action_cursor_top(self) -> None:
        self._move_to(0)

    def action_cursor_bottom(self) -> None:
        self._move_to(len(self._rows) - 1)

    def action_cursor_page(self, pages: int) -> None:
        self._move_to(self._cursor + pages * max(1, self._page_height() - 1))

    def action_detail(self) -> None:
        row = self.selected_row
        if row is None or self._index is None:
            return
        loader = None
        if self.eval_loader is not None and self._index.kind_at(row) == "eval":
            loader = partial(self.eval_loader, self._index.seq_at(row))
        detail = EventDetailScreen(self._index.detail(row), self._index.detail_title(row), loader)
        self.app.push_screen(detail)

    def action_search(self) -> None:
        self._searching = True
        self._buffer = ""
        self._note = ""
        self._refresh_prompt()

    def action_next_match(self) -> None:
        self._find(self._query, forward=True)

    def action_prev_match(self) -> None:
        self._find(self._query, forward=False)

    def action_cycle_filter(self) -> None:
        at = FILTER_CYCLE.index(self._filter_name) if self._filter_name in FILTER_CYCLE else -1
        before = self.selected_seq
        self.set_filter(FILTER_CYCLE[(at + 1) % len(FILTER_CYCLE)])
        if self.selected_seq is not None and self.selected_seq != before:
            self._announce()

    def action_next_eval(self) -> None:
        self._jump_to_kind(_EVAL_KINDS, forward=True)

    def action_prev_eval(self) -> None:
        self._jump_to_kind(_EVAL_KINDS, forward=False)

    # -- search prompt ----------------------------------------------------------------------

    async def on_key(self, event: events.Key) -> None:
        if not self._searching:
            return
        # While the prompt is open every key is the prompt's: bindings must not see "j" or "q".
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self._searching = False
            self._note = ""
        elif event.key == "enter":
            if self._buffer:
                self._query = self._buffer
                self._find(self._query, forward=True)
        elif event.key == "backspace":
            self._buffer = self._buffer[:-1]
        elif event.key == "ctrl+u":
            self._buffer = ""
        elif event.key in _PROMPT_NAVIGATION:
            await self.run_action(_PROMPT_NAVIGATION[event.key])
        elif event.is_printable and event.character:
            self._buffer += event.character
        self._refresh_prompt()

    def on_paste(self, event: events.Paste) -> None:
        if self._searching:
            event.stop()
            self._buffer += " ".join(event.text.split())
            self._refresh_prompt()

    def _find(self, query: str, *, forward: bool) -> None:
        if self._index is None or not self._rows:
            return
        if not query:
            self._note = "no search yet: press / to find"
            self._refresh_prompt()
            return
        current = self.selected_row or 0
        start = current + 1 if forward else current - 1
        found = self._index.search(
            query, start, backwards=not forward, rows=self._rows if self._filtering else None
        )
        if found is None:
            self._note = f"no match for {query!r}"
            if self._filter_name != "all":
                self._note += f" in filter {self._filter_name}"
        else:
            matches = self._index.matches(query)
            wrapped = (found <= current) if forward else (found >= current)
            number = bisect_right(matches, found)
            self._note = f"match {number}/{len(matches)}" + (" (wrapped)" if wrapped else "")
            self._move_to(self._position_at_or_before(found))
        self._refresh_prompt()

    # -- rendering --------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        prompt = self._prompt_text()
        if prompt is not None and y == self.scrollable_content_region.height - 1:
            style = _PROMPT_STYLE if self._searching else _NOTE_STYLE
            return Strip([Segment(prompt, style)]).adjust_cell_length(width)
        position = int(self.scroll_offset.y) + y
        if self._index is None or position >= len(self._rows):
            if self._index is None and y == 0:
                return Strip([Segment("loading transcript…", _NOTE_STYLE)]).adjust_cell_length(
                    width
                )
            if self._index is not None and not self._rows and y == 0:
                empty = f"no events match filter {self._filter_name}"
                return Strip([Segment(empty, _NOTE_STYLE)]).adjust_cell_length(width)
            return Strip.blank(width)
        line = self._index.line(self._rows[position])
        base = Style.parse(line.style) if line.style else Style()
        on_cursor = position == self._cursor
        label = line.label.ljust(_LABEL_WIDTH)
        # Cut by words with an ellipsis: a number cut to its first digits would read as real.
        room = width - 3 - cell_len(line.clock) - cell_len(label)
        segments = [
            Segment("▶" if on_cursor else " ", base),
            Segment(line.clock, _CLOCK_STYLE + base if not line.style else base),
            Segment(" ", base),
            Segment(label, base + Style(bold=True)),
            Segment(" ", base),
            Segment(clip(line.summary, room), base),
        ]
        strip = Strip(segments).adjust_cell_length(width, base)
        if on_cursor:
            strip = strip.apply_style(_CURSOR_STYLE)
        return strip

    def _prompt_text(self) -> str | None:
        if self._searching:
            note = f"   {self._note}" if self._note else ""
            return f"/{self._buffer}▏{note}"
        return self._note or None

    def _refresh_prompt(self) -> None:
        self._rows_changed()

    # -- cursor and rows --------------------------------------------------------------------

    @property
    def _filtering(self) -> bool:
        return self._filter_name != "all"

    def _compute_rows(self) -> list[int]:
        if self._index is None:
            return []
        kinds, errors_only = filter_spec(self._filter_name)
        return self._index.filtered(kinds, errors_only)

    def _position_at_or_before(self, row: int) -> int:
        """The cursor position of index row ``row`` or the nearest earlier shown row (else 0)."""
        return max(0, bisect_right(self._rows, row) - 1)

    def _rows_changed(self) -> None:
        # One line more while the prompt shows, so that it never hides the last row.
        extra = 1 if self._prompt_text() is not None else 0
        self.virtual_size = Size(
            max(1, self.scrollable_content_region.width), len(self._rows) + extra
        )
        kinds = self._filter_name
        total = len(self._index) if self._index is not None else 0
        self.border_subtitle = (
            f"{len(self._rows)} events" if kinds == "all" else f"{kinds}: {len(self._rows)}/{total}"
        )
        self.refresh()

    def _page_height(self) -> int:
        height = self.scrollable_content_region.height
        if self._prompt_text() is not None:
            height -= 1
        return max(1, height)

    def _move_to(self, position: int, announce: bool = True) -> None:
        if not self._rows:
            return
        position = max(0, min(len(self._rows) - 1, position))
        if self._note and not self._searching:
            self._note = ""
            self._refresh_prompt()
        if position == self._cursor:
            return
        old = self._cursor
        self._cursor = position
        if not self._scroll_to_cursor():
            top = int(self.scroll_offset.y)
            self.refresh_line(old - top)
            self.refresh_line(position - top)
        if announce:
            self._announce()

    def _scroll_to_cursor(self, *, center: bool = False) -> bool:
        """Scroll so the cursor's line shows; True when the view scrolled."""
        height = self._page_height()
        top = int(self.scroll_offset.y)
        if center and not top <= self._cursor < top + height:
            target = max(0, self._cursor - height // 2)
        elif self._cursor < top:
            target = self._cursor
        elif self._cursor >= top + height:
            target = self._cursor - height + 1
        else:
            return False
        self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()
        return True

    def _jump_to_kind(self, kinds: frozenset[str], *, forward: bool) -> None:
        if self._index is None or not self._rows:
            return
        index = self._index
        step = 1 if forward else -1
        position = self._cursor + step
        while 0 <= position < len(self._rows):
            if index.kind_at(self._rows[position]) in kinds:
                self._move_to(position)
                return
            position += step
        self._note = f"no {'later' if forward else 'earlier'} eval"
        self._refresh_prompt()

    def _announce(self) -> None:
        row = self.selected_row
        if row is None or self._index is None:
            return
        self.post_message(EventSelected(self._index.seq_at(row), self._index.kind_at(row)))

    def on_resize(self, event: events.Resize) -> None:
        self._rows_changed()
        self._scroll_to_cursor()

    def on_click(self, event: events.Click) -> None:
        # The mouse is optional, but a click on a line should select it.
        self._move_to(int(self.scroll_offset.y) + event.y)


assert set(FILTER_CYCLE) == set(FILTERS), "the cycle must cover every filter"
