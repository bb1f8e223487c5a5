"""`kernelseek compare SESSION_OR_EXPERIMENT...`: a table per arm, the verdicts the number of
sessions allows, and a plot of best speedup over tool calls."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "compare",
        help="compare sessions or experiments arm by arm: table, verdict, plot",
        description="Compare sessions grouped into arms (an experiment's arms; a session on "
        "its own is in the arm of its questions mode): best speedup and vs FA3 at the end and "
        "at equal tool calls, dollars, wall time, evaluations to reach a speedup, questions, "
        "jumps that followed a question; a verdict only where the sessions per arm allow one.",
    )
    parser.add_argument("refs", nargs="*", metavar="SESSION_OR_EXPERIMENT")
    parser.add_argument(
        "--reach",
        type=float,
        metavar="X",
        help="the speedup 'evals to reach' counts to (default: the lowest best of all sessions)",
    )
    parser.add_argument(
        "--k", type=int, metavar="K", help="a jump follows a question within K evaluations"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("reports"),
        help="where the plot goes: a directory (default reports/) or a file ending in .png",
    )
    parser.add_argument("--no-plot", action="store_true", help="print the tables only")
    parser.add_argument("--json", action="store_true", help="the numbers as one JSON object")
    parser.add_argument(
        "--tui",
        action="store_true",
        help="open the compare screen instead (these picked; space picks others)",
    )
    add_traces_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.experiment.comparison import dumps, load_comparison, plot_comparison
    from kernelseek_tui.paths import traces_root

    root = traces_root(args.traces, must_exist=False)
    if args.tui:
        return _tui(root, args.refs)
    if not args.refs:
        raise KernelseekError("name the sessions or experiments to compare (or use --tui)")
    comparison = load_comparison(root, args.refs, reach=args.reach, k=args.k)
    if args.json:
        print(dumps(comparison))
        return 0
    print(comparison.tables())
    print()
    for verdict in comparison.verdicts():
        print(verdict.sentence())
    if len(comparison.arms) < 2:
        print("one arm only: nothing to set it against")
    if not args.no_plot:
        name = "-".join(Path(r).name for r in args.refs)[:80]
        # A path that names a PNG is the file itself, not a directory to make beside it.
        out = args.out if args.out.suffix.lower() == ".png" else args.out / f"compare-{name}.png"
        path = plot_comparison(comparison, out, f"compare {name}")
        print(f"\nwrote {path}")
    return 0


def _tui(root: Path, refs: list[str]) -> int:
    import os

    from kernelseek_tui.experiment.catalog import picked_refs

    root = root.resolve()
    if not root.is_dir():
        raise KernelseekError(f"traces root {str(root)!r} does not exist or is not a directory")
    picked = picked_refs(root, refs)
    from kernelseek_tui.tui.compare_app import CompareApp

    if not os.isatty(0) or not os.isatty(1):
        raise KernelseekError("the compare screen needs a terminal (stdin and stdout)")
    CompareApp(root, preselect=picked).run()
    return 0
