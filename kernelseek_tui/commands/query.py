"""`kernelseek query`: any SQL over the trace views, or a canned query, as a table or a file."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

FORMATS = ("table", "csv", "json", "parquet")
DEFAULT_TIMEOUT_S = 600.0  # a runaway cross join, not an honest query over a few sessions

EPILOG = """\
views:
  events            every event of every session (finished Parquet plus the WAL tail of
                    running sessions); one row per event, ordered by (session_id, seq)
  evals, questions, commits, tool_calls
                    events of one kind
  jumps             passing evals that beat the session's best so far by more than 5%
  question_jumps    each jump with the question asked last before it
  question_effect   per question id: asked, followed_by_jump (within 3 evals), median_gain
  sessions          one row per session directory
  table macros jumps_at(threshold), question_jumps_at(threshold) and
  question_effect_at(threshold, k) take other parameters.

output:
  --format table (default) prints at most --max-rows rows, cells capped at --max-width
  characters, then "Showing N of M rows". csv and json (one JSON array of row objects)
  write every row to stdout or --output FILE. parquet writes to --output FILE, or to
  stdout when stdout is redirected (never to a terminal).

examples:
  kernelseek query "SELECT kind, count(*) FROM events GROUP BY kind"
  kernelseek query --canned question-jumps --param threshold=0.1
  kernelseek query --canned timeline --session s1 --format csv --output s1.csv
  kernelseek query --list
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "query",
        help="run SQL or a canned query over the traces",
        description="Run any SQL over the trace views (DuckDB), or a canned query.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sql", nargs="?", metavar="SQL", help="the SQL to run over the views")
    parser.add_argument("--canned", metavar="NAME", help="run a canned query (see --list)")
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a canned query's parameter (repeatable)",
    )
    parser.add_argument(
        "--session", metavar="ID", help="shorthand for --param session=ID (canned queries)"
    )
    parser.add_argument("--list", action="store_true", help="list the canned queries and exit")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument(
        "--max-rows", type=int, default=40, metavar="N", help="rows a table shows (default 40)"
    )
    parser.add_argument(
        "--max-width", type=int, default=40, metavar="N", help="widest table cell (default 40)"
    )
    parser.add_argument(
        "--no-live", action="store_true", help="leave out WAL events not yet in Parquet"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"stop a query that runs longer (default {DEFAULT_TIMEOUT_S:g} s; 0: never). "
        "Ctrl-C stops it at any time",
    )
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.commands.common import read_traces_root
    from kernelseek_tui.trace.logs import warnings_to_stderr
    from kernelseek_tui.trace.queries import CANNED
    from kernelseek_tui.trace.stopping import run_stoppable
    from kernelseek_tui.trace.store import TraceStore

    if args.list:
        print(_list_canned(CANNED))
        return 0
    if bool(args.sql) == bool(args.canned):
        raise KernelseekError("give either SQL or --canned NAME (see --list)")
    if args.format == "parquet" and not args.output and sys.stdout.isatty():
        raise KernelseekError("parquet output is binary: give --output FILE or redirect stdout")
    if args.max_rows < 0:
        raise KernelseekError("--max-rows must be zero or more")
    if args.timeout < 0:
        raise KernelseekError("--timeout must be zero (never) or more")
    with warnings_to_stderr("kernelseek query"):
        store = TraceStore(read_traces_root(args.traces), live=not args.no_live)
        if args.canned:
            params = _parse_params(args, CANNED)
            _require_session(store.root, params.get("session"))

            def start() -> Any:
                return store.canned_reader(args.canned, **params)
        else:
            if args.param or args.session:
                raise KernelseekError("--param and --session go with --canned")

            def start() -> Any:
                return store.query_reader(args.sql)

        # Rows stream while they are written out, so the whole of it is what Ctrl-C and the
        # timeout must be able to stop.
        try:
            run_stoppable(store, lambda: _emit(start(), args), timeout_s=args.timeout or None)
        finally:
            # Shut DuckDB down before the interpreter does: its threads may still be winding
            # down an interrupted query, and a database torn down under them aborts. A query
            # that would not stop keeps its connection busy; exiting is all that is left then.
            with contextlib.suppress(Exception):
                store.close()
    return 0


def _emit(reader: Any, args: argparse.Namespace) -> None:
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from kernelseek_tui.trace.tabular import format_table, take_head, write_json

    if args.format == "table":
        text = format_table(take_head(reader, args.max_rows), max_width=max(4, args.max_width))
        _write_text(text + "\n", args.output)
        return
    if args.format == "json":
        if args.output:
            with _open_output(args.output, "w") as out:
                write_json(reader, out)
        else:
            write_json(reader, sys.stdout)
        return
    target = _open_output(args.output, "wb") if args.output else sys.stdout.buffer
    try:
        if args.format == "csv":
            with pa_csv.CSVWriter(target, reader.schema) as writer:
                for batch in reader:
                    writer.write_batch(batch)
        else:
            with pq.ParquetWriter(target, reader.schema, compression="zstd") as writer:
                for batch in reader:
                    writer.write_batch(batch)
    finally:
        if args.output:
            target.close()
        else:
            sys.stdout.buffer.flush()


def _write_text(text: str, output: str | None) -> None:
    if output:
        with _open_output(output, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)


def _open_output(path: str, mode: str) -> Any:
    try:
        return open(path, mode, encoding=None if "b" in mode else "utf-8")
    except OSError as error:
        raise KernelseekError(f"cannot write {path}: {error.strerror}") from error


def _parse_params(args: argparse.Namespace, canned: dict[str, Any]) -> dict[str, Any]:
    query = canned.get(args.canned)
    if query is None:
        raise KernelseekError(f"no canned query {args.canned!r}; choose from {', '.join(canned)}")
    raw = list(args.param)
    if args.session:
        raw.append(f"session={args.session}")
    params: dict[str, Any] = {}
    for item in raw:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise KernelseekError(f"--param wants KEY=VALUE, got {item!r}")
        if key not in query.params:
            accepted = ", ".join(query.params) or "none"
            raise KernelseekError(
                f"canned query {query.name!r} has no parameter {key!r} (it takes: {accepted})"
            )
        default = query.params[key]
        try:
            params[key] = type(default)(value) if default is not None else value
        except ValueError as error:
            kind = "a whole number" if isinstance(default, int) else "a number"
            raise KernelseekError(f"parameter {key} wants {kind}, got {value!r}") from error
    return params


def _require_session(root: Any, session: str | None) -> None:
    """A session filter that names no session would give no rows without a word: refuse it."""
    if session is not None and not (root / session).is_dir():
        raise KernelseekError(f"no session {session!r} under {root} (see `kernelseek ls`)")


def _list_canned(canned: dict[str, Any]) -> str:
    lines = []
    for query in canned.values():
        lines.append(f"{query.name}: {query.description}")
        for key, default in query.params.items():
            shown = "all" if default is None else default
            lines.append(f"    {key} (default {shown}): {query.param_help.get(key, '')}")
    return "\n".join(lines)
