"""The store at a traces root sees the sessions of its experiments: in ``events`` (and every
view over it), in ``sessions``, and in ``experiments``, one row per planned session with the
numbers ``compare`` reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.experiment.metrics import COLUMNS, session_metrics
from kernelseek_tui.paths import EXPERIMENT_FILE, SessionPaths
from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.store import TraceStore
from kernelseek_tui.trace.writer import TraceWriter

T0 = 1_800_000_000_000_000
SECOND = 1_000_000


def write_session(directory: Path, events: list[dict[str, Any]], mode: str | None = None) -> None:
    writer = TraceWriter(directory, directory.name, roll_events=10_000, roll_interval_s=600)
    for i, fields in enumerate(events):
        writer.append({"ts": T0 + i * 10 * SECOND, **fields})
    writer.flush()
    writer.close()
    if mode is not None:
        meta = {"session_id": directory.name, "agent": "claude", "model": "m-big",
                "status": "finished", "config": {"questions_mode": mode}}  # fmt: skip
        SessionPaths(directory).meta.write_text(json.dumps(meta))


def call(**attrs: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": "evaluate", "attrs": json.dumps(attrs)}


def evaluation(speedup: float | None, vs_fa3: float | None = None, **attrs: Any) -> dict[str, Any]:
    verdict = "pass" if speedup is not None else "fail"
    attrs = {"objective": True, "verified": speedup is not None, **attrs}
    return {"kind": "eval", "verdict": verdict, "speedup": speedup, "vs_fa3": vs_fa3,
            "candidate_sha": f"c{speedup}", "attrs": json.dumps(attrs)}  # fmt: skip


MESSAGE = {"kind": "message", "role": "assistant", "model": "m-big", "cost_usd": 0.25}
QUESTION = {"kind": "question", "question_id": "q-measure", "question_text": "?"}
ON = [
    MESSAGE, call(), evaluation(1.3, 0.4), {"kind": "commit", "git_sha": "a1"},
    QUESTION, MESSAGE, call(), evaluation(None), call(skipped=True),
    call(), evaluation(1.6, 0.5), {"kind": "commit", "git_sha": "a2"},
    call(), evaluation(1.6, 0.55), {"kind": "commit", "attrs": json.dumps({"attached": True})},
    # a set outside the objective is faster, but counts for neither the best nor vs FA3
    call(), evaluation(2.5, 0.9, objective=False),
]  # fmt: skip
OFF = [MESSAGE, call(), evaluation(0.8, 0.2), call(), evaluation(None)]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_session(tmp_path / "solo", [call(), evaluation(1.1)])
    ab = tmp_path / "ab"
    write_session(ab / "ab-on-1", ON, mode="repertoire")
    write_session(ab / "ab-off-1", OFF, mode="off")
    planned = [
        {"session_id": "ab-on-1", "arm": "questions"},
        {"session_id": "ab-off-1", "arm": "off"},
        {"session_id": "ab-off-2", "arm": "off"},  # planned, not started yet
    ]
    (ab / EXPERIMENT_FILE).write_text(json.dumps({"name": "ab", "sessions": planned}))
    return tmp_path


def test_experiment_sessions_join_the_roots_events_and_sessions_views(root: Path) -> None:
    store = TraceStore(root)
    table = store.query("SELECT session_id, count(*) AS n FROM events GROUP BY 1")
    counts = {row["session_id"]: row["n"] for row in table.to_pylist()}
    assert counts == {"solo": 2, "ab-on-1": len(ON), "ab-off-1": len(OFF)}
    sessions = store.query("SELECT session_id, dir FROM sessions ORDER BY 1").to_pylist()
    assert [s["session_id"] for s in sessions] == ["ab-off-1", "ab-on-1", "solo"]
    assert sessions[0]["dir"] == str(root / "ab" / "ab-off-1")
    jumps = store.query("SELECT session_id, speedup FROM jumps ORDER BY session_id, seq")
    assert jumps.to_pylist()[0] == {"session_id": "ab-on-1", "speedup": 1.3}


def test_the_experiments_view_has_one_row_per_planned_session(root: Path) -> None:
    rows = TraceStore(root).query("SELECT * FROM experiments").to_pylist()
    assert [(r["experiment"], r["arm"], r["session_id"], r["questions_mode"]) for r in rows] == [
        ("ab", "off", "ab-off-1", "off"),
        ("ab", "off", "ab-off-2", None),
        ("ab", "questions", "ab-on-1", "repertoire"),
    ]
    off, planned, on = rows
    # vs FA3 is the fastest candidate's (the first of the two 1.6x evaluations), not the max
    assert on["best_speedup"] == 1.6 and on["vs_fa3"] == 0.5
    assert (on["tool_calls"], on["evals"], on["questions"], on["commits"]) == (5, 5, 1, 2)
    assert on["cost_usd"] == pytest.approx(0.5) and on["wall_s"] == (len(ON) - 1) * 10
    assert on["status"] == "finished" and on["model"] == "m-big"
    assert off["best_speedup"] == 1.0 and off["vs_fa3"] == 0.2  # slower than the start
    assert planned["best_speedup"] is None and planned["tool_calls"] == 0
    assert planned["status"] is None


def test_the_view_agrees_with_compare_on_the_same_sessions(root: Path) -> None:
    rows = {r["session_id"]: r for r in TraceStore(root).query("SELECT * FROM experiments")
            .to_pylist()}  # fmt: skip
    for session_id in ("ab-on-1", "ab-off-1"):
        table = read_session(root / "ab" / session_id, columns=COLUMNS)
        metrics = session_metrics(table.to_pylist(), session_id=session_id, arm="x")
        row = rows[session_id]
        assert row["best_speedup"] == metrics.final_best
        assert row["vs_fa3"] == metrics.final_vs_fa3
        assert row["tool_calls"] == metrics.tool_calls
        assert row["cost_usd"] == pytest.approx(metrics.cost_usd)
        assert row["questions"] == len(metrics.questions)
        assert row["commits"] == len(metrics.commits)


def test_a_damaged_experiment_file_leaves_the_other_views_working(root: Path) -> None:
    (root / "ab" / EXPERIMENT_FILE).write_text("{not json")
    store = TraceStore(root)
    assert store.query("SELECT count(*) AS n FROM experiments").to_pylist() == [{"n": 0}]
    # its sessions' events still count: only the plan (the arms) is lost
    total = 2 + len(ON) + len(OFF)
    assert store.query("SELECT count(*) AS n FROM events").to_pylist() == [{"n": total}]
    assert any("unreadable" in warning for warning in store.warnings)


def test_a_root_that_is_an_experiment_has_its_rows_too(root: Path) -> None:
    rows = TraceStore(root / "ab").query("SELECT session_id, arm FROM experiments").to_pylist()
    assert [(r["session_id"], r["arm"]) for r in rows] == [
        ("ab-off-1", "off"), ("ab-off-2", "off"), ("ab-on-1", "questions"),
    ]  # fmt: skip


def paired_evaluation(
    speedup: float, vs_fa3: float, paired: float, new_best: bool, best: float | None
) -> dict[str, Any]:
    """An objective evaluation judged paired with the best so far, as the engine records it:
    its new-best verdict in attrs, the best it kept in ``best_speedup``."""
    summary = {"paired_speedup": paired, "paired_spread": 0.0138}
    row = evaluation(speedup, vs_fa3, summary=summary, new_best=new_best)
    return {**row, "best_speedup": best}


# The H100 tuner session of 2026-12-06 (13:50 UTC), in short: the start's own knobs, then
# PERSISTENT 0 -> 1 (kept), then D64_CONSUMERS 0 -> 2, 1.100x unpaired but 0.976 paired.
PAIRED = [
    call(), paired_evaluation(0.994, 0.977, 1.0013, False, None),
    call(), paired_evaluation(1.089, 1.068, 1.0229, True, 1.089),
    call(), paired_evaluation(1.100, 1.077, 0.9763, False, 1.089),
]  # fmt: skip
NONE_KEPT = [call(), paired_evaluation(1.055, 1.025, 0.9997, False, None)]


def test_judged_paired_the_best_is_the_candidate_the_engine_kept(tmp_path: Path) -> None:
    study = tmp_path / "study"
    write_session(study / "paired-1", PAIRED, mode="off")
    write_session(study / "paired-2", NONE_KEPT, mode="off")
    planned = [{"session_id": s, "arm": "off"} for s in ("paired-1", "paired-2")]
    (study / EXPERIMENT_FILE).write_text(json.dumps({"name": "study", "sessions": planned}))
    rows = {r["session_id"]: r for r in TraceStore(tmp_path).query("SELECT * FROM experiments")
            .to_pylist()}  # fmt: skip
    # Not the 1.100x a later evaluation read unpaired, nor its vs FA3.
    assert (rows["paired-1"]["best_speedup"], rows["paired-1"]["vs_fa3"]) == (1.089, 1.068)
    # None kept: the starting kernel is still the best, whatever the unpaired figure read.
    assert (rows["paired-2"]["best_speedup"], rows["paired-2"]["vs_fa3"]) == (1.0, None)
    # Jumps stay a study of the figures (over the highest before), as the store's view reads them.
    store = TraceStore(tmp_path)
    jumps = store.query("SELECT session_id, count(*) AS n FROM jumps GROUP BY 1").to_pylist()
    counted = {r["session_id"]: r["n"] for r in jumps}
    assert counted == {"paired-1": 1, "paired-2": 1}
    for session_id, row in rows.items():
        table = read_session(study / session_id, columns=COLUMNS)
        metrics = session_metrics(table.to_pylist(), session_id=session_id, arm="off")
        assert (metrics.final_best, metrics.final_vs_fa3) == (row["best_speedup"], row["vs_fa3"])
        assert metrics.jumps == counted[session_id]
