"""Benchmark of the trace store (run by hand, not in CI).

    /work/venv/bin/python benchmarks/trace_bench.py [--sessions 100] [--dir DIR] [--json]

Measures, on synthetic sessions of 11,500 tool calls with their results and messages, ~400
evals and ~160 questions (about 29,400 events each):
  - batched append: append_many of 1,000 events then flush() (WAL write + fsync), per batch;
  - closing the writer (last segment + compaction into events.parquet);
  - opening a session's events for display (read_session), finished and while running;
  - the question-jumps canned query over one session and over ``--sessions`` sessions.
and prints each figure next to its target.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from kernelseek_tui.trace.reader import read_session  # noqa: E402
from kernelseek_tui.trace.store import TraceStore  # noqa: E402
from kernelseek_tui.trace.writer import TraceWriter  # noqa: E402
from tests.synthetic import generate_sessions_fast, session_table  # noqa: E402

TARGETS = {
    "append_events_per_s": (">=", 50_000),
    "question_jumps_1_session_ms": ("<=", 100),
    "question_jumps_100_sessions_ms": ("<=", 1_000),
    "open_session_ms": ("<=", 200),
}


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, list[float]]:
    """Median and all timings (seconds) of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def bench_append(work: Path, rows: list[dict[str, Any]], batch: int) -> dict[str, float]:
    session = work / f"append-{time.monotonic_ns()}"
    writer = TraceWriter(session, "append")
    start = time.perf_counter()
    for i in range(0, len(rows), batch):
        writer.append_many(rows[i : i + batch])
        writer.flush()
    acked = time.perf_counter() - start
    start = time.perf_counter()
    writer.close()
    closed = time.perf_counter() - start
    return {"events": len(rows), "ack_s": acked, "close_s": closed, "dir": str(session)}


def bench_append_one_by_one(work: Path, rows: list[dict[str, Any]], every: int) -> float:
    session = work / f"single-{time.monotonic_ns()}"
    writer = TraceWriter(session, "single")
    start = time.perf_counter()
    for i, row in enumerate(rows):
        writer.append(row)
        if i % every == every - 1:
            writer.flush()
    writer.flush()
    elapsed = time.perf_counter() - start
    writer.close()
    return len(rows) / elapsed


def writer_rows(seed: int) -> list[dict[str, Any]]:
    table = session_table("bench", seed=seed)
    rows = []
    for row in table.to_pylist():
        fields = {k: v for k, v in row.items() if v is not None and k not in ("session_id", "seq")}
        fields["ts"] = int(row["ts"].timestamp() * 1_000_000)
        rows.append(fields)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions for the big query")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trace-bench-", dir=args.dir))
    figures: dict[str, Any] = {}
    try:
        print(f"working in {work}")
        print(f"python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs")

        rows = writer_rows(seed=1)
        print(f"\n[append] one session: {len(rows):,} events")
        runs = [bench_append(work / "a", rows, batch=1000) for _ in range(3)]
        rates = [r["events"] / r["ack_s"] for r in runs]
        figures["append_events_per_s"] = statistics.median(rates)
        figures["append_events_per_s_runs"] = rates
        figures["close_s"] = statistics.median(r["close_s"] for r in runs)
        print(f"  append_many(1000) + flush(): {', '.join(f'{r:,.0f}' for r in rates)} events/s")
        print(f"  close() (last segment + compaction): {figures['close_s'] * 1000:.0f} ms")
        single = bench_append_one_by_one(work / "a", rows, every=100)
        figures["append_one_by_one_events_per_s"] = single
        print(f"  append() one at a time, flush() every 100: {single:,.0f} events/s")

        finished = Path(runs[0]["dir"])
        median, _ = timed(lambda: read_session(finished), 7)
        figures["open_session_ms"] = median * 1000
        print(f"\n[open] read_session on a finished session: {median * 1000:.1f} ms (median of 7)")

        running_dir = work / "running"
        writer = TraceWriter(running_dir, "running", roll_events=4096)
        for i in range(0, len(rows), 1000):
            writer.append_many(rows[i : i + 1000])
            writer.flush()
        time.sleep(0.5)  # let the background thread roll what it will
        median, _ = timed(lambda: read_session(running_dir), 7)
        figures["open_running_session_ms"] = median * 1000
        print(f"  read_session on a running session (segments + WAL tail): {median * 1000:.1f} ms")
        writer.close()

        one_root = work / "one"
        one_root.mkdir()
        shutil.move(str(finished), one_root / "bench")
        store = TraceStore(one_root)
        start = time.perf_counter()
        store.connect()
        figures["connect_1_session_ms"] = (time.perf_counter() - start) * 1000
        cold, _ = timed(lambda: store.canned("question-jumps"), 1)
        median, _ = timed(lambda: store.canned("question-jumps"), 10)
        figures["question_jumps_1_session_ms"] = median * 1000
        jumps = store.canned("question-jumps").num_rows
        print(
            f"\n[query] one session: connect {figures['connect_1_session_ms']:.0f} ms, "
            f"question-jumps {median * 1000:.1f} ms median of 10 (first run {cold * 1000:.1f} ms),"
            f" {jumps} jumps"
        )

        many = work / "many"
        start = time.perf_counter()
        generate_sessions_fast(many, count=args.sessions)
        elapsed = time.perf_counter() - start
        print(f"\n[query] {args.sessions} sessions generated in {elapsed:.1f} s")
        store = TraceStore(many)
        start = time.perf_counter()
        store.connect()
        figures["connect_100_sessions_ms"] = (time.perf_counter() - start) * 1000
        total = store.query("SELECT count(*) AS n FROM events").column("n")[0].as_py()
        cold, _ = timed(lambda: store.canned("question-jumps"), 1)
        median, _ = timed(lambda: store.canned("question-jumps"), 5)
        figures["question_jumps_100_sessions_ms"] = median * 1000
        effect, _ = timed(lambda: store.canned("question-effect"), 5)
        figures["question_effect_100_sessions_ms"] = effect * 1000
        stats, _ = timed(store.question_stats, 3)
        figures["question_stats_100_sessions_ms"] = stats * 1000
        print(
            f"  {total:,} events; connect {figures['connect_100_sessions_ms']:.0f} ms; "
            f"question-jumps {median * 1000:.0f} ms median of 5 (first run {cold * 1000:.0f} ms);"
            f" question-effect {effect * 1000:.0f} ms; question_stats() {stats * 1000:.0f} ms"
        )

        print("\n[targets]")
        missed = 0
        for key, (op, target) in TARGETS.items():
            value = figures[key]
            ok = value >= target if op == ">=" else value <= target
            missed += not ok
            print(f"  {key:34s} {value:12,.1f}  {op} {target:,}  {'met' if ok else 'MISSED'}")
        if args.json:
            print(json.dumps(figures, indent=2))
        return 1 if missed else 0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
