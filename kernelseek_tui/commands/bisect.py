"""`kernelseek bisect`: the first candidate of a session that broke something, or with
``--first-good`` the first that reached a bar (which version first beat FA3?), found by
evaluating candidates again with the real evaluator (progress on stderr); with ``--gpus``
several candidates at once, one per GPU."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

if TYPE_CHECKING:  # imported where used: the command's module stays light for `--help`
    from kernelseek_tui.evaluate.result import EvalResult
    from kernelseek_tui.history import Candidate


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "bisect",
        help="find a session's first bad candidate by evaluating candidates again",
        description="Binary search over a session's candidates between a good and a bad one. "
        "Good means: every scenario passes (default), a named scenario passes (--scenario), or "
        "a metric reaches a threshold (--metric, --threshold). Each candidate is exported from "
        "git (its kernel and knobs.json) and judged by the session's original task. The same "
        "search works with `git bisect run kernelseek eval TASK --bisect-exit ...`. With "
        "--first-good the search runs the other way, for a climb: the first candidate that "
        "meets the rule, from an older revision (--good, default the start) that falls short "
        "of it to a newer one (--bad, default the tip) that meets it.",
    )
    parser.add_argument("session", help="session id, a unique prefix of one, or its directory")
    parser.add_argument("--good", default="start", help="a good revision (default: the start)")
    parser.add_argument("--bad", default="HEAD", help="a bad revision (default: the session tip)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--scenario", metavar="NAME", help="good: this scenario passes")
    which.add_argument("--metric", choices=["speedup", "vs_fa3", "tflops"])
    parser.add_argument("--threshold", type=float, help="with --metric: good when metric >= X")
    parser.add_argument(
        "--first-good",
        action="store_true",
        help="find the first candidate that meets the rule (e.g. the first to beat FA3: "
        "--metric vs_fa3 --threshold 1.0) instead of the first that breaks it",
    )
    parser.add_argument(
        "--set",
        action="append",
        dest="sets",
        metavar="NAME",
        help="scenario set(s) to judge on (default: the session's objective)",
    )
    add_traces_argument(parser)
    parser.add_argument("--device", type=int, help="GPU index")
    parser.add_argument(
        "--gpus",
        metavar="SPEC",
        help="test several candidates at once, one per GPU: auto, N (the first N visible) or "
        "indices like 0,1; each round splits what is left into N+1 parts (default 1: binary)",
    )
    parser.add_argument("--no-compare", action="store_true", help="skip the peers' timing")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.add_argument("--evaluator", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import tempfile

    from kernelseek_tui.commands.common import read_traces_root
    from kernelseek_tui.history import check_criteria
    from kernelseek_tui.session.meta import find_session

    check_criteria(scenario=args.scenario, metric=args.metric, threshold=args.threshold)
    if args.gpus is not None and args.device is not None:
        raise KernelseekError("give --gpus or --device, not both")
    session_dir = find_session(read_traces_root(args.traces), args.session)
    # The scratch holds what a recorded session lacks here (its repository from the bundle,
    # its task from the start commit) for as long as candidates are judged.
    with tempfile.TemporaryDirectory(prefix="kernelseek-bisect-session-") as scratch:
        return _bisect(args, session_dir, Path(scratch))


def _bisect(args: argparse.Namespace, session_dir: Path, scratch: Path) -> int:
    from kernelseek_tui.history import (
        BisectProgress,
        bisect_candidates_parallel,
        check_range,
        check_recorded_good,
        confirm_good,
        inverted,
        predicate_from_evaluator,
    )
    from kernelseek_tui.session.evaluator import (
        Evaluator,
        TaskEvaluator,
        load_evaluator_factory,
    )
    from kernelseek_tui.session.meta import read_meta
    from kernelseek_tui.session.recorded import candidate_judge, open_history, original_task
    from kernelseek_tui.session.slots import EvalSlots, resolve_gpus

    meta = read_meta(session_dir)
    history = open_history(session_dir, meta, scratch)
    good = history.base_sha if args.good == "start" else args.good
    check_range(history, good, args.bad)
    first_good = bool(args.first_good)
    check_recorded_good(
        history, good, metric=args.metric, threshold=args.threshold, first_good=first_good
    )
    if not args.evaluator:
        from kernelseek_tui.evaluate.readiness import require_gpu_stack

        require_gpu_stack("bisect")
    gpus = resolve_gpus(args.gpus)
    task = original_task(meta, history, scratch)
    candidates = {c.sha: c for c in history.candidates()}
    say = _Printer()

    def make(device: int | str | None) -> Evaluator:
        if args.evaluator:
            extra = {"device": device} if device is not None else {}
            return load_evaluator_factory(args.evaluator)(task, **extra)
        # A bisect judges candidates one after another: each leaves the next one's worker ready.
        return TaskEvaluator(task, device=device, compare=not args.no_compare, prestart_next=True)

    slots = EvalSlots(task, {gpu: make(gpu) for gpu in gpus}) if gpus else None
    judge_candidate = candidate_judge(
        task, slots if slots is not None else make(args.device), args.sets or meta.objective_sets
    )

    def judge(sha: str, task_dir: Path) -> EvalResult:
        result = judge_candidate(sha, task_dir)
        c = candidates.get(sha)
        which = f"candidate {c.n}" if c else "the start" if sha == history.base_sha else sha[:10]
        where = f" on GPU {result.device.get('index', '?')}" if slots is not None else ""
        say(f"bisect:   {which} measured{where}: {measured_line(result, c)}")
        return result

    def progress(p: BisectProgress) -> None:
        c = p.candidate
        where = f"round {p.round}, " if p.round is not None else ""
        if p.verdict is None:
            say(
                f"bisect: step {p.step} ({where}about {p.steps_left} more): candidate {c.n} "
                f"{c.short_sha} ({p.remaining} left)"
            )
        else:
            why = f" ({p.reason})" if p.reason else ""
            said = _SEARCH_WORDS[p.verdict] if first_good else f"is {p.verdict}"
            say(f"bisect:   candidate {c.n} {said}{why}")

    meets = predicate_from_evaluator(
        judge, scenario=args.scenario, metric=args.metric, threshold=args.threshold
    )
    # The climb's search is the regression search under the opposite rule: its "good" end is
    # the older revision, short of the bar, and its first "bad" candidate the first to meet it.
    is_good = inverted(meets) if first_good else meets
    try:
        confirm_good(history, good, is_good, say, first_good=first_good)
        outcome = bisect_candidates_parallel(
            history, good, args.bad, is_good, max(1, len(gpus)), progress
        )
    finally:
        if slots is not None:
            slots.close()
    which = "first good candidate" if first_good else "first bad candidate"
    if args.json:
        print(json.dumps(_outcome_json(outcome, first_good), indent=2))
    elif outcome.first_bad is not None:
        c = outcome.first_bad
        print(f"{which}: {c.n} {c.sha} {c.subject}")
        if c.question:
            since = asked_before(list(candidates.values()), c)
            where = f" (asked before candidate {since})" if since != c.n else ""
            print(f"  last question before it{where}: {c.question}")
    elif not outcome.suspects:
        raise KernelseekError("nothing to bisect between those revisions")
    else:
        print(f"the {which} is one of these (the others could not be judged):")
        skipped = {s.candidate.sha: s.reason for s in outcome.steps if s.verdict == "skip"}
        for c in outcome.suspects:
            why = f"  [skipped: {skipped[c.sha] or 'no reason given'}]" if c.sha in skipped else ""
            print(f"  {c.n} {c.sha} {c.subject}{why}")
    return 0 if outcome.first_bad is not None else 1


def asked_before(chain: list[Any], found: Any) -> int:
    """The candidate a question was asked right before: a candidate records the last question
    asked before it, so the run of candidates carrying ``found``'s question ends at ``found``
    and begins at the first one after the question (``chain`` in session order)."""
    first = found.n
    for c in sorted(chain, key=lambda c: c.n, reverse=True):
        if c.n < found.n:
            if c.question != found.question:
                break
            first = c.n
    return first


def measured_line(result: EvalResult, recorded: Candidate | None) -> str:
    """What one evaluation measured, beside what the session recorded for the same candidate:
    the figures a bisect's verdicts rest on, so a verdict near the bar can be read against the
    noise (``recorded`` is the session's :class:`Candidate`, None for the start)."""
    s = result.summary
    parts = [f"{result.verdict} {s.passed}/{s.total}"]
    if s.vs_fa3 is not None:
        was = f" (recorded {recorded.vs_fa3:.3f}x)" if recorded and recorded.vs_fa3 else ""
        parts.append(f"{s.vs_fa3:.3f}x FA3{was}")
    if s.geomean_speedup is not None:
        was = f" (recorded {recorded.speedup:.2f}x)" if recorded and recorded.speedup else ""
        parts.append(f"{s.geomean_speedup:.2f}x start{was}")
    if s.noise is not None:
        parts.append(f"noise {s.noise:.1%}")
    if result.duration_s is not None:
        parts.append(f"{result.duration_s:.1f} s")
    return ", ".join(parts)


# A climb's search step, said in the user's terms (the search's own verdicts are inverted).
_SEARCH_WORDS = {"good": "falls short of the rule", "bad": "meets the rule", "skip": "is skip"}


def _outcome_json(outcome: Any, first_good: bool = False) -> dict[str, Any]:
    # A climb's search runs under the inverted rule: its verdicts and ends said in the user's terms.
    words = {"good": "short", "bad": "meets", "skip": "skip"} if first_good else None
    found, last = ("first_good", "last_short") if first_good else ("first_bad", "last_good")
    return {
        found: outcome.first_bad.sha if outcome.first_bad else None,
        "suspects": [c.sha for c in outcome.suspects],
        last: outcome.last_good,
        "rounds": outcome.rounds,
        "steps": [
            {
                "sha": s.candidate.sha,
                "verdict": words[s.verdict] if words else s.verdict,
                "round": s.round,
                "reason": s.reason,
            }
            for s in outcome.steps
        ],
    }


class _Printer:
    """Lines on stderr, whole, from whichever thread a parallel bisect tests in."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            print(line, file=sys.stderr, flush=True)
