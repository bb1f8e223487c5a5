"""Helpers the session and agent tests share (no tests here): task repositories, stand-in
evaluators, trace readers. Importable by subprocesses as ``tests.test_session_support``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from kernelseek_tui.task import Task
from kernelseek_tui.trace.schema import Event

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "kernels" / "flash_fwd"
TASK_SUBDIR = "kernels/flash_fwd"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=User", "-c", "user.email=user@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def make_task_repo(root: Path) -> Path:
    """A user's repository holding a copy of the flash_fwd task; returns the task directory."""
    task_dir = root / TASK_SUBDIR
    shutil.copytree(FLASH, task_dir)
    git(root, "init", "--quiet")
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "-m", "the task")
    return task_dir


def make_result(
    speedup: float | None = 1.0,
    *,
    verdict: str = "pass",
    total: int = 4,
    failed: int = 0,
    vs_fa3: float | None = 0.5,
    eval_id: str | None = None,
    sets: list[str] | None = None,
) -> EvalResult:
    """An EvalResult as the evaluator would give: ``failed`` scenarios failing."""
    scenarios = [
        ScenarioResult(
            name=f"scenario-{i}",
            set="quick",
            fields={"seqlen_q": 128 * (i + 1)},
            passed=i >= failed,
            reasons=[] if i >= failed else [f"max error {0.5 + i} > tolerance 0.01"],
            speedup=speedup,
        )
        for i in range(total)
    ]
    if verdict != "pass" and failed == 0 and total:
        scenarios[0].passed = False
        scenarios[0].reasons = ["wrong"]
        failed = 1
    peers = {"fa3": vs_fa3} if vs_fa3 is not None else {}
    summary = EvalSummary(
        passed=total - failed, total=total, geomean_speedup=speedup, vs_peers=peers
    )
    return EvalResult(
        eval_id=eval_id or os.urandom(6).hex(),
        verdict=verdict,  # type: ignore[arg-type]
        scenarios=scenarios,
        summary=summary,
        sets=sets or ["quick"],
    )


def knob_speed(knobs: dict[str, int]) -> float:
    """A speed landscape with one best point (BLOCK_M=128, BLOCK_N=32) and a local ridge."""
    m = knobs.get("BLOCK_M", 64)
    n = knobs.get("BLOCK_N", 64)
    table = {
        (32, 32): 0.7, (32, 64): 0.8, (32, 128): 0.75,
        (64, 32): 1.1, (64, 64): 1.0, (64, 128): 0.9,
        (128, 32): 1.6, (128, 64): 1.3, (128, 128): 0.6,
    }  # fmt: skip
    return table[(m, n)]


class KnobEvaluator:
    """Speed depends on the knobs only; records every call."""

    def __init__(self, fail: Callable[[dict[str, int]], bool] | None = None) -> None:
        self.calls: list[dict[str, int]] = []
        self.sets: list[list[str] | None] = []
        self.fail = fail or (lambda knobs: False)

    def __call__(
        self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        point = {"BLOCK_M": 64, "BLOCK_N": 64, **(knobs or {})}
        self.calls.append(point)
        self.sets.append(sets)
        if self.fail(point):
            return make_result(None, verdict="fail", failed=2)
        return make_result(knob_speed(point))


def counting_evaluator(task: Task, **options: Any) -> KnobEvaluator:
    """For engine subprocesses (``--evaluator``): a KnobEvaluator that appends each call to the
    file $KS_TEST_COUNTER before sleeping $KS_TEST_DELAY seconds, a visible side effect."""
    counter = Path(os.environ["KS_TEST_COUNTER"])
    delay = float(os.environ.get("KS_TEST_DELAY", "0"))
    inner = KnobEvaluator()

    class Counting(KnobEvaluator):
        def __call__(
            self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
        ) -> EvalResult:
            point = {"BLOCK_M": 64, "BLOCK_N": 64, **(knobs or {})}
            with counter.open("a") as handle:
                handle.write(json.dumps(point, sort_keys=True) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            time.sleep(delay)
            return inner(source, sets, knobs=knobs)

    return Counting()


def source_evaluator(task: Task, **options: Any) -> Callable[..., EvalResult]:
    """For CLI tests: the speed is read from a ``// speed X`` line of the kernel source, and
    a ``// broken`` line fails it."""

    def judge(
        source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        text = source.read_text()
        if "// broken" in text:
            return make_result(None, verdict="fail", failed=1)
        speed = 1.0
        for line in text.splitlines():
            if line.startswith("// speed "):
                speed = float(line.split()[2])
        digest = hashlib.sha1(text.encode()).hexdigest()[:8]
        return make_result(speed, eval_id=f"src-{digest}")

    return judge


def read_events(session_dir: Path) -> list[Any]:
    from kernelseek_tui.trace.reader import read_session, table_to_events

    return table_to_events(read_session(session_dir))


def objective_eval(seq: int, speedup: float, **attrs: Any) -> Event:
    """A passing, verified evaluation of the objective as an eval event, ``attrs`` added."""
    attrs = {"objective": True, "verified": True, **attrs}
    return Event(
        session_id="s", seq=seq, kind="eval", verdict="pass", speedup=speedup,
        attrs=json.dumps(attrs),
    )  # fmt: skip


def dying_on_call(
    call: int, original: Callable[..., Any], crash: type[BaseException]
) -> Callable[..., Any]:
    """``original``, except that its ``call``-th call raises ``crash`` (the process dying)."""
    calls = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == call:
            raise crash
        return original(*args, **kwargs)

    return wrapper


def edit_step(mark: str) -> tuple[Any, ...]:
    """A ScriptedAgent step that adds the line ``// mark`` to the kernel: the next evaluation
    judges new code (the same code evaluated again is no new candidate)."""
    include = "#include <math.h>"
    change = {"path": "baseline.cu", "old_text": include, "new_text": f"{include}\n// {mark}"}
    return ("tool", "edit_file", change)


class ScriptedAgent:
    """Runs a fixed list of steps: ("tool", name, input), ("text", words) for limit claims,
    ("end_turn", reason) for a finish request without the tool. Records each outcome."""

    name = "scripted"
    raises_decisions = True

    def __init__(self, steps: list[tuple[Any, ...]]) -> None:
        self.steps = steps
        self.outcomes: list[Any] = []
        self.delivered: list[str] = []

    def run(self, ctx: Any) -> None:
        done = sum(1 for e in ctx.past_events if e.kind == "tool_call")
        for step in self.steps[done:]:
            if step[0] == "tool":
                self.outcomes.append(ctx.call_tool(step[1], step[2]))
            elif step[0] == "text":
                ctx.observe_text(step[1])
            elif step[0] == "end_turn" and ctx.request_finish(step[1]):
                ctx.checkpoint()
            self.delivered.extend(ctx.take_questions())


class SequenceEvaluator:
    """Returns the given speedups in order (None: a failing candidate); records the calls."""

    def __init__(self, speeds: list[float | None]) -> None:
        self.speeds = list(speeds)
        self.calls: list[tuple[Path, list[str] | None, dict[str, int] | None]] = []

    def __call__(
        self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        self.calls.append((source, sets, knobs))
        speed = self.speeds[(len(self.calls) - 1) % len(self.speeds)]
        if speed is None:
            return make_result(None, verdict="fail", failed=2)
        return make_result(speed)


def session_config(task_dir: Path, traces: Path, session_id: str = "s1", **changes: Any) -> Any:
    from kernelseek_tui.session.config import SessionConfig

    values: dict[str, Any] = {
        "task_dir": task_dir,
        "traces_root": traces,
        "session_id": session_id,
        "agent": "scripted",
        "repertoire": ROOT / "repertoire.toml",
        "seed": 7,
    }
    values.update(changes)
    return SessionConfig(**values)
