"""Judging one output against the reference: written, finite where it should be, within tolerance.

Written for any array module with numpy's API (cupy on the GPU, numpy in the CPU tests), so the
rules themselves are tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelseek_tui.evaluate.dtypes import round_to, to_float32
from kernelseek_tui.task import Tolerance


@dataclass(slots=True)
class OutputCheck:
    name: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    max_error: float | None = None
    tolerance: float | None = None


def check_output(
    xp: Any,
    name: str,
    dtype: str,
    stored: Any,
    reference: Any,
    reference_lowp: Any | None,
    rule: Tolerance,
) -> OutputCheck:
    """Compare one stored output with the fp32 reference under ``rule``."""
    out = to_float32(xp, stored, dtype).astype(xp.float32)
    ref = reference.astype(xp.float32)
    total = int(out.size)
    reasons: list[str] = []
    if total == 0:
        return OutputCheck(name, True)

    out_nan = xp.isnan(out)
    ref_nan = xp.isnan(ref)
    unwritten = int(xp.count_nonzero(out_nan & ~ref_nan))
    if unwritten:
        reasons.append(
            f"{name}: {unwritten} of {total} elements are NaN "
            "(never written, or NaN where the reference is a number)"
        )
    ref_finite = xp.isfinite(ref)
    out_inf = xp.isinf(out)
    bad_inf = int(xp.count_nonzero(out_inf & ref_finite))
    if bad_inf:
        reasons.append(f"{name}: {bad_inf} elements are inf where the reference is finite")
    ref_inf = xp.isinf(ref)
    # Where the reference is infinite (an empty softmax row's lse) the output must match it.
    wrong_inf = int(xp.count_nonzero(ref_inf & (out != ref)))
    if wrong_inf:
        reasons.append(f"{name}: {wrong_inf} elements differ where the reference is infinite")

    usable = ref_finite & xp.isfinite(out)
    if not bool(usable.any()):
        return OutputCheck(name, not reasons, reasons)

    if rule.rule == "lowp":
        ref_rounded = round_to(xp, ref, dtype)
        error = _max_abs(xp, out - ref_rounded, usable)
        if reference_lowp is None:
            raise ValueError(f"tolerance rule 'lowp' for {name!r} needs a low-precision reference")
        lowp_rounded = round_to(xp, reference_lowp.astype(xp.float32), dtype)
        lowp_error = _max_abs(xp, lowp_rounded - ref_rounded, usable)
        shifted = round_to(
            xp, round_to(xp, ref_rounded + rule.atol_shift, dtype) - rule.atol_shift, dtype
        )
        rounding = _max_abs(xp, shifted - ref_rounded, usable) if rule.atol_shift else 0.0
        tolerance = rule.multiple * lowp_error + rule.atol_shift_factor * rounding + rule.atol
        if error > tolerance:
            reasons.append(
                f"{name}: max error {error:.3g} exceeds {tolerance:.3g} "
                f"({rule.multiple:g} x low-precision error {lowp_error:.3g} + atol)"
            )
    else:
        diff = xp.abs(out - ref)
        allowed = rule.atol + rule.rtol * xp.abs(ref)
        over = usable & (diff > allowed)
        error = _max_abs(xp, out - ref, usable)
        tolerance = rule.atol + rule.rtol * _max_abs(xp, ref, usable)
        count = int(xp.count_nonzero(over))
        if count:
            reasons.append(
                f"{name}: {count} elements outside atol {rule.atol:g} + rtol {rule.rtol:g} "
                f"(max error {error:.3g})"
            )
    return OutputCheck(name, not reasons, reasons, max_error=error, tolerance=tolerance)


def _max_abs(xp: Any, values: Any, mask: Any) -> float:
    return float(xp.max(xp.where(mask, xp.abs(values), 0)))
