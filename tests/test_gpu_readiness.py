"""Work that needs a GPU is refused up front, with what to install, where none can run.

Each test hides the GPUs with ``CUDA_VISIBLE_DEVICES=""`` (an empty list: CUDA sees none), so
it means the same on a laptop and on a GPU box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate import readiness
from kernelseek_tui.session.engine import Engine
from tests.test_session_cli import kernelseek
from tests.test_session_support import (
    ROOT,
    ScriptedAgent,
    git,
    make_result,
    make_task_repo,
    session_config,
)

STUB = "tests.test_session_support:counting_evaluator"


@pytest.fixture()
def no_gpu_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "CUDA_VISIBLE_DEVICES": ""}


def assert_nothing_started(repo: Path, traces: Path) -> None:
    assert git(repo, "branch", "--list", "kernelseek/*").strip() == ""
    assert not (repo / ".kernelseek").exists()
    assert not traces.exists() or not any(traces.iterdir())


@pytest.mark.parametrize(
    ("agent", "extra_env"),
    [("tuner", {}), ("claude", {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"})],
)
def test_a_session_that_cannot_evaluate_is_refused_before_its_branch_exists(
    tmp_path: Path, no_gpu_env: dict[str, str], agent: str, extra_env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    result = kernelseek(
        {**no_gpu_env, **extra_env}, tmp_path,
        "run", str(task), "--agent", agent, "--traces", "tr", "--budget-calls", "3",
    )  # fmt: skip
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no NVIDIA GPU is visible" in lines[0] and "pip install -e '.[gpu]'" in lines[0]
    assert result.stdout == ""  # no "session ... started", no evaluations
    assert_nothing_started(tmp_path / "user", tmp_path / "tr")


def test_a_stand_in_evaluator_still_runs_without_a_gpu(
    tmp_path: Path, no_gpu_env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    result = kernelseek(
        no_gpu_env, tmp_path, "run", str(task), "--agent", "tuner", "--set", "quick",
        "--traces", "tr", "--budget-calls", "2", "--session-id", "s1", "--evaluator", STUB,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ended: budget_calls" in result.stdout


def test_resuming_a_session_that_cannot_evaluate_is_refused(
    tmp_path: Path, no_gpu_env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    # A session judged by the real evaluator (none named in its config), stopped at once.
    engine = Engine.start(
        session_config(task, tmp_path / "tr", "s1"), evaluator=lambda *a, **k: make_result()
    )
    engine.run(ScriptedAgent([]))
    before = git(tmp_path / "user", "rev-parse", "kernelseek/s1")
    result = kernelseek(no_gpu_env, tmp_path, "run", "--resume", "s1", "--traces", "tr")
    assert result.returncode != 0
    assert "session s1 cannot evaluate candidates here" in result.stderr
    assert "pip install" in result.stderr
    assert git(tmp_path / "user", "rev-parse", "kernelseek/s1") == before


def test_a_task_outside_any_repository_is_announced_before_git_init(
    tmp_path: Path, no_gpu_env: dict[str, str]
) -> None:
    plain = tmp_path / "plain"
    make_task_repo(tmp_path / "user")
    (tmp_path / "user" / "kernels" / "flash_fwd").rename(plain)
    result = kernelseek(
        no_gpu_env, tmp_path, "run", str(plain), "--agent", "tuner", "--set", "quick",
        "--traces", "tr", "--budget-calls", "1", "--session-id", "s1", "--evaluator", STUB,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"note: {plain} is not in a git repository" in result.stderr
    assert "git init" in result.stderr and (plain / ".git").is_dir()


def test_eval_that_ran_nothing_prints_the_verdict_and_what_to_install(
    tmp_path: Path, no_gpu_env: dict[str, str]
) -> None:
    result = kernelseek(
        {**no_gpu_env, "KERNELSEEK_CACHE": str(tmp_path / "cache")},
        tmp_path, "eval", str(ROOT / "kernels" / "flash_fwd"), "--set", "quick",
    )  # fmt: skip
    assert result.returncode != 0
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("verdict: ") and "no scenario ran of 12" in lines[0]
    assert not any(line.startswith("scenario") or " - " in line for line in lines)
    assert lines[-1].startswith("to evaluate here: ") and "pip install" in lines[-1]
    assert len(lines) <= 8


def test_the_problems_name_each_missing_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(readiness, "find_nvcc", lambda: None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert readiness.gpu_stack_problems() == [
        "cupy is not installed",
        "nvcc is not on PATH",
        "no NVIDIA GPU is visible",
    ]
    with pytest.raises(readiness.KernelseekError, match=r"a tuner session cannot evaluate"):
        readiness.require_gpu_stack("a tuner session")
