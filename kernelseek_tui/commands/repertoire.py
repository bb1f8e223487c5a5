"""`kernelseek repertoire`: check, list and rate the questions of a repertoire file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

_LEVELS_HELP = (
    "measurement, memory, instruction, synchronization, scheduling, algorithm, "
    "limit-pushback, process"
)
_TRIGGERS_HELP = "plateau, limit_claim, finish_request, failure_streak, manual (= any)"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "repertoire",
        help="check, list and rate the question repertoire",
        description="The questions the harness puts to the agent at decision moments.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    check = actions.add_parser(
        "check",
        help="validate a repertoire file (FILE:LINE: message per problem; exit 1 if any)",
    )
    check.add_argument(
        "file",
        nargs="?",
        default=None,
        help="default: $KERNELSEEK_REPERTOIRE, else ./repertoire.toml, else the shipped one",
    )
    check.set_defaults(func=run_check)

    listing = actions.add_parser("list", help="list the questions")
    _add_file_option(listing)
    listing.add_argument("--level", metavar="L", help=_LEVELS_HELP)
    listing.add_argument("--trigger", metavar="T", help=_TRIGGERS_HELP)
    listing.set_defaults(func=run_list)

    stats = actions.add_parser(
        "stats", help="each question's record in the traces: asked, followed by a jump, gain"
    )
    _add_file_option(stats)
    add_traces_argument(stats)
    stats.set_defaults(func=run_stats)

    nxt = actions.add_parser(
        "next",
        help="the question to ask now: the ranking for a trigger, recent ones left out",
    )
    _add_file_option(nxt)
    add_traces_argument(nxt)
    nxt.add_argument("--trigger", required=True, metavar="T", help=_TRIGGERS_HELP)
    nxt.add_argument(
        "--asked", action="append", default=[], metavar="ID", help="an id asked already (repeat)"
    )
    nxt.add_argument(
        "--notes",
        metavar="FILE",
        help="a notes file whose 'Question: <id>' lines count as asked (oldest first)",
    )
    nxt.add_argument(
        "--avoid-last",
        type=int,
        default=None,
        metavar="N",
        help="leave out the last N asked (default: what a session does)",
    )
    nxt.add_argument("--seed", type=int, help="seed for the ranking's draws (reproducible)")
    nxt.set_defaults(func=run_next)

    parser.set_defaults(func=lambda args: _usage(parser))


def _add_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        metavar="FILE",
        default=None,
        help="repertoire file (default: $KERNELSEEK_REPERTOIRE, else ./repertoire.toml, "
        "else the shipped one)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_check(args: argparse.Namespace) -> int:
    """Print every problem as FILE:LINE: message; 1 when there are any, else 0."""
    from kernelseek_tui.repertoire import check_repertoire, find_repertoire, load_repertoire

    args.file = str(find_repertoire(args.file))
    problems = check_repertoire(args.file)
    for problem in problems:
        print(problem)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        print(f"{args.file}: {len(problems)} {noun}", file=sys.stderr)
        return 1
    repertoire = load_repertoire(args.file)
    levels = len({q.level for q in repertoire})
    print(f"{args.file}: {len(repertoire)} questions across {levels} levels, no problems")
    return 0


def run_list(args: argparse.Namespace) -> int:
    """One line per question: id, level, triggers, text."""
    from kernelseek_tui.repertoire import LEVELS, TRIGGERS, find_repertoire, load_repertoire

    _require_choice("level", args.level, LEVELS)
    _require_choice("trigger", args.trigger, TRIGGERS)
    repertoire = load_repertoire(find_repertoire(args.file))
    questions = repertoire.select(level=args.level, trigger=args.trigger)
    rows = [(q.id, q.level, ",".join(q.triggers), q.text) for q in questions]
    _print_table(("ID", "LEVEL", "TRIGGERS", "QUESTION"), rows)
    print(f"{len(questions)} of {len(repertoire)} questions", file=sys.stderr)
    return 0


def run_stats(args: argparse.Namespace) -> int:
    """Each question's record in the traces, best estimated jump rate first."""
    from kernelseek_tui.commands.common import read_traces_root
    from kernelseek_tui.repertoire import (
        expected_jump_rate,
        find_repertoire,
        load_repertoire,
        pooled_jump_rate,
    )
    from kernelseek_tui.repertoire.ranking import clean_record

    repertoire = load_repertoire(find_repertoire(args.file))
    try:
        from kernelseek_tui.trace.store import TraceStore
    except ImportError:
        raise KernelseekError(
            "the trace store is not available (kernelseek_tui.trace.store cannot be imported), "
            "so there are no question statistics yet"
        ) from None
    root = read_traces_root(args.traces)
    raw = TraceStore(root).question_stats()
    records = {qid: clean_record(record) for qid, record in raw.items()}
    known = {q.id: q for q in repertoire}
    prior = pooled_jump_rate(records[qid] for qid in records if qid in known)

    rows = []
    for question in repertoire:
        record = clean_record(records.get(question.id))
        rows.append((expected_jump_rate(record, prior), question.id, question.level, record))
    for qid, record in records.items():
        if qid not in known:
            rows.append((expected_jump_rate(record, prior), qid, "(not in repertoire)", record))
    rows.sort(key=lambda row: (-row[0], -row[3].asked, row[1]))
    table = [
        (
            qid,
            level,
            str(record.asked),
            str(record.followed_by_jump),
            f"{record.followed_by_jump / record.asked:.0%}" if record.asked else "-",
            f"{record.median_gain:.3g}" if record.median_gain is not None else "-",
            f"{estimate:.2f}",
        )
        for estimate, qid, level, record in rows
    ]
    _print_table(("ID", "LEVEL", "ASKED", "JUMPS", "RATE", "MEDIAN GAIN", "EST."), table)
    asked = sum(r.asked for r in records.values())
    jumps = sum(r.followed_by_jump for r in records.values())
    tried = sum(1 for q in repertoire if records.get(q.id) and records[q.id].asked)
    print(
        f"{asked} questions asked in the traces under {root}, {jumps} followed by a jump; "
        f"{tried} of {len(repertoire)} repertoire questions tried "
        "(EST.: estimated jump rate, the record pulled toward the pooled rate)",
        file=sys.stderr,
    )
    return 0


def run_next(args: argparse.Namespace) -> int:
    """Print the top-ranked question for a trigger: id, then its text; 1 when none is left."""
    from kernelseek_tui.repertoire import TRIGGERS, find_repertoire, load_repertoire
    from kernelseek_tui.repertoire.ranking import DEFAULT_AVOID_LAST, next_question

    _require_choice("trigger", args.trigger, TRIGGERS)
    repertoire = load_repertoire(find_repertoire(args.file))
    asked = [*_asked_in_notes(args.notes), *args.asked] if args.notes else list(args.asked)
    avoid = DEFAULT_AVOID_LAST if args.avoid_last is None else args.avoid_last
    stats = _question_stats(args.traces)
    question = next_question(
        repertoire, args.trigger, stats=stats, recent_ids=asked, rng=args.seed, avoid_last=avoid
    )
    if question is None:
        print(f"every {args.trigger} question was asked too recently", file=sys.stderr)
        return 1
    print(f"{question.id}\t{question.level}\t{question.text}")
    return 0


def _asked_in_notes(path: str) -> list[str]:
    import re
    from pathlib import Path

    try:
        text = Path(path).read_text()
    except OSError as error:
        raise KernelseekError(f"{path}: {error.strerror}") from None
    return re.findall(r"^\W*Question:\s*`?([a-z0-9-]+)`?", text, flags=re.MULTILINE)


def _question_stats(traces: str | None) -> dict:
    """Each question's record in the traces, or none where there are no traces to read."""
    from kernelseek_tui.paths import traces_root

    try:
        from kernelseek_tui.trace.store import TraceStore

        return dict(TraceStore(traces_root(traces)).question_stats())
    except (ImportError, KernelseekError):
        return {}


def _require_choice(what: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise KernelseekError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    # The last column is left ragged: it holds free text.
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, str(row[-1])]).rstrip())
