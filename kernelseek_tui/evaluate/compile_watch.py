"""How long the judge spends compiling its own CuPy kernels, scenario by scenario.

CuPy compiles each elementwise or reduction kernel the first time a process meets its form (the
dtypes, the number of dimensions left after merging contiguous ones, and for reductions a block
size chosen from the length reduced) and keeps the binary in its on-disk cache; a process
started later on the same machine reads it from there. On a machine whose cache is empty, a
held-out scenario of a shape the fixed sets never had can spend seconds in the judge's own
checks (3.7-8.9 s, five times on fresh H100s, 2026-12-07; each shape's repeat in the same
evaluation took milliseconds). Reductions through CUB are the suspects: CuPy builds them with
NVRTC and CUB's headers, one build per block size.

``install`` wraps the two functions CuPy calls only when a kernel is not in its cache
(``compile_using_nvrtc``, ``compile_using_nvcc``), so a scenario's result can say how many
kernels its judging compiled, in how many seconds, and which. Nothing else changes: the wrapper
calls the original with the same arguments and returns what it returns.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# The names of the first kernels compiled in a scenario, kept in its result (the rest counted).
NAMES_KEPT = 8

_KERNEL_NAME = re.compile(r"__global__\s+void\s+(\w+)")


@dataclass(slots=True)
class Compiled:
    """What was compiled between two readings of the watch."""

    count: int = 0
    seconds: float = 0.0
    names: list[str] = field(default_factory=list)  # the first NAMES_KEPT, "name (cub)" for CUB


class CompileWatch:
    """Counts every kernel CuPy compiles in this process from ``install`` on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._seconds = 0.0
        self._names: list[str] = []

    def note(self, source: Any, seconds: float) -> None:
        text = source.decode(errors="replace") if isinstance(source, bytes) else str(source)
        match = _KERNEL_NAME.search(text)
        name = match.group(1) if match else "?"
        if "cub/" in text:  # CUB's headers: the slow builds
            name += " (cub)"
        with self._lock:
            self._count += 1
            self._seconds += seconds
            self._names.append(name)

    def mark(self) -> tuple[int, float]:
        """A reading to pass to ``since``."""
        with self._lock:
            return self._count, self._seconds

    def since(self, mark: tuple[int, float]) -> Compiled:
        count, seconds = mark
        with self._lock:
            names = self._names[count : count + NAMES_KEPT]
            return Compiled(self._count - count, round(self._seconds - seconds, 3), names)


_installed: CompileWatch | None = None


def install(compiler: Any | None) -> CompileWatch:
    """Wrap ``compiler``'s (``cupy.cuda.compiler``) compile functions, once per process; the
    watch they report to. CuPy looks these up as module globals at each cache miss, so the
    wrappers see every compile from now on. None (no CuPy compiler): a watch that counts
    nothing, not kept."""
    global _installed
    if _installed is not None:
        return _installed
    if compiler is None:
        return CompileWatch()
    watch = CompileWatch()
    for name in ("compile_using_nvrtc", "compile_using_nvcc"):
        original = getattr(compiler, name, None)
        if original is not None:
            setattr(compiler, name, _timed(original, watch))
    _installed = watch
    return watch


def _timed(original: Any, watch: CompileWatch) -> Any:
    def compile_and_note(source: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(source, *args, **kwargs)
        finally:
            watch.note(source, time.perf_counter() - began)

    compile_and_note.__wrapped__ = original  # type: ignore[attr-defined]
    return compile_and_note
