"""The whole app, driven by Pilot on the recorded demo sessions (real git repositories)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelseek_tui.browse.unpack import recorded_sessions
from kernelseek_tui.tui.app import KernelseekApp
from kernelseek_tui.tui.widgets.benchmark import BenchmarkPane
from kernelseek_tui.tui.widgets.header import SessionHeader
from kernelseek_tui.tui.widgets.history import HistoryPane
from kernelseek_tui.tui.widgets.question_bar import QuestionBar
from kernelseek_tui.tui.widgets.transcript import TranscriptView
from tests.tui_support import SCRIPTED, settle, unpacked_demo

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpacked_demo(tmp_path_factory.mktemp("app-demo"))


def header_text(app: KernelseekApp) -> str:
    return str(app.query_one(SessionHeader).render())


async def test_three_panes_side_by_side_when_wide(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        for name in ("transcript", "history", "benchmark"):
            assert app.query_one(f"#pane-{name}").display
        text = header_text(app)
        assert SCRIPTED in text and "best 1.597x" in text and "calls 21" in text
        assert "not measured" in text  # the scripted recording says its numbers are stand-ins
        # It opens on the best evaluation, the commit holding it and its benchmark table. The
        # best (1.597x) is candidate 3's code evaluated again: attached to candidate 3, whose
        # own evaluation (1.587x) came earlier.
        view = app.query_one(TranscriptView)
        assert view.index is not None
        assert view.index.kind_at(view.selected_row or 0) == "eval"
        assert app.timeline is not None and view.selected_seq == app.timeline.best_eval_seq
        bench = app.query_one(BenchmarkPane)
        assert bench.table.row_count == 12
        history = app.query_one(HistoryPane)
        assert history.selected is not None and history.selected.n == 3
        assert history.selected.sha == app.timeline.commit_for_eval_seq(view.selected_seq)
        assert history.selected.eval_seq is not None
        assert history.selected.eval_seq < view.selected_seq


async def test_narrow_terminal_shows_one_pane_and_function_keys_switch(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = [n for n in ("transcript", "history", "benchmark") if _visible(app, n)]
        assert shown == ["transcript"]
        await pilot.press("f3")
        assert [n for n in ("transcript", "history", "benchmark") if _visible(app, n)] == [
            "history"
        ]
        assert app.focused is not None and app.query_one(HistoryPane) in (
            app.focused,
            *app.focused.ancestors,
        )
        await pilot.press("f4")
        assert _visible(app, "benchmark") and not _visible(app, "history")
        await pilot.press("tab")
        assert _visible(app, "transcript")


def _visible(app: KernelseekApp, name: str) -> bool:
    pane = app.query_one(f"#pane-{name}")
    return bool(pane.display) and pane.region.area > 0


async def test_a_candidate_picked_in_history_moves_the_transcript_to_its_eval(
    demo: Path,
) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        await pilot.press("G")  # the oldest row: the start commit
        await pilot.press("k")  # candidate 1
        await settle(pilot)
        history = app.query_one(HistoryPane)
        row = history.selected
        assert row is not None and row.eval_seq is not None
        view = app.query_one(TranscriptView)
        assert view.selected_seq == row.eval_seq
        bench = app.query_one(BenchmarkPane)
        assert row.sha[:10] in str(bench.border_title or "") + _bench_title(bench)


def _bench_title(bench: BenchmarkPane) -> str:
    return " ".join(str(w.render()) for w in bench.query("Static"))


async def test_an_eval_picked_in_the_transcript_selects_its_candidate_and_table(
    demo: Path,
) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        view = app.query_one(TranscriptView)
        view.focus()
        await pilot.press("g")
        await pilot.press("right_square_bracket")  # the first eval
        await settle(pilot)
        first_eval = view.selected_seq
        assert first_eval is not None
        history = app.query_one(HistoryPane)
        # The first eval is of the start commit's unchanged code: attached to it, no candidate.
        assert app.timeline is not None and history.selected is not None
        assert history.selected.sha == app.timeline.commit_for_eval_seq(first_eval)
        assert history.selected.candidate is None
        # The next one is candidate 1's own.
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert history.selected.eval_seq == view.selected_seq and history.selected.n == 1
        # A failing eval (not committed) still shows its table, failures first-class.
        for _ in range(10):
            await pilot.press("right_square_bracket")
            await settle(pilot)
            line = view.index.line(view.selected_row)  # type: ignore[union-attr, arg-type]
            if "FAIL" in line.summary:
                break
        else:
            pytest.fail("the scripted session has a failing eval")
        rows = app.query_one(BenchmarkPane)
        assert rows.table.row_count == 12
        assert "fail" in _bench_title(rows).lower()


async def test_help_lists_every_binding_with_its_id(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        screen = app.screen
        ids = {row[3] for row in screen.rows}  # type: ignore[attr-defined]
        for wanted in (
            "app.quit",
            "app.query",
            "app.ask",
            "transcript.search",
            "history.bisect",
            "benchmark.sort",
        ):
            assert wanted in ids
        # Keys as typed, not Textual's names for them.
        keys = {row[3]: row[1] for row in screen.rows}  # type: ignore[attr-defined]
        assert keys["app.help"] == "?" and keys["transcript.next_eval"] == "]"
        assert keys["app.sql"] == ":" and keys["transcript.search"] == "/"
        assert not any("_" in key for key in keys.values())
        await pilot.press("escape")
        assert not hasattr(app.screen, "rows")


def with_keymap(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> KernelseekApp:
    """The app on the scripted demo with ``text`` as the user's keymap file."""
    keymap = tmp_path / "keymap.toml"
    keymap.write_text("[keymap]\n" + text)
    monkeypatch.setenv("KERNELSEEK_KEYMAP", str(keymap))
    return KernelseekApp(demo / SCRIPTED)


async def test_a_keymap_file_rebinds_by_id(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = with_keymap(demo, tmp_path, monkeypatch, '"app.pane_history" = "ctrl+y"\n')
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        assert _visible(app, "transcript")  # f3 no longer switches
        await pilot.press("ctrl+y")
        assert _visible(app, "history")


async def test_a_keymap_naming_no_binding_says_so(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '"app.pane_histroy" = "ctrl+y"\n"app.pane_benchmark" = "ctrl+b"\n'
    app = with_keymap(demo, tmp_path, monkeypatch, text)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any("'app.pane_histroy'" in m and "ignored" in m for m in messages)
        await pilot.press("ctrl+b")  # the good entry still applies
        assert _visible(app, "benchmark")


async def test_the_query_screen_opens_over_every_session(demo: Path) -> None:
    from kernelseek_tui.tui.screens.query import QueryScreen

    app = KernelseekApp(demo / SCRIPTED, traces_root=demo)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("f5")  # opens and runs question-jumps at once
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, QueryScreen)
        assert screen.results.row_count > 0 and screen.last_error is None
        status = str(screen.query_one("#query-status").render())
        assert status.startswith("question-jumps: ")
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ != "QueryScreen"
        await pilot.press("colon")  # opens to type: nothing runs
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, QueryScreen) and screen.results.row_count == 0


def footer_text(app: KernelseekApp) -> str:
    return str(app.screen._compositor.render_strips()[-1].text)  # the last line: the footer


async def test_a_finished_session_offers_no_steering_keys(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(200, 45)) as pilot:
        await settle(pilot)
        footer = footer_text(app)
        assert "Query" in footer and "Ask" not in footer and "Pause" not in footer
        for key in ("a", "p", "ctrl+x"):
            await pilot.press(key)
            await pilot.pause()
        assert not app.query_one(QuestionBar).is_open
        assert not (demo / SCRIPTED / "inbox.jsonl").exists()
        # The palette offers them no more than the footer does; a direct call says why.
        titles = {c.help.split()[0] for c in app.get_system_commands(app.screen)}
        assert "app.ask" not in titles and "app.stop" not in titles
        app._can_steer("ask")
        await pilot.pause()
        assert any("not running" in n.message for n in app._notifications)


async def test_the_measured_session_opens_with_its_gpu_figures(demo: Path) -> None:
    name = next(n for n in recorded_sessions() if n.startswith("gpu-tuner-"))
    app = KernelseekApp(demo / name)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert "measured" in header_text(app)
        bench = app.query_one(BenchmarkPane)
        assert bench.table.row_count == 12
        # It opens on the best evaluation (1.109x), not on the last one (0.934x).
        assert bench.summary is not None and round(bench.summary.geomean_speedup or 0, 3) == 1.109
        view = app.query_one(TranscriptView)
        assert bench.title == f"eval at seq {view.selected_seq}"
        history = app.query_one(HistoryPane)
        assert history.selected is not None and history.selected.eval_seq == view.selected_seq
        meta = json.loads((demo / name / "session.json").read_text())
        assert meta["agent"] == "tuner"


async def test_function_keys_leave_the_query_screen_for_a_pane(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED, traces_root=demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        assert type(app.screen).__name__ == "QueryScreen"
        await pilot.press("f3")
        await pilot.pause()
        assert type(app.screen).__name__ != "QueryScreen"
        assert _visible(app, "history")


async def test_the_palette_offers_every_action_and_runs_one(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        titles = {c.help.split()[0] for c in app.get_system_commands(app.screen)}
        for wanted in ("app.query", "app.sql", "transcript.filter", "history.bisect"):
            assert wanted in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"transcript: Filter")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one(TranscriptView).filter_name == "questions"


async def test_shift_tab_goes_back_a_pane_and_q_quits(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("shift+tab")
        assert _visible(app, "benchmark")
        await pilot.press("shift+tab")
        assert _visible(app, "history")
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0 and not app.is_running


async def test_a_large_terminal_keeps_the_panes_side_by_side(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        regions = [
            app.query_one(f"#pane-{n}").region for n in ("transcript", "history", "benchmark")
        ]
        assert all(r.height > 40 for r in regions)
        assert regions[0].right <= regions[1].x and regions[1].right <= regions[2].x
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert any("theme" in t.lower() for t in titles)  # themes from the palette


async def test_z_zooms_the_focused_pane_and_back(demo: Path) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("f4")
        await pilot.press("z")
        await pilot.pause()
        shown = [n for n in ("transcript", "history", "benchmark") if _visible(app, n)]
        assert shown == ["benchmark"]
        assert app.query_one("#pane-benchmark").region.width > 150
        await pilot.press("z")
        await pilot.pause()
        assert all(_visible(app, n) for n in ("transcript", "history", "benchmark"))


async def test_the_detail_of_an_eval_has_its_scenario_table(demo: Path) -> None:
    from kernelseek_tui.tui.screens.event_detail import EventDetailScreen

    app = KernelseekApp(demo / SCRIPTED)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        view = app.query_one(TranscriptView)
        assert view.index is not None and view.index.kind_at(view.selected_row or 0) == "eval"
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EventDetailScreen)
        assert screen.title_text.startswith(f"eval · seq {view.selected_seq} · ")
        assert screen.scenarios is not None
        lines = screen.scenarios.splitlines()
        assert lines[0].split() == ["scenario", "pass", "speedup", "vs", "FA3", "TFLOP/s", "ms",
                                    "max", "err"]  # fmt: skip
        assert len(lines) == 1 + 12 and all("✓" in line for line in lines[1:])
