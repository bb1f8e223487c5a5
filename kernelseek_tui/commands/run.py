"""`kernelseek run`: start a session (an agent improving a task's kernel), or resume one."""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelseek_tui.commands.common import add_traces_argument
from kernelseek_tui.decisions import DecisionConfig
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.questions_mode import QUESTIONS_MODES
from kernelseek_tui.session.tools import DEFAULT_SHELL_OUTPUT_CHARS, DEFAULT_SHELL_TIMEOUT_S

if TYPE_CHECKING:
    from kernelseek_tui.trace.schema import Event

AGENTS = ("claude", "tuner", "replay")
# Settings a --config file's [session] table may hold, and the flags they stand for.
SETTINGS = (
    "agent",
    "model",
    "budget_calls",
    "budget_usd",
    "budget_hours",
    "objective_sets",
    "repertoire",
    "plateau_evals",
    "failure_streak",
    "cooldown_evals",
    "finish_questions",
    "new_best_margin",
    "attach_wait",
    "shell_timeout",
    "shell_output",
    "unconfined_shell",
    "max_tokens",
    "thinking_budget",
    "no_thinking",
    "context_budget",
    "device",
    "no_compare",
    "eval_timeout",
    "seed",
    "tuner_margin",
    "gpus",
    "questions",
    "paired_timing",
)


_DECISION_DEFAULTS = DecisionConfig()  # what the help says an unset flag means


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run",
        help="start a session: an agent makes the task's kernel faster (or --resume one)",
        description="Start a session on TASK_DIR: the agent works in its own git worktree, every "
        "event goes to the trace, every verified candidate becomes a commit on the session "
        "branch. With --resume, continue a session that stopped or crashed.",
    )
    parser.add_argument("task_dir", nargs="?", type=Path, help="the task directory (task.toml)")
    parser.add_argument(
        "--agent",
        choices=AGENTS,
        help="who works (default: claude when $ANTHROPIC_API_KEY is set, else tuner)",
    )
    parser.add_argument(
        "--source",
        metavar="FILE",
        help="start from this kernel in the task directory (default: the task's source), "
        "e.g. sm90.cu",
    )
    parser.add_argument("--model", help="the Claude model (claude agent)")
    parser.add_argument("--budget-calls", type=int, metavar="N", help="stop after N tool calls")
    parser.add_argument("--budget-usd", type=float, metavar="X", help="stop after $X of model use")
    parser.add_argument("--budget-hours", type=float, metavar="H", help="stop after H hours")
    parser.add_argument("--detach", action="store_true", help="run in the background")
    add_traces_argument(parser)
    parser.add_argument(
        "--set",
        action="append",
        dest="objective_sets",
        metavar="NAME",
        help="the objective is this scenario set instead of the task's (repeatable), "
        "e.g. quick, for cheap sessions",
    )
    parser.add_argument("--session-id", metavar="ID", help="name the session (default: made up)")
    parser.add_argument("--resume", metavar="SESSION", help="continue this session")
    parser.add_argument("--replay-from", type=Path, metavar="DIR", help="session dir to replay")
    parser.add_argument(
        "--replay-history",
        nargs="?",
        const="",
        metavar="FILE",
        help="(--agent replay) replay a kernel's git history instead of a session: each commit "
        "of FILE (a kernel of the task directory; default the session's source) whose subject "
        "starts with '<stem> vN:' is written to the session's kernel and evaluated, oldest "
        "first, and each question the task's NOTES.md records as drawn ('Question: `id`') is "
        "asked after the version it follows. A replay of recorded work, not a model at work",
    )
    parser.add_argument("--repertoire", type=Path, metavar="FILE", help="question repertoire")
    parser.add_argument("--config", type=Path, metavar="FILE", help="TOML with a [session] table")
    decide = parser.add_argument_group("decision moments")
    decide.add_argument(
        "--plateau-evals",
        type=int,
        metavar="N",
        help=f"N objective evaluations without a new best are a plateau (default "
        f"{_DECISION_DEFAULTS.plateau_evals})",
    )
    decide.add_argument(
        "--failure-streak",
        type=int,
        metavar="N",
        help=f"N failing evaluations in a row raise a decision moment (default "
        f"{_DECISION_DEFAULTS.failure_streak})",
    )
    decide.add_argument(
        "--cooldown-evals",
        type=int,
        metavar="N",
        help=f"evaluations after a question before the next decision moment (default "
        f"{_DECISION_DEFAULTS.cooldown_evals})",
    )
    decide.add_argument(
        "--finish-questions",
        type=int,
        metavar="N",
        help="finish requests answered with a question before one ends the session (default 1)",
    )
    decide.add_argument(
        "--new-best-margin",
        type=float,
        metavar="F",
        help=f"how much faster than the best so far counts as a new best, as a fraction, where "
        f"neither evaluation measured its own noise (default {_DECISION_DEFAULTS.new_best_margin}"
        "; otherwise the gain must beat both evaluations' measured noise)",
    )
    decide.add_argument(
        "--questions",
        choices=QUESTIONS_MODES,
        metavar="MODE",
        help="who answers decision moments: repertoire (default: a person attached may answer "
        "first), person (wait --attach-wait for a person, attached or not, then the "
        "repertoire), person-then-repertoire (person until one goes unanswered), off (no "
        "questions, no draw_question tool: the control arm of an experiment)",
    )
    decide.add_argument(
        "--attach-wait",
        type=float,
        metavar="S",
        help="seconds to wait for a person's question when one is attached (default 60)",
    )
    tools = parser.add_argument_group("tools and agents")
    tools.add_argument(
        "--shell-timeout",
        type=float,
        metavar="S",
        help=f"seconds a run_shell command may take (default {DEFAULT_SHELL_TIMEOUT_S:g})",
    )
    tools.add_argument(
        "--shell-output",
        type=int,
        metavar="CHARS",
        help=f"characters of a command's output the agent reads (default "
        f"{DEFAULT_SHELL_OUTPUT_CHARS})",
    )
    tools.add_argument(
        "--unconfined-shell",
        action="store_true",
        default=None,
        help="let run_shell write outside the workspace and its TMPDIR (by default it is "
        "confined with Landlock where the machine allows: docs/RELIABILITY.md)",
    )
    tools.add_argument(
        "--max-tokens", type=int, metavar="N", help="output tokens per model response (claude)"
    )
    tools.add_argument(
        "--thinking-budget",
        type=int,
        metavar="N",
        help="thinking tokens per response, for models that take a budget (claude)",
    )
    tools.add_argument(
        "--no-thinking", action="store_true", default=None, help="ask the model not to think"
    )
    tools.add_argument(
        "--context-budget",
        type=int,
        metavar="TOKENS",
        help="prompt size above which old tool results are cleared (claude)",
    )
    tools.add_argument(
        "--tuner-margin",
        type=float,
        metavar="F",
        help="how much faster a knob point must be to move the tuner's search (default 0)",
    )
    tools.add_argument(
        "--seed", type=int, help="seed of the repertoire's draws among equally ranked questions"
    )
    judge = parser.add_argument_group("evaluation")
    judge.add_argument("--device", type=int, help="GPU index")
    judge.add_argument(
        "--gpus",
        metavar="SPEC",
        help="evaluate on several GPUs at once: auto (every visible GPU), N (the first N), or "
        "indices like 0,1 (counted as --device counts); default 1, one evaluation at a time. "
        "The tuner judges up to that many knob points at once",
    )
    judge.add_argument("--no-compare", action="store_true", default=None, help="skip the peers")
    judge.add_argument(
        "--paired-timing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time each objective evaluation sample by sample against the best so far and count "
        "a new best only when that paired gain beats its spread (and 0.5%%), measured in the same "
        "run (default: on wherever the task's judge evaluates one candidate at a time, so off "
        "with --gpus or a stand-in --evaluator; --paired-timing insists and is refused there; "
        "--no-paired-timing decides by each evaluation's own noise: docs/RELIABILITY.md)",
    )
    judge.add_argument(
        "--eval-timeout",
        type=float,
        metavar="S",
        help="seconds one evaluation may take (default: the task's eval_timeout_s)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only evaluations and the end")
    # For tests and demos without a GPU: MODULE:FUNCTION building a stand-in evaluator.
    parser.add_argument("--evaluator", help=argparse.SUPPRESS)
    parser.add_argument("--launch", type=Path, help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.launch is not None:
        return _run_launch(args.launch, quiet=args.quiet)
    settings = _settings(args)
    if args.resume:
        return _resume(args, settings)
    return _start(args, settings)


# -- settings -------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, over the --config file's [session] table."""
    from kernelseek_tui.session.config import load_config_file

    values: dict[str, Any] = {}
    if args.config is not None:
        table = load_config_file(args.config)
        unknown = sorted(set(table) - set(SETTINGS))
        if unknown:
            raise KernelseekError(f"{args.config}: unknown [session] key(s) {unknown}")
        values.update(table)
    for name in SETTINGS:
        value = getattr(args, name, None)
        if value is not None:
            values[name] = value
    return values


def _budgets(settings: dict[str, Any]) -> dict[str, Any]:
    return {
        key: settings[f"budget_{key}"]
        for key in ("calls", "usd", "hours")
        if settings.get(f"budget_{key}") is not None
    }


def _decisions(settings: dict[str, Any]) -> dict[str, Any]:
    keys = ("plateau_evals", "failure_streak", "cooldown_evals", "finish_questions")
    found = {k: settings[k] for k in (*keys, "new_best_margin") if settings.get(k) is not None}
    return found


def _agent_options(
    agent: str,
    settings: dict[str, Any],
    replay_from: Path | None,
    replay_history: dict[str, str] | None = None,
) -> dict:
    if agent != "replay" and (replay_from is not None or replay_history is not None):
        raise KernelseekError("--replay-from and --replay-history go with --agent replay")
    if agent == "claude":
        names = {
            "max_tokens": "max_tokens",
            "thinking_budget": "thinking_budget",
            "context_budget": "context_budget_tokens",
            "shell_timeout": "shell_timeout_s",
            "shell_output": "shell_output_chars",
            "seed": "seed",
        }
        options = {new: settings[old] for old, new in names.items() if old in settings}
        if settings.get("no_thinking"):
            options["thinking"] = False
        return options
    if agent == "tuner":
        return {"margin": settings["tuner_margin"]} if "tuner_margin" in settings else {}
    if replay_from is not None and replay_history is not None:
        raise KernelseekError("replay a session (--replay-from) or a history, not both")
    if replay_history is not None:
        return {"replay_history": replay_history}
    if replay_from is None:
        raise KernelseekError("--agent replay needs --replay-from SESSION_DIR or --replay-history")
    return {"replay_from": str(replay_from.expanduser().resolve())}


def _history_to_replay(task: Any, kernel: str, repertoire: Any) -> dict[str, str]:
    """What ``--replay-history`` replays (``ReplayAgent``'s ``replay_history``): ``kernel``'s
    history in the task directory's repository, up to the commit checked out now (pinned, so
    a resumed session replays the same plan), its NOTES.md, the session's repertoire."""
    from kernelseek_tui.history.git import resolve_commit, toplevel
    from kernelseek_tui.repertoire import find_repertoire

    task_dir = Path(task.dir).resolve()
    root = toplevel(task_dir)
    if root is None:
        raise KernelseekError(f"--replay-history: {task_dir} is not in a git repository")
    history_file = task_dir / (kernel or Path(task.source).relative_to(task.dir).as_posix())
    if not history_file.resolve().is_relative_to(root):
        raise KernelseekError(f"--replay-history: {history_file} is outside {root}")
    rev = resolve_commit("HEAD", root)
    if rev is None:
        raise KernelseekError(f"--replay-history: {root} has no commits")
    return {
        "repo": str(root),
        "kernel": history_file.resolve().relative_to(root).as_posix(),
        "notes": str(task_dir / "NOTES.md"),
        "repertoire": str(Path(find_repertoire(repertoire)).resolve()),
        "rev": rev,
        "session_kernel": Path(task.source).relative_to(task.dir).as_posix(),
    }


def _evaluator_options(settings: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if settings.get("device") is not None:
        options["device"] = settings["device"]
    if settings.get("no_compare"):
        options["compare"] = False
    if settings.get("eval_timeout") is not None:
        options["timeout_s"] = settings["eval_timeout"]
    return options


def new_session_id(task_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", task_name).strip("-")[:40] or "task"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{secrets.token_hex(2)}"


# -- starting -------------------------------------------------------------------------------


def _start(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.session.config import Budgets, SessionConfig
    from kernelseek_tui.task import load_task

    if args.task_dir is None:
        raise KernelseekError("give a TASK_DIR to start a session, or --resume SESSION")
    task = load_task(args.task_dir, args.source)
    agent = settings.get("agent") or ("claude" if os.environ.get("ANTHROPIC_API_KEY") else "tuner")
    if agent not in AGENTS:
        raise KernelseekError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    if agent == "claude" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise KernelseekError("the claude agent needs $ANTHROPIC_API_KEY (or use --agent tuner)")
    if args.evaluator is None:
        _require_evaluations(f"a {agent} session")
    if settings.get("paired_timing") is True:
        # Asked for by name: refused rather than ignored, which would end the pairing silently
        # (left to its default, a session pairs only where it can).
        if settings.get("gpus") is not None:
            raise KernelseekError("--paired-timing times one evaluation at a time: drop --gpus")
        if args.evaluator is not None:
            raise KernelseekError("--paired-timing needs the real judge, not an --evaluator")
    history = None
    if args.replay_history is not None:
        history = _history_to_replay(task, args.replay_history, settings.get("repertoire"))
    # Before any `git init` below: a history replay outside a repository is refused, not begun.
    agent_options = _agent_options(agent, settings, args.replay_from, history)
    _say_if_git_init(task.dir)
    root = traces_root(args.traces, must_exist=False)
    root.mkdir(parents=True, exist_ok=True)
    model = settings.get("model")
    if agent == "claude" and model is None:
        from kernelseek_tui.session.agents.claude import DEFAULT_MODEL

        model = DEFAULT_MODEL
    config = SessionConfig(
        task_dir=task.dir,
        traces_root=root.resolve(),
        session_id=args.session_id or new_session_id(task.name),
        agent=agent,
        model=model if agent == "claude" else None,
        objective_sets=settings.get("objective_sets"),
        budgets=Budgets(**_budgets(settings)),
        decisions=_decisions(settings),
        repertoire=Path(settings["repertoire"]).resolve() if settings.get("repertoire") else None,
        seed=settings.get("seed"),
        agent_options=agent_options,
        evaluator=args.evaluator,
        evaluator_options=_evaluator_options(settings),
        gpus=_gpus(settings),
        source=task.source.relative_to(task.dir).as_posix(),
        **_engine_options(settings),
    )
    if args.detach:
        return _detach(config.session_dir, {"mode": "start", "config": config.to_dict()})
    return _run_engine(config=config, session_dir=None, overrides=None, quiet=args.quiet)


def _require_evaluations(what: str) -> None:
    """Refuse a session whose evaluations cannot run here, before its branch, worktree or
    first model turn exist: otherwise each evaluation ends ``error`` and the session still ends
    "done". A stand-in ``--evaluator`` (tests, demos) needs no GPU and skips this."""
    from kernelseek_tui.evaluate.readiness import require_gpu_stack

    require_gpu_stack(what)


def _say_if_git_init(task_dir: Path) -> None:
    """Say so before a session makes a repository of a task directory that is in none.

    We tell rather than refuse: a task outside any repository is a supported start (the
    session needs commits to branch from), but a new ``.git`` in someone's folder must never
    appear unannounced.
    """
    from kernelseek_tui.history.git import toplevel

    if toplevel(task_dir) is None:
        print(
            f"note: {task_dir} is not in a git repository: the session runs `git init` there "
            f"and commits its files (remove {task_dir / '.git'} afterwards to undo)",
            file=sys.stderr,
        )


def _gpus(settings: dict[str, Any]) -> list[str] | None:
    """The GPUs ``--gpus`` names, or None for one evaluation at a time."""
    from kernelseek_tui.session.slots import resolve_gpus

    if settings.get("gpus") is None:
        return None
    if settings.get("device") is not None:
        raise KernelseekError("give --gpus or --device, not both")
    return resolve_gpus(str(settings["gpus"])) or None


def _engine_options(settings: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if settings.get("attach_wait") is not None:
        options["attach_wait_s"] = float(settings["attach_wait"])
    if settings.get("questions") is not None:
        options["questions_mode"] = str(settings["questions"])
    if settings.get("shell_timeout") is not None:
        options["shell_timeout_s"] = float(settings["shell_timeout"])
    if settings.get("shell_output") is not None:
        options["shell_output_chars"] = int(settings["shell_output"])
    if settings.get("unconfined_shell"):
        options["confine_shell"] = False
    if settings.get("paired_timing") is not None:
        paired = settings["paired_timing"]
        if not isinstance(paired, bool):  # a TOML string "false" must not turn it on
            raise KernelseekError(f"paired_timing must be true or false, not {paired!r}")
        options["paired_timing"] = paired
    return options


def _resume(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    from kernelseek_tui.paths import traces_root
    from kernelseek_tui.session.meta import find_session, read_meta

    if args.task_dir is not None:
        raise KernelseekError("--resume takes the session, not a TASK_DIR")
    if args.source is not None:
        raise KernelseekError("--source starts a new session; a resumed one goes on from its own")
    session_dir = find_session(traces_root(args.traces), args.resume)
    stored = read_meta(session_dir).config
    mode = settings.get("questions")
    if mode is not None and mode != stored.get("questions_mode", "repertoire"):
        raise KernelseekError(
            "--questions is fixed when a session starts: a session that changed arms midway "
            "would compare with neither"
        )
    if stored.get("agent") == "claude" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise KernelseekError("this session's claude agent needs $ANTHROPIC_API_KEY to go on")
    if not (args.evaluator or stored.get("evaluator")):
        _require_evaluations(f"session {session_dir.name}")
    overrides: dict[str, Any] = dict(_engine_options(settings))
    budgets = _budgets(settings)
    if budgets:
        overrides["budgets"] = {**(stored.get("budgets") or {}), **budgets}
    decisions = _decisions(settings)
    if decisions:
        overrides["decisions"] = {**(stored.get("decisions") or {}), **decisions}
    if args.evaluator:
        overrides["evaluator"] = args.evaluator
    if settings.get("gpus") is not None:
        overrides["gpus"] = _gpus(settings) or []  # [] (not None): back to one at a time
    if settings.get("model"):
        overrides["model"] = settings["model"]
    evaluator_options = _evaluator_options(settings)
    if evaluator_options:
        overrides["evaluator_options"] = {
            **(stored.get("evaluator_options") or {}),
            **evaluator_options,
        }
    if args.detach:
        launch = {"mode": "resume", "session_dir": str(session_dir), "overrides": overrides}
        return _detach(session_dir, launch)
    return _run_engine(config=None, session_dir=session_dir, overrides=overrides, quiet=args.quiet)


def _detach(session_dir: Path, launch: dict[str, Any]) -> int:
    from kernelseek_tui.paths import SessionPaths
    from kernelseek_tui.session.launch import spawn_detached

    if launch["mode"] == "start" and SessionPaths(session_dir).meta.exists():
        raise KernelseekError(f"session {session_dir.name!r} already exists: use --resume")
    pid = spawn_detached(session_dir, launch)
    name = session_dir.name
    print(f"session {name} is running in the background (pid {pid})")
    print(f"  attach:  kernelseek attach {name}")
    print(f"  list:    kernelseek ls --traces {session_dir.parent}")
    print(f"  log:     {SessionPaths(session_dir).engine_log}")
    return 0


def _run_launch(path: Path, *, quiet: bool) -> int:
    from kernelseek_tui.session.config import SessionConfig
    from kernelseek_tui.session.launch import read_launch

    launch = read_launch(path)
    if launch["mode"] == "start":
        config = SessionConfig.from_dict(launch["config"])
        return _run_engine(config=config, session_dir=None, overrides=None, quiet=quiet)
    return _run_engine(
        config=None,
        session_dir=Path(launch["session_dir"]),
        overrides=launch.get("overrides") or {},
        quiet=quiet,
    )


def _run_engine(
    *,
    config: Any,
    session_dir: Path | None,
    overrides: dict[str, Any] | None,
    quiet: bool,
) -> int:
    from kernelseek_tui.session.engine import Engine

    reporter = Reporter(quiet=quiet)
    if config is not None:
        agent = _make(config)
        engine = Engine.start(config, on_event=reporter)
    else:
        assert session_dir is not None
        engine = Engine.resume(session_dir, overrides=overrides, on_event=reporter)
        agent = _make(engine.config)
    print(
        f"session {engine.session_id}: {engine.config.agent} on {engine.task.name}, branch "
        f"{engine.history.branch}\n  workspace {engine.workspace}\n  trace {engine.session_dir}",
        flush=True,
    )
    outcome = engine.run(agent)
    stats = outcome.stats
    best = stats.get("best_speedup")
    print(
        f"session {outcome.session_id} ended: {outcome.reason}"
        + (f" ({outcome.detail})" if outcome.detail else "")
        + f"; {stats.get('evals', 0)} evaluations, {stats.get('commits', 0)} commits, best "
        + (f"{best:.3f}x" if isinstance(best, float) else "none"),
        flush=True,
    )
    return {"error": 1, "interrupted": 130}.get(outcome.reason, 0)


def _make(config: Any) -> Any:
    from kernelseek_tui.session.agents import make_agent

    options = dict(config.agent_options)
    if config.agent == "claude":
        options["model"] = config.model
    agent = make_agent(config.agent, **options)
    if config.agent == "replay":
        agent.steps()  # type: ignore[attr-defined]  # nothing to replay is an error now
    return agent


def _gpu_of(event: Event) -> str:
    """`` on GPU <index>`` for an eval timed on a known GPU (the worker's own word first)."""
    attrs = event.attrs_dict()
    device = attrs.get("device")
    device = device if isinstance(device, dict) else {}
    index = device.get("index", attrs.get("slot_device"))
    return f"  on GPU {index}" if index is not None else ""


class Reporter:
    """One line per event worth seeing, on stdout (the log file, when detached)."""

    def __init__(self, *, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stdout

    def __call__(self, event: Any) -> None:
        line = self.line(event)
        if line:
            print(line, file=self.stream, flush=True)

    def line(self, event: Any) -> str | None:
        kind = event.kind
        if kind == "eval":
            speed = "n/a" if event.speedup is None else f"{event.speedup:.3f}x"
            best = "the start" if event.best_speedup is None else f"{event.best_speedup:.3f}x"
            return (
                f"[{event.seq}] eval {event.verdict} {event.scenarios_passed}/"
                f"{event.scenarios_total}  speedup {speed}  best {best}" + _gpu_of(event)
            )
        if kind == "commit":
            return f"[{event.seq}] commit {event.text or event.git_sha}"
        if kind == "control":
            return f"[{event.seq}] {event.text}"
        if self.quiet:
            return None
        if kind == "tool_call":
            shown = (event.tool_input or "")[:100]
            return f"[{event.seq}] {event.tool_name} {shown}"
        if kind == "decision":
            return f"[{event.seq}] decision: {event.trigger}: {event.text}"
        if kind == "question":
            return (
                f"[{event.seq}] question ({event.source}, {event.trigger}): {event.question_text}"
            )
        if kind == "error":
            first = (event.text or "").strip().splitlines()[:1]
            return f"[{event.seq}] error: {first[0][:200] if first else ''}"
        if kind == "message" and event.role == "assistant" and event.text:
            return f"[{event.seq}] {event.text.splitlines()[0][:160]}"
        if kind == "compaction":
            return f"[{event.seq}] {event.text}"
        return None
