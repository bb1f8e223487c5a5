"""A parallel bisect: k candidates tested at once per round, the same first bad candidate as
the binary search in fewer rounds; and `kernelseek bisect --gpus` on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from kernelseek_tui.history import (
    BisectProgress,
    SessionHistory,
    bisect_candidates,
    bisect_candidates_parallel,
)
from kernelseek_tui.session.engine import Engine
from tests.test_session_support import (
    ROOT,
    ScriptedAgent,
    git,
    make_task_repo,
    session_config,
    source_evaluator,
)

TASK = "kernels/k"
COUNT = 15  # candidates on the branch


def passing(speed: float) -> EvalResult:
    scenarios = [ScenarioResult(name="s", set="grid", fields={}, passed=True)]
    summary = EvalSummary(passed=1, total=1, geomean_speedup=speed)
    return EvalResult(eval_id="e", verdict="pass", scenarios=scenarios, summary=summary)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> SessionHistory:
    repo = tmp_path_factory.mktemp("bisect") / "user"
    (repo / TASK).mkdir(parents=True)
    (repo / TASK / "kernel.cu").write_text("// n 0\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    history = SessionHistory.create(repo / TASK, "pb")
    for n in range(1, COUNT + 1):
        (history.task_dir / "kernel.cu").write_text(f"// n {n}\n")
        history.commit_candidate(
            [history.task_dir / "kernel.cu"], passing(1.0 + n / 10), seq=n, question=None
        )
    return history


def number_in(task_dir: Path) -> int:
    return int((task_dir / "kernel.cu").read_text().split()[2])


def good_below(first_bad: int, skip: frozenset[int] = frozenset()) -> Any:
    def is_good(sha: str, task_dir: Path) -> bool | None:
        n = number_in(task_dir)
        return None if n in skip else n < first_bad

    return is_good


@pytest.mark.parametrize("slots", [2, 3])
def test_it_finds_the_binary_searchs_first_bad_in_fewer_rounds(
    history: SessionHistory, slots: int
) -> None:
    start, tip = history.base_sha, history.head_sha()
    rounds: dict[str, list[int]] = {"binary": [], "parallel": []}
    for first_bad in (1, 2, 5, 8, 11, 14, 15):
        binary = bisect_candidates(history, start, tip, good_below(first_bad))
        parallel = bisect_candidates_parallel(history, start, tip, good_below(first_bad), slots)
        assert parallel.first_bad is not None and parallel.first_bad.n == first_bad
        assert parallel.first_bad == binary.first_bad
        assert parallel.last_good == binary.last_good
        rounds["binary"].append(binary.rounds)
        rounds["parallel"].append(parallel.rounds)
        # No round tests more candidates than there are slots.
        per_round: dict[int, int] = {}
        for step in parallel.steps:
            assert step.round is not None
            per_round[step.round] = per_round.get(step.round, 0) + 1
        assert max(per_round.values()) <= slots
    assert all(p <= b for p, b in zip(rounds["parallel"], rounds["binary"], strict=True))
    assert sum(rounds["parallel"]) < sum(rounds["binary"])
    # 15 candidates: 4 binary rounds; 3 rounds with 2 slots (log3 16), 2 with 3 (log4 16).
    assert max(rounds["binary"]) == 4
    assert max(rounds["parallel"]) == {2: 3, 3: 2}[slots]


def test_a_round_tests_its_candidates_at_the_same_time(history: SessionHistory) -> None:
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    inner = good_below(9)

    def slow(sha: str, task_dir: Path) -> bool | None:
        began = time.monotonic()
        time.sleep(0.2)
        with lock:
            spans.append((threading.current_thread().name, began, time.monotonic()))
        return inner(sha, task_dir)

    events: list[BisectProgress] = []
    outcome = bisect_candidates_parallel(history, history.base_sha, "HEAD", slow, 2, events.append)
    assert outcome.first_bad is not None and outcome.first_bad.n == 9
    by_round: dict[int, list[int]] = {}
    for index, step in enumerate(outcome.steps):
        by_round.setdefault(step.round or 0, []).append(index)
    for indices in by_round.values():
        if len(indices) == 2:
            a, b = (spans[i] for i in indices)
            assert a[0] != b[0]  # two threads
    two_at_once = sum(
        1 for i, a in enumerate(spans) for b in spans[i + 1 :] if b[1] < a[2] and a[1] < b[2]
    )
    assert two_at_once >= len([r for r in by_round.values() if len(r) == 2])
    # Progress: a report before and after each test, each carrying its round.
    assert len(events) == 2 * len(outcome.steps)
    assert {e.round for e in events} == set(by_round)
    assert sorted(e.step for e in events if e.verdict is None) == list(
        range(1, len(outcome.steps) + 1)
    )


def test_skipped_candidates_leave_the_same_suspects(history: SessionHistory) -> None:
    start, tip = history.base_sha, history.head_sha()
    is_good = good_below(7, skip=frozenset({6}))
    binary = bisect_candidates(history, start, tip, is_good)
    parallel = bisect_candidates_parallel(history, start, tip, is_good, 2)
    assert binary.first_bad is None and parallel.first_bad is None
    assert [c.n for c in parallel.suspects] == [c.n for c in binary.suspects] == [6, 7]


def test_one_slot_is_the_binary_search_and_none_is_refused(history: SessionHistory) -> None:
    start, tip = history.base_sha, history.head_sha()
    one = bisect_candidates_parallel(history, start, tip, good_below(4), 1)
    binary = bisect_candidates(history, start, tip, good_below(4))
    assert [s.candidate.n for s in one.steps] == [s.candidate.n for s in binary.steps]
    with pytest.raises(KernelseekError, match="at least one"):
        bisect_candidates_parallel(history, start, tip, good_below(4), 0)


def test_bisect_gpus_on_the_command_line(tmp_path: Path) -> None:
    task = make_task_repo(tmp_path / "user")
    config = session_config(task, tmp_path / "tr", "cli")
    engine = Engine.start(config, evaluator=source_evaluator(None))  # type: ignore[arg-type]
    original = (engine.workspace / "baseline.cu").read_text()
    steps: list[tuple[Any, ...]] = []
    speeds = (1.1, 1.2, 1.3, 1.4, 1.5, 0.9, 0.8, 0.7)
    for speed in speeds:
        text = original + f"// speed {speed}\n"
        steps += [("tool", "write_file", {"path": "baseline.cu", "content": text})]
        steps += [("tool", "evaluate", {})]
    engine.run(ScriptedAgent(steps))
    assert len(engine.history.candidates()) == len(speeds)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="0,1")  # two GPUs, as far as it knows
    base = [sys.executable, "-m", "kernelseek_tui", "bisect", "cli", "--metric", "speedup",
            "--threshold", "1.0", "--traces", "tr", "--evaluator",
            "tests.test_parallel_support:device_source_evaluator"]  # fmt: skip
    run = subprocess.run(
        [*base, "--gpus", "0,1", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout)
    sixth = next(c for c in engine.history.candidates() if c.n == 6)
    assert outcome["first_bad"] == sixth.sha
    assert outcome["rounds"] < len(outcome["steps"])  # some round tested two at once
    assert "round 1" in run.stderr
    assert "measured on GPU 0" in run.stderr and "measured on GPU 1" in run.stderr
    bad = subprocess.run(
        [*base, "--gpus", "0,1", "--device", "0"], env=env, cwd=tmp_path, capture_output=True,
        text=True,
    )  # fmt: skip
    assert bad.returncode != 0 and "not both" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
