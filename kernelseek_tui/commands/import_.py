"""`kernelseek import claude-code PATH...`: import transcripts of other tools as trace sessions."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

if TYPE_CHECKING:
    from kernelseek_tui.trace.importers import ImportResult

FORMATS = ("claude-code",)

EPILOG = """\
claude-code: Claude Code JSONL transcripts (~/.claude/projects/<project>/<session>.jsonl).
Each file becomes the session cc-<file stem> (or --session-id, for one file). Importing a file
again adds only what is new in it. A directory is searched for *.jsonl files. A resumed
session (claude --resume copies the earlier lines into a new file) counts each line once: the
files of one project directory are imported oldest first, and a line another session of that
directory already holds is left out. A file that cannot be imported is reported on its own
line and the others are imported all the same (the exit status is then 1).
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
    import sys

    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.trace.importers.claude_code import transcript_files
    from kernelseek_tui.trace.importers.claude_code_project import import_transcripts
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
        outcomes = import_transcripts(files, root, session_id=args.session_id)
    failed = 0
    for outcome in outcomes:
        if outcome.result is None:
            failed += 1
            print(f"kernelseek import: error: {outcome.error}", file=sys.stderr)
        else:
            print(_describe(outcome.path, outcome.result))
    if failed and len(outcomes) > 1:
        print(
            f"kernelseek import: {failed} of {len(outcomes)} files not imported",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _describe(path: Path, result: ImportResult) -> str:
    """One line: where the file went and what was added, left out and skipped."""
    notes = []
    if result.already_present:
        notes.append(f"{result.already_present} already there")
    if result.elsewhere:
        notes.append(f"{result.elsewhere} already imported from another file of the project")
    if result.torn_last_line:
        notes.append("skipped an unfinished last line")
    skipped = sum(result.skipped_records.values())
    if skipped:
        notes.append(f"{skipped} non-conversation lines skipped")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    if not (result.added or result.already_present or result.elsewhere):
        return f"{path}: no conversation in it, nothing imported{suffix}"
    return f"{path} -> {result.session_id}: {result.added} events added{suffix}"


def _valid_session_id(value: str) -> bool:
    return (
        bool(value) and value not in (".", "..") and all(c.isalnum() or c in "._-" for c in value)
    )
