"""`kernelseek mcp`: the harness as an MCP server (stdio) for an agent outside the process."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from kernelseek_tui.commands.external_options import add_external_arguments, open_host, require_mcp


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "mcp",
        help="serve a session's tools over MCP (stdio) to Claude Code, Codex or any MCP client",
        description="Open or resume a session whose agent is outside the process and serve its "
        "tools (evaluate, draw_question, finish, status) over MCP on stdin/stdout. Every "
        "verified candidate becomes a commit on the session branch, every call a trace event. "
        "`kernelseek init-agent` writes the configuration that starts it.",
    )
    add_external_arguments(parser)
    parser.add_argument(
        "--no-transcript",
        action="store_true",
        help="do not bring the Claude Code transcript of this directory into the trace",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.commands.run import Reporter
    from kernelseek_tui.external.mcp_server import serve_stdio
    from kernelseek_tui.external.transcript_sync import TranscriptSync

    require_mcp()
    transcripts = None if args.no_transcript else TranscriptSync(Path.cwd())
    # stdout is the protocol's: what a person would read goes to stderr (the client's log).
    host = open_host(
        args, transcripts=transcripts, on_event=Reporter(quiet=True, stream=sys.stderr)
    )
    print(
        f"kernelseek mcp: session {host.session_id}, workspace {host.engine.workspace}",
        file=sys.stderr,
        flush=True,
    )

    def on_term(signum: int, frame: Any) -> None:
        host.leave("terminated", "SIGTERM")
        raise SystemExit(143)

    signal.signal(signal.SIGTERM, on_term)
    host.start()
    try:
        asyncio.run(serve_stdio(host))
    except (KeyboardInterrupt, SystemExit):
        host.leave("interrupted", "the MCP server was interrupted")
        host.wait(30)
    outcome = host.outcome
    reason = outcome.reason if outcome is not None else "unknown"
    print(f"kernelseek mcp: session {host.session_id} ended: {reason}", file=sys.stderr)
    return 0
