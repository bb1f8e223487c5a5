"""The outside agent's own Claude Code transcript, brought into the session's trace as it goes.

Claude Code writes its conversation to ``~/.claude/projects/<project>/<conversation>.jsonl``
(``<project>``: the working directory with every character that is not a letter or a digit
made ``-``). Before each request, and at the end, the agent reads that file again with the
Claude Code importer and records the events the trace does not hold yet, so that messages,
the agent's own tool calls, harness calls, evaluations and questions stand in one order.

- De-duplicated by event id: the importer derives ids from the transcript's own, so a line
  is recorded once however often the file is read (and across a resume: the ids are in the
  trace).
- The calls of the harness's own MCP tools are left out: the engine recorded them already,
  with their evaluations.
- A tool call whose result is not in the file yet waits, with everything after it: a trace
  never holds a call without its result that resuming would take for one cut off by a crash.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.agents.base import AgentContext
from kernelseek_tui.trace.schema import parse_attrs

OWN_TOOL_PREFIX = "mcp__kernelseek__"  # Claude Code's name for the tools of our MCP server


def claude_projects_dir() -> Path:
    """Where Claude Code keeps its transcripts (``$CLAUDE_CONFIG_DIR`` moves it)."""
    home = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(home).expanduser() / "projects"


def project_folder_name(project_dir: Path) -> str:
    """Claude Code's folder name for the transcripts of a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(project_dir).resolve()))


class TranscriptSync:
    """Follows one working directory's newest transcript (or the one a hook names)."""

    def __init__(self, project_dir: Path, *, projects: Path | None = None) -> None:
        self.project_dir = Path(project_dir)
        self.projects = projects if projects is not None else claude_projects_dir()
        self.path: Path | None = None
        self._known: set[str] | None = None

    def locate(self, hint: Path | None = None) -> Path | None:
        """The transcript to follow: one a hook named, else the newest of the directory's."""
        if hint is not None and hint.is_file():
            self.path = hint
        if self.path is None:
            folder = self.projects / project_folder_name(self.project_dir)
            found = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
            self.path = found[-1] if found else None
        return self.path

    def sync(self, ctx: AgentContext, *, hint: Path | None = None) -> int:
        """Record the transcript's events the trace lacks; how many were recorded."""
        from kernelseek_tui.trace.importers.claude_code import parse_transcript

        path = self.locate(hint)
        if path is None:
            return 0
        if self._known is None:
            self._known = {e.event_id for e in ctx.past_events}
        try:
            events = parse_transcript(path).events
        except KernelseekError as error:
            ctx.record(
                "error",
                flush=True,
                text=f"transcript {path}: {error}",
                attrs={"where": "transcript"},
            )
            return 0
        recorded = 0
        for fields in ready_events(events):
            if fields["event_id"] in self._known:
                continue
            attrs_text = fields.get("attrs")
            fields = {**fields, "attrs": _with_source(attrs_text, path)}
            ctx.record_imported(fields)
            self._known.add(fields["event_id"])
            recorded += 1
        return recorded


def ready_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events to record now: not the harness's own tools, and none past a call whose
    result has not been written yet."""
    answered = {e.get("tool_call_id") for e in events if e.get("kind") == "tool_result"}
    ready: list[dict[str, Any]] = []
    for event in events:
        if str(event.get("tool_name") or "").startswith(OWN_TOOL_PREFIX):
            continue
        if event.get("kind") == "tool_call" and event.get("tool_call_id") not in answered:
            break
        ready.append(event)
    return ready


def _with_source(attrs_text: Any, path: Path) -> str:
    import json

    attrs = parse_attrs(attrs_text)
    attrs["imported_from"] = str(path)
    return json.dumps(attrs, separators=(",", ":"))
