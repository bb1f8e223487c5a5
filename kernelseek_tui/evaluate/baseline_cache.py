"""Times of the task's starting kernel, kept per GPU so that each evaluation need not re-time it.

The starting kernel never changes within a session, and it is often the slowest thing timed.
Entries are keyed by the starting kernel's build key, the GPU's UUID, the scenario and how long
it was timed (its set's durations: a card at its power limit runs a 20 ms run faster than a
100 ms one), and say when they were measured; an evaluation reports whether its speedups used
cached times.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelseek_tui.task import SET_TIMING_KEYS


class BaselineCache:
    def __init__(self, directory: Path, build_key: str, device: dict[str, Any]) -> None:
        self.path = directory / f"{build_key}-{device.get('uuid') or device.get('name')}.json"
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        try:
            self._entries = json.loads(self.path.read_text())["entries"]
        except (OSError, ValueError, KeyError):
            self._entries = {}

    @staticmethod
    def _key(name: str, fields: dict[str, Any], durations: str) -> str:
        return name + "|" + ",".join(f"{k}={v}" for k, v in sorted(fields.items())) + durations

    def get(self, name: str, fields: dict[str, Any], durations: str = "") -> float | None:
        """The time cached for scenario ``name`` timed with ``durations`` (``timing_tag``)."""
        entry = self._entries.get(self._key(name, fields, durations))
        return float(entry["ms"]) if entry else None

    def put(self, name: str, fields: dict[str, Any], ms: float, durations: str = "") -> None:
        self._entries[self._key(name, fields, durations)] = {"ms": ms, "measured": time.time()}
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump({"entries": self._entries}, out)
        os.replace(tmp, self.path)
        self._dirty = False


# How the starting kernel is timed beyond its durations, in every key: since 2026-12-07 evening
# with the candidate's own work between samples (the flips, the copy of the outputs:
# worker._time_baseline says why), so a time cached before, without it, is not reused.
METHOD = "between=as-the-candidate"


def timing_tag(timing: Any) -> str:
    """What in a Timing decides how long a scenario is timed, and how the starting kernel is
    timed (``METHOD``), as part of a cache key."""
    durations = ",".join(f"{key}={getattr(timing, key)}" for key in SET_TIMING_KEYS)
    return f"|{durations}|{METHOD}"
