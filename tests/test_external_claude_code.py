"""Claude Code in the harness: init-agent's files, the Stop hook run as Claude Code runs it
(JSON on stdin, the documented JSON reply), its transcript joining the trace, and a person's
question typed in the app reaching the agent in the next reply."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.external.host import ExternalHost
from kernelseek_tui.external.transcript_sync import TranscriptSync, project_folder_name
from kernelseek_tui.session import inbox
from tests.test_session_support import ROOT, make_task_repo, read_events, source_evaluator

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code" / "simple.jsonl"
STUB = "tests.test_session_support:source_evaluator"


def kernelseek(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        input=stdin, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def stop_hook_command(project: Path) -> list[str]:
    """The Stop hook's command exactly as init-agent wrote it into .claude/settings.json."""
    import shlex

    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (group,) = [g for g in settings["hooks"]["Stop"] if "kernelseek" in json.dumps(g)]
    return shlex.split(group["hooks"][0]["command"])


def test_init_agent_writes_only_project_files_and_merges_existing_ones(tmp_path: Path) -> None:
    task = make_task_repo(tmp_path / "user")
    project = tmp_path / "user"
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                     "command": "mine"}]}]}})
    )  # fmt: skip
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    before = {p for p in tmp_path.rglob("*") if ".git" not in p.parts}
    done = kernelseek(
        tmp_path, "init-agent", "claude-code", str(task), "--session", "cc1",
        "--traces", str(tmp_path / "traces"), "--evaluator", STUB,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    after = {p for p in tmp_path.rglob("*") if ".git" not in p.parts}
    new_files = sorted(str(p.relative_to(tmp_path)) for p in after - before if p.is_file())
    assert new_files == ["user/.kernelseek/agent-prompt.md"]
    for name in (".mcp.json", ".claude/settings.json", ".kernelseek/agent-prompt.md"):
        assert f"wrote {project / name}" in done.stdout
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["other"] == {"command": "x"}
    assert servers["kernelseek"]["command"] == sys.executable
    args = servers["kernelseek"]["args"]
    assert args[:4] == ["-m", "kernelseek_tui", "mcp", str(task.resolve())]
    assert args[args.index("--session") + 1] == "cc1"
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus"
    commands = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert commands[0] == "mine" and "hook claude-code-stop --session cc1" in commands[1]
    again = kernelseek(tmp_path, "init-agent", "claude-code", str(task), "--session", "cc1",
                       "--traces", str(tmp_path / "traces"))  # fmt: skip
    assert again.returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert len(settings["hooks"]["Stop"]) == 2  # ours replaced, not added twice

    codex = kernelseek(tmp_path, "init-agent", "codex", str(task), "--session", "cx1",
                       "--traces", str(tmp_path / "traces"))  # fmt: skip
    assert codex.returncode == 0, codex.stderr
    toml = (project / ".codex" / "config.toml").read_text()
    import tomllib

    table = tomllib.loads(toml)["mcp_servers"]["kernelseek"]
    assert table["command"] == sys.executable and "cx1" in table["args"]
    assert "~/.codex/config.toml yourself (not done here)" in codex.stdout


@pytest.fixture()
def claude_session(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A running session as `kernelseek mcp` holds it for Claude Code, with the hook written."""
    task = make_task_repo(tmp_path / "user")
    project = tmp_path / "user"
    done = kernelseek(tmp_path, "init-agent", "claude-code", str(task), "--session", "cc2",
                      "--traces", str(tmp_path / "traces"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    projects = tmp_path / "claude-home" / "projects"
    transcript = projects / project_folder_name(project) / "conversation.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, transcript)
    host = ExternalHost.open(
        traces_root=tmp_path / "traces",
        task_dir=task,
        session_id="cc2",
        evaluator=source_evaluator(None),  # type: ignore[arg-type]
        decisions={"finish_questions": 1},
        repertoire=ROOT / "repertoire.toml",
        attach_wait_s=0,
        transcripts=TranscriptSync(project, projects=projects),
        base_dir=project,
    ).start()
    yield host, project, transcript
    host.leave()
    host.wait(30)


def test_the_stop_hook_blocks_with_the_question_then_lets_the_agent_stop(
    claude_session,  # type: ignore[no-untyped-def]
) -> None:
    host, project, transcript = claude_session
    hook = stop_hook_command(project)
    payload = {
        "session_id": "5f0c1a2e-7d4b-4c1e-9a53-2b8e6f1d0a11",
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    first = subprocess.run(hook, input=json.dumps(payload), cwd=project, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert first.returncode == 0, first.stderr
    reply = json.loads(first.stdout)
    assert reply["decision"] == "block"
    assert reply["reason"].startswith("Not finished: the harness has a question for you first.")
    assert "Question from the harness: " in reply["reason"]

    second = subprocess.run(hook, input=json.dumps({**payload, "stop_hook_active": True}),
                            cwd=project, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert second.returncode == 0 and second.stdout.strip() == ""  # the stop goes through
    outcome = host.wait(30)
    assert outcome is not None and outcome.reason == "finish"

    events = read_events(host.session_dir)
    imported = [e for e in events if e.source == "importer"]
    assert "Make kernel.cu faster, keep it correct." in [e.text for e in imported]
    assert {"message", "tool_call", "tool_result"} <= {e.kind for e in imported}
    first_finish = next(e for e in events if e.kind == "tool_call" and e.tool_name == "finish")
    assert max(e.seq for e in imported) < first_finish.seq  # the conversation came first
    assert len({e.event_id for e in imported}) == len(imported)  # read twice, recorded once
    calls = [json.loads(e.attrs)["via"] for e in events if e.kind == "tool_call"
             and e.source == "agent"]  # fmt: skip
    assert calls == ["claude-code-stop-hook", "claude-code-stop-hook"]
    question = next(e for e in events if e.kind == "question")
    assert question.trigger == "finish_request" and question.question_text in reply["reason"]

    third = subprocess.run(hook, input=json.dumps(payload), cwd=project, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert third.returncode == 0 and third.stdout.strip() == ""  # no session running: no block


def test_a_question_typed_in_the_app_reaches_the_agent_in_the_next_reply(
    claude_session,  # type: ignore[no-untyped-def]
) -> None:
    host, _, _ = claude_session
    inbox.append_command(
        host.session_dir, {"type": "question", "text": "What does the profiler say?",
                           "source": "human"}
    )  # fmt: skip
    reply = host.call("evaluate", {"set": "quick"})
    assert reply.questions == ["What does the profiler say?"]
    assert "Question from the harness: What does the profiler say?" in reply.full_text()
    events = read_events(host.session_dir)
    asked = next(e for e in events if e.kind == "question")
    assert asked.source == "human" and asked.trigger == "manual"


def test_a_call_without_its_result_waits_and_the_harness_tools_are_left_out() -> None:
    from kernelseek_tui.external.transcript_sync import ready_events

    events = [
        {"event_id": "a", "kind": "message", "text": "go"},
        {"event_id": "b", "kind": "tool_call", "tool_name": "mcp__kernelseek__evaluate",
         "tool_call_id": "t1"},
        {"event_id": "c", "kind": "tool_call", "tool_name": "Bash", "tool_call_id": "t2"},
        {"event_id": "d", "kind": "tool_result", "tool_name": "Bash", "tool_call_id": "t2"},
        {"event_id": "e", "kind": "tool_call", "tool_name": "Edit", "tool_call_id": "t3"},
        {"event_id": "f", "kind": "message", "text": "after"},
    ]  # fmt: skip
    assert [e["event_id"] for e in ready_events(events)] == ["a", "c", "d"]
    answered = [*events, {"event_id": "g", "kind": "tool_result", "tool_call_id": "t3"}]
    assert [e["event_id"] for e in ready_events(answered)] == ["a", "c", "d", "e", "f", "g"]
