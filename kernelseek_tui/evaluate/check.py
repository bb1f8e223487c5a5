"""Judging one output against the reference: written, finite where it should be, within tolerance.

Written for any array module with numpy's API (cupy on the GPU, numpy in the CPU tests), so the
rules themselves are tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelseek_tui.evaluate.dtypes import round_to, to_float32, unit_in_last_place
from kernelseek_tui.task import Tolerance


@dataclass(slots=True)
class OutputCheck:
    name: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    # The pair a reader compares: the whole tensor's, or for a per-row rule the row nearest
    # its own limit.
    max_error: float | None = None
    tolerance: float | None = None
    largest_error: float | None = None  # max |out - ref| over the whole tensor


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
        if reference_lowp is None:
            raise ValueError(f"tolerance rule 'lowp' for {name!r} needs a low-precision reference")
        judged = _lowp_rows if rule.per == "row" else _lowp_tensor
        error, tolerance, largest, reason = judged(
            xp, name, dtype, out, ref, reference_lowp, usable, rule
        )
        if reason is not None:
            reasons.append(reason)
    else:
        diff = xp.abs(out - ref)
        allowed = rule.atol + rule.rtol * xp.abs(ref)
        over = usable & (diff > allowed)
        error = largest = _max_abs(xp, out - ref, usable)
        tolerance = rule.atol + rule.rtol * _max_abs(xp, ref, usable)
        count = int(xp.count_nonzero(over))
        if count:
            reasons.append(
                f"{name}: {count} elements outside atol {rule.atol:g} + rtol {rule.rtol:g} "
                f"(max error {error:.3g})"
            )
    return OutputCheck(
        name, not reasons, reasons, max_error=error, tolerance=tolerance, largest_error=largest
    )


@dataclass(slots=True)
class _LowpTerms:
    """The ``lowp`` rule's three maxima, over whatever ``reduce`` takes them across."""

    error: Any  # max |out - ref|, ref rounded to the output dtype
    lowp_error: Any  # max |ref_lowp - ref|: what the low-precision computation itself loses
    rounding: Any  # max |(ref + s) - s - ref| in the output dtype: rounding at magnitude s
    magnitude: Any = None  # max |ref| rounded, where asked for (the per-row rule's unit)

    def tolerance(self, rule: Tolerance) -> Any:
        return rule.multiple * self.lowp_error + rule.atol_shift_factor * self.rounding + rule.atol


def _lowp_terms(
    xp: Any,
    dtype: str,
    out: Any,
    ref: Any,
    reference_lowp: Any,
    usable: Any,
    rule: Tolerance,
    reduce: Callable[[Any], Any],
    *,
    with_magnitude: bool = False,
) -> _LowpTerms:
    ref_rounded = round_to(xp, ref, dtype)
    lowp_rounded = round_to(xp, reference_lowp.astype(xp.float32), dtype)

    def masked(values: Any) -> Any:
        return reduce(xp.where(usable, xp.abs(values), 0))

    rounding: Any = 0.0
    if rule.atol_shift:
        shifted = round_to(
            xp, round_to(xp, ref_rounded + rule.atol_shift, dtype) - rule.atol_shift, dtype
        )
        rounding = masked(shifted - ref_rounded)
    return _LowpTerms(
        error=masked(out - ref_rounded),
        lowp_error=masked(lowp_rounded - ref_rounded),
        rounding=rounding,
        magnitude=masked(ref_rounded) if with_magnitude else None,
    )


def _lowp_tensor(
    xp: Any,
    name: str,
    dtype: str,
    out: Any,
    ref: Any,
    reference_lowp: Any,
    usable: Any,
    rule: Tolerance,
) -> tuple[float, float, float, str | None]:
    """FA3's test: one tolerance for the whole tensor, from its largest errors."""
    terms = _lowp_terms(
        xp, dtype, out, ref, reference_lowp, usable, rule, lambda a: float(xp.max(a))
    )
    error, tolerance = float(terms.error), float(terms.tolerance(rule))
    if error <= tolerance:
        return error, tolerance, error, None
    return (
        error,
        tolerance,
        error,
        f"{name}: max error {error:.3g} exceeds {tolerance:.3g} "
        f"({rule.multiple:g} x low-precision error {float(terms.lowp_error):.3g} + atol)",
    )


def _lowp_rows(
    xp: Any,
    name: str,
    dtype: str,
    out: Any,
    ref: Any,
    reference_lowp: Any,
    usable: Any,
    rule: Tolerance,
) -> tuple[float, float, float, str | None]:
    """FA3's rule applied to each row along the last axis, each with its own tolerance, plus
    ``rule.row_ulps`` units in the last place at the row's largest value.

    Returns the error and tolerance of the row nearest its limit (the pair a reader compares)
    and the largest error of any row.
    """
    width = out.shape[-1] if out.ndim else 1

    def per_row(values: Any) -> Any:
        return xp.max(values.reshape(-1, width), axis=1)

    terms = _lowp_terms(
        xp, dtype, out, ref, reference_lowp, usable, rule, per_row, with_magnitude=True
    )
    # Plus row_ulps units in the last place at the row's largest value: an exact value near a
    # rounding boundary is stored one unit either way by the least difference in fp32 work, and
    # a row's own low-precision error need not contain such a value (measured on the H200:
    # honest kernels one unit off at values in [1, 2) in rows whose low-precision error was
    # 0.00098). Counted in the row's own units, the allowance shrinks with the row: FA3's fixed
    # shift (rounding at 0.3, about 0.002) was 8-16 units of a 16k-key row (largest values
    # 0.02-0.08), and P @ V in FP8 fitted under it (benchmarks/tolerance_margins.py).
    units = rule.row_ulps * unit_in_last_place(xp, terms.magnitude, dtype)
    tolerances = terms.tolerance(rule) + units
    # A row with no room at all (every value exact) must be exact: any error is over.
    ratio = xp.where(tolerances > 0, terms.error / xp.where(tolerances > 0, tolerances, 1), 0)
    ratio = xp.where((tolerances <= 0) & (terms.error > 0), xp.inf, ratio)
    worst = int(xp.argmax(ratio))
    error, tolerance = float(terms.error[worst]), float(tolerances[worst])
    largest = float(xp.max(terms.error))
    over = int(xp.count_nonzero(terms.error > tolerances))
    if not over:
        return error, tolerance, largest, None
    lowp_error = float(terms.lowp_error[worst])
    parts = [f"{rule.multiple:g} x that row's low-precision error {lowp_error:.3g}"]
    if rule.atol_shift:
        parts.append(f"{rule.atol_shift_factor:g} x rounding at +{rule.atol_shift:g}")
    if rule.atol:
        parts.append(f"atol {rule.atol:g}")
    parts.append(
        f"{rule.row_ulps:g} units in the last place at its largest value "
        f"{float(terms.magnitude[worst]):.3g}"
    )
    # Index arithmetic on the host: CuPy's unravel_index refuses a Python int under NumPy 2.
    where = tuple(int(i) for i in np.unravel_index(worst, tuple(out.shape[:-1])))
    return (
        error,
        tolerance,
        largest,
        f"{name}: {over} of {ratio.size} rows exceed their own tolerance; worst row {where}: "
        f"max error {error:.3g} against {tolerance:.3g} ({' + '.join(parts)})",
    )


def _max_abs(xp: Any, values: Any, mask: Any) -> float:
    return float(xp.max(xp.where(mask, xp.abs(values), 0)))
