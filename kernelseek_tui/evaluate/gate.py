"""A gate on the judge's stream: a kernel that holds the stream until the host says go.

Why. Timing brackets a sample between two events on the judge's stream. When a call is enqueued
by a slower host (a kernel in a process of its own is one pipe round trip away, tens of
microseconds, against kernels of ten), the GPU can reach the start event before the call is
even enqueued, and the sample then counts the host's latency. The gate goes on the stream just
before the start event and is released once the sample's end event is enqueued: the start event
then runs only when everything up to the end event is on the stream, whatever the host's speed.
Where the host is ahead of the GPU (the usual case), the gate finds itself released already and
costs one read of host memory, outside the events.

The release is a store into pinned host memory, which the GPU reads directly (unified
addressing); tickets only grow, so releases never need to be waited for. A gate never released
(the judge failed between hold and release) lets go by itself after ``timeout_ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_GATE_SOURCE = r"""
extern "C" __global__ void ks_gate(const volatile unsigned long long *released,
                                   unsigned long long ticket, unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*released < ticket) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) break;
    }
}
"""


class StreamGate:
    """``hold()`` enqueues the gate for the next ticket; ``release()`` opens it."""

    def __init__(
        self,
        cp: Any,
        stream: Any,
        timeout_ms: float = 5000.0,
        clear_gpu: Callable[[], None] | None = None,
    ) -> None:
        """``clear_gpu``: work enqueued before each gate that holds the stream until the GPU
        is free of everything else (the judge's fence, with ``KERNELSEEK_HANDOVER=fenced``), so
        every sample starts on a GPU no other process is using: work a kernel's process left
        running, or started between its calls to slow the others' turns, is waited out first."""
        import numpy as np

        self._cp, self._stream = cp, stream
        self._kernel = cp.RawKernel(_GATE_SOURCE, "ks_gate")
        self._memory = cp.cuda.alloc_pinned_memory(8)
        self._released = np.frombuffer(self._memory, dtype=np.uint64, count=1)
        self._released[0] = 0
        self._ticket = 0
        self._timeout_ns = int(timeout_ms * 1e6)
        self._clear_gpu = clear_gpu

    def hold(self) -> None:
        if self._clear_gpu is not None:
            self._clear_gpu()
        self._ticket += 1
        self._kernel(
            (1,),
            (1,),
            (
                self._cp.uint64(self._memory.ptr),
                self._cp.uint64(self._ticket),
                self._cp.uint64(self._timeout_ns),
            ),
            stream=self._stream,
        )

    def release(self) -> None:
        self._released[0] = self._ticket
