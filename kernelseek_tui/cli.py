"""The ``kernelseek`` command line: parses arguments, calls the core, prints.

Each subcommand lives in ``kernelseek_tui/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Command modules
import their heavy dependencies inside ``func`` so that ``kernelseek --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kernelseek_tui import __version__
from kernelseek_tui.errors import KernelseekError

# (module under kernelseek_tui.commands, in the order --help lists them)
COMMAND_MODULES = (
    "demo",
    "run",
    "attach",
    "open",
    "ls",
    "eval",
    "query",
    "bisect",
    "import_",
    "report",
    "experiment",
    "compare",
    "repertoire",
    "serve",
    "mcp",
    "session",
    "init_agent",
    "hook",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelseek",
        description="Make a CUDA kernel faster with a coding agent inside a verifiable harness.",
    )
    parser.add_argument("--version", action="version", version=f"kernelseek {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"kernelseek_tui.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KernelseekError as error:
        print(f"kernelseek {args.command}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"kernelseek {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
