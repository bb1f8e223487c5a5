"""Resume after a crash at each awkward moment: the repairs of ``session.resume``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session import inbox
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta, write_meta
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    dying_on_call,
    make_task_repo,
    read_events,
    session_config,
)

EVALUATE: tuple[Any, ...] = ("tool", "evaluate", {})
EDIT: tuple[Any, ...] = (
    "tool",
    "edit_file",
    {"path": "baseline.cu", "old_text": "#include <math.h>", "new_text": "#include <math.h>\n// 2"},
)


class Crash(BaseException):
    """The process dying: nothing in the engine catches it."""


def crashed(engine: Engine) -> Path:
    """After a Crash: release the trace as a dead process would, mark its pid dead."""
    engine.writer.close(compact=False)
    meta = read_meta(engine.session_dir)
    assert meta.status == "running"
    meta.pid = 2**22 + 999
    write_meta(engine.session_dir, meta)
    return engine.session_dir


@pytest.fixture()
def start(tmp_path: Path) -> Any:
    task_dir = make_task_repo(tmp_path / "user")

    def make(speeds: list[float | None] | None = None, **changes: Any) -> Engine:
        config = session_config(task_dir, tmp_path / "traces", **changes)
        return Engine.start(config, evaluator=SequenceEvaluator(speeds or [1.2, 1.4, 1.6]))

    return make


def resume(session_dir: Path, steps: list[tuple[Any, ...]]) -> tuple[Engine, list[Any]]:
    engine = Engine.resume(session_dir, evaluator=SequenceEvaluator([1.5]))
    engine.run(ScriptedAgent(steps))
    return engine, read_events(session_dir)


def test_a_commit_made_but_not_recorded_is_recorded_not_made_again(start: Any) -> None:
    engine = start()

    def dies(*args: Any, **kwargs: Any) -> Any:
        raise Crash

    engine.record_commit = dies  # type: ignore[method-assign]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent([EDIT, EVALUATE]))
    session_dir = crashed(engine)
    assert len(engine.history.candidates()) == 1
    resumed, events = resume(session_dir, [EDIT, EVALUATE])
    commits = [e for e in events if e.kind == "commit"]
    assert len(commits) == 1 and json.loads(commits[0].attrs)["recovered"] is True
    assert json.loads(commits[0].attrs)["attached"] is False
    assert [c.sha for c in resumed.history.candidates()] == [commits[0].git_sha]
    results = [e for e in events if e.kind == "tool_result" and e.tool_name == "evaluate"]
    assert len(results) == 1 and "harness restarted" in results[0].text
    assert "The evaluation itself had finished" in results[0].text


def test_an_evaluation_attached_but_not_recorded_is_recorded_as_attached(start: Any) -> None:
    # The same code evaluated twice: the second evaluation went onto the first's commit.
    engine = start()
    engine.record_commit = dying_on_call(2, engine.record_commit, Crash)  # type: ignore[method-assign]
    steps = [EDIT, EVALUATE, EVALUATE]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent(steps))
    session_dir = crashed(engine)
    (candidate,) = engine.history.candidates()
    resumed, events = resume(session_dir, steps)
    commits = [e for e in events if e.kind == "commit"]
    assert [c.git_sha for c in commits] == [candidate.sha, candidate.sha]
    second = json.loads(commits[1].attrs)
    assert second["attached"] is True and second["recovered"] is True and second["n"] == 1
    assert len(resumed.history.candidates()) == 1
    assert read_meta(session_dir).stats["commits"] == 1


def test_a_verified_candidate_not_yet_committed_is_committed_on_resume(start: Any) -> None:
    engine = start()
    history = engine.history
    history.commit_candidate = dying_on_call(2, history.commit_candidate, Crash)  # type: ignore[method-assign]
    steps = [EDIT, EVALUATE, ("tool", "draw_question", {}), EDIT, EVALUATE]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent(steps))
    session_dir = crashed(engine)
    assert len(engine.history.candidates()) == 1
    resumed, events = resume(session_dir, steps)
    candidates = resumed.history.candidates()
    assert [c.speedup for c in candidates] == [1.4, 1.2]
    question = next(e for e in events if e.kind == "question")
    assert candidates[0].question == question.question_text
    reconcile = next(e for e in events if json.loads(e.attrs or "{}").get("action") == "reconcile")
    assert json.loads(reconcile.attrs)["commits_made"] == 1


def test_a_candidate_the_workspace_no_longer_holds_is_not_committed(start: Any) -> None:
    engine = start()

    def dies(*args: Any, **kwargs: Any) -> Any:
        raise Crash

    engine.history.commit_candidate = dies  # type: ignore[method-assign]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent([EVALUATE]))
    session_dir = crashed(engine)
    kernel = engine.workspace / "baseline.cu"
    kernel.write_text(kernel.read_text() + "// changed after the crash\n")
    resumed, events = resume(session_dir, [EVALUATE])
    assert resumed.history.candidates() == []
    errors = [e for e in events if e.kind == "error"]
    assert any("no longer holds it" in (e.text or "") for e in errors)


def test_inbox_commands_are_not_acted_on_twice(start: Any) -> None:
    engine = start()
    inbox.append_command(engine.session_dir, {"type": "question", "text": "Why that order?"})
    ran: list[int] = []
    inner = SequenceEvaluator([1.0])

    def dies_second(source: Path, sets: Any, *, knobs: Any = None) -> Any:
        ran.append(1)
        if len(ran) == 2:
            raise Crash
        return inner(source, sets)

    engine._evaluator = dies_second  # type: ignore[assignment]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent([EVALUATE, EVALUATE, EVALUATE]))
    session_dir = crashed(engine)
    _, events = resume(session_dir, [EVALUATE, EVALUATE, EVALUATE])
    asked = [e.question_text for e in events if e.kind == "question"]
    assert asked == ["Why that order?"]


def test_a_decision_left_unanswered_is_answered_on_resume(start: Any) -> None:
    engine = start([1.2, 1.2], decisions={"plateau_evals": 1})

    def dies(*args: Any, **kwargs: Any) -> Any:
        raise Crash

    engine.answer_decision = dies  # type: ignore[method-assign]
    with pytest.raises(Crash):
        engine.run(ScriptedAgent([EVALUATE, EVALUATE]))
    session_dir = crashed(engine)
    _, events = resume(session_dir, [EVALUATE, EVALUATE])
    decision = next(e for e in events if e.kind == "decision")
    question = next(e for e in events if e.kind == "question")
    assert question.parent_event_id == decision.event_id and question.trigger == "plateau"
    assert json.loads(question.attrs)["recovered"] is True


def test_a_running_session_cannot_be_resumed_twice(start: Any) -> None:
    engine = start()
    with pytest.raises(Crash):
        engine._evaluator = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[assignment]
        engine.run(ScriptedAgent([EVALUATE]))
    engine.writer.close(compact=False)
    # Its pid is this very process, alive: resuming would make two engines of one session.
    with pytest.raises(KernelseekError, match="still running"):
        Engine.resume(engine.session_dir)
