"""Whether this machine can judge candidates at all, asked before any work starts.

Without the GPU stack every evaluation ends ``error`` with the reason buried in the trace: a
session would run its whole budget (and a claude session pay for model turns) for nothing, and a
bisect would mark every candidate ``skip``. Commands that exist to evaluate ask here first and
refuse with one line that says what to install. Nothing here imports cupy or touches a GPU: a
module found and a device listed is enough to know the worker can start.
"""

from __future__ import annotations

import importlib.util
from typing import Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.build import find_nvcc
from kernelseek_tui.evaluate.pool import visible_devices

INSTALL_HINT: Final = (
    "on a machine with an NVIDIA GPU and the CUDA toolkit (nvcc), "
    "`pip install -e '.[gpu]'` (CUDA 13; '.[gpu-cuda12]' for CUDA 12)"
)


def gpu_stack_problems() -> list[str]:
    """What this machine lacks to run an evaluation's worker, in words (empty: nothing)."""
    problems = []
    if importlib.util.find_spec("cupy") is None:
        problems.append("cupy is not installed")
    if find_nvcc() is None:
        problems.append("nvcc is not on PATH")
    if not visible_devices():
        problems.append("no NVIDIA GPU is visible")
    return problems


def install_advice(problems: list[str]) -> str:
    """One line: what is missing and what to install."""
    return f"{'; '.join(problems)}: install the GPU stack, {INSTALL_HINT}"


def require_gpu_stack(what: str) -> None:
    """Raise :class:`KernelseekError` naming what to install unless evaluations can run here.

    ``what`` is the work refused, e.g. ``"a tuner session"``, for the start of the line.
    """
    problems = gpu_stack_problems()
    if problems:
        raise KernelseekError(f"{what} cannot evaluate candidates here: {install_advice(problems)}")
