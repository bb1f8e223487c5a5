"""Recorded sessions (trace + bundle) unpack into browsable sessions with their git history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelseek_tui.browse.session_data import (
    counts,
    eval_result_at,
    load_session,
    resolve_session_dir,
    result_from_note,
)
from kernelseek_tui.browse.unpack import (
    DEMO_DIR,
    pack_session,
    recorded_sessions,
    unpack_demo,
    unpack_recorded,
)
from kernelseek_tui.errors import KernelseekError


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpack_demo(tmp_path_factory.mktemp("demo"))


def test_the_demo_ships_the_measured_session_and_the_scripted_one() -> None:
    names = recorded_sessions(DEMO_DIR)
    assert "scripted-claude" in names
    assert any(name.startswith("gpu-tuner-") for name in names)


def test_unpacked_sessions_point_at_their_new_repositories(demo_root: Path) -> None:
    for name in recorded_sessions(DEMO_DIR):
        meta = json.loads((demo_root / name / "session.json").read_text())
        assert meta["repo"].startswith(str(demo_root.parent))
        assert Path(meta["task_dir"]).relative_to(meta["repo"]) == Path("kernels/flash_fwd")
        data = load_session(demo_root / name)
        assert data.history is not None, data.history_problem
        candidates = data.history.candidates()
        assert candidates, name
        assert counts(data.table)["commits"] == len(candidates)


def test_each_commit_carries_its_evaluation_as_a_note(demo_root: Path) -> None:
    data = load_session(demo_root / "scripted-claude")
    assert data.history is not None
    for candidate in data.history.candidates():
        result = result_from_note(data.history, candidate.sha)
        assert result is not None and result.passed
        assert result.summary.geomean_speedup == pytest.approx(candidate.speedup, rel=1e-3)


def test_the_scripted_session_commits_changed_code_once_and_attaches_the_rest(
    demo_root: Path,
) -> None:
    # Recorded before every verified candidate became a commit, the demo committed the same
    # code several times (empty commits with different speedups).
    data = load_session(demo_root / "scripted-claude")
    history = data.history
    assert history is not None
    candidates = history.candidates()
    assert [c.n for c in candidates] == [3, 2, 1]
    for candidate in candidates:
        assert history.diff(f"{candidate.sha}^", candidate.sha).strip(), candidate.n
    commits = [r for r in data.table.to_pylist() if r["kind"] == "commit"]
    attached = [r for r in commits if json.loads(r["attrs"]).get("attached")]
    assert len(commits) == 9 and len(attached) == 6
    for row in attached:
        seqs = [entry["seq"] for entry in history.attached(row["git_sha"])]
        assert json.loads(row["attrs"])["eval_seq"] in seqs


def test_the_measured_session_holds_real_per_scenario_timings(demo_root: Path) -> None:
    name = next(n for n in recorded_sessions(DEMO_DIR) if n.startswith("gpu-tuner-"))
    data = load_session(demo_root / name)
    evals = [r for r in data.table.to_pylist() if r["kind"] == "eval"]
    assert len(evals) >= 3
    result = eval_result_at(data.session_dir, data.table, evals[0]["seq"])
    assert result is not None
    assert result.device.get("name", "").startswith("NVIDIA")
    assert all(s.ms and s.ms > 0 for s in result.scenarios)
    speeds = {round(e["speedup"], 3) for e in evals}
    assert len(speeds) >= 3  # at least three knob values that change speed


def test_unpacking_twice_keeps_the_first_copy(tmp_path: Path) -> None:
    first = unpack_recorded(DEMO_DIR, tmp_path)
    marker = first[0].session_dir / "marker"
    marker.write_text("x")
    unpack_recorded(DEMO_DIR, tmp_path)
    assert marker.exists()


def test_pack_then_unpack_round_trips(demo_root: Path, tmp_path: Path) -> None:
    pack_session(demo_root / "scripted-claude", tmp_path / "packed")
    again = unpack_recorded(tmp_path / "packed", tmp_path / "out")
    assert [s.session_id for s in again] == ["scripted-claude"]
    original = load_session(demo_root / "scripted-claude")
    copy = load_session(again[0].session_dir)
    assert copy.table.num_rows == original.table.num_rows
    assert copy.history is not None and original.history is not None
    assert [c.sha for c in copy.history.candidates()] == [
        c.sha for c in original.history.candidates()
    ]


def test_a_traces_root_opens_its_newest_session(demo_root: Path, tmp_path: Path) -> None:
    session_dir, root = resolve_session_dir(demo_root)
    assert root == demo_root.resolve()
    assert session_dir.parent == root
    with pytest.raises(KernelseekError, match="holds no session"):
        resolve_session_dir(tmp_path)


def test_a_trace_without_its_repository_still_loads(demo_root: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "scripted-claude"
    shutil.copytree(demo_root / "scripted-claude", copy)
    meta = json.loads((copy / "session.json").read_text())
    meta["repo"] = str(tmp_path / "gone")
    (copy / "session.json").write_text(json.dumps(meta))
    data = load_session(copy)
    assert data.history is None
    assert data.history_problem and "unavailable" in data.history_problem
    assert data.table.num_rows > 0


def test_a_synthetic_trace_without_a_repository_loads(tmp_path: Path) -> None:
    from tests.synthetic import generate_sessions_fast

    (session_dir,) = generate_sessions_fast(tmp_path, count=1, tool_calls=50, evals=5, questions=2)
    data = load_session(session_dir)
    assert data.history is None and data.history_problem
    assert counts(data.table)["tool_calls"] == 50


CLIMB = "climb-20261205-224256"
TUNER_PASS = "gpu-tuner-20261206-035949"


def _git_show(repo: str, what: str) -> bytes:
    import subprocess

    return subprocess.run(["git", "-C", repo, "show", what], capture_output=True, check=True).stdout


def test_the_tuner_pass_starts_from_the_climbs_last_kernel(demo_root: Path) -> None:
    # The demo says the tuner pass searched the knobs of the climb's last version: the kernel
    # at the pass's start must be the climb's last candidate's, byte for byte.
    climb = load_session(demo_root / CLIMB)
    tuner = load_session(demo_root / TUNER_PASS)
    assert climb.history is not None and tuner.history is not None
    last = max(climb.history.candidates(), key=lambda c: c.n)
    climb_meta = json.loads((demo_root / CLIMB / "session.json").read_text())
    tuner_meta = json.loads((demo_root / TUNER_PASS / "session.json").read_text())
    kernel = "kernels/flash_fwd/sm90.cu"
    assert _git_show(tuner_meta["repo"], f"{tuner_meta['base_sha']}:{kernel}") == _git_show(
        climb_meta["repo"], f"{last.sha}:{kernel}"
    )


@pytest.mark.parametrize(("name", "card"), [(CLIMB, "H100"), (TUNER_PASS, "H200")])
def test_a_recorded_session_names_the_card_every_evaluation_ran_on(
    demo_root: Path, name: str, card: str
) -> None:
    meta = json.loads((demo_root / name / "session.json").read_text())
    assert card in meta["recorded"]
    data = load_session(demo_root / name)
    evals = [r for r in data.table.to_pylist() if r["kind"] == "eval"]
    assert evals
    for row in evals:
        result = eval_result_at(data.session_dir, data.table, row["seq"])
        assert result is not None
        assert card in result.device.get("name", ""), (name, row["seq"])
