"""`kernelseek report`: not built yet."""

from __future__ import annotations

import argparse

from kernelseek_tui.commands.common import not_built


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="(not built yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise not_built("report", "a later issue")
