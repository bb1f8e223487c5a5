"""fa_bench's shape filter (a profiler run must get exactly the shape it names), its names for
repeated sources, its rotated order, its A/A agreement count and its do_bench rounds in turn."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from benchmarks.fa_bench import (
    agreement,
    bench_shapes,
    candidate_names,
    entry_call,
    time_dobench_in_turn,
    turn_order,
)
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


def test_a_source_given_twice_gets_two_names() -> None:
    sources = [Path("a/v14.cu"), Path("b/v18.cu"), Path("v14.cu"), Path("c/v14.cu")]
    assert candidate_names(sources) == ["v14", "v18", "v14#2", "v14#3"]


def test_every_entry_takes_every_position_equally_often_over_the_bench_set() -> None:
    entries = ["v14", "v18", "fa3", "cudnn"]
    orders = [turn_order(entries, i, rotate=True) for i in range(36)]
    for order in orders:
        assert sorted(order) == sorted(entries)
    for entry in entries:
        positions = [order.index(entry) for order in orders]
        assert all(positions.count(p) == 9 for p in range(4)), (entry, positions)


def test_a_fixed_order_is_the_order_given() -> None:
    assert turn_order(["a", "b", "fa3"], 5, rotate=False) == ["a", "b", "fa3"]


def test_agreement_counts_the_shapes_within_the_tolerance_and_names_the_worst() -> None:
    rows = [{"fa3": 100.0, "fa3#2": 102.0}, {"fa3": 100.0, "fa3#2": 90.0}, {"fa3": 100.0}]
    line = agreement(rows, "fa3#2", "fa3")
    assert "1/2 shapes within 3%" in line and "worst 0.900" in line


def test_do_bench_in_turn_times_each_call_once_a_round_forward_then_reversed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    def fake_do_bench(call, warmup: int, rep: int, return_mode: str) -> float:
        assert (warmup, rep, return_mode) == (25, 100, "median")
        return call()

    def timed(name: str, ms: float):
        def call() -> float:
            order.append(name)
            return ms

        return call

    testing = types.ModuleType("triton.testing")
    testing.do_bench = fake_do_bench  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton", types.ModuleType("triton"))
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    medians = time_dobench_in_turn([timed("a", 1.0), timed("b", 2.0)], 4, 25, 100)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert medians == [[1.0] * 4, [2.0] * 4]


def test_an_entry_is_a_candidates_binding_or_a_peer_on_the_shapes_tensors() -> None:
    class Bound:
        def bind(self, tensors, shape, scale, stream):
            return ("bound", tuple(tensors), shape["causal"], scale, stream)

    def peer(q, k, v, scale, causal):
        return ("peer", q, k, v, scale, causal)

    common = {
        "candidates": {"v1": Bound()},
        "peers": {"fa3": peer},
        "tensors": ("q", "k", "v", "out", "lse"),
        "shape": {"causal": 1},
        "scale": 0.5,
        "stream": 7,
    }
    assert entry_call("v1", **common) == ("bound", ("q", "k", "v", "out", "lse"), 1, 0.5, 7)
    assert entry_call("fa3", **common)() == ("peer", "q", "k", "v", 0.5, True)
