"""`kernelseek serve`: the same app in a browser on localhost (textual-serve)."""

from __future__ import annotations

import argparse
import shlex
import sys


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve",
        help="serve the TUI to a browser on localhost",
        description="Runs `kernelseek open PATH` (or `attach SESSION` with --live, or `demo`) "
        "behind textual-serve; each browser tab gets its own app process.",
    )
    parser.add_argument(
        "path", nargs="?", help="a session directory or traces root (default: the demo)"
    )
    parser.add_argument("--live", action="store_true", help="attach to a running session")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=8000)
    parser.set_defaults(func=run)


def app_command(args: argparse.Namespace) -> str:
    python = shlex.quote(sys.executable)
    if args.path is None:
        return f"{python} -m kernelseek_tui demo"
    verb = "attach" if args.live else "open"
    return f"{python} -m kernelseek_tui {verb} {shlex.quote(args.path)}"


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.errors import KernelseekError

    try:
        from textual_serve.server import Server
    except ImportError:
        raise KernelseekError(
            "kernelseek serve needs textual-serve: pip install 'kernelseek-tui[serve]'"
        ) from None
    command = app_command(args)
    print(f"serving `{command}` on http://{args.host}:{args.port} (ctrl+c stops)")
    Server(command, host=args.host, port=args.port, title="kernelseek").serve()
    return 0
