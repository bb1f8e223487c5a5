"""benchmarks/judge_vs_dobench.py: the per-shape comparison the kernel issue's agreement rule
reads, with do_bench's figures or fa_bench --in-turn's as the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import judge_vs_dobench


def _files(tmp_path: Path, judge_cand: float, judge_fa3: float, turn_fa3: float) -> list[str]:
    fields = {"headdim": 64, "causal": 1, "seqlen_q": 512}
    scenario = {
        "set": "bench",
        "fields": fields,
        "tflops": judge_cand,
        "peers": {"fa3": {"tflops": judge_fa3}},
    }
    row = {
        **fields,
        "v21": 200.0,
        "fa3": 97.0,  # do_bench with FA3's host launch in it
        "v21@turn": 200.0,
        "fa3@turn": turn_fa3,
        "v21@turn/fa3": 200.0 / turn_fa3,
    }
    eval_json, bench_json = tmp_path / "eval.json", tmp_path / "bench.json"
    eval_json.write_text(json.dumps({"scenarios": [scenario]}))
    bench_json.write_text(json.dumps({"rows": [row]}))
    return [str(eval_json), str(bench_json), "--candidate", "v21"]


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr("sys.argv", ["judge_vs_dobench", *argv])
    return judge_vs_dobench.main()


def test_turn_verdict_passes_where_only_do_bench_disagrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _files(tmp_path, judge_cand=202.0, judge_fa3=221.0, turn_fa3=223.0)
    assert _run(argv, monkeypatch) == 1  # FA3 at 221 against do_bench's 97: off
    assert _run([*argv, "--against", "turn"], monkeypatch) == 0
    printed = capsys.readouterr().out
    assert "x fa3 against fa_bench in turn: 1/1 shapes within 3%" in printed
    assert "fa3 against do_bench: 0/1 shapes" in printed


def test_turn_verdict_fails_on_a_ratio_off_by_more_than_the_tolerance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _files(tmp_path, judge_cand=200.0, judge_fa3=200.0, turn_fa3=223.0)
    assert _run([*argv, "--against", "turn"], monkeypatch) == 1
    assert "x fa3 against fa_bench in turn: 0/1 shapes" in capsys.readouterr().out
