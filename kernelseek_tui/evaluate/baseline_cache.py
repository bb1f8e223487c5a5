"""Times of the task's starting kernel, kept per GPU so that each evaluation need not re-time it.

The starting kernel never changes within a session, and it is often the slowest thing timed.
Entries are keyed by the starting kernel's build key, the GPU's UUID and the scenario, and say
when they were measured; an evaluation reports whether its speedups used cached times.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


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
    def _key(name: str, fields: dict[str, Any]) -> str:
        return name + "|" + ",".join(f"{k}={v}" for k, v in sorted(fields.items()))

    def get(self, name: str, fields: dict[str, Any]) -> float | None:
        entry = self._entries.get(self._key(name, fields))
        return float(entry["ms"]) if entry else None

    def put(self, name: str, fields: dict[str, Any], ms: float) -> None:
        self._entries[self._key(name, fields)] = {"ms": ms, "measured": time.time()}
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
