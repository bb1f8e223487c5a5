"""The headers a candidate really includes, read from the preprocessor, not from its text.

A text check of ``#include`` lines misses includes computed by macros, ``#include_next``,
``#import`` and line splices. The preprocessor resolves all of them: run over the candidate
twice (as nvcc's device pass sees it, and as the host pass sees it, since ``__CUDA_ARCH__`` can
pick different headers) with ``-H``, every header at depth one (included from the candidate
itself) must be one the task allows. A header already pulled in by an allowed one is not opened
again, so it does not count; it was allowed through its parent.

An allowed name is a path under one of the compiler's include directories (``-v`` lists them),
as ``#include <name>`` would look for it: ``math.h`` allows ``/usr/include/math.h``, never
``.../cccl/thrust/detail/mpl/math.h``, whose last name is the same (a header named by pasted
tokens reaches it without the word ``thrust`` in the text). Files are compared after symbolic
links and ``..`` are resolved, so no spelling of a path reaches another file.

The device pass's preprocessed text is kept in the view for device_asm_rules.py, which counts
the candidate's own inline PTX in it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
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
# The host compiler's -v output: its include directories, one a line, between these.
_SEARCH_LIST = re.compile(
    r'^#include (?:"\.\.\."|<\.\.\.>) search starts here:\n(.*?)(?=^#include|^End of search list)',
    re.MULTILINE | re.DOTALL,
)


@dataclass(slots=True)
class PreprocessorView:
    """What the preprocessor opened for the candidate and where it looked for headers."""

    direct_includes: set[str] = field(default_factory=set)
    include_dirs: set[str] = field(default_factory=set)
    # The device pass's preprocessed source (device_asm_rules.py reads its inline assembly).
    device_text: str = ""


def preprocessor_view(
    nvcc: str, source: Path, flags: list[str], timeout_s: float
) -> PreprocessorView:
    """The headers the candidate includes itself and the compiler's include directories, in
    the device and host passes."""
    undefine = ",".join(f"-U{macro}" for macro in _DEVICE_MACROS)
    passes: tuple[list[str], ...] = ([], ["-Xcompiler", undefine])
    view = PreprocessorView()
    for extra in passes:
        # The device pass's text comes back on stdout (kept in the view); the host pass's is
        # not needed.
        output = ["-o", "/dev/null"] if extra else []
        cmd = [nvcc, *flags, *extra, "-E", "-Xcompiler", "-H,-v", source.name, *output]
        result = subprocess.run(
            cmd,
            cwd=source.parent,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
        if not extra:
            view.device_text = result.stdout
        view.direct_includes.update(path.strip() for path in _DEPTH_ONE.findall(result.stderr))
        for listing in _SEARCH_LIST.findall(result.stderr):
            view.include_dirs.update(line.strip() for line in listing.splitlines() if line.strip())
    return view


def allowed_header_files(include_dirs: set[str], allowed_includes: tuple[str, ...]) -> set[Path]:
    """The files ``#include <name>`` can open for each allowed name, from any include
    directory, symbolic links resolved."""
    found = set()
    for directory in include_dirs:
        for name in allowed_includes:
            candidate = Path(directory) / name
            if candidate.is_file():
                found.add(candidate.resolve())
    return found


def include_check(view: PreprocessorView, source: Path, rule: DependencyRule) -> list[str]:
    """Reasons the preprocessed candidate (``view``, of ``source``) includes a header outside
    the rule; empty when clean.

    A source that does not preprocess is left to the compiler, which names the error.
    """
    allowed = allowed_header_files(view.include_dirs, rule.allowed_includes)
    own_dir = source.parent.resolve()
    reasons = []
    for path in sorted(view.direct_includes):
        # -H prints a header found beside the source relative to the directory it ran in.
        opened = (source.parent / path).resolve()
        if opened.is_relative_to(own_dir) or opened not in allowed:
            reasons.append(f"includes {path!r} (after preprocessing), outside the dependency rule")
    return reasons
