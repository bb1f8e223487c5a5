"""The pool on the real GPU box: one slot per visible GPU, each result naming its GPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.pool import EvalPool, visible_devices
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]
SMALL = Path(__file__).parent / "data" / "flash_small.toml"


def test_pool_has_one_slot_per_visible_gpu_and_records_the_gpu(monkeypatch) -> None:
    devices = visible_devices()
    assert devices, "a GPU test needs a GPU"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", devices[0])
    task = load_task(ROOT / "kernels" / "flash_fwd")
    with EvalPool() as pool:
        assert len(pool) == 1
        jobs = [
            (
                task,
                task.source,
                {
                    "scenarios_file": SMALL,
                    "timed": False,
                    "compare": False,
                    "knobs": {"BLOCK_N": n},
                },
            )
            for n in (32, 64)
        ]
        results = pool.map(jobs)
    assert [r.verdict for r in results] == ["pass", "pass"], [r.reasons for r in results]
    assert {r.device["index"] for r in results} == {os.environ["CUDA_VISIBLE_DEVICES"]}
    assert all(r.device["uuid"] for r in results)
