"""A real engine process killed with SIGKILL mid-evaluation, then resumed: the trace and the
branch agree, nothing is lost or doubled, and no tool call runs twice."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelseek_tui.history import SessionHistory
from kernelseek_tui.session.meta import read_meta
from kernelseek_tui.trace.reader import tail_wal
from tests.test_session_support import ROOT, knob_speed, make_task_repo, read_events

EVALUATOR = "tests.test_session_support:counting_evaluator"


def kernelseek(traces: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "kernelseek_tui", "run", *args, "--traces", str(traces),
            "--evaluator", EVALUATOR, "--quiet"]  # fmt: skip


def point(knobs: dict[str, int]) -> str:
    return json.dumps({"BLOCK_M": 64, "BLOCK_N": 64, **knobs}, sort_keys=True)


@pytest.mark.slow
def test_kill_9_mid_evaluation_then_resume(tmp_path: Path) -> None:
    task_dir = make_task_repo(tmp_path / "user")
    traces = tmp_path / "traces"
    counter = tmp_path / "evaluations.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(PYTHONPATH=str(ROOT), KS_TEST_COUNTER=str(counter), KS_TEST_DELAY="0.4")
    args = [str(task_dir), "--agent", "tuner", "--session-id", "k1", "--set", "quick"]
    engine = subprocess.Popen(
        kernelseek(traces, *args), env=env, cwd=tmp_path, stdout=subprocess.DEVNULL
    )
    session_dir = traces / "k1"
    seen: list[object] = []
    offset = 0
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if session_dir.joinpath("wal.jsonl").exists():
                events, offset = tail_wal(session_dir, offset)
                seen.extend(events)
            evals = sum(1 for e in seen if e.kind == "eval")  # type: ignore[attr-defined]
            started = len(counter.read_text().splitlines()) if counter.exists() else 0
            if evals >= 3 and started == evals + 1:
                break  # the fourth evaluation is running: kill the engine now
            assert engine.poll() is None, "the engine ended before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("the engine never reached its fourth evaluation")
        os.kill(engine.pid, signal.SIGKILL)
    finally:
        engine.wait(timeout=30)
    assert engine.returncode == -signal.SIGKILL

    meta = read_meta(session_dir)
    assert meta.status == "running"  # what the file says; the process is gone
    listing = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "ls", "--traces", str(traces)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "crashed" in listing and f"{meta.pid} dead" in listing
    before = read_events(session_dir)
    answered = {e.tool_call_id for e in before if e.kind == "tool_result"}
    dangling = [
        e.tool_call_id for e in before if e.kind == "tool_call" and e.tool_call_id not in answered
    ]

    resumed = subprocess.run(
        kernelseek(traces, "--resume", "k1"), env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = read_events(session_dir)
    # Nothing lost or doubled: the trace before the kill is a prefix of the trace now.
    assert [e.event_id for e in events[: len(before)]] == [e.event_id for e in before]
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.event_id for e in events}) == len(events)
    calls = [e for e in events if e.kind == "tool_call"]
    results = collections.Counter(e.tool_call_id for e in events if e.kind == "tool_result")
    assert all(results[c.tool_call_id] == 1 for c in calls) and len(results) == len(calls)
    restarted = [
        e.tool_call_id for e in events
        if e.kind == "tool_result" and json.loads(e.attrs or "{}").get("restarted")
    ]  # fmt: skip
    assert restarted == dangling and len(dangling) == 1
    # No call ran twice: every evaluation the stand-in saw is one evaluate call of the trace.
    ran = collections.Counter(counter.read_text().splitlines())
    asked = collections.Counter(point(c.tool_input_dict()["knobs"]) for c in calls)
    assert ran == asked
    # The trace and the branch agree: each commit has its event, each event its commit.
    history = SessionHistory.open(task_dir, "k1")
    candidates = history.candidates()
    commits = [e for e in events if e.kind == "commit"]
    assert sorted(c.sha for c in candidates) == sorted(e.git_sha for e in commits)
    assert len({e.git_sha for e in commits}) == len(commits)
    by_seq = {json.loads(e.attrs)["eval_seq"]: e.git_sha for e in commits}
    assert {c.seq: c.sha for c in candidates} == by_seq
    # And the search still found the best point.
    best = next(c for c in candidates if c.new_best)
    assert best.speedup == knob_speed({"BLOCK_M": 128, "BLOCK_N": 32})
    actions = [json.loads(e.attrs).get("action") for e in events if e.kind == "control"]
    assert actions[0] == "start" and "resume" in actions and actions[-1] == "end"
    assert read_meta(session_dir).status == "finished"
