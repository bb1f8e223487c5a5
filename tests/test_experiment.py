"""`kernelseek experiment`: two arms of the scripted claude agent with a stand-in evaluator,
run as a user runs them (subprocesses), listed, killed and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.experiment.record import effective_status, read_record
from kernelseek_tui.experiment.spec import load_spec
from kernelseek_tui.session.meta import read_meta
from tests.experiment_support import MessagesStandIn, write_spec
from tests.test_session_support import make_task_repo, read_events

pytestmark = pytest.mark.slow


def kernelseek(env: dict[str, str], cwd: Path, *args: str, check: bool = True) -> Any:
    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture()
def api(env: dict[str, str]) -> Any:
    server = MessagesStandIn()
    env.update(
        ANTHROPIC_API_KEY="sk-ant-test-experiment",
        ANTHROPIC_BASE_URL=server.url,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    yield server
    server.close()


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The two-arm experiment, run to its end once for the tests that read it."""
    from tests.conftest import ROOT

    tmp = tmp_path_factory.mktemp("experiment")
    server = MessagesStandIn()
    env = {k: v for k, v in os.environ.items() if k != "KERNELSEEK_TRACES"}
    env.update(
        PYTHONPATH=str(ROOT),
        ANTHROPIC_API_KEY="sk-ant-test-experiment",
        ANTHROPIC_BASE_URL=server.url,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    task_dir = make_task_repo(tmp / "user")
    spec = write_spec(tmp / "ab.toml", task_dir)
    result = kernelseek(env, tmp, "experiment", str(spec), "--traces", "tr")
    server.close()
    return {"tmp": tmp, "env": env, "result": result, "server": server, "dir": tmp / "tr" / "ab"}


def events_of(experiment_dir: Path, session_id: str) -> list[Any]:
    return read_events(experiment_dir / session_id)


def test_every_session_of_both_arms_runs_to_its_end(finished: dict[str, Any]) -> None:
    record = read_record(finished["dir"])
    assert [(s.session_id, s.arm) for s in record.sessions] == [
        ("ab-questions-1", "questions"), ("ab-off-1", "off"),
        ("ab-questions-2", "questions"), ("ab-off-2", "off"),
    ]  # fmt: skip
    assert record.status == "finished" and record.end_reason == "done"
    for planned in record.sessions:
        meta = read_meta(finished["dir"] / planned.session_id)
        assert meta.status == "finished" and meta.end_reason == "finish"
        assert meta.config["questions_mode"] == ("off" if planned.arm == "off" else "repertoire")
        assert meta.branch == f"kernelseek/{planned.session_id}"
    assert "ab-off-2 finished (finish)" in finished["result"].stdout


def test_the_off_arm_has_no_questions_and_no_draw_question_tool(finished: dict[str, Any]) -> None:
    for session_id in ("ab-off-1", "ab-off-2"):
        events = events_of(finished["dir"], session_id)
        assert not [e for e in events if e.kind in ("question", "decision")]
        assert "draw_question" not in json.loads(events[0].attrs)["tools"]
    for session_id in ("ab-questions-1", "ab-questions-2"):
        events = events_of(finished["dir"], session_id)
        assert [e.source for e in events if e.kind == "question"] == [
            "repertoire", "repertoire", "agent", "repertoire"
        ]  # fmt: skip
    requests = finished["server"].requests
    offered = [any(t["name"] == "draw_question" for t in r["tools"]) for r in requests]
    off_calls = sum(
        read_meta(finished["dir"] / s).stats["model_calls"] for s in ("ab-off-1", "ab-off-2")
    )
    assert offered.count(False) == off_calls == 2 * 18  # the off arm's first finish ends it
    assert offered.count(True) == 2 * 20


def test_ls_shows_the_experiment_and_its_sessions(finished: dict[str, Any]) -> None:
    listing = kernelseek(finished["env"], finished["tmp"], "ls", "--traces", "tr").stdout
    assert "EXPERIMENT" in listing and "ab " in listing
    assert "4/4 finished" in listing
    for session_id in ("ab-questions-1", "ab-off-2"):
        assert session_id in listing


def test_a_spec_with_an_unknown_setting_is_refused(tmp_path: Path) -> None:
    task_dir = make_task_repo(tmp_path / "user")
    spec = write_spec(tmp_path / "x.toml", task_dir)
    spec.write_text(spec.read_text() + 'colour = "blue"\n')
    with pytest.raises(KernelseekError, match=r"arm 'off': unknown setting\(s\) \['colour'\]"):
        load_spec(spec, allowed_settings=frozenset({"agent", "questions", "objective_sets",
                                                    "plateau_evals", "seed"}))  # fmt: skip


def test_a_killed_experiment_resumes_where_it_stopped(
    env: dict[str, str], api: MessagesStandIn, tmp_path: Path
) -> None:
    task_dir = make_task_repo(tmp_path / "user")
    spec = write_spec(tmp_path / "k.toml", task_dir, name="kill", per_arm=1, parallel=1)
    env["KS_TEST_DELAY"] = "1.0"
    kernelseek(env, tmp_path, "experiment", str(spec), "--traces", "tr", "--detach")
    experiment_dir = tmp_path / "tr" / "kill"
    first = experiment_dir / "kill-questions-1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (first / "session.json").exists() and read_meta(first).stats.get("evals"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the first session never evaluated")
    record = read_record(experiment_dir)
    os.kill(record.pid, signal.SIGKILL)
    os.kill(read_meta(first).pid, signal.SIGKILL)
    time.sleep(0.3)
    assert effective_status(read_record(experiment_dir)) == "crashed"
    assert kernelseek(env, tmp_path, "ls", "--traces", "tr").stdout.count("crashed") >= 2
    env["KS_TEST_DELAY"] = "0"
    result = kernelseek(env, tmp_path, "experiment", "--resume", "kill", "--traces", "tr")
    assert "kill-questions-1 (questions) resumed" in result.stdout
    assert "kill-off-1 (off) started" in result.stdout
    record = read_record(experiment_dir)
    assert record.status == "finished" and record.end_reason == "done"
    for session_id in ("kill-questions-1", "kill-off-1"):
        assert read_meta(experiment_dir / session_id).status == "finished"
    actions = [json.loads(e.attrs).get("action") for e in read_events(first) if e.kind == "control"]
    assert actions[0] == "start" and "resume" in actions and actions[-1] == "end"


def test_compare_gives_each_arm_its_numbers_and_no_verdict_at_two_per_arm(
    finished: dict[str, Any],
) -> None:
    result = kernelseek(
        finished["env"], finished["tmp"], "compare", "ab", "--traces", "tr", "--json"
    )
    numbers = json.loads(result.stdout)
    assert list(numbers["arms"]) == ["questions", "off"]
    # Both arms reach step 4 of the script (1.7x, 0.425 of FA3) at the 9th evaluation; the off
    # arm stops at its first finish, two tool calls (draw_question, finish again) earlier.
    assert numbers["equal_calls"] == 19 and numbers["reach"] == pytest.approx(1.7)
    for arm, calls, questions, after in (("questions", 21, 4, 2), ("off", 19, 0, 0)):
        for row in numbers["arms"][arm]:
            assert row["best_speedup"] == pytest.approx(1.7)
            assert row["vs_fa3"] == pytest.approx(0.425)
            assert row["best_at_equal_calls"] == pytest.approx(1.7)
            assert (row["tool_calls"], row["questions"]) == (calls, questions)
            assert row["evals_to_reach"] == 9
            assert (row["jumps"], row["jumps_after_question"]) == (4, after)
            meta = read_meta(finished["dir"] / row["session_id"])
            assert row["cost_usd"] == pytest.approx(meta.stats["cost_usd"])
    assert numbers["verdicts"] == [
        "no verdict on best speedup: 2 and 2 sessions cannot show a difference (an exact rank "
        "test at 0.05 needs at least 4 sessions per arm)"
    ]


def test_compare_prints_a_table_per_arm_and_draws_the_plot(finished: dict[str, Any]) -> None:
    result = kernelseek(
        finished["env"], finished["tmp"], "compare", "ab", "--traces", "tr", "--out", "rep"
    )
    assert "arm questions (2 sessions)" in result.stdout and "arm off (2 sessions)" in result.stdout
    assert "BEST@19" in result.stdout and "EVALS TO 1.700x" in result.stdout
    png = finished["tmp"] / "rep" / "compare-ab.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # A path ending in .png is the plot's own file.
    named = kernelseek(
        finished["env"], finished["tmp"], "compare", "ab", "--traces", "tr", "--out", "ab.png"
    )
    assert "wrote ab.png" in named.stdout
    assert (finished["tmp"] / "ab.png").is_file() and not (finished["tmp"] / "ab.png").is_dir()
