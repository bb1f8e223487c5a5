"""Live mode: follow a running session's trace, and talk to its engine through the inbox.

``LiveFollower`` tails ``wal.jsonl`` in a thread and hands new events to a callback, at most
a few batches a second. The WAL is the only file a live writer appends to (segments copy WAL
bytes, they never move them), so tailing it by byte offset sees every event once. Two things
can still change under the follower, and both trigger one full re-read of the session,
filtered to the seqs it has not delivered yet:

- the WAL is removed (the writer closed and compacted into ``events.parquet``) or replaced
  (a resumed engine started a new one): its inode differs from the one being tailed;
- the tail skips a seq (a writer assigns seqs without holes, so a hole means the offset no
  longer points into the file the follower thinks it does).

Every delivered batch holds only seqs above the last one delivered, sorted, so nothing is
duplicated; the re-reads above mean nothing is lost. While it runs the follower keeps the
``attached`` heartbeat fresh, so the engine waits for a person at decision moments.

The helpers below (``send_question``, ``send_control``, ``pending_decision``,
``suggestions_for``) never import Textual either: the app calls them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session import inbox
from kernelseek_tui.trace.reader import SessionSnapshot, read_session_snapshot, tail_wal
from kernelseek_tui.trace.schema import EVENT_SCHEMA, events_to_table, parse_attrs

log = logging.getLogger("kernelseek_tui.browse")

# Four polls a second: a batch at most every 250 ms keeps the transcript lively without
# re-rendering the panes for every event of a burst.
DEFAULT_INTERVAL_S: Final = 0.25
CONTROLS: Final = (inbox.PAUSE, inbox.RESUME, inbox.STOP)
DEFAULT_SUGGESTIONS: Final = 3

NewEventsCallback = Callable[[pa.Table, dict[str, Any] | None], None]
_FileId = tuple[int, int]  # (st_dev, st_ino)


class LiveFollower:
    """Follow one live session: new events and the fresh ``session.json`` go to ``callback``.

    ``wal_offset`` and ``last_seq`` describe what the caller already has (the snapshot it
    showed: ``snapshot.wal_offset`` and the highest ``seq`` of ``snapshot.table``; see
    ``from_snapshot``). ``callback(table, meta)`` runs on the follower's thread, with a table in
    ``EVENT_SCHEMA`` of the new events (sorted by seq; it may have no rows when only
    ``session.json`` changed) and the session.json dict (None when unreadable). A Textual app
    should hand it on with ``post_message`` (thread-safe, never blocks).
    """

    def __init__(
        self,
        session_dir: Path,
        wal_offset: int,
        callback: NewEventsCallback,
        *,
        last_seq: int | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        heartbeat_s: float = inbox.ATTACHED_TOUCH_S,
    ) -> None:
        self.session_dir = Path(session_dir)
        self.paths = SessionPaths(self.session_dir)
        self.callback = callback
        self.interval_s = interval_s
        self.heartbeat_s = heartbeat_s
        self._offset = wal_offset
        self._last_seq = last_seq
        self._wal_id: _FileId | None = None
        self._wal_id_known = False
        self._meta_stamp: tuple[int, int] | None = None
        self._meta: dict[str, Any] | None = None
        self._last_touch = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.rereads = 0  # how many full re-reads the follower needed (for tests and logs)

    @classmethod
    def from_snapshot(
        cls,
        session_dir: Path,
        snapshot: SessionSnapshot,
        callback: NewEventsCallback,
        **options: Any,
    ) -> LiveFollower:
        """A follower that continues right after what ``snapshot`` holds."""
        seqs = snapshot.table.column("seq")
        last = pc.max(seqs).as_py() if len(seqs) else None
        return cls(session_dir, snapshot.wal_offset, callback, last_seq=last, **options)

    @property
    def last_seq(self) -> int | None:
        """The highest seq delivered so far (or the one the caller started from)."""
        return self._last_seq

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Touch the heartbeat and start following (a second call does nothing)."""
        if self._thread is not None:
            return
        self._touch()
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"live-follower-{self.paths.session_id}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop following and clear the heartbeat (safe to call twice, or from the callback)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._thread = None
        inbox.clear_attached(self.session_dir)

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self.poll()
            except Exception:  # a bad poll must not end live mode; the next one retries
                log.exception("live follower of %s: poll failed", self.session_dir)
            if time.monotonic() - self._last_touch >= self.heartbeat_s:
                self._touch()
            self._stopping.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def poll(self) -> pa.Table:
        """One look at the session: deliver what is new (if anything) and return it.

        Called by the thread; callable directly (without ``start``) for a synchronous refresh.
        """
        table = self._new_events()
        meta, meta_changed = self._meta_if_changed()
        if table.num_rows or meta_changed:
            try:
                self.callback(table, meta)
            except Exception:
                log.exception("live follower of %s: callback failed", self.session_dir)
        return table

    def _new_events(self) -> pa.Table:
        wal_id = _file_id(self.paths.wal)
        if self._wal_id_known and wal_id != self._wal_id:
            return self._reread("the WAL was compacted or replaced")
        self._wal_id, self._wal_id_known = wal_id, True
        if wal_id is None:
            return EVENT_SCHEMA.empty_table()
        events, offset = tail_wal(self.session_dir, self._offset)
        table = _newer_than(events_to_table(events), self._last_seq)
        if table.num_rows and self._last_seq is not None:
            first = table.column("seq")[0].as_py()
            if first > self._last_seq + 1:
                return self._reread(f"seq {self._last_seq + 1}..{first - 1} not in the WAL tail")
        self._offset = offset
        return self._deliverable(table)

    def _reread(self, why: str) -> pa.Table:
        """Read the whole session again and keep only what was not delivered yet."""
        log.info("live follower of %s re-reads the session: %s", self.session_dir, why)
        self.rereads += 1
        # Stat before reading: if the WAL changes again after this, the next poll notices.
        self._wal_id, self._wal_id_known = _file_id(self.paths.wal), True
        snapshot = read_session_snapshot(self.session_dir)
        self._offset = snapshot.wal_offset
        return self._deliverable(_newer_than(snapshot.table, self._last_seq))

    def _deliverable(self, table: pa.Table) -> pa.Table:
        if table.num_rows:
            self._last_seq = pc.max(table.column("seq")).as_py()
        return table

    def _meta_if_changed(self) -> tuple[dict[str, Any] | None, bool]:
        """The latest session.json, and whether it changed since the last delivery."""
        try:
            stat = self.paths.meta.stat()
        except FileNotFoundError:
            return self._meta, False
        stamp = (stat.st_ino, stat.st_mtime_ns)
        if stamp == self._meta_stamp:
            return self._meta, False
        meta = read_meta_dict(self.session_dir)
        if meta is None:  # unreadable this time: try again at the next poll
            return self._meta, False
        self._meta_stamp, self._meta = stamp, meta
        return meta, True

    def _touch(self) -> None:
        self._last_touch = time.monotonic()
        try:
            inbox.touch_attached(self.session_dir)
        except OSError as error:  # a removed session directory: nothing to attach to
            log.warning("cannot touch the heartbeat of %s: %s", self.session_dir, error)


def read_meta_dict(session_dir: Path) -> dict[str, Any] | None:
    """``session.json`` as a dict, or None when it is missing or half-written."""
    try:
        data = json.loads(SessionPaths(Path(session_dir)).meta.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _file_id(path: Path) -> _FileId | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino)


def _newer_than(table: pa.Table, last_seq: int | None) -> pa.Table:
    """The rows with seq above ``last_seq``, sorted by seq, each seq once."""
    if table.num_rows == 0:
        return table
    if last_seq is not None:
        table = table.filter(pc.greater(table.column("seq"), last_seq))
    if table.num_rows > 1:
        table = table.take(pc.sort_indices(table, sort_keys=[("seq", "ascending")]))
        seq = table.column("seq").combine_chunks()
        keep = pa.concat_arrays([pa.array([True]), pc.not_equal(seq[1:], seq[:-1])])
        table = table.filter(keep)
    return table


# -- talking to the engine ---------------------------------------------------------------


def send_question(
    session_dir: Path, text: str, question_id: str | None = None, trigger: str | None = None
) -> dict[str, Any]:
    """Put a person's question in the session's inbox; returns the line as written.

    ``trigger`` is the decision moment the bar was opened for (the engine decides which moment
    the question answers; a question outside one is recorded as ``manual``). Raises
    ``KernelseekError`` for an empty text.
    """
    command: dict[str, Any] = {
        "type": inbox.QUESTION,
        "text": text.strip(),
        "question_id": question_id,
        "source": "human",
    }
    if trigger is not None:
        command["trigger"] = trigger
    return inbox.append_command(Path(session_dir), command)


def send_control(session_dir: Path, command: str) -> dict[str, Any]:
    """Ask the engine to ``pause``, ``resume`` or ``stop``; returns the line as written."""
    if command not in CONTROLS:
        raise KernelseekError(f"unknown control {command!r}; expected one of {CONTROLS}")
    return inbox.append_command(Path(session_dir), {"type": command})


def pending_decision(table: pa.Table, *, now_s: float | None = None) -> dict[str, Any] | None:
    """The decision moment still waiting for a question, or None.

    That is the last ``decision`` event, when the engine waits for a person at it (attrs
    ``attached``) and nothing answered it yet (no ``question`` after it, and no error the
    engine recorded in its place). Returns ``trigger``, ``text`` (the moment's detail),
    ``suggestions`` (``[{id, text}]``), ``wait_s``, plus ``seq``, ``event_id``, ``ts`` and
    ``remaining_s`` (the wait left at ``now_s``, default now; None without a wait).
    """
    if table.num_rows == 0:
        return None
    kinds = table.column("kind")
    decisions = pc.indices_nonzero(pc.equal(kinds, "decision"))
    if len(decisions) == 0:
        return None
    index = decisions[-1].as_py()
    row = table.slice(index, 1).to_pylist()[0]
    later = table.slice(index + 1)
    if later.num_rows:
        later_kinds = later.column("kind")
        if pc.any(pc.equal(later_kinds, "question")).as_py():
            return None
        errors = later.filter(pc.equal(later_kinds, "error"))
        if row["event_id"] in errors.column("parent_event_id").to_pylist():
            return None
    attrs = parse_attrs(row.get("attrs"))
    if not attrs.get("attached"):
        return None  # the engine did not wait for anyone: the repertoire answers at once
    wait_s = attrs.get("wait_s")
    wait = float(wait_s) if isinstance(wait_s, int | float) and wait_s > 0 else None
    remaining = None
    if wait is not None and row.get("ts") is not None:
        ts = row["ts"]
        ts_s = ts.timestamp() if hasattr(ts, "timestamp") else ts / 1e6
        elapsed = (time.time() if now_s is None else now_s) - ts_s
        remaining = max(0.0, wait - elapsed)
    suggestions = [
        {"id": str(s.get("id")) if s.get("id") is not None else None, "text": str(s["text"])}
        for s in attrs.get("suggestions") or []
        if isinstance(s, dict) and s.get("text")
    ]
    return {
        "seq": row["seq"],
        "event_id": row["event_id"],
        "ts": row.get("ts"),
        "trigger": row.get("trigger"),
        "text": row.get("text") or "",
        "suggestions": suggestions,
        "wait_s": wait,
        "remaining_s": remaining,
    }


def suggestions_for(
    trigger: str = "manual",
    *,
    session_dir: Path | None = None,
    repertoire_path: Path | None = None,
    traces_root: Path | None = None,
    recent_ids: Sequence[str] = (),
    count: int = DEFAULT_SUGGESTIONS,
) -> list[dict[str, str]]:
    """The repertoire's top ``count`` questions for ``trigger``, as ``[{id, text}]``.

    Ranked the way the engine ranks them (``session.questions.QuestionDesk``: the questions'
    record in past traces, avoiding ``recent_ids``, the ids asked so far). ``session_dir``
    supplies the repertoire and traces root from its session.json where not given. Reads the
    trace store (DuckDB): call it from a worker thread. An empty list when there is no
    repertoire.
    """
    from kernelseek_tui.session.questions import QuestionDesk

    session_id = "manual"
    if session_dir is not None:
        session_dir = Path(session_dir)
        session_id = session_dir.name
        config = (read_meta_dict(session_dir) or {}).get("config") or {}
        if repertoire_path is None and config.get("repertoire"):
            repertoire_path = Path(config["repertoire"])
        if traces_root is None:
            traces_root = Path(config.get("traces_root") or session_dir.parent)
    desk = QuestionDesk(
        repertoire_path=repertoire_path,
        traces_root=traces_root or Path("traces"),
        session_id=session_id,
    )
    ranked = desk.rank(trigger, list(recent_ids))
    return [{"id": q.id, "text": q.text} for q in ranked[:count]]
