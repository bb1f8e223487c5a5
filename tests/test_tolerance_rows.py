"""The ``out`` tolerance judged row by row (FA3's rule per query row), on numpy.

With one tolerance per tensor, a causal scenario's short rows (few visible keys, large values)
set the tolerance of every row, and the long rows (many keys, small values) could then be
computed in reduced precision and pass. These tests show the hole under the per-tensor rule and
that the per-row rule closes it, while an honest bf16 kernel (emulated: online softmax over key
blocks, P rounded to bf16 before P @ V, fp32 accumulation) still passes. The emulated kernels
are benchmarks/flash_emulation.py's, which benchmarks/tolerance_margins.py measures on the
task's shapes.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.flash_emulation import Kernel, attend, bf16, e4m3, mantissa_bits, reference
from benchmarks.flash_emulation import inputs as bf16_inputs
from kernelseek_tui.evaluate.check import check_output
from kernelseek_tui.evaluate.dtypes import from_float32
from kernelseek_tui.task import TaskError, Tolerance, load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
# The most of its tolerance an honest kernel's worst row may use here: a margin of 1.5x.
HONEST_SHARE = 2 / 3


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def _stored(values: np.ndarray) -> np.ndarray:
    return from_float32(np, values.astype(np.float32), "bfloat16")


def _honest_bf16_kernel(
    q, k, v, scale: float, causal: int, block: int, slack: float = 0.0
) -> np.ndarray:
    """What a FlashAttention kernel computes: key blocks, a running max, bf16 P, fp32 sums.

    ``slack`` > 0: the base the exponentials are taken against moves only when a row's maximum
    rises more than ``slack`` above it (base 2), so P reaches up to 2**slack (FA4's lazy
    rescale; the Hopper kernel's SM90_RESCALE_SLACK)."""
    return attend(Kernel("honest bf16", block=block, slack=slack), q, k, v, scale, causal)


def _inputs(sq: int, sk: int, d: int, seed: int, heads: int = 1):
    q, k, v = bf16_inputs(sq, sk, d, seed, heads)
    # The task's softmax scale: 1/sqrt(d) times a factor drawn from its jitter, 0.5..1.5.
    scale = float(np.random.default_rng(seed + 1).uniform(0.5, 1.5) / np.sqrt(d))
    return q, k, v, scale


def _fa3_rule(task, per: str = "tensor") -> Tolerance:
    """FA3's own test: its shift (twice the bf16 rounding at +0.3) and, per row, one unit."""
    return replace(
        task.tolerances["out"], per=per, atol_shift=0.3, atol_shift_factor=2.0, row_ulps=1.0
    )


def _judge(task, out: np.ndarray, expected: dict[str, Any], per: str):
    """``per`` "row": the task's rule; "tensor": FA3's test, one tolerance for the tensor."""
    rule = task.tolerances["out"] if per == "row" else _fa3_rule(task)
    return check_output(
        np, "out", "bfloat16", _stored(out), expected["out"], expected["out:lowp"], rule
    )


def test_the_flash_task_judges_out_row_by_row(task) -> None:
    assert task.tolerances["out"].per == "row"


@pytest.mark.parametrize(
    ("sq", "sk", "d", "causal", "block"),
    [
        (512, 512, 64, 1, 128),
        (300, 900, 128, 1, 176),
        (700, 200, 64, 1, 64),
        (384, 384, 64, 0, 128),
    ],
)
def test_an_honest_bf16_kernel_passes_every_row(task, sq, sk, d, causal, block) -> None:
    q, k, v, scale = _inputs(sq, sk, d, seed=sq + sk)
    expected = reference(q, k, v, scale, causal)
    out = bf16(_honest_bf16_kernel(q, k, v, scale, causal, block))
    check = _judge(task, out, expected, "row")
    assert check.passed, check.reasons
    # Room to spare: the honest kernel's worst row uses well under its tolerance.
    assert check.max_error is not None and check.tolerance is not None
    assert check.max_error <= HONEST_SHARE * check.tolerance


@pytest.mark.parametrize(("sq", "sk", "d", "causal"), [(512, 512, 64, 1), (256, 2048, 128, 0)])
def test_a_lazy_rescale_within_bf16_range_passes_every_row(task, sq, sk, d, causal) -> None:
    # P up to 2**8 rounds to bf16 as finely, relative to itself, as P up to 1: a legitimate
    # optimization the judge must not reject.
    q, k, v, scale = _inputs(sq, sk, d, seed=7 + sq)
    expected = reference(q, k, v, scale, causal)
    out = bf16(_honest_bf16_kernel(q, k, v, scale, causal, block=128, slack=8.0))
    check = _judge(task, out, expected, "row")
    assert check.passed, check.reasons
    assert check.max_error is not None and check.tolerance is not None
    assert check.max_error <= HONEST_SHARE * check.tolerance


def test_reduced_precision_on_long_causal_rows_fails_row_by_row(task) -> None:
    q, k, v, scale = _inputs(1024, 1024, 64, seed=0)
    expected = reference(q, k, v, scale, causal=1)
    honest = _honest_bf16_kernel(q, k, v, scale, 1, block=128)
    # Rows that see at least half of the keys are kept to 5 bits of mantissa (bf16 keeps 8).
    long_rows = np.arange(1024) >= 511
    cheat = honest.copy()
    cheat[:, long_rows] = mantissa_bits(5)(honest[:, long_rows])
    cheat = bf16(cheat)

    # The hole: one tolerance for the tensor, set by the short rows, lets the long rows pass.
    per_tensor = _judge(task, cheat, expected, "tensor")
    assert per_tensor.passed, per_tensor.reasons
    # Closed: each row judged against its own low-precision error and magnitude.
    per_row = _judge(task, cheat, expected, "row")
    assert not per_row.passed
    assert "rows exceed their own tolerance" in per_row.reasons[0]
    assert per_row.max_error is not None and per_row.tolerance is not None
    assert per_row.max_error > per_row.tolerance
    assert per_row.largest_error is not None and per_row.largest_error >= per_row.max_error
    # The short rows alone were computed honestly: only long rows are named.
    worst_row = int(per_row.reasons[0].split("worst row (")[1].split(",")[1])
    assert long_rows[worst_row]


# Rows of 16k keys (few rows, one head: fast on numpy): the bench set's longest, where a row's
# largest value is near 0.02-0.07 and FA3's shift (about 0.002 whatever the row) was 8-16 of
# its units.
LONG_ROW_KEYS = 16384
FP8_P_AND_V = Kernel("FP8 e4m3 P and V", block=128, round_p=e4m3, round_v=e4m3)
HONEST_ON_LONG_ROWS = (
    Kernel("bf16 P, blocks of 64", block=64),
    Kernel("bf16 P, stale odd base, blocks of 176", block=176, slack=8.0, odd_base=True),
)


def _long_rows(d: int, jitter: float):
    q, k, v = bf16_inputs(8, LONG_ROW_KEYS, d, seed=d + int(10 * jitter))
    scale = jitter / np.sqrt(d)
    return q, k, v, scale, reference(q, k, v, scale, 0)


@pytest.mark.parametrize("jitter", [0.5, 1.0])
@pytest.mark.parametrize("d", [64, 128])
def test_fp8_p_and_v_on_rows_of_16k_keys_fail_row_by_row(task, d: int, jitter: float) -> None:
    # A kernel may take an FP8 path from seqlen_k and the scale, both known at launch: P and V
    # rounded to e4m3 (3 bits of mantissa), sums in fp32, on exactly the long scenarios.
    q, k, v, scale, expected = _long_rows(d, jitter)
    fp8 = bf16(attend(FP8_P_AND_V, q, k, v, scale, 0))
    # The hole: FA3's shift, the same at every magnitude, covered FP8's error on these rows.
    before = check_output(
        np,
        "out",
        "bfloat16",
        _stored(fp8),
        expected["out"],
        expected["out:lowp"],
        _fa3_rule(task, per="row"),
    )
    assert before.passed, before.reasons
    # Closed: the row's rounding allowance in its own units.
    check = _judge(task, fp8, expected, "row")
    assert not check.passed
    assert "rows exceed their own tolerance" in check.reasons[0]
    assert check.max_error is not None and check.tolerance is not None
    assert check.max_error > 2 * check.tolerance  # over by far, not by a rounding


@pytest.mark.parametrize("jitter", [0.5, 1.0])
@pytest.mark.parametrize("d", [64, 128])
def test_honest_bf16_on_rows_of_16k_keys_passes_with_room(task, d: int, jitter: float) -> None:
    q, k, v, scale, expected = _long_rows(d, jitter)
    for kernel in HONEST_ON_LONG_ROWS:
        check = _judge(task, bf16(attend(kernel, q, k, v, scale, 0)), expected, "row")
        assert check.passed, (kernel.name, check.reasons)
        assert check.max_error is not None and check.tolerance is not None
        assert check.max_error <= HONEST_SHARE * check.tolerance, kernel.name


def test_a_value_written_into_a_fully_masked_row_fails_row_by_row(task) -> None:
    # seqlen_q > seqlen_k, causal: the first rows see no key and must be exactly 0.
    q, k, v, scale = _inputs(96, 32, 64, seed=3)
    expected = reference(q, k, v, scale, causal=1)
    out = bf16(_honest_bf16_kernel(q, k, v, scale, 1, block=64))
    assert (out[:, :64] == 0).all()
    out[:, :64] = 0.0078125  # small beside the tensor's tolerance, large for a row of zeros
    assert _judge(task, out, expected, "tensor").passed
    assert not _judge(task, out, expected, "row").passed


def test_two_units_in_the_last_place_at_the_rows_largest_value_are_allowed(task) -> None:
    # Seen on the H200 (2026-12-03): honest kernels one bf16 unit off (0.0078) at a value in
    # [1, 2) in rows whose low-precision error happened to be 0.00098. An exact value near a
    # rounding boundary goes either way; two units keep such a row at half its tolerance, and
    # three are more than rounding can explain. The units are the row's own: the same at any
    # magnitude, so a row of small values (a long row) gets as many of its own units.
    rule = task.tolerances["out"]
    for row_scale in (1.0, 2.0**-6):
        ref = np.full((4, 64), 0.25 * row_scale, np.float32)
        ref[:, 0] = 1.5 * row_scale
        lowp = ref.copy()  # no low-precision error at all in any row
        unit = 2.0**-7 * row_scale  # bf16 spacing in [1, 2), scaled with the row
        for units, passes in [(1, True), (2, True), (3, False)]:
            out = ref.copy()
            out[2, 0] += units * unit
            check = check_output(np, "out", "bfloat16", _stored(out), ref, lowp, rule)
            assert check.passed is passes, (row_scale, units, check.reasons)
    # A row of zeros gets no unit (2^-8 if its magnitude were taken as 1), and no shift: it must
    # be exactly zero.
    ref = np.full((4, 64), 0.25, np.float32)
    ref[1] = 0.0
    out = ref.copy()
    out[1, 5] = 0.003
    assert not check_output(np, "out", "bfloat16", _stored(out), ref, ref.copy(), rule).passed


def _top_left_causal(q, k, v, scale, causal) -> np.ndarray:
    sq, sk = q.shape[1], k.shape[1]
    # The wrong alignment: key j hidden from query i when j > i (top-left), not bottom-right.
    out = np.zeros(q.shape, np.float32)
    for i in range(sq):
        visible = min(sk, i + 1)
        scores = (q[0, i, 0] @ k[0, :visible, 0].T) * scale
        p = np.exp(scores - scores.max())
        out[0, i, 0] = p @ v[0, :visible, 0] / p.sum()
    return out


@pytest.mark.parametrize(
    "wrong",
    [
        "zeros",
        "top_left_causal",
        "ignores_scale",
        "one_element_off",
        "half_the_rows",
    ],
)
def test_the_cheats_caught_per_tensor_are_caught_row_by_row(task, wrong: str) -> None:
    q, k, v, scale = _inputs(192, 256, 64, seed=7)
    expected = reference(q, k, v, scale, causal=1)
    honest = _honest_bf16_kernel(q, k, v, scale, 1, block=64)
    if wrong == "zeros":
        out = np.zeros_like(honest)
    elif wrong == "top_left_causal":
        out = _top_left_causal(q, k, v, scale, 1)
    elif wrong == "ignores_scale":
        out = _honest_bf16_kernel(q, k, v, 1 / np.sqrt(64), 1, block=64)
    elif wrong == "one_element_off":
        out = honest.copy()
        out[0, 100, 0, 10] += 0.1
    else:
        out = honest.copy()
        out[:, ::2] = _honest_bf16_kernel(q, k, v, scale, 1, block=64)[:, 1::2]
    assert not _judge(task, bf16(out), expected, "tensor").passed
    assert not _judge(task, bf16(out), expected, "row").passed


def test_a_nan_or_unwritten_row_is_still_named(task) -> None:
    ref = np.ones((2, 4, 8), dtype=np.float32)
    out = _stored(ref.copy())
    out[1, 2, 3] = 0x7FC0  # the poison, never overwritten
    rule = task.tolerances["out"]
    check = check_output(np, "out", "bfloat16", out, ref, ref, rule)
    assert not check.passed and "1 of 64 elements are NaN" in check.reasons[0]


def test_the_row_rule_reads_one_row_per_last_axis(task) -> None:
    # Two rows: the first large, the second small; an error in the second that the first
    # would excuse fails only that row.
    ref = np.array([[4.0, -3.0, 2.5, 1.0], [0.01, 0.02, -0.01, 0.015]], dtype=np.float32)
    lowp = ref.copy()
    lowp[0] += 0.02
    out = bf16(ref.copy())
    out[1, 1] += 0.02
    rule = task.tolerances["out"]
    as_tensor = check_output(np, "out", "bfloat16", _stored(out), ref, lowp, _fa3_rule(task))
    assert as_tensor.passed, as_tensor.reasons
    as_rows = check_output(np, "out", "bfloat16", _stored(out), ref, lowp, rule)
    assert not as_rows.passed
    assert "1 of 2 rows" in as_rows.reasons[0] and "worst row (1,)" in as_rows.reasons[0]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('rule = "lowp"\nper = "column"', "per must be 'tensor' or 'row'"),
        ('rule = "abs"\natol = 0.1\nper = "row"', "applies to the lowp rule only"),
        ('rule = "lowp"\nrow_ulps = 2.0', "row_ulps applies to per = 'row' only"),
        ('rule = "lowp"\nper = "row"\nrow_ulps = -1.0', "row_ulps must be >= 0"),
    ],
)
def test_a_bad_per_setting_is_refused(tmp_path: Path, entry: str, message: str) -> None:
    task_dir = tmp_path / "task"
    shutil.copytree(TASK_DIR, task_dir)
    toml = (task_dir / "task.toml").read_text()
    start = toml.index("[tolerance.out]")
    end = toml.index("[tolerance.lse]")
    (task_dir / "task.toml").write_text(toml[:start] + f"[tolerance.out]\n{entry}\n\n" + toml[end:])
    with pytest.raises(TaskError, match=message):
        load_task(task_dir)
