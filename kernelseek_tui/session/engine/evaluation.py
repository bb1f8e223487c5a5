"""How an evaluation is told: the compact text the agent reads and the ``eval`` event fields."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from kernelseek_tui.evaluate.result import EvalResult

MAX_FAILURES: Final = 5
_REASON_CHARS: Final = 300


@dataclass(frozen=True, slots=True)
class Committed:
    """Where a verified evaluation went in git."""

    number: int | None  # the candidate's number; None for the start commit
    sha: str
    attached: bool  # the code was unchanged: attached to the commit that already holds it
    new_best: bool


def fmt_ratio(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.3f}x"


def failure_lines(result: EvalResult, limit: int = MAX_FAILURES) -> tuple[list[str], int]:
    """The first ``limit`` reasons the candidate failed, and how many there are in all."""
    lines = [_clip(reason) for reason in result.reasons]
    for scenario in result.scenarios:
        if scenario.passed is False:
            why = "; ".join(scenario.reasons) or "failed"
            lines.append(_clip(f"{scenario.name}: {why}"))
    return lines[:limit], len(lines)


def summary_text(
    result: EvalResult,
    *,
    what: str,
    best: float | None,
    committed: Committed | None = None,
    not_committed: str | None = None,
) -> str:
    """What the agent reads after ``evaluate``: verdict, counts, speed, best, failures."""
    summary = result.summary
    lines = [f"evaluation of {what}: {result.verdict}, {summary.passed}/{summary.total} scenarios"]
    speed = f"geomean speedup vs the starting kernel: {fmt_ratio(summary.geomean_speedup)}"
    peers = [f"vs {name}: {fmt_ratio(value)}" for name, value in sorted(summary.vs_peers.items())]
    lines.append("; ".join([speed, *peers]))
    if summary.absent_peers:
        absent = ", ".join(f"{k} ({v})" for k, v in sorted(summary.absent_peers.items()))
        lines.append(f"peers not measured: {absent}")
    # The best the judge kept (a figure read paired with the best can keep a higher unpaired
    # one out); none yet: the starting kernel, 1.0x by definition.
    kept = fmt_ratio(best) if best is not None else "1.000x (the starting kernel)"
    lines.append(f"best verified speedup so far: {kept}")
    if committed is not None:
        label = f"candidate {committed.number}" if committed.number else "the start commit"
        if committed.attached:
            lines.append(
                f"not committed again: the code is unchanged since {label} "
                f"({committed.sha[:10]}); this evaluation is attached to it"
            )
        else:
            lines.append(f"committed as {label} ({committed.sha[:10]})")
        if committed.new_best:
            lines.append("a new best")
    elif not_committed:
        lines.append(not_committed)
    failures, count = failure_lines(result)
    if failures:
        lines.append(f"failures (first {len(failures)} of {count}):")
        lines.extend(f"  - {line}" for line in failures)
    return "\n".join(lines)


def summary_attrs(result: EvalResult) -> dict[str, Any]:
    """The evaluation's summary as plain JSON (for the ``eval`` event's attrs)."""
    data = result.to_dict()
    keep = ("verdict", "sets", "seed", "task", "source_sha256", "duration_s", "device", "build")
    attrs = {key: data.get(key) for key in keep}
    attrs["summary"] = data.get("summary")
    attrs["reasons"] = failure_lines(result)[0]
    return attrs


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"
