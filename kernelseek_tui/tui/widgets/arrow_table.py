"""A virtual table over any ``pyarrow.Table``: only the rows on screen are ever formatted.

The line API draws a header line, the visible rows and a status line ("N rows"). Rows are
turned into text a block at a time (a zero-copy slice, one ``to_pylist`` per column) and the
blocks kept in a small LRU cache, so opening and moving through 100k rows costs the same as
through a hundred. Column widths come from a sample of the rows, not from all of them.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import OrderedDict
from typing import Any, ClassVar, Final

import pyarrow as pa
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

NULL: Final = "∅"
MAX_COLUMN_WIDTH: Final = 48
SEPARATOR: Final = "  "
_BLOCK_ROWS: Final = 256
_CACHED_BLOCKS: Final = 32
_SAMPLE_HEAD: Final = 500
_SAMPLE_TAIL: Final = 100
_MAX_CELL_CHARS: Final = 400  # longer text is cut before it is cached: the column shows less

# A formatted cell: its text, and whether the value was null (drawn dim).
_Cell = tuple[str, bool]


class ArrowTable(ScrollView, can_focus=True):
    """Any Arrow table, virtually: a cursor row, vim keys, horizontal scroll by column."""

    DEFAULT_CSS = """
    ArrowTable {
        height: 1fr;
    }
    ArrowTable > .arrow-table--header {
        text-style: bold underline;
    }
    ArrowTable > .arrow-table--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
    }
    ArrowTable:focus > .arrow-table--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    ArrowTable > .arrow-table--null {
        color: $text-muted;
    }
    ArrowTable > .arrow-table--status {
        color: $text-muted;
        text-style: italic;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "arrow-table--header",
        "arrow-table--cursor",
        "arrow-table--null",
        "arrow-table--status",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "cursor_down", "Down", show=False, id="arrow_table.down"),
        Binding("k,up", "cursor_up", "Up", show=False, id="arrow_table.up"),
        Binding("g,home", "cursor_top", "Top", show=False, id="arrow_table.top"),
        Binding("G,end", "cursor_bottom", "Bottom", show=False, id="arrow_table.bottom"),
        Binding("pagedown", "page_down", "Page down", show=False, id="arrow_table.page_down"),
        Binding("pageup", "page_up", "Page up", show=False, id="arrow_table.page_up"),
        Binding("l,right", "column_right", "Scroll right", show=False, id="arrow_table.right"),
        Binding("h,left", "column_left", "Scroll left", show=False, id="arrow_table.left"),
    ]

    def __init__(
        self,
        table: pa.Table | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.table: pa.Table = pa.table({})
        self.note = ""
        self.cursor_row = 0
        self._widths: list[int] = []
        self._right_aligned: list[bool] = []
        self._column_starts: list[int] = []
        self._blocks: OrderedDict[int, list[list[_Cell]]] = OrderedDict()
        self.set_table(table if table is not None else pa.table({}))

    # -- public ----------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return self.table.num_rows

    def set_table(self, table: pa.Table, note: str = "") -> None:
        """Show ``table`` from its first row; ``note`` joins the status line (e.g. "12 ms")."""
        self.table = table
        self.note = note
        self.cursor_row = 0
        self._blocks.clear()
        self._measure()
        self.virtual_size = Size(self._total_width(), table.num_rows + 2)
        if self.is_mounted:
            self.scroll_to(0, 0, animate=False, immediate=True)
            self.refresh()

    def move_cursor(self, row: int) -> None:
        """Put the cursor on ``row`` (clamped) and scroll it into view."""
        if self.row_count == 0:
            self.cursor_row = 0
            return
        row = max(0, min(row, self.row_count - 1))
        if row == self.cursor_row:
            return
        self.cursor_row = row
        top = round(self.scroll_y)
        rows_shown = self._rows_shown()
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + rows_shown:
            self.scroll_to(y=row - rows_shown + 1, animate=False, immediate=True)
        self.refresh()

    def row_values(self, row: int) -> dict[str, Any]:
        """The row's values as Python objects (one row is converted, not the table)."""
        return self.table.slice(row, 1).to_pylist()[0]

    def cell_text(self, row: int, column: int) -> str:
        """How a cell is shown (before it is cut to the column width)."""
        return self._row(row)[column][0]

    # -- actions ---------------------------------------------------------------------------

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_top(self) -> None:
        self.move_cursor(0)

    def action_cursor_bottom(self) -> None:
        self.move_cursor(self.row_count - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + self._rows_shown())

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - self._rows_shown())

    def action_column_right(self) -> None:
        x = round(self.scroll_x)
        later = [start for start in self._column_starts if start > x]
        if later:
            self.scroll_to(x=later[0], animate=False, immediate=True)

    def action_column_left(self) -> None:
        x = round(self.scroll_x)
        earlier = [start for start in self._column_starts if start < x]
        self.scroll_to(x=earlier[-1] if earlier else 0, animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        # A click on a data row puts the cursor there (the keys do everything a click does).
        offset = event.get_content_offset(self)
        if offset is not None and 0 < offset.y < self.scrollable_content_region.height - 1:
            self.move_cursor(round(self.scroll_y) + offset.y - 1)

    # -- the line API ----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("arrow-table--header")
            return self._crop(self._header_segments(header), width, base)
        if y == self.scrollable_content_region.height - 1:
            status = self.get_component_rich_style("arrow-table--status")
            return Strip([Segment(self._status_text(), status)]).adjust_cell_length(width, base)
        row = round(self.scroll_y) + y - 1
        if row >= self.row_count:
            return Strip.blank(width, base)
        style = base
        if row == self.cursor_row:
            style = base + self.get_component_rich_style("arrow-table--cursor")
        null_style = style + self.get_component_rich_style("arrow-table--null", partial=True)
        return self._crop(self._row_segments(row, style, null_style), width, style)

    def _crop(self, segments: list[Segment], width: int, fill: Style) -> Strip:
        x = round(self.scroll_x)
        return Strip(segments).crop(x, x + width).adjust_cell_length(width, fill)

    def _header_segments(self, style: Style) -> list[Segment]:
        cells = [
            _fit(name, width, right)
            for name, width, right in zip(
                self.table.column_names, self._widths, self._right_aligned, strict=True
            )
        ]
        return [Segment(SEPARATOR.join(cells), style)]

    def _row_segments(self, row: int, style: Style, null_style: Style) -> list[Segment]:
        segments: list[Segment] = []
        for index, ((text, is_null), width, right) in enumerate(
            zip(self._row(row), self._widths, self._right_aligned, strict=True)
        ):
            if index:
                segments.append(Segment(SEPARATOR, style))
            segments.append(Segment(_fit(text, width, right), null_style if is_null else style))
        return segments

    def _status_text(self) -> str:
        rows = self.row_count
        text = f"{rows:,} row" + ("" if rows == 1 else "s")
        if rows:
            text += f"  row {self.cursor_row + 1:,}"
        if self.table.num_columns:
            text += f"  {self.table.num_columns} columns"
        if self.note:
            text += f"  {self.note}"
        return text

    def _rows_shown(self) -> int:
        return max(1, self.scrollable_content_region.height - 2)

    # -- formatting, a block at a time -----------------------------------------------------

    def _row(self, row: int) -> list[_Cell]:
        block_index, offset = divmod(row, _BLOCK_ROWS)
        block = self._blocks.get(block_index)
        if block is None:
            block = self._format_block(block_index * _BLOCK_ROWS, _BLOCK_ROWS)
            self._blocks[block_index] = block
            if len(self._blocks) > _CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end(block_index)
        return block[offset]

    def _format_block(self, start: int, length: int) -> list[list[_Cell]]:
        chunk = self.table.slice(start, length)
        columns = [
            [(_format_value(v), v is None) for v in chunk.column(i).to_pylist()]
            for i in range(chunk.num_columns)
        ]
        return [list(cells) for cells in zip(*columns, strict=True)] if columns else []

    def _measure(self) -> None:
        """Column widths from the header and a sample of rows; numbers right-aligned."""
        table = self.table
        self._right_aligned = [
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            for t in table.schema.types
        ]
        head = self._format_block(0, _SAMPLE_HEAD)
        tail_start = max(_SAMPLE_HEAD, table.num_rows - _SAMPLE_TAIL)
        sample = head + self._format_block(tail_start, _SAMPLE_TAIL)
        self._widths = []
        for index, name in enumerate(table.column_names):
            widest = max((cell_len(row[index][0]) for row in sample), default=0)
            self._widths.append(max(1, min(MAX_COLUMN_WIDTH, max(cell_len(name), widest))))
        self._column_starts = []
        x = 0
        for width in self._widths:
            self._column_starts.append(x)
            x += width + len(SEPARATOR)

    def _total_width(self) -> int:
        if not self._widths:
            return 0
        return sum(self._widths) + len(SEPARATOR) * (len(self._widths) - 1)


def _fit(text: str, width: int, right: bool) -> str:
    """``text`` in exactly ``width`` cells: cut with an ellipsis, padded to its alignment."""
    length = cell_len(text)
    if length > width:
        return set_cell_size(text, width - 1) + "…"
    padding = " " * (width - length)
    return padding + text if right else text + padding


def _format_value(value: Any) -> str:
    """One cell's text: short, on one line, the same for the same value everywhere."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return format(value, ".6g")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _one_line(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value[:32]).hex() + ("…" if len(value) > 32 else "")
    if isinstance(value, (list, dict)):
        return _one_line(json.dumps(value, default=str, ensure_ascii=False))
    return _one_line(str(value))


def _one_line(text: str) -> str:
    text = text[:_MAX_CELL_CHARS]
    return text.replace("\r\n", "↵").replace("\n", "↵").replace("\t", " ").replace("\r", "↵")
