"""`kernelseek import claude-code PATH...`: import transcripts of other tools as trace sessions."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

FORMATS = ("claude-code",)

EPILOG = """\
claude-code: Claude Code JSONL transcripts (~/.claude/projects/<project>/<session>.jsonl).
Each file becomes the session cc-<file stem> (or --session-id, for one file). Importing a file
again adds only what is new in it. A directory is searched for *.jsonl files.
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "import",
        help="import transcripts (Claude Code JSONL) as trace sessions",
        description="Import transcripts of other tools as trace sessions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", choices=FORMATS, help="the transcript format")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders")
    parser.add_argument(
        "--session-id", metavar="ID", help="the session to import into (one file only)"
    )
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.trace.importers.claude_code import import_claude_code, transcript_files
    from kernelseek_tui.trace.logs import warnings_to_stderr

    root = traces_root(args.traces, must_exist=False)
    if root.exists() and not root.is_dir():
        raise KernelseekError(f"traces root {str(root)!r} is not a directory")
    files = transcript_files(Path(p) for p in args.paths)
    if args.session_id and len(files) != 1:
        raise KernelseekError(f"--session-id takes one transcript, got {len(files)}")
    if args.session_id and not _valid_session_id(args.session_id):
        raise KernelseekError(f"--session-id {args.session_id!r}: use letters, digits, . _ -")
    root.mkdir(parents=True, exist_ok=True)
    with warnings_to_stderr("kernelseek import"):
        for path in files:
            result = import_claude_code(path, root, session_id=args.session_id)
            notes = []
            if result.already_present:
                notes.append(f"{result.already_present} already there")
            if result.torn_last_line:
                notes.append("skipped an unfinished last line")
            skipped = sum(result.skipped_records.values())
            if skipped:
                notes.append(f"{skipped} non-conversation lines skipped")
            suffix = f" ({'; '.join(notes)})" if notes else ""
            print(f"{path} -> {result.session_id}: {result.added} events added{suffix}")
    return 0


def _valid_session_id(value: str) -> bool:
    return (
        bool(value) and value not in (".", "..") and all(c.isalnum() or c in "._-" for c in value)
    )
