"""A stand-in CuPy for the judge's gate (evaluate/gate.py) on the CPU: it records what is
launched, and its gate kernel "runs" by what the test says the GPU would do (by default: every
block resident at once, so it writes the ticket to the host's word as the real one does)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

SMS = 132  # an H100 SXM's SMs
THREADS_PER_SM = 2048


class PinnedBytes(bytearray):
    ptr = 0


class DeviceWords(np.ndarray):
    """A numpy array standing in for a CuPy one: ``get`` as CuPy's."""

    def get(self, stream: Any = None) -> np.ndarray:
        return np.asarray(self)


def holds_at_once(host: np.ndarray, ticket: int) -> None:
    """The GPU of the honest case: the gate's blocks all resident, so it says it holds."""
    host[1] = ticket


def fake_cp(
    launched: list[Any], gpu: Callable[[np.ndarray, int], None] = holds_at_once
) -> SimpleNamespace:
    """``launched`` gets each kernel's name (and, for the gate, its grid and block as a
    tuple after it); ``gpu(host_words, ticket)`` plays the gate's part on the host's words."""
    pinned: list[PinnedBytes] = []

    def alloc_pinned_memory(size: int) -> PinnedBytes:
        pinned.append(PinnedBytes(size))
        return pinned[-1]

    def raw_kernel(source: str, name: str):
        def launch(grid, block, args, stream=None) -> None:
            launched.append(name)
            if name == "ks_gate":
                launched.append((grid, block))
                gpu(np.frombuffer(pinned[-1], dtype=np.uint64), int(args[2]))

        return launch

    def zeros(n: int, dtype: Any) -> DeviceWords:
        return np.zeros(n, dtype=dtype).view(DeviceWords)

    attributes = {"MultiProcessorCount": SMS, "MaxThreadsPerMultiProcessor": THREADS_PER_SM}
    cuda = SimpleNamespace(
        alloc_pinned_memory=alloc_pinned_memory,
        Device=lambda: SimpleNamespace(attributes=attributes),
    )
    return SimpleNamespace(RawKernel=raw_kernel, cuda=cuda, uint64=np.uint64, zeros=zeros)


class FakeStream:
    def synchronize(self) -> None:
        pass
