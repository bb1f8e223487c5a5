"""End to end in a real terminal: `kernelseek demo` in tmux, keys sent, the screen read back."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

ROOT = Path(__file__).resolve().parents[1]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name)


def wait_for(name: str, text: str, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    shown = ""
    while time.monotonic() < deadline:
        shown = screen(name)
        if text in shown:
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the screen shows:\n{shown}")


@pytest.fixture()
def demo(tmp_path: Path):  # type: ignore[no-untyped-def]
    name = f"ks-{uuid.uuid4().hex[:8]}"
    command = (
        f"cd {ROOT} && TERM=xterm-256color TEXTUAL_COLOR_SYSTEM=256 {sys.executable} -m "
        f"kernelseek_tui demo --session scripted-claude --dir {tmp_path / 'demo'}; sleep 30"
    )
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", command)
    try:
        yield name
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_the_demo_runs_in_a_terminal_and_answers_keys(demo: str) -> None:
    shown = wait_for(demo, "scripted-claude")
    # Three panes side by side, or (when tmux keeps an 80-column window) three tabs.
    assert all(name in shown.lower() for name in ("transcript", "history", "benchmark"))
    assert "best" in shown
    tmux("send-keys", "-t", demo, "?")
    wait_for(demo, "app.pane_history")  # the help lists binding ids, whole
    tmux("send-keys", "-t", demo, "q")  # q closes the help (an Escape followed at once by
    # another key reaches the app as alt+key through tmux)
    deadline = time.monotonic() + 10
    while "Bindings (remap" in screen(demo) and time.monotonic() < deadline:
        time.sleep(0.1)
    tmux("send-keys", "-t", demo, "f")  # the transcript's filter: questions only
    wait_for(demo, "questions")
    tmux("send-keys", "-t", demo, "q")
    wait_for(demo, "demo sessions unpacked", timeout_s=15)  # the app ended; the shell remains
    assert "best 1.597x" not in screen(demo)
