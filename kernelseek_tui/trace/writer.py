"""The append-only trace writer: WAL (fsync per batch) -> Parquet segments -> events.parquet.

``append`` only assigns ``seq`` and buffers; ``flush`` writes the buffered events to the WAL
and fsyncs it, which is the acknowledgement: an event whose flush returned survives a SIGKILL.
A background thread flushes on a timer (so live views see events without the caller asking)
and rolls flushed batches into Parquet segments, written as ``*.tmp`` and renamed, each
recording the WAL byte range it came from. ``close`` compacts everything into one
``events.parquet`` sorted by ``seq`` (zstd) and removes the WAL and segments only after the
rename is durable.

Opening an existing session recovers it: a torn last WAL line is cut off, unreadable Parquet
files are set aside as ``*.corrupt``, WAL events that never reached a segment are rolled into
one now, and ``seq`` continues after the highest one on disk, so nothing is duplicated.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.blobs import DEFAULT_INLINE_LIMIT, BlobStore, externalize
from kernelseek_tui.trace.durable import TMP_SUFFIX, fsync_dir, write_parquet_atomic
from kernelseek_tui.trace.layout import (
    SessionScan,
    conform,
    part_metadata,
    scan_session,
    segment_name,
)
from kernelseek_tui.trace.reader import combine_parts as _combine
from kernelseek_tui.trace.reader import read_scanned
from kernelseek_tui.trace.schema import Event, to_json_text
from kernelseek_tui.trace.wal import decode_lines, encode_line, event_to_wal_dict, read_wal

log = logging.getLogger("kernelseek_tui.trace")

CORRUPT_SUFFIX: Final = ".corrupt"
_JSON_COLUMNS: Final = ("tool_input", "attrs")


class TraceWriteError(KernelseekError):
    """The trace could not be written (a locked session, a full disk, a closed writer)."""


@dataclass(frozen=True, slots=True)
class _Batch:
    """WAL bytes of one flush, and the byte range they occupy in the WAL."""

    data: bytes
    start: int
    end: int
    count: int


_STOP: Final = object()


class TraceWriter:
    """Append events to one session's trace (see the module docstring). Thread-safe.

    Tuning: ``batch_size`` events buffered before ``append`` flushes by itself;
    ``flush_interval_s`` how often the background thread flushes what is buffered;
    ``roll_events`` / ``roll_interval_s`` when flushed batches are rolled into a segment;
    ``max_segments`` how many segments may pile up before they are merged into one (so that a
    long, slow session does not leave thousands of small files for readers to open);
    ``inline_limit`` the longest ``text``/``tool_input``/``attrs`` kept inline (characters);
    ``fsync`` False only for throwaway traces (tests of other parts, benchmarks of them).
    """

    def __init__(
        self,
        session_dir: Path,
        session_id: str,
        *,
        batch_size: int = 1024,
        flush_interval_s: float = 0.2,
        roll_events: int = 4096,
        roll_interval_s: float = 30.0,
        max_segments: int = 16,
        inline_limit: int = DEFAULT_INLINE_LIMIT,
        fsync: bool = True,
    ) -> None:
        self.session_id = session_id
        self.paths = SessionPaths(Path(session_dir))
        self._batch_size = max(1, batch_size)
        self._flush_interval_s = flush_interval_s
        self._roll_events = max(1, roll_events)
        self._roll_interval_s = roll_interval_s
        self._max_segments = max(2, max_segments)
        self._inline_limit = inline_limit
        self._fsync = fsync
        self._blobs = BlobStore(self.paths.blobs)
        self._lock = threading.Lock()  # buffer and seq
        self._io_lock = threading.Lock()  # WAL writes, so that WAL order is seq order
        self._buffer: list[Event] = []
        self._queue: queue.Queue[object] = queue.Queue()
        self._error: BaseException | None = None
        self._closed = False

        self.paths.dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _acquire_lock(self.paths.writer_lock, session_id)
        try:
            self._next_seq = self._recover()
            self._wal_fd = os.open(self.paths.wal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._wal_size = os.fstat(self._wal_fd).st_size
            fsync_dir(self.paths.dir)
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._thread = threading.Thread(
            target=self._run, name=f"trace-writer-{session_id}", daemon=True
        )
        self._thread.start()

    # -- the public surface ---------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next appended event gets."""
        with self._lock:
            return self._next_seq

    def append(self, event: Event | Mapping[str, Any] | None = None, /, **fields: Any) -> Event:
        """Buffer one event and return it with ``seq`` (and ``event_id``, ``ts``) assigned.

        Takes an ``Event`` (its ``seq`` and ``session_id`` are overwritten), a mapping of column
        values, or the column values as keyword arguments. ``tool_input`` and ``attrs`` may be
        given as dicts; they are stored as compact JSON text.
        """
        with self._lock:
            self._check_open()
            made = self._make(event, fields, self._next_seq)
            self._next_seq += 1
            self._buffer.append(made)
            full = len(self._buffer) >= self._batch_size
        if full:
            self.flush()
        return made

    def append_many(self, events: Iterable[Event | Mapping[str, Any]]) -> list[Event]:
        """Buffer several events under one lock (faster than ``append`` in a loop)."""
        made: list[Event] = []
        with self._lock:
            self._check_open()
            seq = self._next_seq
            for item in events:
                made.append(self._make(item, {}, seq))
                seq += 1
            self._next_seq = seq
            self._buffer.extend(made)
            full = len(self._buffer) >= self._batch_size
        if full:
            self.flush()
        return made

    def flush(self) -> None:
        """Return once every event appended so far is written to the WAL and fsynced."""
        with self._io_lock:
            with self._lock:
                events, self._buffer = self._buffer, []
            if not events:
                return
            rows = [
                externalize(event_to_wal_dict(e), self._blobs, self._inline_limit) for e in events
            ]
            data = b"".join(encode_line(row) for row in rows)
            start = self._wal_size
            try:
                _write_all(self._wal_fd, data)
                if self._fsync:
                    os.fsync(self._wal_fd)
            except OSError as error:
                # Cut off whatever part of the batch reached the file and keep the events
                # buffered, so that a retry neither loses nor tears them.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._wal_fd, start)
                with self._lock:
                    self._buffer[:0] = events
                raise TraceWriteError(f"cannot write {self.paths.wal}: {error}") from error
            self._wal_size = start + len(data)
            self._queue.put(_Batch(data, start, self._wal_size, len(events)))

    def close(self, *, compact: bool = True) -> None:
        """Flush, roll the last segment, compact into ``events.parquet``, release the session.

        Safe to call twice. A failure to write a segment earlier is raised here (the events
        are still in the WAL, and the next writer on the session recovers them).
        """
        if self._closed:
            return
        try:
            self.flush()
        finally:
            with self._lock:
                self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
            os.close(self._wal_fd)
        try:
            if self._error is not None:
                raise TraceWriteError(f"trace segment failed: {self._error}") from self._error
            if compact:
                compact_session(self.paths.dir, self.session_id)
        finally:
            os.close(self._lock_fd)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise TraceWriteError(f"trace writer for {self.session_id} is closed")

    def _make(
        self, item: Event | Mapping[str, Any] | None, extra: dict[str, Any], seq: int
    ) -> Event:
        if isinstance(item, Event):
            if extra:
                raise TypeError("append() takes an Event or column values, not both")
            event = item
            event.seq = seq
            event.session_id = self.session_id
            for name in _JSON_COLUMNS:
                value = getattr(event, name)
                if value is not None and not isinstance(value, str):
                    setattr(event, name, to_json_text(value))
            return event
        values = {**(item or {}), **extra}
        values["session_id"] = self.session_id
        values["seq"] = seq
        for name in _JSON_COLUMNS:
            value = values.get(name)
            if value is not None and not isinstance(value, str):
                values[name] = to_json_text(value)
        return Event(**values)

    def _run(self) -> None:
        pending: list[_Batch] = []
        pending_since = 0.0
        last_flush = time.monotonic()
        while True:
            try:
                item = self._queue.get(timeout=self._flush_interval_s)
            except queue.Empty:
                item = None
            if item is _STOP:
                while True:  # batches flushed by close() itself
                    try:
                        rest = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(rest, _Batch):
                        pending.append(rest)
                self._roll(pending)
                return
            if isinstance(item, _Batch):
                if not pending:
                    pending_since = time.monotonic()
                pending.append(item)
            now = time.monotonic()
            if now - last_flush >= self._flush_interval_s:
                last_flush = now
                try:
                    self.flush()
                except Exception as error:  # the events stay buffered; the caller's flush retries
                    log.warning("background flush of %s failed: %s", self.session_id, error)
            count = sum(b.count for b in pending)
            due = count >= self._roll_events or now - pending_since >= self._roll_interval_s
            if pending and due and self._roll(pending):
                pending = []

    def _roll(self, batches: list[_Batch]) -> bool:
        """Write the batches as one segment; on failure keep them for the next try."""
        if not batches:
            return True
        try:
            table = decode_lines(b"".join(b.data for b in batches), origin=str(self.paths.wal))
            if table.num_rows:
                _write_segment(
                    self.paths, self.session_id, table, batches[0].start, batches[-1].end
                )
            self._error = None
        except Exception as error:
            log.warning("could not roll a trace segment of %s: %s", self.session_id, error)
            self._error = error
            return False
        try:
            merge_segments(self.paths.dir, self.session_id, self._max_segments)
        except Exception as error:  # the small segments are still there and still correct
            log.warning("could not merge trace segments of %s: %s", self.session_id, error)
        return True

    def _recover(self) -> int:
        """Bring a session left by a crash back to a consistent state; return the next seq."""
        _remove_tmp_files(self.paths)
        _cut_torn_tail(self.paths.wal)
        scan = scan_session(self.paths.dir)
        for path, reason in scan.bad:
            target = path.with_name(path.name + CORRUPT_SUFFIX)
            log.warning("setting aside unreadable %s (%s) as %s", path, reason, target.name)
            os.replace(path, target)
        if scan.bad:
            scan = scan_session(self.paths.dir)
        highest = scan.max_seq
        if scan.wal_pending:
            chunk = read_wal(self.paths.wal, scan.wal_from)
            table = _not_in_parquet(chunk.table, scan)
            if table.num_rows:
                log.info("recovering %d WAL events of %s", table.num_rows, self.session_id)
                _write_segment(self.paths, self.session_id, table, scan.wal_from, scan.wal_size)
            if chunk.table.num_rows:
                wal_max = pc.max(chunk.table.column("seq")).as_py()
                highest = wal_max if highest is None else max(highest, wal_max)
        return 0 if highest is None else highest + 1


def compact_session(session_dir: Path, session_id: str) -> Path | None:
    """Merge every part of a session into ``events.parquet`` and remove the WAL and segments.

    The WAL and segments go only after the new file's rename is durable, so a crash at any
    point leaves a state the reader resolves by deduplicating on ``seq``.
    """
    paths = SessionPaths(Path(session_dir))
    scan = scan_session(paths.dir)
    if any(path == paths.events for path, _ in scan.bad):
        # Never replace a damaged events.parquet: what it held may exist nowhere else.
        damaged = paths.events.with_name(paths.events.name + CORRUPT_SUFFIX)
        log.warning("setting aside unreadable %s as %s", paths.events, damaged.name)
        os.replace(paths.events, damaged)
    table = read_scanned(scan, resolve_blobs=False).table
    if table.num_rows == 0:
        with contextlib.suppress(FileNotFoundError):
            paths.wal.unlink()
        return None
    seq = table.column("seq")
    table = table.combine_chunks().replace_schema_metadata(
        part_metadata(session_id, pc.min(seq).as_py(), pc.max(seq).as_py())
    )
    write_parquet_atomic(table, paths.events)
    for part in scan.parts:
        if part.path != paths.events:
            with contextlib.suppress(FileNotFoundError):
                part.path.unlink()
    fsync_dir(paths.segments)
    with contextlib.suppress(OSError):
        paths.segments.rmdir()  # only when empty: set-aside *.corrupt files stay
    with contextlib.suppress(FileNotFoundError):
        paths.wal.unlink()
    fsync_dir(paths.dir)
    return paths.events


def merge_segments(session_dir: Path, session_id: str, max_segments: int) -> Path | None:
    """Merge the session's segments into one when there are more than ``max_segments``.

    The merged file records the WAL range of all it replaces; the old files go only after it is
    durable, and a crash in between leaves overlapping segments that readers deduplicate.
    """
    paths = SessionPaths(Path(session_dir))
    scan = scan_session(paths.dir, warn=False)
    segments = [p for p in scan.parts if p.path.parent == paths.segments]
    if len(segments) <= max_segments:
        return None
    ranged = [p for p in segments if p.wal_start is not None and p.wal_end is not None]
    tables = [conform(pq.read_table(p.path)) for p in segments]
    table = _combine(tables, None)
    start = min(p.wal_start for p in ranged if p.wal_start is not None) if ranged else 0
    end = max(p.wal_end for p in ranged if p.wal_end is not None) if ranged else 0
    target = _write_segment(paths, session_id, table, start, end)
    for part in segments:
        if part.path != target:
            with contextlib.suppress(FileNotFoundError):
                part.path.unlink()
    fsync_dir(paths.segments)
    return target


def _write_segment(
    paths: SessionPaths, session_id: str, table: pa.Table, wal_start: int, wal_end: int
) -> Path:
    seq = table.column("seq")
    first, last = pc.min(seq).as_py(), pc.max(seq).as_py()
    table = table.replace_schema_metadata(
        part_metadata(session_id, first, last, wal_start, wal_end)
    )
    paths.segments.mkdir(exist_ok=True)
    target = paths.segments / segment_name(first, last)
    if target.exists():  # a recovery segment over the same range: keep both, never clobber
        target = target.with_name(f"{target.stem}-{wal_end}{target.suffix}")
    write_parquet_atomic(table, target)
    return target


def _not_in_parquet(table: pa.Table, scan: SessionScan) -> pa.Table:
    if table.num_rows == 0 or not scan.parts:
        return table
    if not scan.needs_dedup and scan.max_seq is not None:
        return table.filter(pc.greater(table.column("seq"), scan.max_seq))
    seqs = [pq.read_table(p.path, columns=["seq"]).column("seq") for p in scan.parts]
    known = pa.chunked_array([c for s in seqs for c in s.chunks], type=pa.int64())
    return table.filter(pc.invert(pc.is_in(table.column("seq"), value_set=known.combine_chunks())))


def _acquire_lock(path: Path, session_id: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        raise TraceWriteError(
            f"session {session_id!r} is already open in another trace writer ({path})"
        ) from error
    return fd


def _remove_tmp_files(paths: SessionPaths) -> None:
    candidates = [paths.events.with_name(paths.events.name + TMP_SUFFIX)]
    if paths.segments.is_dir():
        candidates += [p for p in paths.segments.iterdir() if p.name.endswith(TMP_SUFFIX)]
    for path in candidates:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _cut_torn_tail(wal: Path) -> None:
    """Truncate the WAL after its last newline: a partial line is a batch that never finished."""
    try:
        fd = os.open(wal, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fd).st_size
        position = size
        block = 1 << 16
        while position > 0:
            start = max(0, position - block)
            data = os.pread(fd, position - start, start)
            newline = data.rfind(b"\n")
            if newline >= 0:
                position = start + newline + 1
                break
            position = start
        if position < size:
            log.warning("skipping a torn last line (%d bytes) of %s", size - position, wal)
            os.ftruncate(fd, position)
            os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
