"""`kernelseek init-agent claude-code|codex TASK_DIR`: wire an outside agent into the harness."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelseek_tui.commands.common import add_traces_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "init-agent",
        help="write the project-local config that puts Claude Code or Codex in the harness",
        description="Write the project's MCP configuration (.mcp.json for Claude Code, "
        ".codex/config.toml for Codex) that starts `kernelseek mcp` on TASK_DIR, for Claude "
        "Code a Stop hook in .claude/settings.json, and a short task prompt. Only files inside "
        "the project are written; each is named.",
    )
    parser.add_argument("agent", choices=["claude-code", "codex"], help="the agent")
    parser.add_argument("task_dir", type=Path, help="the task directory (task.toml)")
    parser.add_argument(
        "--project", type=Path, metavar="DIR",
        help="where the agent runs (default: the task's git repository, else the task directory)",
    )  # fmt: skip
    parser.add_argument("--session", metavar="ID", help="the session id (default: made up)")
    add_traces_argument(parser)
    parser.add_argument(
        "--set",
        action="append",
        dest="objective_sets",
        metavar="NAME",
        help="the objective is this scenario set instead of the task's",
    )
    parser.add_argument("--evaluator", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelseek_tui.external.host import new_session_id
    from kernelseek_tui.external.init_agent import write_setup
    from kernelseek_tui.history.git import toplevel
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.task import load_task

    task = load_task(args.task_dir)
    project = (args.project or toplevel(task.dir) or task.dir).resolve()
    traces = traces_root(args.traces, must_exist=False)
    if not traces.is_absolute():
        traces = (Path.cwd() / traces).resolve()  # the agent runs elsewhere: no relative roots
    extra: list[str] = []
    for name in args.objective_sets or []:
        extra += ["--set", name]
    if args.evaluator:
        extra += ["--evaluator", args.evaluator]
    setup = write_setup(
        args.agent,
        task_dir=task.dir,
        project=project,
        session_id=args.session or new_session_id(task.name),
        traces=traces,
        kernel_hint=task.source.relative_to(task.dir).as_posix(),
        extra_args=extra,
    )
    print(f"{setup.agent}: session {setup.session_id} (traces {traces})")
    for path in setup.written:
        print(f"  wrote {path}")
    for note in setup.notes:
        print(f"  note: {note}")
    print(f"start it in {project}:\n  {setup.start_line}")
    print(f"watch it:\n  kernelseek attach {setup.session_id} --traces {traces}")
    return 0
