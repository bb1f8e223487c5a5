"""Storage and rounding of the task dtypes on the array module at hand (cupy or numpy).

CuPy has no bfloat16 dtype, so bf16 tensors are stored as uint16 bit patterns; these helpers
convert them to float32 exactly and round float32 back to bf16 the way the hardware does
(round to nearest, ties to even).
"""

from __future__ import annotations

import functools
from typing import Any

STORAGE = {
    "bfloat16": "uint16",
    "float16": "float16",
    "float32": "float32",
    "int32": "int32",
    "int64": "int64",
}
# A NaN bit pattern per storage dtype, used to poison outputs before each call.
NAN_BITS = {"bfloat16": 0x7FC0, "float16": 0x7E00, "float32": 0x7FC00000}


# Explicit mantissa bits: a value in [2^e, 2^(e+1)) is stored to 2^(e - bits).
MANTISSA_BITS = {"bfloat16": 7, "float16": 10, "float32": 23}


def storage_dtype(dtype: str) -> str:
    return STORAGE[dtype]


def to_float32(xp: Any, array: Any, dtype: str) -> Any:
    """The values of a stored tensor as float32 (exact for bf16 and fp16)."""
    if dtype == "bfloat16":
        return (array.astype(xp.uint32) << 16).view(xp.float32)
    return array.astype(xp.float32)


def from_float32(xp: Any, values: Any, dtype: str) -> Any:
    """float32 values rounded to ``dtype``, in that dtype's storage form."""
    if dtype == "bfloat16":
        bits = xp.ascontiguousarray(values, dtype=xp.float32).view(xp.uint32)
        rounded = (bits + (xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1)))) >> 16
        # Keep NaN a NaN: rounding could carry a NaN's payload into infinity.
        nan = (bits & xp.uint32(0x7FFFFFFF)) > xp.uint32(0x7F800000)
        return xp.where(nan, xp.uint32(0x7FC0), rounded).astype(xp.uint16)
    return values.astype(STORAGE[dtype])


def round_to(xp: Any, values: Any, dtype: str) -> Any:
    """float32 values rounded to ``dtype`` and back: what storing them in it would keep."""
    if dtype == "float32":
        return values
    fused = _bf16_rounding_kernel(xp) if dtype == "bfloat16" else None
    if fused is not None:
        return fused(xp.asarray(values, dtype=xp.float32))
    return to_float32(xp, from_float32(xp, values, dtype), dtype)


@functools.cache
def _bf16_rounding_kernel(xp: Any) -> Any:
    """On CuPy, ``round_to(.., "bfloat16")`` as one elementwise kernel: the same bits as
    from_float32 then to_float32 (ties to even, NaN to 0x7FC0), in one pass over the array
    instead of about eleven, where the judge's reference rounds every probability of its
    low-precision variant (tests/test_dtypes_gpu.py holds it to the composite bit for bit).
    None elsewhere (numpy): the composite is used."""
    kernel = getattr(xp, "ElementwiseKernel", None)
    if kernel is None:
        return None
    return kernel(
        "float32 x",
        "float32 y",
        """
        const unsigned int bits = __float_as_uint(x);
        const unsigned int top = (bits & 0x7FFFFFFFu) > 0x7F800000u
            ? 0x7FC0u
            : (bits + (0x7FFFu + ((bits >> 16) & 1u))) >> 16;
        y = __uint_as_float(top << 16);
        """,
        "kernelseek_round_to_bf16",
    )


def unit_in_last_place(xp: Any, magnitude: Any, dtype: str) -> Any:
    """The spacing of ``dtype`` at each (non-negative float32) magnitude; 0 where it is 0."""
    _, exponent = xp.frexp(magnitude)  # magnitude = m * 2**exponent, m in [0.5, 1)
    spacing = xp.ldexp(xp.ones_like(magnitude), exponent - 1 - MANTISSA_BITS[dtype])
    return xp.where(magnitude > 0, spacing, xp.zeros_like(magnitude))


def poison(xp: Any, array: Any, dtype: str) -> None:
    """Fill an output with NaN so unwritten elements can be found after the call."""
    if dtype in NAN_BITS:
        view = array.view(xp.uint32 if dtype == "float32" else xp.uint16)
        view.fill(NAN_BITS[dtype])
    else:
        array.fill(-1)
