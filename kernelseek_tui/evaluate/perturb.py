"""Fresh inputs for every measured call: the signs of a random half of the elements flipped.

Without it, every measured call on one input set sees the same content, and a candidate could
keep its outputs from one call to the next (or look them up by the inputs' content) and do no
work. The judge fills inputs with standard-normal values rounded to the tensor's dtype, a
distribution symmetric about zero, and flips each element's sign bit independently with
probability one half: every element keeps exactly its distribution, the elements stay
independent, and outputs computed for the inputs before a flip are wrong after it (for
flash_fwd, half of q's signs flipped changes every score).

One kernel launch per flip covers every floating-point input of a set: it reads and writes
each input once (about a copy of the set's inputs), on the stream, outside the timed events.
Integer inputs are left alone (a sign flip would change their distribution).

The flip is a pure function of (key, tensor position, element index), so the judge can apply
the same flips to its own copy of the inputs and know what every call saw. ``flip_mask`` is the
kernel's hash on the host (numpy), for the tests.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

# The sign bit of each floating-point dtype, in its storage width.
SIGN_BITS = {"bfloat16": 0x8000, "float16": 0x8000, "float32": 0x80000000}
_STORAGE_BITS = {0x8000: np.uint16, 0x80000000: np.uint32}

_THREADS = 256
_MAX_BLOCKS = 2048  # a grid-stride loop past that: the result does not depend on the grid

# Constants of the hash, shared by the kernel and flip_mask (lowbias32 by Chris Wellons).
_MIX_A, _MIX_B = 0x7FEB352D, 0x846CA68B
_HIGH_WORD, _TENSOR_STEP = 0x85EBCA6B, 0x9E3779B9

_SOURCE = r"""
__device__ __forceinline__ unsigned int ks_mix(unsigned int x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}

// Whether element i's sign flips (flip_mask's hash on the host).
__device__ __forceinline__ bool ks_flips(unsigned long long i, unsigned int multiplier,
                                         unsigned int salt) {
    const unsigned int x =
        (unsigned int)i * multiplier + (unsigned int)(i >> 32) * 0x85ebca6bu + salt;
    return ks_mix(x) >> 31;
}

// Elements first, first + stride, ... below count, one by one.
__device__ __forceinline__ void ks_flip_each(unsigned long long address, bool wide,
                                             unsigned long long first,
                                             unsigned long long count,
                                             unsigned long long stride,
                                             unsigned int multiplier, unsigned int salt) {
    for (unsigned long long i = first; i < count; i += stride) {
        if (ks_flips(i, multiplier, salt)) {
            if (wide) reinterpret_cast<unsigned int*>(address)[i] ^= 0x80000000u;
            else reinterpret_cast<unsigned short*>(address)[i] ^= (unsigned short)0x8000u;
        }
    }
}

// table: three words per tensor (blockIdx.y): its address, its element count and its sign bit
// (0x8000 for 16-bit elements, 0x80000000 for 32-bit ones).
extern "C" __global__ void ks_flip_signs(const unsigned long long* table,
                                         unsigned int multiplier, unsigned int offset) {
    const unsigned long long* entry = table + 3 * blockIdx.y;
    const unsigned int salt = ks_mix(offset + blockIdx.y * 0x9e3779b9u);
    ks_flip_each(entry[0], entry[2] == 0x80000000ull,
                 (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x, entry[1],
                 (unsigned long long)gridDim.x * blockDim.x, multiplier, salt);
}

// The same flips, 16 bytes at a time: each thread reads and writes whole 16-byte vectors (8
// 16-bit or 4 32-bit elements), where ks_flip_signs moves 2-byte elements one by one and
// writes half of them (118 us for a 64 MiB q on an H100, 2026-12-07: three times a copy's
// time). The elements past the last whole vector, or every element of a tensor not aligned to
// 16 bytes, go one by one as there.
extern "C" __global__ void ks_flip_signs_vec(const unsigned long long* table,
                                             unsigned int multiplier, unsigned int offset) {
    const unsigned long long* entry = table + 3 * blockIdx.y;
    const unsigned long long count = entry[1];
    const bool wide = entry[2] == 0x80000000ull;
    const unsigned int salt = ks_mix(offset + blockIdx.y * 0x9e3779b9u);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int per_vector = wide ? 4u : 8u;
    const unsigned long long vectors = (entry[0] & 15ull) == 0 ? count / per_vector : 0;
    uint4* base = reinterpret_cast<uint4*>(entry[0]);
    for (unsigned long long v = first; v < vectors; v += stride) {
        const uint4 loaded = base[v];
        unsigned int words[4] = {loaded.x, loaded.y, loaded.z, loaded.w};
        const unsigned long long i0 = v * per_vector;
#pragma unroll
        for (unsigned int j = 0; j < 8; ++j) {
            if (j >= per_vector) break;
            if (ks_flips(i0 + j, multiplier, salt)) {
                // Little-endian: a word's first 16-bit element is its low half.
                if (wide) words[j & 3u] ^= 0x80000000u;
                else words[j >> 1] ^= (j & 1u) ? 0x80000000u : 0x8000u;
            }
        }
        base[v] = make_uint4(words[0], words[1], words[2], words[3]);
    }
    ks_flip_each(entry[0], wide, vectors * per_vector + first, count, stride, multiplier, salt);
}
"""
# Which kernel flips: "scalar" (ks_flip_signs, the default) or "vector" (ks_flip_signs_vec,
# written 2026-12-07 afternoon, the same flips in 16-byte accesses; to be timed and checked on a
# GPU before it becomes the default).
FLIP_VARIABLE = "KERNELSEEK_FLIP"
_FLIP_KERNELS = {"scalar": "ks_flip_signs", "vector": "ks_flip_signs_vec"}
_kernels: dict[tuple[int, str], Any] = {}


def key_parts(key: int) -> tuple[int, int]:
    """A 64-bit key as the kernel's (odd multiplier, offset): an odd multiplier keeps the map
    from an element's index to the hash's input one to one."""
    return ((key >> 32) & 0xFFFFFFFF) | 1, key & 0xFFFFFFFF


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(_MIX_A)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(_MIX_B)
    return x ^ (x >> np.uint32(16))


def flip_mask(count: int, key: int, tensor_position: int) -> np.ndarray:
    """Which of ``count`` elements the kernel flips for ``key`` in the tensor at
    ``tensor_position`` of its table (the set's floating-point inputs, in task order)."""
    multiplier, offset = key_parts(key)
    index = np.arange(count, dtype=np.uint64)
    low = index.astype(np.uint32)  # the low 32 bits, as the kernel's (unsigned int)i
    high = (index >> np.uint64(32)).astype(np.uint32)
    salt = _mix(np.array([(offset + tensor_position * _TENSOR_STEP) & 0xFFFFFFFF], np.uint32))
    x = low * np.uint32(multiplier) + high * np.uint32(_HIGH_WORD) + salt[0]
    return (_mix(x) >> np.uint32(31)).astype(bool)


def flip_signs_host(bodies: list[tuple[np.ndarray, str]], key: int) -> None:
    """What SignFlipper does, on numpy arrays in place (for the tests)."""
    for position, (body, dtype) in enumerate(b for b in bodies if b[1] in SIGN_BITS):
        sign = SIGN_BITS[dtype]
        bits = body.reshape(-1).view(_STORAGE_BITS[sign])
        bits[flip_mask(bits.size, key, position)] ^= bits.dtype.type(sign)


class SignFlipper:
    """Flips the signs of a random half of the floating-point inputs of one input set, on the
    current stream, in one kernel launch; ``bodies``: each input's contiguous device array and
    its task dtype."""

    def __init__(self, cp: Any, bodies: list[tuple[Any, str]], kernel: str | None = None) -> None:
        floating = [(body, dtype) for body, dtype in bodies if dtype in SIGN_BITS]
        self._cp = cp
        self._tensors = len(floating)
        self._largest = max((int(body.size) for body, _ in floating), default=0)
        table = [[int(body.data.ptr), int(body.size), SIGN_BITS[dtype]] for body, dtype in floating]
        self._table = cp.asarray(np.array(table, dtype=np.uint64).reshape(-1))
        self._name = flip_kernel_name(kernel)
        self._kernel = _flip_kernel(cp, self._name)

    def __call__(self, key: int) -> None:
        if self._tensors == 0 or self._largest == 0:
            return
        multiplier, offset = key_parts(key)
        # A thread per element (scalar) or per 16-byte vector of at least 4 (vector).
        per_thread = 4 if self._name == _FLIP_KERNELS["vector"] else 1
        blocks = min(_MAX_BLOCKS, math.ceil(self._largest / (per_thread * _THREADS)))
        self._kernel(
            (blocks, self._tensors),
            (_THREADS,),
            (self._table, self._cp.uint32(multiplier), self._cp.uint32(offset)),
        )


def flip_kernel_name(wanted: str | None = None) -> str:
    """The flip kernel ``wanted`` names ("scalar" or "vector"); by default the one
    ``KERNELSEEK_FLIP`` names, else "scalar"."""
    wanted = wanted or os.environ.get(FLIP_VARIABLE, "scalar")
    if wanted not in _FLIP_KERNELS:
        raise ValueError(
            f"{FLIP_VARIABLE} must be one of {', '.join(_FLIP_KERNELS)}, not {wanted!r}"
        )
    return _FLIP_KERNELS[wanted]


def _flip_kernel(cp: Any, name: str) -> Any:
    """The kernel, compiled once per device before any timed call needs it (a compile in the
    middle of the measured calls would leave the GPU idle there)."""
    device = cp.cuda.Device().id
    kernel = _kernels.get((device, name))
    if kernel is None:
        kernel = cp.RawKernel(_SOURCE, name)
        kernel.compile()
        _kernels[(device, name)] = kernel
    return kernel
