"""The Textual app: transcript, kernel history and benchmark table side by side.

The app owns the wiring between the panes (the panes know nothing of one another): a cursor
move in the transcript selects the candidate behind it and shows its benchmark; a candidate
picked in the history moves the transcript to the eval that produced it. Everything slow (the
first read, eval results, notes, the live tail) runs in workers and comes back as messages.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.pilot import Pilot
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Static

from kernelseek_tui.browse.session_data import (
    SessionData,
    counts,
    elapsed_s,
    eval_result_at,
    load_session,
    result_from_note,
)
from kernelseek_tui.browse.timeline import Timeline
from kernelseek_tui.browse.transcript import TranscriptIndex
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.tui.bisect_runner import Predicate, PredicateFactory
from kernelseek_tui.tui.keymap import binding_ids, display_keys, load_keymap, split_keymap
from kernelseek_tui.tui.messages import (
    BenchmarkLoaded,
    CandidateSelected,
    EventSelected,
    NewEvents,
    QuestionSubmitted,
    SessionLoaded,
)
from kernelseek_tui.tui.screens.help import HelpScreen
from kernelseek_tui.tui.widgets.benchmark import BenchmarkPane
from kernelseek_tui.tui.widgets.header import SessionHeader
from kernelseek_tui.tui.widgets.history import HistoryPane
from kernelseek_tui.tui.widgets.question_bar import QuestionBar
from kernelseek_tui.tui.widgets.transcript import TranscriptView

if TYPE_CHECKING:
    from kernelseek_tui.browse.live import LiveFollower
    from kernelseek_tui.evaluate.result import EvalResult

PANES = ("transcript", "history", "benchmark")
# Cursor moves belong on keys, not in a palette.
_NOT_IN_PALETTE = {
    f"{pane}.{move}"
    for pane in ("transcript", "history", "benchmark")
    for move in ("down", "up", "top", "bottom", "page_up", "page_down")
}
# Actions that steer a running engine: not offered (footer, palette) when none runs here.
_LIVE_ONLY = frozenset({"ask", "pause", "stop"})
NARROW_BELOW = 120  # columns: under this the panes are tabs, one at a time
SELECTION_DELAY_S = 0.03  # coalesce a burst of cursor moves (key repeat) into one benchmark load


class KernelseekApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "kernelseek"
    ENABLE_COMMAND_PALETTE = True
    # Stopping a session takes ctrl+x twice, the second press within this many seconds.
    STOP_CONFIRM_S = 3.0

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("f2", "show_pane('transcript')", "Transcript", id="app.pane_transcript"),
        Binding("f3", "show_pane('history')", "History", id="app.pane_history"),
        Binding("f4", "show_pane('benchmark')", "Bench", id="app.pane_benchmark"),
        # priority: the screen's own tab (focus next widget) would otherwise win
        Binding("tab", "next_pane", "Next pane", show=False, priority=True, id="app.next_pane"),
        Binding(
            "shift+tab", "next_pane(-1)", "Prev pane", show=False, priority=True, id="app.prev_pane"
        ),
        Binding("z", "zoom", "Zoom pane", id="app.zoom"),
        # f5 opens the query screen on the question this tool exists for; : to type SQL.
        Binding("f5", "query('question-jumps')", "Query", id="app.query"),
        Binding("colon", "query", "SQL", show=False, id="app.sql"),
        Binding("c", "compare", "Compare", show=False, id="app.compare"),
        Binding("a", "ask", "Ask", id="app.ask"),
        Binding("p", "pause", "Pause/resume", id="app.pause"),
        Binding("ctrl+x", "stop", "Stop session", id="app.stop"),
    ]

    def __init__(
        self,
        session_dir: Path,
        *,
        traces_root: Path | None = None,
        live: bool = False,
        predicate_factory: PredicateFactory | None = None,
    ) -> None:
        super().__init__()
        self.session_dir = Path(session_dir)
        self.traces_root = traces_root or self.session_dir.parent
        self.live = live
        self.data: SessionData | None = None
        self.timeline: Timeline | None = None
        self.follower: LiveFollower | None = None
        self._predicate_factory = predicate_factory
        # A bisect's temporary directory (see _bisect_factory).
        self._scratch: TemporaryDirectory[str] | None = None
        self._pane = "transcript"
        self._zoomed = False  # one pane over the whole width, whatever the terminal's size
        # The last cursor move of a burst, applied once the burst is over.
        self._pending_selection: EventSelected | CandidateSelected | None = None
        self._selection_timer: Timer | None = None
        self._asked_for: int | None = None  # the decision seq the bar was opened for
        self._stop_armed = False
        self._steering_shown = False
        self.animation_level = "none"

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield SessionHeader("loading …", id="header")
        yield Static("", id="tabs")
        with Horizontal(id="panes"):
            with Vertical(id="pane-transcript", classes="pane"):
                yield TranscriptView(id="transcript")
            with Vertical(id="pane-history", classes="pane"):
                yield HistoryPane(id="history", predicate_factory=self._bisect_factory())
            with Vertical(id="pane-benchmark", classes="pane"):
                yield BenchmarkPane(id="benchmark")
        yield QuestionBar(id="question-bar")
        yield Footer()

    def on_mount(self) -> None:
        try:
            keymap, problems = split_keymap(load_keymap(), known_binding_ids())
        except KernelseekError as error:
            keymap, problems = {}, [str(error)]
        self.set_keymap(keymap)
        for problem in problems:
            self.notify(problem, severity="error", timeout=10)
        self._apply_width(self.size.width)
        self.query_one(TranscriptView).border_title = "Transcript"
        self.query_one("#pane-history").border_title = "History"
        self.query_one("#pane-benchmark").border_title = "Benchmark"
        self.query_one(TranscriptView).focus()
        self._load()

    def on_resize(self, event: Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        narrow = width < NARROW_BELOW or self._zoomed
        self.set_class(narrow, "-narrow")
        for name in PANES:
            self.query_one(f"#pane-{name}").set_class(name == self._pane, "-active")
        tabs = "   ".join(
            f"[reverse] F{i + 2} {name} [/]" if name == self._pane else f"F{i + 2} {name}"
            for i, name in enumerate(PANES)
        )
        self.query_one("#tabs", Static).update(tabs if narrow else "")

    # -- loading --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load(self) -> None:
        data = load_session(self.session_dir)
        index = TranscriptIndex(data.table)
        timeline = Timeline.from_events(data.table)
        self.post_message(SessionLoaded(data, index, timeline))
        index.prepare_search()  # here, so the first `/` does not wait for every line to render

    def on_session_loaded(self, message: SessionLoaded) -> None:
        data, index, timeline = message.data, message.index, message.timeline
        self.data = data
        self.timeline = timeline
        view = self.query_one(TranscriptView)
        view.set_index(index)
        view.eval_loader = self._eval_result
        history = self.query_one(HistoryPane)
        history.load(data.history, timeline)
        if data.history_problem:
            self.notify(data.history_problem, severity="warning", timeout=8)
        self._refresh_header()
        # Open on the best evaluation (what the session achieved), else the last one.
        opening = timeline.best_eval_seq
        if opening is None:
            opening = _last_seq(data.table, "eval")
        if opening is not None:
            self.query_one(TranscriptView).jump_to_seq(opening)
            self.query_one(HistoryPane).select_for_eval_seq(opening)
            self._select_eval(opening)
        if self.live:
            self._start_follower()
            self.set_interval(1.0, self._refresh_header)
            self._maybe_open_bar()

    def _refresh_header(self) -> None:
        if self.data is None:
            return
        meta = self.data.meta
        note = (meta.extra.get("recorded") if meta else None) or None
        if meta and not note and meta.extra.get("recorded_host"):
            note = f"recorded on host {meta.extra['recorded_host']}"
        headers = self.query(SessionHeader)
        if not headers:
            # Only while the app shuts down: its widgets are gone before the interval stops
            # (a tick then raised NoMatches and failed the exit, seen in a test run).
            return
        headers.first().show(
            session_id=self.data.session_id,
            agent=meta.agent if meta else "imported",
            model=meta.model if meta else None,
            status=self.data.status,
            elapsed_s=elapsed_s(self.data.table, live=self.live and self.data.status == "running"),
            counts=counts(self.data.table),
            note=note,
        )
        if self._steerable() != self._steering_shown:
            self._steering_shown = self._steerable()
            self.refresh_bindings()  # the steering keys come or go with the engine

    # -- live -----------------------------------------------------------------------------

    def _start_follower(self) -> None:
        from kernelseek_tui.browse.live import LiveFollower

        assert self.data is not None

        def deliver(table: pa.Table, meta: dict[str, object] | None) -> None:
            self.post_message(NewEvents(table, meta))  # thread-safe; never blocks the follower

        seqs = self.data.table["seq"]
        self.follower = LiveFollower(
            self.session_dir,
            self.data.wal_offset,
            deliver,
            last_seq=seqs[-1].as_py() if len(seqs) else None,
        )
        self.follower.start()

    def on_new_events(self, message: NewEvents) -> None:
        if self.data is None:
            return
        from kernelseek_tui.session.meta import SessionMeta

        if message.meta:
            self.data.meta = SessionMeta.from_dict(message.meta)
        if message.table.num_rows == 0:
            self._refresh_header()
            return
        self.data.table = pa.concat_tables([self.data.table, message.table])
        self.query_one(TranscriptView).append(message.table)
        self.timeline = Timeline.from_events(self.data.table)
        history = self.query_one(HistoryPane)
        history.set_timeline(self.timeline)
        if "commit" in set(message.table["kind"].to_pylist()):
            history.reload()
        self._refresh_header()
        self._maybe_open_bar()

    def _maybe_open_bar(self) -> None:
        from kernelseek_tui.browse.live import pending_decision

        if self.data is None:
            return
        pending = pending_decision(self.data.table)
        bar = self.query_one(QuestionBar)
        if pending is None or self.data.status not in {"running", "paused"}:
            # answered elsewhere (the repertoire after its wait, another client) or the
            # engine is gone: a bar left open would ask a question nobody waits for
            if bar.is_open and bar.trigger != "manual":
                bar.close()
            return
        if pending.get("seq") == self._asked_for:
            return
        self._asked_for = pending.get("seq")
        self.query_one(QuestionBar).open(
            pending.get("trigger"),
            pending.get("suggestions") or [],
            detail=pending.get("text") or "",
            wait_s=pending.get("remaining_s"),
        )

    def on_question_submitted(self, message: QuestionSubmitted) -> None:
        from kernelseek_tui.browse.live import send_question

        if not self._can_steer("ask"):
            return
        send_question(self.session_dir, message.text, message.question_id, message.trigger)
        self.notify(f"asked: {message.text}")

    def _can_steer(self, what: str) -> bool:
        if self._steerable():
            return True
        self.notify(f"cannot {what}: this session is not running here", severity="warning")
        return False

    def _steerable(self) -> bool:
        return self.live and self.data is not None and self.data.status in {"running", "paused"}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that steer an engine show (and act) only while one runs here."""
        if action in _LIVE_ONLY:
            return self._steerable()
        return True

    # -- the panes' wiring ---------------------------------------------------------------

    def on_event_selected(self, message: EventSelected) -> None:
        self._schedule_selection(message)

    def on_candidate_selected(self, message: CandidateSelected) -> None:
        if message.eval_seq is not None:
            self.query_one(TranscriptView).jump_to_seq(message.eval_seq)
        self._schedule_selection(message)

    def _schedule_selection(self, selection: EventSelected | CandidateSelected) -> None:
        self._pending_selection = selection
        if self._selection_timer is not None:
            self._selection_timer.stop()
        self._selection_timer = self.set_timer(SELECTION_DELAY_S, self._apply_selection)

    def _apply_selection(self) -> None:
        selection, self._pending_selection = self._pending_selection, None
        if selection is None or self.data is None:
            return
        if isinstance(selection, CandidateSelected):
            self._show_commit(selection.sha)
            return
        eval_seq = self._eval_seq_at_or_before(selection.seq)
        if eval_seq is None:
            return
        self.query_one(HistoryPane).select_for_eval_seq(eval_seq)
        self._select_eval(eval_seq)

    def _eval_seq_at_or_before(self, seq: int) -> int | None:
        """The eval an event belongs to: itself, the eval a commit came from, or the last
        eval before it."""
        assert self.data is not None
        import pyarrow.compute as pc

        table = self.data.table
        evals = table.filter(
            pc.and_(pc.equal(table["kind"], "eval"), pc.less_equal(table["seq"], seq))
        )
        return evals["seq"][-1].as_py() if evals.num_rows else None

    @work(thread=True, exclusive=True, group="benchmark")
    def _select_eval(self, seq: int) -> None:
        assert self.data is not None
        result = eval_result_at(self.session_dir, self.data.table, seq)
        self.post_message(BenchmarkLoaded(result, f"eval at seq {seq}"))

    @work(thread=True, exclusive=True, group="benchmark")
    def _show_commit(self, sha: str) -> None:
        data = self.data
        result = None
        if data is not None and data.history is not None:
            result = result_from_note(data.history, sha)
            if result is None and self.timeline is not None:
                seq = self.timeline.eval_seq_for_commit(sha)
                if seq is not None:
                    result = eval_result_at(self.session_dir, data.table, seq)
        self.post_message(BenchmarkLoaded(result, f"commit {sha[:10]}"))

    def on_benchmark_loaded(self, message: BenchmarkLoaded) -> None:
        self.query_one(BenchmarkPane).show(message.result, message.label)

    def _eval_result(self, seq: int) -> EvalResult | None:
        """The full result of the eval at ``seq`` (the detail view's scenario table)."""
        return eval_result_at(self.session_dir, self.data.table, seq) if self.data else None

    def _bisect_factory(self) -> PredicateFactory | None:
        if self._predicate_factory is not None:
            return self._predicate_factory
        from kernelseek_tui.evaluate.readiness import gpu_stack_problems

        if gpu_stack_problems():
            return None  # the pane says plainly that bisect needs a GPU box

        def factory() -> Predicate:
            from kernelseek_tui.history import predicate_from_evaluator
            from kernelseek_tui.session.evaluator import TaskEvaluator
            from kernelseek_tui.session.recorded import candidate_judge, original_task

            data = self.data
            assert data is not None and data.meta is not None and data.history is not None
            # An unpacked recording has no checkout of its task: it comes from the start
            # commit, into a directory that lives as long as the app.
            self._scratch = TemporaryDirectory(prefix="kernelseek-app-bisect-")
            task = original_task(data.meta, data.history, Path(self._scratch.name))
            evaluator = TaskEvaluator(task, prestart_next=True)  # a bisect: one after another
            judge = candidate_judge(task, evaluator, data.meta.objective_sets)
            return predicate_from_evaluator(judge)

        return factory

    # -- actions --------------------------------------------------------------------------

    def action_show_pane(self, name: str) -> None:
        while len(self.screen_stack) > 1:  # from the query screen or a modal: back to the panes
            self.pop_screen()
        self._pane = name
        self._apply_width(self.size.width)
        target: dict[str, type[Widget]] = {
            "transcript": TranscriptView,
            "history": HistoryPane,
            "benchmark": BenchmarkPane,
        }
        self.query_one(target[name]).focus()

    def action_zoom(self) -> None:
        """The focused pane alone over the whole width, or back to side by side."""
        self._pane = self._focused_pane()
        self._zoomed = not self._zoomed
        self._apply_width(self.size.width)

    def _focused_pane(self) -> str:
        focused = self.focused
        for name in PANES:
            node = self.query_one(f"#pane-{name}")
            if focused is not None and (focused is node or node in focused.ancestors):
                return name
        return self._pane

    def action_next_pane(self, step: int = 1) -> None:
        if self.screen is not self.screen_stack[0]:  # a modal or the query screen: plain focus
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        current = self._focused_pane()
        self.action_show_pane(PANES[(PANES.index(current) + step) % len(PANES)])

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands (themes, keys, quit) plus every binding of the
        app and of the panes, by description and id."""
        yield from super().get_system_commands(screen)
        if screen is not self.screen_stack[0]:
            return
        owners: list[App[None] | Widget] = [
            self,
            *self.query("TranscriptView, HistoryPane, BenchmarkPane"),
        ]
        for owner in owners:
            for binding in getattr(type(owner), "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.id:
                    continue
                if binding.id in _NOT_IN_PALETTE:
                    continue
                if owner is self and self.check_action(binding.action, ()) is False:
                    continue
                title = f"{binding.id.split('.', 1)[0]}: {binding.description or binding.action}"
                run = partial(self.run_action, binding.action, owner)
                yield SystemCommand(title, f"{binding.id}  ({self._keys_for(binding)})", run)

    def action_help(self) -> None:
        rows: list[tuple[str, str, str, str]] = []
        seen: set[str] = set()
        for node in [self, *self.query("*")]:
            for binding in getattr(type(node), "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.id or binding.id in seen:
                    continue
                seen.add(binding.id)
                where = binding.id.split(".", 1)[0]
                keys = self._keys_for(binding)
                rows.append((where, keys, binding.description or binding.action, binding.id))
        self.push_screen(HelpScreen(rows))

    def _keys_for(self, binding: Binding) -> str:
        override = getattr(self, "_keymap", {}).get(binding.id or "")
        return display_keys(override or binding.key)

    def action_query(self, canned: str | None = None) -> None:
        """The query screen; ``canned`` runs that canned query as it opens."""
        from kernelseek_tui.tui.screens.query import QueryScreen

        self.push_screen(QueryScreen(self.traces_root, run_first=canned))

    def action_compare(self) -> None:
        """The compare screen, this session (or the experiment it belongs to) picked."""
        from kernelseek_tui.experiment.catalog import comparison_root
        from kernelseek_tui.experiment.record import is_experiment_dir
        from kernelseek_tui.tui.screens.compare import CompareScreen

        here = self.session_dir.resolve()
        picked = here.parent if is_experiment_dir(here.parent) else here
        root = comparison_root(self.traces_root.resolve())
        self.push_screen(CompareScreen(root, preselect=[str(picked)]))

    def action_ask(self) -> None:
        if not self._can_steer("ask"):
            return
        from kernelseek_tui.browse.live import suggestions_for

        session_dir = self.session_dir
        self.query_one(QuestionBar).open_manual(
            lambda: suggestions_for("manual", session_dir=session_dir)
        )

    def action_pause(self) -> None:
        from kernelseek_tui.browse.live import send_control

        if not self._can_steer("pause"):
            return
        assert self.data is not None
        command = "resume" if self.data.status == "paused" else "pause"
        send_control(self.session_dir, command)
        self.notify(f"{command} sent")

    def action_stop(self) -> None:
        from kernelseek_tui.browse.live import send_control

        if not self._can_steer("stop"):
            return
        if not self._stop_armed:
            self._stop_armed = True
            window = self.STOP_CONFIRM_S
            self.notify(f"press ctrl+x again within {window:g} s to stop the session")
            self.set_timer(window, self._disarm_stop)
            return
        self._stop_armed = False
        send_control(self.session_dir, "stop")
        self.notify("stop sent")

    def _disarm_stop(self) -> None:
        self._stop_armed = False

    async def action_quit(self) -> None:
        # A query running in a worker thread would keep the process alive after the screen
        # has gone blank: stop it before leaving.
        self._stop_queries("the app quit")
        self.exit()

    def _stop_queries(self, why: str) -> None:
        from kernelseek_tui.tui.screens.query import QueryScreen

        for screen in self.screen_stack:
            if isinstance(screen, QueryScreen):
                screen.stop_query(why)

    def on_unmount(self) -> None:
        self._stop_queries("the app quit")
        if self.follower is not None:
            self.follower.stop()


def known_binding_ids() -> set[str]:
    """Every binding id a keymap file may name: the app's, its panes' and its screens'."""
    from kernelseek_tui.tui.screens.compare import CompareScreen
    from kernelseek_tui.tui.screens.diff import DiffScreen, DiffView
    from kernelseek_tui.tui.screens.event_detail import EventDetailScreen
    from kernelseek_tui.tui.screens.query import QueryScreen
    from kernelseek_tui.tui.widgets.arrow_table import ArrowTable

    return binding_ids(
        [KernelseekApp, TranscriptView, HistoryPane, BenchmarkPane, QuestionBar, QueryScreen,
         HelpScreen, DiffScreen, DiffView, EventDetailScreen, ArrowTable, CompareScreen]
    )  # fmt: skip


def _last_seq(table: pa.Table, kind: str) -> int | None:
    import pyarrow.compute as pc

    rows = table.filter(pc.equal(table["kind"], kind))
    return rows["seq"][-1].as_py() if rows.num_rows else None


def open_tui(
    session_dir: Path,
    *,
    live: bool = False,
    traces_root: Path | None = None,
    screenshot: Path | None = None,
    size: tuple[int, int] = (160, 45),
) -> int:
    """Run the app on a session. ``screenshot`` runs it headless instead, saves an SVG of the
    first screen once loaded and returns (for machines without a terminal, and CI)."""
    app = KernelseekApp(session_dir, traces_root=traces_root, live=live)
    if screenshot is not None:
        return _headless(app, screenshot, size)
    # textual-serve runs the app over pipes with its web driver: no terminal needed there.
    web = os.environ.get("TEXTUAL_DRIVER", "").endswith("WebDriver")
    if not web and (not os.isatty(1) or not os.isatty(0)):
        raise KernelseekError(
            "the TUI needs a terminal (stdin and stdout); use --headless-check FILE to render "
            "its first screen to an SVG instead"
        )
    app.run()
    return 0


def _headless(app: KernelseekApp, screenshot: Path, size: tuple[int, int]) -> int:
    async def pilot(p: Pilot[object]) -> None:
        await p.pause()
        await app.workers.wait_for_complete()
        await p.pause(0.3)
        await app.workers.wait_for_complete()
        await p.pause()
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_text(app.export_screenshot())
        app.exit()

    app.run(headless=True, size=size, auto_pilot=pilot)
    if app.return_code:
        raise KernelseekError(
            f"the app failed while rendering its first screen (exit {app.return_code})"
        )
    return 0
