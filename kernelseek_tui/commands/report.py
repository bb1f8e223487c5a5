"""`kernelseek report SESSION`: a PNG plot and an HTML page of a session."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelseek_tui.commands.common import add_traces_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report", help="write a PNG plot and an HTML page of a session (best speedup, questions)"
    )
    parser.add_argument("session", help="session id under the traces root, or a session dir")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="output directory")
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.report import write_report

    candidate = Path(args.session)
    session_dir = candidate if candidate.is_dir() else traces_root(args.traces) / args.session
    png, page = write_report(session_dir, args.out)
    print(f"wrote {png} and {page}")
    return 0
