"""`kernelseek ls`: the sessions under the traces root, and whether each one is alive."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kernelseek_tui.commands.common import add_traces_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "ls",
        help="list sessions: id, task, agent, status, pid, evaluations, best speedup",
        description="List the sessions under the traces root. A session whose status says "
        "running but whose engine process is gone is shown as crashed (resume it with "
        "`kernelseek run --resume ID`).",
    )
    add_traces_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.commands.common import read_traces_root
    from kernelseek_tui.experiment.record import list_experiments
    from kernelseek_tui.session.meta import list_sessions

    root = read_traces_root(args.traces)
    sessions = list_sessions(root)
    if args.json:
        for s in sessions:
            record = {
                "session_id": s.meta.session_id,
                "task": s.meta.task,
                "agent": s.meta.agent,
                "model": s.meta.model,
                "status": s.status,
                "recorded_status": s.meta.status,
                "end_reason": s.meta.end_reason,
                "pid": s.meta.pid,
                "alive": s.alive,
                "evals": s.meta.stats.get("evals"),
                "commits": s.meta.stats.get("commits"),
                "best_speedup": s.meta.stats.get("best_speedup"),
                "created": s.meta.created,
                "updated": s.meta.updated,
                "dir": str(s.dir),
            }
            print(json.dumps(record, sort_keys=True))
        for experiment_dir, planned, status in list_experiments(root):
            line = {
                "experiment": planned.name,
                "status": status,
                "end_reason": planned.end_reason,
                "pid": planned.pid,
                "sessions": [{"session_id": p.session_id, "arm": p.arm} for p in planned.sessions],
                "dir": str(experiment_dir),
            }
            print(json.dumps(line, sort_keys=True))
        return 0
    experiments = list_experiments(root)
    if not sessions and not experiments:
        print(f"no sessions under {root}")
        return 0
    if sessions:
        _print_table(_session_rows(sessions))
    for experiment_dir, experiment, status in experiments:
        members = list_sessions(experiment_dir)
        done = sum(1 for m in members if m.status == "finished")
        spec = experiment.experiment
        arms = ", ".join(f"{arm.name} x{spec.sessions_per_arm}" for arm in spec.arms)
        if status == "finished" and experiment.end_reason:
            status = f"finished ({experiment.end_reason})"
        print()
        _print_table(
            [
                ("EXPERIMENT", "STATUS", "SESSIONS", "ARMS"),
                (experiment.name, status, f"{done}/{len(experiment.sessions)} finished", arms),
            ]
        )
        if members:
            _print_table(_session_rows(members, arm_of=experiment.arm_of()), indent="  ")
    return 0


def _session_rows(
    sessions: list[Any], *, arm_of: dict[str, str] | None = None
) -> list[tuple[str, ...]]:
    header: tuple[str, ...] = ("ID", "TASK", "AGENT", "STATUS", "PID", "EVALS", "BEST", "STARTED")
    if arm_of is not None:
        header = ("ID", "ARM", *header[1:])
    rows = [header]
    for s in sessions:
        pid = "-"
        if s.meta.pid:
            alive = s.alive
            pid = f"{s.meta.pid} " + ("alive" if alive else "dead" if alive is False else "?")
        status = s.status
        if status == "finished" and s.meta.end_reason:
            status = f"finished ({s.meta.end_reason})"
        best = s.meta.stats.get("best_speedup")
        row: tuple[str, ...] = (
            s.meta.session_id,
            s.meta.task or "?",
            s.meta.agent + (f" ({s.meta.model})" if s.meta.model else ""),
            status,
            pid,
            str(s.meta.stats.get("evals", 0)),
            f"{best:.3f}x" if isinstance(best, int | float) else "-",
            s.meta.created.replace("T", " ").rstrip("Z"),
        )
        if arm_of is not None:
            row = (row[0], arm_of.get(s.meta.session_id, "?"), *row[1:])
        rows.append(row)
    return rows


def _print_table(rows: list[tuple[str, ...]], indent: str = "") -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print(indent + line.rstrip())
