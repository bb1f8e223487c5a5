"""The history pane over a real session: a real Engine with a scripted agent and a stand-in
evaluator commits seven candidates (one of them a regression) into a real git repository;
the timeline, the candidates table, diffs and a bisect are checked against that history."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from kernelseek_tui.browse.timeline import BLOCKS, Timeline
from kernelseek_tui.history import Candidate, SessionHistory
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.tui.bisect_runner import NO_EVALUATOR, BisectStatus
from kernelseek_tui.tui.messages import CandidateSelected
from kernelseek_tui.tui.screens.diff import DiffScreen, DiffView, line_style
from kernelseek_tui.tui.widgets.history import MARK, CandidateTable, HistoryPane
from kernelseek_tui.tui.widgets.speedup_plot import SpeedupPlot
from tests.perf import TIMED
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    make_task_repo,
    session_config,
)
from tests.tui_support import settle

SPEEDS = [1.1, 1.2, 1.25, 1.19, 1.3, 1.4, 1.5]
# Pilot tests are coroutines; anyio's pytest plugin (installed with anyio) runs them.
pytestmark = pytest.mark.anyio

REGRESSION_STEP = 5  # the step whose edit breaks the kernel: candidate 5 is the first bad one


@dataclass
class RealSession:
    history: SessionHistory
    table: pa.Table
    candidates: list[Candidate]  # newest first


def _edit(step: int) -> tuple[Any, ...]:
    marker = f"// step {step}" + (" regression" if step == REGRESSION_STEP else "")
    include = "#include <math.h>"
    edit = {"path": "baseline.cu", "old_text": include, "new_text": f"{include}\n{marker}"}
    return ("tool", "edit_file", edit)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> RealSession:
    root = tmp_path_factory.mktemp("history")
    task_dir = make_task_repo(root / "user")
    steps: list[tuple[Any, ...]] = []
    for step in range(1, len(SPEEDS) + 1):
        steps += [_edit(step), ("tool", "evaluate", {})]
        if step == 3:
            steps.append(("tool", "draw_question", {}))
    config = session_config(task_dir, root / "traces")
    engine = Engine.start(config, evaluator=SequenceEvaluator(SPEEDS))
    engine.run(ScriptedAgent(steps))
    history = SessionHistory.open(engine.history.repo, "s1")
    return RealSession(history, read_session(engine.session_dir), history.candidates())


# --- the timeline -------------------------------------------------------------------------


def test_timeline_follows_the_best_speedup_over_tool_calls(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    # Each step is an edit and an evaluate; step 3 adds a draw_question call after its eval.
    calls_at_eval = [2, 4, 6, 9, 11, 13, 15]
    bests = [1.1, 1.2, 1.25, 1.25, 1.3, 1.4, 1.5]
    assert [(p.tool_calls, p.best_speedup) for p in timeline.points] == list(
        zip(calls_at_eval, bests, strict=True)
    )
    assert timeline.total_tool_calls == 15
    assert timeline.best_speedup == 1.5
    assert [q.tool_calls for q in timeline.questions] == [7]
    assert timeline.questions[0].source == "agent" and timeline.questions[0].text


def test_timeline_links_commits_and_evals(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    for candidate in session.candidates:
        assert timeline.eval_seq_for_commit(candidate.sha) == candidate.seq
        assert timeline.eval_seq_for_commit(candidate.sha[:10]) == candidate.seq
        assert timeline.commit_for_eval_seq(candidate.seq) == candidate.sha
    assert timeline.eval_seq_for_commit("0" * 40) is None
    assert timeline.commit_for_eval_seq(0) is None  # the start control event
    question = timeline.questions[0]
    after = next(c for c in reversed(session.candidates) if c.seq > question.seq)
    assert timeline.question_before(after.seq) == question
    assert timeline.question_before(question.seq) is None


def test_sparkline_and_markers(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    line = timeline.sparkline(15)
    assert len(line) == 15
    # One column per tool call: blank until the first eval, rising to a full block at the end.
    assert line[:2] == "  " and line[2] == BLOCKS[0] and line[-1] == BLOCKS[-1]
    levels = [BLOCKS.index(c) for c in line[2:]]
    assert levels == sorted(levels)
    markers = timeline.markers_line(15)
    assert len(markers) == 15 and markers.count("?") == 1
    assert markers.index("?") == timeline.column_of(7, 15) == 7
    # Narrower than the session: still the right width, still one marker.
    assert len(timeline.sparkline(5)) == 5 and timeline.markers_line(5).count("?") == 1
    assert timeline.sparkline(0) == "" and timeline.markers_line(0) == ""


def test_timeline_of_a_big_synthetic_session_is_quick(tmp_path: Path) -> None:
    from tests.synthetic import generate_sessions_fast

    (session_dir,) = generate_sessions_fast(tmp_path, count=1)
    table = read_session(session_dir)
    started = time.perf_counter()
    timeline = Timeline.from_events(table)
    assert time.perf_counter() - started < 0.5  # ~10 ms for ~29k events here
    kinds = table.column("kind").to_pylist()
    assert timeline.total_tool_calls == kinds.count("tool_call") > 10_000
    assert len(timeline.questions) == kinds.count("question")
    bests = [p.best_speedup for p in timeline.points]
    assert bests == sorted(bests)  # a running best never falls
    assert len(timeline.sparkline(60)) == len(timeline.markers_line(60)) == 60


def test_timeline_of_a_session_without_evals() -> None:
    from kernelseek_tui.trace.schema import EVENT_SCHEMA

    timeline = Timeline.from_events(EVENT_SCHEMA.empty_table())
    assert timeline.points == [] and timeline.best_speedup is None
    assert timeline.sparkline(8) == " " * 8 and timeline.markers_line(8) == " " * 8


# --- the pane, driven by Pilot ---------------------------------------------------------------


class HistoryApp(App[None]):
    """The pane alone, loaded with the session; records what it posts."""

    def __init__(self, session: RealSession, **pane_options: Any) -> None:
        super().__init__()
        self.session = session
        self.pane_options = pane_options
        self.selected: list[CandidateSelected] = []

    def compose(self) -> ComposeResult:
        yield HistoryPane(**self.pane_options)

    def on_mount(self) -> None:
        pane = self.query_one(HistoryPane)
        pane.load(self.session.history, Timeline.from_events(self.session.table))
        pane.focus()

    def on_candidate_selected(self, message: CandidateSelected) -> None:
        self.selected.append(message)


def status_of(app: App[Any]) -> str:
    return str(app.query_one(BisectStatus).content)


def colour_of(view: DiffView, y: int) -> str | None:
    style = next(iter(view.render_line(y))).style
    return style.color.name if style is not None and style.color is not None else None


def table_of(app: App[Any]) -> list[list[str]]:
    table = app.query_one(CandidateTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_table_shows_the_candidates_newest_first_under_the_sparkline(
    session: RealSession,
) -> None:
    app = HistoryApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        rows = table_of(app)
        assert len(rows) == len(session.candidates) + 1
        for row, candidate in zip(rows, session.candidates, strict=False):
            assert row[1:7] == [
                str(candidate.n),
                str(candidate.seq),
                f"{candidate.speedup:.2f}x",
                "★" if candidate.new_best else "",
                "0.50",
                "4/4",
            ]
            assert row[7] == candidate.short_sha
        # 1.19x after 1.25x is the one candidate that is no new best.
        assert [row[4] for row in reversed(rows[:-1])] == ["★", "★", "★", "", "★", "★", "★"]
        assert rows[-1][3] == "start" and rows[-1][7] == session.history.base_sha[:10]
        # The draw_question came after candidate 3: candidates 4.. show it, 1..3 do not.
        question = Timeline.from_events(session.table).questions[0].text
        by_n = {int(row[1]): row[8] for row in rows[:-1]}
        assert by_n[3] == "" and by_n[4] and question.startswith(by_n[4].rstrip("…"))
        plot = app.query_one(SpeedupPlot)
        drawn = str(plot.render()).splitlines()
        timeline = plot.timeline
        assert timeline is not None
        assert drawn[0].startswith("best 1.50x over 15 tool calls")
        assert drawn[1] == timeline.sparkline(plot.size.width)
        assert drawn[2].count("?") == 1
        assert status_of(app) == "7 candidates, 6 new bests (★)"


async def test_moving_posts_candidate_selected_and_selecting_from_the_app_is_quiet(
    session: RealSession,
) -> None:
    app = HistoryApp(session)
    newest, second = session.candidates[0], session.candidates[1]
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        pane = app.query_one(HistoryPane)
        assert pane.selected_sha == newest.sha and app.selected == []
        await pilot.press("j")
        await pilot.pause()
        assert pane.selected_sha == second.sha
        assert [(m.sha, m.eval_seq) for m in app.selected] == [(second.sha, second.seq)]
        await pilot.press("G")
        await pilot.pause()
        assert pane.selected_sha == session.history.base_sha
        assert (app.selected[-1].sha, app.selected[-1].eval_seq) == (pane.selected_sha, None)
        await pilot.press("g", "k")  # k at the top stays there
        await pilot.pause()
        assert pane.selected_sha == newest.sha and len(app.selected) == 3
        # From the app: an eval that was committed, one between commits, one before any.
        posted = len(app.selected)
        third = session.candidates[-3]
        assert pane.select_for_eval_seq(third.seq)
        assert pane.selected_sha == third.sha
        assert pane.select_for_eval_seq(third.seq + 2)  # the tool_result after it
        assert pane.selected_sha == third.sha
        assert pane.select_for_eval_seq(1) and pane.selected_sha == session.history.base_sha
        assert pane.select_sha(second.sha[:8]) and pane.selected_sha == second.sha
        assert not pane.select_sha("f" * 12)
        await pilot.pause()
        assert len(app.selected) == posted  # none of these announced themselves
        await pilot.press("j")
        await pilot.pause()
        assert app.selected[-1].sha == session.candidates[2].sha


async def test_enter_opens_the_diff_of_a_commit_against_its_parent(
    session: RealSession,
) -> None:
    app = HistoryApp(session)
    newest = session.candidates[0]
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await settle(pilot, rounds=1, grace_s=0)
        expected = session.history.diff(session.candidates[1].sha, newest.sha)
        assert screen.diff_text == expected
        assert "+// step 7" in expected
        view = screen.query_one(DiffView)
        assert view.lines == expected.splitlines()
        title = str(screen.query_one("#diff-title", Static).content)
        assert title.startswith(f"{session.candidates[1].short_sha}..{newest.short_sha}")
        assert "candidate 6" in title and "candidate 7" in title
        stats = str(screen.query_one("#diff-stats", Static).content)
        assert stats.startswith("1 file changed, +1 -0")
        # Colours: the added line green, the hunk header cyan.
        added = next(i for i, line in enumerate(view.lines) if line == "+// step 7")
        hunk = next(i for i, line in enumerate(view.lines) if line.startswith("@@"))
        assert colour_of(view, added) == "green" and colour_of(view, hunk) == "cyan"
        removed = line_style("-x").color
        assert removed is not None and removed.name == "red"
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen.query_one(HistoryPane), HistoryPane)
        assert not isinstance(app.screen, DiffScreen)


async def test_mark_two_and_diff_them_older_to_newer(session: RealSession) -> None:
    app = HistoryApp(session)
    newest, oldest = session.candidates[0], session.candidates[-1]
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        pane = app.query_one(HistoryPane)
        await pilot.press("d")  # nothing marked yet: it says what to do
        assert "mark two commits first" in status_of(app)
        await pilot.press("space", "G", "k", "m")  # the newest, then candidate 1
        await pilot.pause()
        assert pane.marked == [newest.sha, oldest.sha]
        marks = [row[0] for row in table_of(app)]
        assert marks.count(MARK) == 2 and marks[0] == MARK and marks[-2] == MARK
        assert "candidate 7" in status_of(app) and "candidate 1" in status_of(app)
        await pilot.press("d")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.diff_text == session.history.diff(oldest.sha, newest.sha)
        assert screen.diff_text is not None and "+// step 2" in screen.diff_text
        await pilot.press("escape")
        await pilot.pause()
        # A third mark drops the first; marking a marked one unmarks it.
        await pilot.press("k", "space")
        await pilot.pause()
        assert pane.marked == [oldest.sha, session.candidates[-2].sha]
        await pilot.press("space")
        await pilot.pause()
        assert pane.marked == [oldest.sha]
        assert [row[0] for row in table_of(app)].count(MARK) == 1


async def test_bisect_without_an_evaluator_says_so(session: RealSession) -> None:
    app = HistoryApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        await pilot.press("b")
        assert "mark two commits" in status_of(app)
        await pilot.press("space", "G", "space", "b")
        await pilot.pause()
        assert status_of(app) == NO_EVALUATOR
        assert app.query_one(HistoryPane).last_bisect is None


async def test_bisect_between_the_marks_finds_the_first_bad_and_shows_progress(
    session: RealSession,
) -> None:
    judged: list[str] = []
    gate = threading.Event()

    def is_good(sha: str, task_dir: Path) -> bool:
        gate.wait(10)  # held until the test has seen the progress line
        judged.append(sha)
        return "regression" not in (task_dir / "baseline.cu").read_text()

    app = HistoryApp(session, predicate_factory=lambda: is_good)
    first_bad = next(c for c in session.candidates if c.n == REGRESSION_STEP)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        pane = app.query_one(HistoryPane)
        await pilot.press("space", "G", "space", "b")  # newest bad, the start commit good
        for _ in range(100):
            await pilot.pause(0.02)
            if "testing candidate" in status_of(app):
                break
        assert status_of(app).startswith("bisect step 1: testing candidate 3")
        assert "7 may be the first bad one" in status_of(app)
        await pilot.press("b")
        assert status_of(app) == "a bisect is already running"
        gate.set()
        await settle(pilot, rounds=1, grace_s=0)
        outcome = pane.last_bisect
        assert outcome is not None and outcome.first_bad == first_bad
        assert status_of(app).startswith(
            f"bisect done: the first bad one is candidate {REGRESSION_STEP} {first_bad.short_sha}"
        )
        assert len(judged) == len(outcome.steps) == 3
        assert pane.selected_sha == first_bad.sha
        assert (app.selected[-1].sha, app.selected[-1].eval_seq) == (first_bad.sha, first_bad.seq)


async def test_a_session_without_git_history(session: RealSession) -> None:
    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield HistoryPane()

        def on_mount(self) -> None:
            self.query_one(HistoryPane).load(None, None)

    app = Bare()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert status_of(app) == "no git history for this session"
        assert table_of(app) == []
        assert "no verified evaluation yet" in str(app.query_one(SpeedupPlot).render())
        await pilot.press("j", "enter", "space", "d", "b")  # nothing to do, nothing breaks
        assert not isinstance(app.screen, DiffScreen)


@pytest.mark.parametrize("timed", TIMED)
async def test_a_big_diff_scrolls_virtually(timed: bool) -> None:
    class Viewer(App[None]):
        def compose(self) -> ComposeResult:
            yield DiffView()

    lines = [f"+line {i}" if i % 3 else f"-line {i}" for i in range(60_000)]
    app = Viewer()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DiffView)
        view.focus()
        started = time.perf_counter()
        view.set_text("\n".join(lines))
        await pilot.pause()
        await pilot.press("G")
        await pilot.pause()
        assert not timed or time.perf_counter() - started < 2.0
        assert view.scroll_offset.y == view.max_scroll_y > 59_000
        bottom = view.render_line(view.scrollable_content_region.height - 1)
        assert bottom.text.rstrip() == lines[-1]
        await pilot.press("g")
        await pilot.pause()
        assert view.scroll_offset.y == 0
        assert view.render_line(0).text.rstrip() == lines[0]


@pytest.mark.parametrize("width", [24, 36, 52, 70])
async def test_a_narrow_pane_shows_each_number_whole_or_not_at_all(
    session: RealSession, width: int
) -> None:
    # A column cut at the pane's edge showed "1" for 1.25x and "4" for a sha; every word the
    # pane draws must be a whole value of its row, or end in an ellipsis.
    app = HistoryApp(session)
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot, rounds=1, grace_s=0)
        table = app.query_one(CandidateTable)
        timeline = Timeline.from_events(session.table)
        for position, candidate in enumerate(session.candidates):
            asked = timeline.question_before(candidate.seq)
            whole = {
                str(candidate.n),
                str(candidate.seq),
                f"{candidate.speedup:.2f}x",
                "0.50",
                f"{candidate.passed}/{candidate.total}",
                candidate.short_sha,
                *(["★"] if candidate.new_best else []),
                *(asked.text.split() if asked is not None else []),
            }
            drawn = table.render_line(position + 1).text.split()
            assert drawn, f"row {position} is empty at width {width}"
            assert all(word in whole or word.endswith("…") for word in drawn), (width, drawn)
        shown = [str(column.label) for column in table.columns.values()]
        assert {MARK, "n", "speedup"} <= set(shown)  # the most telling columns stay
        assert (width >= 36) == ("sha" in shown)
        label = str(app.query_one(SpeedupPlot).render()).splitlines()[0]
        assert label.endswith("(?)") or label.endswith("…"), label  # never "over 1" for 15
