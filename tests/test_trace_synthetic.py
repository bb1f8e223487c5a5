"""The synthetic session generator that the benchmark and other parts' tests rely on."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pyarrow.compute as pc

from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.store import TraceStore
from tests.synthetic import generate_session, generate_sessions_fast, session_table

SMALL = {"tool_calls": 120, "evals": 20, "questions": 8}


def test_a_session_has_the_promised_shape() -> None:
    table = session_table("s", **SMALL, seed=4)
    kinds = Counter(table.column("kind").to_pylist())
    assert kinds["tool_call"] == kinds["tool_result"] == 120
    assert kinds["eval"] == 20 and kinds["question"] == 8
    assert kinds["message"] == 1 + 120 // 3 and kinds["thinking"] == 120 // 6
    assert 0 < kinds["commit"] <= 20
    assert table.column("seq").to_pylist() == list(range(table.num_rows))
    stamps = table.column("ts").to_pylist()
    assert stamps == sorted(stamps)
    assert pc.count_distinct(table.column("event_id")).as_py() == table.num_rows
    # Every tool result points at the tool call right before it.
    rows = table.to_pylist()
    for before, row in itertools.pairwise(rows):
        if row["kind"] == "tool_result":
            assert before["kind"] == "tool_call" and row["parent_event_id"] == before["event_id"]
            assert row["tool_call_id"] == before["tool_call_id"]


def test_the_same_seed_gives_the_same_session_through_either_path(tmp_path: Path) -> None:
    slow = generate_session(tmp_path / "a", "s-000", **SMALL, seed=7)
    fast = generate_sessions_fast(tmp_path / "b", count=1, **SMALL, seed=7, prefix="s")[0]
    assert (slow / "session.json").exists() and (fast / "session.json").exists()
    assert read_session(slow).to_pylist() == read_session(fast).to_pylist()
    assert session_table("x", **SMALL, seed=8) != session_table("x", **SMALL, seed=7)


def test_generated_sessions_answer_the_canned_queries(tmp_path: Path) -> None:
    generate_sessions_fast(tmp_path, count=3, **SMALL)
    store = TraceStore(tmp_path)
    sessions = store.query("SELECT session_id, evals, questions FROM sessions ORDER BY 1")
    assert sessions.to_pylist() == [
        {"session_id": f"synth-{i:03d}", "evals": 20, "questions": 8} for i in range(3)
    ]
    assert store.canned("question-jumps").num_rows > 0
    cost = store.canned("cost").to_pylist()
    total = store.query("SELECT sum(cost_usd) AS c FROM events").column("c")[0].as_py()
    assert cost[-1]["session_id"] == "(all)" and cost[-1]["cost_usd"] == round(total, 4)
    assert cost[-1]["responses"] == 3 * (1 + 120 // 3)
