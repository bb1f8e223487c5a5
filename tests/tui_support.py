"""Fixtures for the app's tests: the recorded demo sessions unpacked into a temp dir (real
git repositories with real commits and notes), a live copy a test can write to, and ``settle``,
which waits until the app's workers are done."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kernelseek_tui.browse.unpack import unpack_demo
from kernelseek_tui.session.meta import process_start_ticks

SCRIPTED = "scripted-claude"


def unpacked_demo(dest: Path) -> Path:
    """The traces root of the demo sessions unpacked under ``dest``."""
    return unpack_demo(dest)


def make_live_copy(root: Path, dest_root: Path) -> Path:
    """A copy of the scripted session that looks running (its engine is this test process),
    for live-mode tests; returns its session directory."""
    dest_root.mkdir(parents=True, exist_ok=True)
    session_dir = dest_root / SCRIPTED
    shutil.copytree(root / SCRIPTED, session_dir)
    meta_path = session_dir / "session.json"
    meta = json.loads(meta_path.read_text())
    meta.update(
        status="running",
        end_reason=None,
        pid=os.getpid(),
        pid_start=process_start_ticks(os.getpid()),
        host=None,
    )
    meta_path.write_text(json.dumps(meta))
    return session_dir


async def settle(pilot: Pilot[Any], *, rounds: int = 3, grace_s: float = 0.2) -> None:
    """Wait until the app is idle: every worker done and the messages it posted handled.

    A worker's result is a message whose handler may start another worker (a selection loads
    a benchmark), hence the rounds; the grace pause lets short timers (the 30 ms coalescing of
    selections) fire before the last wait. ``rounds=1, grace_s=0`` waits for one worker."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        await app.workers.wait_for_complete()
    if grace_s:
        await pilot.pause(grace_s)
        await app.workers.wait_for_complete()
    await pilot.pause()
