"""The replay agent: a recorded session's edits, evaluations and questions, judged again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session import inbox
from kernelseek_tui.session.agents.replay import ReplayAgent
from kernelseek_tui.session.config import Budgets
from kernelseek_tui.session.engine import Engine
from tests.test_session_support import (
    ScriptedAgent,
    make_task_repo,
    read_events,
    session_config,
    source_evaluator,
)

KERNEL = "baseline.cu"
FASTER = {"path": KERNEL, "old_text": "// speed 1.3", "new_text": "// speed 1.7"}


def recorded_steps(original: str) -> list[tuple[Any, ...]]:
    return [
        ("tool", "write_file", {"path": KERNEL, "content": original + "// speed 1.3\n"}),
        ("tool", "evaluate", {}),
        ("tool", "edit_file", {"path": KERNEL, "old_text": "not in the file", "new_text": "x"}),
        ("tool", "edit_file", FASTER),
        ("tool", "run_shell", {"command": 'echo side effect >> "$TMPDIR/shell-ran"'}),
        ("tool", "evaluate", {}),
        ("tool", "draw_question", {}),
        ("tool", "evaluate", {"set": "quick"}),
    ]  # fmt: skip


@pytest.fixture()
def recorded(tmp_path: Path) -> dict[str, Any]:
    task_dir = make_task_repo(tmp_path / "user")
    config = session_config(task_dir, tmp_path / "traces", "rec")
    config.session_dir.mkdir(parents=True)
    inbox.append_command(config.session_dir, {"type": "question", "text": "What changed?"})
    engine = Engine.start(config, evaluator=source_evaluator(None))  # type: ignore[arg-type]
    original = (engine.workspace / KERNEL).read_text()
    engine.run(ScriptedAgent(recorded_steps(original)))
    return {"task_dir": task_dir, "engine": engine, "tmp": tmp_path}


def replay(recorded: dict[str, Any], session_id: str, **changes: Any) -> Engine:
    config = session_config(
        recorded["task_dir"], recorded["tmp"] / "traces", session_id, agent="replay", **changes
    )
    engine = Engine.start(config, evaluator=source_evaluator(None))  # type: ignore[arg-type]
    engine.run(ReplayAgent(recorded["engine"].session_dir))
    return engine


def test_replay_repeats_the_edits_evaluations_and_questions(recorded: dict[str, Any]) -> None:
    original = recorded["engine"]
    # The shell's own temporary directory (session/shell_confinement.py), one per session.
    assert (original.session_dir / "shell-tmp" / "shell-ran").is_file()
    engine = replay(recorded, "again")
    shell_marker = engine.session_dir / "shell-tmp" / "shell-ran"
    events = read_events(engine.session_dir)
    calls = [(e.tool_name, e.tool_input_dict()) for e in events if e.kind == "tool_call"]
    assert [name for name, _ in calls] == [
        "write_file", "evaluate", "edit_file", "evaluate", "evaluate",
    ]  # fmt: skip
    assert calls[2][1] == FASTER and calls[4][1] == {"set": "quick"}
    assert not shell_marker.exists()  # shell commands are not replayed
    before = [e for e in read_events(original.session_dir) if e.kind == "question"]
    after = [e for e in events if e.kind == "question"]
    assert [(q.question_text, q.source, q.trigger) for q in after] == [
        (q.question_text, q.source, q.trigger) for q in before if q.source == "human"
    ]
    assert json.loads(after[0].attrs)["replayed_from"] == str(original.session_dir)
    assert not [e for e in events if e.kind == "decision"]
    old = [(c.speedup, c.question) for c in original.history.candidates()]
    new = [(c.speedup, c.question) for c in engine.history.candidates()]
    assert new == old == [(1.7, "What changed?"), (1.3, "What changed?")]
    assert (engine.workspace / KERNEL).read_text() == (original.workspace / KERNEL).read_text()


def test_a_resumed_replay_takes_each_step_once(recorded: dict[str, Any]) -> None:
    engine = replay(recorded, "halves", budgets=Budgets(calls=2))
    assert len([e for e in read_events(engine.session_dir) if e.kind == "tool_call"]) == 2
    resumed = Engine.resume(
        engine.session_dir,
        evaluator=source_evaluator(None),
        overrides={"budgets": {}},  # type: ignore[arg-type]
    )
    resumed.run(ReplayAgent(recorded["engine"].session_dir))
    events = read_events(engine.session_dir)
    steps = [
        json.loads(e.attrs)["replay_step"] for e in events if e.kind in ("tool_call", "question")
    ]
    assert steps == sorted(set(steps)) and len(steps) == 6
    assert [c.speedup for c in resumed.history.candidates()] == [1.7, 1.3]


def test_replay_of_nothing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KernelseekError, match="not a directory"):
        ReplayAgent(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KernelseekError, match="no recorded events"):
        ReplayAgent(tmp_path / "empty").steps()
