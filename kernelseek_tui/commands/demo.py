"""`kernelseek demo`: the recorded demo sessions, offline: no GPU, no API key, no network."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from kernelseek_tui.commands.open import add_view_arguments, browse

DEFAULT_SESSION = "gpu-tuner-20261202-171357"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="open the TUI on the recorded demo sessions (offline)",
        description="Unpacks the sessions recorded in traces/demo (a tuner session measured on "
        "an H200, and a scripted claude session whose numbers are stand-ins) into a directory "
        "with their git repositories, then opens the TUI on one of them.",
    )
    parser.add_argument(
        "--session", default=DEFAULT_SESSION, help=f"which one (default {DEFAULT_SESSION})"
    )
    parser.add_argument("--list", action="store_true", help="list the recorded sessions")
    parser.add_argument("--dir", type=Path, help="unpack here (default: a new temporary dir)")
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
    dest = args.dir or Path(tempfile.mkdtemp(prefix="kernelseek-demo-"))
    root = unpack_demo(dest)
    print(f"demo sessions unpacked under {dest}")
    return browse(root / args.session, root, args)
