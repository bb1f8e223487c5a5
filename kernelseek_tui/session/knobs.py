"""``knobs.json``: the knob values of a candidate, kept next to its kernel so a commit is whole.

A candidate is a kernel source *and* the values of the task's knobs (``-D`` defines) it is built
with. When an evaluation sets knobs, the engine writes them to ``knobs.json`` in the workspace
(the task directory of the session worktree) and commits that file with the kernel; evaluating
a workspace or an exported commit reads them back, so bisect and replay rebuild exactly what was
judged. Without the file a candidate uses the task's defaults.

Format: ``{"knobs": {"BLOCK_M": 128, "BLOCK_N": 64}}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.task import Task

KNOBS_FILE: Final = "knobs.json"


def check_knobs(task: Task, knobs: Any) -> dict[str, int]:
    """``knobs`` as a clean ``{name: value}``; raises KernelseekError naming what is wrong."""
    if not isinstance(knobs, dict):
        raise KernelseekError("knobs must be an object of knob name -> integer value")
    clean: dict[str, int] = {}
    for name, value in knobs.items():
        knob = task.knob(str(name))
        if isinstance(value, bool) or not isinstance(value, int):
            raise KernelseekError(f"knob {name!r} needs an integer value, got {value!r}")
        if value not in knob.values:
            allowed = ", ".join(str(v) for v in knob.values)
            raise KernelseekError(f"knob {name!r} takes one of {allowed}, not {value}")
        clean[knob.name] = value
    return clean


def read_knobs(task_dir: Path, task: Task) -> dict[str, int] | None:
    """The knobs recorded in ``task_dir/knobs.json``, or None when there is no such file."""
    path = Path(task_dir) / KNOBS_FILE
    if not path.is_file() and path.exists():
        raise KernelseekError(f"{path} is not a regular file")  # a FIFO would hang the read
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise KernelseekError(f"cannot read {path}: {error}") from None
    return parse_knobs(text, task, where=str(path))


def parse_knobs(text: bytes, task: Task, where: str = KNOBS_FILE) -> dict[str, int]:
    """The knobs a ``knobs.json``'s bytes hold, checked against ``task``."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise KernelseekError(f"cannot read {where}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("knobs"), dict):
        raise KernelseekError(f'{where} must hold {{"knobs": {{name: value}}}}')
    return check_knobs(task, data["knobs"])


def write_knobs(task_dir: Path, knobs: dict[str, int]) -> Path:
    """Write ``knobs.json`` in ``task_dir`` (sorted, so equal knobs give equal bytes)."""
    path = Path(task_dir) / KNOBS_FILE
    path.write_text(json.dumps({"knobs": dict(sorted(knobs.items()))}, indent=2) + "\n")
    return path
