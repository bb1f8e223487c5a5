"""Reading one session: its finished Parquet plus the WAL tail, deduplicated by ``seq``.

Works on every state a crash can leave (see ``layout``): a file that cannot be read is skipped
with a warning and its events come back from the WAL where the WAL still has them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.blobs import BlobStore, resolve_table
from kernelseek_tui.trace.layout import SessionScan, conform, scan_session, writer_active
from kernelseek_tui.trace.schema import EVENT_SCHEMA, Event
from kernelseek_tui.trace.wal import read_wal

log = logging.getLogger("kernelseek_tui.trace")

_ATTEMPTS = 4


@dataclass(slots=True)
class SessionSnapshot:
    """A session's events at one moment, and the WAL offset to tail from for what comes next."""

    table: pa.Table
    wal_offset: int


def read_session(
    session_dir: Path, *, resolve_blobs: bool = True, columns: Sequence[str] | None = None
) -> pa.Table:
    """All events of a session as an Arrow table in ``EVENT_SCHEMA``, sorted by ``seq``.

    Reads the finished Parquet files and the WAL events not yet in them, drops duplicate
    ``seq`` values, and (unless ``resolve_blobs`` is False) puts large payloads back from
    ``blobs/``. ``columns`` limits the columns read (``seq`` is always included).
    """
    return read_session_snapshot(session_dir, resolve_blobs=resolve_blobs, columns=columns).table


def read_session_snapshot(
    session_dir: Path, *, resolve_blobs: bool = True, columns: Sequence[str] | None = None
) -> SessionSnapshot:
    """Like ``read_session``, plus the WAL offset a live view passes to ``tail_wal`` next."""
    session_dir = Path(session_dir)
    for _ in range(_ATTEMPTS - 1):
        try:
            return read_scanned(
                scan_session(session_dir),
                resolve_blobs=resolve_blobs,
                columns=columns,
                strict=True,
            )
        except PartVanished:
            continue  # a live writer merged or compacted under us: look again
    return read_scanned(scan_session(session_dir), resolve_blobs=resolve_blobs, columns=columns)


class PartVanished(Exception):
    """A file the scan listed was removed before it was read (a writer merged or compacted)."""


def read_scanned(
    scan: SessionScan,
    *,
    resolve_blobs: bool = True,
    columns: Sequence[str] | None = None,
    full_wal: bool = False,
    strict: bool = False,
) -> SessionSnapshot:
    """Read the session ``scan`` describes (``full_wal`` re-reads the WAL from offset 0).

    ``strict`` raises ``PartVanished`` when a listed file is gone by the time it is read,
    instead of reading around it; the caller scans again.
    """
    wanted = _columns_to_read(columns, resolve_blobs)
    tables: list[pa.Table] = []
    wal_from = 0 if full_wal else scan.wal_from
    exact = scan.needs_dedup or full_wal
    for part in scan.parts:
        try:
            tables.append(conform(pq.read_table(part.path, columns=wanted)))
        except FileNotFoundError as error:
            if strict:
                raise PartVanished(str(part.path)) from error
            wal_from, exact = 0, True
        except Exception as error:  # a footer that read fine can still hide damaged pages
            log.warning("skipping unreadable Parquet file %s: %s", part.path, error)
            wal_from, exact = 0, True
    max_seq = scan.max_seq
    wal_offset = scan.wal_size if scan.wal_size else 0
    if scan.wal_size > wal_from:
        chunk = read_wal(scan.paths.wal, wal_from)
        if chunk.missing and strict:
            raise PartVanished(str(scan.paths.wal))
        wal_offset = chunk.end
        if chunk.torn_tail and not writer_active(scan.paths.dir):
            log.warning(
                "skipping a torn last line (%d bytes) of %s", chunk.torn_tail, scan.paths.wal
            )
        wal = chunk.table
        if not exact and max_seq is not None and wal.num_rows:
            wal = wal.filter(pc.greater(wal.column("seq"), max_seq))
        if wal.num_rows:
            tables.append(wal if wanted is None else wal.select(wanted))
    table = combine_parts(tables, wanted)
    if resolve_blobs:
        table = resolve_table(table, BlobStore(scan.paths.blobs))
    if columns is not None:
        table = table.select([name for name in wanted or () if name in columns or name == "seq"])
    return SessionSnapshot(table, wal_offset)


def tail_wal(
    session_dir: Path, offset: int = 0, *, resolve_blobs: bool = True
) -> tuple[list[Event], int]:
    """Events in complete WAL lines from byte ``offset``, and the offset to pass next time.

    A line still being written is left for the next call. When the WAL is gone (the session was
    compacted) nothing is returned and the offset stays; when it is shorter than ``offset`` (a
    new writer started a new WAL) it is read from the start, so callers dedup by ``seq``.
    """
    paths = SessionPaths(Path(session_dir))
    if not paths.wal.exists():
        return [], offset
    chunk = read_wal(paths.wal, offset)
    table = chunk.table
    if resolve_blobs:
        table = resolve_table(table, BlobStore(paths.blobs))
    return table_to_events(table), chunk.end


def table_to_events(table: pa.Table) -> list[Event]:
    """Rows of a table in ``EVENT_SCHEMA`` (or a subset holding the required columns) as Events."""
    return [Event.from_row(row) for row in table.to_pylist()]


def _columns_to_read(columns: Sequence[str] | None, resolve_blobs: bool) -> list[str] | None:
    if columns is None:
        return None
    unknown = [c for c in columns if c not in EVENT_SCHEMA.names]
    if unknown:
        raise ValueError(f"unknown event columns: {', '.join(unknown)}")
    wanted = {"seq", *columns}
    if resolve_blobs:
        wanted |= {"text", "tool_input", "attrs"}
    return [name for name in EVENT_SCHEMA.names if name in wanted]


def combine_parts(tables: list[pa.Table], wanted: list[str] | None) -> pa.Table:
    """Concatenate parts of one session, sorted by seq with the first copy of each seq kept."""
    if not tables:
        empty = EVENT_SCHEMA.empty_table()
        return empty if wanted is None else empty.select(wanted)
    if wanted is not None:
        tables = [t.select(wanted) for t in tables]
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    seq = table.column("seq")
    if table.num_rows > 1:
        flat = seq.combine_chunks()
        if not pc.all(pc.greater(flat[1:], flat[:-1])).as_py():
            # Overlapping parts (a crash between two steps of compaction) or out-of-order WAL
            # lines: sort stably and keep the first copy of each seq.
            table = table.take(pc.sort_indices(table, sort_keys=[("seq", "ascending")]))
            flat = table.column("seq").combine_chunks()
            keep = pc.not_equal(flat[1:], flat[:-1])
            mask = pa.concat_arrays([pa.array([True]), keep])
            table = table.filter(mask)
    return table
