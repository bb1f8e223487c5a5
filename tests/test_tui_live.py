"""Live mode without the app: the follower sees each event of a running trace once, in order,
across segment rolls, compaction and a resumed writer; the heartbeat; the inbox helpers."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kernelseek_tui.browse import live
from kernelseek_tui.browse.live import (
    LiveFollower,
    pending_decision,
    send_control,
    suggestions_for,
)
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.repertoire import load_repertoire
from kernelseek_tui.session import inbox
from kernelseek_tui.session.inbox import InboxReader
from kernelseek_tui.trace.reader import read_session_snapshot
from kernelseek_tui.trace.schema import EVENT_SCHEMA, events_to_table
from kernelseek_tui.trace.writer import TraceWriter


class Batches:
    """Collects what the follower delivers (it calls back on its own thread)."""

    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self.metas: list[dict[str, Any] | None] = []
        self.lock = threading.Lock()

    def __call__(self, table: pa.Table, meta: dict[str, Any] | None) -> None:
        assert table.schema.equals(EVENT_SCHEMA, check_metadata=False)
        with self.lock:
            self.tables.append(table)
            self.metas.append(meta)

    @property
    def seqs(self) -> list[int]:
        with self.lock:
            return [s for t in self.tables for s in t.column("seq").to_pylist()]

    @property
    def event_batches(self) -> int:
        with self.lock:
            return sum(1 for t in self.tables if t.num_rows)


def _wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def _follower(session: Path, batches: Batches, **options: Any) -> LiveFollower:
    return LiveFollower.from_snapshot(session, read_session_snapshot(session), batches, **options)


def test_a_running_writer_s_events_arrive_once_each_in_order_and_coalesced(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s1"
    # Tiny segments merged often: files come and go under the follower all the time.
    writer = TraceWriter(
        session,
        "s1",
        flush_interval_s=0.01,
        roll_events=5,
        roll_interval_s=0.05,
        max_segments=3,
        fsync=False,
    )
    for i in range(10):
        writer.append(kind="message", role="assistant", text=f"before {i}")
    writer.flush()
    batches = Batches()
    follower = _follower(session, batches)
    assert follower.last_seq == 9
    follower.start()
    started = time.monotonic()
    total = 400
    for i in range(10, total):
        writer.append(kind="tool_call", tool_name="bash", text=f"call {i}")
        if i % 7 == 0:
            time.sleep(0.005)  # a trickle, not one burst: polls land in the middle of it
    writer.flush()
    _wait_for(lambda: len(batches.seqs) >= total - 10)
    elapsed = time.monotonic() - started
    time.sleep(0.3)  # nothing more may arrive
    follower.stop()
    writer.close()

    assert batches.seqs == list(range(10, total))
    assert 1 < batches.event_batches <= elapsed * 4 + 3, "at most ~4 batches a second"
    texts = [t for table in batches.tables for t in table.column("text").to_pylist()]
    assert texts[0] == "call 10" and texts[-1] == f"call {total - 1}"


def test_compaction_and_a_resumed_writer_under_the_follower_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s1"
    batches = Batches()
    writer = TraceWriter(session, "s1", flush_interval_s=60, fsync=False)
    writer.append(kind="message", text="first")
    writer.flush()
    follower = _follower(session, batches)

    for i in range(5):
        writer.append(kind="message", text=f"a{i}")
    writer.flush()
    assert follower.poll().column("seq").to_pylist() == [1, 2, 3, 4, 5]

    # Flushed and compacted (the WAL removed) before the follower looked again.
    for i in range(3):
        writer.append(kind="message", text=f"b{i}")
    writer.close()
    assert not SessionPaths(session).wal.exists()
    assert follower.poll().column("seq").to_pylist() == [6, 7, 8]
    assert follower.rereads == 1
    assert follower.poll().num_rows == 0  # a finished session stays quiet

    # A resumed engine writes a new WAL, longer than the old offset, before the next look.
    resumed = TraceWriter(session, "s1", flush_interval_s=60, fsync=False)
    for i in range(60):
        resumed.append(kind="tool_call", tool_name="bash", text=f"resumed call {i} " + "x" * 40)
    resumed.flush()
    assert follower.poll().column("seq").to_pylist() == list(range(9, 69))
    resumed.append(kind="message", text="tail")
    resumed.flush()
    assert follower.poll().column("seq").to_pylist() == [69]
    resumed.close()

    assert batches.seqs == list(range(1, 70))


def test_a_new_wal_on_a_reused_inode_is_read_again_not_from_mid_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file system may hand a new WAL the inode of the one compaction removed: the
    # follower then sees "the same file", longer than its offset, and must notice the hole.
    monkeypatch.setattr(live, "_file_id", lambda path: (0, 0) if path.exists() else None)
    session = tmp_path / "s1"
    batches = Batches()
    with TraceWriter(session, "s1", flush_interval_s=60, fsync=False) as writer:
        writer.append(kind="message", text="m" * 30)
        writer.flush()
        follower = _follower(session, batches)
        writer.append(kind="message", text="seen")
        writer.flush()
        assert follower.poll().column("text").to_pylist() == ["seen"]
        offset = SessionPaths(session).wal.stat().st_size
    with TraceWriter(session, "s1", flush_interval_s=60, fsync=False) as writer:
        for i in range(20):
            writer.append(kind="message", text=f"after {i}")
        writer.flush()
        assert SessionPaths(session).wal.stat().st_size > offset
        assert follower.poll().column("text").to_pylist() == [f"after {i}" for i in range(20)]
        assert follower.rereads == 1
    assert batches.seqs == list(range(1, 22))


def test_heartbeat_is_fresh_while_following_and_gone_after_stop(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    with TraceWriter(session, "s1", fsync=False) as writer:
        writer.append(kind="message", text="hi")
    follower = _follower(session, Batches(), heartbeat_s=0.1)
    assert not inbox.is_attached(session)
    follower.start()
    try:
        assert inbox.is_attached(session)
        first = inbox.attached_path(session).stat().st_mtime_ns
        _wait_for(lambda: inbox.attached_path(session).stat().st_mtime_ns > first)
        assert inbox.is_attached(session, fresh_s=1.0)
    finally:
        follower.stop()
    assert not follower.running
    assert not inbox.attached_path(session).exists()
    assert not inbox.is_attached(session)


def test_session_json_comes_with_the_events_and_alone_when_only_it_changed(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s1"
    session.mkdir()
    meta_path = SessionPaths(session).meta
    meta_path.write_text(json.dumps({"session_id": "s1", "status": "running"}))
    batches = Batches()
    with TraceWriter(session, "s1", flush_interval_s=60, fsync=False) as writer:
        follower = _follower(session, batches)
        writer.append(kind="message", text="hi")
        writer.flush()
        follower.poll()
        assert batches.metas[-1] == {"session_id": "s1", "status": "running"}
        assert batches.tables[-1].num_rows == 1
        follower.poll()
        assert len(batches.tables) == 1, "nothing new: no call"
        time.sleep(0.01)
        meta_path.write_text(json.dumps({"session_id": "s1", "status": "paused"}))
        follower.poll()
    assert batches.metas[-1] == {"session_id": "s1", "status": "paused"}
    assert batches.tables[-1].num_rows == 0


def test_send_control_writes_what_the_engine_reads(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    session.mkdir()
    for command in ("pause", "resume", "stop"):
        send_control(session, command)
    with pytest.raises(KernelseekError):
        send_control(session, "reboot")
    commands = InboxReader(SessionPaths(session).inbox).read()
    assert [c.type for c in commands] == ["pause", "resume", "stop"]


def _events(*rows: dict[str, Any]) -> pa.Table:
    from kernelseek_tui.trace.schema import Event

    return events_to_table([Event(session_id="s1", seq=i, **row) for i, row in enumerate(rows)])


REPERTOIRE = Path(__file__).resolve().parents[1] / "repertoire.toml"
_SUGGESTED = [{"id": "measure-first", "text": "What did you measure?"}]


def test_pending_decision_is_the_last_unanswered_one_a_person_is_awaited_at() -> None:
    decision = {
        "kind": "decision",
        "trigger": "plateau",
        "text": "no gain in 5 evals",
        "attrs": json.dumps({"attached": True, "wait_s": 60, "suggestions": _SUGGESTED}),
    }
    table = _events({"kind": "message", "text": "hi"}, decision, {"kind": "tool_call"})
    pending = pending_decision(table)
    assert pending is not None
    assert pending["trigger"] == "plateau"
    assert pending["text"] == "no gain in 5 evals"
    assert pending["suggestions"] == _SUGGESTED
    assert pending["wait_s"] == 60
    assert pending["seq"] == 1
    assert 55 < pending["remaining_s"] <= 60
    ts_s = table.column("ts")[1].as_py().timestamp()
    assert pending_decision(table, now_s=ts_s + 100)["remaining_s"] == 0

    answered = _events(decision, {"kind": "question", "question_text": "why?"})
    assert pending_decision(answered) is None
    unattended = dict(decision, attrs=json.dumps({"attached": False, "wait_s": 0}))
    assert pending_decision(_events(unattended)) is None
    assert pending_decision(_events({"kind": "message"})) is None
    assert pending_decision(EVENT_SCHEMA.empty_table()) is None
    # An older decision that was answered does not hide a newer one.
    again = _events(decision, {"kind": "question", "question_text": "why?"}, decision)
    assert pending_decision(again)["seq"] == 2


def test_pending_decision_answered_by_an_error_is_not_pending() -> None:
    decision = {
        "kind": "decision",
        "event_id": "d1",
        "trigger": "plateau",
        "attrs": json.dumps({"attached": True, "wait_s": 60, "suggestions": []}),
    }
    error = {"kind": "error", "parent_event_id": "d1", "text": "the repertoire is empty"}
    assert pending_decision(_events(decision, error)) is None


def test_suggestions_for_a_manual_question_come_from_the_repertoire(tmp_path: Path) -> None:
    repertoire = load_repertoire(REPERTOIRE)
    known = {q.id: q.text for q in repertoire}
    suggestions = suggestions_for("manual", repertoire_path=REPERTOIRE, traces_root=tmp_path)
    assert len(suggestions) == 3
    assert all(known[s["id"]] == s["text"] for s in suggestions)
    # Questions just asked are left out.
    recent = [s["id"] for s in suggestions]
    again = suggestions_for(
        "manual", repertoire_path=REPERTOIRE, traces_root=tmp_path, recent_ids=recent
    )
    assert not {s["id"] for s in again} & set(recent)


def test_a_person_following_a_real_engine_answers_its_decision_with_a_suggestion(
    tmp_path: Path,
) -> None:
    from kernelseek_tui.session.engine import Engine
    from kernelseek_tui.trace.reader import read_session
    from tests.test_session_support import (
        ScriptedAgent,
        SequenceEvaluator,
        make_task_repo,
        session_config,
    )

    config = session_config(
        make_task_repo(tmp_path / "user"),
        tmp_path / "traces",
        decisions={"plateau_evals": 1},
        attach_wait_s=10,
    )
    config.session_dir.mkdir(parents=True)
    seen: list[pa.Table] = []
    asked: list[dict[str, Any]] = []

    def on_events(table: pa.Table, meta: dict[str, Any] | None) -> None:
        # What the app does: keep the events, open the bar at a pending decision, ask #2.
        seen.append(table)
        pending = pending_decision(pa.concat_tables(seen))
        if pending is not None and not asked:
            chosen = pending["suggestions"][1]
            live.send_question(config.session_dir, chosen["text"], chosen["id"], "plateau")
            asked.append(chosen)

    follower = LiveFollower.from_snapshot(
        config.session_dir, read_session_snapshot(config.session_dir), on_events
    )
    follower.start()  # the heartbeat says a person is here before the engine looks
    try:
        engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
        started = time.monotonic()
        engine.run(ScriptedAgent([("tool", "evaluate", {})]))
        assert time.monotonic() - started < 8, "the engine took the person's question"
        _wait_for(
            lambda: sum(t.num_rows for t in seen) == read_session(config.session_dir).num_rows
        )
    finally:
        follower.stop()

    events = read_session(config.session_dir)
    delivered = [s for t in seen for s in t.column("seq").to_pylist()]
    assert delivered == events.column("seq").to_pylist(), "each event once, in order"
    question = next(r for r in events.to_pylist() if r["kind"] == "question")
    assert len(asked) == 1
    assert (question["source"], question["question_id"], question["question_text"]) == (
        "human",
        asked[0]["id"],
        asked[0]["text"],
    )
    assert pending_decision(events) is None
