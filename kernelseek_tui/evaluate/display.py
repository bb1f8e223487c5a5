"""Human-readable output of an evaluation: the progress bar, the per-scenario table, the summary."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from kernelseek_tui.evaluate.result import EvalResult, ScenarioResult


class ProgressBar:
    """A one-line bar on a terminal; on a pipe, a line every tenth of the way."""

    def __init__(self, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self._last_tenth = -1

    def __call__(self, message: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        elapsed = time.monotonic() - self.started
        if self.tty:
            filled = int(self.width * fraction)
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"\r[{bar}] {done}/{total} {elapsed:5.0f}s {message[:40]:<40}"
            self.stream.write(text)
            self.stream.flush()
            return
        tenth = int(fraction * 10)
        if tenth != self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(f"eval: {done}/{total} scenarios, {elapsed:.0f}s ({message})\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def scenario_row(s: ScenarioResult, peer: str = "fa3") -> list[str]:
    status = {True: "pass", False: "FAIL", None: "-"}[s.passed]
    timing = s.peers.get(peer)
    return [
        s.name,
        status,
        _fmt(s.max_error, ".2e"),
        _fmt(s.ms, ".3f"),
        _fmt(s.tflops, ".1f"),
        _fmt(timing.tflops if timing else None, ".1f"),
        _fmt(s.ratio_to(peer), ".2f"),
    ]


HEADERS = ["scenario", "pass", "max err", "ms", "TFLOP/s", "FA3 TFLOP/s", "vs FA3"]


def format_table(result: EvalResult, *, only_failures: bool = False) -> str:
    rows = [scenario_row(s) for s in result.scenarios if not only_failures or s.passed is False]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADERS)
    ]
    lines = [
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w)
            for i, (h, w) in enumerate(zip(HEADERS, widths, strict=True))
        )
    ]
    for row in rows:
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def ran_nothing(result: EvalResult) -> bool:
    """No scenario was judged (a failed build, no GPU stack): a table would be all dashes."""
    return all(s.passed is None for s in result.scenarios)


def format_verdict(result: EvalResult) -> str:
    """The verdict and its reasons only, for an evaluation that ran no scenario."""
    lines = [
        f"verdict: {result.verdict}  (no scenario ran of {len(result.scenarios)}, "
        f"{_fmt(result.duration_s, '.1f')} s)"
    ]
    lines.extend(f"reason: {reason}" for reason in result.reasons)
    return "\n".join(lines)


def format_summary(result: EvalResult) -> str:
    s = result.summary
    lines = [
        f"verdict: {result.verdict}  ({s.passed}/{s.total} scenarios passed, "
        f"{_fmt(result.duration_s, '.1f')} s, seed {result.seed})",
    ]
    if result.device:
        lines.append(f"device: {result.device.get('name')} (index {result.device.get('index')})")
    if result.other_gpu_processes:
        lines.append(
            "warning: the GPU was shared during this evaluation ("
            + ", ".join(result.other_gpu_processes)
            + "): its times may be slow by an unknown share"
        )
    if result.isolation != "in-process":
        handed = f", calls handed over by {result.handover}" if result.handover else ""
        lines.append(
            f"isolation: {result.isolation} (each kernel judged in a process of its own{handed})"
        )
        if result.handovers_us:
            each = ", ".join(f"{who} {us:.1f} us" for who, us in result.handovers_us.items())
            lines.append(
                f"hand-over a call: {each}; measured with the judge's empty kernel in each "
                "kernel's own process and taken out of that kernel's figures"
            )
        if result.mps:
            lines.append(f"GPU shared through: {result.mps}")
        if result.confinement:
            lines.append(f"confinement of the kernels' processes: {result.confinement}")
    # The noise with it: where hand-overs were taken out it also holds their uncertainty, which
    # on few-microsecond scenarios is most of it (evaluate/paired.py).
    noise = (
        f" +- {s.noise:.1%} noise" if s.geomean_speedup is not None and s.noise is not None else ""
    )
    lines.append(
        f"speedup vs the starting kernel (geomean): {_fmt(s.geomean_speedup, '.3f')}x{noise}"
        + (f"  [{s.baseline_timing}]" if s.baseline_timing else "")
    )
    if s.geomean_tflops is not None:
        lines.append(f"TFLOP/s (geomean over timed scenarios): {s.geomean_tflops:.1f}")
    for name, value in sorted(s.vs_peers.items()):
        lines.append(f"vs {name} (geomean of {name} time / candidate time): {value:.3f}x")
    for name, why in sorted(s.absent_peers.items()):
        lines.append(f"{name}: absent ({why})")
    if s.paired_speedup is not None and s.paired_spread is not None:
        lines.append(
            f"vs the kernel timed beside it (its time / candidate time, sample by sample; "
            f"geomean over scenarios weighted by how precisely each is timed): "
            f"{s.paired_speedup:.3f}x +- {s.paired_spread:.1%} (95%"
            + (
                f"; {s.paired_handover:.1%} of it the hand-overs' uncertainty)"
                if s.paired_handover is not None
                else ")"
            )
        )
    for reason in result.reasons:
        lines.append(f"reason: {reason}")
    return "\n".join(lines)
