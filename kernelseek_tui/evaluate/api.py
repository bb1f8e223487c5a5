"""``evaluate()``: the judge's front door. Checks and builds here, runs the GPU work in a worker.

The static checks and the build need no GPU, so a forbidden include is reported as a ``fail``
on any machine. Correctness and timing run in ``evaluate.worker``, a subprocess watched for a
stall (no progress for as long as the phase it is in allows: ``evaluate.stall``) and an overall
timeout; a hung kernel, an illegal address or a segfault ends that evaluation with a named
reason, and the next one starts fresh. With ``prestart_next`` (evaluations in a loop) the next
evaluation's worker is started as this one's ends, and waits ready (``evaluate.spare``).
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import hashlib
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.baseline_cache import BaselineCache, timing_tag
from kernelseek_tui.evaluate.build import build, cache_root
from kernelseek_tui.evaluate.comparators import load_module
from kernelseek_tui.evaluate.gpu_sharing import GpuProcess, check_sharing
from kernelseek_tui.evaluate.handover_cost import probe_time
from kernelseek_tui.evaluate.noise import geomean_noise
from kernelseek_tui.evaluate.paired import PairedKernel, handover_term, paired_speedup
from kernelseek_tui.evaluate.private_mps import (
    MPS_VARIABLE,
    PIPE_VARIABLE,
    MpsChoice,
    MpsError,
    PrivateMps,
    mps_for_isolation,
)
from kernelseek_tui.evaluate.protocol_seal import KEY_FIELD, ForgedLine, new_key, open_line
from kernelseek_tui.evaluate.result import (
    EvalResult,
    PeerTiming,
    ScenarioResult,
    geomean,
)
from kernelseek_tui.evaluate.retiring import RetiringWorkers
from kernelseek_tui.evaluate.sandbox_host import (
    SandboxError,
    empty_kernel_library,
    host_executable,
)
from kernelseek_tui.evaluate.spare import (
    STANDBY_GRACE_S,
    SpareKey,
    SpareWorkers,
    kill_worker,
    start_worker,
)
from kernelseek_tui.evaluate.stall import StallLimits, expected_call_ms, phase_limit
from kernelseek_tui.evaluate.stream_counters import default_handover
from kernelseek_tui.scenarios import Scenario
from kernelseek_tui.task import ISOLATIONS, Task

Progress = Callable[[str, int, int], None]  # (message, done, total)
# The milestones of ``EvalResult.timeline``, in the order an evaluation reaches them: the
# builds done; the request handed to a worker (a spare, or one started now); its device line
# (its CUDA context held); its first scenario begun; its last scenario's result in; the worker
# released (it said "done" and its exit is left to a reaper, or it is gone: killed, crashed);
# the GPU's other processes looked at again (timed evaluations); the result complete.
TIMELINE = (
    "built",
    "worker_asked",
    "device",
    "first_scenario",
    "last_scenario",
    "worker_released",
    "sharing_checked",
    "finished",
)
DEFAULT_STALL_TIMEOUT_S = 180.0
# The worker process; tests stand in scripted workers to exercise the watchdog without a GPU.
# -P: the working directory is not put on the worker's module path, so a kernelseek_tui/ (or a
# cupy.py) in whatever directory the judge was started from cannot stand in for the worker (a
# review, 2026-12-07 late: the engine's directory is an outside agent's project).
WORKER_COMMAND = [sys.executable, "-P", "-m", "kernelseek_tui.evaluate.worker"]
# Workers started ahead of the evaluations that will use them (``prestart_next``).
SPARES = SpareWorkers()
# Workers that said "done" and are still exiting (``evaluate.retiring``).
RETIRING = RetiringWorkers()
__all__ = ["PairedKernel", "evaluate", "plan_scenarios", "worker_command"]


@dataclass(slots=True)
class _Planned:
    scenario: Scenario
    timed: bool

    def request(self) -> dict[str, Any]:
        s = self.scenario
        return {"name": s.name, "set": s.set, "fields": s.fields, "timed": self.timed}


def plan_scenarios(
    task: Task,
    *,
    sets: list[str] | None,
    scenarios_file: Path | None,
    random_count: int | None,
    seed: int,
    timed: bool | None = None,
) -> list[_Planned]:
    """Which scenarios an evaluation runs: named sets, a user's file, and fresh random draws."""
    planned: list[_Planned] = []
    if scenarios_file is not None:
        for scenario in task.load_scenarios(scenarios_file):
            planned.append(_Planned(scenario, True if timed is None else timed))
    names = list(task.objective_sets) if sets is None and scenarios_file is None else sets or []
    for name in names:
        is_timed = task.sets[name].timed if name in task.sets else False
        for scenario in task.scenarios(name):
            planned.append(_Planned(scenario, is_timed if timed is None else timed))
    count = random_count
    if count is None:
        count = task.objective_random if sets is None and scenarios_file is None else 0
    for scenario in task.draw_random(count, random.Random(seed)):
        planned.append(_Planned(scenario, False))
    return planned


def evaluate(
    task: Task,
    source: Path,
    *,
    sets: list[str] | None = None,
    scenarios_file: Path | None = None,
    random_count: int | None = None,
    seed: int | None = None,
    device: int | str | None = None,
    timeout_s: float | None = None,
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
    stall_limits: StallLimits | None = None,
    knobs: dict[str, int] | None = None,
    baseline_cache: Path | None = None,
    compare: bool = True,
    timed: bool | None = None,
    progress: Progress | None = None,
    prestart_next: bool = False,
    pair_with: PairedKernel | None = None,
    isolation: str | None = None,
    start_in_turn: bool | None = None,
) -> EvalResult:
    """Judge ``source`` on the task's objective (or the named sets / file).

    Never raises for a bad candidate: that is a ``fail`` verdict with reasons. Raises
    KernelseekError only for a bad request (a missing source, an unknown set or knob).
    ``stall_timeout_s`` is the longest the worker may stay silent in any phase; where the
    candidate's code runs, ``stall_limits`` scale a shorter limit from the scenario.
    ``prestart_next``: when the worker is done, leave a spare ready for the next evaluation of
    this task on this GPU (for loops: a session, the tuner, a pool; a one-shot command leaves it
    off, so nothing outlives it).
    ``pair_with``: time that kernel interleaved with the candidate on every timed scenario
    (the "flushed" method only), for ``summary.paired_speedup`` and ``paired_spread``.
    ``isolation``: "process" runs every kernel in a process of its own instead of loading it
    into the worker (evaluate/sandboxed_kernel.py); None: the task's ``isolation``.
    ``start_in_turn``: time the starting kernel interleaved with the candidate in this run
    (as the paired kernel where ``pair_with`` is None, else beside both) and take each
    scenario's speedup from that (``speedups_from_the_start_in_turn``); None: as
    ``KERNELSEEK_BASELINE`` says ("in-turn"), else off.
    """
    if isolation is not None and isolation not in ISOLATIONS:
        raise KernelseekError(
            f"isolation must be one of {', '.join(ISOLATIONS)}, not {isolation!r}"
        )
    started = time.monotonic()
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    if not source.is_file():
        raise KernelseekError(f"candidate source {str(source)!r} does not exist")
    for name in sets or []:
        task.scenarios(name)  # raises for an unknown set before any work
    for name in knobs or {}:
        task.knob(name)
    planned = plan_scenarios(
        task,
        sets=sets,
        scenarios_file=scenarios_file,
        random_count=random_count,
        seed=seed,
        timed=timed,
    )
    text = source.read_text()
    result = EvalResult(
        eval_id=uuid.uuid4().hex[:12],
        verdict="error",
        source_sha256=hashlib.sha256(text.encode()).hexdigest(),
        task=task.name,
        sets=sorted({p.scenario.set for p in planned}),
        seed=seed,
        isolation=isolation or task.isolation,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        scenarios=[
            ScenarioResult(name=p.scenario.name, set=p.scenario.set, fields=p.scenario.fields)
            for p in planned
        ],
    )
    notify = progress or (lambda message, done, total: None)
    notify("building", 0, len(planned))
    built = build(
        text,
        rule=task.dependency_rule,
        extra_flags=task.nvcc_flags,
        defines=knobs,
        timeout_s=task.build_timeout_s,
    )
    result.build = built.info()
    if not built.ok:
        result.verdict = "fail"
        result.reasons = built.reasons
        return _finish(result, started)

    baseline_text = task.source.read_text()
    baseline_is_candidate = baseline_text == text and not knobs
    baseline_library = None
    baseline_key = built.key
    # Timed sample by sample beside the candidate instead of alone before it (and not cached):
    # its figures then come from the same moments as the candidate's. Where a best so far is
    # paired, the three run in turn; else the starting kernel is the paired one.
    starting_in_turn = (
        wants_start_in_turn(start_in_turn)
        and not baseline_is_candidate
        and task.timing.method == "flushed"
        and any(p.timed for p in planned)
    )
    start_beside = None
    if not baseline_is_candidate and any(p.timed for p in planned):
        base = build(
            baseline_text,
            rule=task.dependency_rule,
            extra_flags=task.nvcc_flags,
            timeout_s=task.build_timeout_s,
        )
        if base.ok:
            # The key also finds its cached times timed alone, which set the stall limits
            # where it is timed in turn (nothing in turn is cached: not the same figure).
            baseline_key = base.key
            if starting_in_turn:
                start_beside = base.library
            else:
                baseline_library = base.library
        else:
            result.summary.baseline_timing = "the starting kernel did not build: no speedups"

    paired_library = None
    if pair_with is not None and task.timing.method == "flushed" and any(p.timed for p in planned):
        paired = build(
            pair_with.source.read_text(),
            rule=task.dependency_rule,
            extra_flags=task.nvcc_flags,
            defines=pair_with.knobs,
            timeout_s=task.build_timeout_s,
        )
        # A best that no longer builds leaves the evaluation unpaired: judged as without it.
        paired_library = paired.library if paired.ok else None
    # Paired only where nothing else was asked: a best that did not build leaves no paired
    # figure (a caller reads ``paired_speedup`` as over its best), the starting kernel beside.
    start_paired = start_beside is not None and pair_with is None
    if start_paired:
        paired_library, start_beside = start_beside, None

    chosen_isolation = result.isolation
    sandbox_host = handover_probe = None
    mps: MpsChoice | None = None
    if chosen_isolation != "in-process":
        # A call timed in another process carries the hand-over between the two: its cached
        # times are not the in-process ones.
        baseline_key = f"{baseline_key}-{chosen_isolation}"
        try:
            result.handover = default_handover()
            result.handover_probe_time = probe_time()
        except ValueError as error:
            raise KernelseekError(str(error)) from None
        result.handover_uncertainty_us = task.timing.handover_uncertainty_us
        if result.handover != "events":  # the keys from before there was a choice stay valid
            baseline_key = f"{baseline_key}-{result.handover}"
        mps = mps_for_isolation(_worker_env(device).get("CUDA_VISIBLE_DEVICES"))
        result.mps = mps.said
        if not mps.environment and PIPE_VARIABLE not in os.environ:
            # Without a server every call carries a switch of contexts: not the same times.
            baseline_key = f"{baseline_key}-no-mps"
        # Built here (once per machine, cached), so that a missing compiler is the request's
        # error, said before any worker starts, not a worker's failure.
        try:
            sandbox_host = str(host_executable())
            handover_probe = str(empty_kernel_library())
        except SandboxError as error:
            raise KernelseekError(f"isolation {chosen_isolation!r}: {error.reason}") from None
        if task.timing.method == "flushed":
            # The worker takes the hand-over measured in the starting kernel's own process out
            # of these times: not the raw ones cached before it did, nor those less one figure
            # measured elsewhere (evaluate/handover_cost.py).
            baseline_key = f"{baseline_key}-net-own"
    _mark(result, "built", started)
    request = {
        "task_dir": str(task.dir),
        "paired": str(paired_library) if paired_library else None,
        "paired_as": "the starting kernel" if start_paired else "the best kernel",
        "start_in_turn": str(start_beside) if start_beside else None,
        "candidate": str(built.library),
        "baseline": str(baseline_library) if baseline_library else None,
        "baseline_is_candidate": baseline_is_candidate,
        "baseline_cache": str(baseline_cache or cache_root().parent / "baseline"),
        "baseline_key": baseline_key,
        "scenarios": [p.request() for p in planned],
        "seed": seed,
        "compare": compare,
        "peers": list(task.comparators),
        "isolation": chosen_isolation,
        "handover": result.handover,
        "sandbox_host": sandbox_host,
        "handover_probe": handover_probe,
        "handover_probe_time": result.handover_probe_time,
        # Fresh per evaluation: the worker seals each line with it (evaluate/protocol_seal.py).
        KEY_FIELD: new_key(),
    }
    limit = timeout_s if timeout_s is not None else task.eval_timeout_s
    limits = stall_limits or StallLimits()
    watch = _StallWatch(
        task,
        planned,
        StallLimits(
            ceiling_s=min(stall_timeout_s, limits.ceiling_s),
            floor_s=limits.floor_s,
            factor=limits.factor,
            extra_calls=limits.extra_calls,
            slowest_tflops=limits.slowest_tflops,
        ),
        request,
    )
    harness_error = _run_worker(
        request,
        result,
        command=worker_command(
            task, peers=compare and bool(task.comparators), isolation=chosen_isolation
        ),
        device=device,
        timeout_s=limit,
        stall=watch,
        notify=notify,
        prestart_next=prestart_next,
        started=started,
        mps=mps,
    )
    if baseline_is_candidate:
        result.summary.baseline_timing = "the candidate is the starting kernel"
    if start_paired or start_beside:
        speedups_from_the_start_in_turn(result, paired=start_paired)
    return _finish(result, started, harness_error=harness_error)


# Where the starting kernel is timed (``evaluate``'s ``start_in_turn``): "in-turn", beside the
# candidate in the same run; anything else, alone before the candidate's scenarios, and cached.
BASELINE_VARIABLE = "KERNELSEEK_BASELINE"
START_IN_TURN_NOTE = "in turn with the candidate, sample by sample, this run"


def wants_start_in_turn(asked: bool | None) -> bool:
    """``asked``, or where None, whether ``KERNELSEEK_BASELINE`` says "in-turn"."""
    if asked is not None:
        return asked
    return os.environ.get(BASELINE_VARIABLE, "").strip() == "in-turn"


def speedups_from_the_start_in_turn(result: EvalResult, *, paired: bool) -> None:
    """Each timed scenario's starting kernel time and speedup from the run that timed it in
    turn with the candidate, its hand-over taken out as the candidate's is: ``paired_ms``
    where it was the paired kernel (``paired``), else ``start_ms`` (beside a best so far).

    Why: timed alone before the candidate, the starting kernel read 2.3-2.6% slower than the
    same code judged as the candidate on an H100 (sm90.cu against itself, bench set, 2026-12-07
    18:35-19:09: 1.025, 1.026 with no peers, 1.023), while the same run's paired figure read
    1.001 +- 0.012 (docs/BENCHMARKS.md, "First use with empty caches; sm90.cu against itself
    without peers and paired")."""
    for scenario in result.scenarios:
        start_ms = scenario.paired_ms if paired else scenario.start_ms
        if start_ms and scenario.ms:
            scenario.baseline_ms = start_ms
            scenario.speedup = start_ms / scenario.ms
    result.summary.baseline_timing = START_IN_TURN_NOTE


class _StallWatch:
    """The silence each (scenario, phase) of this evaluation allows (see ``evaluate.stall``)."""

    def __init__(
        self, task: Task, planned: list[_Planned], limits: StallLimits, request: dict[str, Any]
    ) -> None:
        self.task, self.limits, self.request = task, limits, request
        self.fields = {p.scenario.name: p.scenario.fields for p in planned}
        self.durations = {
            p.scenario.name: timing_tag(task.timing_for(p.scenario.set)) for p in planned
        }
        self.cached: dict[str, float | None] = {}
        self.flops = _scenario_flops(task, planned)

    def learn_device(self, device: dict[str, Any]) -> None:
        """Read the starting kernel's cached times for the GPU the worker reports."""
        if not self.request.get("baseline_cache") or not self.request.get("baseline_key"):
            return
        cache = BaselineCache(
            Path(self.request["baseline_cache"]), self.request["baseline_key"], device
        )
        self.cached = {
            name: cache.get(name, fields, self.durations[name])
            for name, fields in self.fields.items()
        }

    def limit(self, scenario: str, phase: str) -> tuple[float, str]:
        call_ms, basis = expected_call_ms(
            self.cached.get(scenario), self.flops.get(scenario), self.limits
        )
        chosen = phase_limit(phase, call_ms, basis, self.task.timing, self.limits)
        return chosen.seconds, chosen.why


def _scenario_flops(task: Task, planned: list[_Planned]) -> dict[str, float | None]:
    """Each scenario's FLOPs by the task's own count, or nothing when it has none."""
    if task.flops_function is None:
        return {}
    try:
        module = load_module(task.reference_module, "kernelseek_task_flops")
        count = getattr(module, task.flops_function)
        return {p.scenario.name: float(count(p.scenario.fields)) for p in planned}
    except Exception:  # a broken count only loses the estimate; the worker reports the rest
        return {}


def worker_command(task: Task, *, peers: bool, isolation: str | None = None) -> list[str]:
    """The worker's command line: what it may ready before its request (the task's
    comparators with ``peers``; the kernels' processes with ``isolation`` "process", where the
    task's own is not), and how long it waits for one when started as a spare."""
    command = [*WORKER_COMMAND, "--task-dir", str(task.dir)]
    command += ["--standby-limit", f"{SPARES.max_age_s + STANDBY_GRACE_S:g}"]
    if isolation is not None and isolation != task.isolation:
        command += ["--isolation", isolation]  # a spare so started serves only such requests
    return [*command, "--peers"] if peers else command


def _worker_env(device: int | str | None) -> dict[str, str]:
    env = dict(os.environ)
    if device is not None:
        # An index counts within what this process may see, as CUDA itself would count it.
        visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
        chosen = str(device)
        if isinstance(device, int) and visible:
            if device >= len(visible):
                raise KernelseekError(f"GPU index {device} is not among {','.join(visible)}")
            chosen = visible[device]
        env["CUDA_VISIBLE_DEVICES"] = chosen
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run_worker(
    request: dict[str, Any],
    result: EvalResult,
    *,
    command: list[str],
    device: int | str | None,
    timeout_s: float,
    stall: _StallWatch,
    notify: Progress,
    prestart_next: bool,
    started: float,
    mps: MpsChoice | None = None,
) -> bool:
    """Run the worker, filling ``result.scenarios``; True when the harness itself failed.
    ``started``: the evaluation's start (time.monotonic()), for ``result.timeline``.
    ``mps``: for kernels in processes of their own, the MPS server they and the worker share
    the GPU through (evaluate/private_mps.py); the worker is made its client."""
    env = _worker_env(device)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if mps is not None:
        env = mps.client_environment(env)
    key = SpareKey(visible, request["task_dir"], tuple(command), env.get(PIPE_VARIABLE))
    # The previous evaluation's worker on this GPU, if still exiting, is gone before this one
    # asks a worker for anything: no two evaluations' workers overlap on the GPU.
    RETIRING.wait(key.visible_devices)
    # A spare, when one is ready, has done its set-up already; it has judged nothing.
    process = SPARES.take(key) or start_worker(command, env)
    stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
    drain = threading.Thread(target=_drain, args=(process.stderr, stderr_tail), daemon=True)
    drain.start()
    assert process.stdout is not None
    # The watchdog's clocks start with the request (below): a spare's set-up before it is
    # not this evaluation's time. The request goes from a thread: a worker still setting up
    # reads it only after, and a large request must not block the watchdog meanwhile.
    sender = _send_request(process, json.dumps(request).encode())
    _mark(result, "worker_asked", started)

    index_of = {s.name: i for i, s in enumerate(result.scenarios)}
    total = len(result.scenarios)
    done = 0
    current: tuple[str, str] = ("", "setup")
    finished = False
    fatal: dict[str, Any] | None = None
    deadline = time.monotonic() + timeout_s
    last_heard = time.monotonic()
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    buffer = b""
    stopped_for: str | None = None
    forgery: str | None = None  # a line the worker did not seal: the evaluation ends there
    # How each kernel's process confined itself, by who (the worker's "confinement" lines).
    confinements: dict[str, str] = {}
    # Who else is on the GPU, for a timed evaluation: looked at once the worker holds its
    # context (its device line), and again at the end.
    timed = any(s.get("timed") for s in request["scenarios"])
    sharing: list[GpuProcess] | None = None
    silence_s, silence_why = stall.limit(*current)
    while True:
        now = time.monotonic()
        if now > deadline:
            stopped_for = f"timed out after {timeout_s:.0f} s"
            break
        if now - last_heard > silence_s:
            stopped_for = f"no progress for {silence_s:.0f} s (a hung kernel?; {silence_why})"
            break
        if not selector.select(timeout=min(1.0, max(0.05, silence_s / 10))):
            if process.poll() is not None:
                break
            continue
        chunk = os.read(process.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        last_heard = time.monotonic()
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                message = open_line(request[KEY_FIELD], line)
            except ForgedLine as forged:
                # Nothing after it can be trusted either: the evaluation ends here, failed.
                fatal = {
                    "type": "fatal",
                    "kind": "fail",
                    "reason": f"the worker's protocol carried {forged} (written by the "
                    "candidate into the judge's pipe?)",
                }
                stopped_for = forgery = str(forged)
                break
            kind = message["type"]
            if kind == "device":
                _mark(result, "device", started)
                result.device = {k: v for k, v in message.items() if k != "type"}
                stall.learn_device(result.device)
                if timed:
                    sharing = check_sharing(result.device.get("uuid"), also=_mps_processes(mps))
            elif kind == "progress":
                current = (message["scenario"], message["phase"])
                silence_s, silence_why = stall.limit(*current)
                if message["phase"] == "start":
                    if "first_scenario" not in result.timeline:
                        _mark(result, "first_scenario", started)
                    notify(f"{message['scenario']}", done, total)
                elif message["phase"] == "baseline" and "first_scenario" not in result.timeline:
                    # Timed before the candidate's first call, where not cached (worker.py,
                    # _time_baselines_first): say so, or a cold cache looks like a stall.
                    notify(f"the starting kernel on {message['scenario']}", done, total)
            elif kind == "scenario":
                record = _scenario_from(message["result"])
                record.baseline_ms = message.get("baseline_ms")
                if record.baseline_ms and record.ms:
                    record.speedup = record.baseline_ms / record.ms
                result.scenarios[index_of[record.name]] = record
                _mark(result, "last_scenario", started)
                done += 1
                notify(record.name, done, total)
            elif kind == "handover":
                who = str(message.get("who", "the candidate"))
                result.handovers_us[who] = float(message["us"])
                if who == "the candidate":
                    result.handover_us = float(message["us"])
            elif kind == "confinement":
                confinements[str(message.get("who", "the candidate"))] = str(message["said"])
                result.confinement = confinement_said(confinements)
            elif kind == "fatal":
                fatal = message
            elif kind == "done":
                finished = True
        if finished or forgery:
            break
    selector.close()
    if stopped_for is not None:
        kill_worker(process)

    # Results all in: the worker's exit (its CUDA context torn down, ~0.5 s) is reaped off this
    # path; the next evaluation on this GPU waits for it. Any other end is waited for here, as
    # its return code and stderr name what happened.
    retired = finished and fatal is None and stopped_for is None
    if retired:
        RETIRING.retire(key.visible_devices, process)
    else:
        process.wait()
        drain.join(timeout=2)
        sender.join(timeout=2)
    mps_hint = None
    if mps is not None and mps.server is not None and _left_mps_wedged(stopped_for, forgery, fatal):
        _restart_mps(mps.server, key, result)
        if current[1] == "setup":
            # Refused before any kernel ran: this GPU may not take MPS clients at all.
            mps_hint = (
                f"the worker could not start as a client of the judge's MPS server; where this "
                f"GPU cannot run MPS, {MPS_VARIABLE}=off judges without it (every timed call "
                "then carries the switching between the processes' contexts)"
            )
    if mps is not None and mps.server is not None:
        _check_mps_settings(mps.server, key, result)
    _mark(result, "worker_released", started)
    if sharing is not None:
        later = (
            check_sharing(result.device.get("uuid"), must_see_ours=False, also=_mps_processes(mps))
            or []
        )
        seen = {p.pid: p for p in [*sharing, *later]}
        result.other_gpu_processes = [p.describe() for p in seen.values()]
        _mark(result, "sharing_checked", started)
    if prestart_next:
        # Only now, with nothing of this evaluation left to time: a worker readying its GPU
        # beside one being timed would disturb the timing (beside one exiting, it does not).
        SPARES.prestart(key, lambda: start_worker(command, env))

    scenario_name, phase = current
    if finished and fatal is None:
        return False
    if fatal is not None:
        reason = fatal["reason"]
        kind = fatal.get("kind", "error")
    elif stopped_for is not None:
        reason, kind = stopped_for, ("error" if phase == "reference" else "fail")
    else:
        code = process.returncode
        signame = _signal_name(code)
        reason = f"the worker died ({signame})" if signame else f"the worker exited {code}"
        kind = "error" if phase in ("setup", "reference") else "fail"
        tail = [line for line in stderr_tail if line.strip()][-3:]
        if tail:
            reason += ": " + " | ".join(tail)
    where = f" in scenario {scenario_name} ({phase})" if scenario_name else f" ({phase})"
    result.reasons.append(reason + where)
    if mps_hint is not None:
        result.reasons.append(mps_hint)
    if scenario_name in index_of and kind == "fail":
        stuck = result.scenarios[index_of[scenario_name]]
        if stuck.passed is None:
            stuck.passed = False
            stuck.reasons.append(reason)
    return kind == "error"


def confinement_said(by_who: dict[str, str]) -> str:
    """The result's ``confinement`` from each kernel's process's own: one text where all say
    the same (the machine's kernel decides it), else each named ("the candidate: ...")."""
    said = set(by_who.values())
    if len(said) == 1:
        return said.pop()
    return " | ".join(f"{who}: {text}" for who, text in by_who.items())


def _left_mps_wedged(
    stopped_for: str | None, forgery: str | None, fatal: dict[str, Any] | None
) -> bool:
    """Whether the MPS server may now refuse new clients: a kernel still running when its
    process was killed (the watchdog's stop) leaves it so (measured, docs/RELIABILITY.md), and
    a worker refused at its set-up found it so."""
    if stopped_for is not None and forgery is None:
        return True
    return fatal is not None and "cudaErrorDevicesUnavailable" in str(fatal.get("reason"))


_WEDGED = (
    "a kernel left running when its process was killed keeps an MPS server from taking new clients"
)


def _restart_mps(server: PrivateMps, key: SpareKey, result: EvalResult, why: str = _WEDGED) -> None:
    """Restart the judge's own MPS server so that the next evaluation finds it taking clients
    (``why``: for the result); a spare started as a client of the old one is dropped."""
    SPARES.drop(key)
    try:
        notes = server.restart()
    except (MpsError, OSError, subprocess.SubprocessError) as error:
        result.mps = f"{result.mps}; restarting it after this evaluation failed: {error}"
        return
    how = f" ({'; '.join(notes)})" if notes else ""
    result.mps = f"{result.mps}, restarted after this evaluation{how}: {why}"


def _check_mps_settings(server: PrivateMps, key: SpareKey, result: EvalResult) -> None:
    """Fail the evaluation whose kernel changed the share of the GPU the judge's MPS server
    gives new clients (private_mps.PrivateMps.share_settings says how it could), or ended its
    control daemon (``daemon_gone``), and restart the server so that the next evaluation, and a
    spare started for it, get the whole GPU through a server."""
    if server.daemon_gone():
        _restart_mps(server, key, result, "its control daemon had ended")
        result.reasons.append(
            "the judge's MPS control daemon ended during this evaluation: a kernel's process "
            "reached it (it ends on a `quit` sent to its socket), which would leave every "
            "evaluation after it without a server; the server was restarted"
        )
        return
    changed = server.settings_changed()
    if changed is None:
        return
    _restart_mps(server, key, result, "its share for new clients had been changed")
    result.reasons.append(
        f"the share of the GPU the judge's MPS server gives new clients changed during this "
        f"evaluation ({changed}): a kernel's process reached the MPS control daemon, which "
        "would slow every evaluation after it; the server was restarted"
    )


def _mps_processes(mps: MpsChoice | None) -> set[int]:
    """The judge's own MPS processes: they hold the GPU's context for our clients."""
    return set(mps.server.own_processes()) if mps is not None and mps.server is not None else set()


def _scenario_from(raw: dict[str, Any]) -> ScenarioResult:
    raw = dict(raw)
    raw["peers"] = {k: PeerTiming(**v) for k, v in raw.get("peers", {}).items()}
    return ScenarioResult(**raw)


def _send_request(process: subprocess.Popen[bytes], payload: bytes) -> threading.Thread:
    """Write the request to the worker's stdin and close it, from a thread of its own."""

    def send() -> None:
        assert process.stdin is not None
        # A worker dead before reading gets nothing; the watchdog's loop names how it ended.
        with contextlib.suppress(OSError):
            process.stdin.write(payload)
        with contextlib.suppress(OSError):
            process.stdin.close()

    sender = threading.Thread(target=send, daemon=True, name="kernelseek-request")
    sender.start()
    return sender


def _drain(stream: Any, tail: collections.deque[str]) -> None:
    for raw in iter(stream.readline, b""):
        tail.append(raw.decode(errors="replace").rstrip()[:300])


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _mark(result: EvalResult, milestone: str, started: float) -> None:
    """Record when the evaluation reached ``milestone`` (one of TIMELINE)."""
    result.timeline[milestone] = round(time.monotonic() - started, 3)


def _with_handover(spread: float | None, term: float) -> float | None:
    """A scenario's spread with the hand-over's term added (None stays None without one)."""
    if spread is None:
        return term if term > 0 else None
    return spread + term


def _finish(result: EvalResult, started: float, *, harness_error: bool = False) -> EvalResult:
    _mark(result, "finished", started)
    result.duration_s = result.timeline["finished"]
    ran = [s for s in result.scenarios if s.passed is not None]
    failed = [s for s in result.scenarios if s.passed is False]
    summary = result.summary
    summary.total = len(result.scenarios)
    summary.passed = sum(1 for s in result.scenarios if s.passed)
    timed = [s for s in result.scenarios if s.ms is not None]
    summary.geomean_speedup = geomean([s.speedup for s in timed if s.speedup])
    summary.geomean_tflops = geomean([s.tflops for s in timed if s.tflops])
    # Where hand-overs were taken out of the figures, each comparison carries their
    # uncertainty as well as its samples' spread (evaluate/paired.py says why).
    uncertainty = result.handover_uncertainty_us if result.handovers_us else None
    summary.noise = geomean_noise(
        [
            _with_handover(s.spread, handover_term(uncertainty, s.ms, s.baseline_ms))
            for s in timed
            if s.speedup
        ]
    )
    pairs = [s for s in timed if s.paired_ratios]
    paired = paired_speedup(
        [s.paired_ratios for s in pairs],
        [handover_term(uncertainty, s.ms, s.paired_ms) for s in pairs],
    )
    if paired is not None:
        summary.paired_speedup, summary.paired_spread = paired.speedup, paired.spread
        summary.paired_handover = paired.handover_part if uncertainty else None
    peers = sorted({name for s in timed for name in s.peers})
    for name in peers:
        ratios = [r for s in timed if (r := s.ratio_to(name)) is not None]
        value = geomean(ratios)
        if value is not None:
            summary.vs_peers[name] = value
        else:
            reasons = {s.peers[name].absent for s in timed if s.peers.get(name)}
            summary.absent_peers[name] = "; ".join(sorted(r for r in reasons if r)) or "no data"
    if summary.baseline_timing is None and any(s.baseline_ms for s in timed):
        summary.baseline_timing = "measured on this GPU (cached per GPU and starting kernel)"
    if harness_error:
        result.verdict = "error"
    elif result.reasons or failed or len(ran) < len(result.scenarios):
        result.verdict = "fail"
    else:
        result.verdict = "pass"
    for scenario in failed[:5]:
        for reason in scenario.reasons[:2]:
            line = f"{scenario.name}: {reason}"
            if line not in result.reasons:
                result.reasons.append(line)
    if len(failed) > 5:
        result.reasons.append(f"... and {len(failed) - 5} more failing scenarios")
    return result
