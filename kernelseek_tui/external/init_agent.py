"""``kernelseek init-agent``: the project-local files that put an outside agent in the harness.

For Claude Code: ``.mcp.json`` (the ``kernelseek`` MCP server, ``kernelseek mcp`` on the task
with a fixed session id, so that a restarted Claude Code resumes the same session),
``.claude/settings.json`` (a ``Stop`` hook that turns "the agent wants to stop" into a finish
request) and a short task prompt. For Codex: ``.codex/config.toml`` (the same server; Codex has
no Stop hook, so only the ``finish`` tool finishes) and the prompt. Existing files are merged:
only the ``kernelseek`` entries are set, everything else is kept. Every file is inside the
project directory, and each one written is named in the result.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.external.mcp_server import SERVER_NAME

AGENTS = ("claude-code", "codex")
PROMPT_FILE = ".kernelseek/agent-prompt.md"
HOOK_TIMEOUT_S = 180  # the hook waits for the harness's answer (a person may be typing it)


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What init-agent decided and wrote."""

    agent: str
    project: Path
    session_id: str
    written: list[Path]
    start_line: str  # how to start the agent with the prompt
    notes: list[str]


def kernelseek_command() -> list[str]:
    """How the agent's tools start kernelseek: this interpreter, so the same install runs."""
    return [sys.executable, "-m", "kernelseek_tui"]


def server_args(task_dir: Path, session_id: str, traces: Path, extra: list[str]) -> list[str]:
    return ["mcp", str(task_dir), "--session", session_id, "--traces", str(traces), *extra]


def write_setup(
    agent: str,
    *,
    task_dir: Path,
    project: Path,
    session_id: str,
    traces: Path,
    kernel_hint: str,
    extra_args: list[str] | None = None,
) -> AgentSetup:
    """Write ``agent``'s configuration into ``project`` (see the module docstring)."""
    if agent not in AGENTS:
        raise KernelseekError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    command = kernelseek_command()
    args = [*command[1:], *server_args(task_dir, session_id, traces, extra_args or [])]
    written: list[Path] = []
    notes: list[str] = []
    if agent == "claude-code":
        written.append(_merge_mcp_json(project / ".mcp.json", command[0], args))
        hook = shlex.join(
            [*command, "hook", "claude-code-stop", "--session", session_id, "--traces",
             str(traces)]
        )  # fmt: skip
        written.append(_merge_stop_hook(project / ".claude" / "settings.json", hook))
        start = f'claude "$(cat {PROMPT_FILE})"'
        notes.append("Claude Code asks once to trust the project's MCP server: accept it.")
    else:
        written.append(_merge_codex_toml(project / ".codex" / "config.toml", command[0], args))
        start = f'codex "$(cat {PROMPT_FILE})"'
        notes.append(
            "Codex reads .codex/config.toml of a trusted project only; otherwise copy its "
            "[mcp_servers.kernelseek] table into ~/.codex/config.toml yourself (not done here)."
        )
        notes.append("Codex has no Stop hook: the session ends when the agent calls finish.")
    written.append(_write_prompt(project / PROMPT_FILE, kernel_hint))
    return AgentSetup(agent, project, session_id, written, start, notes)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as error:
        raise KernelseekError(f"{path}: not JSON ({error}); fix or move it first") from None
    if not isinstance(data, dict):
        raise KernelseekError(f"{path}: not a JSON object; fix or move it first")
    return data


def _write_json(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _merge_mcp_json(path: Path, command: str, args: list[str]) -> Path:
    data = _read_json(path)
    servers = data.setdefault("mcpServers", {})
    servers[SERVER_NAME] = {"command": command, "args": args}
    return _write_json(path, data)


def _merge_stop_hook(path: Path, command: str) -> Path:
    data = _read_json(path)
    hooks = data.setdefault("hooks", {})
    groups = [
        group for group in hooks.get("Stop", [])
        if not any("hook claude-code-stop" in str(h.get("command", ""))
                   for h in group.get("hooks", []))
    ]  # fmt: skip
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]})
    hooks["Stop"] = groups
    return _write_json(path, data)


def _merge_codex_toml(path: Path, command: str, args: list[str]) -> Path:
    header = f"[mcp_servers.{SERVER_NAME}]"
    table = (
        f"{header}\ncommand = {json.dumps(command)}\n"
        f"args = [{', '.join(json.dumps(a) for a in args)}]\n"
        "tool_timeout_sec = 3600\n"
    )
    text = path.read_text() if path.exists() else ""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        if line.strip().startswith("["):
            skipping = line.strip() == header
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((body + "\n\n" if body else "") + table)
    return path


def _write_prompt(path: Path, kernel_hint: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "Make the CUDA kernel of this task faster while keeping it correct.\n\n"
        f"The kernelseek MCP server holds the objective. Call its `status` tool first: it names "
        f"the kernel file the harness judges ({kernel_hint} in the session's worktree). Edit "
        "that file, or your own copy whose path you give to `evaluate`.\n"
        "After each change call `evaluate`: a candidate must pass every scenario of the "
        "objective; a verified one is committed. Read the failing scenarios it reports.\n"
        "When a reply carries a question from the harness, think it through and act on it "
        "before going on. When you are done, call `finish` with your reason.\n"
    )
    return path
