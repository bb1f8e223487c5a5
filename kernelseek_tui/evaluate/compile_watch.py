"""The judge's own CuPy kernels: built without CUB, and counted as they are compiled.

CuPy compiles each elementwise or reduction kernel the first time a machine meets its form and
keeps the binary in its on-disk cache, one file per kernel. With its accelerators on (CuPy's
default, ``CUPY_ACCELERATORS=cub``), reductions are built with CUB's headers, one build per
block size, and the block size follows the length reduced: a held-out scenario of a new size
then waits seconds for the judge's own checks. Measured on an H100 with empty caches
(2026-12-07, 19:06; CuPy 14.2.0, `benchmarks/first_use_steps.py`): `array_equal` on the inputs
of a 41x27 scenario 4.96 s (3 kernels) and again 5.24 s on the next shape's tiny `k` (2
kernels), the check of `out` 15.8 s; without the accelerators 0.24 s, 0.003 s (nothing new)
and 2.8 s. An evaluation with both caches empty failed an honest kernel as hung (10 s without
progress in its first scenario's check); without them it passed in 12.0 s. The fp32
reference's time on the bench set's largest shapes did not change (125.6 against 125.9 ms at
16k causal d128, 38.0 and 7.8 ms on two others), so the judge turns them off
(``accelerators_off``), unless ``CUPY_ACCELERATORS`` is set, which is the user's choice.

``CompileWatch`` counts the files CuPy's cache gained between two readings: what a scenario's
judging compiled (a first-use cost of the machine, never the candidate's). Counting the files
holds whatever path CuPy takes to its compiler (a wrapper of CuPy's compile functions, tried
first, saw none of CuPy 14's compiles). Another process writing the same cache at the same
time (a spare worker starting) adds to the count.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ACCELERATORS_VARIABLE = "CUPY_ACCELERATORS"


def accelerators_off(cp: Any) -> bool:
    """Turn CuPy's accelerators (CUB, cuTENSOR) off in this process, unless the user set
    ``CUPY_ACCELERATORS``; whether they were turned off."""
    if ACCELERATORS_VARIABLE in os.environ:
        return False
    accelerator = getattr(getattr(cp, "_core", None), "_accelerator", None)
    if accelerator is None:
        return False
    for kind in ("elementwise", "reduction", "routine"):
        setter = getattr(accelerator, f"set_{kind}_accelerators", None)
        if setter is not None:
            setter([])
    return True


def cache_folder(cp: Any) -> Path | None:
    """Where CuPy keeps its compiled kernels (None where it cannot say)."""
    compiler = getattr(getattr(cp, "cuda", None), "compiler", None)
    get = getattr(compiler, "get_cache_dir", None)
    try:
        return Path(get()) if get is not None else None
    except Exception:  # a stand-in or a CuPy that words it otherwise: no count
        return None


class CompileWatch:
    """The files in one folder (CuPy's kernel cache), counted at each reading."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def mark(self) -> int:
        """A reading to pass to ``since``: the folder's file count now (0 without one)."""
        if self.folder is None:
            return 0
        try:
            with os.scandir(self.folder) as entries:
                return sum(1 for entry in entries if entry.is_file())
        except OSError:  # not made yet: CuPy makes it at its first compile
            return 0

    def since(self, mark: int) -> int:
        """How many files the folder gained since ``mark`` (never negative)."""
        return max(0, self.mark() - mark)
