"""The history pane over a real session: a real Engine with a scripted agent and a stand-in
evaluator commits seven candidates (one of them a regression) into a real git repository;
the timeline, the candidates table, diffs and a bisect are checked against that history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from kernelseek_tui.browse.timeline import BLOCKS, Timeline
from kernelseek_tui.history import Candidate, SessionHistory
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.trace.reader import read_session
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    make_task_repo,
    session_config,
)

SPEEDS = [1.1, 1.2, 1.25, 1.19, 1.3, 1.4, 1.5]
REGRESSION_STEP = 5  # the step whose edit breaks the kernel: candidate 5 is the first bad one


@dataclass
class RealSession:
    history: SessionHistory
    table: pa.Table
    candidates: list[Candidate]  # newest first


def _edit(step: int) -> tuple[Any, ...]:
    marker = f"// step {step}" + (" regression" if step == REGRESSION_STEP else "")
    include = "#include <math.h>"
    edit = {"path": "baseline.cu", "old_text": include, "new_text": f"{include}\n{marker}"}
    return ("tool", "edit_file", edit)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> RealSession:
    root = tmp_path_factory.mktemp("history")
    task_dir = make_task_repo(root / "user")
    steps: list[tuple[Any, ...]] = []
    for step in range(1, len(SPEEDS) + 1):
        steps += [_edit(step), ("tool", "evaluate", {})]
        if step == 3:
            steps.append(("tool", "draw_question", {}))
    config = session_config(task_dir, root / "traces")
    engine = Engine.start(config, evaluator=SequenceEvaluator(SPEEDS))
    engine.run(ScriptedAgent(steps))
    history = SessionHistory.open(engine.history.repo, "s1")
    return RealSession(history, read_session(engine.session_dir), history.candidates())


# --- the timeline -------------------------------------------------------------------------


def test_timeline_follows_the_best_speedup_over_tool_calls(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    # Each step is an edit and an evaluate; step 3 adds a draw_question call after its eval.
    calls_at_eval = [2, 4, 6, 9, 11, 13, 15]
    bests = [1.1, 1.2, 1.25, 1.25, 1.3, 1.4, 1.5]
    assert [(p.tool_calls, p.best_speedup) for p in timeline.points] == list(
        zip(calls_at_eval, bests, strict=True)
    )
    assert timeline.total_tool_calls == 15
    assert timeline.best_speedup == 1.5
    assert [q.tool_calls for q in timeline.questions] == [7]
    assert timeline.questions[0].source == "agent" and timeline.questions[0].text


def test_timeline_links_commits_and_evals(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    for candidate in session.candidates:
        assert timeline.eval_seq_for_commit(candidate.sha) == candidate.seq
        assert timeline.eval_seq_for_commit(candidate.sha[:10]) == candidate.seq
        assert timeline.commit_for_eval_seq(candidate.seq) == candidate.sha
    assert timeline.eval_seq_for_commit("0" * 40) is None
    assert timeline.commit_for_eval_seq(0) is None  # the start control event
    question = timeline.questions[0]
    after = next(c for c in reversed(session.candidates) if c.seq > question.seq)
    assert timeline.question_before(after.seq) == question
    assert timeline.question_before(question.seq) is None


def test_sparkline_and_markers(session: RealSession) -> None:
    timeline = Timeline.from_events(session.table)
    line = timeline.sparkline(15)
    assert len(line) == 15
    # One column per tool call: blank until the first eval, rising to a full block at the end.
    assert line[:2] == "  " and line[2] == BLOCKS[0] and line[-1] == BLOCKS[-1]
    levels = [BLOCKS.index(c) for c in line[2:]]
    assert levels == sorted(levels)
    markers = timeline.markers_line(15)
    assert len(markers) == 15 and markers.count("?") == 1
    assert markers.index("?") == timeline.column_of(7, 15) == 7
    # Narrower than the session: still the right width, still one marker.
    assert len(timeline.sparkline(5)) == 5 and timeline.markers_line(5).count("?") == 1
    assert timeline.sparkline(0) == "" and timeline.markers_line(0) == ""


def test_timeline_of_a_session_without_evals() -> None:
    from kernelseek_tui.trace.schema import EVENT_SCHEMA

    timeline = Timeline.from_events(EVENT_SCHEMA.empty_table())
    assert timeline.points == [] and timeline.best_speedup is None
    assert timeline.sparkline(8) == " " * 8 and timeline.markers_line(8) == " " * 8
