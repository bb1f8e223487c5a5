"""`kernelseek serve`: the same app in a browser (textual-serve; the `serve` extra)."""

from __future__ import annotations

import argparse
import errno
import shlex
import sys
import tempfile
from pathlib import Path

from kernelseek_tui.errors import KernelseekError

INSTALL_HINT = "pip install -e '.[serve]'"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve",
        help="serve the TUI to a browser on localhost (needs the serve extra)",
        description="Runs `kernelseek open PATH` (or `attach SESSION` with --live, or `demo`) "
        "behind textual-serve; each browser tab gets its own app process. Needs the serve "
        f"extra ({INSTALL_HINT}). The page works through an SSH tunnel on any local port "
        "(ssh -L 9000:localhost:8000 HOST, then http://localhost:9000) and loads nothing from "
        "other servers.",
    )
    parser.add_argument(
        "path",
        nargs="?",
        help="a session directory or traces root, or with --live a session id (default: the demo)",
    )
    parser.add_argument("--live", action="store_true", help="attach to a running session")
    parser.add_argument("--host", default="localhost", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="the port to listen on")
    parser.set_defaults(func=run)


def app_command(args: argparse.Namespace) -> str:
    """The command each browser tab runs (``args.path`` as :func:`resolve_target` left it)."""
    python = shlex.quote(sys.executable)
    if args.path is None:
        return f"{python} -m kernelseek_tui demo"
    verb = "attach" if args.live else "open"
    return f"{python} -m kernelseek_tui {verb} {shlex.quote(str(args.path))}"


def resolve_target(args: argparse.Namespace, scratch: Path) -> str | None:
    """The session (or traces root) to serve, checked before anything listens; a recorded
    session (a trace directory beside its ``.bundle``) is unpacked under ``scratch`` first,
    so that its git history shows. None serves the demo."""
    if args.path is None:
        return None
    if args.live:
        from kernelseek_tui.paths import traces_root
        from kernelseek_tui.session.meta import find_session

        return str(find_session(traces_root(None, must_exist=False), args.path).resolve())
    from kernelseek_tui.browse.session_data import resolve_session_dir

    given = Path(args.path)
    session_dir, _root = resolve_session_dir(given)
    if session_dir.with_name(session_dir.name + ".bundle").is_file():
        from kernelseek_tui.browse.unpack import unpack_recorded

        unpack_recorded(session_dir.parent, scratch)
        return str((scratch / "traces" / session_dir.name).resolve())
    return str(given.resolve())


def run(args: argparse.Namespace) -> int:
    try:
        from kernelseek_tui.commands.serve_web import LocalServer
    except ImportError:
        raise KernelseekError(f"kernelseek serve needs the serve extra: {INSTALL_HINT}") from None
    with tempfile.TemporaryDirectory(prefix="kernelseek-serve-") as scratch:
        args.path = resolve_target(args, Path(scratch))
        command = app_command(args)
        print(f"serving `{command}` on http://{args.host}:{args.port} (ctrl+c stops)")
        server = LocalServer(command, host=args.host, port=args.port, title="kernelseek")
        try:
            server.serve()
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise KernelseekError(
                    f"port {args.port} on {args.host} is in use: stop what listens there or "
                    "choose another with --port"
                ) from None
            raise KernelseekError(
                f"cannot listen on {args.host}:{args.port}: {error.strerror or error}"
            ) from None
    return 0
