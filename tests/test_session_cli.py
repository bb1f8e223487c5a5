"""`kernelseek run`, `ls`, `attach` and `bisect` as a user runs them (stand-in evaluators)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta
from tests.test_session_support import (
    ROOT,
    ScriptedAgent,
    make_task_repo,
    read_events,
    session_config,
    source_evaluator,
)

STUB = "tests.test_session_support:counting_evaluator"


def kernelseek(
    env: dict[str, str], cwd: Path, *args: str, check: bool = False
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_run_then_ls_then_resume_with_a_larger_budget(tmp_path: Path, env: dict[str, str]) -> None:
    task = make_task_repo(tmp_path / "user")
    run = kernelseek(
        env, tmp_path, "run", str(task), "--set", "quick", "--budget-calls", "4",
        "--session-id", "c1", "--traces", "tr", "--evaluator", STUB, check=True,
    )  # fmt: skip
    assert "c1: tuner on flash_fwd" in run.stdout  # no key in the environment: the tuner
    assert "ended: budget_calls" in run.stdout and "4 evaluations" in run.stdout
    listing = kernelseek(env, tmp_path, "ls", "--traces", "tr", check=True).stdout.splitlines()
    assert listing[0].split() == [
        "ID",
        "TASK",
        "AGENT",
        "STATUS",
        "PID",
        "EVALS",
        "BEST",
        "STARTED",
    ]
    row = listing[1].split()
    assert row[:5] == ["c1", "flash_fwd", "tuner", "finished", "(budget_calls)"]
    assert row[7] == "4" and row[8] == "1.600x"
    rows = [
        json.loads(line)
        for line in kernelseek(env, tmp_path, "ls", "--traces", "tr", "--json").stdout.splitlines()
    ]
    assert rows[0]["status"] == "finished" and rows[0]["alive"] is False and rows[0]["evals"] == 4

    more = kernelseek(
        env, tmp_path, "run", "--resume", "c1", "--budget-calls", "20", "--traces", "tr",
        "--evaluator", STUB, check=True,
    )  # fmt: skip
    assert "ended: done" in more.stdout
    evaluated = (tmp_path / "count").read_text().splitlines()
    assert len(evaluated) == len(set(evaluated)) == 7  # the first four were not judged again
    meta = read_meta(tmp_path / "tr" / "c1")
    assert meta.config["budgets"] == {"calls": 20, "usd": None, "hours": None}
    assert meta.stats["best_speedup"] == 1.6


def test_detach_runs_in_the_background_and_says_how_to_attach(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    env["KS_TEST_DELAY"] = "0.05"
    started = kernelseek(
        env, tmp_path, "run", str(task), "--agent", "tuner", "--set", "quick", "--detach",
        "--session-id", "bg", "--traces", "tr", "--evaluator", STUB, check=True,
    )  # fmt: skip
    assert "session bg is running in the background (pid" in started.stdout
    assert "kernelseek attach bg" in started.stdout
    session_dir = tmp_path / "tr" / "bg"
    meta = read_meta(session_dir)
    assert meta.status in ("running", "finished") and meta.pid != os.getpid()
    deadline = time.monotonic() + 60
    while read_meta(session_dir).status != "finished" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert read_meta(session_dir).end_reason == "done"
    log = (session_dir / "engine.log").read_text()
    assert "session bg ended: done" in log
    assert not (session_dir / "launch.json").exists()


def test_attach_without_the_tui_says_so_and_shows_the_status(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    kernelseek(
        env, tmp_path, "run", str(task), "--set", "quick", "--budget-calls", "2",
        "--session-id", "20261202-abc", "--traces", "tr", "--evaluator", STUB, check=True,
    )  # fmt: skip
    attach = kernelseek(env, tmp_path, "attach", "20261202", "--traces", "tr")
    try:
        import kernelseek_tui.tui.app  # noqa: F401
    except ImportError:
        assert attach.returncode == 2
        assert len(attach.stderr.strip().splitlines()) == 1
        assert "TUI is not available" in attach.stderr and "is finished" in attach.stderr
    missing = kernelseek(env, tmp_path, "attach", "nope", "--traces", "tr")
    assert missing.returncode == 2 and "no session 'nope'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--traces", "tr"], "give a TASK_DIR"),
        (["run", "TASK", "--agent", "claude"], "needs $ANTHROPIC_API_KEY"),
        (["run", "TASK", "--agent", "replay"], "needs --replay-from"),
        (["run", "TASK", "--set", "nope"], "no scenario set 'nope'"),
        (["run", "TASK", "--budget-calls", "0"], "at least 1"),
        (["run", "--resume", "ghost", "--traces", "tr"], "no session 'ghost'"),
        (["run", str(ROOT / "README.md")], "not a task directory"),
        (["run", "TASK", "--paired-timing"], "needs the real judge"),
        (["run", "TASK", "--paired-timing", "--gpus", "2"], "drop --gpus"),
    ],
)
def test_bad_requests_are_one_line_errors(
    tmp_path: Path, env: dict[str, str], args: list[str], message: str
) -> None:
    task = make_task_repo(tmp_path / "user")
    (tmp_path / "tr").mkdir()
    args = [str(task) if a == "TASK" else a for a in args]
    result = kernelseek(env, tmp_path, *args, "--evaluator", STUB)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_paired_timing_reaches_the_session_config() -> None:
    from kernelseek_tui.commands.run import _engine_options

    assert _engine_options({"paired_timing": True}) == {"paired_timing": True}
    assert _engine_options({"paired_timing": False}) == {"paired_timing": False}
    assert _engine_options({}) == {}  # the default: paired wherever the evaluator can
    with pytest.raises(KernelseekError, match="paired_timing must be true or false"):
        _engine_options({"paired_timing": "false"})


def test_bisect_finds_the_first_candidate_below_a_threshold(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    config = session_config(task, tmp_path / "tr", "bis")
    engine = Engine.start(config, evaluator=source_evaluator(None))  # type: ignore[arg-type]
    original = (engine.workspace / "baseline.cu").read_text()
    steps: list[tuple[Any, ...]] = []
    for speed in (1.1, 1.3, 1.5, 0.9, 0.8, 1.2):
        text = original + f"// speed {speed}\n"
        steps += [("tool", "write_file", {"path": "baseline.cu", "content": text})]
        steps += [("tool", "evaluate", {})]
    engine.run(ScriptedAgent(steps))
    candidates = list(reversed(engine.history.candidates()))
    assert [c.speedup for c in candidates] == [1.1, 1.3, 1.5, 0.9, 0.8, 1.2]
    result = kernelseek(
        env, tmp_path, "bisect", "bis", "--metric", "speedup", "--threshold", "1.0",
        "--traces", "tr", "--evaluator", "tests.test_session_support:source_evaluator",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"first bad candidate: 4 {candidates[3].sha}")
    assert "bisect: step 1" in result.stderr and "is good" in result.stderr
    json_out = kernelseek(
        env, tmp_path, "bisect", "bis", "--good", candidates[0].sha, "--bad", candidates[4].sha,
        "--metric", "speedup", "--threshold", "1.0", "--traces", "tr", "--json",
        "--evaluator", "tests.test_session_support:source_evaluator",
    )  # fmt: skip
    assert json.loads(json_out.stdout)["first_bad"] == candidates[3].sha
    assert read_events(tmp_path / "tr" / "bis")[-1].kind == "control"  # bisect wrote nothing


def test_a_tuner_session_runs_without_textual_anthropic_or_duckdb(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    code = "\n".join(
        [
            "import sys",
            *[f"sys.modules[{name!r}] = None" for name in ("textual", "anthropic", "duckdb")],
            "from kernelseek_tui.cli import main",
            f"sys.exit(main(['run', {str(task)!r}, '--set', 'quick', '--traces', 'tr',"
            f" '--session-id', 'gpu-like', '--evaluator', {STUB!r}]))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ended: done" in result.stdout
    assert read_meta(tmp_path / "tr" / "gpu-like").stats["commits"] == 7  # every point passed


def test_sigterm_ends_a_background_session_cleanly(tmp_path: Path, env: dict[str, str]) -> None:
    import signal

    task = make_task_repo(tmp_path / "user")
    env["KS_TEST_DELAY"] = "0.3"
    kernelseek(
        env, tmp_path, "run", str(task), "--agent", "tuner", "--set", "quick", "--detach",
        "--session-id", "term", "--traces", "tr", "--evaluator", STUB, check=True,
    )  # fmt: skip
    session_dir = tmp_path / "tr" / "term"
    counter = tmp_path / "count"
    deadline = time.monotonic() + 30
    while not (counter.exists() and counter.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(read_meta(session_dir).pid, signal.SIGTERM)
    while read_meta(session_dir).status != "finished" and time.monotonic() < deadline:
        time.sleep(0.05)
    meta = read_meta(session_dir)
    assert meta.end_reason == "terminated"
    events = read_events(session_dir)
    assert events[-1].kind == "control" and json.loads(events[-1].attrs)["reason"] == "terminated"
    # The evaluation under way when the signal came was finished and recorded, not cut off.
    calls = [e.tool_call_id for e in events if e.kind == "tool_call"]
    assert sorted(calls) == sorted(e.tool_call_id for e in events if e.kind == "tool_result")
    assert len(calls) < 7


def test_replay_from_a_recorded_session_on_the_command_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    task = make_task_repo(tmp_path / "user")
    common = ["--set", "quick", "--traces", "tr", "--evaluator", STUB]
    kernelseek(env, tmp_path, "run", str(task), "--session-id", "orig", *common, check=True)
    again = kernelseek(
        env, tmp_path, "run", str(task), "--agent", "replay", "--replay-from", "tr/orig",
        "--session-id", "again", *common, check=True,
    )  # fmt: skip
    assert "again: replay on flash_fwd" in again.stdout
    knobs = [
        [e.tool_input_dict() for e in read_events(tmp_path / "tr" / s) if e.kind == "tool_call"]
        for s in ("orig", "again")
    ]
    assert knobs[0] == knobs[1] and len(knobs[0]) == 7
    # Both commit every verified candidate (each point here passes and changes knobs.json).
    assert read_meta(tmp_path / "tr" / "again").stats["commits"] == 7
    assert read_meta(tmp_path / "tr" / "orig").stats["commits"] == 7
    empty = tmp_path / "nothing"
    empty.mkdir()
    refused = kernelseek(
        env, tmp_path, "run", str(task), "--agent", "replay", "--replay-from", str(empty), *common
    )
    assert refused.returncode == 2 and "no recorded events" in refused.stderr


def test_every_run_option_says_what_it_does() -> None:
    import argparse

    from kernelseek_tui.commands import run as run_command

    sub = argparse.ArgumentParser().add_subparsers()
    run_command.register(sub)
    parser = sub.choices["run"]
    silent = [
        action.option_strings or [action.dest]
        for action in parser._actions
        if action.help != argparse.SUPPRESS and not action.help
    ]
    assert silent == []
    assert "<member" not in parser.format_help()  # defaults shown as values
