"""Where the judge's reference spends its time, scenario by scenario, on the GPU box: the
largest phase of a quick evaluation (2.7 of 5.2 s on the H200, 2026-12-05), measured before it
is changed.

For each scenario of a set (default: quick), the task's reference (`kernels/flash_fwd/
reference.py`) on random inputs of the scenario's shapes, as the judge calls it (inputs in
float32, with the low-precision variant): the median of a few calls, and the same without the
low-precision variant; beside them a floor from FLOPs alone, the reference's matmuls (two, three
with the variant, over the score entries it computes) at the float32 matmul rate this GPU gives
CuPy on a large square product (measured here first). What is left above that floor is the
elementwise work over the score matrix, and launch and Python time. First, the bf16 rounding of
the low-precision variant as one fused kernel (round_to on CuPy) against the array operations
it replaced.

    python3 benchmarks/reference_bench.py [--set quick] [--calls 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelseek_tui.evaluate.comparators import load_module  # noqa: E402
from kernelseek_tui.evaluate.dtypes import from_float32, round_to, to_float32  # noqa: E402
from kernelseek_tui.task import load_task  # noqa: E402

TASK_DIR = ROOT / "kernels" / "flash_fwd"


def seconds(cp: Any, call: Any, calls: int) -> float:
    """The median wall time of ``calls`` calls, each synchronised (as the judge's is)."""
    times = []
    for _ in range(calls):
        cp.cuda.Device().synchronize()
        began = time.perf_counter()
        call()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def matmul_rate(cp: Any) -> float:
    """float32 FLOP/s of a 8192-square product through CuPy (its cuBLAS), after a warm-up."""
    n = 8192
    a = cp.random.standard_normal((n, n), dtype=cp.float32)
    b = cp.random.standard_normal((n, n), dtype=cp.float32)
    cp.matmul(a, b)
    return 2.0 * n**3 / seconds(cp, lambda: cp.matmul(a, b), 5)


def rounding_seconds(cp: Any, dtype: str, calls: int) -> tuple[float, float]:
    """The low-precision variant rounds every probability to ``dtype``: the fused kernel
    round_to uses on CuPy against the composite of array operations it replaced (the same
    bits), on 1 GiB of float32."""
    probs = cp.random.random_sample(1 << 28, dtype=cp.float32)
    composite = seconds(cp, lambda: to_float32(cp, from_float32(cp, probs, dtype), dtype), calls)
    fused = seconds(cp, lambda: round_to(cp, probs, dtype), calls)
    return composite, fused


def score_entries(module: Any, fields: dict[str, int]) -> int:
    """The score entries the reference computes (its own blocks of query rows, each over the
    keys it sees), over every batch and head."""
    blocks = module._row_blocks(fields["seqlen_q"], fields["seqlen_k"], bool(fields["causal"]))
    per_head = sum((r1 - r0) * keys for r0, r1, keys in blocks)
    return per_head * fields["batch"] * fields["nheads"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="quick", help="the scenario set (default quick)")
    parser.add_argument("--calls", type=int, default=3, help="calls timed per variant")
    args = parser.parse_args()

    import cupy as cp

    task = load_task(TASK_DIR)
    module = load_module(TASK_DIR / "reference.py", "reference_bench_reference")
    lowp_dtype = next(s.dtype for s in task.outputs if task.tolerances[s.name].rule == "lowp")
    rate = matmul_rate(cp)
    device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    print(f"device: {device}; float32 matmul through CuPy: {rate / 1e12:.1f} TFLOP/s")
    composite, fused = rounding_seconds(cp, lowp_dtype, args.calls)
    print(
        f"rounding 1 GiB of float32 to {lowp_dtype} and back: {composite * 1e3:.1f} ms as array "
        f"operations, {fused * 1e3:.1f} ms fused (as round_to now does)"
    )
    print("| scenario | ms, as judged | ms, without lowp | matmul floor ms | above the floor |")
    print("|---|---|---|---|---|")
    total = {"judged": 0.0, "plain": 0.0, "floor": 0.0}
    rng = random.Random(7)
    for scenario in task.scenarios(args.set):
        fields = dict(scenario.fields)
        inputs = {
            spec.name: cp.random.standard_normal(spec.dims(fields), dtype=cp.float32)
            for spec in task.inputs
        }
        floats = {spec.name: spec.draw(fields, rng) for spec in task.floats}

        def judged(fields: dict = fields, inputs: dict = inputs, floats: dict = floats) -> None:
            module.reference(inputs, fields, floats, lambda x: round_to(cp, x, lowp_dtype))

        def plain(fields: dict = fields, inputs: dict = inputs, floats: dict = floats) -> None:
            module.reference(inputs, fields, floats, None)

        judged()  # CuPy compiles its kernels on first use: not the reference's time
        with_lowp = seconds(cp, judged, args.calls)
        without = seconds(cp, plain, args.calls)
        entries = score_entries(module, fields)
        floor = 3 * 2.0 * entries * fields["headdim"] / rate
        total["judged"] += with_lowp
        total["plain"] += without
        total["floor"] += floor
        print(
            f"| {scenario.name} | {with_lowp * 1e3:.1f} | {without * 1e3:.1f} | "
            f"{floor * 1e3:.1f} | {with_lowp / floor:.1f}x |"
        )
        del inputs
        cp.get_default_memory_pool().free_all_blocks()
    print(
        f"| all {args.set} | {total['judged'] * 1e3:.1f} | {total['plain'] * 1e3:.1f} | "
        f"{total['floor'] * 1e3:.1f} | {total['judged'] / total['floor']:.1f}x |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
