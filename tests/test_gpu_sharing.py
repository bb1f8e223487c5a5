"""Who else is on the judge's GPU (evaluate/gpu_sharing.py), with a stand-in nvidia-smi: other
processes on the device are named, ours (this process and its descendants) and other GPUs'
are not, and a list that cannot show our own worker counts as unchecked, not idle."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.gpu_sharing import (
    GpuProcess,
    check_sharing,
    descendants,
    gpu_line,
    nvml_uuid,
    others_on,
)

HEX = "0123456789abcdef0123456789abcdef"
UUID = "GPU-01234567-89ab-cdef-0123-456789abcdef"
OTHER_GPU = "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff"


def stand_in_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listing: str) -> None:
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ncat <<'LIST'\n{listing}\nLIST\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")


def test_a_benchmarks_gpu_line_is_what_nvidia_smi_says_or_empty_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in_smi(tmp_path, monkeypatch, "NVIDIA H100 80GB HBM3, 580.159.04")
    assert gpu_line() == "NVIDIA H100 80GB HBM3, 580.159.04"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert gpu_line() == ""


def test_the_uuid_of_cuda_is_written_as_nvidia_smi_writes_it() -> None:
    assert nvml_uuid(HEX) == UUID
    assert nvml_uuid(UUID) == UUID
    assert nvml_uuid(None) is None and nvml_uuid("H200") is None


def test_others_on_the_device_are_named_and_ours_and_other_gpus_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in_smi(
        tmp_path,
        monkeypatch,
        f"{UUID}, 100, python3, 2048\n{UUID}, 200, notebook, 30000\n{OTHER_GPU}, 300, other, 5",
    )
    assert others_on(HEX, {100}) == [GpuProcess(200, "notebook", 30000)]
    assert others_on(HEX, {100, 200}) == []


def test_a_list_that_cannot_show_our_own_worker_is_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a container nvidia-smi may give the host's process ids: then none of them is ours.
    stand_in_smi(tmp_path, monkeypatch, f"{UUID}, 4242, python3, 2048")
    assert others_on(HEX, {100}) is None
    assert others_on(HEX, {100}, must_see_ours=False) == [GpuProcess(4242, "python3", 2048)]


def test_without_nvidia_smi_or_a_uuid_nothing_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert others_on(HEX, {1}) is None
    stand_in_smi(tmp_path, monkeypatch, f"{UUID}, 1, python3, 1")
    assert others_on(None, {1}) is None


def test_descendants_follow_parent_links(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for pid, ppid, comm in [(10, 1, "a"), (11, 10, "b (x) y"), (12, 11, "c"), (20, 1, "d")]:
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0\n")
    (proc / "self").mkdir()
    assert descendants(10, proc) == {10, 11, 12}


def test_a_child_of_this_process_counts_as_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        stand_in_smi(
            tmp_path, monkeypatch, f"{UUID}, {child.pid}, python3, 1\n{UUID}, 999999, job, 7"
        )
        assert check_sharing(HEX) == [GpuProcess(999999, "job", 7)]
    finally:
        child.kill()
        child.wait()
