"""The judge's GPU fence (evaluate/gpu_fence.py) on the CPU: its source builds for Hopper with
nvcc, each fence waits for exactly the blocks enqueued so far (its target grows by the grid
and wraps as the counter does), and the grid is two 1024-thread blocks per SM. Where it goes
in an isolated call and what a fence that let go does: tests/test_sandboxed_kernel.py. Whether
it holds a call's leftover work on a real GPU: tests/test_sandbox_gpu.py (marked gpu)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate.gpu_fence import FENCE_SOURCE, FENCE_THREADS, GpuFence

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
def test_the_fence_builds_for_hopper_without_shared_memory(tmp_path: Path) -> None:
    source = tmp_path / "fence.cu"
    source.write_text(FENCE_SOURCE)
    built = subprocess.run(
        [
            "nvcc",
            "-arch=sm_90",
            "-c",
            "-o",
            str(tmp_path / "fence.o"),
            str(source),
            "-Xptxas",
            "-v",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    # No shared memory: the fence must not change the SMs' carve-out between the call and it.
    assert "smem" not in built.stderr or "0 bytes smem" in built.stderr, built.stderr


class StandInCupy:
    """What GpuFence asks of CuPy: the device's attributes, a kernel that logs its launches."""

    def __init__(self, sms: int, threads_per_sm: int = 2048) -> None:
        self.launches: list[tuple[Any, ...]] = []
        attributes = {"MultiProcessorCount": sms, "MaxThreadsPerMultiProcessor": threads_per_sm}
        self.cuda = SimpleNamespace(Device=lambda: SimpleNamespace(attributes=attributes))
        self.uint32 = "uint32"
        cupy = self

        class RawKernel:
            def __init__(self, source: str, name: str) -> None:
                assert name == "ks_gpu_fence" and name in source

            def __call__(self, grid, block, args, stream=None) -> None:
                cupy.launches.append((grid, block, int(args[1]), int(args[2]), stream))

        self.RawKernel = RawKernel

    def zeros(self, count: int, dtype: str) -> list[int]:
        return [0] * count


def test_each_fence_waits_for_every_block_enqueued_so_far_and_the_count_wraps() -> None:
    cupy = StandInCupy(sms=132)
    fence = GpuFence(cupy, limit_ms=250)
    assert fence.blocks == 264  # two blocks of 1024 threads fill an SM's 2048 slots
    for _ in range(3):
        fence.enqueue("the judge's stream")
    assert [launch[2] for launch in cupy.launches] == [264, 528, 792]
    grid, block, _, limit_ns, stream = cupy.launches[0]
    assert grid == (264,) and block == (FENCE_THREADS,)
    assert limit_ns == 250_000_000 and stream == "the judge's stream"
    fence._arrived = 0xFFFFFFFF - 100  # the device's counter wraps at 2**32 as this one does
    fence.enqueue("the judge's stream")
    assert cupy.launches[-1][2] == (0xFFFFFFFF - 100 + 264) & 0xFFFFFFFF == 163


def test_the_grid_follows_the_sms_thread_slots() -> None:
    assert GpuFence(StandInCupy(sms=80, threads_per_sm=1024), limit_ms=1).blocks == 80
    assert GpuFence(StandInCupy(sms=8, threads_per_sm=2048), limit_ms=1).blocks == 16
