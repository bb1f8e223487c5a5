"""Fitting columns and lines into a narrow pane: nothing cut may read as a whole value."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from kernelseek_tui.browse.columns import ELLIPSIS, Column, clip, fit_columns


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        ("best 1.109x", 20, "best 1.109x"),  # fits: unchanged
        ("best 1.109x", 9, "best…"),  # never "best 1.1": the number goes whole
        ("evaluate  objective BLOCK_M=128 BLOCK_N=64", 30, "evaluate  objective…"),
        ("4e1c9a0b77d2", 6, "4e1c9…"),  # one long word: cut inside, but marked
        ("a b", 2, "a…"),
        ("anything", 1, ELLIPSIS),
        ("anything", 0, ""),
        ("日本語テキスト", 5, "日本…"),  # wide characters count two cells
    ],
)
def test_clip_cuts_whole_words_and_marks_the_cut(text: str, width: int, shown: str) -> None:
    assert clip(text, width) == shown
    assert cell_len(clip(text, width)) <= width


def test_clip_never_leaves_a_number_prefix_that_reads_as_a_value() -> None:
    line = "PASS  12/12  1.345x  vs FA3 0.19x  best 1.345x  cand 4e1c9a0"
    for width in range(12, len(line)):
        shown = clip(line, width)
        assert shown.endswith(ELLIPSIS)
        words = shown[:-1].split()
        # every word shown but the last is one of the line's words, whole
        assert all(word in line.split() for word in words[:-1])
        assert not any(word in {"1", "1.3", "1.34", "12/1", "0.1"} for word in words)


COLUMNS = [
    Column("mark", 0),
    Column("n", 1),
    Column("speedup", 2),
    Column("sha", 3),
    Column("question", 4, flexible=True, min_width=8),
]
WIDTHS = {"mark": 1, "n": 2, "speedup": 5, "sha": 10, "question": 40}


def test_fit_keeps_every_column_whole_when_there_is_room() -> None:
    fitted = fit_columns(COLUMNS, WIDTHS, 200, gap=2)
    assert fitted == WIDTHS


def test_fit_drops_low_priority_columns_instead_of_cutting_them() -> None:
    # mark 3 + n 4 + speedup 7 = 14; the sha (12 more) does not fit in 20: it goes whole.
    fitted = fit_columns(COLUMNS, WIDTHS, 20, gap=2)
    assert fitted == {"mark": 1, "n": 2, "speedup": 5}


def test_fit_shortens_only_the_flexible_column_and_keeps_the_order() -> None:
    fitted = fit_columns(COLUMNS, WIDTHS, 50, gap=2)
    assert list(fitted) == ["mark", "n", "speedup", "sha", "question"]
    assert {k: fitted[k] for k in ("mark", "n", "speedup", "sha")} == {
        "mark": 1, "n": 2, "speedup": 5, "sha": 10,
    }  # fmt: skip
    assert fitted["question"] == 50 - (3 + 4 + 7 + 12) - 2
    assert sum(w + 2 for w in fitted.values()) <= 50


def test_fit_always_keeps_the_first_column() -> None:
    assert fit_columns(COLUMNS, WIDTHS, 1, gap=2) == {"mark": 1}
