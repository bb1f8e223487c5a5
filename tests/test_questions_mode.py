"""`--questions MODE`: who answers decision moments, and the control arm that hears none."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta
from tests.test_agent_claude import MODEL, Server, make_agent, script_replies
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    make_task_repo,
    read_events,
    session_config,
)

EVALUATE = ("tool", "evaluate", {})
DRAW = ("tool", "draw_question", {})


@pytest.fixture()
def task_dir(tmp_path: Path) -> Path:
    return make_task_repo(tmp_path / "user")


def run_scripted(task_dir: Path, traces: Path, steps: list[Any], **changes: Any) -> list[Any]:
    changes.setdefault("decisions", {"plateau_evals": 1})
    config = session_config(task_dir, traces, **changes)
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    engine.run(ScriptedAgent(steps))
    return read_events(config.session_dir)


def test_off_raises_no_decision_and_refuses_draw_question(task_dir: Path, tmp_path: Path) -> None:
    steps = [EVALUATE, EVALUATE, DRAW, ("text", "We are at the hardware limit."), EVALUATE]
    events = run_scripted(task_dir, tmp_path / "t", [*steps, ("end_turn", "done")],
                          questions_mode="off")  # fmt: skip
    assert [e for e in events if e.kind in ("question", "decision")] == []
    drawn = next(e for e in events if e.kind == "tool_result" and e.tool_name == "draw_question")
    assert drawn.is_error and "offers no questions" in (drawn.text or "")
    start = json.loads(events[0].attrs)
    assert start["questions_mode"] == "off" and "draw_question" not in start["tools"]
    end = json.loads(events[-1].attrs)
    assert end["reason"] == "finish"  # the first finish request ends it: no question first
    meta = read_meta(tmp_path / "t" / "s1")
    assert meta.extra["questions_mode"] == "off" and meta.config["questions_mode"] == "off"


def test_the_same_script_with_questions_asks_them(task_dir: Path, tmp_path: Path) -> None:
    events = run_scripted(task_dir, tmp_path / "t", [EVALUATE, EVALUATE, DRAW])
    sources = [e.source for e in events if e.kind == "question"]
    assert sources == ["repertoire", "agent"]
    assert "draw_question" in json.loads(events[0].attrs)["tools"]


def test_person_waits_with_nobody_attached_then_the_repertoire_answers(
    task_dir: Path, tmp_path: Path
) -> None:
    started = time.monotonic()
    events = run_scripted(
        task_dir, tmp_path / "t", [EVALUATE], questions_mode="person", attach_wait_s=0.4
    )
    assert time.monotonic() - started >= 0.4
    decision = next(e for e in events if e.kind == "decision")
    attrs = json.loads(decision.attrs)
    assert attrs["attached"] is False and attrs["wait_s"] == 0.4
    question = next(e for e in events if e.kind == "question")
    assert question.source == "repertoire" and json.loads(question.attrs)["person_awaited"]


def test_person_then_repertoire_stops_waiting_after_one_unanswered_moment(
    task_dir: Path, tmp_path: Path
) -> None:
    events = run_scripted(
        task_dir,
        tmp_path / "t",
        [EVALUATE, EVALUATE, EVALUATE, EVALUATE],
        questions_mode="person-then-repertoire",
        attach_wait_s=0.3,
        decisions={"plateau_evals": 1, "cooldown_evals": 1},
    )
    waits = [json.loads(e.attrs)["wait_s"] for e in events if e.kind == "decision"]
    assert len(waits) >= 2 and waits[0] == 0.3 and set(waits[1:]) == {0.0}


def test_repertoire_mode_does_not_wait_for_nobody(task_dir: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    events = run_scripted(task_dir, tmp_path / "t", [EVALUATE], attach_wait_s=30)
    assert time.monotonic() - started < 5
    assert json.loads(next(e for e in events if e.kind == "decision").attrs)["wait_s"] == 0.0


def test_an_unknown_mode_is_refused(task_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(KernelseekError, match="unknown questions mode 'sometimes'"):
        session_config(task_dir, tmp_path / "t", questions_mode="sometimes")


def test_the_claude_agent_of_the_off_arm_is_not_offered_draw_question(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server = Server(script_replies())
    config = session_config(
        task_dir, tmp_path / "t", agent="claude", model=MODEL, questions_mode="off"
    )
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0, 1.2]))
    engine.run(make_agent(server, []))
    for request in server.requests:
        names = [tool["name"] for tool in request["tools"]]
        assert "draw_question" not in names and "finish" in names
        assert "puts a short question" not in request["system"][0]["text"]
    events = read_events(config.session_dir)
    assert not [e for e in events if e.kind in ("question", "decision")]
