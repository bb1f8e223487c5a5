"""A task started from another of its kernels (`kernelseek run TASK --source sm90.cu`): the
task's source, its knobs and the session's record follow the chosen file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kernelseek_tui.session.meta import read_meta
from kernelseek_tui.task import TaskError, load_task
from tests.test_session_cli import STUB, kernelseek
from tests.test_session_support import make_task_repo

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"


def test_each_source_carries_its_own_knobs() -> None:
    default = load_task(TASK_DIR)
    assert default.source.name == "baseline.cu"
    assert {k.name for k in default.knobs} == {"BLOCK_M", "BLOCK_N"}
    hopper = load_task(TASK_DIR, "sm90.cu")
    assert hopper.source == TASK_DIR / "sm90.cu"
    names = {k.name for k in hopper.knobs}
    assert names and not names & {"BLOCK_M", "BLOCK_N"}
    source = hopper.source.read_text()
    for knob in hopper.knobs:  # every knob is a define the kernel reads
        assert f"#ifndef {knob.name}" in source
        # and task.toml's default is the file's own, which the tuner starts from
        default_value = re.search(
            rf"#ifndef {knob.name}\n(?://.*\n)*#define {knob.name} (\d+)", source
        )
        assert default_value, knob.name
        assert int(default_value[1]) == knob.default, knob.name


@pytest.mark.parametrize(
    ("source", "message"),
    [("nosuch.cu", "source 'nosuch.cu' does not exist"), ("../../README.md", "outside the task")],
)
def test_a_source_must_be_a_file_of_the_task(source: str, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        load_task(TASK_DIR, source)


def test_a_session_from_another_source_tunes_that_source(tmp_path: Path, env) -> None:
    task = make_task_repo(tmp_path / "user")
    kernelseek(
        env, tmp_path, "run", str(task), "--source", "sm90.cu", "--set", "quick",
        "--budget-calls", "3", "--session-id", "s1", "--traces", "tr", "--evaluator", STUB,
        check=True,
    )  # fmt: skip
    meta = read_meta(tmp_path / "tr" / "s1")
    assert meta.config["source"] == "sm90.cu"
    points = [json.loads(line) for line in (tmp_path / "count").read_text().splitlines()]
    tuned = {name for point in points for name in point} - {"BLOCK_M", "BLOCK_N"}
    assert tuned and all(name.startswith("SM90_") for name in tuned)
    refused = kernelseek(env, tmp_path, "run", "--resume", "s1", "--source", "x.cu",
                         "--traces", "tr")  # fmt: skip
    assert refused.returncode != 0 and "--source starts a new session" in refused.stderr
