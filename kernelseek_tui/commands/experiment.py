"""`kernelseek experiment SPEC.toml`: run N sessions per arm on one task, one per GPU, and
keep them under ``<traces>/<experiment>/``; ``--resume NAME`` continues one that stopped."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.errors import KernelseekError

STARTUP_WAIT_S = 30.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "experiment",
        help="run sessions that differ in one thing (questions on/off, model, ...) side by side",
        description="Run SPEC.toml's sessions: N per arm, the same task, each its own session "
        "and branch, one per visible GPU at a time, under <traces>/<experiment>/. Compare them "
        "with `kernelseek compare EXPERIMENT`.",
    )
    parser.add_argument("spec", nargs="?", type=Path, help="the experiment's TOML file")
    parser.add_argument("--resume", metavar="NAME", help="continue an experiment that stopped")
    parser.add_argument("--detach", action="store_true", help="run in the background")
    add_traces_argument(parser)
    parser.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)  # the detached runner
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.experiment.record import (
        ExperimentRecord,
        effective_status,
        is_experiment_dir,
        read_record,
        write_record,
    )
    from kernelseek_tui.paths import traces_root

    if args.run_dir is not None:
        return _run_here(args.run_dir)
    root = traces_root(args.traces, must_exist=False)
    if args.resume:
        if args.spec is not None:
            raise KernelseekError("--resume takes the experiment's name, not a SPEC file")
        experiment_dir = root / args.resume
        record = read_record(experiment_dir)
        if effective_status(record) == "running":
            raise KernelseekError(
                f"experiment {record.name} is still running (pid {record.pid}): see `kernelseek ls`"
            )
    else:
        if args.spec is None:
            raise KernelseekError("give the experiment's SPEC.toml, or --resume NAME")
        from kernelseek_tui.commands.run import SETTINGS
        from kernelseek_tui.experiment.spec import load_spec

        spec = load_spec(args.spec, allowed_settings=frozenset(SETTINGS))
        experiment_dir = root / spec.name
        if is_experiment_dir(experiment_dir) or experiment_dir.exists():
            raise KernelseekError(
                f"{experiment_dir} exists already: `kernelseek experiment --resume {spec.name}` "
                "continues it, or rename the experiment"
            )
        if spec.evaluator is None:
            from kernelseek_tui.evaluate.readiness import require_gpu_stack

            require_gpu_stack(f"experiment {spec.name}")
        record = ExperimentRecord.plan(spec)
        record.pid = None
        write_record(experiment_dir, record)
        print(
            f"experiment {spec.name}: {len(spec.arms)} arms x {spec.sessions_per_arm} sessions "
            f"under {experiment_dir}"
        )
    if args.detach:
        return _detach(experiment_dir.resolve())
    return _run_here(experiment_dir)


def _run_here(experiment_dir: Path) -> int:
    from kernelseek_tui.experiment.record import read_record
    from kernelseek_tui.experiment.runner import ExperimentRunner, default_slots

    record = read_record(experiment_dir)
    spec = record.experiment
    slots = default_slots(spec.parallel, stand_in=spec.evaluator is not None)
    runner = ExperimentRunner(experiment_dir, slots=slots, say=lambda line: print(line, flush=True))
    reason = runner.run()
    print(
        f"experiment {record.name} ended: {reason}; compare with "
        f"`kernelseek compare {record.name} --traces {Path(experiment_dir).parent}`",
        flush=True,
    )
    return 0 if reason == "done" else 1


def _detach(experiment_dir: Path) -> int:
    from kernelseek_tui.experiment.record import RUNNER_LOG, read_record
    from kernelseek_tui.session.launch import start_kernelseek

    log = experiment_dir / RUNNER_LOG
    child = start_kernelseek(["experiment", "--run-dir", str(experiment_dir)], log)
    deadline = time.monotonic() + STARTUP_WAIT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise KernelseekError(f"the experiment runner exited at once; see {log}")
        if read_record(experiment_dir).pid == child.pid:
            name = experiment_dir.name
            print(f"experiment {name} is running in the background (pid {child.pid})")
            print(f"  list:     kernelseek ls --traces {experiment_dir.parent}")
            print(f"  compare:  kernelseek compare {name} --traces {experiment_dir.parent}")
            print(f"  log:      {log}")
            return 0
        time.sleep(0.1)
    raise KernelseekError(f"the experiment runner (pid {child.pid}) did not start; see {log}")
