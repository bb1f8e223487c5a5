"""The benchmark pane: one evaluation's scenarios as a sortable table under its geomeans."""

from __future__ import annotations

from typing import ClassVar, Final

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import DataTable, Static

from kernelseek_tui.browse.benchmark import (
    SORT_KEYS,
    BenchmarkRow,
    BenchmarkSummary,
    fmt,
    rows_of,
    sort_rows,
    summary_of,
)
from kernelseek_tui.browse.columns import Column
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.tui.widgets.fitted_table import fill_fitted

NO_EVALUATION: Final = "no evaluation selected"

# (row attribute, header), in the order shown. A narrow pane keeps them by priority, each
# whole: the verdict and speedup first, then the scenario name (shortened with an ellipsis),
# then the other numbers from left to right.
_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("passed", "pass"),
    ("scenario", "scenario"),
    ("speedup", "speedup"),
    ("ratio_fa3", "vs FA3"),
    ("tflops", "TFLOP/s"),
    ("fa3_tflops", "FA3 TFLOP/s"),
    ("ms", "ms"),
    ("max_error", "max err"),
    ("tolerance", "tol"),
)
_PRIORITY: Final = ("passed", "speedup", "scenario")
_FITTED: Final = tuple(
    Column(
        key,
        _PRIORITY.index(key) if key in _PRIORITY else len(_PRIORITY) + index,
        flexible=key == "scenario",
        min_width=10,
    )
    for index, (key, _) in enumerate(_COLUMNS)
)
# What `s` cycles through: the evaluation's order first, then each sortable column.
_SORT_CYCLE: Final[tuple[str | None, ...]] = (None, *SORT_KEYS)
# Bigger is better for these, so sorting by them starts with the biggest first.
_BIGGER_FIRST: Final = frozenset({"speedup", "ratio_fa3", "tflops", "fa3_tflops"})
_FAIL_STYLE: Final = "bold red"
_NOT_REACHED_STYLE: Final = "dim"
_WARN_STYLE: Final = "bold yellow"


class BenchmarkPane(Widget):
    """One evaluation's benchmark table; ``show(result, title)`` fills it, ``None`` clears it."""

    DEFAULT_CSS = """
    BenchmarkPane {
        height: 1fr;
        layout: vertical;
    }
    BenchmarkPane > #benchmark-title {
        text-style: bold;
        height: auto;
    }
    BenchmarkPane > #benchmark-summary {
        height: auto;
        color: $text-muted;
    }
    BenchmarkPane > #benchmark-table {
        height: 1fr;
    }
    BenchmarkPane > #benchmark-reasons {
        height: auto;
        max-height: 4;
        color: $text-error;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", id="benchmark.sort"),
        Binding("r", "reverse_sort", "Reverse", id="benchmark.reverse"),
        Binding("j", "cursor_down", "Down", show=False, id="benchmark.down"),
        Binding("k", "cursor_up", "Up", show=False, id="benchmark.up"),
        Binding("g", "cursor_top", "Top", show=False, id="benchmark.top"),
        Binding("G", "cursor_bottom", "Bottom", show=False, id="benchmark.bottom"),
    ]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.result: EvalResult | None = None
        self.title = ""
        self.summary: BenchmarkSummary | None = None
        self.sort_key: str | None = None
        self.descending = False
        self._all_rows: list[BenchmarkRow] = []
        self.rows: list[BenchmarkRow] = []  # as shown, sorted

    def compose(self) -> ComposeResult:
        yield Static("", id="benchmark-title", markup=False)
        yield Static(NO_EVALUATION, id="benchmark-summary", markup=False)
        table: DataTable[Text] = DataTable(id="benchmark-table", cursor_type="row")
        table.display = False
        yield table
        yield Static("", id="benchmark-reasons", markup=False)

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#benchmark-table", DataTable)

    def focus(self, scroll_visible: bool = True) -> BenchmarkPane:
        """Focus goes to the table inside, where the keys act."""
        self.table.focus(scroll_visible)
        return self

    # -- public ----------------------------------------------------------------------------

    def show(self, result: EvalResult | None, title: str = "") -> None:
        """Show ``result`` (the evaluation of the commit or eval named by ``title``)."""
        self.result = result
        self.title = title
        self.query_one("#benchmark-title", Static).update(title)
        summary_widget = self.query_one("#benchmark-summary", Static)
        if result is None:
            self.summary = None
            self._all_rows = []
            self.rows = []
            summary_widget.update(NO_EVALUATION)
            self.table.display = False
            self.table.clear(columns=True)
            self.query_one("#benchmark-reasons", Static).update("")
            return
        self.summary = summary_of(result)
        summary_widget.update(self._summary_text(self.summary))
        self._all_rows = rows_of(result)
        self.table.display = True
        self._fill(keep_scenario=None)

    @property
    def selected_row(self) -> BenchmarkRow | None:
        """The row under the cursor, or None when the table is empty."""
        if not self.rows:
            return None
        return self.rows[min(max(self.table.cursor_row, 0), len(self.rows) - 1)]

    # -- actions ---------------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        position = _SORT_CYCLE.index(self.sort_key)
        self.sort_key = _SORT_CYCLE[(position + 1) % len(_SORT_CYCLE)]
        self.descending = self.sort_key in _BIGGER_FIRST
        self._resort()

    def action_reverse_sort(self) -> None:
        self.descending = not self.descending
        self._resort()

    def action_cursor_down(self) -> None:
        self.table.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.table.action_cursor_up()

    def action_cursor_top(self) -> None:
        if self.rows:
            self.table.move_cursor(row=0)

    def action_cursor_bottom(self) -> None:
        if self.rows:
            self.table.move_cursor(row=len(self.rows) - 1)

    # -- drawing ---------------------------------------------------------------------------

    def _resort(self) -> None:
        selected = self.selected_row
        self._fill(keep_scenario=selected.scenario if selected else None)

    def _fill(self, keep_scenario: str | None) -> None:
        table = self.table
        self.rows = sort_rows(self._all_rows, self.sort_key, self.descending)
        headers: dict[str, Text] = {}
        for index, (key, header) in enumerate(_COLUMNS):
            label = header
            if key == self.sort_key:
                label += " ▼" if self.descending else " ▲"
            headers[key] = Text(label, justify="left" if index < 2 else "right")
        rows = [
            (str(index), dict(zip((key for key, _ in _COLUMNS), _cells(row), strict=True)))
            for index, row in enumerate(self.rows)
        ]
        fill_fitted(table, _FITTED, headers, rows, self.size.width)
        if keep_scenario is not None:
            for index, row in enumerate(self.rows):
                if row.scenario == keep_scenario:
                    table.move_cursor(row=index)
                    break
        self._show_reasons()

    def on_resize(self) -> None:
        if self.result is not None:
            self._resort()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_reasons()

    def _show_reasons(self) -> None:
        row = self.selected_row
        reasons = self.query_one("#benchmark-reasons", Static)
        if row is None or not row.reasons:
            reasons.update("")
        else:
            reasons.update(f"{row.scenario}: " + "; ".join(row.reasons))

    def _summary_text(self, summary: BenchmarkSummary) -> Text:
        text = Text(summary.line())
        if summary.verdict != "pass":
            text.stylize(_FAIL_STYLE, 0, len(summary.verdict))
        for reason in summary.reasons:
            text.append(f"\n{reason}", style=_FAIL_STYLE)
        for warning in summary.warnings:
            text.append(f"\nwarning: {warning}", style=_WARN_STYLE)
        return text


def _cells(row: BenchmarkRow) -> list[Text]:
    """The row's cells; a failing row is red and marked ✗ and FAIL for those without colour."""
    if row.passed is True:
        mark, status, style = "✓", "pass", ""
    elif row.passed is False:
        mark, status, style = "✗", "FAIL", _FAIL_STYLE
    else:
        mark, status, style = "·", "-", _NOT_REACHED_STYLE
    values = [
        f"{mark} {status}",
        row.scenario,
        fmt(row.speedup, ".3f"),
        fmt(row.ratio_fa3, ".2f"),
        fmt(row.tflops, ".1f"),
        fmt(row.fa3_tflops, ".1f"),
        fmt(row.ms, ".3f"),
        fmt(row.max_error, ".2e"),
        fmt(row.tolerance, ".1e"),
    ]
    return [
        Text(value, style=style, justify="left" if i < 2 else "right")
        for i, value in enumerate(values)
    ]
