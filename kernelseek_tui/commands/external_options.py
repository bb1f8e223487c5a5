"""The options of a session whose agent is outside the process (``mcp``, ``session start``)
and opening its host from them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

# (flag, DecisionConfig field) of the decision thresholds an external session takes.
DECISION_FLAGS = (
    ("plateau_evals", "plateau_evals"),
    ("failure_streak", "failure_streak"),
    ("finish_questions", "finish_questions"),
)


def add_external_arguments(parser: argparse.ArgumentParser) -> None:
    """TASK_DIR, ``--session``, ``--traces`` and the objective and decision flags."""
    parser.add_argument(
        "task_dir", nargs="?", type=Path, help="the task directory (to start a session)"
    )
    parser.add_argument(
        "--session", metavar="ID", help="open this session: resume it, or start it with this id"
    )
    add_traces_argument(parser)
    parser.add_argument(
        "--set", action="append", dest="objective_sets", metavar="NAME",
        help="the objective is this scenario set instead of the task's (repeatable)",
    )  # fmt: skip
    parser.add_argument("--source", metavar="FILE", help="start from this kernel of the task")
    parser.add_argument("--repertoire", type=Path, metavar="FILE", help="question repertoire")
    parser.add_argument("--plateau-evals", type=int, metavar="N")
    parser.add_argument("--failure-streak", type=int, metavar="N")
    parser.add_argument(
        "--finish-questions", type=int, metavar="N",
        help="finish requests answered with a question before one ends the session",
    )  # fmt: skip
    parser.add_argument(
        "--attach-wait", type=float, metavar="S",
        help="seconds to wait for a person's question when one is attached (default 60)",
    )  # fmt: skip
    parser.add_argument("--device", type=int, help="GPU index")
    # For tests and demos without a GPU: MODULE:FUNCTION building a stand-in evaluator.
    parser.add_argument("--evaluator", help=argparse.SUPPRESS)


def require_mcp() -> None:
    """Refuse with the install line when the MCP SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise KernelseekError(
            "the MCP server needs the mcp package: pip install -e '.[mcp]'"
        ) from None


def open_host(args: argparse.Namespace, *, transcripts: Any = None, on_event: Any = None) -> Any:
    """The host of the session the arguments name (started or resumed), not yet running."""
    from kernelseek_tui.external.host import ExternalHost
    from kernelseek_tui.paths import traces_root

    if args.task_dir is None and args.session is None:
        raise KernelseekError("give a TASK_DIR to start a session, or --session ID")
    if args.evaluator is None:
        from kernelseek_tui.evaluate.readiness import require_gpu_stack

        require_gpu_stack("an external agent's session")
    decisions = {
        field: getattr(args, flag)
        for flag, field in DECISION_FLAGS
        if getattr(args, flag) is not None
    }
    options = {"device": args.device} if args.device is not None else {}
    return ExternalHost.open(
        traces_root=traces_root(args.traces, must_exist=False),
        task_dir=args.task_dir,
        session_id=args.session,
        source=args.source,
        objective_sets=args.objective_sets,
        evaluator_spec=args.evaluator,
        evaluator_options=options,
        decisions=decisions,
        repertoire=args.repertoire.resolve() if args.repertoire else None,
        attach_wait_s=args.attach_wait,
        transcripts=transcripts,
        on_event=on_event,
    )
