"""fa_bench's shape filter: a profiler run must get exactly the shape it names."""

from __future__ import annotations

from pathlib import Path

from benchmarks.fa_bench import bench_shapes
from kernelseek_tui.task import load_task

TASK = load_task(Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd")


def test_no_filter_keeps_all_36_shapes() -> None:
    assert len(bench_shapes(TASK, None)) == 36


def test_a_head_dim_keeps_its_twelve() -> None:
    shapes = bench_shapes(TASK, "d128")
    assert len(shapes) == 12 and {s["headdim"] for s in shapes} == {128}


def test_three_tags_name_one_shape() -> None:
    (shape,) = bench_shapes(TASK, "d256,s8192,c1")
    assert (shape["headdim"], shape["seqlen_q"], shape["causal"]) == (256, 8192, 1)


def test_an_unknown_tag_keeps_nothing() -> None:
    assert bench_shapes(TASK, "d96") == []
