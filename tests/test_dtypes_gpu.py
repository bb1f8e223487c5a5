"""On CuPy, rounding to bf16 is one fused kernel (dtypes._bf16_rounding_kernel); it must keep
exactly the bits of the composite (from_float32 then to_float32) that numpy runs on the CPU and
that tests/test_flash_reference.py and the tolerance tests hold to the definition."""

from __future__ import annotations

import numpy as np
import pytest

from kernelseek_tui.evaluate.dtypes import from_float32, round_to, to_float32

pytestmark = pytest.mark.gpu


def test_the_fused_bf16_rounding_keeps_the_composites_bits() -> None:
    import cupy as cp

    rng = np.random.default_rng(3)
    every_tie = (np.arange(1 << 16, dtype=np.uint32) << 16) | np.uint32(0x8000)  # halfway up
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4e38, -3.4e38, 1e-45, -1e-45, 1.0],
        dtype=np.float32,
    )
    values = np.concatenate([
        rng.standard_normal(1 << 20).astype(np.float32),
        rng.standard_normal(1 << 16).astype(np.float32) * np.float32(1e30),
        every_tie.view(np.float32),
        (every_tie - np.uint32(1)).view(np.float32),  # just below halfway
        np.arange(1 << 16, dtype=np.uint32).view(np.float32),  # subnormals
        special,
    ])  # fmt: skip
    composite = to_float32(np, from_float32(np, values, "bfloat16"), "bfloat16")
    fused = cp.asnumpy(round_to(cp, cp.asarray(values), "bfloat16"))
    assert fused.dtype == np.float32
    assert np.array_equal(fused.view(np.uint32), composite.view(np.uint32))
    # A non-contiguous view (a transposed block, as the reference passes) rounds the same.
    block = cp.asarray(values[: 1 << 20].reshape(1024, 1024)).T
    expected = to_float32(np, from_float32(np, cp.asnumpy(block), "bfloat16"), "bfloat16")
    assert np.array_equal(cp.asnumpy(round_to(cp, block, "bfloat16")).view(np.uint32),
                          expected.view(np.uint32))  # fmt: skip
