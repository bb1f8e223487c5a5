"""The judge's files against the agent's shell (session/judge_files.py): the task's files and the
judge's own, fingerprinted when a session's evaluator is made, refuse an evaluation while they
differ and void one they changed under; the best so far, exported for pairing, is compared
with its commit before every use. CPU only: the evaluation itself is a stand-in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate import api
from kernelseek_tui.session.evaluator import TaskEvaluator
from kernelseek_tui.session.judge_files import JudgeFiles, JudgeFilesChanged, judge_paths
from kernelseek_tui.task import load_task
from tests.test_paired_new_best import PairedStandIn
from tests.test_session_support import git, make_result, make_task_repo, read_events

FLASH = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "flash_fwd"
    shutil.copytree(FLASH, copy)
    return copy


def test_the_files_that_decide_the_judging_are_fingerprinted_and_notes_are_not(
    task_dir: Path,
) -> None:
    task = load_task(task_dir)
    paths = judge_paths(task)
    names = {path.relative_to(task_dir).as_posix() for path in paths if task_dir in path.parents}
    assert {"task.toml", "baseline.cu", "reference.py", "comparators.py"} <= names
    assert {"scenarios/quick.toml", "scenarios/bench.toml", "scenarios/correctness.toml"} <= names
    assert "NOTES.md" not in names and "sm90.cu" not in names  # read by people, not the judge
    judge = {path.name for path in paths if "kernelseek_tui" in path.parts}
    assert {"check.py", "worker.py", "sandbox_host.cpp", "empty_kernel.cu"} <= judge


def test_a_change_to_any_of_them_is_named_and_undoing_it_clears_it(task_dir: Path) -> None:
    task = load_task(task_dir)
    files = JudgeFiles.take(judge_paths(task))
    assert files.changed() == []
    start = task_dir / "baseline.cu"
    text = start.read_text()
    start.write_text(text + "\n// a spin before it returns\n")
    assert files.changed() == [start.resolve()]
    with pytest.raises(JudgeFilesChanged, match=r"baseline\.cu"):
        files.check("before this evaluation")
    start.write_text(text)
    assert files.changed() == []
    (task_dir / "scenarios" / "quick.toml").unlink()
    assert [p.name for p in files.changed()] == ["quick.toml"]


def test_the_task_evaluator_refuses_while_they_differ_and_voids_what_they_changed_under(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(task_dir)
    evaluator = TaskEvaluator(task)
    calls: list[Path] = []
    tolerance = task_dir / "task.toml"
    text = tolerance.read_text()

    def stand_in(task, source, **kwargs):
        calls.append(source)
        return make_result(1.0)

    monkeypatch.setattr(api, "evaluate", stand_in)
    assert evaluator(task_dir / "sm90.cu", ["quick"]).verdict == "pass"
    tolerance.write_text(text + "\n# a wider tolerance\n")
    with pytest.raises(KernelseekError, match=r"task\.toml") as refused:
        evaluator(task_dir / "sm90.cu", ["quick"])
    assert "was not made" in str(refused.value) and len(calls) == 1
    tolerance.write_text(text)
    assert evaluator(task_dir / "sm90.cu", ["quick"]).verdict == "pass"

    def changes_the_reference(task, source, **kwargs):
        calls.append(source)
        (task_dir / "reference.py").write_text("# returns the candidate's own output\n")
        return make_result(1.0)

    monkeypatch.setattr(api, "evaluate", changes_the_reference)
    with pytest.raises(KernelseekError, match=r"reference\.py") as voided:
        evaluator(task_dir / "sm90.cu", ["quick"])
    assert "its result is void" in str(voided.value)
    # Not guarding (a caller that owns the files, a test) checks nothing.
    monkeypatch.setattr(api, "evaluate", stand_in)
    unguarded = TaskEvaluator(task, guard_files=False)
    assert unguarded(task_dir / "sm90.cu", ["quick"]).verdict == "pass"


class TamperingStandIn(PairedStandIn):
    """After its first paired call, slows the exported best on disk, as an agent's shell could:
    the next call must get the commit's kernel again."""

    def __call__(self, source, sets, *, knobs=None, pair_with=None):
        result = super().__call__(source, sets, knobs=knobs, pair_with=pair_with)
        if pair_with is not None and len(self.paired) == 1:
            pair_with.source.write_text(pair_with.source.read_text() + "\n// made slower\n")
        return result


def test_a_best_exported_for_pairing_and_changed_on_disk_is_exported_again(
    tmp_path: Path,
) -> None:
    from tests.test_agent_tuner import tune

    evaluator = TamperingStandIn(top_spread=0.001)
    engine = tune(
        make_task_repo(tmp_path / "user"), tmp_path / "traces", evaluator, paired_timing=True
    )
    start = engine.history.base_sha
    committed = git(
        engine.history.repo, "show", f"{start}:{engine.history.task_subdir}/{engine.kernel_path}"
    )
    second = evaluator.paired[1]
    assert second is not None and second.source.read_text() == committed
    errors = [e for e in read_events(engine.session_dir) if e.kind == "error"]
    assert any("had changed on disk" in (e.text or "") for e in errors)


def test_a_change_before_the_first_evaluation_or_across_a_resume_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review (2026-12-07, late): the fingerprint was taken when the evaluator was first
    made, at the first evaluation, so a spin appended to the starting kernel before it was the
    reference for the whole session. The task's files are now compared with the session's start
    commit, from the engine's start and across a resume."""
    from kernelseek_tui.session.engine import Engine
    from tests.test_session_support import ScriptedAgent, edit_step, session_config

    monkeypatch.setattr(api, "evaluate", lambda task, source, **kw: make_result(1.5))
    task_dir = make_task_repo(tmp_path / "user")
    config = session_config(task_dir, tmp_path / "traces", evaluator=None, confine_shell=False)
    engine = Engine.start(config)
    spin = {"command": f"echo '// spin' >> {task_dir}/baseline.cu"}
    agent = ScriptedAgent([("tool", "run_shell", spin), edit_step("a"), ("tool", "evaluate", {})])
    engine.run(agent)
    refused = agent.outcomes[2]
    assert refused.is_error and "baseline.cu" in refused.text and "was not made" in refused.text
    assert engine.history.candidates() == []
    # Undone, but the tolerance widened before a resume: the resumed session refuses too.
    (task_dir / "baseline.cu").write_text((FLASH / "baseline.cu").read_text())
    toml = (task_dir / "task.toml").read_text()
    (task_dir / "task.toml").write_text(toml + "\n# wider\n")
    steps = [*agent.steps, ("tool", "evaluate", {})]
    again = ScriptedAgent(steps)
    Engine.resume(engine.session_dir).run(again)
    assert again.outcomes[-1].is_error and "task.toml" in again.outcomes[-1].text
    # Both undone: it goes on.
    (task_dir / "task.toml").write_text(toml)
    resumed = Engine.resume(engine.session_dir)
    resumed.run(ScriptedAgent([*steps, ("tool", "evaluate", {})]))
    assert len(resumed.history.candidates()) == 1


class AddingKnobs(PairedStandIn):
    """After its first paired call, adds a knobs.json the commit does not hold to the exported
    best (the slowest knobs, say): the next call must pair with the commit as it is."""

    def __call__(self, source, sets, *, knobs=None, pair_with=None):
        result = super().__call__(source, sets, knobs=knobs, pair_with=pair_with)
        if pair_with is not None and len(self.paired) == 1:
            added = pair_with.source.parent / "knobs.json"
            added.write_text('{"knobs": {"BLOCK_M": 64, "BLOCK_N": 64}}\n')
        return result


def test_a_file_added_to_the_exported_best_is_seen(tmp_path: Path) -> None:
    from tests.test_agent_tuner import tune

    evaluator = AddingKnobs(top_spread=0.001)
    engine = tune(
        make_task_repo(tmp_path / "user"), tmp_path / "traces", evaluator, paired_timing=True
    )
    second = evaluator.paired[1]
    assert second is not None and second.knobs is None  # the start commit has no knobs.json
    assert not (second.source.parent / "knobs.json").exists()
    errors = [e.text or "" for e in read_events(engine.session_dir) if e.kind == "error"]
    assert any("had changed on disk" in text and "knobs.json" in text for text in errors)


def test_a_resume_refuses_judging_settings_changed_in_session_json(tmp_path: Path) -> None:
    """A review (2026-12-07, late): a resume took session.json's settings whole, and an agent
    that could write it set a stand-in evaluator and the quick set as the objective (a 42x "new
    best"). The trace's start record holds the judging settings now; a resume compares."""
    import json

    from kernelseek_tui.errors import KernelseekError as Refused
    from kernelseek_tui.paths import SessionPaths
    from kernelseek_tui.session.engine import Engine
    from tests.test_session_support import ScriptedAgent, SequenceEvaluator, session_config

    task_dir = make_task_repo(tmp_path / "user")
    config = session_config(task_dir, tmp_path / "traces")
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    engine.run(ScriptedAgent([("tool", "list_files", {})]))
    meta_file = SessionPaths(engine.session_dir).meta
    original = meta_file.read_text()
    data = json.loads(original)
    data["config"]["objective_sets"] = ["quick"]
    data["config"]["confine_shell"] = False
    meta_file.write_text(json.dumps(data))
    with pytest.raises(Refused, match="objective_sets") as refused:
        Engine.resume(engine.session_dir, evaluator=SequenceEvaluator([1.0]))
    assert "confine_shell" in str(refused.value)
    meta_file.write_text(original)
    Engine.resume(engine.session_dir, evaluator=SequenceEvaluator([1.0]))  # as it was: resumes
