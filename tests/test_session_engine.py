"""The engine with a scripted agent and stand-in evaluators: the trace it writes, the commits,
the objective, decision moments and questions, the inbox, budgets and session.json."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.history import SessionHistory
from kernelseek_tui.session import inbox
from kernelseek_tui.session.config import Budgets
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import CRASHED, FINISHED, effective_status, read_meta
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    edit_step,
    git,
    make_task_repo,
    read_events,
    session_config,
)

EVALUATE: tuple[Any, ...] = ("tool", "evaluate", {})


@pytest.fixture()
def task_dir(tmp_path: Path) -> Path:
    return make_task_repo(tmp_path / "user")


def run(
    task_dir: Path,
    tmp_path: Path,
    steps: list[tuple[Any, ...]],
    speeds: list[float | None],
    **changes: Any,
) -> tuple[Engine, ScriptedAgent, SequenceEvaluator, Any]:
    evaluator = SequenceEvaluator(speeds)
    engine = Engine.start(
        session_config(task_dir, tmp_path / "traces", **changes), evaluator=evaluator
    )
    agent = ScriptedAgent(steps)
    outcome = engine.run(agent)
    return engine, agent, evaluator, outcome


def test_each_tool_call_is_recorded_before_its_result_and_evals_commit(
    task_dir: Path, tmp_path: Path
) -> None:
    steps = [
        ("tool", "read_file", {"path": "baseline.cu", "limit": 3}),
        ("tool", "edit_file", {"path": "baseline.cu", "old_text": "#include <math.h>",
                               "new_text": "#include <math.h>\n// v2"}),
        EVALUATE,
        ("tool", "evaluate", {"set": "quick"}),
        ("tool", "read_file", {"path": "../../../../etc/passwd"}),
        ("tool", "no_such_tool", {}),
    ]  # fmt: skip
    engine, agent, evaluator, outcome = run(task_dir, tmp_path, steps, [1.25, 1.5])
    events = read_events(engine.session_dir)
    kinds = [e.kind for e in events]
    assert kinds == [
        "control",
        "tool_call", "tool_result",
        "tool_call", "tool_result",
        "tool_call", "eval", "commit", "tool_result",
        "tool_call", "eval", "tool_result",
        "tool_call", "tool_result",
        "tool_call", "tool_result",
        "control",
    ]  # fmt: skip
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.event_id for e in events}) == len(events)
    calls = [e for e in events if e.kind == "tool_call"]
    results = {e.tool_call_id: e for e in events if e.kind == "tool_result"}
    for call in calls:
        assert results[call.tool_call_id].parent_event_id == call.event_id
        assert results[call.tool_call_id].seq > call.seq
    assert "outside the workspace" in results[calls[4].tool_call_id].text
    assert results[calls[4].tool_call_id].is_error
    assert "unknown tool" in results[calls[5].tool_call_id].text

    objective, quick = [e for e in events if e.kind == "eval"]
    assert objective.verdict == "pass" and objective.speedup == 1.25
    assert objective.scenarios_passed == objective.scenarios_total == 4
    assert objective.vs_fa3 == 0.5 and objective.best_speedup == 1.25
    attrs = json.loads(objective.attrs)
    assert attrs["objective"] and attrs["will_commit"] and attrs["summary"]["passed"] == 4
    from kernelseek_tui.session.eval_files import load_result

    full = load_result(engine.session_dir, objective)
    assert full is not None and full.eval_id == objective.eval_id and len(full.scenarios) == 4
    assert (
        objective.candidate_sha
        == git(engine.history.worktree, "hash-object", "kernels/flash_fwd/baseline.cu").strip()
    )
    # A named set that is not the objective is judged but verifies nothing.
    assert quick.speedup == 1.5 and quick.best_speedup == 1.25
    assert "not committed: only an evaluation of the objective verifies" in agent.outcomes[3].text
    assert evaluator.calls[0][1] is None and evaluator.calls[1][1] == ["quick"]

    commit = next(e for e in events if e.kind == "commit")
    assert commit.git_sha == engine.history.head_sha()
    assert (
        commit.branch == "kernelseek/s1" and json.loads(commit.attrs)["eval_seq"] == objective.seq
    )
    candidates = engine.history.candidates()
    assert [(c.seq, c.speedup, c.question) for c in candidates] == [(objective.seq, 1.25, None)]
    shown = git(engine.history.repo, "show", f"{commit.git_sha}:kernels/flash_fwd/baseline.cu")
    assert "// v2" in shown
    assert outcome.reason == "done"
    assert "committed as candidate 1" in agent.outcomes[2].text


def test_the_judge_is_the_original_task_whatever_the_workspace_says(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernelseek_tui.evaluate.api as api

    seen: list[tuple[Any, Path, Any]] = []

    def fake_evaluate(task: Any, source: Path, **kwargs: Any) -> Any:
        from tests.test_session_support import make_result

        seen.append((task, source, kwargs))
        return make_result(2.0)

    monkeypatch.setattr(api, "evaluate", fake_evaluate)
    steps = [
        ("tool", "write_file", {"path": "task.toml", "content": 'name = "rigged"\n'}),
        ("tool", "write_file", {"path": "reference.py", "content": "def reference(): pass\n"}),
        ("tool", "write_file", {"path": "scenarios/quick.toml", "content": "# nothing\n"}),
        EVALUATE,
    ]
    engine = Engine.start(session_config(task_dir, tmp_path / "traces"))
    engine.run(ScriptedAgent(steps))
    (task, source, kwargs) = seen[0]
    assert task.dir == task_dir.resolve() and task.name == "flash_fwd"
    assert task.reference_module == task_dir.resolve() / "reference.py"
    assert len(task.scenarios("quick")) == 12
    # The workspace's kernel, as read when the call came, in a copy of the session's own
    # (judging.py, _judged_copy): what the judge reads cannot change under it.
    assert source.name == "baseline.cu" and source.is_relative_to(engine.session_dir / "judged")
    assert source.read_bytes() == (engine.workspace / "baseline.cu").read_bytes()
    assert engine.workspace.is_relative_to(engine.history.worktree)
    assert kwargs["sets"] is None and kwargs["knobs"] is None


def test_objective_override_verifies_on_that_set(task_dir: Path, tmp_path: Path) -> None:
    steps = [edit_step("a"), ("tool", "evaluate", {"set": "quick"}), edit_step("b"), EVALUATE]
    engine, agent, evaluator, _ = run(
        task_dir, tmp_path, steps, [1.2, 1.3], objective_sets=["quick"]
    )
    assert evaluator.calls[0][1] == ["quick"] and evaluator.calls[1][1] == ["quick"]
    assert [c.speedup for c in engine.history.candidates()] == [1.3, 1.2]
    assert "the objective (quick)" in agent.outcomes[3].text


def test_plateau_and_failure_streak_raise_repertoire_questions_and_commits_carry_them(
    task_dir: Path, tmp_path: Path
) -> None:
    speeds = [1.2, 1.2, 1.19, 1.2, None, None, None, 1.5]
    steps = [step for i in range(len(speeds)) for step in (edit_step(f"v{i}"), EVALUATE)]
    engine, agent, _, _ = run(
        task_dir,
        tmp_path,
        steps,
        speeds,
        decisions={"plateau_evals": 3, "failure_streak": 3, "cooldown_evals": 1},
    )
    events = read_events(engine.session_dir)
    decisions = [e for e in events if e.kind == "decision"]
    questions = [e for e in events if e.kind == "question"]
    assert [d.trigger for d in decisions] == ["plateau", "failure_streak"]
    assert [q.trigger for q in questions] == ["plateau", "failure_streak"]
    for decision, question in zip(decisions, questions, strict=True):
        assert question.source == "repertoire" and question.question_id
        assert question.parent_event_id == decision.event_id
        assert json.loads(decision.attrs)["suggestions"][0]["id"] == question.question_id
    assert agent.delivered == [q.question_text for q in questions]
    # The plateau question comes after the fourth candidate's commit; the failing ones are
    # not committed; the last candidate carries the question asked after the failure streak.
    trailers = [(c.speedup, c.question) for c in reversed(engine.history.candidates())]
    assert trailers == [
        (1.2, None),
        (1.2, None),
        (1.19, None),
        (1.2, None),
        (1.5, questions[1].question_text),
    ]


def test_a_limit_claim_and_finish_requests(task_dir: Path, tmp_path: Path) -> None:
    steps = [
        ("text", "I think we can still do better here."),
        ("text", "This kernel is already optimal; nothing more can be gained."),
        EVALUATE,
        ("tool", "finish", {"reason": "good enough"}),
        EVALUATE,
        ("tool", "finish", {"reason": "really done"}),
        EVALUATE,  # never reached: the second finish ends the session
    ]
    engine, agent, evaluator, outcome = run(task_dir, tmp_path, steps, [1.1])
    events = read_events(engine.session_dir)
    questions = [e for e in events if e.kind == "question"]
    assert [q.trigger for q in questions] == ["limit_claim", "finish_request"]
    assert "Not finished" in agent.outcomes[1].text
    assert agent.outcomes[3].text == "Finishing the session."
    assert outcome.reason == "finish" and outcome.detail == "really done"
    assert len(evaluator.calls) == 2
    end = events[-1]
    assert end.kind == "control" and json.loads(end.attrs)["reason"] == "finish"


def test_a_turn_without_tools_is_a_finish_request(task_dir: Path, tmp_path: Path) -> None:
    steps = [("end_turn", "done"), EVALUATE, ("end_turn", "done again"), EVALUATE]
    engine, _agent, evaluator, outcome = run(task_dir, tmp_path, steps, [1.0])
    assert outcome.reason == "finish" and len(evaluator.calls) == 1
    assert [e.trigger for e in read_events(engine.session_dir) if e.kind == "question"] == [
        "finish_request"
    ]


def test_budgets_end_the_session_cleanly(task_dir: Path, tmp_path: Path) -> None:
    engine, _, evaluator, outcome = run(
        task_dir, tmp_path, [EVALUATE] * 5, [1.0], budgets=Budgets(calls=3)
    )
    assert outcome.reason == "budget_calls" and len(evaluator.calls) == 3
    end = read_events(engine.session_dir)[-1]
    assert json.loads(end.attrs)["reason"] == "budget_calls"
    assert "budget_calls" in end.text
    meta = read_meta(engine.session_dir)
    assert meta.status == FINISHED and meta.end_reason == "budget_calls"
    assert meta.stats["tool_calls"] == 3 and meta.stats["evals"] == 3

    # 0.2 s of engine time, and each evaluation takes 0.3 s: one runs, then the session ends.
    slow = SequenceEvaluator([1.0])

    def judge(source: Path, sets: Any, *, knobs: Any = None) -> Any:
        time.sleep(0.3)
        return slow(source, sets, knobs=knobs)

    config = session_config(task_dir, tmp_path / "traces", "s2", budgets=Budgets(hours=0.2 / 3600))
    outcome = Engine.start(config, evaluator=judge).run(ScriptedAgent([EVALUATE] * 5))
    assert outcome.reason == "budget_hours" and len(slow.calls) == 1


def test_inbox_questions_pause_resume_and_stop(task_dir: Path, tmp_path: Path) -> None:
    config = session_config(task_dir, tmp_path / "traces")
    session_dir = config.session_dir
    session_dir.mkdir(parents=True)
    inbox.append_command(session_dir, {"type": "question", "text": "What did you not measure?"})
    inbox.append_command(session_dir, {"type": "pause"})
    evaluator = SequenceEvaluator([1.0])
    engine = Engine.start(config, evaluator=evaluator, sleep=lambda s: time.sleep(0.01))
    statuses: list[str] = []

    def operator() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if read_meta(session_dir).status == "paused":
                statuses.append("paused")
                inbox.append_command(session_dir, {"type": "resume"})
                break
            time.sleep(0.01)

    thread = threading.Thread(target=operator)
    thread.start()
    agent = ScriptedAgent([EVALUATE, ("tool", "list_files", {}), EVALUATE, EVALUATE])
    # The stop arrives once the second evaluation has run.
    original = evaluator.__call__

    def stopping(source: Path, sets: Any, *, knobs: Any = None) -> Any:
        if len(evaluator.calls) == 1:
            inbox.append_command(session_dir, {"type": "stop", "id": "op-1"})
        return original(source, sets, knobs=knobs)

    engine._evaluator = stopping  # type: ignore[assignment]
    outcome = engine.run(agent)
    thread.join()
    assert statuses == ["paused"]
    assert outcome.reason == "stop"
    events = read_events(session_dir)
    question = next(e for e in events if e.kind == "question")
    assert question.source == "human" and question.trigger == "manual"
    assert question.role == "human" and question.question_text == "What did you not measure?"
    actions = [json.loads(e.attrs or "{}").get("action") for e in events if e.kind == "control"]
    assert actions == ["start", "pause", "unpause", None, "end"]
    assert agent.delivered == ["What did you not measure?"]
    assert len(evaluator.calls) == 2  # the third evaluate never ran
    offsets = [json.loads(e.attrs).get("inbox_offset") for e in events if e.attrs]
    assert max(o for o in offsets if o) == session_dir.joinpath("inbox.jsonl").stat().st_size


def test_an_attached_person_answers_a_decision_moment(task_dir: Path, tmp_path: Path) -> None:
    from kernelseek_tui.trace.reader import tail_wal

    config = session_config(
        task_dir, tmp_path / "traces", decisions={"plateau_evals": 1}, attach_wait_s=10
    )
    config.session_dir.mkdir(parents=True)
    inbox.touch_attached(config.session_dir)
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    typed: list[str] = []

    def person() -> None:
        offset = 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            events, offset = tail_wal(config.session_dir, offset)
            if any(e.kind == "decision" for e in events):
                inbox.append_command(
                    config.session_dir,
                    {"type": "question", "text": "Which part did you never look at?",
                     "question_id": None},
                )  # fmt: skip
                typed.append("sent")
                return
            inbox.touch_attached(config.session_dir)
            time.sleep(0.02)

    thread = threading.Thread(target=person)
    thread.start()
    started = time.monotonic()
    engine.run(ScriptedAgent([EVALUATE]))
    thread.join()
    assert typed == ["sent"] and time.monotonic() - started < 8
    events = read_events(config.session_dir)
    decision = next(e for e in events if e.kind == "decision")
    question = next(e for e in events if e.kind == "question")
    assert json.loads(decision.attrs)["attached"] is True
    assert question.source == "human" and question.trigger == "plateau"
    assert question.question_text == "Which part did you never look at?"
    assert question.parent_event_id == decision.event_id


def test_an_attached_person_who_stays_silent_gets_the_repertoire_after_the_wait(
    task_dir: Path, tmp_path: Path
) -> None:
    config = session_config(
        task_dir, tmp_path / "traces", decisions={"plateau_evals": 1}, attach_wait_s=0.3
    )
    config.session_dir.mkdir(parents=True)
    inbox.touch_attached(config.session_dir)
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    started = time.monotonic()
    engine.run(ScriptedAgent([EVALUATE]))
    assert 0.3 <= time.monotonic() - started < 5
    question = next(e for e in read_events(config.session_dir) if e.kind == "question")
    assert question.source == "repertoire" and json.loads(question.attrs)["waited_s"] == 0.3


def test_nobody_attached_means_no_wait(task_dir: Path, tmp_path: Path) -> None:
    config = session_config(
        task_dir, tmp_path / "traces", decisions={"plateau_evals": 1}, attach_wait_s=30
    )
    config.session_dir.mkdir(parents=True)
    stale = inbox.attached_path(config.session_dir)
    stale.touch()
    os.utime(stale, (time.time() - 60, time.time() - 60))
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    started = time.monotonic()
    engine.run(ScriptedAgent([EVALUATE]))
    assert time.monotonic() - started < 5
    decision = next(e for e in read_events(config.session_dir) if e.kind == "decision")
    assert json.loads(decision.attrs)["attached"] is False


def test_draw_question_is_recorded_and_answered_in_the_result(
    task_dir: Path, tmp_path: Path
) -> None:
    engine, agent, _, _ = run(task_dir, tmp_path, [("tool", "draw_question", {})], [1.0])
    question = next(e for e in read_events(engine.session_dir) if e.kind == "question")
    assert question.source == "agent" and question.trigger is None
    assert agent.outcomes[0].text == question.question_text
    assert agent.delivered == []  # it came back as the tool's result, not again as a message


def test_session_json_says_what_the_session_is(task_dir: Path, tmp_path: Path) -> None:
    engine, _, _, _ = run(task_dir, tmp_path, [EVALUATE], [1.3])
    meta = read_meta(engine.session_dir)
    assert meta.session_id == "s1" and meta.task == "flash_fwd" and meta.agent == "scripted"
    assert meta.task_dir == str(task_dir.resolve()) and meta.repo == str(task_dir.parents[1])
    assert meta.branch == "kernelseek/s1" and meta.worktree == str(engine.history.worktree)
    assert meta.base_sha == engine.history.base_sha and meta.pid == os.getpid()
    assert meta.status == FINISHED and meta.stats["best_speedup"] == 1.3
    assert meta.created <= meta.updated
    # A session whose file says running but whose process is gone was killed.
    meta.status, meta.pid = "running", 2**22 + 12345
    assert effective_status(meta) == CRASHED


def test_starting_twice_or_an_unknown_objective_set_is_refused(
    task_dir: Path, tmp_path: Path
) -> None:
    from kernelseek_tui.errors import KernelseekError

    run(task_dir, tmp_path, [], [1.0])
    with pytest.raises(KernelseekError, match="already exists"):
        Engine.start(session_config(task_dir, tmp_path / "traces"))
    with pytest.raises(KernelseekError, match="no scenario set 'nope'"):
        Engine.start(session_config(task_dir, tmp_path / "traces", "s9", objective_sets=["nope"]))
    assert SessionHistory.open(task_dir, "s1").candidates() == []


def test_the_repertoire_ranking_reads_the_record_of_past_sessions(
    task_dir: Path, tmp_path: Path
) -> None:
    from kernelseek_tui.session.questions import QuestionDesk

    steps = [step for i in range(4) for step in (edit_step(f"v{i}"), EVALUATE)]
    engine, _, _, _ = run(
        task_dir, tmp_path, steps, [1.2, 1.2, 1.2, 2.0], decisions={"plateau_evals": 2}
    )
    asked = next(e for e in read_events(engine.session_dir) if e.kind == "question")
    desk = QuestionDesk(
        repertoire_path=None, traces_root=tmp_path / "traces", session_id="next", seed=1
    )
    record = desk.stats()[asked.question_id]  # a real DuckDB query over the finished trace
    assert (record.asked, record.followed_by_jump) == (1, 1)
    assert desk.problems == []


def test_the_real_evaluator_judges_a_forbidden_include_without_a_gpu(
    task_dir: Path, tmp_path: Path
) -> None:
    rigged = "#include <cublas_v2.h>\n" + (task_dir / "baseline.cu").read_text()
    steps = [("tool", "write_file", {"path": "baseline.cu", "content": rigged}), EVALUATE]
    engine = Engine.start(session_config(task_dir, tmp_path / "traces"))
    agent = ScriptedAgent(steps)
    engine.run(agent)
    evaluation = next(e for e in read_events(engine.session_dir) if e.kind == "eval")
    assert evaluation.verdict == "fail"
    assert "cublas_v2.h" in agent.outcomes[1].text
    assert engine.history.candidates() == []


def test_every_verified_candidate_is_a_commit_and_the_same_code_again_is_attached(
    task_dir: Path, tmp_path: Path
) -> None:
    from kernelseek_tui.browse.session_data import counts
    from kernelseek_tui.browse.timeline import Timeline
    from kernelseek_tui.trace.reader import read_session

    steps = [EVALUATE, edit_step("a"), EVALUATE, EVALUATE, edit_step("b"), EVALUATE]
    steps += [edit_step("c"), EVALUATE]
    engine, agent, _, _ = run(task_dir, tmp_path, steps, [1.0, 1.2, 1.25, 1.1, 1.4])
    history = engine.history
    # A slower candidate is a commit too; only the faster ones are marked new bests.
    candidates = list(reversed(history.candidates()))
    assert [(c.n, c.speedup, c.new_best) for c in candidates] == [
        (1, 1.2, True),
        (2, 1.1, False),
        (3, 1.4, True),
    ]
    # No empty commit: each one changes the kernel.
    for candidate in candidates:
        changed = git(history.repo, "show", "--name-only", "--format=", candidate.sha).split()
        assert changed == ["kernels/flash_fwd/baseline.cu"]
    events = read_events(engine.session_dir)
    evals = [e for e in events if e.kind == "eval"]
    commits = [e for e in events if e.kind == "commit"]
    assert [json.loads(c.attrs)["eval_seq"] for c in commits] == [e.seq for e in evals]
    assert [
        (json.loads(c.attrs)["attached"], json.loads(c.attrs)["new_best"]) for c in commits
    ] == [
        (True, False),  # the starting kernel, unchanged: onto the start commit
        (False, True),
        (True, False),  # candidate 1 again, 1.25x: not a new candidate, nor a new best
        (False, False),
        (False, True),
    ]
    assert [c.git_sha for c in commits] == [history.base_sha] + [
        candidates[i].sha for i in (0, 0, 1, 2)
    ]
    assert "the start commit evaluated again" in (commits[0].text or "")
    assert "not committed again: the code is unchanged since candidate 1" in agent.outcomes[3].text
    assert "committed as candidate 3" in agent.outcomes[7].text and "a new best" in (
        agent.outcomes[7].text
    )
    assert [a["seq"] for a in history.attached(candidates[0].sha)] == [evals[2].seq]
    assert [a["seq"] for a in history.attached(history.base_sha)] == [evals[0].seq]
    assert read_meta(engine.session_dir).stats["commits"] == 3
    assert counts(read_session(engine.session_dir))["commits"] == 3  # what the header shows
    # The app's links: a commit opens on the eval it was made from, either eval finds it.
    timeline = Timeline.from_events(read_session(engine.session_dir))
    assert timeline.eval_seq_for_commit(candidates[0].sha) == evals[1].seq
    assert timeline.commit_for_eval_seq(evals[2].seq) == candidates[0].sha
