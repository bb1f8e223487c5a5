"""The compare screen (`c` in the app): the list of experiments and sessions, the curves in
the terminal and the per-arm table, all of them `kernelseek compare`'s numbers, on a recorded
experiment (the demo sessions as two arms) driven by Pilot."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, SelectionList, Static

from kernelseek_tui.experiment.comparison import load_comparison
from kernelseek_tui.tui.app import KernelseekApp
from kernelseek_tui.tui.screens.compare import CompareScreen
from kernelseek_tui.tui.widgets.compare_plot import ComparePlot, _step_corners
from tests.compare_support import recorded_experiment
from tests.tui_support import settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def root() -> Path:
    # A fixed place: the screen's title names its traces root, and a snapshot must not change
    # with pytest's numbered temp dirs.
    place = Path(tempfile.gettempdir()) / "kernelseek-compare-experiment"
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir()
    return recorded_experiment(place)


async def open_compare(pilot: Any) -> CompareScreen:
    await settle(pilot)
    await pilot.press("c")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, CompareScreen)
    return screen


def table_rows(screen: CompareScreen) -> list[list[str]]:
    table = screen.query_one("#compare-table", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_screen_shows_compares_numbers_for_the_experiment_picked(root: Path) -> None:
    app = KernelseekApp(root / "ab" / "ab-questions-1")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_compare(pilot)
        picker = screen.query_one("#compare-pick", SelectionList)
        assert picker.selected == [str(root.resolve() / "ab")]  # its experiment, ticked
        expected = load_comparison(root, ["ab"])
        shown = screen.comparison
        assert shown is not None and shown.to_json() == expected.to_json()
        assert list(shown.arms) == ["questions", "off"]
        assert screen.query_one(ComparePlot).comparison is shown
        rows = table_rows(screen)
        assert [r[:3] for r in rows] == [
            ["questions", "ab-questions-1", "1.597x"],
            ["questions", "ab-questions-2", "1.597x"],
            ["questions", "median", "1.597x"],
            ["off", "ab-off-1", "1.109x"],
            ["off", "ab-off-2", "1.109x"],
            ["off", "median", "1.109x"],
        ]
        verdict = str(screen.query_one("#compare-verdict", Static).render())
        assert "needs at least 4 sessions per arm" in verdict
        await pilot.press("escape")
        assert not isinstance(app.screen, CompareScreen)


async def test_picking_a_lone_session_adds_it_as_its_own_arm_and_none_clears(root: Path) -> None:
    app = KernelseekApp(root / "ab" / "ab-questions-1")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_compare(pilot)
        picker = screen.query_one("#compare-pick", SelectionList)
        labels = [str(picker.get_option_at_index(i).prompt) for i in range(picker.option_count)]
        assert labels[0].startswith("ab  4 sessions, finished")
        assert labels[-1] == " 1.11x  solo  repertoire"
        picker.focus()
        await pilot.press("G", "space")  # the last line: solo
        await settle(pilot)
        assert screen.comparison is not None
        assert list(screen.comparison.arms) == ["questions", "off", "repertoire"]
        assert [r[1] for r in table_rows(screen)][-2:] == ["solo", "median"]
        await pilot.press("space")  # solo off again
        picker.deselect_all()
        await settle(pilot)
        assert screen.comparison is None and table_rows(screen) == []
        assert "pick sessions" in str(screen.query_one("#compare-verdict", Static).render())


def test_a_step_line_holds_each_best_until_the_next_call() -> None:
    assert _step_corners([0, 3, 5], [1.0, 1.2, 1.5]) == (
        [0.0, 3.0, 3.0, 5.0, 5.0], [1.0, 1.0, 1.2, 1.2, 1.5]
    )  # fmt: skip


def test_the_compare_screen_snapshot(root: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await open_compare(pilot)
        pilot.app.clear_notifications()  # the copies have no git history: the app says so
        await pilot.pause()

    app = KernelseekApp(root / "ab" / "ab-questions-1")
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


async def test_compare_tui_opens_on_the_sessions_named_and_escape_quits(root: Path) -> None:
    from kernelseek_tui.experiment.catalog import picked_refs
    from kernelseek_tui.tui.compare_app import CompareApp

    picked = picked_refs(root, ["ab-off-1", "solo"])  # a bare id inside the experiment
    assert picked == [str((root / "ab" / "ab-off-1").resolve()), str((root / "solo").resolve())]
    app = CompareApp(root.resolve(), preselect=picked)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        assert {arm: [m.session_id for m in ms] for arm, ms in screen.comparison.arms.items()} == {
            "off": ["ab-off-1"], "repertoire": ["solo"],
        }  # fmt: skip
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


def test_compare_without_sessions_or_tui_is_a_one_line_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "compare", "--traces", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "name the sessions or experiments" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
