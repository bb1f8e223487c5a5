"""The README a newcomer follows: every command it names exists, every path it names is in the
repository, and what a real session needs is written down."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    match = re.search(rf"^##+ {re.escape(title)}\n(.*?)(?=^## )", README + "\n## ", re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_the_two_set_up_commands_come_first_as_they_are() -> None:
    block = section("Set-up: two commands").split("```")[1]
    assert block.strip().splitlines() == [
        "./scripts/demo     # installs into .venv and opens the demo session (offline: no GPU, "
        "no API key)",
        "./scripts/test     # installs into .venv with the dev extra, runs the gates and the tests",
    ]


def test_usage_names_every_subcommand() -> None:
    usage = section("Usage")
    help_text = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "--help"], capture_output=True, text=True
    ).stdout
    commands = re.findall(r"^    ([a-z][a-z-]+)\b", help_text, re.M)
    assert "run" in commands and "report" in commands
    for command in commands:
        assert f"kernelseek {command}" in usage, command


def test_paths_the_readme_names_are_in_the_repository() -> None:
    assert "../" not in README  # nothing outside the repository
    for path in re.findall(r"`((?:docs|scripts|kernels|traces)/[\w./-]*)`", README):
        assert (ROOT / path.rstrip("/")).exists(), path
    assert "docs/INTERNALS.md" in section("Layout")


def test_what_a_real_session_needs_is_written_down() -> None:
    for needed in ("sm_90a", "nvcc", "12.x", "13.x", "H100", "H200", "torch", "fa3_fwd",
                   "pip install -e '.[gpu]'", "pip install -e '.[serve]'"):  # fmt: skip
        assert needed in README, needed
    ssh = section("Over SSH")
    for step in ("--detach", "kernelseek attach", "TEXTUAL_COLOR_SYSTEM=256", "ssh -L"):
        assert step in ssh, step
