"""`kernelseek eval`: judge one candidate on a task's scenarios and print what was measured."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelseek_tui.errors import KernelseekError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval",
        help="check, build and time a candidate kernel against the task's objective",
        description="Judge a candidate: static checks and build (no GPU needed), then "
        "correctness on every scenario and timing against the starting kernel and the peers.",
    )
    parser.add_argument("task_dir", type=Path, help="the task directory (holds task.toml)")
    parser.add_argument("--source", type=Path, help="candidate .cu file (default: the task's)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--set",
        action="append",
        dest="sets",
        metavar="NAME",
        help="scenario set to run (repeatable; default: the task's objective)",
    )
    which.add_argument(
        "--scenarios",
        type=Path,
        metavar="FILE",
        help="a scenario file of your own, in the task's format",
    )
    parser.add_argument(
        "--random",
        type=int,
        metavar="N",
        help="fresh random held-out scenarios (default: the objective's count)",
    )
    parser.add_argument("--seed", type=int, help="seed for inputs and random scenarios")
    parser.add_argument("--device", type=int, help="GPU index (default: CUDA_VISIBLE_DEVICES)")
    parser.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a task knob (a -D define); repeatable",
    )
    parser.add_argument("--no-compare", action="store_true", help="skip FA3/cuDNN timing")
    parser.add_argument(
        "--pair-with",
        type=Path,
        metavar="FILE",
        help="time another kernel (its knobs.json beside it, if any) sample by sample beside the "
        "candidate on every timed scenario and print the candidate's speedup over it with its "
        "spread, measured in the same run (GPU-tested: docs/RELIABILITY.md)",
    )
    parser.add_argument(
        "--start-in-turn",
        action="store_true",
        help="time the starting kernel sample by sample beside the candidate (and beside "
        "--pair-with's kernel), in this run, for the speedups over it (instead of alone, before "
        "the candidate, and cached); "
        "KERNELSEEK_BASELINE=in-turn does the same (not yet run on a GPU: docs/RELIABILITY.md)",
    )
    parser.add_argument(
        "--isolation",
        choices=["in-process", "process"],
        help="where the kernels run while judged: each in a process of its own that holds "
        "nothing of the judge's, or loaded into the judge's worker (default: the task's "
        "isolation, 'process' unless its task.toml says otherwise; docs/RELIABILITY.md)",
    )
    parser.add_argument("--timeout", type=float, metavar="S", help="overall time limit")
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the expanded scenarios, one per line, and exit (no GPU)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--failures", action="store_true", help="table rows for failures only")
    parser.add_argument(
        "--bisect-exit",
        action="store_true",
        help="exit 0 good, 1 bad, 125 skip (for `git bisect run`)",
    )
    parser.add_argument(
        "--scenario", metavar="NAME", help="with --bisect-exit: good means this scenario passes"
    )
    parser.add_argument(
        "--metric",
        choices=["speedup", "vs_fa3"],
        help="with --bisect-exit: good means the metric is >= --threshold",
    )
    parser.add_argument("--threshold", type=float)
    parser.set_defaults(func=run)


def _parse_knobs(pairs: list[str]) -> dict[str, int]:
    knobs = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not value.lstrip("-").isdigit():
            raise KernelseekError(f"--knob wants NAME=INTEGER, got {pair!r}")
        knobs[name] = int(value)
    return knobs


def _advise_install() -> None:
    """After an evaluation that ran no scenario, what to install if this machine cannot."""
    from kernelseek_tui.evaluate.readiness import gpu_stack_problems, install_advice

    problems = gpu_stack_problems()
    if problems:
        print(f"to evaluate here: {install_advice(problems)}")


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.evaluate.api import evaluate, plan_scenarios
    from kernelseek_tui.evaluate.display import (
        ProgressBar,
        format_summary,
        format_table,
        format_verdict,
        ran_nothing,
    )
    from kernelseek_tui.task import load_task

    task = load_task(args.task_dir)
    if args.metric and args.threshold is None:
        raise KernelseekError("--metric needs --threshold")
    if args.list:
        planned = plan_scenarios(
            task,
            sets=args.sets,
            scenarios_file=args.scenarios,
            random_count=args.random,
            seed=args.seed or 0,
        )
        for item in planned:
            timed = " timed" if item.timed else ""
            print(f"{item.scenario.set}\t{item.scenario.name}\t{item.scenario.describe()}{timed}")
        return 0
    from kernelseek_tui.session.knobs import read_knobs

    source = args.source or task.source
    # A candidate is its kernel plus the knobs.json beside it (a tuner's commits are such pairs),
    # so `git bisect run kernelseek eval ...` rebuilds exactly what the session judged.
    knobs = _parse_knobs(args.knob) or read_knobs(source.parent, task) or {}
    pair_with = None
    if args.pair_with is not None:
        from kernelseek_tui.evaluate.api import PairedKernel

        if not args.pair_with.is_file():
            raise KernelseekError(f"--pair-with: no such file {args.pair_with}")
        pair_with = PairedKernel(args.pair_with, read_knobs(args.pair_with.parent, task) or None)
    bar = None if args.json else ProgressBar()
    try:
        result = evaluate(
            task,
            source,
            sets=args.sets,
            scenarios_file=args.scenarios,
            random_count=args.random,
            seed=args.seed,
            device=args.device,
            timeout_s=args.timeout,
            knobs=knobs,
            compare=not args.no_compare,
            progress=bar,
            pair_with=pair_with,
            isolation=args.isolation,
            start_in_turn=True if args.start_in_turn else None,
        )
    except KernelseekError:
        if args.bisect_exit:
            print(
                "kernelseek eval: the request itself is bad; telling bisect to skip",
                file=sys.stderr,
            )
            return 125
        raise
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(result.to_json(indent=2))
    elif ran_nothing(result):
        print(format_verdict(result))
        _advise_install()
    else:
        print(format_table(result, only_failures=args.failures))
        print()
        print(format_summary(result))
    if args.bisect_exit:
        from kernelseek_tui.history import bisect_judgement

        code, reason = bisect_judgement(
            result, scenario=args.scenario, metric=args.metric, threshold=args.threshold
        )
        if reason:
            print(f"kernelseek eval: telling bisect to skip: {reason}", file=sys.stderr)
        return code
    return {"pass": 0, "fail": 1, "error": 2}[result.verdict]
