"""`kernelseek ls`: the sessions under the traces root, and whether each one is alive."""

from __future__ import annotations

import argparse
import json

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
        return 0
    if not sessions:
        print(f"no sessions under {root}")
        return 0
    header = ("ID", "TASK", "AGENT", "STATUS", "PID", "EVALS", "BEST", "STARTED")
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
        rows.append(
            (
                s.meta.session_id,
                s.meta.task or "?",
                s.meta.agent + (f" ({s.meta.model})" if s.meta.model else ""),
                status,
                pid,
                str(s.meta.stats.get("evals", 0)),
                f"{best:.3f}x" if isinstance(best, int | float) else "-",
                s.meta.created.replace("T", " ").rstrip("Z"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return 0
