"""Who else is on the judge's GPU: the processes holding a context on it that are not ours.

A figure is only the kernel's own when nothing else runs on the GPU: another user's job, a
forgotten notebook, another session's worker would slow the candidate, its peers or the
starting kernel by an unknown share. The judge cannot stop them, but it can look and say so:
the evaluation asks ``nvidia-smi`` when its worker reports the device and again at the end, and
every process on that GPU that is not this process or one of its descendants (the worker, its
kernels' processes, spare workers) is named in the result. Where ``nvidia-smi`` is missing,
the device's UUID is unknown, or nvidia-smi cannot see our own worker on the GPU (in a container
it may list the host's process ids, or none), the result says the GPU went unchecked rather
than idle: a list that cannot show us cannot show the others either.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.evaluate.proc_stat import stat_fields

_QUERY = "--query-compute-apps=gpu_uuid,pid,process_name,used_memory"
_HEX_UUID = re.compile(r"^[0-9a-fA-F]{32}$")


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    name: str
    memory_mib: int | None

    def describe(self) -> str:
        memory = f", {self.memory_mib} MiB" if self.memory_mib is not None else ""
        return f"pid {self.pid} ({self.name}{memory})"


def gpu_line(fields: str = "name,driver_version") -> str:
    """``nvidia-smi``'s CSV line of ``fields`` for the visible GPUs, for a benchmark's header
    ("" where nvidia-smi is missing or fails): the machine a figure was measured on."""
    try:
        answer = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return ""
    return answer.stdout.strip()


def nvml_uuid(device_uuid: str | None) -> str | None:
    """The device's UUID as nvidia-smi writes it (GPU-8-4-4-4-12), from the worker's report
    (the 16 bytes CUDA gives, in hex); None when it is not in that form."""
    if device_uuid is None:
        return None
    text = device_uuid.strip()
    if text.startswith("GPU-"):
        return text
    if not _HEX_UUID.match(text):
        return None
    h = text.lower()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def descendants(root: int, proc: Path = Path("/proc")) -> set[int]:
    """``root`` and every process below it, from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name), proc)
        if fields is None:
            continue  # gone meanwhile
        if len(fields) >= 2 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = {root}, [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def others_on(
    device_uuid: str | None, ours: set[int], *, must_see_ours: bool = True
) -> list[GpuProcess] | None:
    """The processes on the device that are not in ``ours``; None when it cannot be checked.

    ``must_see_ours``: one of ours holds a context on the device now (the worker, at the start
    of its evaluation), so a list without any of ours is one this check cannot read."""
    wanted = nvml_uuid(device_uuid)
    smi = shutil.which("nvidia-smi")
    if wanted is None or smi is None:
        return None
    try:
        listed = subprocess.run(
            [smi, _QUERY, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    found, saw_ours = [], False
    for line in listed.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or parts[0].lower() != wanted.lower() or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid in ours:
            saw_ours = True
            continue
        memory = int(parts[3]) if parts[3].isdigit() else None
        found.append(GpuProcess(pid=pid, name=parts[2], memory_mib=memory))
    if must_see_ours and not saw_ours:
        return None
    return found


def check_sharing(
    device_uuid: str | None, *, must_see_ours: bool = True, also: set[int] | None = None
) -> list[GpuProcess] | None:
    """``others_on`` the device, ours being this process, its descendants and ``also`` (the
    judge's own MPS server, which holds the context of its clients: evaluate/private_mps.py)."""
    ours = descendants(os.getpid()) | (also or set())
    return others_on(device_uuid, ours, must_see_ours=must_see_ours)
