"""benchmarks/fa_bench_ratios.py: two fa_bench columns compared shape by shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fa_bench_ratios import main, ratios, read_column, summary_lines


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text(json.dumps({"rows": rows}))
    return str(path)


def _row(d: int, causal: int, s: int, **columns: float | None) -> dict:
    return {"headdim": d, "causal": causal, "seqlen_q": s, **columns}


def test_ratio_is_first_over_second_on_shapes_both_have(tmp_path: Path) -> None:
    one = _write(
        tmp_path / "a.json", [_row(64, 0, 512, x=110.0, y=100.0), _row(64, 0, 1024, x=50.0)]
    )
    first, second = read_column(f"{one}:x"), read_column(f"{one}:y")
    assert ratios(first, second) == {(64, 0, 512): pytest.approx(1.1)}


def test_summary_counts_shapes_within_three_percent(tmp_path: Path) -> None:
    lines = summary_lines("a / b", {(64, 0, 512): 1.02, (64, 0, 1024): 1.05, (128, 1, 512): 0.96})
    assert lines[1] == "  d64 c0  s512:1.020 s1024:1.050"
    assert lines[2] == "  d128 c1  s512:0.960"
    assert "within 3%: 1/3" in lines[-1]
    assert "range 0.960-1.050" in lines[-1]


def test_a_missing_column_names_the_columns_there_are(tmp_path: Path) -> None:
    one = _write(tmp_path / "a.json", [_row(64, 0, 512, fa3=1.0)])
    with pytest.raises(SystemExit, match="fa3"):
        read_column(f"{one}:cudnn")


def test_main_prints_each_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _write(tmp_path / "a.json", [_row(64, 0, 512, x=2.0, y=1.0)])
    assert main([f"{one}:x", f"{one}:y", "--pair", f"{one}:y", f"{one}:x"]) == 0
    out = capsys.readouterr().out
    assert "s512:2.000" in out and "s512:0.500" in out
