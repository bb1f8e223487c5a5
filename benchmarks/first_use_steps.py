"""Each step of the judge's own work on one scenario, timed on its first use in this process
and again (the held-out draws that took seconds on fresh machines, 2026-12-07; see
scripts/gpu_first_use.sh, which runs this with empty caches).

    python3 benchmarks/first_use_steps.py [--no-cub] ["b sq sk heads kv_heads headdim causal" ...]

Prints, per step, the seconds of its first use and of its repeat, and the files CuPy's cache
(CUPY_CACHE_DIR: one per kernel CuPy compiled) and the driver's JIT cache (CUDA_CACHE_PATH)
gained. CuPy's accelerators (CUB) stay as installed unless --no-cub: the judge's worker turns
them off (evaluate/compile_watch.py). Needs a GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

DEFAULT_SHAPES = ["2 41 27 4 2 64 1", "1 3668 1 8 2 256 1", "3 18 12 6 2 128 0"]


def _files(variable: str, default: str) -> int:
    folder = Path(os.environ.get(variable) or os.path.expanduser(default))
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("shapes", nargs="*", default=DEFAULT_SHAPES)
    parser.add_argument("--no-cub", action="store_true", help="CuPy's accelerators off")
    args = parser.parse_args()

    import cupy as cp
    from cupy._core import _accelerator

    from kernelseek_tui.task import load_task

    if args.no_cub:
        for setter in ("elementwise", "reduction", "routine"):
            getattr(_accelerator, f"set_{setter}_accelerators")([])
    print(
        "accelerators: reduction",
        _accelerator.get_reduction_accelerators(),
        "routine",
        _accelerator.get_routine_accelerators(),
    )
    task = load_task("kernels/flash_fwd")
    spec = importlib.util.spec_from_file_location("reference", "kernels/flash_fwd/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generator = cp.random.default_rng(7)
    cp.zeros(1).sum()
    cp.cuda.Device().synchronize()

    def timed(label: str, step: Any) -> Any:
        jit, cupy_files = (
            _files("CUDA_CACHE_PATH", "~/.nv/ComputeCache"),
            _files("CUPY_CACHE_DIR", "~/.cupy/kernel_cache"),
        )
        began = time.perf_counter()
        value = step()
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - began
        print(
            f"  {label:<28} {seconds:8.3f} s  JIT cache +"
            f"{_files('CUDA_CACHE_PATH', '~/.nv/ComputeCache') - jit}  CuPy cache +"
            f"{_files('CUPY_CACHE_DIR', '~/.cupy/kernel_cache') - cupy_files}"
        )
        return value

    for text in args.shapes:
        for attempt in ("first", "again"):
            print(f"{text} ({attempt}):")
            _judge_once(cp, task, module, generator, [int(x) for x in text.split()], timed)
    return 0


def _judge_once(
    cp: Any, task: Any, module: Any, generator: Any, shape: list[int], timed: Any
) -> None:
    """The judge's own steps on one scenario of ``shape`` (the task's fields in order), each
    through ``timed``."""
    from kernelseek_tui.evaluate.buffers import allocate, fill_random, poison_output
    from kernelseek_tui.evaluate.dtypes import round_to, to_float32

    fields = dict(zip(task.scenario_fields, shape, strict=True))
    tensors = {s.name: allocate(cp, s, s.dims(fields)) for s in task.tensors}
    timed("fill inputs", lambda: [fill_random(cp, tensors[s.name], generator) for s in task.inputs])
    timed("poison outputs", lambda: [poison_output(cp, tensors[s.name]) for s in task.outputs])
    saved = timed(
        "snapshot inputs", lambda: {s.name: tensors[s.name].body.copy() for s in task.inputs}
    )
    timed(
        "inputs equal (array_equal)",
        lambda: [bool(cp.array_equal(saved[n], tensors[n].body)) for n in saved],
    )
    inputs = {s.name: to_float32(cp, tensors[s.name].body, s.dtype) for s in task.inputs}
    floats = {"softmax_scale": fields["headdim"] ** -0.5}
    ints = {"causal": fields["causal"]}

    def lowp(x: Any) -> Any:
        return round_to(cp, x, "bfloat16")

    reference = timed("reference", lambda: module.reference(inputs, ints, floats, lowp))
    for spec in task.outputs:
        _check_one(cp, task, spec.name, spec.dtype, reference, timed)
    timed("guards intact", lambda: [t.guards_intact(cp) for t in tensors.values()])


def _check_one(
    cp: Any, task: Any, name: str, dtype: str, reference: dict[str, Any], timed: Any
) -> None:
    """One output stored from the reference, then checked against it."""
    from kernelseek_tui.evaluate.check import check_output
    from kernelseek_tui.evaluate.dtypes import from_float32

    stored = timed(f"store {name}", lambda: from_float32(cp, reference[name], dtype))
    timed(
        f"check {name}",
        lambda: check_output(
            cp, name, dtype, stored, reference[name], reference.get(f"{name}:lowp"),
            task.tolerances[name],
        ),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
