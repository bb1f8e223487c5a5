"""Fitting table columns and one-line texts into a width without showing a false value.

A cell cut to its first characters reads as a real value: ``1`` for a speedup of 1.345, ``4``
for a sha, ``BLOCK_M=1`` for 128. So a table drops whole columns, lowest priority first, until
the rest fit at their full width; only a column marked ``flexible`` (free text, such as a
question or a scenario name) may be shortened, and then always with an ellipsis. A line of
text that must be cut loses whole words and ends in ``…``.

No Textual here: the panes call this with the width they have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rich.cells import cell_len

ELLIPSIS: Final = "…"
# A cut only backs off to the start of the word it falls in when that keeps this share of
# the width: one very long word (a path, a hash) is cut inside rather than dropped whole.
_KEEP_AT_LEAST: Final = 0.5


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table that may have to fit a narrow pane."""

    key: str
    priority: int  # lower is kept longer
    flexible: bool = False  # may be shortened (with an ellipsis) down to ``min_width``
    min_width: int = 8


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells; a cut one ends in ``…`` and never shows part of a
    word when the words before it fill at least half the width."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    if width == 1:
        return ELLIPSIS
    head = _prefix(text, width - 1)
    if not text[len(head)].isspace():
        # The cut falls inside a word: keep only the whole words before it.
        start = head.rfind(" ") + 1
        if start > 0 and cell_len(head[:start]) >= width * _KEEP_AT_LEAST:
            head = head[:start]
    return head.rstrip() + ELLIPSIS


def _prefix(text: str, cells: int) -> str:
    """The longest start of ``text`` that takes at most ``cells`` cells (wide characters
    count two)."""
    used = 0
    for index, char in enumerate(text):
        used += cell_len(char)
        if used > cells:
            return text[:index]
    return text


def fit_columns(
    columns: Sequence[Column], widths: Mapping[str, int], available: int, *, gap: int
) -> dict[str, int]:
    """The columns that fit in ``available`` cells, in their given order, with their widths.

    ``widths`` is each column's natural width (its widest cell or header); ``gap`` the cells
    each column costs on top of its content (padding, separators). Columns are admitted by
    priority while they fit whole (a flexible one at its ``min_width``); what is left then
    widens the flexible ones up to their natural width. The first column by priority is
    always kept, so a table never has no columns.
    """
    chosen: dict[str, int] = {}
    used = 0
    for column in sorted(columns, key=lambda c: c.priority):
        natural = max(1, widths.get(column.key, 1))
        need = min(natural, column.min_width) if column.flexible else natural
        if chosen and used + need + gap > available:
            continue
        chosen[column.key] = need
        used += need + gap
    for column in columns:
        if column.flexible and column.key in chosen:
            natural = max(1, widths.get(column.key, 1))
            extra = min(natural - chosen[column.key], max(0, available - used))
            chosen[column.key] += extra
            used += extra
    return {column.key: chosen[column.key] for column in columns if column.key in chosen}
