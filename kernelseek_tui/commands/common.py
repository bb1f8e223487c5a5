"""Pieces several subcommands share."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelseek_tui.errors import KernelseekError


def add_traces_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--traces",
        metavar="DIR",
        default=None,
        help="traces root (default: $KERNELSEEK_TRACES, else ./traces)",
    )


def read_traces_root(explicit: str | None) -> Path:
    """The traces root of a command that only reads (ls, query, stats, report, bisect).

    With no root named and no session of one's own under ./traces, the recorded demo sessions
    answer, and a note on stderr says so; a root that holds no session is an error that says
    how to get one, not an empty answer.
    """
    from kernelseek_tui.paths import has_sessions, reading_root

    root, demo = reading_root(explicit)
    if demo:
        print(
            f"note: no sessions under ./traces: showing the recorded demo sessions in {root} "
            "(--traces DIR for others)",
            file=sys.stderr,
        )
    elif not has_sessions(root):
        raise KernelseekError(
            f"no sessions under {root}: start one with `kernelseek run TASK_DIR`, or browse the "
            "recorded ones with `kernelseek demo`"
        )
    return root
