"""benchmarks/fa_groups.py: versions side by side by head dim and causality, from fa_bench's
JSON, on a made-up run of four shapes whose geomeans are known."""

from __future__ import annotations

import pytest

from benchmarks import fa_groups


def _row(headdim: int, causal: int, seqlen: int, a: float, b: float) -> dict[str, object]:
    """One shape: FA3 at 100 TFLOP/s (do_bench), candidates a and b at a and b times FA3 in
    turn and twice that by do_bench (where the two methods disagree)."""
    return {
        "headdim": headdim, "causal": causal, "seqlen_q": seqlen, "batch": 2, "nheads": 16,
        "fa3": 100.0, "cudnn": 90.0, "fa3_graph": 101.0, "max_abs_diff_vs_fa3": 0.01,
        "va": 200.0 * a, "va@turn": 1.0, "va@turn/fa3": a,
        "vb": 200.0 * b, "vb@turn": 1.0, "vb@turn/fa3": b,
    }  # fmt: skip


DATA = {
    "rows": [
        _row(64, 0, 512, 1.0, 1.1),
        _row(64, 0, 1024, 0.81, 0.9),
        _row(128, 1, 512, 0.9, 0.99),
        _row(128, 1, 1024, 0.9, 0.9),
    ]
}


def _cells(text: str, label: str) -> list[float]:
    line = next(line for line in text.splitlines() if line.startswith(label))
    return [float(x) for x in line[len(label) :].split()]


def test_geomeans_by_group_in_turn_and_against_a_version() -> None:
    text = fa_groups.report(DATA, "turn", against="va")
    assert text.splitlines()[1].split() == ["group", "va", "vb"]
    assert _cells(text, "d64 non-causal") == pytest.approx([0.9, 0.995], abs=1e-3)
    assert _cells(text, "d128 causal") == pytest.approx([0.9, 0.944], abs=1e-3)
    assert "va: worst d64 causal=0 s1024 at 0.810x FA3" in text
    against = text.split("against va")[1]
    # vb over va per shape: 1.1, 1.111, 1.1, 1.0
    assert _cells(against, "d64 non-causal") == pytest.approx([1.1055], abs=1e-3)
    assert _cells(against, "d128 causal") == pytest.approx([1.0488], abs=1e-3)


def test_do_bench_reads_each_entry_over_fa3_and_leaves_the_peers_out() -> None:
    text = fa_groups.report(DATA, "do_bench", against=None)
    assert text.splitlines()[1].split() == ["group", "va", "vb"]  # no cudnn, no graph, no diff
    assert _cells(text, "d128 causal") == pytest.approx([1.8, 1.8877], abs=1e-3)


def test_an_unknown_reference_is_refused() -> None:
    with pytest.raises(SystemExit, match="not a candidate"):
        fa_groups.report(DATA, "turn", against="v99")
