"""`kernelseek mcp` driven by a scripted MCP client (the SDK's own), with a stand-in evaluator:
evaluations, a plateau answered with a question, a finish answered with a question, commits
with their trailers, the trace in order, and a session resumed after its server was killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kernelseek_tui.external.host import ExternalHost
from kernelseek_tui.external.mcp_server import build_server
from kernelseek_tui.session.meta import read_meta
from tests.test_session_support import (
    ROOT,
    make_task_repo,
    read_events,
    source_evaluator,
)

STUB = "tests.test_session_support:source_evaluator"
DECISIONS = {"plateau_evals": 2, "cooldown_evals": 0, "finish_questions": 1}


def set_speed(workspace_kernel: Path, speed: float) -> None:
    """The stand-in evaluator reads the speed from a ``// speed X`` line of the kernel."""
    lines = [
        line
        for line in workspace_kernel.read_text().splitlines()
        if not line.startswith("// speed ")
    ]
    workspace_kernel.write_text("\n".join([f"// speed {speed}", *lines]) + "\n")


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_a_scripted_client_drives_a_session_over_mcp(tmp_path: Path) -> None:
    task = make_task_repo(tmp_path / "user")
    mine = tmp_path / "user" / "my_kernel.cu"
    host = ExternalHost.open(
        traces_root=tmp_path / "traces",
        task_dir=task,
        session_id="ext1",
        evaluator=source_evaluator(None),  # type: ignore[arg-type]
        decisions=DECISIONS,
        repertoire=ROOT / "repertoire.toml",
        attach_wait_s=0,
        base_dir=tmp_path / "user",
    ).start()
    server = build_server(host)

    async def drive() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(server) as client:
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            assert names == ["draw_question", "evaluate", "finish", "status"]
            status = await client.call_tool("status", {})
            kernel = Path(status.structured_content["kernel"])
            assert kernel.is_file() and "ext1" in str(kernel)
            # 1: the agent's own copy, passed by path, is copied over the workspace kernel.
            mine.write_text(kernel.read_text())
            set_speed(mine, 1.5)
            first = await client.call_tool("evaluate", {"path": "my_kernel.cu"})
            seen["first"] = first
            assert kernel.read_text() == mine.read_text()
            # 2 and 3: no new best twice is a plateau: the reply carries the question.
            set_speed(kernel, 1.4)
            await client.call_tool("evaluate", {})
            set_speed(kernel, 1.45)
            seen["plateau"] = await client.call_tool("evaluate", {})
            # 4: a failing candidate: the failing scenarios come back with their reasons.
            kernel.write_text(kernel.read_text() + "// broken\n")
            seen["failing"] = await client.call_tool("evaluate", {"set": "quick"})
            kernel.write_text(kernel.read_text().replace("// broken\n", ""))
            set_speed(kernel, 2.0)
            seen["after_question"] = await client.call_tool("evaluate", {})
            seen["drawn"] = await client.call_tool("draw_question", {})
            seen["finish1"] = await client.call_tool("finish", {"reason": "done, I think"})
            seen["finish2"] = await client.call_tool("finish", {"reason": "really done"})
            seen["after_end"] = await client.call_tool("status", {})
        return seen

    seen = asyncio.run(drive())
    outcome = host.wait(30)
    assert outcome is not None and outcome.reason == "finish"

    first = seen["first"].structured_content
    assert first["verdict"] == "pass" and first["speedup"] == 1.5 and first["vs_fa3"] == 0.5
    assert first["commit"] and first["new_best"] and first["questions"] == []
    assert "committed as candidate 1" in text_of(seen["first"])

    plateau = seen["plateau"].structured_content
    assert len(plateau["questions"]) == 1
    assert "Question from the harness: " + plateau["questions"][0] in text_of(seen["plateau"])

    failing = seen["failing"].structured_content
    assert failing["verdict"] == "fail" and failing["commit"] is None
    assert failing["failures"] == ["scenario-0: max error 0.5 > tolerance 0.01"]

    assert seen["drawn"].structured_content["questions"] == []  # the question is the text
    assert text_of(seen["drawn"]).strip()
    finish1 = seen["finish1"].structured_content
    assert "question for you first" in text_of(seen["finish1"]) and finish1["questions"]
    assert not finish1["ended"]
    assert "Finishing the session" in text_of(seen["finish2"])
    assert seen["after_end"].is_error and seen["after_end"].structured_content["ended"]

    events = read_events(host.session_dir)
    kinds = [e.kind for e in events]
    assert kinds[0] == "control" and kinds[-1] == "control"
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.tool_name for c in calls] == [
        "evaluate", "evaluate", "evaluate", "evaluate", "evaluate", "draw_question",
        "finish", "finish",
    ]  # fmt: skip
    assert all(json.loads(c.attrs)["via"] == "mcp" for c in calls)
    # Each call: its tool_call, then what it caused, then its result, before the next call.
    for call in calls:
        result = next(
            e for e in events if e.kind == "tool_result" and e.parent_event_id == call.event_id
        )
        between = [e.kind for e in events if call.seq < e.seq < result.seq]
        assert "tool_call" not in between
        if call.tool_name == "evaluate":
            assert between[0] == "eval"
    plateau_eval = [e for e in events if e.kind == "eval"][2]
    decision = next(e for e in events if e.kind == "decision")
    assert decision.trigger == "plateau" and decision.seq > plateau_eval.seq
    assert [e.trigger for e in events if e.kind == "decision"] == ["plateau", "finish_request"]

    # Commits with trailers: the candidate after the plateau carries its question.
    from kernelseek_tui.history import SessionHistory

    history = SessionHistory.open(tmp_path / "user", "ext1")
    candidates = list(reversed(history.candidates()))
    assert [c.speedup for c in candidates] == [1.5, 1.4, 1.45, 2.0]
    assert candidates[-1].question == plateau["questions"][0] and candidates[0].question is None
    assert read_meta(host.session_dir).end_reason == "finish"
    assert read_meta(host.session_dir).agent == "external"


def kernelseek_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.update(PYTHONPATH=str(ROOT), CLAUDE_CONFIG_DIR=str(tmp_path / "claude-home"))
    return env


def server_params(tmp_path: Path, task: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "kernelseek_tui",
            "mcp",
            str(task),
            "--session",
            "ext2",
            "--traces",
            str(tmp_path / "traces"),
            "--evaluator",
            STUB,
            "--plateau-evals",
            "2",
            "--attach-wait",
            "0",
        ],
        env=kernelseek_env(tmp_path),
        cwd=str(tmp_path / "user"),
    )


def test_the_stdio_server_is_killed_and_the_session_resumes(tmp_path: Path) -> None:
    task = make_task_repo(tmp_path / "user")
    session_dir = tmp_path / "traces" / "ext2"

    async def first_run() -> str:
        async with Client(server_params(tmp_path, task)) as client:
            status = await client.call_tool("status", {})
            kernel = Path(status.structured_content["kernel"])
            set_speed(kernel, 1.3)
            result = await client.call_tool("evaluate", {})
            assert result.structured_content["commit"]
            pid = read_meta(session_dir).pid
            os.kill(pid, signal.SIGKILL)  # the server dies mid-session
            return str(kernel)

    with contextlib.suppress(Exception):  # the transport may break under the client, or not
        asyncio.run(first_run())
    deadline = time.monotonic() + 10
    while read_meta(session_dir).status != "running" or _alive(read_meta(session_dir).pid):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert read_meta(session_dir).status == "running"  # crashed: the file still says running

    async def second_run() -> dict[str, Any]:
        async with Client(server_params(tmp_path, task)) as client:
            status = await client.call_tool("status", {})
            kernel = Path(status.structured_content["kernel"])
            set_speed(kernel, 1.6)
            result = await client.call_tool("evaluate", {})
            done = await client.call_tool("status", {})
            return {"eval": result.structured_content, "status": done.structured_content}

    seen = asyncio.run(second_run())
    assert seen["eval"]["speedup"] == 1.6 and seen["eval"]["commit"]
    assert seen["status"]["evals"] == 2 and seen["status"]["commits"] == 2
    deadline = time.monotonic() + 20
    while read_meta(session_dir).status != "finished" and time.monotonic() < deadline:
        time.sleep(0.1)
    meta = read_meta(session_dir)
    assert meta.status == "finished" and meta.end_reason == "detached"
    events = read_events(session_dir)
    seqs = [e.seq for e in events]
    assert seqs == list(range(len(seqs)))
    actions = [json.loads(e.attrs).get("action") for e in events if e.kind == "control"]
    assert actions[:2] == ["start", "status"] and "resume" in actions and actions[-1] == "end"


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return subprocess.run(
        ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True
    ).stdout.strip() not in ("", "Z")
