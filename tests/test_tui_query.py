"""The query screen over real Parquet traces, and the virtual ArrowTable at 100k rows."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Static

from kernelseek_tui.trace.store import CANNED, TraceStore
from kernelseek_tui.tui.screens.query import CANNED_ORDER, QueryScreen, inline_params
from kernelseek_tui.tui.widgets.arrow_table import NULL, ArrowTable
from tests.perf import TIMED
from tests.synthetic import generate_sessions_fast
from tests.tui_support import settle


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio; the Pilot tests run through anyio's plugin


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    generate_sessions_fast(root, count=2, tool_calls=2_000, evals=120, questions=40)
    return root


def _visible_text(app: App[None]) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def _status(app: App[None]) -> str:
    return str(app.screen.query_one("#query-status", Static).render())


class Base(App[None]):
    """An app whose first screen opens the query screen, as the real app does."""

    def __init__(self, traces: Path | TraceStore, **kwargs: object) -> None:
        super().__init__()
        self.traces = traces
        self.kwargs = kwargs

    def compose(self) -> ComposeResult:
        yield Static("the panes")

    def on_mount(self) -> None:
        self.push_screen(QueryScreen(self.traces, **self.kwargs))  # type: ignore[arg-type]


# -- the query screen ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_canned_queries_are_listed_and_f5_runs_question_jumps(traces: Path) -> None:
    assert CANNED_ORDER[0] == "question-jumps"
    expected = TraceStore(traces).canned("question-jumps")
    assert expected.num_rows > 0  # the synthetic sessions have jumps after questions
    app = Base(traces)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = _visible_text(app)
        for key, name in zip(("F5", "F6", "F7", "F8", "F9"), CANNED_ORDER, strict=False):
            assert f"{key}  {name}" in text
        await pilot.press("f5")
        await settle(pilot, rounds=1, grace_s=0)
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        assert screen.results.row_count == expected.num_rows
        assert screen.results.table.column_names == expected.column_names
        status = _status(app)
        assert f"question-jumps: {expected.num_rows:,} rows in" in status and "ms" in status
        assert screen.last_elapsed_ms is not None and screen.last_error is None
        assert f"{expected.num_rows:,} rows" in _visible_text(app)
        # The SQL is in the input, parameters written in: enter runs it again, same rows.
        sql = screen.query_one("#query-sql", Input).value
        assert "question_jumps_at(0." in sql and "$" not in sql
        await pilot.press("enter")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.row_count == expected.num_rows
        assert _status(app).startswith("SELECT")


@pytest.mark.anyio
async def test_typed_sql_runs_and_bad_sql_shows_one_line_of_error(traces: Path) -> None:
    app = Base(traces)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        screen.query_one(
            "#query-sql", Input
        ).value = "SELECT session_id, count(*) AS n FROM events GROUP BY 1 ORDER BY 1"
        await pilot.press("enter")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.table.to_pylist()[0]["session_id"] == "synth-000"
        assert screen.results.row_count == 2
        assert "synth-001" in _visible_text(app)

        screen.query_one("#query-sql", Input).value = "SELECT nope FROM nowhere_at_all"
        await pilot.press("enter")
        await settle(pilot, rounds=1, grace_s=0)
        status = _status(app)
        assert status.startswith("error: ") and "nowhere_at_all" in status
        assert "\n" not in status
        assert screen.last_error is not None
        assert screen.results.row_count == 2  # the last good result stays

        screen.query_one("#query-sql", Input).value = "   "
        await pilot.press("enter")
        assert "type a query" in _status(app)


@pytest.mark.anyio
async def test_escape_goes_back(traces: Path) -> None:
    app = Base(traces)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, QueryScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, QueryScreen)
        assert "the panes" in _visible_text(app)


@pytest.mark.anyio
async def test_a_missing_traces_root_is_an_error_line_not_a_crash(tmp_path: Path) -> None:
    app = Base(tmp_path / "no-such-dir")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f5")
        await settle(pilot, rounds=1, grace_s=0)
        assert "does not exist" in _status(app)


@pytest.mark.anyio
async def test_a_result_past_max_rows_is_cut_and_says_so(traces: Path) -> None:
    app = Base(traces, max_rows=1_000)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        screen.run_sql("SELECT range AS n FROM range(5000)")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.row_count == 1_000
        assert "cut at 1,000" in _status(app)
        assert "there are more" in _visible_text(app)


@pytest.mark.anyio
@pytest.mark.parametrize("timed", TIMED)
async def test_100k_row_result_opens_and_moves_in_well_under_a_second(
    traces: Path, timed: bool
) -> None:
    app = Base(traces)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        started = time.perf_counter()
        screen.run_sql(
            "SELECT range AS n, range * 0.5 AS half, 'row ' || range AS label FROM range(100000)"
        )
        await settle(pilot, rounds=1, grace_s=0)
        assert not timed or time.perf_counter() - started < 2.0  # DuckDB, Arrow, first paint
        table = screen.results
        assert table.row_count == 100_000
        assert "100,000 rows" in _visible_text(app)
        table.focus()
        for keys in (("G",), ("pageup",), ("g",), ("pagedown", "pagedown", "j", "k")):
            started = time.perf_counter()
            await pilot.press(*keys)
            await pilot.pause()
            assert not timed or time.perf_counter() - started < 0.5, keys
        table.action_cursor_bottom()
        await pilot.pause()
        assert table.cursor_row == 99_999
        assert "row 99999" in _visible_text(app)


@pytest.mark.anyio
async def test_ctrl_r_reloads_the_traces_to_see_a_new_session(tmp_path: Path) -> None:
    generate_sessions_fast(tmp_path, count=1, tool_calls=50, evals=5, questions=2)
    app = Base(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        screen.run_sql("SELECT session_id FROM sessions ORDER BY 1")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.table.column("session_id").to_pylist() == ["synth-000"]
        generate_sessions_fast(
            tmp_path, count=1, tool_calls=50, evals=5, questions=2, prefix="more"
        )
        screen.run_sql("SELECT session_id FROM sessions ORDER BY 1")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.row_count == 1  # the views were built before it existed
        await pilot.press("ctrl+r")
        await settle(pilot, rounds=1, grace_s=0)
        assert "traces reloaded" in _status(app)
        screen.run_sql("SELECT session_id FROM sessions ORDER BY 1")
        await settle(pilot, rounds=1, grace_s=0)
        assert screen.results.table.column("session_id").to_pylist() == ["more-000", "synth-000"]


def test_inline_params_writes_sql_literals() -> None:
    sql = "SELECT * FROM t WHERE a > $threshold AND ($session IS NULL OR s = $session) AND $k"
    # An unset optional filter goes: never "NULL IS NULL OR s = NULL".
    assert inline_params(sql, {"threshold": 0.05, "session": None, "k": 3}) == (
        "SELECT * FROM t WHERE a > 0.05 AND 3"
    )
    assert inline_params(sql, {"threshold": 0.05, "session": "a", "k": 3}) == (
        "SELECT * FROM t WHERE a > 0.05 AND (s = 'a') AND 3"
    )
    assert inline_params("x = $name AND $other", {"name": "it's"}) == "x = 'it''s' AND $other"


@pytest.mark.parametrize("name", sorted(CANNED))
def test_every_canned_query_reads_as_written_and_runs_as_shown(name: str, traces: Path) -> None:
    query = CANNED[name]
    shown = inline_params(query.sql, query.params)
    assert "NULL IS NULL" not in shown and "= NULL" not in shown and "$" not in shown
    # What the box shows is the query: run as typed, it gives what the canned one gives.
    store = TraceStore(traces)
    assert store.query(shown).equals(store.canned(name))


# -- ArrowTable on its own -----------------------------------------------------------------------


class TableApp(App[None]):
    def __init__(self, table: pa.Table) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield ArrowTable(self.table, id="t")

    def on_mount(self) -> None:
        self.query_one(ArrowTable).focus()


def _big_table(rows: int = 100_000) -> pa.Table:
    return pa.table(
        {
            "seq": pa.array(range(rows), pa.int64()),
            "kind": pa.array(["tool_call", "eval", None, "question"] * (rows // 4)),
            "speedup": pa.array([1.25, None, 3.5, 0.125] * (rows // 4), pa.float64()),
            "text": pa.array(
                ["short", "a much longer piece of text " * 5, "x\ny", ""] * (rows // 4)
            ),
            "tail_column": pa.array(["last"] * rows),
        }
    )


@pytest.mark.anyio
async def test_arrow_table_shows_header_values_nulls_and_row_count() -> None:
    app = TableApp(_big_table(8))
    async with app.run_test(size=(140, 12)) as pilot:
        await pilot.pause()
        lines = _visible_text(app).splitlines()
        assert lines[0].split()[:3] == ["seq", "kind", "speedup"]
        assert lines[1].split()[:3] == ["0", "tool_call", "1.25"]
        assert lines[2].split()[:3] == ["1", "eval", NULL]
        assert lines[3].split()[1] == NULL  # a null string
        assert "x↵y" in lines[3]  # newlines never break a row
        assert "…  last" in lines[2]  # a long text is cut to its column
        assert "8 rows" in _visible_text(app)
        table = app.query_one(ArrowTable)
        assert table.row_values(1) == {
            "seq": 1,
            "kind": "eval",
            "speedup": None,
            "text": "a much longer piece of text " * 5,
            "tail_column": "last",
        }


@pytest.mark.anyio
async def test_arrow_table_keys_move_the_cursor_and_scroll_columns() -> None:
    app = TableApp(_big_table(400))
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(ArrowTable)
        await pilot.pause()
        assert "tail_column" not in _visible_text(app)
        await pilot.press("j", "j", "k")
        assert table.cursor_row == 1
        await pilot.press("G")
        await pilot.pause()
        assert table.cursor_row == 399
        lines = _visible_text(app).splitlines()
        assert lines[-3].split()[0] == "399"  # the last row, above the status and scrollbar
        assert lines[-2].startswith("400 rows  row 400")
        await pilot.press("g")
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.press("pagedown")
        assert table.cursor_row == 9  # 12 lines: header, 9 rows, status, scrollbar
        await pilot.press("pageup", "up", "down")
        assert table.cursor_row == 1
        await pilot.click(ArrowTable, offset=(2, 4))  # the fourth data row on screen
        assert table.cursor_row == 3
        for _ in range(4):
            await pilot.press("right")
        await pilot.pause()
        assert "tail_column" in _visible_text(app)
        assert "seq" not in _visible_text(app).splitlines()[0]
        for _ in range(4):
            await pilot.press("left")
        await pilot.pause()
        assert table.scroll_x == 0
        assert _visible_text(app).splitlines()[0].startswith("seq")


@pytest.mark.anyio
@pytest.mark.parametrize("timed", TIMED)
async def test_arrow_table_opens_100k_rows_and_moves_fast(timed: bool) -> None:
    big = _big_table()
    app = TableApp(pa.table({"empty": pa.array([], pa.int64())}))
    async with app.run_test(size=(100, 40)) as pilot:
        table = app.query_one(ArrowTable)
        await pilot.pause()
        assert "0 rows" in _visible_text(app)
        started = time.perf_counter()
        table.set_table(big)
        await pilot.pause()
        assert not timed or time.perf_counter() - started < 0.5
        assert "100,000 rows" in _visible_text(app)
        started = time.perf_counter()
        for _ in range(20):
            await pilot.press("pagedown")
        await pilot.press("G", "k", "g")
        await pilot.pause()
        per_key = (time.perf_counter() - started) / 23
        assert not timed or per_key < 0.1
        # Only the blocks of rows that were on screen were ever formatted.
        assert len(table._blocks) <= 4
