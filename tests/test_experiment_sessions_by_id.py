"""A session of an experiment is found by its bare id (as `ls` shows it): `find_session`,
`attach` and `run --resume` look one level down, into the experiments under the traces root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import EXPERIMENT_FILE
from kernelseek_tui.session.meta import SessionMeta, find_session, read_meta, write_meta
from tests.test_session_support import make_task_repo

STUB = "tests.test_session_support:counting_evaluator"


def make_session(directory: Path) -> Path:
    write_meta(
        directory,
        SessionMeta(
            session_id=directory.name, task_dir="/t", agent="tuner", repo="/r",
            branch=f"kernelseek/{directory.name}", worktree="/w", base_sha="0" * 40,
            status="finished",
        ),
    )  # fmt: skip
    return directory


def make_experiment(root: Path, name: str, session_ids: list[str]) -> Path:
    experiment_dir = root / name
    experiment_dir.mkdir(parents=True)
    planned = [{"session_id": sid, "arm": sid.split("-")[1]} for sid in session_ids]
    (experiment_dir / EXPERIMENT_FILE).write_text(
        json.dumps({"name": name, "spec": {}, "sessions": planned, "status": "finished"})
    )
    for session_id in session_ids:
        make_session(experiment_dir / session_id)
    return experiment_dir


def test_a_bare_id_finds_the_session_inside_its_experiment(tmp_path: Path) -> None:
    make_session(tmp_path / "solo-1")
    ab = make_experiment(tmp_path, "ab", ["ab-on-1", "ab-off-1"])
    assert find_session(tmp_path, "ab-off-1") == (ab / "ab-off-1").resolve()
    assert find_session(tmp_path, "ab-on") == (ab / "ab-on-1").resolve()  # a unique prefix
    assert find_session(tmp_path, "solo") == (tmp_path / "solo-1").resolve()
    with pytest.raises(KernelseekError, match="matches 2 sessions"):
        find_session(tmp_path, "ab-o")
    with pytest.raises(KernelseekError, match="no session 'ab-x'"):
        find_session(tmp_path, "ab-x")


def test_the_same_id_in_two_experiments_is_ambiguous(tmp_path: Path) -> None:
    make_experiment(tmp_path, "one", ["x-on-1"])
    make_experiment(tmp_path, "two", ["x-on-1"])
    with pytest.raises(KernelseekError, match=r"session of 2 experiments \(one, two\)"):
        find_session(tmp_path, "x-on-1")
    assert find_session(tmp_path, str(tmp_path / "two" / "x-on-1")).parent.name == "two"


def kernelseek(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_run_resume_and_attach_take_the_bare_id_of_an_experiment_session(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    # A session run where an experiment runs its sessions: under <traces>/<experiment>/.
    first = kernelseek(
        env, tmp_path, "run", str(task), "--set", "quick", "--budget-calls", "2",
        "--session-id", "ab-off-1", "--traces", "tr/ab", "--evaluator", STUB,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    (tmp_path / "tr" / "ab" / EXPERIMENT_FILE).write_text(
        json.dumps({"name": "ab", "spec": {}, "sessions": [
            {"session_id": "ab-off-1", "arm": "off"}], "status": "finished"})
    )  # fmt: skip
    more = kernelseek(
        env, tmp_path, "run", "--resume", "ab-off-1", "--budget-calls", "4",
        "--traces", "tr", "--evaluator", STUB,
    )  # fmt: skip
    assert more.returncode == 0, more.stderr
    meta = read_meta(tmp_path / "tr" / "ab" / "ab-off-1")
    assert meta.config["budgets"]["calls"] == 4 and meta.stats["evals"] == 4
    attach = kernelseek(env, tmp_path, "attach", "ab-off", "--traces", "tr")
    # Found: what stops it here is the missing terminal (or the missing TUI), not the id.
    assert "no session" not in attach.stderr
    assert "terminal" in attach.stderr or "TUI is not available" in attach.stderr


def test_compare_puts_a_session_named_by_id_in_its_experiments_arm(tmp_path: Path) -> None:
    from kernelseek_tui.experiment.comparison import resolve_targets

    make_session(tmp_path / "solo-1")
    make_experiment(tmp_path, "ab", ["ab-on-1", "ab-off-1"])
    targets = resolve_targets(tmp_path, ["ab-off-1", "solo-1"])
    assert [(t.session_dir.name, t.arm) for t in targets] == [
        ("ab-off-1", "off"), ("solo-1", "repertoire"),
    ]  # fmt: skip
