"""`kernelseek bisect` as a newcomer meets it: on a recorded session copied from another machine,
with candidates that cannot be judged, and with a rule the good revision itself fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.browse.unpack import DEMO_DIR, pack_session, unpack_recorded
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import (
    BISECT_SKIP,
    Skip,
    bisect_candidates,
    bisect_judgement,
    confirm_good,
)
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.task import Task
from tests.test_session_cli import kernelseek
from tests.test_session_support import (
    ROOT,
    ScriptedAgent,
    make_result,
    make_task_repo,
    session_config,
    source_evaluator,
)

HERE = "tests.test_bisect_recorded"
NO_CUPY = "no GPU stack: No module named 'cupy' (setup)"


def task_checking_evaluator(task: Task, **options: Any) -> Any:
    """Passes every candidate, after checking it was handed a real task and candidate."""

    def judge(source: Path, sets: list[str] | None, *, knobs: Any = None) -> EvalResult:
        assert (task.dir / "task.toml").is_file() and source.is_file()
        return make_result(1.0)

    return judge


def cupy_missing_evaluator(task: Task, **options: Any) -> Any:
    """The starting kernel passes; every candidate is an evaluation the harness could not run."""

    def judge(source: Path, sets: list[str] | None, *, knobs: Any = None) -> EvalResult:
        if "// speed" not in source.read_text():
            return make_result(1.0)
        result = make_result(None, verdict="error")
        result.reasons = [NO_CUPY]
        return result

    return judge


def failing_evaluator(task: Task, **options: Any) -> Any:
    return lambda source, sets, *, knobs=None: make_result(None, verdict="fail", failed=1)


def session_with_speeds(tmp_path: Path, session_id: str, speeds: tuple[float, ...]) -> Engine:
    """A finished session in ``tmp_path/user`` with one candidate per speed (in order)."""
    task = make_task_repo(tmp_path / "user")
    engine = Engine.start(
        session_config(task, tmp_path / "tr", session_id),
        evaluator=source_evaluator(None),  # type: ignore[arg-type]
    )
    original = (engine.workspace / "baseline.cu").read_text()
    steps: list[tuple[Any, ...]] = []
    for speed in speeds:
        text = original + f"// speed {speed}\n"
        steps += [("tool", "write_file", {"path": "baseline.cu", "content": text})]
        steps += [("tool", "evaluate", {})]
    engine.run(ScriptedAgent(steps))
    return engine


def recorded_session(tmp_path: Path, speeds: tuple[float, ...]) -> list[str]:
    """A session with one candidate per speed, recorded (trace + bundle) under
    ``tmp_path/recorded`` and its repository deleted, as on a machine it was copied to."""
    engine = session_with_speeds(tmp_path, "bis", speeds)
    shas = [c.sha for c in reversed(engine.history.candidates())]
    pack_session(engine.session_dir, tmp_path / "recorded")
    shutil.rmtree(tmp_path / "user")
    shutil.rmtree(tmp_path / "tr")
    return shas


@pytest.mark.parametrize("unpacked", [False, True])
def test_the_demo_sessions_bisect_wherever_they_are(
    tmp_path: Path, env: dict[str, str], unpacked: bool
) -> None:
    root = DEMO_DIR
    if unpacked:  # what `kernelseek demo` makes: a repository with no checkout of the task
        unpack_recorded(DEMO_DIR, tmp_path / "copy")
        root = tmp_path / "copy" / "traces"
    result = kernelseek(
        env, tmp_path, "bisect", "scripted-claude", "--traces", str(root),
        "--evaluator", f"{HERE}:task_checking_evaluator",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("first bad candidate: ")
    assert "is not a directory" not in result.stderr and "no task.toml" not in result.stderr


def test_a_copied_recording_finds_the_first_bad_candidate(
    tmp_path: Path, env: dict[str, str]
) -> None:
    shas = recorded_session(tmp_path, (1.1, 1.3, 0.8, 0.7))
    result = kernelseek(
        env, tmp_path, "bisect", "bis", "--traces", "recorded",
        "--metric", "speedup", "--threshold", "1.0",
        "--evaluator", "tests.test_session_support:source_evaluator",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"first bad candidate: 3 {shas[2]}")
    assert "judging the good revision (the start" in result.stderr


def test_a_climb_finds_the_first_candidate_to_reach_the_bar(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """`--first-good`: which version first beat FA3, asked of a recording (here speedup >= 1.05
    with the stand-in evaluator, whose speed is the candidate's `// speed` line)."""
    shas = recorded_session(tmp_path, (0.9, 1.02, 1.1, 1.2, 1.3))
    args = ["bisect", "bis", "--traces", "recorded", "--first-good"]
    stand_in = ["--evaluator", "tests.test_session_support:source_evaluator"]
    found = kernelseek(
        env, tmp_path, *args, "--metric", "speedup", "--threshold", "1.05", *stand_in
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(f"first good candidate: 3 {shas[2]}")
    assert "judging the older revision (the start" in found.stderr
    assert "meets the rule" in found.stderr and "falls short of the rule" in found.stderr
    # Each verdict comes with what was measured, beside what the session recorded.
    assert (
        "candidate 3 measured: pass 4/4, 0.500x FA3 (recorded 0.500x), 1.10x start (recorded 1.10x)"
        in (found.stderr)
    )
    assert "the start measured: pass 4/4, 0.500x FA3, 1.00x start" in found.stderr
    report = json.loads(
        kernelseek(
            env, tmp_path, *args, "--metric", "speedup", "--threshold", "1.05", "--json", *stand_in
        ).stdout
    )
    assert report["first_good"] == shas[2] and report["last_short"] == shas[1]
    assert {s["verdict"] for s in report["steps"]} <= {"short", "meets"}
    # Without the flag the same rule finds nothing to bisect: the start itself falls short.
    regression = kernelseek(
        env, tmp_path, "bisect", "bis", "--traces", "recorded",
        "--metric", "speedup", "--threshold", "1.05", *stand_in,
    )  # fmt: skip
    assert regression.returncode == 2 and "below the threshold 1.05" in regression.stderr
    # A climb from a revision already at the bar is refused before anything is judged.
    at_bar = kernelseek(
        env, tmp_path, *args, "--metric", "speedup", "--threshold", "1.0", *stand_in
    )
    assert at_bar.returncode == 2
    assert "recorded speedup 1.000, already at the threshold 1" in at_bar.stderr
    assert "judging" not in at_bar.stderr
    # Under the default rule (correct) nothing is recorded to refuse by: the start is judged,
    # passes, so it already meets the rule.
    judged = kernelseek(env, tmp_path, *args, *stand_in)
    assert judged.returncode == 2
    assert "already meets the rule when judged again" in judged.stderr


def test_skips_say_why_in_text_and_json(tmp_path: Path, env: dict[str, str]) -> None:
    shas = recorded_session(tmp_path, (1.1, 1.3, 1.5))
    args = [
        "bisect",
        "bis",
        "--traces",
        "recorded",
        "--evaluator",
        f"{HERE}:cupy_missing_evaluator",
    ]
    text = kernelseek(env, tmp_path, *args)
    assert text.returncode == 1
    assert f"is skip (the harness could not judge it: {NO_CUPY})" in text.stderr
    suspects = text.stdout.splitlines()[1:]
    assert [line.split()[1] for line in suspects] == shas
    assert all(f"[skipped: the harness could not judge it: {NO_CUPY}]" in s for s in suspects[:-1])
    report = json.loads(kernelseek(env, tmp_path, *args, "--json").stdout)
    skips = [s for s in report["steps"] if s["verdict"] == "skip"]
    assert skips and all(s["reason"] == f"the harness could not judge it: {NO_CUPY}" for s in skips)


def test_a_good_revision_that_is_not_good_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    shas = recorded_session(tmp_path, (1.1, 1.3, 0.8, 0.7))
    base = ["bisect", "bis", "--traces", "recorded"]
    stand_in = ["--evaluator", "tests.test_session_support:source_evaluator"]
    # The start is the starting kernel, 1.0x by definition: bad under "speedup >= 1.5".
    by_record = kernelseek(
        env, tmp_path, *base, "--metric", "speedup", "--threshold", "1.5", *stand_in
    )
    assert by_record.returncode == 2
    assert "the good revision (the start" in by_record.stderr
    assert "recorded speedup 1.000, below the threshold 1.5" in by_record.stderr
    assert "judging" not in by_record.stderr  # refused before anything was evaluated
    later = kernelseek(
        env, tmp_path, *base, "--good", shas[2], "--bad", "HEAD",
        "--metric", "speedup", "--threshold", "1.0", *stand_in,
    )  # fmt: skip
    assert "the good revision (candidate 3" in later.stderr and later.returncode == 2
    # Judged again, the start fails the default rule (every scenario passes).
    judged = kernelseek(env, tmp_path, *base, "--evaluator", f"{HERE}:failing_evaluator")
    assert judged.returncode == 2
    assert "is bad when judged under this rule" in judged.stderr
    # "judging ... first", what it measured, then the refusal
    assert len(judged.stderr.strip().splitlines()) == 3
    assert "the start measured: fail" in judged.stderr


def test_bisect_with_no_gpu_stack_is_refused_with_what_to_install(
    tmp_path: Path, env: dict[str, str]
) -> None:
    recorded_session(tmp_path, (1.1, 0.8))
    result = kernelseek(
        {**env, "CUDA_VISIBLE_DEVICES": ""}, tmp_path, "bisect", "bis", "--traces", "recorded"
    )
    assert result.returncode == 2
    assert "bisect cannot evaluate candidates here" in result.stderr
    assert "pip install -e '.[gpu]'" in result.stderr and "step 1" not in result.stderr


def test_a_recording_without_its_repository_or_bundle_says_so(
    tmp_path: Path, env: dict[str, str]
) -> None:
    recorded_session(tmp_path, (1.1,))
    (tmp_path / "recorded" / "bis.bundle").unlink()
    result = kernelseek(env, tmp_path, "bisect", "bis", "--traces", "recorded")
    assert result.returncode == 2
    assert "is not on this machine and there is no bis.bundle beside its trace" in result.stderr


def test_the_judgement_names_why_a_skip_is_one() -> None:
    errored = make_result(None, verdict="error")
    errored.reasons = [NO_CUPY]
    assert bisect_judgement(errored) == (BISECT_SKIP, f"the harness could not judge it: {NO_CUPY}")
    untimed = make_result(None)
    assert bisect_judgement(untimed, metric="speedup", threshold=1.0)[1] == (
        "no speedup was measured (nothing timed, or no peer)"
    )
    assert bisect_judgement(make_result(1.2), metric="speedup", threshold=1.0) == (0, None)


def test_library_bisect_steps_carry_the_skip_reason(tmp_path: Path) -> None:
    history = session_with_speeds(tmp_path, "lib", (1.1, 1.2, 1.3)).history
    outcome = bisect_candidates(history, history.base_sha, "HEAD", lambda sha, d: Skip("busy"))
    assert {(s.verdict, s.reason) for s in outcome.steps} == {("skip", "busy")}
    with pytest.raises(KernelseekError, match="could not be judged: busy"):
        confirm_good(history, history.base_sha, lambda sha, d: Skip("busy"))
    with pytest.raises(KernelseekError, match="is bad when judged"):
        confirm_good(history, history.base_sha, lambda sha, d: False)


def test_eval_bisect_exit_says_why_it_skips(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelseek_tui.cli import main
    from kernelseek_tui.evaluate import api

    errored = make_result(None, verdict="error")
    errored.reasons = [NO_CUPY]
    monkeypatch.setattr(api, "evaluate", lambda *a, **k: errored)
    code = main(["eval", str(ROOT / "kernels" / "flash_fwd"), "--bisect-exit", "--json"])
    assert code == BISECT_SKIP
    assert f"telling bisect to skip: the harness could not judge it: {NO_CUPY}" in (
        capsys.readouterr().err
    )


def test_the_question_is_placed_where_it_was_asked() -> None:
    """A candidate carries the last question asked before it, so a candidate found by a
    bisect may carry one asked several candidates earlier: the output names where."""
    from types import SimpleNamespace

    from kernelseek_tui.commands.bisect import asked_before

    texts = [None, "q1", "q1", "q2", "q2", "q2", "q1"]
    chain = [SimpleNamespace(n=n, question=q) for n, q in enumerate(texts, start=1)]
    assert asked_before(chain, chain[5]) == 4  # q2 was asked right before candidate 4
    assert asked_before(chain, chain[3]) == 4
    assert asked_before(chain, chain[6]) == 7  # q1 asked again, right before candidate 7
    assert asked_before(chain, chain[2]) == 2
