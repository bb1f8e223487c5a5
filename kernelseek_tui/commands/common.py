"""Pieces several subcommands share."""

from __future__ import annotations

import argparse

from kernelseek_tui.errors import NotBuiltError


def add_traces_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--traces",
        metavar="DIR",
        default=None,
        help="traces root (default: $KERNELSEEK_TRACES, else ./traces)",
    )


def not_built(command: str, what: str) -> NotBuiltError:
    return NotBuiltError(f"'{command}' is not built yet: it arrives with {what}")
