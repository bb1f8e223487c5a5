"""A runaway query stops: on Ctrl-C, after its timeout, on leaving the query screen and on quit.
And the SQL box only reads, and only under the traces root."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from kernelseek_tui.trace.stopping import QueryDeadline
from kernelseek_tui.trace.store import QueryError, TraceStore
from kernelseek_tui.trace.tabular import Head, format_table
from kernelseek_tui.tui.app import KernelseekApp
from kernelseek_tui.tui.screens.query import QueryScreen
from tests.synthetic import generate_sessions_fast
from tests.test_session_support import ROOT
from tests.test_tui_query import Base
from tests.tui_support import SCRIPTED, settle, unpacked_demo

# Some 10^15 rows to sum: it runs for hours unless something stops it.
RUNAWAY = "SELECT sum(a.seq * b.seq) FROM events a, events b, events c, events d"


def make_sure_it_ends(store: TraceStore | None, lock: threading.Lock) -> None:
    """The safety net of a test that failed: interrupt until the query holding ``lock`` lets
    go, so that a stop the code under test lost does not leave the query running for hours
    beside the rest of the suite (it once did, on a 2-core CI machine)."""
    for _ in range(600):
        if lock.acquire(timeout=0.05):
            lock.release()
            return
        if store is not None:
            store.interrupt()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    generate_sessions_fast(root, count=2, tool_calls=2_000, evals=120, questions=40)
    return root


def _ctrl_c_as_at_a_terminal() -> None:
    # A test run started in the background by a non-interactive shell inherits SIGINT ignored,
    # and so would the query, which then could not be stopped by it: the test would fail for
    # how it was launched (it did, 2026-12-07). The query gets the disposition a terminal gives.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_query(traces: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "kernelseek_tui", "query", "--traces", str(traces), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ctrl_c_as_at_a_terminal,
    )  # fmt: skip


def finish(process: subprocess.Popen[str], within_s: float) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=within_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


def test_ctrl_c_stops_a_running_query(traces: Path) -> None:
    process = start_query(traces, RUNAWAY)
    time.sleep(3.0)  # the views are built and the query is running
    assert process.poll() is None
    began = time.monotonic()
    process.send_signal(signal.SIGINT)
    code, err = finish(process, within_s=10)
    assert time.monotonic() - began < 5
    assert code == 130 and err.strip() == "kernelseek query: interrupted"


def test_a_query_past_its_timeout_is_stopped(traces: Path) -> None:
    began = time.monotonic()
    code, err = finish(start_query(traces, "--timeout", "1", RUNAWAY), within_s=30)
    assert code == 2
    assert err.strip() == "kernelseek query: error: query stopped: it ran longer than 1 s"
    assert time.monotonic() - began < 20


def test_a_stop_that_comes_before_the_query_begins_still_stops_it(traces: Path) -> None:
    # DuckDB forgets an interrupt that arrives before its query starts: the deadline must go
    # on interrupting until the query's block ends.
    store = TraceStore(traces)
    store.connect()
    running = threading.Lock()
    outcome: list[BaseException] = []

    def run() -> None:
        with running, QueryDeadline(store, timeout_s=None) as deadline:
            deadline.stop("asked early")  # before DuckDB has the query
            try:
                store.query(RUNAWAY)
            except QueryError as error:
                outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    began = time.monotonic()
    worker.start()
    try:
        worker.join(timeout=10)
        assert not worker.is_alive() and time.monotonic() - began < 5
        assert outcome and "INTERRUPT" in str(outcome[0]).upper()
    finally:
        make_sure_it_ends(store, running)
        worker.join(timeout=5)
    assert store.query("SELECT 7 AS n").column("n")[0].as_py() == 7  # the next query runs


def test_the_store_only_reads_and_only_under_its_root(traces: Path, tmp_path: Path) -> None:
    store = TraceStore(traces)
    outside = tmp_path / "secret.txt"
    outside.write_text("not yours")
    with pytest.raises(QueryError, match="COPY statements are refused"):
        store.query(f"COPY (SELECT 1) TO '{traces}/copied.csv'")
    assert not (traces / "copied.csv").exists()
    with pytest.raises(QueryError, match="Permission Error"):
        store.query(f"SELECT * FROM read_text('{outside}')")
    for sql in ("SET enable_external_access = true", f"ATTACH '{tmp_path}/x.db'"):
        with pytest.raises(QueryError, match="refused"):
            store.query(sql)
    inside = store.query("SELECT count(*) AS n FROM read_parquet('" + f"{traces}/*/*.parquet')")
    assert inside.column("n")[0].as_py() > 0  # reading the traces themselves still works
    last = store.query("SELECT 42 AS answer; SELECT 43 AS answer")
    assert last.column("answer").to_pylist() == [43]


def test_a_table_of_two_columns_with_one_name_prints(traces: Path) -> None:
    store = TraceStore(traces)
    reader = store.query_reader("SELECT a.seq, b.seq FROM events a, events b LIMIT 2")
    text = format_table(Head(reader.read_all(), 2))
    assert text.splitlines()[0].split() == ["seq", "seq"]


async def _run_runaway(app: Base | KernelseekApp, pilot: object) -> QueryScreen:
    screen = app.screen
    assert isinstance(screen, QueryScreen)
    screen.query_one("#query-sql", Input).value = RUNAWAY
    screen.run_sql(RUNAWAY)
    deadline = time.monotonic() + 30
    while screen._deadline is None and time.monotonic() < deadline:  # it is running
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    assert screen.running and screen._deadline is not None
    return screen


@contextlib.asynccontextmanager
async def runaway_running(app: Base | KernelseekApp, pilot: object) -> AsyncIterator[QueryScreen]:
    """The runaway query running on the app's query screen, ended on the way out whatever the
    test found (``make_sure_it_ends``)."""
    screen = await _run_runaway(app, pilot)
    try:
        yield screen
    finally:
        make_sure_it_ends(screen._store, screen._store_lock)


@pytest.mark.anyio
async def test_the_query_screen_stops_a_query_at_its_timeout(traces: Path) -> None:
    app = Base(traces, timeout_s=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        async with runaway_running(app, pilot) as screen:
            await asyncio.wait_for(settle(pilot, rounds=1, grace_s=0), timeout=15)
            status = str(screen.query_one("#query-status", Static).render())
            assert status == "error: stopped: it ran longer than 1 s"


@pytest.mark.anyio
async def test_leaving_the_query_screen_stops_its_query(traces: Path) -> None:
    app = Base(traces, timeout_s=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        async with runaway_running(app, pilot) as screen:
            began = time.monotonic()
            await pilot.press("escape")
            await asyncio.wait_for(app.workers.wait_for_complete(), timeout=10)
            assert time.monotonic() - began < 5
            assert screen.last_error in (None, "stopped: the query screen was left")


@pytest.mark.anyio
async def test_quitting_the_app_stops_a_running_query(traces: Path, tmp_path: Path) -> None:
    demo = unpacked_demo(tmp_path)
    app = KernelseekApp(demo / SCRIPTED, traces_root=traces)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("f5")
        await app.workers.wait_for_complete()
        screen = await _run_runaway(app, pilot)
        began = time.monotonic()
        await app.action_quit()
        await pilot.pause()
    try:
        # The worker's thread has seen its query fail: nothing keeps the process busy.
        assert screen._store_lock.acquire(timeout=5)
        screen._store_lock.release()
        assert time.monotonic() - began < 5
    finally:
        make_sure_it_ends(screen._store, screen._store_lock)


@pytest.mark.anyio
async def test_a_stop_asked_while_the_views_build_applies_when_the_query_begins(
    traces: Path,
) -> None:
    app = Base(traces, timeout_s=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        try:
            with screen._store_lock:  # the worker waits here, as behind a slow view build
                screen.run_sql(RUNAWAY)
                await pilot.pause(0.2)
                assert screen._deadline is None  # nothing to interrupt yet
                screen.stop_query("asked early")
            await asyncio.wait_for(app.workers.wait_for_complete(), timeout=10)
            await pilot.pause()
            assert screen.last_error == "stopped: asked early" and not screen.running
        finally:
            make_sure_it_ends(screen._store, screen._store_lock)


@pytest.mark.anyio
async def test_a_newer_query_stops_the_one_still_running(traces: Path) -> None:
    app = Base(traces, timeout_s=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        async with runaway_running(app, pilot) as screen:
            began = time.monotonic()
            screen.run_sql("SELECT 42 AS answer")
            await asyncio.wait_for(settle(pilot, rounds=2, grace_s=0), timeout=10)
            assert time.monotonic() - began < 5
            assert screen.last_error is None and not screen.running
            # The newer query's rows, not the runaway's failure.
            assert screen.results.table.column("answer").to_pylist() == [42]
