"""The judge's kernel host built on a stand-in CUDA runtime (no tests here): for the CPU tests
of evaluate/sandbox_host.py and evaluate/sandboxed_kernel.py. The stand-in is
tests/data/fake_cudart: its "device memory" is a file both processes map, its IPC handles hold
the file's path, and its events log what was waited on and recorded."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FAKE = Path(__file__).parent / "data" / "fake_cudart"
HOST_SOURCE = Path(__file__).parents[1] / "kernelseek_tui" / "evaluate" / "sandbox_host.cpp"


def have_compilers() -> bool:
    return shutil.which("gcc") is not None and shutil.which("g++") is not None


def build_fake_host(where: Path) -> Path:
    """The host linked against the stand-in runtime, in ``where``."""
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(where / "libfakecudart.so"),
            str(FAKE / "fake_cudart.c"),
        ],
        check=True,
    )
    subprocess.run(
        [
            "g++",
            "-O1",
            f"-I{FAKE}",
            "-o",
            str(where / "sandbox_host"),
            str(HOST_SOURCE),
            f"-L{where}",
            "-lfakecudart",
            f"-Wl,-rpath,{where}",
            "-ldl",
            "-lpthread",
        ],
        check=True,
    )
    return where / "sandbox_host"


def handle(text: str) -> bytes:
    """A stand-in IPC handle: the path (or event name), NUL-padded to 64 bytes."""
    raw = text.encode()
    assert len(raw) < 64, "the stand-in's handles hold a path of under 64 bytes"
    return raw + bytes(64 - len(raw))


def compile_candidate(source: Path, library: Path) -> Path:
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library
