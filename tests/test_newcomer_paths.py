"""The README's Usage lines as a newcomer types them: from a fresh clone (no sessions of one's
own), from a folder with no traces at all, and from a non-editable install."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.paths import DEMO_DIR
from tests.test_session_cli import kernelseek
from tests.test_session_support import ROOT


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    """A folder laid out as a fresh clone's root: ./traces holds only the demo folder."""
    (tmp_path / "traces" / "demo").mkdir(parents=True)
    return tmp_path


NOTE = "note: no sessions under ./traces: showing the recorded demo sessions"


def test_ls_from_a_fresh_clone_lists_the_demo_sessions(clone: Path, env: dict[str, str]) -> None:
    result = kernelseek(env, clone, "ls")
    assert result.returncode == 0, result.stderr
    assert "scripted-claude" in result.stdout and "gpu-tuner-" in result.stdout
    assert result.stderr.startswith(NOTE) and str(DEMO_DIR) in result.stderr


def test_question_jumps_from_a_fresh_clone_answer_from_the_demo(
    clone: Path, env: dict[str, str]
) -> None:
    result = kernelseek(env, clone, "query", "--canned", "question-jumps")
    assert result.returncode == 0, result.stderr
    assert "unused-structure" in result.stdout  # the scripted session's question before a jump
    stats = kernelseek(env, clone, "repertoire", "stats")
    assert stats.returncode == 0, stats.stderr
    row = next(line for line in stats.stdout.splitlines() if line.startswith("unused-structure"))
    assert row.split()[2:4] == ["1", "1"]  # asked once, followed by a jump once


def test_ones_own_sessions_replace_the_demo(clone: Path, env: dict[str, str]) -> None:
    shutil.copytree(DEMO_DIR / "scripted-claude", clone / "traces" / "mine")
    result = kernelseek(env, clone, "ls", "--json")
    assert result.returncode == 0 and "note:" not in result.stderr
    assert result.stdout.count("\n") == 1 and '"dir": "traces/mine"' in result.stdout


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_named_root_with_no_session_is_an_error_with_a_hint(
    tmp_path: Path, env: dict[str, str], how: str
) -> None:
    (tmp_path / "empty").mkdir()
    args: list[str] = ["--traces", "empty"] if how == "flag" else []
    if how == "environment":
        env["KERNELSEEK_TRACES"] = str(tmp_path / "empty")
    for command in (["ls"], ["query", "--canned", "question-jumps"], ["repertoire", "stats"]):
        result = kernelseek(env, tmp_path, *command, *args)
        assert result.returncode == 2, (command, result.stdout)
        assert "no sessions under" in result.stderr
        assert "start one with `kernelseek run TASK_DIR`" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_the_demo_leaves_no_temporary_directory(tmp_path: Path, env: dict[str, str]) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    shot = tmp_path / "shot.svg"
    result = kernelseek(
        {**env, "TMPDIR": str(scratch)}, tmp_path, "demo", "--session", "scripted-claude",
        "--headless-check", str(shot),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert shot.is_file() and "scripted-claude" in shot.read_text()
    assert list(scratch.glob("kernelseek-demo-*")) == []


# Runs the CLI from ``lib`` alone: this checkout's editable install puts a finder in front of
# sys.path that would import the checkout instead, so it is taken out first.
INSTALLED = """
import runpy, sys
sys.meta_path = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, sys.argv[1])
import kernelseek_tui
print("kernelseek_tui from", kernelseek_tui.__file__.rsplit("/kernelseek_tui/", 1)[0], flush=True)
sys.argv = ["kernelseek", *sys.argv[2:]]
runpy.run_module("kernelseek_tui", run_name="__main__")
"""


def installed_kernelseek(
    lib: Path, env: dict[str, str], cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    without_checkout = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", INSTALLED, str(lib), *args],
        env=without_checkout, cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_non_editable_install_ships_the_demo_and_the_repertoire(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """What `pip install .` puts in site-packages is what setuptools' build_py writes; built
    from a copy of the tree, then run from a folder that has neither traces nor repertoire."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "repertoire.toml"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "traces" / "demo", source / "traces" / "demo")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(
        ROOT / "kernelseek_tui", source / "kernelseek_tui", symlinks=True, ignore=ignore
    )
    lib = tmp_path / "lib"
    built = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
         "--build-lib", str(lib)],
        cwd=source, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    shipped = lib / "kernelseek_tui" / "shipped"
    assert not (shipped / "demo").is_symlink() and (shipped / "repertoire.toml").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    demo = installed_kernelseek(lib, env, elsewhere, "demo", "--list")
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.splitlines()[0] == f"kernelseek_tui from {lib}"
    assert "scripted-claude" in demo.stdout.split()
    questions = installed_kernelseek(lib, env, elsewhere, "repertoire", "list")
    assert questions.returncode == 0, questions.stderr
    assert "unused-structure" in questions.stdout
    listing = installed_kernelseek(lib, env, elsewhere, "ls")
    assert listing.returncode == 0 and "scripted-claude" in listing.stdout
