"""The driver route of the dependency rule: a candidate may call the CUDA driver functions the
task lists (tensor maps for TMA need cuTensorMapEncodeTiled), gets libcuda linked for them, and
is refused for any other driver function or for looking driver functions up at run time.

No GPU: where no driver is installed, a stub libcuda built here with gcc stands in for the link
(same soname, so what the library needs is what it would need on a GPU box).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.build import LIBCUDA_ENV, build
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
HEADER = "#include <cuda.h>\n#include <cuda_runtime.h>\n#include <stdint.h>\n"
ENTRY = (
    'extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, '
    "cudaStream_t s) { %s }\n"
)
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def stub_libcuda(tmp_path, monkeypatch) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not on PATH")
    source = tmp_path / "stub.c"
    source.write_text("int cuTensorMapEncodeTiled(void) { return 0; }\n")
    library = tmp_path / "libcuda.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(library), str(source)],
        check=True,
    )
    monkeypatch.setenv(LIBCUDA_ENV, str(library))
    return library


def _needed(library: Path) -> list[str]:
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic.stdout)


def test_sm90_builds_under_the_rule_and_links_the_driver(task, stub_libcuda) -> None:
    source = (TASK_DIR / "sm90.cu").read_text()
    result = build(source, rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert result.ok, result.reasons
    assert result.library is not None
    assert "libcuda.so.1" in _needed(result.library)


def test_sm90_with_the_dynamic_scheduler_builds_under_the_rule(task, stub_libcuda) -> None:
    # Its tile counter is a __device__ variable, registered by nvcc's own glue (__cuda*).
    source = "#define SM90_DYNAMIC_CAUSAL 1\n" + (TASK_DIR / "sm90.cu").read_text()
    result = build(source, rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert result.ok, result.reasons


def test_a_candidate_without_driver_calls_does_not_link_the_driver(task, stub_libcuda) -> None:
    result = build(HEADER + ENTRY % "return 0;", rule=task.dependency_rule)
    assert result.ok, result.reasons
    assert result.library is not None
    assert not any(name.startswith("libcuda.so") for name in _needed(result.library))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            ENTRY % "void* fn; CUdriverProcAddressQueryResult r;"
            ' return cuGetProcAddress("cuLaunchKernel", &fn, 12000, 0, &r);',
            "forbidden symbol 'cuGetProcAddress",
        ),
        (
            ENTRY % "void* fn; cudaDriverEntryPointQueryResult r;"
            ' return cudaGetDriverEntryPoint("cuLaunchKernel", &fn, 0, &r);',
            "forbidden symbol 'cudaGetDriverEntryPoint",
        ),
        (  # the runtime's own getter, declared by hand: "__cuda*" on the allow-list
            'extern "C" cudaError_t __cudaGetProcAddress(const char*, void**, int, '
            "unsigned long long, cudaDriverEntryPointQueryResult*);\n"
            + ENTRY
            % 'void* fn; return __cudaGetProcAddress("cuModuleLoadData", &fn, 13000, 0, 0);',
            "forbidden symbol '__cudaGetProcAddress'",
        ),
        (  # the driver's hidden function tables, through the runtime ("cuda*")
            ENTRY
            % "const void* table; cudaUUID_t id = {}; return cudaGetExportTable(&table, &id);",
            "forbidden symbol 'cudaGetExportTable'",
        ),
        (
            ENTRY % 'CUfunction fn; CUmodule m = 0; return cuModuleGetFunction(&fn, m, "k");',
            "driver function 'cuModuleGetFunction', outside the task's driver_functions",
        ),
    ],
)
def test_driver_functions_outside_the_list_are_refused(task, stub_libcuda, body, expected) -> None:
    result = build(HEADER + body, rule=task.dependency_rule)
    assert not result.ok
    assert any(expected in reason for reason in result.reasons), result.reasons


def test_no_libcuda_is_a_harness_error_that_says_so(task, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(LIBCUDA_ENV, str(tmp_path / "absent" / "libcuda.so"))
    source = (TASK_DIR / "sm90.cu").read_text()
    result = build(source, rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert not result.ok
    assert result.reasons[0].startswith("harness: the candidate calls the CUDA driver")
    assert "cuTensorMapEncodeTiled" in result.reasons[0]
