"""Claude Code's ``Stop`` hook: "the agent wants to stop" becomes a finish request.

Claude Code runs the hook command with a JSON object on stdin (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` "Stop", ``stop_hook_active``). The hook sends
the session's engine a ``finish`` request through the mailbox, with the transcript's path so
the conversation joins the trace first. When the harness answers with a question, the hook
blocks the stop with Claude Code's documented reply, ``{"decision": "block", "reason": ...}``
on stdout, and the reason (the question) is what Claude reads next; otherwise it prints nothing
and the stop goes through (the session has ended). Without a running session the hook never
holds Claude back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelseek_tui.external.mailbox import send_request

HOOK_VIA = "claude-code-stop-hook"
STOP_REASON = "the agent ended its turn (Claude Code Stop hook)"
# Below the hook timeout init-agent writes, so that Claude Code never kills a waiting hook.
REPLY_TIMEOUT_S = 150.0


def parse_hook_input(text: str) -> dict[str, Any]:
    """The hook's stdin, as a dict (empty for anything that is not a JSON object)."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def answer_stop(
    session_dir: Path, hook_input: dict[str, Any], *, timeout_s: float = REPLY_TIMEOUT_S
) -> dict[str, Any] | None:
    """The JSON reply that blocks the stop with the harness's question, or None to let the
    agent stop."""
    transcript = hook_input.get("transcript_path")
    reply = send_request(
        session_dir,
        "finish",
        {"reason": STOP_REASON},
        via=HOOK_VIA,
        transcript=transcript if isinstance(transcript, str) else None,
        timeout_s=timeout_s,
    )
    if reply.ended or reply.is_error or not reply.questions:
        return None
    return {"decision": "block", "reason": reply.full_text()}
