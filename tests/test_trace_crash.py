"""Crash safety: what a SIGKILL, a truncated segment or a torn WAL line leaves, and how the
reader, the store and a reopened writer deal with it."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.store import TraceStore
from kernelseek_tui.trace.writer import TraceWriter

REPO = Path(__file__).resolve().parents[1]

# The child appends batches as fast as it can and reports each batch once flush() returned.
CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kernelseek_tui.trace.writer import TraceWriter

    writer = TraceWriter(Path(sys.argv[1]), "victim", roll_events=40, flush_interval_s=0.005,
                         roll_interval_s=0.01)
    batch = 0
    while True:
        events = writer.append_many(
            {"kind": "tool_call", "tool_name": "bash", "text": f"b{batch} e{i}"}
            for i in range(25)
        )
        writer.flush()
        print(events[-1].seq, flush=True)
        batch += 1
    """
)


def _kill_writer_after(session: Path, acks: int) -> int:
    """Run the child, SIGKILL it right after its ``acks``-th acknowledged batch; return the
    highest acknowledged seq."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(session)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    last = -1
    try:
        for _ in range(acks):
            line = child.stdout.readline()
            assert line, "the writer process died on its own"
            last = int(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return last


def _seqs(table) -> list[int]:
    return table.column("seq").to_pylist()


@pytest.mark.parametrize("acks", [1, 7, 30])
def test_sigkill_loses_no_acknowledged_event_and_reopen_duplicates_nothing(
    tmp_path: Path, acks: int
) -> None:
    session = tmp_path / "victim"
    last_acked = _kill_writer_after(session, acks)

    table = read_session(session)
    seqs = _seqs(table)
    assert len(seqs) == len(set(seqs))
    assert set(range(last_acked + 1)) <= set(seqs), "an acknowledged event was lost"
    texts = dict(zip(seqs, table.column("text").to_pylist(), strict=True))
    assert texts[last_acked] == f"b{acks - 1} e24"

    # Reopen (resume after the crash): seq continues after everything on disk.
    on_disk = max(seqs)
    with TraceWriter(session, "victim") as writer:
        assert writer.next_seq == on_disk + 1
        writer.append(kind="message", text="resumed")
    final = read_session(session)
    assert _seqs(final) == list(range(on_disk + 2))
    assert final.column("text").to_pylist()[: on_disk + 1] == [texts[s] for s in range(on_disk + 1)]
    # The compacted file holds each event once.
    compacted = pq.read_table(session / "events.parquet", columns=["seq"]).column("seq")
    assert pc.count_distinct(compacted).as_py() == len(compacted) == on_disk + 2


def _crashed_session(root: Path, name: str, count: int) -> Path:
    """A session left with a WAL and segments, as a crash before close() leaves it."""
    session = root / name
    writer = TraceWriter(session, name, roll_events=10, flush_interval_s=0.01)
    for i in range(count):
        writer.append(kind="tool_call" if i % 3 else "eval", text=f"{name}-{i}", speedup=1.0)
        if i % 10 == 9:
            writer.flush()
    writer.close(compact=False)
    assert len(list((session / "segments").glob("*.parquet"))) >= 2
    return session


def _healthy_session(root: Path, name: str, count: int) -> Path:
    with TraceWriter(root / name, name) as writer:
        for i in range(count):
            writer.append(kind="message", text=f"{name}-{i}")
    return root / name


def test_a_truncated_segment_is_skipped_and_its_events_come_back_from_the_wal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = _crashed_session(tmp_path, "broken", 30)
    _healthy_session(tmp_path, "fine", 12)
    victim = sorted((session / "segments").glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])

    with caplog.at_level(logging.WARNING, logger="kernelseek_tui.trace"):
        table = read_session(session)
    assert _seqs(table) == list(range(30))
    assert table.column("text").to_pylist() == [f"broken-{i}" for i in range(30)]
    assert any(victim.name in message for message in caplog.messages)

    store = TraceStore(tmp_path)
    counts = store.query(
        "SELECT session_id, count(*) AS n, count(DISTINCT seq) AS d FROM events "
        "GROUP BY session_id ORDER BY session_id"
    ).to_pylist()
    assert counts == [
        {"session_id": "broken", "n": 30, "d": 30},
        {"session_id": "fine", "n": 12, "d": 12},
    ]
    assert any(victim.name in w for w in store.warnings)

    # Reopening sets the damaged file aside and the session compacts whole.
    with TraceWriter(session, "broken") as writer:
        assert writer.next_seq == 30
    assert _seqs(read_session(session)) == list(range(30))
    assert (victim.parent / (victim.name + ".corrupt")).exists()


def test_a_torn_last_wal_line_is_skipped_with_a_warning_and_cut_on_reopen(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = _crashed_session(tmp_path, "torn", 25)
    with open(session / "wal.jsonl", "ab") as wal:
        wal.write(b'{"session_id":"torn","seq":25,"event_id":"x","ts":1,"kind":"mess')

    with caplog.at_level(logging.WARNING, logger="kernelseek_tui.trace"):
        table = read_session(session)
    assert _seqs(table) == list(range(25))
    assert any("torn last line" in message for message in caplog.messages)

    with TraceWriter(session, "torn") as writer:
        assert writer.next_seq == 25
        writer.append(kind="message", text="after")
    final = read_session(session)
    assert _seqs(final) == list(range(26))
    assert final.column("text").to_pylist()[-1] == "after"


def test_a_garbled_wal_line_in_the_middle_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    session = tmp_path / "s"
    session.mkdir()
    good = [
        f'{{"session_id":"s","seq":{i},"event_id":"e{i}","ts":{i},"kind":"message"}}\n'
        for i in range(4)
    ]
    (session / "wal.jsonl").write_text(good[0] + good[1] + "\x00\x00garbage\n" + good[2] + good[3])
    assert _seqs(read_session(session)) == [0, 1, 2, 3]


def test_every_crash_state_of_compaction_reads_without_duplicates(tmp_path: Path) -> None:
    session = _crashed_session(tmp_path, "mid", 40)
    # A crash after events.parquet was renamed into place but before the WAL and segments
    # were removed: every event now exists two or three times on disk.
    full = read_session(session, resolve_blobs=False)
    pq.write_table(full, session / "events.parquet", compression="zstd")
    # ...and a segment that was being written when the crash came.
    (session / "segments" / "000000000041-000000000050.parquet.tmp").write_bytes(b"PAR1 half")

    assert _seqs(read_session(session)) == list(range(40))
    store = TraceStore(tmp_path)
    assert store.query(
        "SELECT count(*) AS n, count(DISTINCT seq) AS d FROM events"
    ).to_pylist() == [{"n": 40, "d": 40}]
    with TraceWriter(session, "mid") as writer:
        assert writer.next_seq == 40
    assert sorted(p.name for p in session.iterdir()) == ["events.parquet", "writer.lock"]
    assert _seqs(read_session(session)) == list(range(40))


def test_a_corrupt_events_file_does_not_break_queries_of_other_sessions(tmp_path: Path) -> None:
    _healthy_session(tmp_path, "good", 5)
    bad = _healthy_session(tmp_path, "bad", 5)
    (bad / "events.parquet").write_bytes(b"this is not parquet at all")
    store = TraceStore(tmp_path)
    rows = store.query("SELECT session_id, count(*) AS n FROM events GROUP BY 1").to_pylist()
    assert rows == [{"session_id": "good", "n": 5}]
    assert len(store.warnings) == 1 and "bad" in store.warnings[0]
    sessions = store.query("SELECT session_id, skipped_files FROM sessions ORDER BY 1").to_pylist()
    assert sessions == [
        {"session_id": "bad", "skipped_files": 1},
        {"session_id": "good", "skipped_files": 0},
    ]


def test_a_writer_never_replaces_a_damaged_events_file(tmp_path: Path) -> None:
    bad = _healthy_session(tmp_path, "bad", 5)
    damaged = b"PAR1 not really"
    (bad / "events.parquet").write_bytes(damaged)
    with TraceWriter(bad, "bad") as writer:
        writer.append(kind="message", text="new")
    assert (bad / "events.parquet.corrupt").read_bytes() == damaged
    assert read_session(bad).column("text").to_pylist() == ["new"]


@pytest.mark.perf
def test_recovery_is_fast_enough_to_not_matter(tmp_path: Path) -> None:
    # Reopening a crashed session reads footers and the WAL tail, not the whole WAL.
    session = _crashed_session(tmp_path, "r", 200)
    start = time.perf_counter()
    TraceWriter(session, "r").close(compact=False)
    assert time.perf_counter() - start < 2.0
