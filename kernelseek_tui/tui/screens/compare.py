"""The compare screen: pick sessions or experiments from an `ls`-like list, see their best
speedup over tool calls (one line per session, a colour per arm) and the per-arm table.

Everything it shows is ``kernelseek compare``'s: the list comes from
``experiment.catalog.comparables``, the numbers from ``experiment.comparison.load_comparison``
(the same table rows, medians and verdicts); the screen only lays them out. Reading the
traces runs in thread workers that post ``CatalogLoaded`` / ``ComparisonReady`` /
``ComparisonFailed`` back; a comparison overtaken by a newer selection is dropped by its run
number.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Final

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, SelectionList, Static
from textual.widgets.selection_list import Selection

from kernelseek_tui.browse.columns import Column
from kernelseek_tui.experiment.catalog import Comparable
from kernelseek_tui.experiment.comparison import Comparison
from kernelseek_tui.tui.widgets.compare_plot import ComparePlot, arm_colour
from kernelseek_tui.tui.widgets.fitted_table import fill_fitted

# The table's columns by priority: a narrow terminal keeps the arm, the session (an id, never
# cut) and its best speedup, then the others in this order, each whole (see browse.columns).
_KEYS: Final = ("arm", "session", "best", "vs_fa3", "at_calls", "calls", "usd", "wall",
                "reach", "questions", "jumps")  # fmt: skip
_FITTED: Final = (
    Column("arm", 0), Column("session", 0), Column("best", 0),
    Column("vs_fa3", 1), Column("at_calls", 2), Column("calls", 3), Column("questions", 3),
    Column("jumps", 4), Column("usd", 5), Column("wall", 6), Column("reach", 7),
)  # fmt: skip
_HEADER_ORDER: Final = (
    "session",
    "best",
    "vs_fa3",
    "at_calls",
    "calls",
    "usd",
    "wall",
    "reach",
    "questions",
    "jumps",
)  # fmt: skip  (Comparison.header()'s order)


class CompareScreen(Screen[None]):
    """Compare sessions under ``traces_root``; ``preselect`` refs are ticked as it opens."""

    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen > #compare-title { height: 1; text-style: bold; }
    CompareScreen #compare-top { height: 1fr; }
    CompareScreen #compare-pick { width: 35%; max-width: 40; height: 1fr; }
    CompareScreen #compare-right { width: 1fr; }
    CompareScreen #compare-plot { height: 1fr; min-height: 8; }
    CompareScreen #compare-verdict { height: auto; max-height: 3; color: $text-muted; }
    CompareScreen > #compare-table { height: auto; max-height: 10; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="compare.back"),
        Binding("ctrl+r", "reload", "Reload", id="compare.reload"),
        Binding("j", "move(1)", "Down", show=False, id="compare.down"),
        Binding("k", "move(-1)", "Up", show=False, id="compare.up"),
        Binding("g", "move_to('first')", "Top", show=False, id="compare.top"),
        Binding("G", "move_to('last')", "Bottom", show=False, id="compare.bottom"),
    ]

    class CatalogLoaded(Message):
        def __init__(self, entries: list[Comparable]) -> None:
            super().__init__()
            self.entries = entries

    class ComparisonReady(Message):
        def __init__(self, run: int, comparison: Comparison | None) -> None:
            super().__init__()
            self.run = run
            self.comparison = comparison

    class ComparisonFailed(Message):
        def __init__(self, run: int, error: str) -> None:
            super().__init__()
            self.run = run
            self.error = error

    def __init__(self, traces_root: Path, *, preselect: list[str] | None = None) -> None:
        super().__init__()
        self.traces_root = Path(traces_root)
        self.preselect = [str(Path(ref)) for ref in preselect or []]
        self.comparison: Comparison | None = None
        self._run = 0

    def compose(self) -> ComposeResult:
        yield Static(f"Compare  {self.traces_root}", id="compare-title")
        with Horizontal(id="compare-top"):
            yield SelectionList[str](id="compare-pick")
            with Vertical(id="compare-right"):
                yield ComparePlot(id="compare-plot")
                yield Static("", id="compare-verdict")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-pick").border_title = "space: pick"
        self.query_one(ComparePlot).show(None)
        self.query_one("#compare-pick").focus()
        self._load_catalog()

    # -- the list -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="compare-catalog", exit_on_error=False)
    def _load_catalog(self) -> None:
        from kernelseek_tui.experiment.catalog import comparables

        self.post_message(self.CatalogLoaded(comparables(self.traces_root)))

    def on_compare_screen_catalog_loaded(self, message: CatalogLoaded) -> None:
        picker: SelectionList[str] = self.query_one("#compare-pick", SelectionList)
        ticked = set(picker.selected) or set(self.preselect)
        picker.clear_options()
        picker.add_options([Selection(_label(e), e.key, e.key in ticked) for e in message.entries])
        if not message.entries:
            self._say(Text(f"nothing to compare under {self.traces_root}", style="yellow"))
        self._compare()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        self._compare()

    # -- the comparison -------------------------------------------------------------------

    def _compare(self) -> None:
        picker: SelectionList[str] = self.query_one("#compare-pick", SelectionList)
        self._run += 1
        self._compare_worker(self._run, list(picker.selected))

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _compare_worker(self, run: int, refs: list[str]) -> None:
        from kernelseek_tui.errors import KernelseekError
        from kernelseek_tui.experiment.comparison import load_comparison

        if not refs:
            self.post_message(self.ComparisonReady(run, None))
            return
        try:
            comparison = load_comparison(self.traces_root, refs)
        except (KernelseekError, OSError, ValueError) as error:
            self.post_message(self.ComparisonFailed(run, str(error)))
            return
        self.post_message(self.ComparisonReady(run, comparison))

    def on_compare_screen_comparison_ready(self, message: ComparisonReady) -> None:
        if message.run != self._run:
            return  # a newer selection is on its way
        self.comparison = message.comparison
        self.query_one(ComparePlot).show(message.comparison)
        self._fill_table()
        if message.comparison is None:
            self._say(Text("pick sessions or an experiment with space", style="dim"))
            return
        lines = [v.sentence() for v in message.comparison.verdicts()]
        if len(message.comparison.arms) < 2:
            lines.append("one arm only: nothing to set it against")
        self._say(Text("\n".join(lines)))

    def on_compare_screen_comparison_failed(self, message: ComparisonFailed) -> None:
        if message.run == self._run:
            self._say(Text(message.error, style="red"))

    def _fill_table(self) -> None:
        table: DataTable[Text] = self.query_one("#compare-table", DataTable)
        comparison = self.comparison
        if comparison is None:
            table.clear(columns=True)
            return
        titles = dict(zip(_HEADER_ORDER, comparison.header(), strict=True))
        headers = {"arm": Text("ARM"), **{k: Text(v) for k, v in titles.items()}}
        rows = []
        for index, arm in enumerate(comparison.arms):
            colour = arm_colour(index)
            for number, cells in enumerate(comparison.arm_rows(arm)):
                style = "bold" if number == len(comparison.arms[arm]) else ""  # the medians
                values = {"arm": Text(arm, style=f"bold {_rich_colour(colour)}")}
                values.update(
                    {k: Text(v, style=style) for k, v in zip(_HEADER_ORDER, cells, strict=True)}
                )
                rows.append((f"{arm}/{number}", values))
        fill_fitted(table, _FITTED, headers, rows, self.size.width)

    def on_resize(self) -> None:
        self._fill_table()

    def _say(self, text: Text) -> None:
        self.query_one("#compare-verdict", Static).update(text)

    # -- actions --------------------------------------------------------------------------

    def action_back(self) -> None:
        self.dismiss()  # the app's own screen again, or, on its own, the end of the app

    def action_reload(self) -> None:
        self._load_catalog()

    def action_move(self, step: int) -> None:
        picker: SelectionList[str] = self.query_one("#compare-pick", SelectionList)
        if step > 0:
            picker.action_cursor_down()
        else:
            picker.action_cursor_up()

    def action_move_to(self, where: str) -> None:
        picker: SelectionList[str] = self.query_one("#compare-pick", SelectionList)
        if where == "first":
            picker.action_first()
        else:
            picker.action_last()


def _label(entry: Comparable) -> Text:
    """One line of the list, as `ls` shows it: an experiment, then its sessions indented."""
    if entry.kind == "experiment":
        return Text.assemble(
            (entry.name, "bold"), (f"  {entry.sessions} sessions, {entry.status}", "dim")
        )
    best = f"{entry.best_speedup:.2f}x" if entry.best_speedup is not None else "-"
    indent = "  " if entry.experiment else ""
    # The number first, at a fixed width: a narrow list cuts the end of a line, and a number
    # cut to its first digit would read as another. A finished session says nothing more.
    status = "" if entry.status == "finished" else f"  {entry.status}"
    return Text.assemble(
        indent, (f"{best:>6}  ", "green"), entry.name, (f"  {entry.arm}", "cyan"),
        (status, "yellow"),
    )  # fmt: skip


def _rich_colour(plotext_colour: str) -> str:
    # Rich has no "orange"; the rest of plotext's names are Rich's too.
    return "dark_orange" if plotext_colour == "orange" else plotext_colour
