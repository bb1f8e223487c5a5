"""The DuckDB views and canned queries, on sessions small enough to work out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.trace.store import CANNED, QueryError, QuestionStats, TraceStore
from kernelseek_tui.trace.writer import TraceWriter

T0 = 1_800_000_000_000_000  # microseconds
SECOND = 1_000_000


def _write(root: Path, session_id: str, events: list[dict[str, Any]], *, close: bool = True):
    writer = TraceWriter(root / session_id, session_id, roll_events=10_000, roll_interval_s=600)
    for i, fields in enumerate(events):
        writer.append({"ts": T0 + i * 10 * SECOND, **fields})
    writer.flush()
    if close:
        writer.close()
    return writer


def _q(qid: str | None, text: str, source: str = "repertoire") -> dict[str, Any]:
    return {
        "kind": "question",
        "question_id": qid,
        "question_text": text,
        "source": source,
        "trigger": "plateau",
    }


def _eval(speedup: float | None, verdict: str = "pass") -> dict[str, Any]:
    return {"kind": "eval", "verdict": verdict, "speedup": speedup, "eval_id": f"e{speedup}"}


TOOL = {"kind": "tool_call", "tool_name": "bash"}

SESSION_A = [
    {
        "kind": "message",
        "role": "assistant",
        "model": "m-big",
        "input_tokens": 100,
        "output_tokens": 10,
        "cost_usd": 0.5,
    },  # 0
    _q("measure-first", "What does the profiler say?"),  # 1
    TOOL,  # 2
    TOOL,  # 3
    _eval(1.5),  # 4  jump: 1.0 -> 1.5, gain 0.5
    TOOL,  # 5
    _eval(1.52),  # 6  not a jump (< 1.575)
    _q("memory-traffic", "How many bytes move?"),  # 7
    TOOL,  # 8
    _eval(None, "fail"),  # 9
    {
        "kind": "message",
        "role": "assistant",
        "model": "m-small",
        "input_tokens": 7,
        "output_tokens": 3,
        "cost_usd": 0.01,
    },  # 10
    _eval(1.8),  # 11 jump: 1.52 -> 1.8
    _eval(1.7),  # 12
]
SESSION_B = [
    _eval(1.2),  # 0  jump with no question before
    _q("measure-first", "What does the profiler say?"),  # 1
    TOOL,  # 2
    _eval(1.21),  # 3
    {"kind": "commit", "git_sha": "abc123", "branch": "kernelseek/b"},
    {
        "kind": "message",
        "role": "assistant",
        "model": "m-big",
        "input_tokens": 50,
        "output_tokens": 5,
        "cost_usd": 0.25,
    },
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _write(tmp_path, "a", SESSION_A)
    _write(tmp_path, "b", SESSION_B)
    return tmp_path


def _rows(table, *columns: str) -> list[tuple]:
    data = table.to_pylist()
    return [tuple(row[c] for c in columns) for row in data]


def test_events_and_kind_views_cover_every_session(root: Path) -> None:
    store = TraceStore(root)
    assert store.query("SELECT count(*) AS n FROM events").column("n")[0].as_py() == 19
    assert store.query("SELECT count(*) AS n FROM evals").column("n")[0].as_py() == 7
    assert store.query("SELECT count(*) AS n FROM questions").column("n")[0].as_py() == 3
    assert store.query("SELECT git_sha FROM commits").column("git_sha").to_pylist() == ["abc123"]
    assert store.query("SELECT count(*) AS n FROM tool_calls").column("n")[0].as_py() == 5


def test_jumps_are_passing_evals_that_beat_the_best_so_far_by_the_threshold(root: Path) -> None:
    store = TraceStore(root)
    rows = store.query("SELECT session_id, seq, prev_best, speedup FROM jumps ORDER BY 1, 2")
    assert _rows(rows, "session_id", "seq", "prev_best", "speedup") == [
        ("a", 4, 1.0, 1.5),
        ("a", 11, 1.52, 1.8),
        ("b", 0, 1.0, 1.2),
    ]


def test_the_same_code_timed_again_is_no_jump_but_raises_the_bar(tmp_path: Path) -> None:
    def timed(speedup: float, code: str) -> dict[str, Any]:
        return {**_eval(speedup), "candidate_sha": code, "eval_id": f"{code}-{speedup}"}

    _write(
        tmp_path,
        "c",
        [
            timed(1.2, "x"),  # 0 jump: new code
            _q("measure-first", "What does the profiler say?"),  # 1
            timed(1.4, "x"),  # 2 the same code again: noise, no jump
            timed(1.45, "y"),  # 3 new code, but within 5% of the 1.4 measured before
            timed(1.6, "z"),  # 4 jump: 1.45 -> 1.6
        ],
    )
    store = TraceStore(tmp_path)
    rows = store.query("SELECT seq, prev_best, speedup FROM jumps ORDER BY seq")
    assert _rows(rows, "seq", "prev_best", "speedup") == [(0, 1.0, 1.2), (4, 1.45, 1.6)]
    paired = store.canned("question-jumps", session="c")
    assert _rows(paired, "eval_seq", "question_id") == [(0, None), (4, "measure-first")]
    effect = {r["question_id"]: r for r in store.canned("question-effect", k=1).to_pylist()}
    assert effect["measure-first"]["followed_by_jump"] == 0  # the eval right after: timed again


def test_question_jumps_pairs_each_jump_with_the_last_question_before_it(root: Path) -> None:
    table = TraceStore(root).canned("question-jumps")
    assert _rows(
        table,
        "session_id",
        "eval_seq",
        "question_id",
        "question_seq",
        "tool_calls_between",
        "evals_between",
        "seconds_between",
    ) == [
        ("a", 4, "measure-first", 1, 2, 0, 30.0),
        ("a", 11, "memory-traffic", 7, 1, 1, 40.0),
        ("b", 0, None, None, None, None, None),
    ]
    gains = table.column("gain").to_pylist()
    assert gains[0] == pytest.approx(0.5)
    assert gains[1] == pytest.approx(1.8 / 1.52 - 1)


def test_question_jumps_takes_a_threshold_and_a_session(root: Path) -> None:
    store = TraceStore(root)
    assert _rows(store.canned("question-jumps", threshold=0.3), "session_id", "eval_seq") == [
        ("a", 4)
    ]
    assert _rows(store.canned("question-jumps", session="b"), "session_id", "eval_seq") == [
        ("b", 0)
    ]


def test_question_effect_counts_asks_and_jumps_within_k_evals(root: Path) -> None:
    store = TraceStore(root)
    table = store.canned("question-effect")
    by_id = {row["question_id"]: row for row in table.to_pylist()}
    assert set(by_id) == {"measure-first", "memory-traffic"}
    first, second = by_id["measure-first"], by_id["memory-traffic"]
    # Asked in a (a jump at the next eval) and in b (no jump after it).
    assert (first["asked"], first["followed_by_jump"], first["sessions"]) == (2, 1, 2)
    assert first["median_gain"] == pytest.approx(0.5)
    # The jump comes at the second eval after it: inside k=3, outside k=1.
    assert (second["asked"], second["followed_by_jump"]) == (1, 1)
    assert second["median_gain"] == pytest.approx(1.8 / 1.52 - 1)
    narrow = {r["question_id"]: r for r in store.canned("question-effect", k=1).to_pylist()}
    assert narrow["memory-traffic"]["followed_by_jump"] == 0


def test_question_stats_feed_the_repertoire_ranking(root: Path) -> None:
    stats = TraceStore(root).question_stats()
    assert stats["measure-first"] == QuestionStats("measure-first", 2, 1, pytest.approx(0.5))
    assert stats["measure-first"].jump_rate == 0.5
    assert stats["memory-traffic"].followed_by_jump == 1
    assert TraceStore(root).question_stats(k=1)["memory-traffic"].followed_by_jump == 0


def test_cost_sums_tokens_and_dollars_per_session_and_model(root: Path) -> None:
    table = TraceStore(root).canned("cost")
    rows = _rows(table, "session_id", "model", "responses", "input_tokens", "cost_usd")
    assert rows == [
        ("a", "m-big", 1, 100, 0.5),
        ("a", "m-small", 1, 7, 0.01),
        ("a", "(all)", 2, 107, 0.51),
        ("b", "m-big", 1, 50, 0.25),
        ("b", "(all)", 1, 50, 0.25),
        ("(all)", "(all)", 3, 157, 0.76),
    ]


def test_evals_and_timeline(root: Path) -> None:
    store = TraceStore(root)
    evals = store.canned("evals", session="a")
    assert evals.column("best_so_far").to_pylist() == [1.5, 1.52, 1.52, 1.8, 1.8]
    failed = store.canned("timeline", session="a").column("summary").to_pylist()[9]
    assert failed == "fail"
    timeline = store.canned("timeline", session="b")
    assert timeline.column("seq").to_pylist() == list(range(6))
    assert timeline.column("summary").to_pylist()[:2] == [
        "pass 1.200x",
        "[measure-first] What does the profiler say?",
    ]


def test_the_live_view_adds_wal_events_of_a_running_session_once(root: Path) -> None:
    running = _write(root, "live", [TOOL, _eval(2.0), TOOL], close=False)
    store = TraceStore(root)
    live = store.query(
        "SELECT live, events, evals, best_speedup FROM sessions WHERE session_id = 'live'"
    )
    assert live.to_pylist() == [{"live": True, "events": 3, "evals": 1, "best_speedup": 2.0}]
    assert _rows(store.canned("question-jumps", session="live"), "eval_seq") == [(1,)]
    not_live = TraceStore(root, live=False)
    assert (
        not_live.query("SELECT count(*) AS n FROM events WHERE session_id = 'live'")
        .column("n")[0]
        .as_py()
        == 0
    )

    running.append(kind="message", text="more")
    running.close()
    refreshed = store.refresh()
    assert refreshed.sql("SELECT count(*) FROM events WHERE session_id = 'live'").fetchall() == [
        (4,)
    ]
    assert store.query("SELECT live FROM sessions WHERE session_id = 'live'").to_pylist() == [
        {"live": False}
    ]


def test_bad_sql_and_bad_canned_requests_raise_one_line_errors(root: Path) -> None:
    store = TraceStore(root)
    with pytest.raises(QueryError, match="syntax error") as error:
        store.query("SELEC * FROM events")
    assert "\n" not in str(error.value)
    with pytest.raises(QueryError, match="does not exist"):
        store.query("SELECT * FROM no_such_view")
    with pytest.raises(QueryError, match="no canned query 'nope'"):
        store.canned("nope")
    with pytest.raises(QueryError, match="takes no parameter k"):
        store.canned("question-jumps", k=3)


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KernelseekError, match="does not exist"):
        TraceStore(tmp_path / "missing")


def test_an_empty_root_gives_empty_views(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    for name in CANNED:
        assert store.canned(name).num_rows == (1 if name == "cost" else 0), name
    assert store.question_stats() == {}


def test_the_store_survives_a_running_session_being_compacted_under_it(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "live", "live", roll_events=2, flush_interval_s=0.005)
    for i in range(10):
        writer.append(kind="message", text=str(i))
        writer.flush()
    import time

    deadline = time.monotonic() + 5
    while not list((tmp_path / "live" / "segments").glob("*.parquet")):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    store = TraceStore(tmp_path)
    store.connect()  # the views now name the segment files
    writer.close()  # ...which compaction removes
    assert store.query("SELECT count(*) AS n FROM events").column("n")[0].as_py() == 10
