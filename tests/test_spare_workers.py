"""Spare workers (``evaluate.spare``): where evaluations come in a loop, the next one's worker is
started ahead and waits, ready, for its request; every worker still serves one evaluation only.

A stand-in worker plays the GPU and the build is stubbed, so this runs on a CPU machine. The
stand-in puts its pid and the moment its code began (``time.monotonic``: one clock for every
process of the machine) in its device line and its log; the moment each worker process had
been started is noted as its start returns (``worker_starts``). The tests compare those with
moments the test itself notes, so they state orderings, never durations.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.evaluate import api, pool
from kernelseek_tui.evaluate.build import BuildResult
from kernelseek_tui.evaluate.pool import EvalPool
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.evaluate.retiring import RetiringWorkers
from kernelseek_tui.evaluate.spare import SpareKey, SpareWorkers, start_worker
from kernelseek_tui.task import Task, load_task
from tests.test_session_support import make_task_repo, read_events, session_config

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"

STAND_IN = """
import json, os, sys, time
spawned = time.monotonic()
def log(event, **fields):
    with open(os.environ["STAND_IN_LOG"], "a") as out:
        out.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\\n")
log("spawned", at=spawned, argv=sys.argv[1:])
if os.environ.get("STAND_IN_SETUP_S"):  # a slow set-up, before the request is read
    time.sleep(float(os.environ["STAND_IN_SETUP_S"]))
    log("ready")
text = sys.stdin.read()
if not text:
    sys.exit(0)
request = json.loads(text)
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(request)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
emit({"type": "device", "name": "stand-in", "index": "0", "pid": os.getpid(),
      "spawned": spawned})
for s in request["scenarios"]:
    emit({"type": "scenario", "baseline_ms": 1.0, "result": {"name": s["name"], "set": s["set"],
          "fields": s["fields"], "passed": True, "ms": 1.0}})
emit({"type": "done"})
log("served", candidate=request["candidate"])
if os.environ.get("STAND_IN_EXIT_S"):  # a slow exit, after the results (a context torn down)
    time.sleep(float(os.environ["STAND_IN_EXIT_S"]))
log("left", at=time.monotonic())
"""


def fake_build(source: str, **_: Any) -> BuildResult:
    # Each source its own library name, so the log says which candidate a process judged.
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    return BuildResult(ok=True, library=Path(f"/stand-in/{digest}.so"), key=digest)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The stand-in worker and a cache of spares of this test's own; yields the worker log."""
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(STAND_IN))
    log = tmp_path / "workers.jsonl"
    spares = SpareWorkers()
    retiring = RetiringWorkers()
    monkeypatch.setattr(api, "RETIRING", retiring)
    monkeypatch.setattr(api, "WORKER_COMMAND", [sys.executable, str(script)])
    monkeypatch.setattr(api, "build", fake_build)
    monkeypatch.setattr(api, "SPARES", spares)
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("STAND_IN_SETUP_S", raising=False)
    monkeypatch.delenv("STAND_IN_EXIT_S", raising=False)
    yield log
    retiring.wait_all()
    spares.close()


@pytest.fixture
def worker_starts(monkeypatch: pytest.MonkeyPatch) -> dict[int, float]:
    """pid -> the moment its worker process existed (noted as ``start_worker`` returned); the
    stand-in's own first moment comes later, after the interpreter has started."""
    starts: dict[int, float] = {}

    def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        process = start_worker(command, env)
        starts[process.pid] = time.monotonic()
        return process

    monkeypatch.setattr(api, "start_worker", start)
    return starts


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _wait_for(path: Path, found: Callable[[list[dict[str, Any]]], bool]) -> None:
    """Wait until the log shows what ``found`` looks for (a generous bound, never a measure)."""
    deadline = time.monotonic() + 60
    while not found(_log(path)):
        assert time.monotonic() < deadline, _log(path)
        time.sleep(0.05)


def _left(path: Path, pid: int) -> list[dict[str, Any]]:
    """The log's "left" line of worker ``pid`` (its last act before exiting), if written yet."""
    return [e for e in _log(path) if e["event"] == "left" and e["pid"] == pid]


def _candidate(tmp_path: Path, n: int) -> Path:
    source = tmp_path / f"candidate{n}.cu"
    source.write_text((TASK_DIR / "baseline.cu").read_text() + f"\n// candidate {n}\n")
    return source


def _children() -> set[int]:
    """The pids of this process's children, zombies included (read from /proc)."""
    me = str(os.getpid())
    found: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if after_name[1] == me:  # state, then the parent's pid
            found.add(int(stat.parent.name))
    return found


class _CallTimes:
    """Wraps an ``evaluate`` to note the moment each evaluation was asked for."""

    def __init__(self, evaluate: Callable[..., EvalResult]) -> None:
        self.evaluate = evaluate
        self.asked: list[float] = []

    def __call__(self, *args: Any, **kwargs: Any) -> EvalResult:
        self.asked.append(time.monotonic())
        return self.evaluate(*args, **kwargs)


def _evaluate(task: Task, source: Path, **kwargs: Any) -> EvalResult:
    """An evaluation, and then its worker's exit, which is reaped after the result returns (a
    caller's next step, seconds later, finds it gone)."""
    result = api.evaluate(task, source, sets=["quick"], **kwargs)
    assert result.verdict == "pass", result.reasons
    api.RETIRING.wait_all()
    return result


# -- the loop: each evaluation's worker was started before it was asked for -----------------


def test_the_second_evaluation_is_served_by_a_worker_started_before_it_was_asked(
    stand_in: Path, worker_starts: dict[int, float], tmp_path: Path
) -> None:
    task = load_task(TASK_DIR)
    before_first = time.monotonic()
    first = _evaluate(task, _candidate(tmp_path, 1), prestart_next=True)
    asked = time.monotonic()
    second = _evaluate(task, _candidate(tmp_path, 2), prestart_next=True)
    assert first.device["spawned"] > before_first  # the first had no spare: started fresh
    assert worker_starts[second.device["pid"]] < asked  # the second's was started ahead
    assert second.device["pid"] != first.device["pid"]
    # It is the spare's command: it was told what to ready ahead (the task, and its peers).
    spawned = {e["pid"]: e for e in _log(stand_in) if e["event"] == "spawned"}
    argv = spawned[second.device["pid"]]["argv"]
    assert argv[argv.index("--task-dir") + 1] == str(TASK_DIR) and "--peers" in argv


def test_no_process_serves_two_evaluations(stand_in: Path, tmp_path: Path) -> None:
    task = load_task(TASK_DIR)
    results = [_evaluate(task, _candidate(tmp_path, n), prestart_next=True) for n in range(4)]
    pids = [r.device["pid"] for r in results]
    assert len(set(pids)) == 4
    served = [e for e in _log(stand_in) if e["event"] == "served"]
    assert sorted(e["pid"] for e in served) == sorted(pids)  # one line per process
    assert len({e["candidate"] for e in served}) == 4  # each process its own candidate
    # The loop's last spare waits, unused, for an evaluation that has not come.
    [waiting] = api.SPARES.processes()
    assert waiting.poll() is None and waiting.pid not in pids


def test_a_dead_spare_is_not_used_and_the_evaluation_still_passes(
    stand_in: Path, worker_starts: dict[int, float], tmp_path: Path
) -> None:
    task = load_task(TASK_DIR)
    _evaluate(task, _candidate(tmp_path, 1), prestart_next=True)
    [spare] = api.SPARES.processes()
    os.killpg(spare.pid, signal.SIGKILL)
    spare.wait()
    asked = time.monotonic()
    result = _evaluate(task, _candidate(tmp_path, 2))
    assert spare.pid in worker_starts and result.device["pid"] != spare.pid
    assert worker_starts[result.device["pid"]] > asked  # started for it, once it was asked
    assert api.SPARES.processes() == []  # the dead one was dropped, not kept


def test_without_prestarting_no_process_outlives_the_evaluation(
    stand_in: Path, tmp_path: Path
) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads the process table from /proc")
    task = load_task(TASK_DIR)
    before = _children()
    result = _evaluate(task, _candidate(tmp_path, 1))
    assert _children() - before == set()
    assert api.SPARES.processes() == []
    started = [e["pid"] for e in _log(stand_in) if e["event"] == "spawned"]
    assert started == [result.device["pid"]]
    # The same look sees the spare an evaluation with prestarting leaves.
    _evaluate(task, _candidate(tmp_path, 2), prestart_next=True)
    assert _children() - before == {p.pid for p in api.SPARES.processes()} != set()


# -- the watchdog's clock starts with the request -----------------------------------------


def test_a_spares_set_up_before_the_request_is_not_the_evaluations_time(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each worker sets up for 6 s before it reads a request; the limit is 3 s of silence.
    monkeypatch.setenv("STAND_IN_SETUP_S", "6")
    task = load_task(TASK_DIR)
    fresh = api.evaluate(
        task, _candidate(tmp_path, 1), sets=["quick"], stall_timeout_s=3, prestart_next=True
    )
    assert fresh.verdict == "fail" and "no progress for 3 s" in fresh.reasons[0]
    assert fresh.reasons[0].endswith("(setup)")
    # The spare it left sets up as slowly, but before it is asked: once it is ready, it serves
    # an evaluation under the same limit, which counts from the request.
    [spare] = api.SPARES.processes()
    _wait_for(stand_in, lambda log: {"event": "ready", "pid": spare.pid} in log)
    served = _evaluate(task, _candidate(tmp_path, 2), stall_timeout_s=3)
    assert served.device["pid"] == spare.pid


# -- the callers that loop pass prestart_next -----------------------------------------------


def test_a_pools_evaluations_each_leave_the_next_ones_worker_ready(
    stand_in: Path,
    worker_starts: dict[int, float],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _CallTimes(api.evaluate)
    monkeypatch.setattr(pool, "evaluate", calls)
    task = load_task(TASK_DIR)
    with EvalPool(["0"]) as one_gpu:
        results = one_gpu.map(
            [(task, _candidate(tmp_path, n), {"sets": ["quick"]}) for n in range(3)]
        )
    assert [r.verdict for r in results] == ["pass"] * 3
    assert len({r.device["pid"] for r in results}) == 3
    for result, asked in list(zip(results, calls.asked, strict=True))[1:]:
        assert worker_starts[result.device["pid"]] < asked


def test_a_sessions_evaluations_each_leave_the_next_ones_worker_ready(
    stand_in: Path,
    worker_starts: dict[int, float],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelseek_tui.session.agents.tuner import TunerAgent
    from kernelseek_tui.session.config import Budgets
    from kernelseek_tui.session.engine import Engine

    calls = _CallTimes(api.evaluate)
    monkeypatch.setattr(api, "evaluate", calls)  # the session's evaluator imports it per call
    config = session_config(
        make_task_repo(tmp_path / "user"),
        tmp_path / "traces",
        "spares",
        agent="tuner",
        objective_sets=["quick"],
        budgets=Budgets(calls=3),
    )
    engine = Engine.start(config)  # no stand-in evaluator: the real one
    engine.run(TunerAgent())
    evals = [e.attrs_dict() for e in read_events(engine.session_dir) if e.kind == "eval"]
    assert len(evals) == len(calls.asked) == 3
    assert len({attrs["device"]["pid"] for attrs in evals}) == 3
    for attrs, asked in list(zip(evals, calls.asked, strict=True))[1:]:
        assert worker_starts[attrs["device"]["pid"]] < asked


# -- the cache itself -----------------------------------------------------------------------

WAITER = "import sys, time; sys.stdin.read(); time.sleep(600)"  # outlives its stdin


@pytest.fixture
def start_waiter() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Starts waiters as spares; kills whatever is left of them when the test ends (a failing
    test must not leave a process sleeping on)."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        started.append(start_worker([sys.executable, "-c", WAITER], dict(os.environ)))
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


KEY = SpareKey(visible_devices="0", task_dir="task", command=("worker",))


def test_a_spare_is_handed_out_once(start_waiter: Callable[[], Any]) -> None:
    spares = SpareWorkers()
    spares.prestart(KEY, start_waiter)
    [held] = spares.processes()
    spares.prestart(KEY, start_waiter)  # one per key: nothing new
    assert spares.processes() == [held]
    other = SpareKey(visible_devices="1", task_dir="task", command=("worker",))
    assert spares.take(other) is None
    assert spares.take(KEY) is held
    assert spares.take(KEY) is None and spares.processes() == []


def test_a_spare_older_than_the_limit_is_killed_not_used(
    start_waiter: Callable[[], Any],
) -> None:
    now = [0.0]
    spares = SpareWorkers(max_age_s=600, clock=lambda: now[0])
    spares.prestart(KEY, start_waiter)
    [old] = spares.processes()
    now[0] = 600.5
    assert spares.take(KEY) is None
    assert old.returncode == -signal.SIGKILL
    # prestart replaces a stale spare the same way.
    spares.prestart(KEY, start_waiter)
    [second] = spares.processes()
    now[0] = 1201.5
    spares.prestart(KEY, start_waiter)
    [third] = spares.processes()
    assert third is not second and second.returncode == -signal.SIGKILL
    spares.close()


def test_close_kills_every_spare(start_waiter: Callable[[], Any]) -> None:
    spares = SpareWorkers()
    spares.prestart(KEY, start_waiter)
    spares.prestart(SpareKey(visible_devices="1", task_dir="task", command=("w",)), start_waiter)
    held = spares.processes()
    assert len(held) == 2 and all(p.poll() is None for p in held)
    spares.close()
    assert [p.returncode for p in held] == [-signal.SIGKILL] * 2
    assert spares.processes() == []


def test_spares_are_killed_when_the_interpreter_exits(tmp_path: Path) -> None:
    script = f"""
import os, sys
from kernelseek_tui.evaluate.spare import SpareKey, SpareWorkers, start_worker
spares = SpareWorkers()
command = [sys.executable, "-c", {WAITER!r}]
spares.prestart(SpareKey("0", "task", ("worker",)), lambda: start_worker(command, dict(os.environ)))
print(spares.processes()[0].pid)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    pid = int(done.stdout)
    try:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:  # without the exit hook it would sleep on, in its own group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


# -- the real worker on a machine without a GPU stack ----------------------------------------


def _real_worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelseek_tui.evaluate.worker", *args]


def _cupy_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(_cupy_importable(), reason="answers without a GPU stack only")
def test_the_real_worker_started_ahead_still_answers_no_gpu_stack_cleanly() -> None:
    request = {"task_dir": str(TASK_DIR), "seed": 1, "scenarios": []}
    done = subprocess.run(
        _real_worker("--task-dir", str(TASK_DIR), "--peers", "--standby-limit", "600"),
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [
        {"type": "fatal", "reason": "no GPU stack: No module named 'cupy'", "kind": "error"}
    ]
    assert done.returncode == 3


@pytest.mark.skipif(_cupy_importable(), reason="answers without a GPU stack only")
def test_the_real_worker_seals_its_lines_with_the_requests_key() -> None:
    from kernelseek_tui.evaluate.protocol_seal import KEY_FIELD, ForgedLine, new_key, open_line

    key = new_key()
    request = {"task_dir": str(TASK_DIR), "seed": 1, "scenarios": [], KEY_FIELD: key}
    done = subprocess.run(
        _real_worker(),
        input=json.dumps(request).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert [open_line(key, line)["type"] for line in lines] == ["fatal"]
    with pytest.raises(ForgedLine):
        open_line(new_key(), lines[0])


def test_the_real_worker_given_up_before_its_request_exits_without_a_line() -> None:
    closed = subprocess.run(
        _real_worker("--task-dir", str(TASK_DIR)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert (closed.returncode, closed.stdout) == (0, "")
    # Its stdin open but silent: it leaves on its own once its standby limit has passed.
    waiting = subprocess.Popen(
        _real_worker("--standby-limit", "0.5"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert waiting.wait(timeout=120) == 0  # stdin still open: it left on its own
        assert waiting.stdout is not None and waiting.stdout.read() == b""
    finally:
        waiting.kill()
        if waiting.stdin is not None:
            waiting.stdin.close()


# -- the worker's exit is off the evaluation's path -------------------------------------------


def test_the_result_returns_before_the_worker_has_exited(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_EXIT_S", "2")
    task = load_task(TASK_DIR)
    result = api.evaluate(task, _candidate(tmp_path, 1), sets=["quick"])
    assert result.verdict == "pass", result.reasons
    pid = result.device["pid"]
    assert {"event": "served", "pid": pid} in [
        {"event": e["event"], "pid": e["pid"]} for e in _log(stand_in)
    ]
    assert not _left(stand_in, pid)
    assert "worker_released" in result.timeline
    api.RETIRING.wait_all()
    assert _left(stand_in, pid)


def test_the_next_evaluation_on_the_gpu_starts_after_the_last_worker_has_left(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_EXIT_S", "1")
    task = load_task(TASK_DIR)
    first = api.evaluate(task, _candidate(tmp_path, 1), sets=["quick"])
    second = api.evaluate(task, _candidate(tmp_path, 2), sets=["quick"])
    assert first.verdict == second.verdict == "pass"
    [left] = _left(stand_in, first.device["pid"])
    assert second.device["spawned"] > left["at"]


def test_a_retired_worker_that_does_not_leave_is_killed() -> None:
    retiring = RetiringWorkers(exit_limit_s=0.2)
    process = start_worker([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ))
    retiring.retire("7", process)
    assert retiring.pending("7") == 1
    retiring.wait("7")
    assert process.returncode == -signal.SIGKILL
    assert retiring.pending("7") == 0


def test_a_program_that_ends_waits_for_its_retired_workers(tmp_path: Path) -> None:
    """The reapers are daemon threads; at interpreter exit the retired workers are still
    waited for (and one that overstays is killed), never left running."""
    marker = tmp_path / "left"
    program = textwrap.dedent(f"""
        import sys, time
        from kernelseek_tui.evaluate.retiring import RetiringWorkers
        from kernelseek_tui.evaluate.spare import start_worker
        retiring = RetiringWorkers(exit_limit_s=30)
        code = "import time, pathlib; time.sleep(1); pathlib.Path({str(marker)!r}).touch()"
        retiring.retire(None, start_worker([sys.executable, "-c", code], {{}}))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=60)
    assert marker.exists()  # the program ended only once its worker had


def test_a_worker_asked_for_another_isolation_than_its_tasks_readies_for_that_one() -> None:
    # A spare readies the kernels' processes only when it knows the request will isolate: its
    # command says so where the evaluation's isolation is not the task's, and the command is
    # part of the spare's key, so it never serves a request of the other kind.
    from kernelseek_tui.evaluate.worker import _options

    task = load_task(TASK_DIR)
    assert task.isolation == "process"
    plain = api.worker_command(task, peers=True, isolation="process")
    loaded_beside = api.worker_command(task, peers=True, isolation="in-process")
    assert "--isolation" not in plain and api.worker_command(task, peers=True) == plain
    assert loaded_beside[loaded_beside.index("--isolation") + 1] == "in-process"
    keys = {SpareKey("0", str(task.dir), tuple(command)) for command in (plain, loaded_beside)}
    assert len(keys) == 2
    assert _options(loaded_beside[loaded_beside.index("--task-dir") :]).isolation == "in-process"
    assert _options(plain[plain.index("--task-dir") :]).isolation is None
