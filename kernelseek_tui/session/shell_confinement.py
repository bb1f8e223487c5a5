"""The agent's ``run_shell`` confined with Landlock: writes only to its workspace and a
temporary directory of its own (session/confined_shell.cpp says what else it keeps and why).

Made once per session, when the agent first runs a command: the launcher is built with the
system's C++ compiler (cached by its source, like the kernels' host) and tried once. Where it
cannot confine (no compiler, a kernel without Landlock), the shell runs as before and the
session says why, once; a session may also ask for no confinement (``confine_shell = false``).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kernelseek_tui.evaluate.sandbox_host import SandboxError, build_cached

SOURCE = Path(__file__).with_name("confined_shell.cpp")
HEADER = Path(__file__).resolve().parents[1] / "evaluate" / "sandbox_confinement.h"
RECIPE = ("-O2", "-std=c++17", "-I", str(HEADER.parent))
# What the launcher exits with, having run nothing, where it could not confine.
NOT_CONFINED = 125
_SAID = "kernelseek-confine:"


def launcher(compiler: str | None = None) -> Path:
    """The launcher built (once per source and compiler) with ``compiler``: ``$CXX``, else g++."""
    chosen = compiler or os.environ.get("CXX") or "g++"
    return build_cached(
        chosen, SOURCE, RECIPE, "confined_shell", "the agent's confined shell", (HEADER,)
    )


@dataclass(slots=True)
class ShellConfinement:
    """How the agent's commands run: through the launcher, writes granted under ``workspace``
    and ``scratch`` (its TMPDIR), or unconfined where ``prefix`` is empty (``said`` says why)."""

    workspace: Path
    scratch: Path
    prefix: list[str] = field(default_factory=list)
    said: str = ""

    @property
    def confined(self) -> bool:
        return bool(self.prefix)

    @classmethod
    def start(cls, workspace: Path, scratch: Path, compiler: str | None = None) -> ShellConfinement:
        """Build the launcher and try it on ``true``; unconfined, with the reason, where either
        fails."""
        scratch.mkdir(parents=True, exist_ok=True)
        made = cls(workspace.resolve(), scratch.resolve())
        try:
            executable = launcher(compiler)
        except SandboxError as error:
            made.said = f"not confined: {error.reason}"
            return made
        prefix = [str(executable), str(made.workspace), str(made.scratch), "--"]
        tried = subprocess.run(
            [*prefix, "true"], capture_output=True, text=True, timeout=30, check=False
        )
        if tried.returncode != 0:
            why = tried.stderr.strip().removeprefix(_SAID).strip() or f"exit {tried.returncode}"
            made.said = f"not confined: {why}"
            return made
        made.prefix = prefix
        made.said = (
            f"Landlock: writes only under the workspace, {made.scratch} (TMPDIR), the GPU's "
            "device files and /dev's harmless ones; TCP only on Nsight Compute's ports (Linux "
            "6.7 or later); no signal to the judge's processes (Linux 6.12 or later)"
        )
        return made

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with TMPDIR (and the CUDA JIT cache) pointed at the shell's own directory,
        where its writes are allowed (confined or not: the same place either way)."""
        scratch = str(self.scratch)
        return {**env, "TMPDIR": scratch, "CUDA_CACHE_PATH": str(self.scratch / "nv-cache")}
