"""DuckDB views over every session under a traces root, and the canned queries.

Views: ``events`` (every event of every session: finished Parquet plus, for running sessions,
the WAL events not yet in Parquet), ``evals``, ``questions``, ``commits``, ``tool_calls``,
``jumps``, ``question_jumps``, ``question_effect`` (the derived ones at their default
parameters; the table macros ``jumps_at(threshold)``, ``question_jumps_at(threshold)`` and
``question_effect_at(threshold, k)`` take others), ``sessions`` (one row per session
directory) and ``experiments`` (one row per session an experiment plans). See ``queries`` and
``experiments`` for the definitions. An experiment's sessions, one level down under
``<root>/<experiment>/``, are in every view as the root's own are.

Parquet files are validated by reading their footers before they join the view; a bad one is
skipped with a warning (kept in ``TraceStore.warnings``) and never breaks a query of the others.

The connection only reads, and only under the root: the SQL box (also served to a browser by
``kernelseek serve``) takes any text, so statements other than SELECT and EXPLAIN are refused,
DuckDB's file access is limited to the traces root and that configuration is locked. A query
can be stopped from another thread (``interrupt``): see ``trace.stopping``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.experiments import EXPERIMENTS_VIEW, experiment_sessions, session_dirs
from kernelseek_tui.trace.layout import SessionScan, conform, scan_session
from kernelseek_tui.trace.queries import CANNED, DEFAULT_K, DEFAULT_THRESHOLD, DERIVED_VIEWS
from kernelseek_tui.trace.reader import PartVanished, read_scanned
from kernelseek_tui.trace.schema import EVENT_SCHEMA
from kernelseek_tui.trace.wal import read_wal

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger("kernelseek_tui.trace")

_BATCH_ROWS = 65_536
# What the query box may run: statements that read. Everything else (COPY, ATTACH, SET,
# CREATE, INSTALL, ...) could write files or undo the lock-down, and no view needs it.
_READING_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})

_SESSIONS_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("dir", pa.string()),
        ("status", pa.string()),
        ("live", pa.bool_()),
        ("files", pa.int32()),
        ("skipped_files", pa.int32()),
    ]
)


class QueryError(KernelseekError):
    """SQL that DuckDB refused, or a canned query asked for wrongly."""


@dataclass(frozen=True, slots=True)
class QuestionStats:
    """How a question has fared across the traces, for the repertoire's ranking."""

    question_id: str
    asked: int
    followed_by_jump: int
    median_gain: float | None

    @property
    def jump_rate(self) -> float:
        return self.followed_by_jump / self.asked if self.asked else 0.0


class TraceStore:
    """The traces under ``root`` as DuckDB views (see the module docstring).

    ``live`` (the default) adds the WAL events of running sessions. The views are built on the
    first ``connect()``; ``refresh()`` rebuilds them to pick up new sessions and events.
    """

    def __init__(self, root: Path, *, live: bool = True) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise KernelseekError(
                f"traces root {str(self.root)!r} does not exist or is not a directory"
            )
        self.live = live
        self.warnings: list[str] = []
        self._con: duckdb.DuckDBPyConnection | None = None

    def connect(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection holding the views (built once, then reused)."""
        if self._con is None:
            self._con = self._build()
        return self._con

    def refresh(self) -> duckdb.DuckDBPyConnection:
        """Rebuild the views from what is on disk now."""
        self.close()
        return self.connect()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def interrupt(self) -> None:
        """Stop the query running on the connection now, from any thread (it fails with an
        interrupt error in its own thread); nothing happens when none runs."""
        con = self._con
        if con is not None:
            con.interrupt()

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        """Run any SQL over the views and return the whole result as an Arrow table."""
        return self.query_reader(sql, params).read_all()

    def query_reader(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> pa.RecordBatchReader:
        """Run SQL and stream the result as Arrow record batches (for large results)."""
        import duckdb

        for attempt in range(2):
            con = self.connect()
            try:
                _require_reading(con, sql)
                relation = con.sql(sql, params=dict(params) if params else None)
                # A statement without a result (SET, CREATE VIEW, ...); duckdb's stubs say sql()
                # always returns a relation, so mypy calls this unreachable.
                if relation is None:
                    return pa.RecordBatchReader.from_batches(pa.schema([]), [])  # type: ignore[unreachable]
                return relation.to_arrow_reader(_BATCH_ROWS)
            except duckdb.IOException as error:
                # A live writer merged or compacted files the views were built on: rebuild
                # them from what is on disk now, once.
                if attempt:
                    raise QueryError(_one_line(error)) from error
                self.refresh()
            except duckdb.Error as error:
                raise QueryError(_one_line(error)) from error
        raise AssertionError("unreachable")

    def canned(self, name: str, **params: Any) -> pa.Table:
        """Run a canned query by name (see ``CANNED``) with its parameters."""
        sql, values = self._canned_sql(name, params)
        return self.query(sql, values)

    def canned_reader(self, name: str, **params: Any) -> pa.RecordBatchReader:
        sql, values = self._canned_sql(name, params)
        return self.query_reader(sql, values)

    def question_stats(
        self, *, threshold: float = DEFAULT_THRESHOLD, k: int = DEFAULT_K
    ) -> dict[str, QuestionStats]:
        """Per question id: times asked, times a jump followed within ``k`` evals, median gain."""
        table = self.query(
            "SELECT question_id, asked, followed_by_jump, median_gain "
            "FROM question_effect_at($threshold, $k) WHERE question_id IS NOT NULL",
            {"threshold": float(threshold), "k": int(k)},
        )
        return {
            row["question_id"]: QuestionStats(
                question_id=row["question_id"],
                asked=int(row["asked"]),
                followed_by_jump=int(row["followed_by_jump"]),
                median_gain=row["median_gain"],
            )
            for row in table.to_pylist()
        }

    # -- building the views ----------------------------------------------------------------

    def _canned_sql(self, name: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        query = CANNED.get(name)
        if query is None:
            raise QueryError(f"no canned query {name!r}; choose from {', '.join(CANNED)}")
        unknown = sorted(set(params) - set(query.params))
        if unknown:
            accepted = ", ".join(query.params) or "none"
            raise QueryError(
                f"canned query {name!r} takes no parameter {', '.join(unknown)} "
                f"(it takes: {accepted})"
            )
        return query.sql, {**query.params, **params}

    def _build(self) -> duckdb.DuckDBPyConnection:
        import duckdb

        self.warnings = []
        with _collect_warnings(self.warnings):
            files, tails, sessions = self._gather()
            planned = experiment_sessions(self.root)
        con = duckdb.connect(":memory:")
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        # A Python name in the SQL must not reach the caller's variables (DuckDB's replacement
        # scans would read any DataFrame in scope); the views use registered tables only.
        con.execute("SET python_enable_replacements = false")
        tail = conform(pa.concat_tables(tails, promote_options="permissive")) if tails else None
        con.register("_wal_events", tail if tail is not None else EVENT_SCHEMA.empty_table())
        con.register("_session_dirs", sessions)
        con.register("_experiment_sessions", planned)
        if files:
            listed = ", ".join(_sql_string(str(path.absolute())) for path in files)
            con.execute(
                f"CREATE VIEW _parquet_events AS "
                f"SELECT * FROM read_parquet([{listed}], union_by_name = true)"
            )
            union = "SELECT * FROM _parquet_events"
            if tail is not None:
                union += " UNION ALL BY NAME SELECT * FROM _wal_events"
        else:
            union = "SELECT * FROM _wal_events"
        con.execute(f"CREATE VIEW events AS {union}")
        con.execute(DERIVED_VIEWS)
        con.execute(
            """
            CREATE VIEW sessions AS
            SELECT d.session_id, d.status, d.live, count(e.seq) AS events,
                   min(e.ts) AS started, max(e.ts) AS last_event,
                   count(*) FILTER (WHERE e.kind = 'eval') AS evals,
                   max(e.speedup) FILTER (WHERE e.kind = 'eval' AND e.verdict = 'pass')
                       AS best_speedup,
                   count(*) FILTER (WHERE e.kind = 'question') AS questions,
                   count(*) FILTER (WHERE e.kind = 'commit') AS commits,
                   d.skipped_files, d.dir
            FROM _session_dirs AS d LEFT JOIN events AS e ON e.session_id = d.session_id
            GROUP BY ALL
            """
        )
        con.execute(EXPERIMENTS_VIEW)
        _lock_down(con, self.root)
        return con

    def _gather(self) -> tuple[list[Path], list[pa.Table], pa.Table]:
        files: list[Path] = []
        tails: list[pa.Table] = []
        rows: list[dict[str, Any]] = []
        for session_dir in session_dirs(self.root):
            gathered = self._gather_session(session_dir)
            if gathered is None:
                continue
            scan, session_files, tail = gathered
            files.extend(session_files)
            if tail is not None and tail.num_rows:
                tails.append(tail)
            # "live": the view holds WAL events that no Parquet file has yet.
            has_tail = tail is not None and tail.num_rows > 0
            live = scan.wal_pending if scan.needs_dedup else has_tail
            rows.append(
                {
                    "session_id": session_dir.name,
                    "dir": str(session_dir),
                    "status": _status(scan.paths),
                    "live": live,
                    "files": len(scan.parts),
                    "skipped_files": len(scan.bad),
                }
            )
        return files, tails, pa.Table.from_pylist(rows, schema=_SESSIONS_SCHEMA)

    def _gather_session(
        self, session_dir: Path
    ) -> tuple[SessionScan, list[Path], pa.Table | None] | None:
        """One session's Parquet files for the view and the Arrow rows to union with them."""
        for attempt in range(3):
            scan = scan_session(session_dir)
            if not scan.has_events:
                return None
            try:
                if scan.needs_dedup:
                    # Rare (a crash mid-compaction, a damaged file): the reader sorts it out.
                    table = read_scanned(scan, resolve_blobs=False, strict=attempt < 2).table
                    return scan, [], table
                tail = None
                if self.live and scan.wal_pending:
                    chunk = read_wal(scan.paths.wal, scan.wal_from)
                    if chunk.missing and attempt < 2:
                        raise PartVanished(str(scan.paths.wal))
                    tail = chunk.table
                    if scan.max_seq is not None:
                        tail = tail.filter(pc.greater(tail.column("seq"), scan.max_seq))
                return scan, [part.path for part in scan.parts], tail
            except PartVanished:
                continue  # a live writer compacted under us: scan again
        return None


def _lock_down(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """From here on the connection reads files under ``root`` only, and cannot be reset."""
    allowed = str(root.absolute()).rstrip("/") + "/"
    con.execute("SET allowed_directories = [$dir]", {"dir": allowed})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _require_reading(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` only reads."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(_one_line(error)) from error
    for statement in statements:
        kind = statement.type.name
        if kind not in _READING_STATEMENTS:
            raise QueryError(
                f"the traces are read-only here: {kind} statements are refused "
                "(SELECT and EXPLAIN only)"
            )


def _status(paths: SessionPaths) -> str | None:
    try:
        status = json.loads(paths.meta.read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None
    return str(status) if status is not None else None


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _one_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class _Collector(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(record.getMessage())


@contextmanager
def _collect_warnings(sink: list[str]) -> Iterator[None]:
    handler = _Collector(sink)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
