"""`kernelseek demo`: the recorded demo sessions, offline: no GPU, no API key, no network."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from kernelseek_tui.commands.open import add_view_arguments, browse

DEFAULT_SESSION = "climb-20261205-224256"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="open the TUI on the recorded demo sessions (offline)",
        description="Unpacks the sessions recorded in traces/demo (this project's own climb of "
        "the Hopper kernel replayed and judged on an H100, a tuner pass over the knobs of its "
        "last version and a tuner session on the starting kernel, both measured on an H200, "
        "and a scripted claude session whose numbers are stand-ins) into a directory "
        "with their git repositories, then opens the TUI on one of them.",
    )
    parser.add_argument(
        "--session", default=DEFAULT_SESSION, help=f"which one (default {DEFAULT_SESSION})"
    )
    parser.add_argument("--list", action="store_true", help="list the recorded sessions")
    parser.add_argument(
        "--dir",
        type=Path,
        help="unpack here and keep it (default: a temporary directory, removed on exit)",
    )
    add_view_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.browse.unpack import DEMO_DIR, recorded_sessions, unpack_demo
    from kernelseek_tui.errors import KernelseekError

    names = recorded_sessions(DEMO_DIR)
    if args.list:
        print("\n".join(names))
        return 0
    if args.session not in names:
        raise KernelseekError(f"no demo session {args.session!r}; there are: {', '.join(names)}")
    if args.dir is not None:  # the user's own directory: kept, to look at or open again
        root = unpack_demo(args.dir)
        print(f"demo sessions unpacked under {args.dir}")
        return browse(root / args.session, root, args)
    # A copy only for this run (a bisect from the app writes its worktree here too): removed
    # when the app closes, however it closes.
    with tempfile.TemporaryDirectory(prefix="kernelseek-demo-") as dest:
        root = unpack_demo(Path(dest))
        return browse(root / args.session, root, args)
