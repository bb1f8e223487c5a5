"""Agents outside the process inside the harness: Claude Code, Codex or a person at a shell.

The engine runs an ``ExternalAgent`` (``agent.py``) that does nothing on its own: it waits for
requests (``evaluate``, ``draw_question``, ``finish``, ``status``) and runs each through the
engine exactly as a native agent's tool call, so objective, commits, questions and trace are
the same. Requests arrive from the MCP server (``mcp_server.py``) in the same process, or from
other processes through the session's mailbox (``mailbox.py``): the Claude Code Stop hook
(``claude_stop_hook.py``) and ``kernelseek session eval|ask|finish``. ``host.py`` opens or
resumes such a session and runs its engine on a thread; ``transcript_sync.py`` brings the
outside agent's own Claude Code transcript into the trace; ``init_agent.py`` writes the
project-local configuration that wires it all in.
"""
