"""`kernelseek hook claude-code-stop`: the Stop hook Claude Code runs (see init-agent)."""

from __future__ import annotations

import argparse
import json
import sys

from kernelseek_tui.commands.common import add_traces_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "hook",
        help="hooks an outside agent runs (written by kernelseek init-agent)",
        description="claude-code-stop: read Claude Code's Stop hook JSON on stdin, put the "
        "finish request to the session, and block the stop with the harness's question.",
    )
    parser.add_argument("event", choices=["claude-code-stop"], help="which hook")
    parser.add_argument("--session", required=True, metavar="ID", help="the session")
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.external.claude_stop_hook import answer_stop, parse_hook_input
    from kernelseek_tui.paths import SessionPaths, traces_root

    hook_input = parse_hook_input(sys.stdin.read())
    session_dir = traces_root(args.traces, must_exist=False) / args.session
    if not SessionPaths(session_dir).meta.is_file():
        # Never hold the agent back for a session that does not exist (yet).
        print(f"kernelseek hook: no session {args.session}; the stop goes through", file=sys.stderr)
        return 0
    reply = answer_stop(session_dir, hook_input)
    if reply is not None:
        print(json.dumps(reply))
    return 0
