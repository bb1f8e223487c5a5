"""Starting an engine in its own process, detached from the terminal.

``kernelseek run --detach`` writes what to run into ``launch.json`` in the session directory
and starts ``python -m kernelseek_tui run --launch FILE`` in a new session (``setsid``), with
its stdout and stderr appended to ``engine.log`` and no stdin, so closing the terminal or
dropping an SSH connection never stops it. The parent waits until the child has written its
pid into ``session.json`` (or has died, in which case it shows the log's tail).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.meta import read_meta

STARTUP_WAIT_S: Final = 30.0


def write_launch(session_dir: Path, launch: dict[str, Any]) -> Path:
    session_dir.mkdir(parents=True, exist_ok=True)
    path = SessionPaths(session_dir).launch
    path.write_text(json.dumps(launch, indent=2, sort_keys=True, default=str) + "\n")
    return path


def read_launch(path: Path) -> dict[str, Any]:
    """The launch file's contents; the file is removed once read (it has done its work)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise KernelseekError(f"cannot read launch file {path}: {error}") from None
    Path(path).unlink(missing_ok=True)
    if not isinstance(data, dict) or data.get("mode") not in ("start", "resume"):
        raise KernelseekError(f"{path} is not a kernelseek launch file")
    return data


def start_kernelseek(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m kernelseek_tui ARGS`` in a process session of its own (it outlives the
    terminal and a dropped SSH connection), this checkout first on its path, its output
    appended to ``log``."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "kernelseek_tui", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env,
        )


def spawn_detached(session_dir: Path, launch: dict[str, Any]) -> int:
    """Start the engine for ``launch`` in the background; return its pid once it runs."""
    path = write_launch(session_dir, launch)
    log = SessionPaths(session_dir).engine_log
    previous_pid = None
    if SessionPaths(session_dir).meta.exists():
        previous_pid = read_meta(session_dir).pid
    child = start_kernelseek(["run", "--launch", str(path)], log)
    deadline = time.monotonic() + STARTUP_WAIT_S
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise KernelseekError(
                f"the engine exited at once (status {code}); its log ends:\n{_tail(log)}"
            )
        try:
            meta = read_meta(session_dir)
        except KernelseekError:
            meta = None
        if meta is not None and meta.pid == child.pid and meta.pid != previous_pid:
            return child.pid
        time.sleep(0.1)
    raise KernelseekError(f"the engine (pid {child.pid}) did not start in time; see {log}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
