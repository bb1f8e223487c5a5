"""Device buffers for one scenario: guard bands around every tensor, poison, fresh inputs.

Each tensor lives inside a larger allocation whose two ends are filled with a canary; a kernel
that writes past either end of a tensor changes a canary, which is found after the call.

A tensor for a kernel in a process of its own (``shared``) gets an allocation of its own
(cudaMalloc, not CuPy's pool): CUDA IPC shares whole allocations, and a pooled one holds other
arrays of the judge's beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelseek_tui.evaluate.dtypes import from_float32, poison, storage_dtype
from kernelseek_tui.task import TensorSpec

GUARD_BYTES = 64 * 1024
_CANARY_BYTE = 0x5A


@dataclass(slots=True)
class GuardedTensor:
    spec: TensorSpec
    raw: Any  # the whole allocation, as uint8
    body: Any  # the tensor itself, in its storage dtype and shape
    shape: tuple[int, ...]
    shared: bool = False  # in an allocation of its own, which CUDA IPC may share

    @property
    def ptr(self) -> int:
        return int(self.body.data.ptr)

    @property
    def allocation_ptr(self) -> int:
        """Where the whole allocation (guards included) begins."""
        return int(self.raw.data.ptr)

    def guards_intact(self, xp: Any) -> bool:
        head = self.raw[:GUARD_BYTES]
        tail = self.raw[GUARD_BYTES + self.body.nbytes :]
        return bool((head == _CANARY_BYTE).all()) and bool((tail == _CANARY_BYTE).all())


def allocate(
    xp: Any, spec: TensorSpec, shape: tuple[int, ...], *, shared: bool = False
) -> GuardedTensor:
    count = 1
    for dim in shape:
        count *= dim
    nbytes = count * spec.itemsize
    total = nbytes + 2 * GUARD_BYTES
    if shared:
        memory = xp.cuda.MemoryPointer(xp.cuda.Memory(total), 0)
        raw = xp.ndarray((total,), dtype=xp.uint8, memptr=memory)
    else:
        raw = xp.empty(total, dtype=xp.uint8)
    raw.fill(_CANARY_BYTE)
    body = raw[GUARD_BYTES : GUARD_BYTES + nbytes].view(storage_dtype(spec.dtype)).reshape(shape)
    return GuardedTensor(spec=spec, raw=raw, body=body, shape=shape, shared=shared)


def fill_random(xp: Any, tensor: GuardedTensor, rng: Any) -> None:
    """Standard-normal values rounded to the tensor's dtype, written in place."""
    values = rng.standard_normal(tensor.shape, dtype=xp.float32)
    tensor.body[...] = from_float32(xp, values, tensor.spec.dtype).reshape(tensor.shape)


def poison_output(xp: Any, tensor: GuardedTensor) -> None:
    poison(xp, tensor.body, tensor.spec.dtype)
