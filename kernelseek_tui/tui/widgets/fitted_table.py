"""Filling a ``DataTable`` with only the columns that fit its width, each shown whole.

A DataTable wider than its pane scrolls sideways, and the pane then shows the first digits of
the column at its edge (``1`` for 1.345, ``4`` for a sha) as if that were the value. Here the
lowest-priority columns are left out instead (``browse.columns.fit_columns``), and a flexible
text column is shortened with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

from kernelseek_tui.browse.columns import Column, clip, fit_columns

Row = tuple[str, dict[str, Text]]  # the row's key, its cells by column key


def fill_fitted(
    table: DataTable[Any],
    columns: Sequence[Column],
    headers: dict[str, Text],
    rows: Sequence[Row],
    width: int,
) -> list[str]:
    """Clear ``table`` and fill it with the ``columns`` that fit ``width`` cells; returns the
    keys of the columns shown, in order."""
    natural = {
        column.key: max(
            [cell_len(headers[column.key].plain)]
            + [cell_len(cells[column.key].plain) for _, cells in rows]
        )
        for column in columns
    }
    # Room for a vertical scrollbar whether or not it shows: a column that fits only while
    # the table is short would be cut the moment it grows.
    available = width - table.styles.scrollbar_size_vertical
    widths = fit_columns(columns, natural, available, gap=2 * table.cell_padding)
    table.clear(columns=True)
    for key, cells_width in widths.items():
        table.add_column(_fit(headers[key], cells_width), width=cells_width, key=key)
    for row_key, cells in rows:
        table.add_row(*(_fit(cells[key], w) for key, w in widths.items()), key=row_key)
    return list(widths)


def _fit(text: Text, width: int) -> Text:
    if cell_len(text.plain) <= width:
        return text
    return Text(clip(text.plain, width), style=text.style, justify=text.justify)
