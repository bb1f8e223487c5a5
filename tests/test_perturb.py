"""The perturbation before every measured call (sign flips of a random half of the elements),
on numpy: it keeps the inputs' distribution, it is exactly reproducible from its key, and it is
large enough that outputs left from the call before it fail the judge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.flash_emulation import reference as _reference
from kernelseek_tui.evaluate.check import check_output
from kernelseek_tui.evaluate.dtypes import from_float32, to_float32
from kernelseek_tui.evaluate.perturb import flip_mask, flip_signs_host, key_parts
from kernelseek_tui.task import load_task

TASK = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")


def _bf16_normal(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Stored bf16 (uint16 bits) standard-normal values, as the judge fills its inputs."""
    values = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return from_float32(np, values, "bfloat16")


def test_about_half_the_elements_flip_and_each_key_flips_a_different_half() -> None:
    count = 200_000
    masks = [flip_mask(count, key, 0) for key in (1, 2, 2**63 + 5)]
    for mask in masks:
        assert 0.49 < mask.mean() < 0.51
    for a, b in ((0, 1), (0, 2), (1, 2)):
        assert 0.49 < (masks[a] == masks[b]).mean() < 0.51
    # the same key on another tensor of the set: another half too
    assert 0.49 < (flip_mask(count, 1, 0) == flip_mask(count, 1, 1)).mean() < 0.51
    assert np.array_equal(flip_mask(count, 7, 0), flip_mask(count, 7, 0))


def test_the_multiplier_is_odd_whatever_the_key() -> None:
    # even multipliers would map two indices to one hash input, so flips would repeat
    assert key_parts(0) == (1, 0)
    assert key_parts((6 << 32) | 9) == (7, 9)


def test_a_flip_keeps_every_magnitude_and_undoing_it_restores_every_bit() -> None:
    q = _bf16_normal((2, 64, 3, 64), seed=1)
    lse = np.random.default_rng(2).standard_normal((5, 7)).astype(np.float32)
    before_q, before_lse = q.copy(), lse.copy()
    flip_signs_host([(q, "bfloat16"), (lse, "float32")], key=12345)
    flipped = to_float32(np, q, "bfloat16") != to_float32(np, before_q, "bfloat16")
    assert 0.45 < flipped.mean() < 0.55
    assert np.array_equal(
        np.abs(to_float32(np, q, "bfloat16")), np.abs(to_float32(np, before_q, "bfloat16"))
    )
    assert np.array_equal(np.abs(lse), np.abs(before_lse)) and not np.array_equal(lse, before_lse)
    flip_signs_host([(q, "bfloat16"), (lse, "float32")], key=12345)
    assert np.array_equal(q, before_q) and np.array_equal(lse, before_lse)


def test_the_distribution_of_standard_normal_inputs_is_kept() -> None:
    q = _bf16_normal((1 << 20,), seed=3)
    before = to_float32(np, q, "bfloat16")
    flip_signs_host([(q, "bfloat16")], key=99)
    after = to_float32(np, q, "bfloat16")
    # the same magnitudes, signs still a fair coin: mean, spread and quantiles as before
    assert abs(after.mean()) < 0.005
    assert np.mean(after**2) == np.mean(before**2)
    quantiles = [0.01, 0.1, 0.5, 0.9, 0.99]
    assert np.quantile(after, quantiles) == pytest.approx(np.quantile(before, quantiles), abs=0.01)
    # and the new values are nearly uncorrelated with the old ones
    assert abs(np.corrcoef(before, after)[0, 1]) < 0.01


def test_integer_inputs_are_left_alone_and_do_not_shift_the_float_positions() -> None:
    ids = np.arange(1000, dtype=np.int32) - 500
    q = _bf16_normal((1000,), seed=4)
    alone = q.copy()
    flip_signs_host([(ids, "int32"), (q, "bfloat16")], key=5)
    flip_signs_host([(alone, "bfloat16")], key=5)
    assert np.array_equal(ids, np.arange(1000, dtype=np.int32) - 500)
    assert np.array_equal(q, alone)  # q is the first floating input either way: position 0


def _flash_inputs(seed: int, causal: int):
    shape_q, shape_kv = (1, 96, 2, 64), (1, 160, 2, 64)
    stored = {
        "q": _bf16_normal(shape_q, seed),
        "k": _bf16_normal(shape_kv, seed + 1),
        "v": _bf16_normal(shape_kv, seed + 2),
    }
    return stored, 0.125, causal


def _judged(stored: dict[str, np.ndarray], outputs: dict[str, np.ndarray], scale, causal):
    """The judge's check of ``outputs`` (fp32 values) against the reference for ``stored``."""
    inputs = {name: to_float32(np, body, "bfloat16") for name, body in stored.items()}
    reference = _reference(inputs["q"], inputs["k"], inputs["v"], scale, causal)
    out = check_output(
        np,
        "out",
        "bfloat16",
        from_float32(np, outputs["out"], "bfloat16"),
        reference["out"],
        reference["out:lowp"],
        TASK.tolerances["out"],
    )
    lse = check_output(
        np, "lse", "float32", outputs["lse"], reference["lse"], None, TASK.tolerances["lse"]
    )
    return out.passed, lse.passed


def _outputs_for(stored: dict[str, np.ndarray], scale: float, causal: int) -> dict[str, np.ndarray]:
    inputs = {name: to_float32(np, body, "bfloat16") for name, body in stored.items()}
    reference = _reference(inputs["q"], inputs["k"], inputs["v"], scale, causal)
    return {"out": reference["out"], "lse": reference["lse"]}


@pytest.mark.parametrize("causal", [0, 1])
def test_outputs_left_from_before_one_flip_fail_the_judge(causal: int) -> None:
    stored, scale, causal = _flash_inputs(seed=10, causal=causal)
    stale = _outputs_for(stored, scale, causal)
    assert _judged(stored, stale, scale, causal) == (True, True)  # right before the flip
    flip_signs_host([(stored[name], "bfloat16") for name in ("q", "k", "v")], key=2024)
    assert _judged(stored, stale, scale, causal) == (False, False)
    assert _judged(stored, _outputs_for(stored, scale, causal), scale, causal) == (True, True)


def test_a_flip_of_the_lowest_mantissa_bit_would_not_be_enough() -> None:
    # Why signs and not the last bit: after such a change the stale `out` still passes; only
    # `lse`, judged to an absolute 0.001, notices here, and a task need not have such an output.
    stored, scale, causal = _flash_inputs(seed=11, causal=0)
    stale = _outputs_for(stored, scale, causal)
    rng = np.random.default_rng(0)
    for name in ("q", "k", "v"):
        stored[name] ^= rng.integers(0, 2, stored[name].shape).astype(np.uint16)
    assert _judged(stored, stale, scale, causal) == (True, False)


def test_the_flip_kernel_is_the_scalar_one_unless_asked(monkeypatch) -> None:
    from kernelseek_tui.evaluate.perturb import FLIP_VARIABLE, flip_kernel_name

    monkeypatch.delenv(FLIP_VARIABLE, raising=False)
    assert flip_kernel_name() == "ks_flip_signs"
    monkeypatch.setenv(FLIP_VARIABLE, "vector")
    assert flip_kernel_name() == "ks_flip_signs_vec"
    monkeypatch.setenv(FLIP_VARIABLE, "fast")
    with pytest.raises(ValueError, match="KERNELSEEK_FLIP must be one of scalar, vector"):
        flip_kernel_name()
