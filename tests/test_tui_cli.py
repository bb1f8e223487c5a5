"""The commands that open the app, run as a user runs them (no terminal here: headless)."""

from __future__ import annotations

import html
import subprocess
import sys
from pathlib import Path

from kernelseek_tui.commands.serve import app_command

ROOT = Path(__file__).resolve().parents[1]


def kernelseek(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_demo_lists_its_sessions() -> None:
    result = kernelseek("demo", "--list")
    assert result.returncode == 0
    assert "scripted-claude" in result.stdout.split()


def test_demo_renders_its_first_screen_without_a_terminal(tmp_path: Path) -> None:
    svg = tmp_path / "shot.svg"
    result = kernelseek("demo", "--dir", str(tmp_path / "d"), "--headless-check", str(svg))
    assert result.returncode == 0, result.stderr
    text = _svg_text(svg)
    # The real recorded climb, labelled as what it is: measured, a replay, not an agent at work.
    assert "climb-20261205-224256" in text and "measured: a replay" in text
    assert "replay" in text and "vs FA3 1.01x" in text
    tuner = tmp_path / "tuner.svg"
    result = kernelseek(
        "demo", "--dir", str(tmp_path / "d2"), "--session", "gpu-tuner-20261202-171357",
        "--headless-check", str(tuner),
    )  # fmt: skip
    assert result.returncode == 0 and "measured: a tuner session" in _svg_text(tuner)


def _svg_text(svg: Path) -> str:
    """An SVG screenshot's text as the terminal showed it (Rich writes spaces as &#160;)."""
    return html.unescape(svg.read_text()).replace("\xa0", " ")


def test_open_a_traces_root_and_refuse_a_directory_without_sessions(tmp_path: Path) -> None:
    kernelseek("demo", "--dir", str(tmp_path / "d"), "--headless-check", str(tmp_path / "a.svg"))
    svg = tmp_path / "b.svg"
    result = kernelseek(
        "open", str(tmp_path / "d" / "traces"), "--headless-check", str(svg), "--size", "80x24"
    )
    assert result.returncode == 0, result.stderr
    assert svg.is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = kernelseek("open", str(empty))
    assert refused.returncode != 0
    assert "holds no session" in refused.stderr and "Traceback" not in refused.stderr


def test_open_without_a_terminal_says_what_to_do(tmp_path: Path) -> None:
    kernelseek("demo", "--dir", str(tmp_path / "d"), "--headless-check", str(tmp_path / "a.svg"))
    result = kernelseek("open", str(tmp_path / "d" / "traces" / "scripted-claude"))
    assert result.returncode != 0
    assert "needs a terminal" in result.stderr and "Traceback" not in result.stderr


def test_serve_runs_the_same_app_behind_textual_serve() -> None:
    import argparse

    command = app_command(argparse.Namespace(path=None, live=False))
    assert command.endswith("-m kernelseek_tui demo")
    command = app_command(argparse.Namespace(path="traces/s1", live=True))
    assert command.endswith("-m kernelseek_tui attach traces/s1")


def test_under_textual_serve_the_app_needs_no_terminal(tmp_path: Path) -> None:
    """textual-serve starts the app over pipes with its web driver; refusing for want of a
    terminal there would break `kernelseek serve`. The web driver then waits for a browser, so
    the process is only given a moment and must not have refused."""
    import os

    env = {**os.environ, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"}
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelseek_tui", "demo", "--dir", str(tmp_path / "d")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    finally:
        process.kill()
        _, err = process.communicate()
    assert "needs a terminal" not in err.decode(errors="replace")
