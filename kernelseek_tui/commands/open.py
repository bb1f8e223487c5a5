"""`kernelseek open`: browse a recorded session (or a traces root's newest) in the TUI."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "open",
        help="open the TUI on a session's trace (browse)",
        description="Open the TUI on a session directory, or on a traces root (its newest "
        "session; the query screen sees every session under it).",
    )
    parser.add_argument("path", help="a session directory or a traces root")
    add_view_arguments(parser)
    parser.set_defaults(func=run)


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments every command that opens the app to browse takes."""
    parser.add_argument(
        "--headless-check",
        metavar="SVG",
        type=Path,
        help="render the first screen to an SVG without a terminal, then exit",
    )
    parser.add_argument("--size", default="160x45", help="with --headless-check: COLSxROWS")


def parse_size(text: str) -> tuple[int, int]:
    from kernelseek_tui.errors import KernelseekError

    try:
        cols, rows = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise KernelseekError(f"--size wants COLSxROWS, e.g. 80x24, not {text!r}") from None
    return cols, rows


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.browse.session_data import resolve_session_dir

    session_dir, root = resolve_session_dir(Path(args.path))
    return browse(session_dir, root, args)


def browse(session_dir: Path, root: Path, args: argparse.Namespace) -> int:
    """Open the app on a finished session (or render its first screen, --headless-check)."""
    from kernelseek_tui.tui.app import open_tui

    code = open_tui(
        session_dir,
        live=False,
        traces_root=root,
        screenshot=args.headless_check,
        size=parse_size(args.size),
    )
    if args.headless_check:
        print(f"wrote {args.headless_check} ({session_dir.name})")
    return code
