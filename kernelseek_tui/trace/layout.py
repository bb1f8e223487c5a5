"""What is on disk for one session, and which parts of it can be trusted.

A session directory can be in any state a crash leaves: a WAL alone; a WAL with segments; an
``events.parquet`` with a WAL and segments that overlap it in ``seq``. ``scan_session`` reads only
Parquet footers and file sizes, so that it is cheap enough to run for every session when the store
builds its views. It answers:

- which Parquet files are readable (a truncated or corrupt one is skipped with a warning);
- from which WAL byte offset the events may not be in Parquet yet (``wal_from``): every segment
  records the WAL byte range it was rolled from, and the segments' ranges chain from offset 0;
  where the chain breaks (a lost segment) the WAL is read from the break;
- whether the parts may overlap in ``seq`` (then a reader must deduplicate).
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.schema import EVENT_SCHEMA, SCHEMA_VERSION_KEY

log = logging.getLogger("kernelseek_tui.trace")

META_SESSION: Final = b"kernelseek.session_id"
META_FIRST_SEQ: Final = b"kernelseek.first_seq"
META_LAST_SEQ: Final = b"kernelseek.last_seq"
META_WAL_START: Final = b"kernelseek.wal_start"
META_WAL_END: Final = b"kernelseek.wal_end"
PARQUET_SUFFIX: Final = ".parquet"


@dataclass(frozen=True, slots=True)
class ParquetPart:
    """One readable Parquet file of a session, with the seq range and WAL range it covers."""

    path: Path
    num_rows: int
    first_seq: int | None
    last_seq: int | None
    wal_start: int | None = None
    wal_end: int | None = None


@dataclass(slots=True)
class SessionScan:
    """The trusted parts of one session directory (see the module docstring)."""

    paths: SessionPaths
    parts: list[ParquetPart] = field(default_factory=list)
    bad: list[tuple[Path, str]] = field(default_factory=list)
    wal_size: int = 0
    wal_from: int = 0
    needs_dedup: bool = False  # parts overlap in seq, or one was unreadable

    @property
    def max_seq(self) -> int | None:
        seqs = [p.last_seq for p in self.parts if p.last_seq is not None]
        return max(seqs) if seqs else None

    @property
    def has_events(self) -> bool:
        """True when the directory holds any trace file (readable or not)."""
        return bool(self.parts) or bool(self.bad) or self.wal_size > 0

    @property
    def wal_pending(self) -> bool:
        """True when the WAL holds bytes that may not be in Parquet yet."""
        return self.wal_size > self.wal_from


def segment_name(first_seq: int, last_seq: int) -> str:
    return f"{first_seq:012d}-{last_seq:012d}{PARQUET_SUFFIX}"


def part_metadata(
    session_id: str,
    first_seq: int,
    last_seq: int,
    wal_start: int | None = None,
    wal_end: int | None = None,
) -> dict[bytes, bytes]:
    """The key-value metadata every Parquet file of the trace carries."""
    meta = {
        SCHEMA_VERSION_KEY: EVENT_SCHEMA.metadata[SCHEMA_VERSION_KEY],
        META_SESSION: session_id.encode(),
        META_FIRST_SEQ: str(first_seq).encode(),
        META_LAST_SEQ: str(last_seq).encode(),
    }
    if wal_start is not None and wal_end is not None:
        meta[META_WAL_START] = str(wal_start).encode()
        meta[META_WAL_END] = str(wal_end).encode()
    return meta


def parquet_files(paths: SessionPaths) -> list[Path]:
    """The finished Parquet files of a session: events.parquet, then segments in seq order."""
    files = [paths.events] if paths.events.is_file() else []
    try:
        with os.scandir(paths.segments) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(PARQUET_SUFFIX))
    except FileNotFoundError:
        names = []
    return files + [paths.segments / name for name in names]


def inspect_parquet(path: Path) -> ParquetPart:
    """Read a Parquet footer; raise (any exception) when the file cannot be trusted."""
    meta = pq.read_metadata(path)
    names = set(meta.schema.names)
    if not {"seq", "session_id", "kind"} <= names:
        raise ValueError("not a trace file (no seq/session_id/kind columns)")
    kv = meta.metadata or {}
    first, last = _int(kv.get(META_FIRST_SEQ)), _int(kv.get(META_LAST_SEQ))
    if meta.num_rows and (first is None or last is None):
        seq = pq.read_table(path, columns=["seq"]).column("seq")
        first, last = pc.min(seq).as_py(), pc.max(seq).as_py()
    return ParquetPart(
        path=path,
        num_rows=meta.num_rows,
        first_seq=first,
        last_seq=last,
        wal_start=_int(kv.get(META_WAL_START)),
        wal_end=_int(kv.get(META_WAL_END)),
    )


def scan_session(session_dir: Path, *, warn: bool = True) -> SessionScan:
    """Inspect a session directory without reading any events (see the module docstring)."""
    paths = SessionPaths(Path(session_dir))
    scan = SessionScan(paths)
    for path in parquet_files(paths):
        try:
            scan.parts.append(inspect_parquet(path))
        except Exception as error:  # pyarrow raises several types for a damaged file
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            scan.bad.append((path, reason))
            if warn:
                log.warning("skipping unreadable Parquet file %s: %s", path, reason)
    try:
        scan.wal_size = paths.wal.stat().st_size
    except FileNotFoundError:
        scan.wal_size = 0
    scan.wal_from = _wal_chain_end(scan.parts) if scan.wal_size else 0
    if scan.wal_from > scan.wal_size:
        # The segments describe a longer WAL than the one on disk: trust neither offset.
        scan.wal_from = 0
    # A segment that covers WAL bytes past ``wal_from`` means the chain broke (a segment was
    # lost or set aside): the WAL read from there repeats events that later segments hold.
    beyond = any(p.wal_end is not None and p.wal_end > scan.wal_from for p in scan.parts)
    scan.needs_dedup = _overlap(scan.parts) or bool(scan.bad) or beyond
    return scan


def _wal_chain_end(parts: list[ParquetPart]) -> int:
    """The WAL offset up to which every byte was rolled into a segment that is still readable."""
    ranges = sorted(
        (p.wal_start, p.wal_end) for p in parts if p.wal_start is not None and p.wal_end is not None
    )
    position = 0
    for start, end in ranges:
        if start > position:
            break
        position = max(position, end)
    return position


def _overlap(parts: list[ParquetPart]) -> bool:
    ranges = sorted(
        (p.first_seq, p.last_seq)
        for p in parts
        if p.first_seq is not None and p.last_seq is not None
    )
    return any(b[0] <= a[1] for a, b in itertools.pairwise(ranges))


def conform(table: pa.Table) -> pa.Table:
    """A table in the canonical schema: missing columns as nulls, canonical order first.

    Columns a newer schema added are kept after the known ones, so nothing is dropped.
    """
    if table.schema.equals(EVENT_SCHEMA, check_metadata=False):
        return table.replace_schema_metadata(EVENT_SCHEMA.metadata)
    arrays = []
    for f in EVENT_SCHEMA:
        if f.name in table.column_names:
            column = table.column(f.name)
            arrays.append(column if column.type == f.type else column.cast(f.type))
        else:
            arrays.append(pa.nulls(table.num_rows, f.type))
    fields = list(EVENT_SCHEMA)
    for name in table.column_names:
        if name not in EVENT_SCHEMA.names:
            arrays.append(table.column(name))
            fields.append(table.schema.field(name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=EVENT_SCHEMA.metadata))


def _int(raw: bytes | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def writer_active(session_dir: Path) -> bool:
    """True while a TraceWriter (in any process) holds the session's writer lock."""
    import fcntl

    try:
        fd = os.open(SessionPaths(Path(session_dir)).writer_lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
