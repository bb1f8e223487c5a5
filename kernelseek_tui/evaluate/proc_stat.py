"""A process's /proc/<pid>/stat, read past its command name.

The line is "pid (comm) state ppid ...", and the command name may hold spaces and parentheses of
its own: the last ")" ends it. Who reads it: the GPU-sharing check (parent links), a kernel's
process being stopped (its state), the judge's MPS server (its owner's start time).
"""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int, proc: Path = Path("/proc")) -> list[str] | None:
    """The fields after the command name (the state first, the parent's pid second, the start
    time the 20th); None when the process is gone or unreadable."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()
