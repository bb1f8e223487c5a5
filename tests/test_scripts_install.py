"""./scripts/demo and ./scripts/test install only when .venv is missing or pyproject.toml
changed, so that a second start works offline. Run on a copy of the scripts with a stand-in
Python that logs what it is asked to do (a real install needs the network)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.test_session_support import ROOT

# Stands in for python3 (creating .venv) and for .venv/bin/python (logging each call);
# $FAIL_PIP makes a pip install fail, as it does offline.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  cp "$0" "$3/bin/python"
  printf '#!/usr/bin/env bash\\necho "kernelseek $*"\\n' > "$3/bin/kernelseek"
  chmod +x "$3/bin/kernelseek"
fi
if [ "$1 $2 $3" = "-m pip install" ] && [ -n "${FAIL_PIP:-}" ]; then
  exit 1
fi
exit 0
"""


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    for name in ("demo", "test", "_install.sh"):
        shutil.copy2(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def start(
    repo: Path, script: str, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``scripts/<script>``; returns the result and the pip installs it asked for."""
    log = repo / "calls.log"
    log.write_text("")
    result = subprocess.run(
        [str(repo / "scripts" / script)],
        env={**os.environ, "PYTHON": str(repo / "python3"), "FAKE_LOG": str(log), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    installs = [line for line in log.read_text().splitlines() if "pip install" in line]
    return result, installs


def test_the_demo_installs_once_then_starts_offline(repo: Path) -> None:
    first, installs = start(repo, "demo")
    assert first.returncode == 0, first.stderr
    assert "-m pip install --quiet -e ." in installs
    assert first.stdout.strip() == "kernelseek demo"
    again, installs = start(repo, "demo", FAIL_PIP="1")  # offline: an install would fail
    assert again.returncode == 0, again.stderr
    assert installs == [] and again.stdout.strip() == "kernelseek demo"


def test_a_changed_pyproject_installs_again(repo: Path) -> None:
    start(repo, "demo")
    with (repo / "pyproject.toml").open("a") as handle:
        handle.write("\n# a new dependency would go here\n")
    _, installs = start(repo, "demo")
    assert "-m pip install --quiet -e ." in installs


def test_a_failed_install_is_tried_again_next_time(repo: Path) -> None:
    failed, _ = start(repo, "demo", FAIL_PIP="1")
    assert failed.returncode != 0
    assert not (repo / ".venv" / ".kernelseek-install").exists()
    _, installs = start(repo, "demo")
    assert "-m pip install --quiet -e ." in installs


def test_the_dev_install_of_scripts_test_serves_the_demo_but_not_the_reverse(repo: Path) -> None:
    start(repo, "demo")
    tested, installs = start(repo, "test")
    assert tested.returncode == 0, tested.stderr
    assert "-m pip install --quiet -e .[dev]" in installs  # the demo's install lacks the dev extra
    _, installs = start(repo, "test")
    assert installs == []
    _, installs = start(repo, "demo")
    assert installs == []
