"""The headers a candidate really includes, read from the preprocessor, not from its text.

A text check of ``#include`` lines misses includes computed by macros, ``#include_next``,
``#import`` and line splices. The preprocessor resolves all of them: run over the candidate
twice (as nvcc's device pass sees it, and as the host pass sees it, since ``__CUDA_ARCH__`` can
pick different headers) with ``-H``, every header at depth one (included from the candidate
itself) must be one the task allows. A header already pulled in by an allowed one is not opened
again, so it does not count; it was allowed through its parent.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kernelseek_tui.task import DependencyRule

# The device pass defines these; undefining them gives the host pass's view of the source.
_DEVICE_MACROS = (
    "__CUDA_ARCH__",
    "__CUDA_ARCH_FEAT_SM90_ALL",
    "__CUDA_ARCH_SPECIFIC__",
    "__CUDA_ARCH_FAMILY_SPECIFIC__",
)
_DEPTH_ONE = re.compile(r"^\. (.+)$", re.MULTILINE)


def direct_includes(nvcc: str, source: Path, flags: list[str], timeout_s: float) -> set[str]:
    """Paths of the headers the candidate includes itself, in the device and host passes."""
    undefine = ",".join(f"-U{macro}" for macro in _DEVICE_MACROS)
    passes: tuple[list[str], ...] = ([], ["-Xcompiler", undefine])
    found: set[str] = set()
    for extra in passes:
        cmd = [nvcc, *flags, *extra, "-E", "-Xcompiler", "-H", source.name, "-o", "/dev/null"]
        result = subprocess.run(
            cmd, cwd=source.parent, capture_output=True, text=True, timeout=timeout_s
        )
        found.update(path.strip() for path in _DEPTH_ONE.findall(result.stderr))
    return found


def include_check(
    nvcc: str, source: Path, flags: list[str], rule: DependencyRule, timeout_s: float
) -> list[str]:
    """Reasons the preprocessed candidate includes a header outside the rule; empty when clean.

    A source that does not preprocess is left to the compiler, which names the error.
    """
    reasons = []
    for path in sorted(direct_includes(nvcc, source, flags, timeout_s)):
        inside = Path(path).resolve().is_relative_to(source.parent.resolve())
        allowed = any(path.endswith("/" + name) for name in rule.allowed_includes)
        if inside or not allowed:
            reasons.append(f"includes {path!r} (after preprocessing), outside the dependency rule")
    return reasons
