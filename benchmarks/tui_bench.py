"""Benchmark of the app on a long session (run by hand, not in CI).

    /work/venv/bin/python benchmarks/tui_bench.py [--size 160x45] [--repeats 30] [--json]

On a synthetic session of 11,500 tool calls (about 29,400 events, ~400 evals, ~160 questions;
tests/synthetic.py), driven headless through Textual's Pilot, it measures:
  - open: from starting the app to the first screen with the session loaded and drawn;
  - move: one cursor move in the transcript (`j`), key to screen refreshed;
  - jump: to the next eval (`]`), which also moves the history and loads a benchmark table;
  - filter: switching the transcript to questions only (`f`).
Pilot's own overhead (a key press and a pause on an idle app) is measured too and included
in the wall-clock key figures, so they are upper bounds; the *_cpu_ms figures are the CPU time
the process spent per key (every thread), the work of answering it; the *_frame_ms figures
run from sending the key to the first frame written to the terminal after it, what a person
waits for. Targets: open <= 1 s, move and jump <= 50 ms (held against the frame figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kernelseek_tui.tui.app import KernelseekApp  # noqa: E402
from kernelseek_tui.tui.widgets.benchmark import BenchmarkPane  # noqa: E402
from kernelseek_tui.tui.widgets.transcript import TranscriptView  # noqa: E402
from tests.synthetic import generate_sessions_fast  # noqa: E402

TARGETS = {"open_s": 1.0, "move_frame_ms": 50.0, "jump_frame_ms": 50.0}


async def measure(session_dir: Path, size: tuple[int, int], repeats: int) -> dict[str, Any]:
    app = KernelseekApp(session_dir)
    started = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        while app.data is None:
            await asyncio.sleep(0.005)
        await pilot.pause()
        open_s = time.perf_counter() - started
        view = app.query_one(TranscriptView)
        view.focus()
        await pilot.pause()

        cpu: dict[str, list[float]] = {}
        shown: dict[str, list[float]] = {}
        displayed: list[float] = []
        original_display = app._display

        def display(*args: Any, **kwargs: Any) -> Any:
            displayed.append(time.perf_counter())  # a frame written to the terminal
            return original_display(*args, **kwargs)

        app._display = display  # type: ignore[method-assign]
        bench = app.query_one(BenchmarkPane)
        tables: list[float] = []
        original_show = bench.show

        def show(*args: Any, **kwargs: Any) -> Any:
            original_show(*args, **kwargs)
            tables.append(time.perf_counter())  # the benchmark table of the new selection is in

        bench.show = show  # type: ignore[method-assign]
        table_waits: list[float] = []

        async def timed(key: str) -> float:
            c0 = time.process_time()
            t0 = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            wall = (time.perf_counter() - t0) * 1000
            cpu.setdefault(key, []).append((time.process_time() - c0) * 1000)
            frames = [t for t in displayed if t > t0]
            if frames:
                shown.setdefault(key, []).append((frames[0] - t0) * 1000)
            return wall

        idle = [await timed("shift") for _ in range(repeats)]  # a key nothing binds
        await pilot.press("g")
        moves = [await timed("j") for _ in range(repeats)]
        jumps = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jumps.append(await timed("right_square_bracket"))
            await app.workers.wait_for_complete()
            await pilot.pause()
            filled = [t for t in tables if t > t0]
            if filled:
                table_waits.append((filled[0] - t0) * 1000)
        filters = [await timed("f") for _ in range(4)]
        events = len(view.index or [])
    return {
        "events": events,
        "open_s": open_s,
        "idle_pilot_ms": statistics.median(idle),
        "move_pilot_ms": statistics.median(moves),
        "move_pilot_max_ms": max(moves),
        "jump_pilot_ms": statistics.median(jumps),
        "jump_pilot_max_ms": max(jumps),
        "filter_pilot_ms": statistics.median(filters),
        # CPU time the process spent per key (all threads): the work of answering it, without
        # the waiting Pilot adds; an idle key's share is Pilot's own work.
        "idle_cpu_ms": statistics.median(cpu["shift"]),
        "move_cpu_ms": statistics.median(cpu["j"]),
        "jump_cpu_ms": statistics.median(cpu["right_square_bracket"]),
        # From sending the key to the first frame written after it: what a person waits.
        "move_frame_ms": statistics.median(shown["j"]),
        "move_frame_max_ms": max(shown["j"]),
        "jump_frame_ms": statistics.median(shown["right_square_bracket"]),
        "jump_frame_max_ms": max(shown["right_square_bracket"]),
        # ... and to the benchmark table of the eval jumped to (after the coalescing delay)
        "jump_table_ms": statistics.median(table_waits),
        "jump_table_max_ms": max(table_waits),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="160x45")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cols, rows = (int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="ks-tui-bench-") as tmp:
        (session_dir,) = generate_sessions_fast(Path(tmp), count=1)
        figures = asyncio.run(measure(session_dir, (cols, rows), args.repeats))
    figures.update(size=args.size, python=platform.python_version(), machine=platform.machine())
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"TUI on a synthetic session of {figures['events']} events at {args.size}")
    for key, value in figures.items():
        if not isinstance(value, float):
            continue
        target = TARGETS.get(key)
        mark = "" if target is None else (" ok" if value <= target else " MISSED")
        unit = "s" if key.endswith("_s") else "ms"
        goal = "" if target is None else f"  (target <= {target:g} {unit}){mark}"
        print(
            f"  {key:18s} {value:8.1f}{goal}" if unit == "ms" else f"  {key:14s} {value:8.3f}{goal}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
