"""How the GPU's SM clock follows the load of the last seconds, and what that does to a figure.

Why. Under the judge's whole-GPU gate every kernel's own figure read 4-5% faster than
fa_bench's do_bench in the same call (H100, 2026-12-07), while the ratios (x FA3) still agreed
within 3% on all 36 bench shapes. nvidia-smi, sampled every 20 ms (benchmarks/clock_phases.py),
read a median SM clock of 1980 MHz in the judge's phase and 1875 MHz in fa_bench's, with the
judge's phase mostly idle (120 W median) and fa_bench's mostly loaded (544 W). nvidia-smi's
clock is a snapshot refreshed about every 100 ms, so this script reads the clock from the GPU
itself, between the samples: a one-thread kernel that spins a known number of cycles
(``torch.cuda._sleep``), timed by events, gives cycles over nanoseconds.

For each shape it times FA3 (the same call fa_bench makes) five ways, printing what each
measured (median ms of FA3, median MHz of the probes):

- ``heat``: after 3 s idle, do_bench's pattern (a 256 MB memset, the call, back to back, the
  host running ahead) for ``--heat-s`` seconds, with a probe every ``--probe-every`` calls; printed
  by time since the load began, so the clock's settling shows;
- ``gapped-hot``: right after, the judge's pattern as the gate makes it (a flush of the judge's
  size, the stream drained, the host idle for ``--gap-us`` as for a hand-over, then the call between
  events), for one second;
- ``gapped-cold``: the same after 3 s idle;
- ``dobench-cold`` / ``dobench-hot``: ``triton.testing.do_bench`` (median), after 3 s idle and
  after ``--heat-s`` seconds of the heat pattern (no probes: see ``Bench.dobench``).

The gapped patterns' figures hold FA3's own host launch (the drained GPU waits for it), so they
compare with the others by their clocks, not by their milliseconds.

What would show the hypothesis wrong: the probes reading the same clock hot and cold, or FA3's
figure moving less than the clock between them.

    python3 benchmarks/clock_history.py --json OUT/clock_history.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelseek_tui.evaluate.gpu_sharing import gpu_line

# (headdim, causal, seqlen, batch, heads): the bench shape furthest off, and two short ones.
SHAPES: tuple[tuple[int, bool, int, int, int], ...] = (
    (256, False, 8192, 2, 8),
    (128, False, 1024, 16, 16),
    (64, False, 512, 32, 32),
)
PROBE_CYCLES = 200_000  # about 100 us at 2 GHz: 0.5% resolution from the events' 0.5 us
DO_BENCH_FLUSH_BYTES = 256_000_000
# Seconds since the load began: the edges of the heat pattern's printed buckets.
BUCKET_EDGES_S = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)


@dataclass(slots=True)
class Pattern:
    """One way of timing one shape: FA3's samples and the probes' clocks."""

    name: str
    call_ms: list[float] = field(default_factory=list)
    probe_mhz: list[float] = field(default_factory=list)
    probe_at_s: list[float] = field(default_factory=list)  # seconds since the pattern began
    call_at_s: list[float] = field(default_factory=list)

    def summary(self) -> str:
        ms = statistics.median(self.call_ms) if self.call_ms else float("nan")
        line = f"{self.name}: FA3 median {ms:.4f} ms over {len(self.call_ms)} calls"
        if self.probe_mhz:
            mhz = statistics.median(self.probe_mhz)
            line += f"; SM clock median {mhz:.0f} MHz over {len(self.probe_mhz)} probes"
        return line


def bucketed(times_s: list[float], values: list[float]) -> list[tuple[float, float, int, float]]:
    """(from, to, count, median) of ``values`` by ``times_s`` in BUCKET_EDGES_S's buckets."""
    rows = []
    for low, high in itertools.pairwise(BUCKET_EDGES_S):
        inside = [v for t, v in zip(times_s, values, strict=True) if low <= t < high]
        if inside:
            rows.append((low, high, len(inside), statistics.median(inside)))
    return rows


def mhz_of(cycles: int, ms: float) -> float:
    """The SM clock of a probe that spun ``cycles`` cycles in ``ms`` milliseconds."""
    return cycles / (ms * 1e3)


class Bench:
    def __init__(self, torch: Any, call: Any, judge_flush_bytes: int) -> None:
        self.torch = torch
        self.call = call
        self.big = torch.empty(DO_BENCH_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self.small = torch.empty(judge_flush_bytes // 4, dtype=torch.int32, device="cuda")

    def event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def idle(self, seconds: float) -> None:
        self.torch.cuda.synchronize()
        time.sleep(seconds)

    def heat(self, name: str, seconds: float, probe_every: int) -> Pattern:
        """do_bench's pattern, back to back, for ``seconds``; a probe every ``probe_every``."""
        pattern = Pattern(name)
        base = self.event()
        base.record()
        calls: list[tuple[Any, Any]] = []
        probes: list[tuple[Any, Any]] = []
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            self.big.zero_()
            start, end = self.event(), self.event()
            start.record()
            self.call()
            end.record()
            calls.append((start, end))
            if len(calls) % probe_every == 0:
                probes.append(self.enqueue_probe())
            # Keep the host ahead of the GPU by a few dozen calls, never by thousands.
            if len(calls) > 32:
                calls[-32][1].synchronize()
        self.torch.cuda.synchronize()
        for start, end in calls:
            pattern.call_ms.append(start.elapsed_time(end))
            pattern.call_at_s.append(base.elapsed_time(start) / 1e3)
        for probe in probes:
            self.read_probe(pattern, base, probe)
        return pattern

    def gapped(self, name: str, seconds: float, gap_us: float, probe_every: int) -> Pattern:
        """The gate's pattern: flush, drain, the host away for ``gap_us``, then the call."""
        pattern = Pattern(name)
        base = self.event()
        base.record()
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            self.small.zero_()
            self.torch.cuda.synchronize()
            until = time.perf_counter() + gap_us * 1e-6
            while time.perf_counter() < until:
                pass
            start, end = self.event(), self.event()
            start.record()
            self.call()
            end.record()
            end.synchronize()
            pattern.call_ms.append(start.elapsed_time(end))
            pattern.call_at_s.append(base.elapsed_time(start) / 1e3)
            if len(pattern.call_ms) % probe_every == 0:
                probe = self.enqueue_probe()
                probe[1].synchronize()
                self.read_probe(pattern, base, probe)
        return pattern

    def enqueue_probe(self) -> tuple[Any, Any]:
        """A one-thread spin of PROBE_CYCLES between two events, enqueued (not waited for)."""
        first, last = self.event(), self.event()
        first.record()
        self.torch.cuda._sleep(PROBE_CYCLES)
        last.record()
        return first, last

    @staticmethod
    def read_probe(pattern: Pattern, base: Any, probe: tuple[Any, Any]) -> None:
        """A finished probe's clock, and when it ran since ``base``, into ``pattern``."""
        first, last = probe
        pattern.probe_mhz.append(mhz_of(PROBE_CYCLES, first.elapsed_time(last)))
        pattern.probe_at_s.append(base.elapsed_time(first) / 1e3)

    def dobench(self, name: str) -> Pattern:
        """triton's do_bench median. No probe: one taken just before or after it follows an
        idle GPU and reads the clock still rising (1158-1440 MHz on an H100, 2026-12-07)."""
        from triton.testing import do_bench

        pattern = Pattern(name)
        pattern.call_ms.append(float(do_bench(self.call, return_mode="median")))
        return pattern


def throttle_reasons() -> str:
    """nvidia-smi's SM clock, power draw and limit, temperature and active clock-event reasons."""
    return (
        gpu_line("clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active")
        or "nvidia-smi gave nothing"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heat-s", type=float, default=3.0)
    parser.add_argument("--idle-s", type=float, default=3.0)
    parser.add_argument("--gap-us", type=float, default=60.0, help="the host's hand-over, idle")
    parser.add_argument("--probe-every", type=int, default=20)
    parser.add_argument("--json", help="write every sample here")
    args = parser.parse_args(argv)

    import torch

    sys.path.insert(0, "benchmarks")
    from fa_bench import peers

    from kernelseek_tui.evaluate.timing import l2_flush_bytes

    fa3 = peers().get("fa3")
    if fa3 is None:
        print("FA3 absent: nothing to time")
        return 1
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name(0)}; probe {PROBE_CYCLES} cycles; gap {args.gap_us} us")
    print(f"nvidia-smi at start: {throttle_reasons()}")
    results: dict[str, Any] = {}
    for headdim, causal, seqlen, batch, heads in SHAPES:
        shape = f"d{headdim} c{int(causal)} s{seqlen} b{batch} h{heads}"
        q, k, v = (
            torch.randn(batch, seqlen, heads, headdim, dtype=torch.bfloat16, device="cuda")
            for _ in range(3)
        )

        def call(q: Any = q, k: Any = k, v: Any = v, c: bool = causal, d: int = headdim) -> Any:
            return fa3(q, k, v, d**-0.5, c)

        bench = Bench(torch, call, l2_flush_bytes(l2))
        call()
        patterns: list[Pattern] = []
        bench.idle(args.idle_s)
        heat = bench.heat("heat", args.heat_s, args.probe_every)
        smi_hot = throttle_reasons()
        patterns.append(heat)
        every = max(1, args.probe_every // 4)
        patterns.append(bench.gapped("gapped-hot", 1.0, args.gap_us, every))
        bench.idle(args.idle_s)
        patterns.append(bench.gapped("gapped-cold", 1.0, args.gap_us, every))
        bench.idle(args.idle_s)
        patterns.append(bench.dobench("dobench-cold"))
        bench.heat("heat-before-dobench", args.heat_s, args.probe_every)
        patterns.append(bench.dobench("dobench-hot"))
        print(f"\n{shape}")
        print(f"  nvidia-smi at the end of the heat: {smi_hot}")
        print("  heat, by seconds since the load began: from-to | calls | FA3 ms | probes | MHz")
        call_rows = bucketed(heat.call_at_s, heat.call_ms)
        probed = bucketed(heat.probe_at_s, heat.probe_mhz)
        probe_rows = {(lo, hi): (n, m) for lo, hi, n, m in probed}
        for low, high, count, ms in call_rows:
            probes, mhz = probe_rows.get((low, high), (0, float("nan")))
            print(f"  {low:g}-{high:g} s | {count} | {ms:.4f} | {probes} | {mhz:.0f}")
        for pattern in patterns:
            print(f"  {pattern.summary()}")
        results[shape] = [asdict(p) for p in patterns]
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
