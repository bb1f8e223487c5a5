"""The evaluation subprocess: one request in (JSON on stdin), JSON lines out, then exit.

Before it reads the request it readies what does not depend on it (``prepare_standby``: CuPy,
the CUDA context, with ``--task-dir`` and ``--peers`` the task's comparators), so a worker can
be started ahead of its evaluation and wait, ready, for the request (``evaluate.spare``). A
worker given up before its request (stdin closed empty, or ``--standby-limit`` passed) exits 0
without a line.

It runs in its own process so that a hung kernel, an illegal address or a segfault ends only
this evaluation: the parent kills or buries the process and names the reason. The protocol goes
to a private copy of the original stdout; fd 1 itself is pointed at stderr, so a kernel's own
printf can never corrupt the protocol, and each line is sealed with the request's key
(``protocol_seal``), so a line the kernel writes to that copy on purpose is told from ours.

Lines: {"type": "device", ...}, {"type": "progress", "index", "total", "scenario", "phase"},
{"type": "scenario", "result": {...}, "baseline_ms": float | null}, {"type": "fatal",
"reason", "kind": "fail" | "error"}, {"type": "done"}.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import math
import os
import random
import secrets
import select
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kernelseek_tui.evaluate.baseline_cache import BaselineCache, timing_tag
from kernelseek_tui.evaluate.buffers import GuardedTensor, allocate, fill_random, poison_output
from kernelseek_tui.evaluate.check import check_output
from kernelseek_tui.evaluate.comparators import PeerRunner, load_module
from kernelseek_tui.evaluate.compile_watch import CompileWatch, accelerators_off, cache_folder
from kernelseek_tui.evaluate.dtypes import round_to, to_float32
from kernelseek_tui.evaluate.gate import GATE_LIMIT_MS, GateLetGo, StreamGate
from kernelseek_tui.evaluate.handover_cost import (
    HandoverCost,
    in_turn_cost,
    net_of_handover,
    time_empty_kernel,
)
from kernelseek_tui.evaluate.judged_call import MeasuredCallWatch, replay
from kernelseek_tui.evaluate.kept_work import (
    HELD_NOTE_ABOVE,
    compare_groups,
    held_ms,
    held_speedups,
    with_sample_floor,
)
from kernelseek_tui.evaluate.peer_calls import PeerCall, prepare_peer_calls
from kernelseek_tui.evaluate.perturb import SIGN_BITS, SignFlipper
from kernelseek_tui.evaluate.private_mps import GPU_VARIABLE
from kernelseek_tui.evaluate.protocol_seal import Sealer
from kernelseek_tui.evaluate.result import PeerTiming, ScenarioResult
from kernelseek_tui.evaluate.sandbox_host import SandboxError
from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel
from kernelseek_tui.evaluate.stream_counters import StreamCounterError
from kernelseek_tui.evaluate.timing import TimingStats, time_calls, time_interleaved
from kernelseek_tui.task import Task, TensorSpec, Timing, load_task

# A gate that let go by its limit while the candidate was timed (evaluate/gate.py). Fenced (the
# default), the GPU was found free before each gate, so the wait was the call's.
GATE_KEPT_WAITING = (
    f"a call kept the judge's gate waiting past its limit ({GATE_LIMIT_MS:g} ms): ks_launch "
    "waited for GPU work of its own, which would have run before its sample began and so "
    "never been timed"
)


# The most a call of the candidate's may take to return, median over a timed run: the pipe's
# round trip and an honest ks_launch (which enqueues and returns) take tens of microseconds.
ROUND_TRIP_LIMIT_MS = 1.0


class FatalError(Exception):
    """The process can no longer judge anything (a sticky CUDA error, a broken reference)."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # "fail": the candidate's doing; "error": the harness's


class LaunchFailed(Exception):
    """ks_launch returned nonzero."""


def _launch_or_fail(launch: Callable[[], int]) -> Callable[[int], None]:
    """``launch`` as a timed call of any input set (it has one binding), raising LaunchFailed
    where it returns nonzero."""

    def call(_set: int) -> None:
        if launch() != 0:
            raise LaunchFailed

    return call


class Kernel:
    """A built candidate: ``ks_launch`` through ctypes, with argument arrays bound once."""

    def __init__(self, library: str) -> None:
        self._lib = ctypes.CDLL(library, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        self._fn = self._lib.ks_launch
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_double),
            ctypes.c_void_p,
        ]

    def bind(
        self, ptrs: list[int], ints: list[int], floats: list[float], stream: int
    ) -> Callable[[], int]:
        """``ks_launch`` on device pointers (the benchmarks call it on torch tensors' own)."""
        pointers = (ctypes.c_void_p * len(ptrs))(*ptrs)
        int_args = (ctypes.c_int64 * max(1, len(ints)))(*ints)
        float_args = (ctypes.c_double * max(1, len(floats)))(*floats)
        fn = self._fn
        return lambda: fn(pointers, int_args, float_args, stream)

    def bind_tensors(
        self, tensors: list[GuardedTensor], ints: list[int], floats: list[float], stream: int
    ) -> Callable[[], int]:
        return self.bind([t.ptr for t in tensors], ints, floats, stream)


@dataclass(slots=True)
class Standby:
    """What a worker sets up before it knows its request: nothing here depends on the candidate,
    so a worker started ahead of its evaluation (a spare, ``evaluate.spare``) has the slow part
    of its start-up (CuPy, the CUDA context, torch and the peers' libraries) done when the
    request comes, and the candidate's library still goes into a process that judged nothing.
    """

    cp: Any
    device: dict[str, Any]
    l2_bytes: int
    stream: Any
    # The task's comparators loaded ahead (only when started with --peers), with the module
    # they came from: a request for the same peers of the same module reuses them.
    peers: PeerRunner | None = None
    comparator_module: Path | None = None
    # Kernel hosts started ahead (only for a task whose kernels run in processes of their
    # own): device, context and events ready, waiting for a kernel (SandboxedKernel.load).
    hosts: list[SandboxedKernel] = field(default_factory=list)

    def peers_for(self, task: Task, names: tuple[str, ...]) -> PeerRunner | None:
        """The peers loaded ahead, when they are the ones the request asks for."""
        if self.peers is None or not names or self.peers.names != names:
            return None
        return self.peers if task.comparator_module == self.comparator_module else None


def prepare_standby(task_dir: str | None, *, peers: bool, isolation: str | None = None) -> Standby:
    """Import CuPy, make the CUDA context on device 0 real, and with ``peers`` load the task's
    comparators (torch, and the peers' libraries through the module's optional ``preload``)
    and run each once on small inputs (its optional ``warm_up``). ``isolation``: the one the
    request will ask for (None: the task's); "process" starts the kernels' processes too."""
    import cupy as cp

    # Before anything compiles: CuPy's CUB builds made first-use checks take seconds, past the
    # stall limit on a machine whose caches were empty (evaluate/compile_watch.py).
    accelerators_off(cp)
    if cp.cuda.runtime.getDeviceCount() < 1:
        raise FatalError("no CUDA GPU visible", "error")
    cp.cuda.Device(0).use()
    props = cp.cuda.runtime.getDeviceProperties(0)
    l2_bytes = int(props["l2CacheSize"])
    device = {
        # A client of the judge's private MPS server is given its GPU by the server instead.
        "index": os.environ.get(GPU_VARIABLE) or os.environ.get("CUDA_VISIBLE_DEVICES", "0"),
        "name": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "uuid": _uuid_text(props.get("uuid")),
        "sms": int(props["multiProcessorCount"]),
        "l2_bytes": l2_bytes,
    }
    stream = cp.cuda.Stream(non_blocking=True)
    # The context exists only once something runs on it: one allocation and one small kernel.
    probe = cp.zeros(1, dtype=cp.float32)
    probe += 1
    cp.cuda.Device(0).synchronize()
    del probe
    standby = Standby(cp=cp, device=device, l2_bytes=l2_bytes, stream=stream)
    if task_dir is None:
        return standby
    try:
        task = load_task(task_dir)
    except Exception:  # the request's own load of the task reports what is wrong with it
        return standby
    if (isolation or task.isolation) == "process":
        standby.hosts = _start_hosts(cp, stream)
    if peers and task.comparators and task.comparator_module is not None:
        standby.peers = PeerRunner(task.comparator_module, task.comparators, stream.ptr)
        standby.peers.preload()
        standby.peers.warm_up()
        standby.comparator_module = task.comparator_module
    return standby


# The kernels an evaluation loads at most: the candidate, the starting kernel, the best so far.
_HOSTS_AHEAD = 3


def _start_hosts(cp: Any, stream: Any) -> list[SandboxedKernel]:
    """Hosts for the request's kernels, started now; none where they cannot start (the
    request then starts its own, and reports why they fail)."""
    hosts: list[SandboxedKernel] = []
    try:
        for _ in range(_HOSTS_AHEAD):
            hosts.append(SandboxedKernel(None, cp=cp, stream=stream, who="a kernel"))
    except (SandboxError, StreamCounterError, ValueError):
        for host in hosts:
            host.close()
        return []
    return hosts


# The one Standby main() prepared, handed to the Evaluation of its request (one per process:
# a worker judges one request, so its prepared GPU serves exactly one Evaluation).
_prepared: Standby | None = None


def hand_over_standby(standby: Standby) -> None:
    """Keep ``standby`` for the next Evaluation made in this process."""
    global _prepared
    _prepared = standby


def take_standby() -> Standby | None:
    """The Standby main() prepared, once; None after that or without one."""
    global _prepared
    standby, _prepared = _prepared, None
    return standby


class Evaluation:
    """State shared by the scenarios of one request."""

    def __init__(self, request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> None:
        # main() readies the GPU before the request comes; a direct call readies it now.
        standby = take_standby() or prepare_standby(None, peers=False)
        cp = standby.cp
        self.cp = cp
        # What each scenario's judging adds to CuPy's kernel cache (evaluate/compile_watch.py).
        self.compiles = CompileWatch(cache_folder(cp))
        self.emit = emit
        self.request = request
        self.task: Task = load_task(request["task_dir"])
        self.seed = int(request["seed"])
        # Fresh for every evaluation, beside the seed: which measured call is judged and how the
        # inputs are perturbed must not be predictable from the request.
        self.entropy = secrets.randbits(128)
        self.phase = "setup"
        # Seconds spent in each phase of the scenario being judged (``switch``).
        self.phase_s: dict[str, float] = {}
        self._phase_began = time.perf_counter()
        self.scenario: tuple[int, str] | None = None  # (index, name) of the one being judged
        self.l2_bytes = standby.l2_bytes
        self.device = standby.device
        emit({"type": "device", **self.device})
        # Every array operation of the harness goes on the kernel's stream too (see
        # evaluate_request), so fills, copies, the reference and the kernel are ordered.
        self.stream = standby.stream
        # The reference last judged against, kept so peers on the same inputs reuse it.
        self.last_reference: dict[str, Any] = {}
        module = load_module(self.task.reference_module, "kernelseek_task_reference")
        self.reference = getattr(module, self.task.reference_function)
        self.flops = getattr(module, self.task.flops_function) if self.task.flops_function else None
        # "process": every kernel in a process of its own (evaluate/sandboxed_kernel.py), none
        # loaded here; "in-process": loaded here with ctypes.
        self.isolated = request.get("isolation", "in-process") == "process"
        self.sandboxes: list[SandboxedKernel] = []
        self._hosts_ahead = standby.hosts
        standby.hosts = []
        # What the hand-over adds to each isolated kernel's calls, measured in its own process
        # with the judge's empty kernel before its kernel is loaded there, and taken out of its
        # figures (evaluate/handover_cost.py). By the kernel object's id.
        self.handover_costs: dict[int, HandoverCost] = {}
        probe = request.get("handover_probe")
        timed = any(scenario.get("timed") for scenario in request["scenarios"])
        self.handover_probe = (
            Path(probe)
            if self.isolated and probe and timed and self.task.timing.method == "flushed"
            else None
        )
        # Also timed with every scenario's calls, in turn with them ("in-turn"), and that figure
        # taken out instead (evaluate/handover_cost.py, "in turn"); the judge's empty kernel
        # loaded here for it once, when first needed.
        self.probe_in_turn = request.get("handover_probe_time") == "in-turn"
        self._empty_here: Callable[[], int] | None = None
        self.baseline_cache = (
            BaselineCache(Path(request["baseline_cache"]), request["baseline_key"], self.device)
            if request.get("baseline_cache")
            else None
        )
        self.candidate = self._load(request["candidate"], "the candidate", "fail")
        self.baseline = (
            self._load(
                request["baseline"],
                "the starting kernel",
                "error",
                timed=self._baseline_will_be_timed(request),
            )
            if request.get("baseline")
            else None
        )
        # The best so far, or the starting kernel timed in turn (api.evaluate's pair_with,
        # start_in_turn), interleaved with the candidate.
        self.paired = (
            self._load(request["paired"], request.get("paired_as") or "the best kernel", "error")
            if request.get("paired")
            else None
        )
        # The starting kernel timed in turn as well, where a best so far is the paired one:
        # the three interleaved, one sample of each per round.
        self.start_beside = (
            self._load(request["start_in_turn"], "the starting kernel", "error")
            if request.get("start_in_turn")
            else None
        )
        self.settle = self._settle if self.isolated else None
        # A kernel in another process is a pipe round trip away: each sample's start event
        # waits behind a gate until the sample is enqueued (evaluate/gate.py). With the fence
        # ("fenced"), each sample also starts on a GPU free of everything else: a thread of a
        # kernel's process that fills the GPU between its own calls, slowing the others' turns
        # (the best so far's, the peers'), is waited out before each of them.
        self.sample_fence: Any = None
        clear_gpu = None
        if self.isolated and request.get("handover") == "fenced":
            from kernelseek_tui.evaluate.gpu_fence import GpuFence

            self.sample_fence = GpuFence(cp)
            clear_gpu = functools.partial(self.sample_fence.enqueue, self.stream)
        self.gate = StreamGate(cp, self.stream, clear_gpu=clear_gpu) if self.isolated else None
        peers = tuple(request.get("peers", ())) if request.get("compare", True) else ()
        self.peers = standby.peers_for(self.task, peers) or PeerRunner(
            self.task.comparator_module, peers, self.stream.ptr
        )

    def _baseline_will_be_timed(self, request: dict[str, Any]) -> bool:
        """Whether some timed scenario has no cached time of the starting kernel (only then is
        its hand-over measured: a measure is dozens of timed runs' worth of calls)."""
        if request.get("baseline_is_candidate"):
            return False
        cache = self.baseline_cache
        if cache is None:
            return any(scenario.get("timed") for scenario in request["scenarios"])
        return any(
            scenario.get("timed")
            and cache.get(
                scenario["name"],
                scenario["fields"],
                timing_tag(self.task.timing_for(scenario["set"])),
            )
            is None
            for scenario in request["scenarios"]
        )

    def _load(
        self, library: str, who: str, kind: str, *, timed: bool = True
    ) -> Kernel | SandboxedKernel:
        """``timed``: whether the kernel's calls will be timed (its hand-over is then measured,
        where the request asks for it)."""
        if not self.isolated:
            return Kernel(library)

        def died(reason: str) -> None:
            # From the host's watcher thread, while this process waits on the GPU for work the
            # dead process will never finish: answer now and end, as a fatal error would.
            self.emit({"type": "fatal", "reason": reason, "kind": kind})
            os._exit(3)

        host = self.request.get("sandbox_host")
        executable = Path(host) if host else None
        handover = self.request.get("handover") or "events"
        ready = [
            h
            for h in self._hosts_ahead
            if (executable is None or h.executable == executable) and h.handover == handover
        ]
        if ready:
            kernel = ready[0]
            self._hosts_ahead.remove(kernel)
        else:
            kernel = SandboxedKernel(
                None,
                cp=self.cp,
                stream=self.stream,
                who=who,
                kind=kind,
                executable=executable,
                handover=handover,
            )
        self.sandboxes.append(kernel)  # closed with the others, whatever load says
        self.emit({"type": "confinement", "who": who, "said": kernel.confinement})
        if self.handover_probe is not None and timed:
            cost = self._measure_handover(kernel, self.handover_probe)
            self.handover_costs[id(kernel)] = cost
            self.emit({**cost.message(), "who": who})
        kernel.load(library, who=who, kind=kind, on_death=died)
        return kernel

    def _measure_handover(self, kernel: SandboxedKernel, probe: Path) -> HandoverCost:
        """The judge's empty kernel timed in-process and in ``kernel``'s process, in turn,
        before that process holds its kernel: the hand-over of that very process (on an H100
        it differed between processes of one evaluation, 6 against 14 us: docs/BENCHMARKS.md),
        every other kernel's process stopped meanwhile. The probe's buffers are forgotten
        after, as ``load`` demands."""
        kernel.probe(probe)
        try:
            with self.others_stopped(kernel):
                return time_empty_kernel(
                    self.cp, self.stream, {"in-process": Kernel(str(probe)), "isolated": kernel}
                )
        finally:
            kernel.forget_all()

    @contextlib.contextmanager
    def others_stopped(self, timed: Kernel | SandboxedKernel | None = None) -> Iterator[None]:
        """While the starting kernel or a peer is timed alone, every other kernel's process is
        settled and stopped (SIGSTOP): no thread of the candidate's can put work on the GPU
        beside it. Nothing in-process: a kernel loaded here cannot be stopped apart from the
        judge."""
        stopped: list[SandboxedKernel] = []
        try:
            for kernel in self.sandboxes:
                if kernel is not timed:
                    kernel.freeze()
                    stopped.append(kernel)
            if stopped:
                # With the fence ("fenced"): the GPU itself, not only the processes, must be
                # free before the timing, whatever a process that forged its settle left queued.
                try:
                    stopped[0].wait_until_gpu_free()
                except SandboxError as error:
                    raise FatalError(error.reason, error.kind) from None
            yield
        finally:
            for kernel in stopped:
                kernel.thaw()

    def gates_held_within_their_limit(self) -> bool:
        """Whether every gate since the last ask held the whole GPU and was released before its
        limit (evaluate/gate.py; waits for the stream): a gate that let go means a call's
        ``ks_launch`` waited for GPU work of its own, done before its sample began. Always,
        in-process (no gate)."""
        return self.gate is None or not self.gate.timed_out()

    def forget_round_trips(self) -> None:
        """Drop the calls' round trips so far (``slow_launch_reason`` judges those after)."""
        for kernel in self.sandboxes:
            kernel.take_round_trips()

    def slow_launch_reason(self) -> str | None:
        """Why the candidate's calls of this timed run took too long to return, if they did:
        their median round trip to its process over ``ROUND_TRIP_LIMIT_MS`` (an honest
        ``ks_launch`` enqueues and returns, tens of microseconds with the pipe). The other
        kernels' round trips since are dropped, so each run's verdict is its own."""
        trips = {id(kernel): kernel.take_round_trips() for kernel in self.sandboxes}
        median_ms = trips.get(id(self.candidate))
        if median_ms is None or median_ms <= ROUND_TRIP_LIMIT_MS:
            return None
        return (
            f"the candidate's ks_launch took {median_ms:.2f} ms a call to return (median, "
            f"the limit {ROUND_TRIP_LIMIT_MS:g} ms): work done inside it, before its sample "
            "began, is never timed"
        )

    def samples_started_on_a_free_gpu(self) -> bool:
        """With the fence before every sample ("fenced"): whether each one found the GPU free
        within the fence's limit (waits for the stream); always, without it."""
        return self.sample_fence is None or not self.sample_fence.timed_out(self.stream)

    def net(
        self,
        stats: TimingStats,
        kernel: Kernel | SandboxedKernel | None,
        in_turn: dict[int, HandoverCost] | None = None,
    ) -> TimingStats:
        """``kernel``'s flushed ``stats`` less the hand-over measured in its process: the one
        timed in turn with them if ``in_turn`` has it (``in_turn_probes``), else the one measured
        before its load (the same ``stats`` in-process, or where none was measured)."""
        cost = (in_turn or {}).get(id(kernel)) or self.handover_costs.get(id(kernel))
        return net_of_handover(stats, cost)

    def in_turn_probes(self) -> list[tuple[SandboxedKernel | None, Callable[[int], None]]]:
        """With the probe in turn (``KERNELSEEK_HANDOVER_PROBE=in-turn``): the calls to time with
        a scenario's, as (the kernel whose process the call runs in, or None for the judge's
        empty kernel here; the call). First the one here, then the probe in the candidate's and
        the best so far's (and the starting kernel's, timed beside it) processes, where their
        hand-over was measured. Empty otherwise."""
        if not self.probe_in_turn or self.handover_probe is None:
            return []
        kernels = [
            k
            for k in (self.candidate, self.paired, self.start_beside)
            if isinstance(k, SandboxedKernel) and id(k) in self.handover_costs
        ]
        if not kernels:
            return []
        if self._empty_here is None:
            self._empty_here = Kernel(str(self.handover_probe)).bind([], [], [], self.stream.ptr)
        probes: list[tuple[SandboxedKernel | None, Callable[[], int]]] = [(None, self._empty_here)]
        probes += [(k, k.probe_call()) for k in kernels]
        return [(k, _launch_or_fail(c)) for k, c in probes]

    def in_turn_costs(
        self,
        probes: list[tuple[SandboxedKernel | None, Callable[[int], None]]],
        stats: list[TimingStats],
    ) -> dict[int, HandoverCost]:
        """From ``in_turn_probes``' samples (``stats``, in their order): each kernel's hand-over,
        by the kernel object's id, capped at the one measured before its load (in_turn_cost
        says why)."""
        here = stats[0]
        return {
            id(kernel): in_turn_cost(here, timed, self.handover_costs.get(id(kernel)))
            for (kernel, _), timed in zip(probes[1:], stats[1:], strict=True)
        }

    def allocate(self, spec: TensorSpec, shape: tuple[int, ...]) -> GuardedTensor:
        """A tensor for the kernels: in an allocation of its own when they run elsewhere."""
        return allocate(self.cp, spec, shape, shared=self.isolated)

    def _settle(self) -> float:
        """Wait for every kernel's process; the milliseconds their device synchronizes waited,
        one after another (timing's ``settle``)."""
        return sum(kernel.settle() for kernel in self.sandboxes)

    def release_shared(self) -> None:
        """The end of a scenario: the kernels' processes unmap its buffers before they go."""
        for kernel in self.sandboxes:
            kernel.forget_all()

    def close(self) -> None:
        for kernel in self.sandboxes + self._hosts_ahead:
            kernel.close()
        self._hosts_ahead = []

    def enter(self, phase: str) -> None:
        """Say which phase of the current scenario runs: the parent's stall limit follows it
        (short where the candidate's code runs, long for the harness's own work)."""
        self.switch(phase)
        if self.scenario is not None:
            index, name = self.scenario
            self.emit({"type": "progress", "index": index, "scenario": name, "phase": phase})

    def switch(self, phase: str) -> None:
        """Make ``phase`` the current one, the time since the last switch going to the one it
        ends (``phase_s``); silent, unlike ``enter``."""
        now = time.perf_counter()
        self.phase_s[self.phase] = self.phase_s.get(self.phase, 0.0) + now - self._phase_began
        self._phase_began, self.phase = now, phase

    def begin_phases(self, phase: str) -> None:
        """A new scenario's clock: nothing counted yet, ``phase`` running from now."""
        self.phase_s, self._phase_began, self.phase = {}, time.perf_counter(), phase

    def phases_so_far(self) -> dict[str, float]:
        """``phase_s`` with the running phase counted up to now, in milliseconds' precision."""
        self.switch(self.phase)
        return {name: round(seconds, 3) for name, seconds in self.phase_s.items()}

    def sync(self, what: str) -> None:
        try:
            self.stream.synchronize()
        except self.cp.cuda.runtime.CUDARuntimeError as error:
            raise FatalError(f"CUDA error after {what}: {error}", "fail") from None
        # An error in a kernel's own process stays there: ask for it.
        for kernel in self.sandboxes:
            try:
                kernel.check()
            except SandboxError as error:
                raise FatalError(f"CUDA error after {what}: {error.reason}", error.kind) from None


def _uuid_text(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bytes | bytearray):
        return raw.hex()
    return str(raw)


def run_scenario(ev: Evaluation, scenario: dict[str, Any], index: int) -> ScenarioResult:
    cp, task = ev.cp, ev.task
    fields = {k: int(v) for k, v in scenario["fields"].items()}
    result = ScenarioResult(name=scenario["name"], set=scenario["set"], fields=fields)
    rng = random.Random(f"{ev.seed}:{index}:{scenario['name']}")
    floats = {spec.name: spec.draw(fields, rng) for spec in task.floats}
    float_args = [floats[spec.name] for spec in task.floats]
    ints = task.int_args(fields)
    int_names = dict(
        zip(task.scenario_fields, (fields[f] for f in task.scenario_fields), strict=True)
    )
    shapes = {spec.name: spec.dims(fields) for spec in task.tensors}
    set_bytes = sum(math.prod(shapes[s.name]) * s.itemsize for s in task.tensors)
    timed = bool(scenario.get("timed"))
    n_sets = 1
    if timed:
        wanted = task.timing.rotate_l2_multiple * ev.l2_bytes / max(1, set_bytes)
        n_sets = int(min(task.timing.max_rotations, max(1, math.ceil(wanted))))
    generator = cp.random.default_rng(rng.randrange(2**63))
    sets = [{s.name: ev.allocate(s, shapes[s.name]) for s in task.tensors} for _ in range(n_sets)]
    for tensors in sets:
        for spec in task.inputs:
            fill_random(cp, tensors[spec.name], generator)
    launches = [
        ev.candidate.bind_tensors(list(tensors.values()), ints, float_args, ev.stream.ptr)
        for tensors in sets
    ]

    ev.scenario = (index, result.name)
    progress = ev.enter

    # 1. One call on poisoned outputs, judged on every element.
    progress("check")
    if not _checked_call(ev, sets[0], launches[0], int_names, floats, result, "the first call"):
        return result
    if not timed:
        result.passed = True
        return result

    # 2. Timing; inputs change in place between warm-up and the measured calls and again before
    # each measured call, and the outputs of the measured calls themselves are then judged (one
    # drawn at random, and the last on each set), so no result can be cached by address or by
    # content.
    progress("time")
    ev.forget_round_trips()  # from here on, the timed run's own

    # What the inputs held when the measured calls began: the judge's reference is built from
    # the buffers after timing, so a candidate that rewrote its inputs (zeroed them, say, and
    # then had nothing to compute) would be judged against its own rewrite.
    pristine: list[dict[str, Any]] = []

    def refill() -> None:
        pristine.clear()
        for tensors in sets:
            for spec in task.inputs:
                fill_random(cp, tensors[spec.name], generator)
            pristine.append(snapshot_inputs(task, tensors))

    def call(i: int) -> None:
        if launches[i]() != 0:
            raise LaunchFailed

    # Every measured call sees freshly perturbed inputs, and one of them, drawn at random, is
    # judged on its own outputs (judged_call.py). The perturbations are replayed on `pristine`
    # afterwards, so it holds what the inputs must hold then.
    judging = random.Random(f"{ev.seed}:{index}:{result.name}:judged:{ev.entropy}")
    watch = _watch_measured_calls(ev, sets, judging)
    # The peers, ready before the candidate is timed, so that they can be timed with it.
    peer_calls, absent = _ready_peers(ev, sets, fields, floats)
    for name, why in absent.items():
        result.peers[name] = PeerTiming(name=name, absent=why)
    peer_stats: dict[str, TimingStats] = {}
    # The scenario's set may time for less long than the task (a quick set); how it times stays
    # the task's, and the starting kernel is timed for as long as this (_time_baseline; the
    # kept-work floor below aside: the starting kernel's samples are never compared).
    timing = task.timing_for(scenario["set"])
    if every_input_checked(task) and timing is task.timing:
        # Enough samples for the kept-work rule to decide, whatever the probe said (kept_work.py),
        # on the scenarios timed for the task's own durations: the objective's, which decide what
        # is verified. A set of shorter durations (the quick set: the agent's loop, 5 s) keeps
        # its count, and the rule decides there where the samples allow.
        timing = with_sample_floor(timing)
    probes = ev.in_turn_probes() if task.timing.method == "flushed" else []
    if ev.gate is not None:
        ev.gate.take_holds_us()  # this scenario's timed run's own, below
    try:
        companions = (
            _companions(ev, shapes, ints, float_args, n_sets, f"{index}:{result.name}")
            if task.timing.method == "flushed"
            else []
        )
        if task.timing.method == "flushed" and (companions or peer_calls or probes):
            # Candidate, best-so-far (and starting kernel) and peers in turn, one sample of each
            # per round: every ratio compares samples that ran next to each other
            # (evaluate/peer_calls.py). With the probe in turn, its calls too
            # (evaluate/handover_cost.py, "in turn").
            calls: list[Callable[[int], None]] = [call]
            hooks: list[MeasuredCallWatch | None] = [watch]
            for companion in companions:
                calls.append(companion.call)
                hooks.append(_watch_measured_calls(ev, companion.sets, companion.judging))

            def after_warmup() -> None:
                refill()
                for companion in companions:
                    companion.refill()

            first_peer = len(calls)
            calls.extend(peer_calls)
            hooks.extend([None] * len(peer_calls))
            first_probe = len(calls)
            calls.extend(probe_call for _, probe_call in probes)
            hooks.extend([None] * len(probes))
            in_turn = time_interleaved(
                cp,
                ev.stream,
                calls,
                n_sets,
                timing,
                after_warmup=after_warmup,
                hooks=hooks,
                settle=ev.settle,
                gate=ev.gate,
            )
            # The kernels' figures less the hand-over when they run in processes of their own
            # (before the ratios: both sides of one carry it); the peers run here, with none.
            costs = ev.in_turn_costs(probes, in_turn.stats[first_probe:]) if probes else {}
            if id(ev.candidate) in costs:
                result.handover_us = round(costs[id(ev.candidate)].us, 3)
            in_turn.stats[0] = stats = ev.net(in_turn.stats[0], ev.candidate, costs)
            for at, companion in enumerate(companions, start=1):
                in_turn.stats[at] = ev.net(in_turn.stats[at], companion.kernel, costs)
                _take_companion_figure(result, companion, in_turn.stats[at], stats, watch)
            for k, peer in enumerate(peer_calls):
                peer_stats[peer.name] = in_turn.stats[first_peer + k]
        else:
            stats = time_calls(
                cp,
                ev.stream,
                call,
                n_sets,
                timing,
                after_warmup=refill,
                hooks=watch,
                settle=ev.settle,
                gate=ev.gate,
            )
            stats = ev.net(stats, ev.candidate)
    except LaunchFailed:
        result.passed = False
        result.reasons.append("ks_launch returned nonzero while being timed")
        return result
    except GateLetGo:
        pass  # named below, once the stream is through
    ev.sync("the timed calls")
    if ev.gate is not None:
        holds = ev.gate.take_holds_us()
        result.gate_hold_us = round(statistics.median(holds), 1) if holds else None
    if not ev.gates_held_within_their_limit():
        result.passed = False
        result.reasons.append(GATE_KEPT_WAITING)
        return result
    slow_launch = ev.slow_launch_reason()
    if slow_launch is not None:
        result.passed = False
        result.reasons.append(slow_launch)
        return result
    if not ev.samples_started_on_a_free_gpu():
        result.passed = False
        result.reasons.append(
            "the GPU was not free before a timed sample: work beside the judge's held an SM "
            "past the limit of the judge's fence"
        )
        return result
    seen = _replay_perturbations(ev, watch, pristine)
    # Work outside the given stream is named before any output is judged: it also makes the
    # outputs read on the stream wrong (copied before the work ends), which would hide the cause.
    if _hidden_work_fails(stats, result):
        return result
    if not _inputs_kept(ev, sets, pristine, result, "the timed calls"):
        return result
    if not _judged_call_passes(ev, watch, seen, int_names, floats, result):
        return result
    set0_reference: dict[str, Any] = {}
    for i, tensors in enumerate(sets):
        if not _judge(ev, tensors, int_names, floats, result, f"timed call on input set {i}"):
            return result
        if i == 0:
            set0_reference = ev.last_reference
    result.passed = True
    result.ms = stats.median_ms
    result.spread = stats.spread
    result.samples = len(stats.samples_ms)
    fastest = stats.fastest
    result.fastest = None if fastest is None else round(fastest, 4)
    flops = float(ev.flops(fields)) if ev.flops else None
    if flops:
        result.tflops = flops / (stats.median_ms * 1e-3) / 1e12
    if beyond_peak(result, task.timing.max_tflops):
        return result
    if skipped_work(result, task.timing):
        return result
    if kept_work_fails(task, stats.samples_ms, watch.every_sample, result):
        return result
    _hold_to_every_input(result, stats, watch.every_sample, flops)
    if stats.spread > 0.1:
        result.timing_notes.append(f"noisy: p10-p90 spread {stats.spread:.0%} of the median")

    # 3. Peers: timed above with the candidate where the method allows, else alone right after
    # it, on the same buffers and stream; checked on set 0 against the reference just built.
    progress("peers")
    for peer in peer_calls:
        result.peers[peer.name] = _time_peer(
            ev, peer, n_sets, peer_stats.get(peer.name), set0_reference, flops, timing
        )
    return result


def _ready_peers(
    ev: Evaluation,
    sets: list[dict[str, GuardedTensor]],
    fields: dict[str, int],
    floats: dict[str, float],
) -> tuple[list[PeerCall], dict[str, str]]:
    """The scenario's peers on the candidate's input sets, each called once on set 0 (its first
    call loads what it loads lazily, outside any timing), and why the others are absent."""
    task = ev.task
    bodies = [{s.name: (t[s.name].body, s.dtype) for s in task.inputs} for t in sets]
    ready, absent = prepare_peer_calls(ev.peers, bodies, fields, floats)
    working: list[PeerCall] = []
    for peer in ready:
        try:
            peer.run_once(0)
            ev.sync(f"peer {peer.name}")
        except FatalError:
            raise
        except Exception as error:
            absent[peer.name] = f"{peer.name} failed ({type(error).__name__}: {error})"
            continue
        working.append(peer)
    return working, absent


class _PairedCalls:
    """The best-so-far kernel (or the starting kernel) on input sets of its own, shaped and
    filled like the candidate's and perturbed before every measured call like them (its own
    MeasuredCallWatch), so it is timed under the same conditions; its outputs are never judged
    (it was verified when it was judged itself), and its own buffers keep the candidate's
    outputs the ones judged. ``scenario`` seeds its random streams; ``who`` names it; ``role``:
    "paired" (its round ratios make the paired figure) or "start" (its time alone is kept)."""

    def __init__(
        self,
        ev: Evaluation,
        kernel: Kernel | SandboxedKernel,
        shapes: dict[str, tuple[int, ...]],
        ints: list[int],
        float_args: list[float],
        n_sets: int,
        scenario: str,
        who: str = "the best kernel",
        role: str = "paired",
    ) -> None:
        cp, task = ev.cp, ev.task
        self.kernel, self.role, self._who = kernel, role, who
        # Random streams of its own: the candidate's inputs draw what they draw unpaired.
        seeds = random.Random(f"{ev.seed}:{scenario}:paired")
        self._cp, self._task = cp, task
        self._generator = cp.random.default_rng(seeds.randrange(2**63))
        self.judging = random.Random(f"{ev.seed}:{scenario}:paired:judged:{ev.entropy}")
        self.sets = [
            {s.name: ev.allocate(s, shapes[s.name]) for s in task.tensors} for _ in range(n_sets)
        ]
        self.refill()
        self._launches = [
            kernel.bind_tensors(list(tensors.values()), ints, float_args, ev.stream.ptr)
            for tensors in self.sets
        ]
        # One call now, untimed: its lazy module load falls outside the probe of the timed
        # calls, as the candidate's falls in its checked call.
        self.call(0)

    def refill(self) -> None:
        for tensors in self.sets:
            for spec in self._task.inputs:
                fill_random(self._cp, tensors[spec.name], self._generator)

    def call(self, i: int) -> None:
        # Not LaunchFailed: that would blame the candidate for this kernel's failure.
        if self._launches[i]() != 0:
            raise FatalError(f"{self._who}, timed beside the candidate, failed to launch", "error")


def _companions(
    ev: Evaluation,
    shapes: dict[str, tuple[int, ...]],
    ints: list[int],
    float_args: list[float],
    n_sets: int,
    label: str,
) -> list[_PairedCalls]:
    """The kernels timed in turn beside the candidate on this scenario, in their turn's order:
    the paired one (the best so far, or the starting kernel where nothing else is paired),
    then the starting kernel where it runs beside a best so far. Each on sets of its own."""
    found = []
    if ev.paired is not None:
        who = ev.request.get("paired_as") or "the best kernel"
        found.append(_PairedCalls(ev, ev.paired, shapes, ints, float_args, n_sets, label, who=who))
    if ev.start_beside is not None:
        found.append(
            _PairedCalls(
                ev,
                ev.start_beside,
                shapes,
                ints,
                float_args,
                n_sets,
                f"{label}:start",
                who="the starting kernel",
                role="start",
            )
        )
    return found


def _take_companion_figure(
    result: ScenarioResult,
    companion: _PairedCalls,
    figure: TimingStats,
    candidate: TimingStats,
    watch: MeasuredCallWatch,
) -> None:
    """A kernel timed beside the candidate, into the result: the paired one's time and round
    ratios (``paired_ms``, ``paired_ratios``), the starting kernel's time (``start_ms``)."""
    if companion.role == "start":
        result.start_ms = figure.median_ms
        return
    result.paired_ms = figure.median_ms
    result.paired_ratios = _paired_speedups(
        figure.samples_ms, candidate.samples_ms, watch.every_sample
    )


def beyond_peak(result: ScenarioResult, max_tflops: float | None) -> bool:
    """Fail a scenario timed faster than the device can compute; True when it was."""
    if max_tflops is None or result.tflops is None or result.tflops <= max_tflops:
        return False
    result.passed = False
    result.reasons.append(
        f"timed at {result.tflops:.0f} TFLOP/s, above the device's peak of {max_tflops:.0f}: "
        "the timed calls cannot have done the work"
    )
    return True


def skipped_work(result: ScenarioResult, timing: Timing) -> bool:
    """Fail a scenario one of whose measured calls took under ``timing.min_fastest`` of the
    median (a call that did far less work than the others: docs/RELIABILITY.md, "Skipped calls
    and the paired figure"); True when it did."""
    rule, fastest, ms = timing.min_fastest, result.fastest, result.ms
    if rule is None or fastest is None or ms is None or ms < timing.fastest_floor_ms:
        return False
    if fastest >= rule:
        return False
    result.passed = False
    result.reasons.append(
        f"a measured call took {fastest:.3f} of the median ({fastest * ms * 1000:.1f} us "
        f"against {ms * 1000:.1f} us; the rule: {rule:g} and more): a call that did far less "
        "work than the others, as one that skips its work does"
    )
    return True


def _checked_call(
    ev: Evaluation,
    tensors: dict[str, GuardedTensor],
    launch: Callable[[], int],
    int_names: dict[str, int],
    floats: dict[str, float],
    result: ScenarioResult,
    what: str,
) -> bool:
    cp = ev.cp
    for spec in ev.task.outputs:
        poison_output(cp, tensors[spec.name])
    saved = snapshot_inputs(ev.task, tensors)
    # A device-wide wait: whatever stream the harness's own fills used, they are done.
    cp.cuda.runtime.deviceSynchronize()
    code = launch()
    ev.sync(what)
    if code != 0:
        result.passed = False
        result.reasons.append(f"ks_launch returned {code}")
        return False
    # The harness's work from here, under its own stall limit: on a machine whose CuPy cache
    # was empty, these checks' first use once took seconds (evaluate/compile_watch.py).
    ev.enter("judge")
    for _, name in changed_inputs(cp, [tensors], [saved]):
        result.passed = False
        result.reasons.append(f"input {name!r} was modified by the kernel")
    return _judge(ev, tensors, int_names, floats, result, what) and result.passed is not False


def snapshot_inputs(task: Task, tensors: dict[str, GuardedTensor]) -> dict[str, Any]:
    """A device copy of each input tensor of one input set."""
    return {spec.name: tensors[spec.name].body.copy() for spec in task.inputs}


def changed_inputs(
    xp: Any, sets: list[dict[str, GuardedTensor]], snapshots: list[dict[str, Any]]
) -> list[tuple[int, str]]:
    """(set index, input name) of every input that no longer holds its snapshot."""
    return [
        (i, name)
        for i, (tensors, snapshot) in enumerate(zip(sets, snapshots, strict=True))
        for name, saved in snapshot.items()
        if not bool(xp.array_equal(saved, tensors[name].body))
    ]


def _inputs_kept(
    ev: Evaluation,
    sets: list[dict[str, GuardedTensor]],
    snapshots: list[dict[str, Any]],
    result: ScenarioResult,
    what: str,
) -> bool:
    changed = changed_inputs(ev.cp, sets, snapshots)
    if changed:
        result.passed = False
        named = ", ".join(f"{name!r} of input set {i}" for i, name in changed)
        result.reasons.append(f"{what} modified inputs (inputs are read-only): {named}")
    return not changed


def _hidden_work_fails(stats: TimingStats, result: ScenarioResult) -> bool:
    """Fails ``result`` when a timed run saw work the stream's events did not: the device busy
    past a measured run's end, or the wall-clock cross-check; the reason names which, with its
    figures. The tail and its limit go into ``result`` either way."""
    result.tail_ms, result.tail_limit_ms = stats.max_tail_ms, stats.tail_limit_ms
    if not stats.hidden_work:
        return False
    seen: list[str] = []
    if stats.hidden_by_tail:
        seen.append(
            f"the device stayed busy {stats.max_tail_ms:.3f} ms after the stream's last work "
            f"in a measured run (limit {stats.tail_limit_ms:.3f} ms)"
        )
    if stats.hidden_by_cross_check:
        seen.append(
            f"cross-check: {stats.wall_ms_per_call:.3f} ms wall per call "
            f"against {stats.event_ms_per_call:.3f} ms on the stream"
        )
    result.passed = False
    result.reasons.append("work outside the given stream: " + "; ".join(seen))
    return True


def perturbed_inputs(task: Task) -> tuple[TensorSpec, ...]:
    """The inputs flipped before each measured call: the task's `[timing] perturb`, or all."""
    wanted = task.timing.perturb
    return tuple(spec for spec in task.inputs if not wanted or spec.name in wanted)


COPY_ASIDE_VARIABLE = "KERNELSEEK_COPY_ASIDE"


def copy_outputs_only() -> bool:
    """What the copy after every measured sample holds: the outputs (the default), or the whole
    set with ``KERNELSEEK_COPY_ASIDE=set`` (kept to measure the two against each other)."""
    value = os.environ.get(COPY_ASIDE_VARIABLE, "outputs")
    if value not in ("outputs", "set"):
        raise FatalError(
            f"{COPY_ASIDE_VARIABLE} must be 'outputs' or 'set', not {value!r}", "error"
        )
    return value == "outputs"


def every_input_checked(task: Task) -> bool:
    """Whether a share of the measured samples gets every input perturbed (kept_work.py): where
    the task perturbs only some of its floating-point inputs and its share is above 0."""
    floating = {spec.name for spec in task.inputs if spec.dtype in SIGN_BITS}
    listed = {spec.name for spec in perturbed_inputs(task)} & floating
    return task.timing.every_input_share > 0 and listed != floating


def kept_work_fails(
    task: Task, samples_ms: list[float], every_sample: list[bool], result: ScenarioResult
) -> bool:
    """Fail ``result`` where the samples after every input changed ran slower than the others
    beyond the rule (kept_work.py); their ratio goes into the result either way."""
    if not every_sample:
        return False
    check = compare_groups(samples_ms, every_sample)
    if check is None:
        return False
    result.every_input_ratio = round(check.ratio, 4)
    if not check.kept_work():
        return False
    result.passed = False
    result.reasons.append(check.reason([spec.name for spec in perturbed_inputs(task)]))
    return True


def _hold_to_every_input(
    result: ScenarioResult, stats: TimingStats, every_sample: list[bool], flops: float | None
) -> None:
    """The run's figure held to its every-input samples (kept_work.py, ``held_ms``): a kernel
    that keeps work and hides it from the rule with slow decoy samples reads its full time."""
    if not every_sample:
        return
    held = held_ms(stats.median_ms, compare_groups(stats.samples_ms, every_sample))
    if held == stats.median_ms:
        return
    result.ms = held
    if flops:
        result.tflops = flops / (held * 1e-3) / 1e12
    if held > stats.median_ms * (1.0 + HELD_NOTE_ABOVE):
        result.timing_notes.append(
            f"the samples after every input changed ran {held / stats.median_ms - 1:.1%} "
            "slower than the run's median: their median is the figure"
        )


def _paired_speedups(
    best_ms: list[float], candidate_ms: list[float], every_sample: list[bool]
) -> list[float]:
    """Per round, the best-so-far's sample over the candidate's (rounds with a sample not
    positive left out), held to the rounds where the candidate's inputs all changed
    (kept_work.py, ``held_speedups``)."""
    rounds = [
        (best / mine, every_sample[i] if every_sample else False)
        for i, (best, mine) in enumerate(zip(best_ms, candidate_ms, strict=True))
        if best > 0 and mine > 0
    ]
    speedups = [ratio for ratio, _ in rounds]
    if not every_sample:
        return speedups
    return held_speedups(speedups, [flag for _, flag in rounds])


def _set_flippers(
    cp: Any, bodies: list[dict[str, Any]], specs: tuple[TensorSpec, ...]
) -> list[SignFlipper]:
    """A sign-flip kernel per input set over ``specs``' tensors (``bodies``: each set's device
    arrays by name): the live sets' and the judge's snapshots alike, so a replay flips as the
    run did."""
    return [
        SignFlipper(cp, [(arrays[spec.name], spec.dtype) for spec in specs]) for arrays in bodies
    ]


def _watch_measured_calls(
    ev: Evaluation, sets: list[dict[str, GuardedTensor]], rng: random.Random, label: str = ""
) -> MeasuredCallWatch:
    """The hooks of one timed run: a sign-flip kernel per input set, and buffers of their own
    for the judged call's tensors and for the same copy after every other sample
    (judged_call.py), allocated now rather than between the measured calls."""
    cp, task = ev.cp, ev.task
    bodies = [{name: tensor.body for name, tensor in tensors.items()} for tensors in sets]
    flippers = _set_flippers(cp, bodies, perturbed_inputs(task))
    # The outputs alone by default: the inputs a call saw are known from the replay, and
    # `_inputs_kept` checks every input after timing; copying the whole set (the inputs too,
    # `KERNELSEEK_COPY_ASIDE=set`, the judge of 2026-12-07 morning) put about four times the
    # memory-bound work between two samples, where do_bench puts only its flush.
    copied = [spec.name for spec in task.outputs] if copy_outputs_only() else list(sets[0])
    aside = {name: cp.empty_like(sets[0][name].body) for name in copied}
    decoy = {name: cp.empty_like(sets[0][name].body) for name in copied}

    def perturb(set_index: int, key: int) -> None:
        flippers[set_index](key)

    perturb_every: Callable[[int, int], None] | None = None
    if every_input_checked(task):
        every_flippers = _set_flippers(cp, bodies, task.inputs)

        def perturb_every(set_index: int, key: int) -> None:
            every_flippers[set_index](key)

    def copy_aside(set_index: int, keep: bool) -> dict[str, Any]:
        into = aside if keep else decoy
        for name in copied:
            body = sets[set_index][name].body
            into[name].data.copy_from_device_async(body.data, body.nbytes, ev.stream)
        return into

    return MeasuredCallWatch(
        len(sets),
        rng,
        perturb,
        copy_aside,
        label,
        perturb_every=perturb_every,
        every_share=task.timing.every_input_share,
    )


def _replay_perturbations(
    ev: Evaluation, watch: MeasuredCallWatch, snapshots: list[dict[str, Any]]
) -> dict[str, Any]:
    """Apply the run's perturbations to ``snapshots`` (the inputs as the measured calls began),
    which then hold what the inputs must hold now; returns a copy of the inputs the judged call
    saw."""
    ev.enter("judge")
    if watch.judged is None:
        raise FatalError("the measured calls ran without a call chosen to judge", "error")
    cp, task = ev.cp, ev.task
    flippers = _set_flippers(cp, snapshots, perturbed_inputs(task))
    every_flippers = _set_flippers(cp, snapshots, task.inputs)
    seen: dict[str, Any] = {}

    def apply(set_index: int, key: int) -> None:
        flippers[set_index](key)

    def apply_every(set_index: int, key: int) -> None:
        every_flippers[set_index](key)

    def capture(set_index: int) -> None:
        seen.update({name: array.copy() for name, array in snapshots[set_index].items()})

    replay(watch.log, watch.judged, apply, capture, apply_every)
    ev.stream.synchronize()
    return seen


def _judged_call_passes(
    ev: Evaluation,
    watch: MeasuredCallWatch,
    seen: dict[str, Any],
    int_names: dict[str, int],
    floats: dict[str, float],
    result: ScenarioResult,
) -> bool:
    """The judged measured call's copied outputs within tolerance of the reference for the
    inputs it saw (``seen``), and its copied inputs (where copied: ``KERNELSEEK_COPY_ASIDE=set``)
    equal to those."""
    what = watch.describe()
    if watch.aside is None:
        raise FatalError(f"{what} was never copied aside", "error")
    aside = watch.aside
    changed = [
        name
        for name, array in seen.items()
        if name in aside and not bool(ev.cp.array_equal(array, aside[name]))
    ]
    if changed:
        result.passed = False
        named = ", ".join(repr(name) for name in changed)
        result.reasons.append(f"{what} modified inputs (inputs are read-only): {named}")
        return False
    reference = _reference(ev, seen, int_names, floats)
    outputs = {spec.name: aside[spec.name] for spec in ev.task.outputs}
    return _outputs_checked(ev, outputs, reference, result, what)


def _judge(
    ev: Evaluation,
    tensors: dict[str, GuardedTensor],
    int_names: dict[str, int],
    floats: dict[str, float],
    result: ScenarioResult,
    what: str,
) -> bool:
    """Guards intact and every output within tolerance of the reference for these inputs."""
    ev.enter("judge")  # the harness's work from here: the candidate's calls have finished
    inputs = {spec.name: tensors[spec.name].body for spec in ev.task.inputs}
    reference = _reference(ev, inputs, int_names, floats)
    ev.last_reference = reference
    return _judge_against(ev, tensors, reference, result, what)


def _judge_against(
    ev: Evaluation,
    tensors: dict[str, GuardedTensor],
    reference: dict[str, Any],
    result: ScenarioResult,
    what: str,
) -> bool:
    """Guards intact and every output within tolerance of ``reference`` (built for these
    inputs)."""
    cp, task = ev.cp, ev.task
    if ev.phase != "judge":
        ev.enter("judge")
    for name, tensor in tensors.items():
        if not tensor.guards_intact(cp):
            result.passed = False
            result.reasons.append(f"{what}: wrote outside tensor {name!r} (guard band changed)")
    outputs = {spec.name: tensors[spec.name].body for spec in task.outputs}
    return _outputs_checked(ev, outputs, reference, result, what)


def _outputs_checked(
    ev: Evaluation,
    outputs: dict[str, Any],
    reference: dict[str, Any],
    result: ScenarioResult,
    what: str,
) -> bool:
    """Every output (a device array by name) within tolerance of ``reference``."""
    cp, task = ev.cp, ev.task
    if ev.phase != "judge":
        ev.enter("judge")
    for spec in task.outputs:
        check = check_output(
            cp,
            spec.name,
            spec.dtype,
            outputs[spec.name],
            reference[spec.name],
            reference.get(f"{spec.name}:lowp"),
            task.tolerances[spec.name],
        )
        if spec.name == task.outputs[0].name:
            result.max_error = check.max_error
            result.tolerance = check.tolerance
        previous = result.output_errors.get(spec.name)
        largest = check.largest_error
        if largest is not None and (previous is None or largest > previous):
            result.output_errors[spec.name] = largest
        if not check.passed:
            result.passed = False
            result.reasons.extend(f"{what}: {reason}" for reason in check.reasons)
    return result.passed is not False


def _reference(
    ev: Evaluation,
    bodies: dict[str, Any],
    int_names: dict[str, int],
    floats: dict[str, float],
) -> dict[str, Any]:
    """The task's reference for the inputs in ``bodies`` (device arrays in storage form)."""
    cp, task = ev.cp, ev.task
    phase = ev.phase
    ev.switch("reference")
    inputs = {s.name: to_float32(cp, bodies[s.name], s.dtype) for s in task.inputs}
    lowp_dtypes = [s.dtype for s in task.outputs if task.tolerances[s.name].rule == "lowp"]
    lowp = (lambda x: round_to(cp, x, lowp_dtypes[0])) if lowp_dtypes else None
    try:
        reference = ev.reference(inputs, int_names, floats, lowp)
        ev.stream.synchronize()
    except FatalError:
        raise
    except Exception as error:
        raise FatalError(
            f"the task's reference failed: {type(error).__name__}: {error}", "error"
        ) from error
    ev.switch(phase)
    return reference


def _time_peer(
    ev: Evaluation,
    peer: PeerCall,
    n_sets: int,
    stats: TimingStats | None,
    reference: dict[str, Any],
    flops: float | None,
    timing: Timing,
) -> PeerTiming:
    """One peer's timing (``stats``: its samples from the candidate's interleaved run; None: timed
    alone now, for as long as ``timing`` says), and its outputs on set 0 judged against
    ``reference``, that set's reference."""
    cp = ev.cp
    try:
        outputs = peer.run_once(0)
        ev.sync(f"peer {peer.name}")
        notes = _peer_check(ev, peer.name, outputs, reference)
        if stats is None:
            with ev.others_stopped():
                stats = time_calls(cp, ev.stream, peer, n_sets, timing)
            ev.sync(f"peer {peer.name}")
    except FatalError:
        raise
    except Exception as error:
        return PeerTiming(
            name=peer.name, absent=f"{peer.name} failed ({type(error).__name__}: {error})"
        )
    if peer.error is not None:
        return PeerTiming(name=peer.name, absent=peer.error)
    measured = PeerTiming(name=peer.name, ms=stats.median_ms, notes=notes)
    if flops:
        measured.tflops = flops / (stats.median_ms * 1e-3) / 1e12
    return measured


def _peer_check(
    ev: Evaluation,
    name: str,
    outputs: dict[str, Any],
    reference: dict[str, Any],
) -> list[str]:
    """A peer's outputs judged by the same rules: evidence that the tolerances are fair."""
    cp, task = ev.cp, ev.task
    notes: list[str] = []
    for spec in task.outputs:
        if outputs.get(spec.name) is None:
            continue
        stored, dtype = ev.peers.to_cupy(cp, outputs[spec.name])
        check = check_output(
            cp,
            spec.name,
            dtype,
            stored,
            reference[spec.name],
            reference.get(f"{spec.name}:lowp"),
            task.tolerances[spec.name],
        )
        if not check.passed:
            notes.extend(f"{name}: {reason}" for reason in check.reasons)
    return notes


def _time_baseline(ev: Evaluation, scenario: dict[str, Any], index: int) -> float | None:
    """The starting kernel's time on this scenario (from the cache, or measured now), timed for
    as long as the candidate was: its set's durations. A card at its power limit runs a short
    run faster than a long one (an H100, 2026-12-06: the same code timed for the quick set's
    20 ms read 5-10% faster on the long scenarios than for the task's 100 ms)."""
    if ev.baseline is None:
        return None
    timing = ev.task.timing_for(scenario["set"])
    durations = timing_tag(timing)
    if ev.baseline_cache is not None:
        cached = ev.baseline_cache.get(scenario["name"], scenario["fields"], durations)
        if cached is not None:
            return cached
    cp, task = ev.cp, ev.task
    fields = {k: int(v) for k, v in scenario["fields"].items()}
    rng = random.Random(f"{ev.seed}:{index}:{scenario['name']}:baseline")
    float_args = [spec.draw(fields, rng) for spec in task.floats]
    shapes = {spec.name: spec.dims(fields) for spec in task.tensors}
    set_bytes = sum(math.prod(shapes[s.name]) * s.itemsize for s in task.tensors)
    wanted = task.timing.rotate_l2_multiple * ev.l2_bytes / max(1, set_bytes)
    n_sets = int(min(task.timing.max_rotations, max(1, math.ceil(wanted))))
    generator = cp.random.default_rng(rng.randrange(2**63))
    sets = [{s.name: ev.allocate(s, shapes[s.name]) for s in task.tensors} for _ in range(n_sets)]
    for tensors in sets:
        for spec in task.inputs:
            fill_random(cp, tensors[spec.name], generator)
    ints = task.int_args(fields)
    launches = [
        ev.baseline.bind_tensors(list(tensors.values()), ints, float_args, ev.stream.ptr)
        for tensors in sets
    ]

    def call(i: int) -> None:
        if launches[i]() != 0:
            raise LaunchFailed

    # The candidate's own work between samples too (a flip of the listed inputs before each
    # sample, on a quarter every input, and the copy of the outputs after it), on the starting
    # kernel's own buffers; nothing of it is judged. Without it, sm90.cu judged against itself
    # read 1.026x over 36 bench shapes on an H100 (2026-12-07 16:10). That work was one of two
    # differences, not yet told apart (the other: these runs come back to back, the
    # candidate's spaced by its checks); on a card at its power cap either can move the clock.
    # The method belongs to both sides alike whatever the cause.
    judging = random.Random(f"{ev.seed}:{index}:{scenario['name']}:baseline:{ev.entropy}")
    watch = _watch_measured_calls(ev, sets, judging, "the starting kernel")
    ev.switch("baseline")
    ev.emit({"type": "progress", "index": index, "scenario": scenario["name"], "phase": "baseline"})
    try:
        with ev.others_stopped(ev.baseline):
            stats = time_calls(
                cp, ev.stream, call, n_sets, timing, hooks=watch, settle=ev.settle, gate=ev.gate
            )
    except LaunchFailed:
        return None
    except GateLetGo:
        stats = None
    ev.sync("the starting kernel")
    if stats is None or not ev.gates_held_within_their_limit():
        # The starting kernel is the judge's, in a process no candidate touched: the GPU was
        # not the judge's alone, or the judge stalled; no figure of this run can be trusted.
        raise FatalError(
            "the judge's gate let go by its limit while the starting kernel was timed "
            "(the GPU busy with work not the judge's, or the judge stalled)",
            "error",
        )
    stats = ev.net(stats, ev.baseline)
    # Held to its every-input samples as the candidate's figure is (kept_work.py), so that
    # both sides carry the same small rise of that rule.
    ms = stats.median_ms
    if watch.every_sample:
        ms = held_ms(ms, compare_groups(stats.samples_ms, watch.every_sample))
    if ev.baseline_cache is not None:
        ev.baseline_cache.put(scenario["name"], scenario["fields"], ms, durations)
    return ms


def _time_baselines_first(
    ev: Evaluation, scenarios: list[dict[str, Any]]
) -> dict[int, float | None]:
    """The starting kernel's time on every timed scenario, by index, measured (where not
    cached) before the candidate makes a single call. Timed after each scenario's candidate,
    it came after seconds of the candidate's own work (its cross-check calls are bounded only
    by the stall limit): a card left hot runs the next kernel at a lower clock (an H100 at its
    700 W cap, 2026-12-07: FA3 from 1.36 to 1.51 ms within half a second of load), which
    inflates the unpaired speedup, and the cache keeps the slow figure for every later
    candidate on that GPU (docs/RELIABILITY.md, "Heat before the starting kernel")."""
    times: dict[int, float | None] = {}
    if ev.baseline is None:
        return times
    ev.begin_phases("baseline")
    for index, scenario in enumerate(scenarios):
        if not scenario.get("timed"):
            continue
        times[index] = _time_baseline(ev, scenario, index)
        _free_scenario_buffers(ev)
    return times


def _free_scenario_buffers(ev: Evaluation) -> None:
    """Free one scenario's buffers before the next one allocates its own."""
    ev.release_shared()
    ev.cp.get_default_memory_pool().free_all_blocks()


def evaluate_request(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> None:
    ev = Evaluation(request, emit)
    # One `with` for the whole run: CuPy's stream stack falls back to the legacy stream when a
    # nested `with` exits after `Stream.use()`, and the legacy stream does not wait for a
    # non-blocking one, which once let poison fills race the kernel (2026-12-02, H200).
    try:
        with ev.stream:
            _evaluate_scenarios(ev, request, emit)
    finally:
        ev.close()


def _evaluate_scenarios(
    ev: Evaluation, request: dict[str, Any], emit: Callable[[dict[str, Any]], None]
) -> None:
    scenarios = request["scenarios"]
    baselines = {} if request.get("baseline_is_candidate") else _time_baselines_first(ev, scenarios)
    for index, scenario in enumerate(scenarios):
        emit(
            {
                "type": "progress",
                "index": index,
                "total": len(scenarios),
                "scenario": scenario["name"],
                "phase": "start",
            }
        )
        began = time.perf_counter()
        ev.begin_phases("start")
        compiles = ev.compiles.mark()
        result = run_scenario(ev, scenario, index)
        result.compiles = ev.compiles.since(compiles)
        baseline_ms = None
        if result.passed and result.ms is not None:
            baseline_ms = (
                result.ms if request.get("baseline_is_candidate") else baselines.get(index)
            )
        result.wall_s = round(time.perf_counter() - began, 3)
        result.phase_s = ev.phases_so_far()
        emit({"type": "scenario", "result": asdict(result), "baseline_ms": baseline_ms})
        _free_scenario_buffers(ev)
    if ev.baseline_cache is not None:
        ev.baseline_cache.save()
    emit({"type": "done"})


def _protocol_stream() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kernelseek_tui.evaluate.worker")
    parser.add_argument("--task-dir", help="the task, known before the request: load ahead")
    parser.add_argument("--peers", action="store_true", help="load the task's comparators ahead")
    parser.add_argument(
        "--isolation",
        choices=("in-process", "process"),
        help="the isolation the request will ask for (default: the task's): with process, "
        "start the kernels' processes ahead",
    )
    parser.add_argument(
        "--standby-limit",
        type=float,
        default=None,
        help="seconds after its start a worker with no request yet gives up and exits",
    )
    return parser.parse_args(argv)


def _read_request(started: float, limit_s: float | None) -> str:
    """The request's text, or "" when none came: stdin closed (the parent gave this worker up,
    or died) or, with a limit, not a byte of it before the limit passed."""
    if limit_s is not None:
        remaining = max(0.0, limit_s - (time.monotonic() - started))
        readable, _, _ = select.select([sys.stdin], [], [], remaining)
        if not readable:
            return ""
    return sys.stdin.read()


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    options = _options(sys.argv[1:] if argv is None else argv)
    protocol = _protocol_stream()

    # A kernel's process that dies while this one waits on the GPU is reported from its
    # watcher thread (Evaluation._load): one line at a time.
    emitting = threading.Lock()
    sealer = Sealer(None)  # the request brings the key; nothing is emitted before it

    def emit(message: dict[str, Any]) -> None:
        with emitting:
            protocol.write(sealer.line(message) + "\n")
            protocol.flush()

    # Everything that does not depend on the request is ready before it is read: a worker
    # started ahead of its evaluation waits here with it done. A failure is kept and becomes
    # the answer to the request, as it was when the set-up came after the request.
    prepared: Standby | Exception
    try:
        prepared = prepare_standby(
            options.task_dir, peers=options.peers, isolation=options.isolation
        )
    except Exception as error:
        prepared = error
    text = _read_request(started, options.standby_limit)
    if not text.strip():
        return 0  # nothing was asked: nothing to answer
    request = json.loads(text)
    sealer = Sealer.from_request(request)
    try:
        if isinstance(prepared, Exception):
            raise prepared
        hand_over_standby(prepared)
        evaluate_request(request, emit)
    except (FatalError, SandboxError) as error:
        emit({"type": "fatal", "reason": error.reason, "kind": error.kind})
        return 3
    except ImportError as error:
        emit({"type": "fatal", "reason": f"no GPU stack: {error}", "kind": "error"})
        return 3
    except Exception as error:
        traceback.print_exc()
        kind = "fail" if "CUDA" in type(error).__name__ else "error"
        emit({"type": "fatal", "reason": f"{type(error).__name__}: {error}", "kind": kind})
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
