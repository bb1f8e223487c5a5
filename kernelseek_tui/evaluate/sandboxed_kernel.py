"""A kernel run in a process of its own (``sandbox_host``), called from the judge as if it were
loaded here: the same ``bind_tensors`` as ``worker.Kernel``, so timing and checking do not
change.

How a call is bracketed. The judge's stream records GO, the host is asked to enqueue the call
(its stream waits for GO, runs ks_launch, records DONE), and the judge's stream then waits for
DONE. The timing events (evaluate/timing.py) are on the judge's stream around all of it, so a
figure comes from the judge's own events and the GPU's ordering, never from the host; what it
adds to a call is the hand-over between the two streams (and contexts), which
benchmarks/sandbox_handover.py measures with an empty kernel. The pipe round trip itself is kept
out of the samples by the gate before each start event (evaluate/gate.py).

The events cross processes, so they are interprocess events, which CUDA makes without timing.
They come in a ring of ``SLOTS`` pairs, and a pair is reused only once the judge's stream has
passed its last wait on DONE (a plain event recorded after that wait): then both of the pair's
last records and both waits on them are done. So no event is ever recorded again while a wait
on its previous record may still be pending, in either process: how a wait issued in one
process sees a record issued in another, when more than one is outstanding, is the part of CUDA
IPC this design does not lean on. The judge stays at most ``SLOTS`` calls ahead of the GPU.

The other hand-over (``handover="counters"``, evaluate/stream_counters.py): two 32-bit
counters in one allocation the host maps. For the n-th call the judge's stream writes GO = n,
the host's stream waits on the GPU until GO >= n, runs ks_launch and writes DONE = n, and the
judge's stream waits until DONE >= n. The counters only grow, so one pair serves every call and
no ring is needed; measured by a standalone probe, half the events' hand-over under MPS.

What the host maps is exactly the allocations bound to it: each tensor must live in an
allocation of its own (``buffers.allocate(..., shared=True)``), since CUDA IPC shares whole
allocations and a pooled one would hand the candidate whatever else the pool put beside it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.buffers import GuardedTensor
from kernelseek_tui.evaluate.sandbox_host import (
    SandboxError,
    SandboxHost,
    bind_command,
    host_executable,
)
from kernelseek_tui.evaluate.stream_counters import (
    COUNTER_HANDOVERS,
    HANDOVERS,
    DriverCounters,
    StreamCounters,
    default_handover,
)

SLOTS = 32
# GO at byte 0 and DONE at byte 64 of the counters' allocation: a cache line each.
_COUNTER_BYTES = 128
_DONE_OFFSET = 64


class SandboxedKernel:
    """``library`` None starts the host without a kernel (device, context and events ready),
    for a worker started ahead of its request; ``load`` then gives it its kernel.
    ``confinement``: how its process confined itself (``SandboxHost.confinement``)."""

    def __init__(
        self,
        library: str | Path | None,
        *,
        cp: Any,
        stream: Any,
        who: str,
        kind: str = "fail",
        on_death: Callable[[str], None] | None = None,
        executable: Path | None = None,
        handover: str | None = None,
        counters: StreamCounters | None = None,
        fence: Any = None,
    ) -> None:
        """``handover``: "fenced", "counters" or "events" (None: ``KERNELSEEK_HANDOVER``, else
        fenced); ``counters``: the driver's stream memory operations, ``fence``: the judge's
        GPU fence for "fenced" (evaluate/gpu_fence.GpuFence; stand-ins in tests)."""
        self._cp, self._stream, self.who = cp, stream, who
        self.handover = handover or default_handover()
        if self.handover not in HANDOVERS:
            raise ValueError(f"handover must be one of {', '.join(HANDOVERS)}")
        self.executable = executable or host_executable()
        self._fence = None
        if self.handover == "fenced":
            from kernelseek_tui.evaluate.gpu_fence import GpuFence

            self._fence = fence if fence is not None else GpuFence(cp)
        self._host = SandboxHost(self.executable, who=who, kind=kind, on_death=on_death)
        try:
            self._set_up(cp, counters)
            if library is not None:
                self._host.ask("load", Path(library).resolve())
        except BaseException:
            self._host.close()  # a host that never became ready is not left behind
            raise
        self._calls = 0
        self._bindings = 0
        # Each call's round trip to the kernel's process (seconds), since ``take_round_trips``.
        self._round_trips: list[float] = []
        self._probed = False
        self._probe_binding: int | None = None
        # Allocation pointer -> (buffer id, the allocation): holding the allocation keeps it
        # alive while the host maps it, whatever the scenario's own references do.
        self._shared: dict[int, tuple[int, Any]] = {}
        self._next_buffer = 0

    @property
    def pid(self) -> int:
        """The kernel's process."""
        return self._host.pid

    def load(
        self,
        library: str | Path,
        *,
        who: str,
        kind: str = "fail",
        on_death: Callable[[str], None] | None = None,
    ) -> None:
        """Give a host started without a kernel its kernel, and the names its errors carry."""
        self.who = who
        self._host.assign(who=who, kind=kind, on_death=on_death)
        self._host.ask("load", Path(library).resolve())

    def probe(self, library: str | Path) -> None:
        """Before ``load``: the judge's empty kernel, called in this process until ``load``
        replaces it, so the hand-over is measured in the very process the kernel will be timed
        in (evaluate/handover_cost.py). Its buffers must be forgotten before ``load``.

        First the host's trailing launch is set (its ``trail``): its own empty kernel after
        every call's DONE from then on, the probe's and the kernel's, so every call is handed
        over in the state that work after a call puts a process in, and the hand-over taken
        out is measured in that state too (handover_cost's docstring says why)."""
        self._host.ask("trail")
        self._host.ask("probe", Path(library).resolve())
        self._probed = True

    def probe_call(self) -> Callable[[], int]:
        """After ``load``: one call of the probe given by ``probe``, still in this process, on
        the judge's stream, to be timed in turn with the kernel's calls (evaluate/
        handover_cost.py, "in turn"). Its binding holds no buffer (the judge's empty kernel
        reads none), so it outlives ``forget_all``; one per process."""
        if not self._probed:
            raise ValueError(f"{self.who}'s process was given no probe")
        if self._probe_binding is None:
            self._probe_binding = self._bindings
            self._bindings += 1
            self._host.ask(bind_command(self._probe_binding, [], [], []))
        binding = self._probe_binding
        return lambda: self._call(binding, probe=True)

    def _set_up(self, cp: Any, counters: StreamCounters | None) -> None:
        # How the process confined itself, before it holds anything of the judge's; a process
        # left unconfined is refused here where KERNELSEEK_REQUIRE_CONFINEMENT=1.
        self.confinement: str = self._host.confinement()
        # The host sees the devices the judge sees (CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER
        # are kept), so the judge's device should have the same ordinal there; its UUID makes
        # sure of it.
        device = cp.cuda.Device().id
        uuid = cp.cuda.runtime.getDeviceProperties(device).get("uuid")
        if isinstance(uuid, bytes | bytearray) and len(uuid) == 16:
            self._host.ask("device", device, bytes(uuid).hex())
        else:  # a CuPy that does not give the UUID as its 16 bytes: the ordinal alone
            self._host.ask("device", device)
        if self.handover in COUNTER_HANDOVERS:
            self._set_up_counters(cp, counters)
            return
        self._go = [self._event() for _ in range(SLOTS)]
        self._done = [self._event() for _ in range(SLOTS)]
        self._passed = [cp.cuda.Event(block=False, disable_timing=True) for _ in range(SLOTS)]
        runtime = cp.cuda.runtime
        for k, (go, done) in enumerate(zip(self._go, self._done, strict=True)):
            go_handle = bytes(runtime.ipcGetEventHandle(go.ptr)).hex()
            done_handle = bytes(runtime.ipcGetEventHandle(done.ptr)).hex()
            self._host.ask("slot", k, go_handle, done_handle)

    def _set_up_counters(self, cp: Any, counters: StreamCounters | None) -> None:
        self._counters = counters if counters is not None else DriverCounters()
        # An allocation of its own (not the pool's): CUDA IPC shares whole allocations.
        self._counter_memory = cp.cuda.Memory(_COUNTER_BYTES)
        base = self._counter_memory.ptr
        cp.cuda.runtime.memset(base, 0, _COUNTER_BYTES)
        self._go_counter, self._done_counter = base, base + _DONE_OFFSET
        self._count = 0
        self._host.ask("counters", bytes(cp.cuda.runtime.ipcGetMemHandle(base)).hex())

    def _event(self) -> Any:
        return self._cp.cuda.Event(block=False, disable_timing=True, interprocess=True)

    def bind_tensors(
        self,
        tensors: Sequence[GuardedTensor],
        ints: Sequence[int],
        floats: Sequence[float],
        stream: int,
    ) -> Callable[[], int]:
        """A call of the kernel on these tensors, enqueued on the judge's ``stream``."""
        if stream != self._stream.ptr:
            raise ValueError("a sandboxed kernel is called on the stream it was made with")
        places = [(self._share(t), t.ptr - t.allocation_ptr) for t in tensors]
        binding = self._bindings
        self._bindings += 1
        self._host.ask(bind_command(binding, places, ints, floats))
        return lambda: self._call(binding)

    def _share(self, tensor: GuardedTensor) -> int:
        if not tensor.shared:
            raise ValueError(
                f"tensor {tensor.spec.name!r} is in a pooled allocation: a sandboxed kernel "
                "gets allocations of their own (buffers.allocate(..., shared=True))"
            )
        base = tensor.allocation_ptr
        known = self._shared.get(base)
        if known is not None:
            return int(known[0])
        buffer = self._next_buffer
        self._next_buffer += 1
        handle = bytes(self._cp.cuda.runtime.ipcGetMemHandle(base)).hex()
        self._host.ask("buffer", buffer, handle)
        self._shared[base] = (buffer, tensor.raw)
        return buffer

    def _call(self, binding: int, probe: bool = False) -> int:
        if self.handover in COUNTER_HANDOVERS:
            return self._count_call(binding, probe)
        k = self._calls % SLOTS
        if self._calls >= SLOTS:
            self._passed[k].synchronize()
        self._calls += 1
        self._go[k].record(self._stream)
        code = self._timed_ask("call", binding, k, *(("probe",) if probe else ()))
        self._stream.wait_event(self._done[k])
        self._passed[k].record(self._stream)
        return code

    def _count_call(self, binding: int, probe: bool = False) -> int:
        # Wraps after 2**32 calls, which the cyclic comparison of the waits allows.
        self._count = (self._count + 1) & 0xFFFFFFFF
        self._counters.write(self._stream.ptr, self._go_counter, self._count)
        code = self._timed_ask("count", binding, self._count, *(("probe",) if probe else ()))
        # Only once the host has enqueued the call (an error above enqueues nothing to wait
        # for, and the next call's counts still match).
        self._counters.wait(self._stream.ptr, self._done_counter, self._count)
        if self._fence is not None:
            # Whatever still runs on the GPU when DONE arrives stays inside the call's sample.
            self._fence.enqueue(self._stream)
        return code

    def _timed_ask(self, *words: object) -> int:
        """A call's command and its return code; the round trip kept (``take_round_trips``)."""
        began = time.perf_counter()
        code = int(self._host.ask(*words))
        self._round_trips.append(time.perf_counter() - began)
        return code

    def take_round_trips(self) -> float | None:
        """The median round trip of the calls since the last take, in milliseconds (None
        without any): the pipe, the host's reply and ``ks_launch``, run while the judge's gate
        holds the GPU (evaluate/gate.py). The gate keeps GPU work out of that time; work done
        on the CPU inside ``ks_launch`` (the inputs copied out, computed there, copied back by
        the copy engines, which the gate does not hold) shows here instead."""
        trips, self._round_trips = self._round_trips, []
        return statistics.median(trips) * 1000.0 if trips else None

    def freeze(self) -> None:
        """Let the kernel's process finish its work (``settle``), then stop it until ``thaw``:
        while another kernel or a peer is timed it can enqueue nothing, from any thread."""
        self.settle()
        self._host.freeze()

    def thaw(self) -> None:
        self._host.thaw()

    def wait_until_gpu_free(self) -> None:
        """With the fence ("fenced"): hold the judge's stream until every SM was free at once,
        and fail where that did not come within the fence's limit (the processes of the other
        kernels being stopped, what is still running is theirs, or another user's). Without the
        fence: nothing to do."""
        if self._fence is None:
            return
        self._fence.enqueue(self._stream)
        if self._fence.timed_out(self._stream):
            raise SandboxError(
                f"the GPU stayed busy after {self.who}'s process was settled and stopped "
                "(the judge's fence waited its limit)",
                "fail",
            )

    def settle(self) -> float:
        """Wait for every stream of the kernel's process (the judge's device synchronize does
        not reach another process's work); returns how long that process's device synchronize
        waited, in milliseconds, by its own clock: the pipe's round trip around it is not work
        of the kernel's, and a stall in it must not read as a tail (docs/RELIABILITY.md). A
        frozen process has nothing to wait for (settled before it was stopped): 0."""
        if self._host.frozen:
            return 0.0
        reply = self._host.ask("devsync")
        try:
            return int(reply) / 1000.0
        except ValueError as error:
            raise SandboxError(
                f"{self.who}'s process answered devsync with {reply[:80]!r}, not the "
                "microseconds it waited",
                self._host.kind,
            ) from error

    def check(self) -> None:
        """Raise SandboxError when the kernel's stream holds an error (a frozen process was
        checked as it was settled, and has run nothing since), or a fence after one of its calls
        let go before the GPU was free."""
        if self._fence is not None and self._fence.timed_out(self._stream):
            raise SandboxError(
                f"{self.who}: the GPU was not free after its process said a call was done "
                "(the judge's fence waited its limit: work left running, or a GPU shared)",
                "fail",
            )
        if self._host.frozen:
            return
        self._host.ask("sync")

    def forget_all(self) -> None:
        """Unmap every shared allocation in the host (their bindings go with them), then let
        them go here: called at the end of each scenario, before its buffers are freed."""
        for buffer, _raw in self._shared.values():
            self._host.ask("forget", buffer)
        self._shared.clear()

    def close(self) -> None:
        self._host.close()
