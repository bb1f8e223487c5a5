"""The experiment files shipped under experiments/ stay runnable: each loads with the settings
`kernelseek run --config` accepts, names a task that exists, and gives each arm a setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.commands.run import SETTINGS
from kernelseek_tui.experiment.spec import load_spec
from kernelseek_tui.task import load_task

FILES = sorted((Path(__file__).resolve().parents[1] / "experiments").glob("*.toml"))


def test_there_is_an_experiment_file() -> None:
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_an_experiment_file_loads_and_its_task_exists(path: Path) -> None:
    spec = load_spec(path, allowed_settings=frozenset(SETTINGS))
    task = load_task(spec.task_dir, spec.source)
    assert task.source.exists()
    assert len(spec.arms) >= 2
    assert all(arm.settings for arm in spec.arms)
