"""A runaway query stops: on Ctrl-C, after its timeout, on leaving the query screen and on quit.
And the SQL box only reads, and only under the traces root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import Input, Static

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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    generate_sessions_fast(root, count=2, tool_calls=2_000, evals=120, questions=40)
    return root


def start_query(traces: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "kernelseek_tui", "query", "--traces", str(traces), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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


@pytest.mark.anyio
async def test_the_query_screen_stops_a_query_at_its_timeout(traces: Path) -> None:
    app = Base(traces, timeout_s=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = await _run_runaway(app, pilot)
        await settle(pilot, rounds=1, grace_s=0)
        status = str(screen.query_one("#query-status", Static).render())
        assert status == "error: stopped: it ran longer than 1 s"


@pytest.mark.anyio
async def test_leaving_the_query_screen_stops_its_query(traces: Path) -> None:
    app = Base(traces, timeout_s=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = await _run_runaway(app, pilot)
        began = time.monotonic()
        await pilot.press("escape")
        await app.workers.wait_for_complete()
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
    # The worker's thread has seen its query fail: nothing keeps the process busy.
    assert screen._store_lock.acquire(timeout=5)
    assert time.monotonic() - began < 5
