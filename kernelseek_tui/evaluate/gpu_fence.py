"""The judge's GPU fence: after a kernel's process says a call is done, a kernel of the judge's
own that can only finish once every SM of the GPU has been free of everything else at once.

Why: under isolation a call ends, for the judge's clock, when the kernel's process writes DONE
(evaluate/sandboxed_kernel.py). That process is the candidate's; code that patches it, or a
kernel of the candidate's that writes the counter itself, can write DONE while the call's work is
still running, and the judge's end event then closes early. The judged call's copy, right after
the end event, catches a DONE that is early by much (docs/RELIABILITY.md); this fence, enqueued
on the judge's stream between the DONE wait and the end event, makes the sample hold whatever is
still running on the GPU when DONE arrives, wherever it came from.

How: ``2 x SMs`` blocks of 1024 threads (an SM holds at most 2048 threads), each of which counts
itself in and waits until all have (a barrier over the whole grid). All of them can be resident
at once only when every SM holds nothing else: a block of anyone else's takes at least one warp's
thread slots. The blocks use no shared memory, so the SMs' shared-memory carve-out does not
change for the fence. A fence that waits longer than ``limit_ms`` (something never let go of an
SM, or the GPU offers fewer SMs than it says) lets go and says so (``timed_out``), rather than
hang the judge.

What it costs is part of every isolated sample, so it is part of the hand-over measured with the
judge's empty kernel (evaluate/handover_cost.py) and taken out with it. Work the kernel's process
enqueues only after its DONE is not yet running when the fence passes, and so is not held; the
judged call's copy still races it.

Fenced, the worker also puts a fence before every sample's gate (evaluate/gate.py), outside
the sample's events: each turn of an interleaved run (the candidate's, the best so far's, a
peer's) starts on a GPU free of everything else, so work a kernel's process starts between its
own calls, to slow the others' turns, is waited out first (a fence there that lets go fails the
scenario: "the GPU was not free before a timed sample").

Chosen with ``KERNELSEEK_HANDOVER=fenced`` (the counters' hand-over plus this fence); off by
default. Run on H100s (2026-12-06): a DONE written 50 us into each call gained nothing fenced;
on the bench set it costs about 4 us of hand-over and moves x FA3 by 0.4%; but a process that
heats the GPU for 1 ms after each call, which the default judge's cross-check catches, passes
fenced (the fence inside each call holds that work on the stream) and reads 2.6-5.2% fast
(docs/RELIABILITY.md). With the judge's trailing launch (evaluate/sandbox_host.cpp, the same
afternoon) that heater loses fenced (x FA3 0.183 against 1.002) and passes unfenced (1.034), and
every process patched to work after its calls lost or gained nothing fenced: the candidate
default, once the bench set is checked against fa_bench with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Block size: half an SM's thread slots (2048 on sm_70 to sm_90), so two blocks fill an SM.
FENCE_THREADS = 1024

FENCE_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(1024, 2)
ks_gpu_fence(unsigned int *state, unsigned int target, unsigned long long limit_ns) {
    // state[0]: blocks arrived, over every fence so far (it wraps; compared cyclically);
    // state[1]: set once a fence let go without every block having arrived.
    if (threadIdx.x == 0) {
        atomicAdd(&state[0], 1u);
        unsigned long long began, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(began));
        for (;;) {
            unsigned int seen = atomicAdd(&state[0], 0u);
            if (static_cast<int>(seen - target) >= 0) break;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (now - began > limit_ns) {
                atomicExch(&state[1], 1u);
                break;
            }
            __nanosleep(128);
        }
    }
    __syncthreads();
}
"""


def whole_gpu_blocks(cp: Any) -> int:
    """How many blocks of ``FENCE_THREADS`` fill every SM of the current device's thread slots:
    all resident at once only when no block of anyone else's is (the fence, the gate)."""
    attributes = cp.cuda.Device().attributes
    per_sm = int(attributes["MaxThreadsPerMultiProcessor"])
    return int(attributes["MultiProcessorCount"]) * max(1, per_sm // FENCE_THREADS)


class GpuFence:
    """The fence for one GPU: ``enqueue`` one on a stream; ``timed_out`` says whether any let go
    before the whole GPU was free."""

    def __init__(self, cp: Any, *, limit_ms: float = 1000.0) -> None:
        self._cp = cp
        self.blocks = whole_gpu_blocks(cp)
        self._kernel = cp.RawKernel(FENCE_SOURCE, "ks_gpu_fence")
        self._state = cp.zeros(2, dtype=cp.uint32)
        self._limit_ns = int(limit_ms * 1e6)
        self._arrived = 0  # blocks enqueued so far, mod 2**32: the next fence's target base

    def enqueue(self, stream: Any) -> None:
        """One fence on ``stream``: the work after it starts once every SM was free at once."""
        self._arrived = (self._arrived + self.blocks) & 0xFFFFFFFF
        self._kernel(
            (self.blocks,),
            (FENCE_THREADS,),
            (self._state, np.uint32(self._arrived), np.uint64(self._limit_ns)),
            stream=stream,
        )

    def timed_out(self, stream: Any) -> bool:
        """Whether a fence enqueued so far let go without the whole GPU (waits for ``stream``)."""
        stream.synchronize()
        return bool(int(self._state[1].get(stream=stream)))
