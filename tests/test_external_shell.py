"""`kernelseek session start|eval|ask|finish|status` from a shell, as a person would use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kernelseek_tui.session.meta import read_meta
from tests.test_session_support import ROOT, make_task_repo, read_events

STUB = "tests.test_session_support:source_evaluator"


def kernelseek(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.update(PYTHONPATH=str(ROOT), KERNELSEEK_TRACES=str(cwd / "traces"))
    env["CLAUDE_CONFIG_DIR"] = str(cwd / "claude-home")
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_person_at_a_shell_starts_evaluates_asks_and_finishes(tmp_path: Path) -> None:
    task = make_task_repo(tmp_path / "user")
    started = kernelseek(
        tmp_path, "session", "start", str(task), "--session", "sh1", "--evaluator", STUB,
        "--finish-questions", "1", "--attach-wait", "0",
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    assert "session sh1 is running" in started.stdout
    kernel = Path(started.stdout.split("kernel:")[1].split()[0])
    assert kernel.is_file()

    mine = tmp_path / "mine.cu"
    mine.write_text("// speed 1.7\n" + kernel.read_text())
    judged = kernelseek(tmp_path, "session", "eval", "--source", str(mine), "--json")
    assert judged.returncode == 0, judged.stdout + judged.stderr
    reply = json.loads(judged.stdout)
    assert reply["data"]["verdict"] == "pass" and reply["data"]["speedup"] == 1.7
    assert reply["data"]["commit"]

    asked = kernelseek(tmp_path, "session", "ask")
    assert asked.returncode == 0 and asked.stdout.strip()
    status = kernelseek(tmp_path, "session", "status", "--json")
    assert json.loads(status.stdout)["data"]["commits"] == 1

    first = kernelseek(tmp_path, "session", "finish", "I am done")
    assert first.returncode == 0
    assert "Question from the harness: " in first.stdout  # a finish answered with a question
    second = kernelseek(tmp_path, "session", "finish", "really done")
    assert "Finishing the session." in second.stdout
    session_dir = tmp_path / "traces" / "sh1"
    deadline = time.monotonic() + 20
    while read_meta(session_dir).status != "finished" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert read_meta(session_dir).end_reason == "finish"
    after = kernelseek(tmp_path, "session", "eval", "--session", "sh1")
    assert after.returncode == 1 and "not running" in after.stdout
    events = read_events(session_dir)
    calls = [(e.tool_name, json.loads(e.attrs)["via"]) for e in events if e.kind == "tool_call"]
    assert calls == [
        ("evaluate", "shell"), ("draw_question", "shell"), ("finish", "shell"),
        ("finish", "shell"),
    ]  # fmt: skip
