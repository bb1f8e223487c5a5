"""`kernelseek run --gpus` as a user runs it, with a stand-in evaluator per GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.session.meta import read_meta
from tests.test_session_support import ROOT, make_task_repo, read_events

STUB = "tests.test_session_support:counting_evaluator"


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    values.update(
        PYTHONPATH=str(ROOT),
        KS_TEST_COUNTER=str(tmp_path / "count"),
        KS_TEST_DELAY="0.1",
        CUDA_VISIBLE_DEVICES="0,1",  # two GPUs, as far as --gpus can tell
    )
    return values


def kernelseek(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_on_two_gpus_then_resume_on_one(tmp_path: Path, env: dict[str, str]) -> None:
    task = make_task_repo(tmp_path / "user")
    run = kernelseek(
        env, tmp_path, "run", str(task), "--agent", "tuner", "--set", "quick", "--gpus", "2",
        "--budget-calls", "5", "--session-id", "g2", "--traces", "tr", "--evaluator", STUB,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ended: budget_calls" in run.stdout and "5 evaluations" in run.stdout
    gpus_shown = re.findall(r"eval pass .* on GPU (\d)", run.stdout)
    assert len(gpus_shown) == 5 and set(gpus_shown) == {"0", "1"}
    session_dir = tmp_path / "tr" / "g2"
    assert read_meta(session_dir).config["gpus"] == ["0", "1"]
    batches = {e.attrs_dict().get("batch") for e in read_events(session_dir)} - {None}
    assert len(batches) == 2

    more = kernelseek(
        env, tmp_path, "run", "--resume", "g2", "--gpus", "1", "--budget-calls", "7",
        "--traces", "tr", "--evaluator", STUB,
    )  # fmt: skip
    assert more.returncode == 0, more.stdout + more.stderr
    assert read_meta(session_dir).config["gpus"] is None
    later = [e for e in read_events(session_dir) if e.kind == "eval"][5:]
    assert len(later) == 2 and not any(e.attrs_dict().get("batch") for e in later)
    evaluated = (tmp_path / "count").read_text().splitlines()
    assert len(evaluated) == len(set(evaluated)) == 7  # none judged twice
    assert {json.loads(line)["BLOCK_M"] for line in evaluated} == {32, 64, 128}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "3"], "--gpus 3: only 2 GPU(s) visible (0,1)"),
        (["--gpus", "0"], "--gpus wants at least 1"),
        (["--gpus", "0,0"], "--gpus names GPU 0 twice"),
        (["--gpus", "2", "--device", "1"], "give --gpus or --device, not both"),
    ],
)
def test_bad_gpu_requests_are_one_line_errors(
    tmp_path: Path, env: dict[str, str], args: list[str], message: str
) -> None:
    task = make_task_repo(tmp_path / "user")
    result = kernelseek(
        env, tmp_path, "run", str(task), "--agent", "tuner", "--traces", "tr",
        "--evaluator", STUB, *args,
    )  # fmt: skip
    assert result.returncode != 0
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
