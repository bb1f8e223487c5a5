"""SVG snapshots of the app's screens on the recorded scripted session (fixed sizes).

Update them after a deliberate change of the look with
    .venv/bin/python -m pytest tests/test_tui_snapshots.py --snapshot-update
and look at snapshot_report.html (or the SVGs under tests/__snapshots__) before committing.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.tui.app import KernelseekApp
from kernelseek_tui.tui.widgets.question_bar import QuestionBar
from tests.tui_support import SCRIPTED, settle, unpacked_demo


@pytest.fixture(scope="module")
def demo() -> Iterator[Path]:
    # A fixed place: the query screen names its traces root, and a snapshot must not change
    # with pytest's numbered temp dirs. Two test runs on one machine (two clones' CI) would
    # unpack into it at once, so each holds a lock on it for as long as its snapshots run.
    place = Path(tempfile.gettempdir()) / "kernelseek-snapshot-demo"
    with open(f"{place}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(place, ignore_errors=True)
        yield unpacked_demo(place)


def test_main_screen_80x24(demo: Path, snap_compare: Any) -> None:
    assert snap_compare(KernelseekApp(demo / SCRIPTED), terminal_size=(80, 24), run_before=settle)


def test_main_screen_160x45(demo: Path, snap_compare: Any) -> None:
    app = KernelseekApp(demo / SCRIPTED)
    assert snap_compare(app, terminal_size=(160, 45), run_before=settle)


def test_query_screen(demo: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("colon")  # opens to type (f5 would run question-jumps)
        await settle(pilot)
        # Typed, not run: a run shows its elapsed milliseconds, which no snapshot can hold
        # (tests/test_tui_query.py checks the results themselves).
        await pilot.press(*"select kind, count(*) from events group by kind")
        await pilot.pause()

    app = KernelseekApp(demo / SCRIPTED, traces_root=demo)
    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


def test_decision_moment_bar(demo: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.query_one(QuestionBar).open(
            "plateau",
            [
                {"id": "q-one", "text": "What did you measure last, and how?"},
                {"id": "q-two", "text": "Which level of the system have you not looked at?"},
                {"id": "q-three", "text": "What would the hardware's own counters say?"},
            ],
            detail="3 evaluations without a new best",
        )
        await pilot.pause()

    app = KernelseekApp(demo / SCRIPTED)
    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


def test_diff_view(demo: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("f3", "j", "enter")  # candidate 2 against its parent
        await settle(pilot)

    app = KernelseekApp(demo / SCRIPTED)
    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)
