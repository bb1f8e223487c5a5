"""The benchmark rows, their summary and sort, and the benchmark pane driven by Pilot."""

from __future__ import annotations

import math

import pytest
from textual.app import App, ComposeResult

from kernelseek_tui.browse.benchmark import (
    BenchmarkRow,
    rows_of,
    sort_rows,
    summary_of,
)
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, PeerTiming, ScenarioResult
from kernelseek_tui.tui.widgets.benchmark import NO_EVALUATION, BenchmarkPane


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio; the Pilot tests run through anyio's plugin


def _scenario(
    name: str,
    passed: bool | None,
    ms: float | None,
    *,
    speedup: float | None = None,
    tflops: float | None = None,
    fa3_ms: float | None = None,
    fa3_tflops: float | None = None,
    reasons: list[str] | None = None,
) -> ScenarioResult:
    peers = {}
    if fa3_ms is not None or fa3_tflops is not None:
        peers["fa3"] = PeerTiming(name="fa3", ms=fa3_ms, tflops=fa3_tflops)
    return ScenarioResult(
        name=name,
        set="default",
        fields={},
        passed=passed,
        reasons=reasons or [],
        max_error=1e-3 if passed is not None else None,
        tolerance=2e-3,
        ms=ms,
        tflops=tflops,
        speedup=speedup,
        peers=peers,
    )


def _result(summary: EvalSummary | None = None) -> EvalResult:
    scenarios = [
        _scenario("b-small", True, 1.0, speedup=1.5, tflops=100.0, fa3_ms=1.2, fa3_tflops=80.0),
        _scenario(
            "a-large",
            False,
            4.0,
            speedup=0.5,
            tflops=200.0,
            fa3_ms=2.0,
            fa3_tflops=300.0,
            reasons=["max error 0.5 over tolerance 0.002"],
        ),
        _scenario("c-mid", True, 2.0, speedup=2.0, tflops=150.0),
        _scenario("d-unreached", None, None),
    ]
    return EvalResult(
        eval_id="e1",
        verdict="fail",
        scenarios=scenarios,
        summary=summary or EvalSummary(),
        reasons=["1 scenario failed"],
    )


# -- the plain rows --------------------------------------------------------------------------


def test_rows_carry_each_scenario_numbers_and_the_fa3_ratio() -> None:
    rows = rows_of(_result())
    assert [r.scenario for r in rows] == ["b-small", "a-large", "c-mid", "d-unreached"]
    small, large, mid, unreached = rows
    assert small.passed is True and small.ms == 1.0 and small.fa3_tflops == 80.0
    assert small.ratio_fa3 == pytest.approx(1.2)  # fa3 time / ours: 1.2x faster than FA3
    assert large.failed and large.reasons == ("max error 0.5 over tolerance 0.002",)
    assert large.ratio_fa3 == pytest.approx(0.5)
    assert mid.ratio_fa3 is None and mid.fa3_tflops is None  # no FA3 timing there
    assert unreached.passed is None and not unreached.failed and unreached.ms is None


def test_summary_is_recomputed_from_scenarios_when_the_result_has_none() -> None:
    summary = summary_of(_result())
    assert (summary.passed, summary.total) == (2, 4)
    assert summary.geomean_speedup == pytest.approx(math.prod([1.5, 0.5, 2.0]) ** (1 / 3))
    assert summary.geomean_tflops == pytest.approx(math.prod([100.0, 200.0, 150.0]) ** (1 / 3))
    assert summary.vs_fa3 == pytest.approx(math.sqrt(1.2 * 0.5))
    line = summary.line()
    assert "2/4 passed" in line and "vs fa3" in line


def test_summary_prefers_the_evaluations_own_numbers_and_names_absent_peers() -> None:
    own = EvalSummary(
        passed=3,
        total=4,
        geomean_speedup=1.25,
        geomean_tflops=321.0,
        vs_peers={"fa3": 0.9},
        absent_peers={"cudnn": "not importable"},
    )
    summary = summary_of(_result(own))
    assert (summary.passed, summary.total, summary.geomean_speedup) == (3, 4, 1.25)
    assert summary.absent_peers == {"cudnn": "not importable"}
    assert "cudnn absent (not importable)" in summary.line()
    assert "1.250x" in summary.line() and "321.0 TFLOP/s" in summary.line()


@pytest.mark.parametrize("descending", [False, True])
def test_sort_puts_missing_values_last_in_either_direction(descending: bool) -> None:
    rows = rows_of(_result())
    by_speedup = [r.scenario for r in sort_rows(rows, "speedup", descending)]
    present = ["a-large", "b-small", "c-mid"]
    assert by_speedup == (present[::-1] if descending else present) + ["d-unreached"]
    by_ratio = [r.scenario for r in sort_rows(rows, "ratio_fa3", descending)]
    assert by_ratio[-2:] == ["c-mid", "d-unreached"]  # both without an FA3 number


def test_sort_by_name_orders_the_numbers_in_names_by_value() -> None:
    names = ["bench-s16384-d128-c1", "bench-s2048-d64-c0", "Bench-s4096-d128-c0", "s1x1-d64"]
    rows = [BenchmarkRow(n, True, None, None, 1.0, None, None, None, None) for n in names]
    assert [r.scenario for r in sort_rows(rows, "scenario")] == [
        "bench-s2048-d64-c0",
        "Bench-s4096-d128-c0",
        "bench-s16384-d128-c1",  # not before s2048, as text would have it
        "s1x1-d64",
    ]


def test_sort_by_name_pass_and_evaluation_order() -> None:
    rows = rows_of(_result())
    names = [r.scenario for r in sort_rows(rows, "scenario")]
    assert names == ["a-large", "b-small", "c-mid", "d-unreached"]
    # Failures first when sorting by pass, then the passes in evaluation order.
    assert [r.scenario for r in sort_rows(rows, "passed")] == [
        "a-large",
        "b-small",
        "c-mid",
        "d-unreached",
    ]
    assert sort_rows(rows, None) == rows
    assert sort_rows(rows, None, descending=True) == rows[::-1]
    with pytest.raises(ValueError, match="no column"):
        sort_rows(rows, "colour")


def test_a_row_from_a_round_tripped_result_is_the_same() -> None:
    result = _result()
    again = EvalResult.from_json(result.to_json())
    assert rows_of(again) == rows_of(result)
    assert isinstance(rows_of(again)[0], BenchmarkRow)


# -- the pane ----------------------------------------------------------------------------------


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield BenchmarkPane(id="bench")

    def on_mount(self) -> None:
        self.query_one(BenchmarkPane).focus()


def _visible_text(app: App[None]) -> str:
    """Everything the screen shows, as plain text."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def _shown_names(pane: BenchmarkPane) -> list[str]:
    table = pane.table
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


@pytest.mark.anyio
async def test_pane_says_plainly_when_no_evaluation_is_selected() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        assert NO_EVALUATION in _visible_text(app)
        pane = app.query_one(BenchmarkPane)
        pane.show(_result(), "abc1234 eval 17")
        await pilot.pause()
        assert NO_EVALUATION not in _visible_text(app)
        pane.show(None, "")
        await pilot.pause()
        assert NO_EVALUATION in _visible_text(app)
        assert pane.rows == []


@pytest.mark.anyio
async def test_pane_shows_title_geomeans_rows_and_marks_failures() -> None:
    app = PaneApp()
    async with app.run_test(size=(110, 20)) as pilot:
        pane = app.query_one(BenchmarkPane)
        pane.show(_result(), "abc1234 eval 17")
        await pilot.pause()
        text = _visible_text(app)
        assert "abc1234 eval 17" in text
        assert "2/4 passed" in text
        for name in ("a-large", "b-small", "c-mid", "d-unreached"):
            assert name in text
        failing_line = next(line for line in text.splitlines() if "a-large" in line)
        assert "✗" in failing_line and "FAIL" in failing_line
        passing_line = next(line for line in text.splitlines() if "b-small" in line)
        assert "FAIL" not in passing_line and "1.20" in passing_line
        # The failing row is red, not only marked.
        failing_cells = pane.table.get_row_at(1)
        assert "red" in str(failing_cells[1].style)
        assert "red" not in str(pane.table.get_row_at(0)[1].style)


@pytest.mark.anyio
async def test_a_gpu_shared_with_others_shows_as_a_warning_above_the_table() -> None:
    result = _result()
    assert summary_of(result).warnings == ()  # unchecked or idle: nothing to say
    result.other_gpu_processes = ["pid 4242 (notebook, 30000 MiB)"]
    assert summary_of(result).warnings == (
        "GPU shared with pid 4242 (notebook, 30000 MiB): times may be slow",
    )
    app = PaneApp()
    async with app.run_test(size=(110, 20)) as pilot:
        pane = app.query_one(BenchmarkPane)
        pane.show(result, "abc1234 eval 17")
        await pilot.pause()
        assert "warning: GPU shared with pid 4242" in _visible_text(app)


@pytest.mark.anyio
async def test_s_cycles_the_sort_column_and_r_reverses_it_keeping_the_selection() -> None:
    app = PaneApp()
    async with app.run_test(size=(110, 20)) as pilot:
        pane = app.query_one(BenchmarkPane)
        pane.show(_result(), "eval 3")
        await pilot.pause()
        assert _shown_names(pane) == ["b-small", "a-large", "c-mid", "d-unreached"]
        await pilot.press("s")  # by scenario name
        assert pane.sort_key == "scenario"
        assert _shown_names(pane) == ["a-large", "b-small", "c-mid", "d-unreached"]
        await pilot.press("r")
        assert _shown_names(pane) == ["d-unreached", "c-mid", "b-small", "a-large"]
        await pilot.press("s", "s")  # passed, then speedup (biggest first)
        assert pane.sort_key == "speedup" and pane.descending
        assert _shown_names(pane) == ["c-mid", "b-small", "a-large", "d-unreached"]
        assert "speedup ▼" in _visible_text(app)
        # The cursor started on b-small and followed it through every sort.
        assert pane.selected_row is not None and pane.selected_row.scenario == "b-small"
        assert pane.table.cursor_row == 1
        await pilot.press("r")  # smallest first; the cursor stays on b-small
        assert _shown_names(pane) == ["a-large", "b-small", "c-mid", "d-unreached"]
        assert pane.selected_row.scenario == "b-small"
        assert "speedup ▲" in _visible_text(app)


@pytest.mark.anyio
async def test_j_k_g_G_move_and_the_failing_reasons_show_for_the_selected_row() -> None:
    app = PaneApp()
    async with app.run_test(size=(110, 20)) as pilot:
        pane = app.query_one(BenchmarkPane)
        pane.show(_result(), "eval 3")
        await pilot.pause()
        assert pane.selected_row is not None and pane.selected_row.scenario == "b-small"
        assert "over tolerance" not in _visible_text(app)
        await pilot.press("j")
        await pilot.pause()
        assert pane.selected_row.scenario == "a-large"
        assert "a-large: max error 0.5 over tolerance 0.002" in _visible_text(app)
        await pilot.press("G")
        assert pane.selected_row.scenario == "d-unreached"
        await pilot.press("k")
        assert pane.selected_row.scenario == "c-mid"
        await pilot.press("g")
        assert pane.selected_row.scenario == "b-small"


@pytest.mark.anyio
@pytest.mark.parametrize("width", [30, 45, 60, 80])
async def test_a_narrow_pane_keeps_numbers_whole_and_drops_columns(width: int) -> None:
    # A table wider than the pane used to be cut at its edge: "1" for 1.345, "0.0" for 0.012.
    scenarios = [
        _scenario(f"bench-s{n}-d128-c1", True, n / 1e4, speedup=1.345, tflops=412.5,
                  fa3_ms=n / 9e3, fa3_tflops=456.25)
        for n in (2048, 4096, 16384)
    ]  # fmt: skip
    result = EvalResult(eval_id="e", verdict="pass", scenarios=scenarios, summary=EvalSummary())
    app = PaneApp()
    async with app.run_test(size=(width, 20)) as pilot:
        pane = app.query_one(BenchmarkPane)
        pane.show(result, "eval 1")
        await pilot.pause()
        table = pane.table
        for index, scenario in enumerate(scenarios):
            whole = {"✓", "pass", scenario.name, "1.345", "412.5", "456.2", "1.11"}
            whole |= {f"{scenario.ms:.3f}", "1.00e-03", "2.0e-03"}
            drawn = table.render_line(index + 1).text.split()
            assert "1.345" in drawn, (width, drawn)  # the speedup survives any width here
            assert all(word in whole or word.endswith("…") for word in drawn), (width, drawn)
