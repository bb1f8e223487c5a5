"""`kernelseek session start|eval|ask|finish|status|import`: the harness from a shell.

For a person at a shell, or any agent that only has one: ``start`` opens a session whose
agent is outside the process and runs its engine in the background; ``eval``, ``ask`` (draw
a question from the repertoire), ``finish`` and ``status`` are requests to it, exactly the
MCP server's tools, each a recorded tool call; ``import`` brings a Claude Code transcript in.
A question the harness puts (a decision moment's, a person's typed in the app) is printed
after the reply, on lines of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.commands.external_options import add_external_arguments, open_host
from kernelseek_tui.errors import KernelseekError

SESSION_ENV = "KERNELSEEK_SESSION"
STARTUP_WAIT_S = 60.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "session",
        help="use the harness from a shell: start a session, then eval, ask, finish",
        description="The MCP server's tools for a shell. `start` runs the session's engine in "
        "the background; the other commands send it one request each and print the reply.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    start = actions.add_parser("start", help="open a session and run its engine in the background")
    add_external_arguments(start)
    start.set_defaults(func=run_start)

    serve = actions.add_parser("serve")  # the background engine of start: not listed
    add_external_arguments(serve)
    serve.set_defaults(func=run_serve)

    evaluate = actions.add_parser("eval", help="judge the workspace's kernel (or --source FILE)")
    _add_which(evaluate)
    evaluate.add_argument("--set", dest="set_name", metavar="NAME", help="only this set")
    evaluate.add_argument(
        "--source", type=Path, metavar="FILE", help="copy this file over the kernel first"
    )
    evaluate.add_argument(
        "--knob", action="append", default=[], metavar="NAME=VALUE", help="a tunable knob"
    )
    evaluate.set_defaults(func=run_request)

    ask = actions.add_parser("ask", help="draw a question from the harness's repertoire")
    _add_which(ask)
    ask.set_defaults(func=run_request)

    finish = actions.add_parser("finish", help="say you are done (may be answered with a question)")
    _add_which(finish)
    finish.add_argument("reason", nargs="?", default="done", help="why")
    finish.set_defaults(func=run_request)

    status = actions.add_parser("status", help="the session: kernel file, evaluations, best")
    _add_which(status)
    status.set_defaults(func=run_request)

    imported = actions.add_parser("import", help="bring a Claude Code transcript into the trace")
    _add_which(imported)
    imported.add_argument("transcript", type=Path, help="the Claude Code .jsonl transcript")
    imported.set_defaults(func=run_request)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _add_which(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session", metavar="ID",
        help=f"the session (default: ${SESSION_ENV}, else the newest running external one)",
    )  # fmt: skip
    add_traces_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the reply as one JSON object")
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="give up waiting for the reply after S seconds"
    )


def find_running_session(traces: str | None, ref: str | None) -> Path:
    """The session a request goes to: named, from the environment, else the newest running
    session whose agent is outside the process."""
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.session.meta import find_session, is_live, list_sessions

    root = traces_root(traces)
    ref = ref or os.environ.get(SESSION_ENV)
    if ref:
        return find_session(root, ref)
    running = [s for s in list_sessions(root) if s.meta.agent == "external" and is_live(s.meta)]
    if not running:
        raise KernelseekError(
            f"no running external session under {root}: start one with "
            "`kernelseek session start TASK_DIR`"
        )
    return running[-1].dir


# -- start and the background engine --------------------------------------------------------


def run_start(args: argparse.Namespace) -> int:
    from kernelseek_tui.external.host import new_session_id
    from kernelseek_tui.paths import SessionPaths, traces_root
    from kernelseek_tui.session.meta import is_live, read_meta
    from kernelseek_tui.task import load_task

    root = traces_root(args.traces, must_exist=False).resolve()
    if args.session is None:
        if args.task_dir is None:
            raise KernelseekError("give a TASK_DIR to start a session, or --session ID")
        args.session = new_session_id(load_task(args.task_dir, args.source).name)
    session_dir = root / args.session
    session_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "kernelseek_tui",
        "session",
        "serve",
        "--session",
        args.session,
        "--traces",
        str(root),
    ]
    argv += _forwarded(args)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    log = SessionPaths(session_dir).engine_log
    with log.open("ab") as out:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + STARTUP_WAIT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-10:]
            raise KernelseekError("the session's engine exited at once:\n" + "\n".join(tail))
        try:
            meta = read_meta(session_dir)
        except KernelseekError:
            meta = None
        if meta is not None and meta.pid == child.pid and is_live(meta):
            print(f"session {args.session} is running (pid {child.pid})")
            print(f"  kernel:  {Path(meta.worktree) / _task_subpath(meta)}")
            print(f"  judge:   kernelseek session eval --session {args.session}")
            print(f"  watch:   kernelseek attach {args.session}")
            return 0
        time.sleep(0.1)
    raise KernelseekError(f"the session's engine (pid {child.pid}) did not start; see {log}")


def _task_subpath(meta: Any) -> str:
    """The kernel's path inside the worktree, from the task directory and its source."""
    repo = Path(meta.repo)
    task_dir = Path(meta.task_dir)
    try:
        sub = task_dir.relative_to(repo)
    except ValueError:
        sub = Path(".")
    source = (meta.config or {}).get("source") or ""
    return str(sub / source)


def _forwarded(args: argparse.Namespace) -> list[str]:
    out: list[str] = [str(Path(args.task_dir).resolve())] if args.task_dir else []
    for name in (
        "source",
        "plateau_evals",
        "failure_streak",
        "finish_questions",
        "attach_wait",
        "device",
        "evaluator",
    ):
        value = getattr(args, name)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    if args.repertoire is not None:
        out += ["--repertoire", str(args.repertoire.resolve())]
    for name in args.objective_sets or []:
        out += ["--set", name]
    return out


def run_serve(args: argparse.Namespace) -> int:
    """The background engine of ``start``: requests come through the mailbox only."""
    import signal

    from kernelseek_tui.commands.run import Reporter
    from kernelseek_tui.external.transcript_sync import TranscriptSync

    host = open_host(args, transcripts=TranscriptSync(Path.cwd()), on_event=Reporter(quiet=True))

    def on_term(signum: int, frame: Any) -> None:
        host.leave("terminated", "SIGTERM")

    signal.signal(signal.SIGTERM, on_term)
    host.start()
    outcome = host.wait()
    print(f"session {host.session_id} ended: {outcome.reason if outcome else 'unknown'}")
    return 0


# -- requests ------------------------------------------------------------------------------


def run_request(args: argparse.Namespace) -> int:
    from kernelseek_tui.external.mailbox import send_request

    session_dir = find_running_session(args.traces, args.session)
    tool, tool_input, transcript = _request_of(args)
    reply = send_request(
        session_dir, tool, tool_input, via="shell", transcript=transcript, timeout_s=args.timeout
    )
    if args.json:
        print(json.dumps(reply.to_dict()))
    else:
        print(reply.full_text())
    return 1 if reply.is_error else 0


def _request_of(args: argparse.Namespace) -> tuple[str, dict[str, Any], str | None]:
    if args.action == "eval":
        tool_input: dict[str, Any] = {}
        if args.set_name:
            tool_input["set"] = args.set_name
        if args.source is not None:
            tool_input["path"] = str(args.source.resolve())
        if args.knob:
            tool_input["knobs"] = _knobs(args.knob)
        return "evaluate", tool_input, None
    if args.action == "ask":
        return "draw_question", {}, None
    if args.action == "finish":
        return "finish", {"reason": args.reason}, None
    if args.action == "import":
        if not args.transcript.is_file():
            raise KernelseekError(f"{args.transcript}: no such file")
        return "import_transcript", {}, str(args.transcript.resolve())
    return "status", {}, None


def _knobs(pairs: list[str]) -> dict[str, int]:
    knobs: dict[str, int] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            knobs[name.strip()] = int(value)
        except ValueError:
            raise KernelseekError(f"--knob {pair!r}: give NAME=INTEGER") from None
    return knobs
