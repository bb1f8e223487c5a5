"""Bisecting a session's candidates: kernelseek's own search, the exit-code mapping, and plain
`git bisect run` driven by that mapping, all on real repositories."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from kernelseek_tui.history import (
    BISECT_BAD,
    BISECT_GOOD,
    BISECT_SKIP,
    BisectProgress,
    SessionHistory,
    bisect_candidates,
    bisect_exit_code,
    predicate_from_evaluator,
)

TASK = "kernels/k"
ROOT = Path(__file__).resolve().parents[1]
# Speed of each candidate's kernel: good (>= 1.0) through candidate 5, bad from candidate 6.
SPEEDS = [1.2, 1.4, 1.6, 1.8, 2.0, 0.9, 0.8, 0.7, 0.6]


def sh(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=User", "-c", "user.email=user@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def result_for(speed: float | None, *, passed: int = 2, verdict: str = "pass") -> EvalResult:
    scenarios = [
        ScenarioResult(name="small", set="grid", fields={}, passed=passed >= 1),
        ScenarioResult(name="large", set="grid", fields={}, passed=passed >= 2),
    ]
    summary = EvalSummary(passed=passed, total=2, geomean_speedup=speed)
    return EvalResult(eval_id="e", verdict=verdict, scenarios=scenarios, summary=summary)  # type: ignore[arg-type]


def speed_in(task_dir: Path) -> float:
    match = re.search(r"speed (\S+)", (task_dir / "kernel.cu").read_text())
    assert match, "every kernel in these tests names its speed"
    return float(match.group(1))


@pytest.fixture
def history(tmp_path: Path) -> SessionHistory:
    repo = tmp_path / "user"
    (repo / TASK).mkdir(parents=True)
    (repo / TASK / "kernel.cu").write_text("// speed 1.0\n")
    sh(repo, "init", "-q", "-b", "main")
    sh(repo, "add", "-A")
    sh(repo, "commit", "-q", "-m", "initial")
    history = SessionHistory.create(repo / TASK, "b1")
    for seq, speed in enumerate(SPEEDS, start=1):
        (history.task_dir / "kernel.cu").write_text(f"// speed {speed}\n")
        history.commit_candidate(
            [history.task_dir / "kernel.cu"], result_for(speed), seq=seq, question=None
        )
    return history


def by_n(history: SessionHistory, n: int) -> str:
    return next(c.sha for c in history.candidates() if c.n == n)


def test_finds_the_first_bad_candidate_in_log_steps(history: SessionHistory) -> None:
    tested: list[tuple[str, str]] = []
    events: list[BisectProgress] = []

    def is_good(sha: str, task_dir: Path) -> bool:
        # The directory holds exactly what the commit holds, not the worktree's files.
        kernel = sh(history.repo, "show", f"{sha}:{TASK}/kernel.cu")
        assert (task_dir / "kernel.cu").read_text() == kernel
        tested.append((sha, kernel))
        return speed_in(task_dir) >= 1.0

    outcome = bisect_candidates(history, history.base_sha, "HEAD", is_good, events.append)

    assert outcome.found and outcome.first_bad is not None
    assert outcome.first_bad.n == 6 and outcome.first_bad.sha == by_n(history, 6)
    assert outcome.suspects == (outcome.first_bad,)
    assert outcome.last_good == by_n(history, 5)
    assert len(tested) == len(outcome.steps) <= math.ceil(math.log2(len(SPEEDS) + 1))
    assert [s.verdict for s in outcome.steps] == [
        "good" if speed_in_text(k) >= 1.0 else "bad" for _, k in tested
    ]
    # Progress: one event before each test (no verdict yet) and one after it.
    assert [e.verdict for e in events[::2]] == [None] * len(tested)
    assert [e.verdict for e in events[1::2]] == [s.verdict for s in outcome.steps]
    assert [e.step for e in events] == [i // 2 + 1 for i in range(len(events))]
    assert events[0].remaining == len(SPEEDS) and events[0].steps_left >= 2
    assert events[-1].steps_left == 0


def speed_in_text(kernel: str) -> float:
    return float(kernel.split("speed ")[1])


def test_a_narrower_range_tests_only_inside_it(history: SessionHistory) -> None:
    tested: list[str] = []

    def is_good(sha: str, task_dir: Path) -> bool:
        tested.append(sha)
        return speed_in(task_dir) >= 1.0

    outcome = bisect_candidates(history, by_n(history, 4), by_n(history, 7), is_good)
    assert outcome.first_bad is not None and outcome.first_bad.n == 6
    assert set(tested) <= {by_n(history, 5), by_n(history, 6)}


def test_skips_are_stepped_around(history: SessionHistory) -> None:
    skip = {by_n(history, 3), by_n(history, 5)}

    def is_good(sha: str, task_dir: Path) -> bool | None:
        return None if sha in skip else speed_in(task_dir) >= 1.0

    outcome = bisect_candidates(history, history.base_sha, "HEAD", is_good)
    # Candidate 5 (good, but untestable) sits right before the first bad one: either may be it.
    assert outcome.first_bad is None and not outcome.found
    assert [c.n for c in outcome.suspects] == [5, 6]
    assert outcome.last_good == by_n(history, 4)
    assert {s.candidate.sha for s in outcome.steps if s.verdict == "skip"} <= skip


def test_a_skip_away_from_the_boundary_still_finds_it(history: SessionHistory) -> None:
    skip = by_n(history, 3)

    def is_good(sha: str, task_dir: Path) -> bool | None:
        return None if sha == skip else speed_in(task_dir) >= 1.0

    outcome = bisect_candidates(history, history.base_sha, "HEAD", is_good)
    assert outcome.first_bad is not None and outcome.first_bad.n == 6


def test_bisect_leaves_every_checkout_alone(history: SessionHistory) -> None:
    (history.task_dir / "kernel.cu").write_text("// speed 9.9 uncommitted\n")
    before = (
        sh(history.repo, "status", "--porcelain"),
        sh(history.worktree, "status", "--porcelain"),
        sh(history.repo, "worktree", "list", "--porcelain"),
        sh(history.repo, "rev-parse", "HEAD", history.head_sha()),
    )
    bisect_candidates(history, history.base_sha, "HEAD", lambda sha, d: speed_in(d) >= 1.0)
    after = (
        sh(history.repo, "status", "--porcelain"),
        sh(history.worktree, "status", "--porcelain"),
        sh(history.repo, "worktree", "list", "--porcelain"),
        sh(history.repo, "rev-parse", "HEAD", history.head_sha()),
    )
    assert after == before
    assert (history.task_dir / "kernel.cu").read_text() == "// speed 9.9 uncommitted\n"


def test_bad_ranges_are_clear_errors(history: SessionHistory) -> None:
    user_head = sh(history.repo, "rev-parse", "main").strip()
    never = lambda sha, d: True  # noqa: E731
    cases = [
        (by_n(history, 6), by_n(history, 2), "must come before"),
        (by_n(history, 3), by_n(history, 3), "must come before"),
        (user_head, "HEAD", "neither the start nor a candidate"),
        ("nonsense", "HEAD", "names no commit"),
    ]
    for good, bad, expected in cases:
        with pytest.raises(KernelseekError, match=expected):
            bisect_candidates(history, good, bad, never)


@pytest.mark.parametrize(
    ("result", "criteria", "code"),
    [
        (result_for(1.5), {}, BISECT_GOOD),
        (result_for(1.5, passed=1, verdict="fail"), {}, BISECT_BAD),
        (result_for(None, passed=0, verdict="error"), {}, BISECT_SKIP),
        (result_for(1.5), {"metric": "speedup", "threshold": 1.5}, BISECT_GOOD),
        (result_for(1.49), {"metric": "speedup", "threshold": 1.5}, BISECT_BAD),
        (result_for(None), {"metric": "speedup", "threshold": 1.5}, BISECT_SKIP),
        (result_for(9.0, passed=1, verdict="fail"), {"metric": "speedup", "threshold": 1.0}, 1),
        (result_for(1.5), {"metric": "vs_fa3", "threshold": 0.5}, BISECT_SKIP),  # no FA3 number
        (result_for(1.0, passed=1, verdict="fail"), {"scenario": "small"}, BISECT_GOOD),
        (result_for(1.0, passed=1, verdict="fail"), {"scenario": "large"}, BISECT_BAD),
        (result_for(1.0, verdict="error"), {"scenario": "large"}, BISECT_SKIP),
    ],
)
def test_bisect_exit_code(result: EvalResult, criteria: dict, code: int) -> None:
    assert bisect_exit_code(result, **criteria) == code


def test_bisect_exit_code_skips_a_scenario_that_did_not_run() -> None:
    result = result_for(1.0, passed=0, verdict="fail")
    result.scenarios[1].passed = None
    assert bisect_exit_code(result, scenario="large") == BISECT_SKIP
    result.scenarios.clear()  # a build failure: nothing ran
    assert bisect_exit_code(result, scenario="large") == BISECT_SKIP


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ({"scenario": "small", "metric": "speedup", "threshold": 1.0}, "not both"),
        ({"metric": "speedup"}, "needs a threshold"),
        ({"metric": "latency", "threshold": 1.0}, "unknown metric 'latency'"),
        ({"threshold": 1.0}, "needs a metric"),
        ({"metric": "speedup", "threshold": float("nan")}, "not a finite number"),
        ({"scenario": "huge"}, "scenario 'huge' is not in this evaluation"),
    ],
)
def test_bisect_exit_code_refuses_unclear_criteria(criteria: dict, message: str) -> None:
    with pytest.raises(KernelseekError, match=message):
        bisect_exit_code(result_for(1.0), **criteria)


SCRIPT = """\
#!/bin/sh
# Judge the checked-out commit the way `kernelseek eval --bisect-exit` will.
exec "{python}" - "$@" <<'EOF'
import re, sys
sys.path.insert(0, "{root}")
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary
from kernelseek_tui.history import bisect_exit_code
text = open("{task}/kernel.cu").read()
speed = float(re.search(r"speed (\\S+)", text).group(1))
if speed == {skip}:
    sys.exit(125)
result = EvalResult(eval_id="e", verdict="pass",
                    summary=EvalSummary(passed=2, total=2, geomean_speedup=speed))
sys.exit(bisect_exit_code(result, metric="speedup", threshold=1.0))
EOF
"""


@pytest.mark.parametrize("skip_speed", [None, 1.8])
def test_git_bisect_run_agrees_with_bisect_candidates(
    history: SessionHistory, tmp_path: Path, skip_speed: float | None
) -> None:
    script = tmp_path / "judge.sh"
    script.write_text(SCRIPT.format(python=sys.executable, root=ROOT, task=TASK, skip=skip_speed))
    script.chmod(0o755)
    # git bisect checks commits out, so it runs in a worktree of its own.
    scratch = tmp_path / "bisect-worktree"
    sh(history.repo, "worktree", "add", "--quiet", "--detach", str(scratch), history.head_sha())
    sh(scratch, "bisect", "start", "--first-parent", history.head_sha(), history.base_sha)
    log = sh(scratch, "bisect", "run", str(script))
    replay = sh(scratch, "bisect", "log")
    sh(scratch, "bisect", "reset")
    sh(history.repo, "worktree", "remove", "--force", str(scratch))
    match = re.search(r"^([0-9a-f]{40}) is the first bad commit", log, re.MULTILINE)
    assert match, log

    def evaluate(sha: str, task_dir: Path) -> EvalResult:
        speed = speed_in(task_dir)
        if speed == skip_speed:
            return EvalResult(eval_id="e", verdict="error")
        return result_for(speed)

    is_good = predicate_from_evaluator(evaluate, metric="speedup", threshold=1.0)
    outcome = bisect_candidates(history, history.base_sha, history.head_sha(), is_good)
    assert outcome.first_bad is not None
    assert outcome.first_bad.sha == match.group(1) == by_n(history, 6)
    # With a skip, both met it (candidate 4 is the first either tests) and stepped around it.
    skipped_by_git = re.findall(r"^git bisect skip ([0-9a-f]{40})", replay, re.MULTILINE)
    skipped_here = [s.candidate.sha for s in outcome.steps if s.verdict == "skip"]
    assert skipped_by_git == skipped_here == ([by_n(history, 4)] if skip_speed else [])
