"""The query screen: SQL over every session's trace (DuckDB views), results in a virtual table.

The query runs in a thread worker that never touches a widget: it posts ``QueryDone`` or
``QueryFailed`` back, tagged with the run it belongs to, so a slow query overtaken by a newer
one never overwrites the newer one's results. A running query is interrupted when it passes
``timeout_s``, when a newer one starts, when the screen is left and when the app quits
(``stop_query``): a thread cannot be killed, but its DuckDB call can be made to fail at once. A
stop asked for before the worker has begun its query (views still building) is kept and applied
as the query begins.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Final

import pyarrow as pa
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from kernelseek_tui.trace.stopping import QueryDeadline
from kernelseek_tui.trace.store import CANNED, TraceStore
from kernelseek_tui.tui.widgets.arrow_table import ArrowTable

MAX_ROWS: Final = 500_000  # more than this is cut (and said so): a table, not an export
QUERY_TIMEOUT_S: Final = 120.0  # a browsing screen: a query slower than this is a runaway
CANNED_KEYS: Final[tuple[str, ...]] = ("f5", "f6", "f7", "f8", "f9")
# The canned queries the keys run, question-jumps first (the question this tool exists for).
CANNED_ORDER: Final[tuple[str, ...]] = tuple(
    ["question-jumps"] + [name for name in CANNED if name != "question-jumps"]
)[: len(CANNED_KEYS)]


class QueryScreen(Screen[None]):
    """SQL over ``TraceStore(traces_root)``; F5..F9 run the canned queries; escape goes back."""

    DEFAULT_CSS = """
    QueryScreen {
        layout: vertical;
    }
    QueryScreen > #query-title {
        height: 1;
        text-style: bold;
    }
    QueryScreen > #query-canned {
        height: auto;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    QueryScreen > #query-sql {
        height: 3;
    }
    QueryScreen > #query-status {
        height: 1;
    }
    QueryScreen > #query-results {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="query.back"),
        Binding("ctrl+r", "refresh_views", "Reload traces", id="query.refresh"),
        *(
            Binding(key, f"canned({index})", name, id=f"query.canned_{index + 1}")
            for index, (key, name) in enumerate(zip(CANNED_KEYS, CANNED_ORDER, strict=False))
        ),
    ]

    class QueryDone(Message):
        """A query finished; ``table`` is its result (cut to ``MAX_ROWS`` if ``truncated``)."""

        def __init__(
            self, run: int, label: str, table: pa.Table, elapsed_ms: float, truncated: bool
        ) -> None:
            super().__init__()
            self.run = run
            self.label = label
            self.table = table
            self.elapsed_ms = elapsed_ms
            self.truncated = truncated

    class QueryFailed(Message):
        """A query was refused or failed; ``error`` is one line saying why."""

        def __init__(self, run: int, label: str, error: str, elapsed_ms: float) -> None:
            super().__init__()
            self.run = run
            self.label = label
            self.error = error
            self.elapsed_ms = elapsed_ms

    def __init__(
        self,
        traces: Path | TraceStore,
        *,
        max_rows: int = MAX_ROWS,
        timeout_s: float | None = QUERY_TIMEOUT_S,
        run_first: str | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._owns_store = not isinstance(traces, TraceStore)
        self._store: TraceStore | None = traces if isinstance(traces, TraceStore) else None
        self.traces_root = traces.root if isinstance(traces, TraceStore) else Path(traces)
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self._deadline: QueryDeadline | None = None  # the running query's, to stop it
        self._run_first = run_first  # a canned query to run as the screen opens
        # DuckDB connections are not for two threads at once; a new query waits for the last.
        self._store_lock = threading.Lock()
        self._run = 0
        # A stop may come before the worker has its deadline: runs up to ``_stopped_through``
        # are to stop, for ``_stop_why``; the lock pairs that record with ``_deadline``.
        self._stop_lock = threading.Lock()
        self._stopped_through = 0
        self._stop_why = ""
        self.running = False
        self.last_error: str | None = None
        self.last_elapsed_ms: float | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"Query the traces under {self.traces_root}", id="query-title", markup=False)
        yield Static(self._canned_help(), id="query-canned", markup=False)
        yield Input(
            placeholder="SQL over events, evals, questions, commits, tool_calls, sessions "
            "(enter runs)",
            id="query-sql",
        )
        yield Static("", id="query-status", markup=False)
        yield ArrowTable(id="query-results")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#query-sql", Input).focus()
        if self._run_first is not None:
            self.run_canned(self._run_first)

    def on_unmount(self) -> None:
        self.stop_query("the query screen was left")
        # Close only a store made here, and never under a query still running in its thread.
        if self._owns_store and self._store is not None and self._store_lock.acquire(False):
            try:
                self._store.close()
            finally:
                self._store_lock.release()

    @property
    def results(self) -> ArrowTable:
        return self.query_one("#query-results", ArrowTable)

    # -- running ---------------------------------------------------------------------------

    def run_sql(self, sql: str) -> None:
        """Run ``sql`` in a worker; the results replace the table when it finishes."""
        sql = sql.strip()
        if not sql:
            self._set_status(Text("type a query, or press F5..F9 for a canned one"))
            return
        self._start(label=_first_words(sql), sql=sql, canned=None)

    def run_canned(self, name: str) -> None:
        """Run the canned query ``name`` and put its SQL in the input, ready to edit."""
        query = CANNED[name]
        self.query_one("#query-sql", Input).value = inline_params(query.sql, query.params)
        self._start(label=name, sql=None, canned=name)

    def _start(self, label: str, sql: str | None, canned: str | None) -> None:
        # The older query would only hold the connection; its results would be dropped anyway.
        self.stop_query("a newer query was started")
        self._run += 1
        self.running = True
        self._set_status(Text(f"running {label} …", style="italic"))
        self._query_worker(self._run, label, sql, canned)

    def stop_query(self, why: str) -> None:
        """Interrupt the running query, if any, and any started before it that has not begun
        (from any thread); it ends as ``QueryFailed``."""
        with self._stop_lock:
            self._stopped_through = self._run
            self._stop_why = why
            deadline = self._deadline
        if deadline is not None:
            deadline.stop(why)

    @work(thread=True, exclusive=True, group="query", exit_on_error=False)
    def _query_worker(self, run: int, label: str, sql: str | None, canned: str | None) -> None:
        started = time.perf_counter()
        deadline: QueryDeadline | None = None
        try:
            with self._store_lock:
                store = self._connected_store()
                with QueryDeadline(store, self.timeout_s) as deadline:
                    with self._stop_lock:
                        self._deadline = deadline
                        asked = self._stop_why if run <= self._stopped_through else None
                    if asked is not None:
                        deadline.stop(asked)  # asked for while the views were building
                    try:
                        reader = (
                            store.canned_reader(canned) if canned else store.query_reader(sql or "")
                        )
                        table, truncated = read_capped(reader, self.max_rows)
                    finally:
                        with self._stop_lock:
                            self._deadline = None
        except Exception as error:  # any failure is one line on the screen, never a crash
            elapsed = (time.perf_counter() - started) * 1000
            stopped = deadline.stopped if deadline is not None else None
            why = f"stopped: {stopped}" if stopped else _one_line(error)
            self.post_message(self.QueryFailed(run, label, why, elapsed))
            return
        elapsed = (time.perf_counter() - started) * 1000
        self.post_message(self.QueryDone(run, label, table, elapsed, truncated))

    def _connected_store(self) -> TraceStore:
        """The store, made (and its views built) in the worker: both read the disk."""
        if self._store is None:
            self._store = TraceStore(self.traces_root)
        self._store.connect()
        return self._store

    def on_query_screen_query_done(self, message: QueryDone) -> None:
        message.stop()
        if message.run != self._run:
            return  # an older query, overtaken
        self.running = False
        self.last_error = None
        self.last_elapsed_ms = message.elapsed_ms
        rows = message.table.num_rows
        note = f"(first {rows:,}; there are more)" if message.truncated else ""
        self.results.set_table(message.table, note=note)
        status = f"{message.label}: {rows:,} row{'' if rows == 1 else 's'}"
        status += f" in {message.elapsed_ms:,.0f} ms"
        if message.truncated:
            status += f", cut at {rows:,}"
        self._set_status(Text(status))

    def on_query_screen_query_failed(self, message: QueryFailed) -> None:
        message.stop()
        if message.run != self._run:
            return
        self.running = False
        self.last_error = message.error
        self.last_elapsed_ms = message.elapsed_ms
        self._set_status(Text(f"error: {message.error}", style="bold red"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.run_sql(event.value)

    # -- actions ---------------------------------------------------------------------------

    def action_canned(self, index: int) -> None:
        if 0 <= index < len(CANNED_ORDER):
            self.run_canned(CANNED_ORDER[index])

    def action_back(self) -> None:
        self.stop_query("the query screen was left")
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_refresh_views(self) -> None:
        self._set_status(Text("reloading the traces …", style="italic"))
        self._refresh_worker()

    @work(thread=True, exclusive=True, group="query-refresh", exit_on_error=False)
    def _refresh_worker(self) -> None:
        try:
            with self._store_lock:
                store = self._connected_store()
                store.refresh()
                skipped = len(store.warnings)
        except Exception as error:
            self.app.call_from_thread(
                self._set_status, Text(f"error: {_one_line(error)}", style="bold red")
            )
            return
        note = f" ({skipped} files skipped)" if skipped else ""
        self.app.call_from_thread(self._set_status, Text(f"traces reloaded{note}"))

    def _set_status(self, text: Text) -> None:
        self.query_one("#query-status", Static).update(text)

    def _canned_help(self) -> str:
        lines = []
        for key, name in zip(CANNED_KEYS, CANNED_ORDER, strict=False):
            lines.append(f"{key.upper():>3}  {name:<16} {CANNED[name].description}")
        return "\n".join(lines)


def read_capped(reader: pa.RecordBatchReader, max_rows: int) -> tuple[pa.Table, bool]:
    """At most ``max_rows`` rows of ``reader`` as a table, and whether there were more."""
    batches: list[pa.RecordBatch] = []
    rows = 0
    truncated = False
    for batch in reader:
        batches.append(batch)
        rows += batch.num_rows
        if rows > max_rows:
            truncated = True
            break
    close = getattr(reader, "close", None)
    if close is not None:
        close()
    table = pa.Table.from_batches(batches, schema=reader.schema)
    if truncated:
        table = table.slice(0, max_rows)
    return table, truncated


_PARAM = re.compile(r"\$(\w+)")
# The canned queries' optional filter: ``$p IS NULL OR column = $p``.
_OPTIONAL = re.compile(r"\$(\w+) IS NULL OR ([\w.]+) = \$\1\b")
# What an unset optional filter leaves behind, tidied away.
_LEFT_OVER = (
    (re.compile(r"\bWHERE\s+\(?TRUE\)?\s+AND\b"), "WHERE"),
    (re.compile(r"\s+AND\s+\(?TRUE\)?(?=\s|$)"), ""),
    (re.compile(r"\bWHERE\s+\(?TRUE\)?(?=\s|$)"), ""),
)


def inline_params(sql: str, params: dict[str, Any]) -> str:
    """``sql`` on one line with its ``$name`` parameters written as SQL literals, as a person
    would write it: an optional filter left unset disappears (no ``NULL IS NULL OR s = NULL``),
    one that is set reads ``s = 'value'``."""

    def optional(match: re.Match[str]) -> str:
        name, column = match.group(1), match.group(2)
        if name not in params:
            return match.group(0)
        return "TRUE" if params[name] is None else f"{column} = {_literal(params[name])}"

    def literal(match: re.Match[str]) -> str:
        name = match.group(1)
        return _literal(params[name]) if name in params else match.group(0)

    text = " ".join(_PARAM.sub(literal, _OPTIONAL.sub(optional, sql)).split())
    for pattern, replacement in _LEFT_OVER:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _first_words(sql: str, limit: int = 40) -> str:
    flat = " ".join(sql.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _one_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
