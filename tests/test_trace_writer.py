"""The trace writer and reader: what lands on disk, in which form, and what comes back."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from kernelseek_tui.trace.reader import read_session, read_session_snapshot, tail_wal
from kernelseek_tui.trace.schema import EVENT_SCHEMA, SCHEMA_VERSION_KEY, Event
from kernelseek_tui.trace.writer import TraceWriteError, TraceWriter


def _wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def test_flush_puts_every_event_in_the_wal_as_json_lines(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "s1", "s1", flush_interval_s=60)
    for i in range(3):
        writer.append(kind="message", role="assistant", text=f"hello {i}")
    writer.flush()
    lines = (tmp_path / "s1" / "wal.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["seq"] for r in rows] == [0, 1, 2]
    assert [r["text"] for r in rows] == ["hello 0", "hello 1", "hello 2"]
    assert all(r["session_id"] == "s1" and r["kind"] == "message" for r in rows)
    writer.close()


def test_close_compacts_into_one_sorted_zstd_file_that_plain_tools_read(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    with TraceWriter(session, "s1", roll_events=7, flush_interval_s=0.01) as writer:
        for i in range(50):
            writer.append(kind="tool_call" if i % 2 else "message", tool_name="bash", text=str(i))
            if i % 9 == 0:
                writer.flush()
    assert sorted(p.name for p in session.iterdir()) == ["events.parquet", "writer.lock"]

    # pyarrow alone, no kernelseek code: schema version, zstd, sorted seq.
    file = pq.ParquetFile(session / "events.parquet")
    assert file.schema_arrow.metadata[SCHEMA_VERSION_KEY] == b"1"
    assert file.metadata.row_group(0).column(0).compression == "ZSTD"
    table = pq.read_table(session / "events.parquet")
    assert table.column("seq").to_pylist() == list(range(50))
    assert table.column("text").to_pylist() == [str(i) for i in range(50)]

    # DuckDB alone.
    counts = duckdb.sql(
        f"SELECT kind, count(*) FROM read_parquet('{session}/events.parquet') "
        "GROUP BY kind ORDER BY kind"
    ).fetchall()
    assert counts == [("message", 25), ("tool_call", 25)]


def test_batches_roll_into_segments_in_the_background(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    writer = TraceWriter(session, "s1", roll_events=10, flush_interval_s=0.01)
    for i in range(35):
        writer.append(kind="message", text=str(i))
        if i % 5 == 4:
            writer.flush()
    _wait_for(lambda: len(list((session / "segments").glob("*.parquet"))) >= 3)
    assert not list((session / "segments").glob("*.tmp"))
    # While the session runs, a reader sees everything: segments plus the WAL tail.
    table = read_session(session)
    assert table.column("seq").to_pylist() == list(range(35))
    writer.close()
    assert not (session / "segments").exists() and not (session / "wal.jsonl").exists()


def test_reopening_continues_seq_and_keeps_what_was_there(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    with TraceWriter(session, "s1") as writer:
        first = [writer.append(kind="message", text=f"a{i}") for i in range(5)]
    with TraceWriter(session, "s1") as writer:
        assert writer.next_seq == 5
        writer.append(kind="message", text="b0")
        writer.append(kind="message", text="b1")
    table = read_session(session)
    assert table.column("seq").to_pylist() == list(range(7))
    assert table.column("text").to_pylist() == ["a0", "a1", "a2", "a3", "a4", "b0", "b1"]
    assert table.column("event_id").to_pylist()[:5] == [e.event_id for e in first]


def test_large_payloads_are_kept_whole_in_the_blob_store(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    big_text = "".join(f"line {i}: {'x' * 50}\n" for i in range(4000))  # ~240 KB
    big_input = {"path": "kernel.cu", "content": "y" * 100_000}
    attrs = '{"note":"kept exactly","z":1}'
    with TraceWriter(session, "s1", inline_limit=10_000) as writer:
        writer.append(kind="tool_result", text=big_text, attrs=attrs)
        writer.append(kind="tool_call", tool_name="write_file", tool_input=big_input)
        writer.append(kind="message", text="small")

    digest = hashlib.sha256(big_text.encode()).hexdigest()
    assert (session / "blobs" / digest[:2] / digest).read_text() == big_text
    raw = pq.read_table(session / "events.parquet").to_pylist()
    assert len(raw[0]["text"]) < len(big_text)  # the column keeps a preview, not a copy
    assert json.loads(raw[1]["tool_input"])["_blob"]  # still valid JSON for SQL

    table = read_session(session)
    rows = table.to_pylist()
    assert rows[0]["text"] == big_text
    assert rows[0]["attrs"] == attrs
    assert json.loads(rows[1]["tool_input"]) == big_input
    assert rows[1]["attrs"] is None
    assert rows[2]["text"] == "small"


def test_append_takes_events_mappings_and_keywords(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "s1", "s1") as writer:
        a = writer.append(Event(session_id="other", seq=99, kind="message", text="event"))
        b = writer.append({"kind": "eval", "speedup": 1.5, "verdict": "pass"})
        c = writer.append(kind="question", question_id="q1", attrs={"b": 2, "a": 1})
        assert (a.seq, b.seq, c.seq) == (0, 1, 2)
        assert a.session_id == "s1"
        assert c.attrs == '{"a":1,"b":2}'
        with pytest.raises(ValueError, match="unknown event kind"):
            writer.append(kind="nonsense")
    rows = read_session(tmp_path / "s1").to_pylist()
    assert [r["kind"] for r in rows] == ["message", "eval", "question"]
    assert rows[1]["speedup"] == 1.5


def test_appends_from_several_threads_get_unique_contiguous_seqs(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    with TraceWriter(session, "s1", batch_size=64, roll_events=300) as writer:

        def work(worker: int) -> None:
            for i in range(500):
                writer.append(kind="message", text=f"{worker}:{i}")

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    table = read_session(session)
    assert table.column("seq").to_pylist() == list(range(2000))
    assert len(set(table.column("text").to_pylist())) == 2000


def test_a_second_writer_on_the_same_session_is_refused(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "s1", "s1")
    with pytest.raises(TraceWriteError, match="already open"):
        TraceWriter(tmp_path / "s1", "s1")
    writer.close()
    TraceWriter(tmp_path / "s1", "s1").close()  # free again once closed


def test_appending_after_close_is_an_error(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "s1", "s1")
    writer.close()
    writer.close()  # twice is fine
    with pytest.raises(TraceWriteError, match="closed"):
        writer.append(kind="message")


def test_tail_wal_follows_a_live_session_from_a_snapshot(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    writer = TraceWriter(session, "s1", flush_interval_s=60, roll_events=1000)
    writer.append(kind="message", text="one")
    writer.flush()
    snapshot = read_session_snapshot(session)
    assert snapshot.table.column("text").to_pylist() == ["one"]

    events, offset = tail_wal(session, snapshot.wal_offset)
    assert events == [] and offset == snapshot.wal_offset
    writer.append(kind="tool_call", tool_name="bash", text="two")
    writer.append(kind="message", text="three")
    writer.flush()
    events, offset = tail_wal(session, offset)
    assert [(e.seq, e.kind, e.text) for e in events] == [
        (1, "tool_call", "two"),
        (2, "message", "three"),
    ]
    writer.close()
    # After compaction the WAL is gone: nothing new, offset unchanged.
    assert tail_wal(session, offset) == ([], offset)


def test_tail_wal_leaves_a_line_still_being_written(tmp_path: Path) -> None:
    session = tmp_path / "s1"
    session.mkdir()
    wal = session / "wal.jsonl"
    complete = '{"session_id":"s1","seq":0,"event_id":"e0","ts":1,"kind":"message"}\n'
    wal.write_text(complete + '{"session_id":"s1","seq":1,"ev')
    events, offset = tail_wal(session, 0)
    assert [e.seq for e in events] == [0]
    assert offset == len(complete)


def test_reading_an_empty_or_missing_session_gives_an_empty_table(tmp_path: Path) -> None:
    table = read_session(tmp_path / "nothing-here")
    assert table.num_rows == 0
    assert table.schema.names == EVENT_SCHEMA.names


def test_read_session_can_read_only_some_columns(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "s1", "s1") as writer:
        writer.append(kind="message", text="hi")
    table = read_session(tmp_path / "s1", columns=["kind"], resolve_blobs=False)
    assert table.column_names == ["seq", "kind"]


def test_many_small_segments_are_merged_in_the_background(tmp_path: Path) -> None:
    from kernelseek_tui.trace.layout import scan_session

    session = tmp_path / "s1"
    writer = TraceWriter(session, "s1", roll_events=5, max_segments=3, flush_interval_s=0.005)
    for i in range(80):
        writer.append(kind="message", text=str(i))
        if i % 5 == 4:
            writer.flush()
            time.sleep(0.02)  # let the background thread roll each batch on its own
    # Mid-merge a reader may see the merged file next to the ones it replaces (it dedups);
    # once the background thread has stopped, the merge has settled.
    writer.close(compact=False)
    scan = scan_session(session)
    segments = [p for p in scan.parts if p.path.parent.name == "segments"]
    assert 1 <= len(segments) <= 4
    assert not scan.needs_dedup and scan.wal_from == scan.wal_size
    assert read_session(session).column("text").to_pylist() == [str(i) for i in range(80)]
