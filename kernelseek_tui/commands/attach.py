"""`kernelseek attach`: find a session again and open the TUI on it, live."""

from __future__ import annotations

import argparse
import sys

from kernelseek_tui.commands.common import add_traces_argument

TUI_MISSING_EXIT = 2


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "attach",
        help="open the TUI on a session (a running one live)",
        description="Find a session by id, unique id prefix or directory and open the TUI on "
        "it; while the TUI is open the engine counts a person as attached.",
    )
    parser.add_argument("session", help="session id, a unique prefix of one, or its directory")
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.session.meta import effective_status, find_session, read_meta

    root = traces_root(args.traces, must_exist=False)
    session_dir = find_session(root, args.session)
    meta = read_meta(session_dir)
    try:
        from kernelseek_tui.tui.app import open_tui
    except ImportError as error:
        status = effective_status(meta)
        stats = meta.stats or {}
        best = stats.get("best_speedup")
        print(
            f"kernelseek attach: the TUI is not available here ({error}); session "
            f"{meta.session_id} is {status}, {stats.get('evals', 0)} evaluations, best "
            + (f"{best:.3f}x" if isinstance(best, int | float) else "none")
            + f", trace {session_dir}",
            file=sys.stderr,
        )
        return TUI_MISSING_EXIT
    return int(open_tui(session_dir, live=True) or 0)
