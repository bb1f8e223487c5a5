"""A gate on the judge's stream: a kernel that holds the whole GPU until the host says go.

Why a gate. Timing brackets a sample between two events on the judge's stream. When a call is
enqueued by a slower host (a kernel in a process of its own is one pipe round trip away, tens of
microseconds, against kernels of ten), the GPU can reach the start event before the call is
even enqueued, and the sample then counts the host's latency. The gate goes on the stream just
before the start event and is released once the sample's end event is enqueued: the start event
then runs only when everything up to the end event is on the stream, whatever the host's speed.

Why the whole GPU. While the gate holds, the kernel's process runs its ``ks_launch``, and
nothing of that is timed. A gate of one block left every other SM free, so a ``ks_launch``
could run its whole computation on a stream of its own (the legacy default stream), wait for
it, and leave on the given stream only a short kernel for the events to time: its outputs were
already right when the sample began (found by a review, 2026-12-07; docs/RELIABILITY.md). The
gate is now ``2 x SMs`` blocks of 1024 threads (as the judge's fence, evaluate/gpu_fence.py: an
SM holds at most 2048 threads), and the judge asks for the call only once every block is
resident (``hold`` waits for the gate to say so): from then until the release no block of
anyone else's can start on any SM. A ``ks_launch`` that waits for GPU work of its own then
waits for the gate, the gate for the release, the release for ``ks_launch`` to return: the
gate lets go at its limit and says so (``timed_out``), which fails the scenario.

What it costs: the host can no longer run ahead of the GPU by a sample. Each sample waits on
the host for the work before it and the gate to be on the GPU before the call is asked for;
that wait is outside the sample's events (before the start event), so it adds wall time, not
measured time.

The release is a store into pinned host memory, which the GPU reads directly (unified
addressing); tickets only grow, so releases never need to be waited for. Block 0 reads the
release and hands it to the others through device memory, so one block, not hundreds, polls
the host's memory. A gate never released (the judge failed between hold and release) lets go by
itself after ``timeout_ms`` and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kernelseek_tui.evaluate.gpu_fence import FENCE_THREADS, whole_gpu_blocks

# How long a gate holds before it lets go by itself: far above an honest hand-over (a pipe
# round trip, tens of microseconds) and a collection pause of the judge's, far below the
# seconds a ``ks_launch`` computing on the CPU would need on a timed scenario.
GATE_LIMIT_MS = 1000.0
# How long the host waits for a gate to say it holds before it gives up on the GPU: far above
# any sample ahead of the gate (a slow candidate's call on the largest scenario, tens of ms).
_HOST_BACKSTOP_S = 60.0

_GATE_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(1024, 2)
ks_gate(unsigned long long *state, volatile unsigned long long *host,
        unsigned long long ticket, unsigned long long target, unsigned long long limit_ns) {
    // host[0]: the ticket released (the judge writes it); host[1]: the ticket whose every
    // block is resident (block 0 writes it); host[2]: set once a gate let go by its limit.
    // state[0]: blocks arrived over every gate so far; state[1]: the release, as block 0 saw it.
    if (threadIdx.x == 0) {
        unsigned long long began, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(began));
        bool late = false;
        atomicAdd(&state[0], 1ull);
        while (atomicAdd(&state[0], 0ull) < target) {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (now - began > limit_ns) { late = true; break; }
            __nanosleep(128);
        }
        if (blockIdx.x == 0) {
            if (!late) {
                host[1] = ticket;
                __threadfence_system();
            }
            while (host[0] < ticket) {
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                if (now - began > limit_ns) { late = true; break; }
            }
            atomicMax(&state[1], ticket);
        } else {
            while (atomicAdd(&state[1], 0ull) < ticket) {
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                if (now - began > limit_ns) { late = true; break; }
                __nanosleep(128);
            }
        }
        if (late) {
            host[2] = 1;
            __threadfence_system();
        }
    }
    __syncthreads();
}
"""


class GateLetGo(Exception):
    """A gate let go by its limit, or never held the whole GPU: the timed run stops at the next
    sample (each further one would wait the limit again)."""


class StreamGate:
    """``hold()`` enqueues the gate for the next ticket and waits until it holds the whole
    GPU; ``release()`` opens it; ``timed_out()`` says whether any gate let go by its limit."""

    def __init__(
        self,
        cp: Any,
        stream: Any,
        timeout_ms: float = GATE_LIMIT_MS,
        clear_gpu: Callable[[], None] | None = None,
    ) -> None:
        """``clear_gpu``: work enqueued before each gate that holds the stream until the GPU
        is free of everything else (the judge's fence, with ``KERNELSEEK_HANDOVER=fenced``), so
        every sample starts on a GPU no other process is using: work a kernel's process left
        running, or started between its calls to slow the others' turns, is waited out first."""
        self._cp, self._stream = cp, stream
        self.blocks = whole_gpu_blocks(cp)
        self._kernel = cp.RawKernel(_GATE_SOURCE, "ks_gate")
        self._memory = cp.cuda.alloc_pinned_memory(24)
        self._host = np.frombuffer(self._memory, dtype=np.uint64, count=3)
        self._host[:] = 0
        self._state = cp.zeros(2, dtype=cp.uint64)
        self._ticket = 0
        self._timeout_ms = timeout_ms
        self._never_held = False  # a gate the host stopped waiting for before it held
        self._clear_gpu = clear_gpu
        # Host seconds from each gate holding to its release: the GPU waits that long per
        # sample while the call is handed over, so the samples are not back to back as under
        # do_bench; reported beside the figures (docs/BENCHMARKS.md, "The judge's clock
        # against fa_bench's").
        self._held_at: float | None = None
        self._holds_s: list[float] = []

    def hold(self) -> None:
        """Raises GateLetGo where a gate before this one let go (the GPU has said so by now, or
        the host stopped waiting for it)."""
        if self._never_held or self._host[2]:
            raise GateLetGo(
                "the judge's gate let go by its limit: a call kept it waiting, or the GPU was "
                "not the judge's alone"
            )
        if self._clear_gpu is not None:
            self._clear_gpu()
        self._ticket += 1
        self._kernel(
            (self.blocks,),
            (FENCE_THREADS,),
            (
                self._state,
                self._cp.uint64(self._memory.ptr),
                self._cp.uint64(self._ticket),
                self._cp.uint64(self._ticket * self.blocks),
                self._cp.uint64(int(self._timeout_ms * 1e6)),
            ),
            stream=self._stream,
        )
        self._wait_until_held()
        self._held_at = time.perf_counter()

    def _wait_until_held(self) -> None:
        """Until every block of the current gate is resident (the GPU writes its ticket), or a
        gate let go: a call asked for before then could start work of its own on SMs the gate
        has not yet taken. Spins: the wait is the work ahead of the gate on the stream (the
        sample before, its flush, the fence), microseconds to milliseconds. The gate's limit runs
        on the GPU from when its blocks start, so a long sample before it costs nothing; the
        host's own limit is only a backstop for a GPU that never runs the gate."""
        backstop = time.perf_counter() + _HOST_BACKSTOP_S
        while int(self._host[1]) < self._ticket:
            if self._host[2] or time.perf_counter() > backstop:
                self._never_held = True
                return

    def release(self) -> None:
        self._host[0] = self._ticket
        if self._held_at is not None:
            self._holds_s.append(time.perf_counter() - self._held_at)
            self._held_at = None

    def take_holds_us(self) -> list[float]:
        """How long each gate since the last take held the GPU before its release, in
        microseconds by the host's clock (the hand-over of the call, the host's own pauses)."""
        holds, self._holds_s = self._holds_s, []
        return [seconds * 1e6 for seconds in holds]

    def timed_out(self) -> bool:
        """Whether a gate since the last ask let go by its limit, or never held the whole GPU
        (waits for the stream): a call kept it waiting, or the GPU was not the judge's. Each
        ask covers the gates since the one before, so one timed run's verdict is its own."""
        self._stream.synchronize()
        late = self._never_held or bool(self._host[2])
        self._host[2] = 0
        self._never_held = False
        return late
