"""The History pane: the session's candidate commits, newest first, under the best-speedup
sparkline; diffs of one commit or of two marked ones; a bisect between two marks.

The pane itself takes focus and holds the bindings; the table inside only draws (DataTable
renders just the rows on screen). Git runs in thread workers: the log when loading, the diff
in :class:`DiffScreen`, the bisect's exports and tests in its own worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import DataTable

from kernelseek_tui.browse.columns import Column
from kernelseek_tui.browse.timeline import Timeline
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history import BisectOutcome, BisectProgress, Candidate, SessionHistory
from kernelseek_tui.history.message import one_line
from kernelseek_tui.tui.bisect_runner import (
    NO_EVALUATOR,
    BisectStatus,
    PredicateFactory,
    candidate_label,
    run_bisect,
)
from kernelseek_tui.tui.messages import CandidateSelected
from kernelseek_tui.tui.screens.diff import DiffScreen
from kernelseek_tui.tui.widgets.fitted_table import fill_fitted
from kernelseek_tui.tui.widgets.speedup_plot import SpeedupPlot

MARK = "●"
NEW_BEST = "★"
QUESTION_WIDTH = 36
# What a narrow pane keeps, by priority: which candidate, how fast, which commit; the question
# (free text) is shortened with an ellipsis before anything else goes.
_COLUMNS = (
    Column("mark", 0),
    Column("n", 1),
    Column("seq", 7),
    Column("speedup", 2),
    Column("best", 3),
    Column("vs_fa3", 5),
    Column("passed", 6),
    Column("sha", 4),
    Column("question", 8, flexible=True, min_width=12),
)
_HEADERS = {
    "mark": Text(MARK),
    "n": Text("n"),
    "seq": Text("seq"),
    "speedup": Text("speedup"),
    "best": Text("best"),
    "vs_fa3": Text("vs FA3"),
    "passed": Text("passed"),
    "sha": Text("sha"),
    "question": Text("question"),
}


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One row of the table: a candidate, or the session's start commit (``candidate`` None)."""

    sha: str
    n: int  # 0 for the start commit
    candidate: Candidate | None

    @property
    def eval_seq(self) -> int | None:
        return self.candidate.seq if self.candidate is not None else None

    @property
    def label(self) -> str:
        if self.candidate is None:
            return f"the start commit {self.sha[:10]}"
        return candidate_label(self.candidate)


class CandidateTable(DataTable[Text]):
    """The rows; never focused itself, the pane moves its cursor."""

    can_focus = False


class HistoryPane(Widget, can_focus=True):
    """Candidates newest first (plus the start commit last), the sparkline above them.

    Columns: mark, n, seq, speedup, new best (★), vs FA3, passed/total, short sha, the question
    before it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "diff", "Diff", id="history.diff"),
        Binding("space,m", "mark", "Mark", id="history.mark"),
        Binding("d", "diff_marked", "Diff marked", id="history.diff_marked"),
        Binding("b", "bisect", "Bisect", id="history.bisect"),
        Binding("j,down", "cursor_down", "Down", show=False, id="history.down"),
        Binding("k,up", "cursor_up", "Up", show=False, id="history.up"),
        Binding("g,home", "cursor_top", "Top", show=False, id="history.top"),
        Binding("G,end", "cursor_bottom", "Bottom", show=False, id="history.bottom"),
        Binding("pageup", "page_up", "Page up", show=False, id="history.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="history.page_down"),
    ]

    DEFAULT_CSS = """
    HistoryPane {
        height: 1fr;
        width: 1fr;
        layout: vertical;
    }
    HistoryPane > CandidateTable {
        height: 1fr;
    }
    HistoryPane > BisectStatus {
        color: $text-muted;
    }
    """

    def __init__(
        self,
        *,
        predicate_factory: PredicateFactory | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._predicate_factory = predicate_factory
        self._history: SessionHistory | None = None
        self._timeline: Timeline | None = None
        self._rows: list[HistoryRow] = []
        self._marks: list[str] = []  # shas, in the order they were marked
        self._announced: str | None = None  # the sha last posted (or selected quietly)
        self._pending: tuple[str, str | int] | None = None  # asked for before loading
        self._loading = False
        self._bisecting = False
        self.last_bisect: BisectOutcome | None = None

    def compose(self) -> ComposeResult:
        yield SpeedupPlot(id="history-plot")
        yield BisectStatus("", id="history-status")
        yield CandidateTable(cursor_type="row", zebra_stripes=True, id="history-table")

    # --- public ---------------------------------------------------------------------------

    @property
    def rows(self) -> list[HistoryRow]:
        """The table's rows, newest first, the start commit last."""
        return list(self._rows)

    @property
    def marked(self) -> list[str]:
        """The marked shas (at most two), in the order they were marked."""
        return list(self._marks)

    @property
    def selected(self) -> HistoryRow | None:
        """The row under the cursor."""
        if not self._rows:
            return None
        return self._rows[min(self._table.cursor_row, len(self._rows) - 1)]

    @property
    def selected_sha(self) -> str | None:
        row = self.selected
        return row.sha if row is not None else None

    def load(self, history: SessionHistory | None, timeline: Timeline | None = None) -> None:
        """Show this session's history (None: the session has no git history to show).

        The log is read in a worker; the table fills when it is done.
        """
        self._history = history
        self.set_timeline(timeline)
        if history is None:
            self._fill([])
            self._status.say("no git history for this session", "dim")
            return
        self._loading = True
        self._status.say("reading the history…", "dim")
        self._read_log(history)

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Redraw the sparkline (the app calls this as live events arrive)."""
        self._timeline = timeline
        self.query_one(SpeedupPlot).set_timeline(timeline)

    def reload(self) -> None:
        """Read the log again (a live session committed), keeping the cursor and the marks."""
        if self._history is not None:
            self._read_log(self._history)

    def select_sha(self, sha: str) -> bool:
        """Put the cursor on this commit (a full or abbreviated sha) without announcing it.

        Quiet on purpose: the app calls this to follow the transcript, and a
        ``CandidateSelected`` back would move the transcript in turn. Returns whether it is
        in the table (asked before loading finishes, it is applied once the table fills).
        """
        if not self._rows:
            self._pending = ("sha", sha)
            return False
        for index, row in enumerate(self._rows):
            if row.sha.startswith(sha):
                self._move_to(index, announce=False)
                return True
        return False

    def select_for_eval_seq(self, seq: int) -> bool:
        """Select the candidate committed from the eval at ``seq``, else the nearest earlier
        one (the start commit when none came before); quiet, as :meth:`select_sha`."""
        if not self._rows:
            self._pending = ("seq", seq)
            return False
        index = _row_for_eval_seq(self._rows, seq)
        self._move_to(index, announce=False)
        return True

    # --- loading --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="history-log")
    def _read_log(self, history: SessionHistory) -> None:
        try:
            candidates = history.candidates()
        except KernelseekError as error:
            self.app.call_from_thread(self._log_failed, str(error))
            return
        rows = [HistoryRow(c.sha, c.n, c) for c in candidates]
        rows.append(HistoryRow(history.base_sha, 0, None))
        self.app.call_from_thread(self._fill, rows)

    def _log_failed(self, message: str) -> None:
        self._loading = False
        self._status.say(f"cannot read the history: {message}", "red")

    def _fill(self, rows: list[HistoryRow]) -> None:
        keep = self.selected_sha
        self._rows = rows
        shas = {row.sha for row in rows}
        self._marks = [sha for sha in self._marks if sha in shas]
        self._fit_table()
        if self._loading:
            self._loading = False
            count = len(rows) - 1
            bests = sum(1 for row in rows if row.candidate and row.candidate.new_best)
            status = f"{count} candidate{'s' if count != 1 else ''}"
            if bests:
                status += f", {bests} new best{'s' if bests != 1 else ''} ({NEW_BEST})"
            self._status.say(status, "dim")
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] == "sha":
            self.select_sha(str(pending[1]))
        elif pending is not None:
            self.select_for_eval_seq(int(pending[1]))
        elif keep is not None and keep in shas:
            self.select_sha(keep)
        elif rows:
            self._move_to(0, announce=False)

    def _fit_table(self) -> None:
        """Fill the table with the columns that fit the pane (cursor kept by the caller)."""
        rows = [(row.sha, self._cells(row)) for row in self._rows]
        columns: tuple[Column, ...] = _COLUMNS
        if not any(row.candidate and row.candidate.new_best is not None for row in self._rows):
            # Commits made before the New-Best trailer: an empty column would say "none".
            columns = tuple(column for column in _COLUMNS if column.key != "best")
        fill_fitted(self._table, columns, _HEADERS, rows, self.size.width)

    def on_resize(self) -> None:
        if self._rows:
            keep = self.selected_sha
            self._fit_table()
            if keep is not None:
                self.select_sha(keep)

    def _cells(self, row: HistoryRow) -> dict[str, Text]:
        c = row.candidate
        mark = Text(MARK if row.sha in self._marks else "", style="bold yellow")
        if c is None:
            return {"mark": mark, "n": Text("0"), "seq": Text(""),
                    "speedup": Text("start", style="dim"), "best": Text(""), "vs_fa3": Text(""),
                    "passed": Text(""), "sha": Text(row.sha[:10], style="dim"),
                    "question": Text("")}  # fmt: skip
        question = c.question
        if question is None and self._timeline is not None:
            asked = self._timeline.question_before(c.seq)
            question = asked.text if asked is not None else None
        return {
            "mark": mark,
            "n": Text(str(c.n)),
            "seq": Text(str(c.seq)),
            "speedup": Text(f"{c.speedup:.2f}x" if c.speedup is not None else "-", style="green"),
            "best": Text(NEW_BEST if c.new_best else "", style="bold yellow"),
            "vs_fa3": Text(f"{c.vs_fa3:.2f}" if c.vs_fa3 is not None else "-"),
            "passed": Text(f"{c.passed}/{c.total}", style="" if c.passed == c.total else "red"),
            "sha": Text(c.short_sha, style="cyan"),
            "question": Text(
                _shorten(one_line(question), QUESTION_WIDTH) if question else "", style="magenta"
            ),
        }

    # --- moving ---------------------------------------------------------------------------

    def _move_to(self, index: int, *, announce: bool = True) -> None:
        if not self._rows:
            return
        index = max(0, min(index, len(self._rows) - 1))
        if not announce:
            self._announced = self._rows[index].sha
        self._table.move_cursor(row=index, animate=False)
        if announce:
            self._announce(self._rows[index])

    def _announce(self, row: HistoryRow) -> None:
        if row.sha != self._announced:
            self._announced = row.sha
            self.post_message(CandidateSelected(row.sha, row.eval_seq))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # A mouse click moves the table's cursor too; announce what it landed on.
        event.stop()
        # Stale highlights (the table refilled, a quiet move since) are not the person's doing.
        if event.cursor_row == self._table.cursor_row and event.cursor_row < len(self._rows):
            self._announce(self._rows[event.cursor_row])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()

    def action_cursor_down(self) -> None:
        self._move_to(self._table.cursor_row + 1)

    def action_cursor_up(self) -> None:
        self._move_to(self._table.cursor_row - 1)

    def action_cursor_top(self) -> None:
        self._move_to(0)

    def action_cursor_bottom(self) -> None:
        self._move_to(len(self._rows) - 1)

    def action_page_down(self) -> None:
        self._move_to(self._table.cursor_row + max(1, self._table.size.height - 2))

    def action_page_up(self) -> None:
        self._move_to(self._table.cursor_row - max(1, self._table.size.height - 2))

    # --- diff and marks -------------------------------------------------------------------

    def action_diff(self) -> None:
        """The selected commit against its parent."""
        row = self.selected
        if row is None or self._history is None:
            return
        self.app.push_screen(DiffScreen(self._history, f"{row.sha}^", row.sha))

    def action_mark(self) -> None:
        """Mark or unmark the selected commit; a third mark drops the first one."""
        row = self.selected
        if row is None:
            return
        changed = [row.sha]
        if row.sha in self._marks:
            self._marks.remove(row.sha)
        else:
            if len(self._marks) == 2:
                changed.append(self._marks.pop(0))
            self._marks.append(row.sha)
        for sha in changed:
            text = Text(MARK if sha in self._marks else "", style="bold yellow")
            self._table.update_cell(sha, "mark", text)
        self._status.say(self._marks_summary())

    def action_diff_marked(self) -> None:
        """The older marked commit against the newer one."""
        pair = self._marked_pair()
        if pair is None or self._history is None:
            self._status.say("mark two commits first (space), then d diffs them", "yellow")
            return
        older, newer = pair
        self.app.push_screen(DiffScreen(self._history, older.sha, newer.sha))

    def _marked_pair(self) -> tuple[HistoryRow, HistoryRow] | None:
        if len(self._marks) != 2:
            return None
        by_sha = {row.sha: row for row in self._rows}
        first, second = (by_sha[sha] for sha in self._marks)
        return (first, second) if first.n < second.n else (second, first)

    def _marks_summary(self) -> str:
        if not self._marks:
            return "no marks"
        by_sha = {row.sha: row for row in self._rows}
        names = " and ".join(by_sha[sha].label for sha in self._marks)
        hint = "; d diffs them, b bisects between them" if len(self._marks) == 2 else ""
        return f"marked {names}{hint}"

    # --- bisect ---------------------------------------------------------------------------

    def action_bisect(self) -> None:
        """Bisect between the two marks: the older is good, the newer bad."""
        if self._bisecting:
            self._status.say("a bisect is already running", "yellow")
            return
        pair = self._marked_pair()
        if pair is None or self._history is None:
            self._status.say("mark two commits (space): the older good, the newer bad", "yellow")
            return
        if self._predicate_factory is None:
            self._status.say(NO_EVALUATOR, "yellow")
            return
        older, newer = pair
        self._bisecting = True
        self._status.say(f"bisect: {older.label} is good, {newer.label} is bad…", "bold")
        self._bisect(self._history, self._predicate_factory, older.sha, newer.sha)

    @work(thread=True, exclusive=True, group="history-bisect")
    def _bisect(
        self, history: SessionHistory, factory: PredicateFactory, good: str, bad: str
    ) -> None:
        def progress(step: BisectProgress) -> None:
            self.app.call_from_thread(self._status.show_progress, step)

        try:
            outcome = run_bisect(history, good, bad, factory(), progress)
        except KernelseekError as error:
            self.app.call_from_thread(self._bisect_failed, str(error))
            return
        self.app.call_from_thread(self._bisect_done, outcome)

    def _bisect_done(self, outcome: BisectOutcome) -> None:
        self._bisecting = False
        self.last_bisect = outcome
        self._status.show_outcome(outcome)
        if outcome.first_bad is not None:
            for index, row in enumerate(self._rows):
                if row.sha == outcome.first_bad.sha:
                    self._move_to(index)

    def _bisect_failed(self, message: str) -> None:
        self._bisecting = False
        self._status.say(f"bisect stopped: {message}", "red")

    # --- parts ----------------------------------------------------------------------------

    @property
    def _table(self) -> CandidateTable:
        return self.query_one(CandidateTable)

    @property
    def _status(self) -> BisectStatus:
        return self.query_one(BisectStatus)


def _row_for_eval_seq(rows: list[HistoryRow], seq: int) -> int:
    best_index, best_seq = len(rows) - 1, -1  # the start commit when nothing came before
    for index, row in enumerate(rows):
        row_seq = row.eval_seq
        if row_seq is not None and best_seq < row_seq <= seq:
            best_index, best_seq = index, row_seq
    return best_index


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
