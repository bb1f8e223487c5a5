"""The count of the candidate's own inline PTX in device code (evaluate/device_asm_rules.py):
on preprocessed text written here, and through the build (nvcc) on sources that pass or
overrun flash_fwd's limit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.build import build, static_check
from kernelseek_tui.evaluate.device_asm_rules import asm_statements, device_asm_check
from kernelseek_tui.task import TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"

PREPROCESSED = """# 1 "kernel.cu"
# 1 "/usr/local/cuda/include/cuda_bf16.hpp" 1 3
static void header_helper() { asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(a) : "f"(b)); }
# 3 "kernel.cu" 2
__device__ void mine(unsigned* p) {
  asm volatile("mov.u32 %0, %%laneid;\\n\\t"
               "membar.gl;" : "=r"(*p) : : "memory");
  __asm__ __volatile__("{ .reg .pred p;\\n setp.eq.u32 p, %0, 0; }" :: "r"(*p));
  asm volatile("" ::: "memory");
}
"""


def test_only_the_candidates_own_asm_is_counted_with_its_lines() -> None:
    found = asm_statements(PREPROCESSED, "kernel.cu")
    assert [(s.line, s.statements) for s in found] == [(4, 2), (6, 2), (7, 0)]


def test_the_operands_after_the_template_are_not_counted() -> None:
    text = '# 1 "kernel.cu"\nasm("add.u32 %0, %1, 1;" : "=r"(x) : "r"(y), "n"(";;;"));\n'
    assert [s.statements for s in asm_statements(text, "kernel.cu")] == [1]


def test_over_the_limit_is_refused_with_the_largest_statement() -> None:
    assert device_asm_check(PREPROCESSED, "kernel.cu", 4) == []
    assert device_asm_check(PREPROCESSED, "kernel.cu", None) == []
    (reason,) = device_asm_check(PREPROCESSED, "kernel.cu", 3)
    assert reason.startswith("holds 4 PTX statements of inline assembly in device code, over")
    assert "the largest `asm` at line 4: 2" in reason


def test_a_line_directive_is_refused() -> None:
    # It would make the code after it the header's, out of the count.
    rule = load_task(TASK_DIR).dependency_rule
    for directive in ('#line 7 "cuda_bf16.hpp"', '# 7 "cuda_bf16.hpp"', "%:line 7"):
        (reason,) = static_check(f"int x;\n{directive}\n", rule)
        assert reason.startswith("line 2: a line directive"), reason


def test_flash_fwd_sets_a_limit_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    assert load_task(TASK_DIR).dependency_rule.max_device_asm == 400
    target = tmp_path / "task"
    shutil.copytree(TASK_DIR, target)
    toml = target / "task.toml"
    toml.write_text(toml.read_text().replace("max_device_asm = 400", "max_device_asm = -1"))
    with pytest.raises(TaskError, match="max_device_asm must be a whole number"):
        load_task(target)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

# A macro repeating a PTX statement: the count is read after preprocessing, so 5 x 5 x 5 x 4
# written as four lines is 500.
PASTED = r"""#include <cuda_runtime.h>
#include <stdint.h>
#define ONE "add.u32 %0, %0, 1;\n\t"
#define FOUR ONE ONE ONE ONE
#define TWENTY FOUR FOUR FOUR FOUR FOUR
#define HUNDRED TWENTY TWENTY TWENTY TWENTY TWENTY
__global__ void body(unsigned* out) {
  unsigned v = threadIdx.x;
  asm volatile(HUNDRED HUNDRED HUNDRED HUNDRED HUNDRED : "+r"(v));
  out[threadIdx.x] = v;
}
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  body<<<1, 32, 0, s>>>((unsigned*)t[3]);
  return (int)cudaGetLastError();
}
"""


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))


@needs_nvcc
def test_a_long_run_of_pasted_ptx_is_refused_by_the_build(private_cache) -> None:
    rule = load_task(TASK_DIR).dependency_rule
    result = build(PASTED, rule=rule)
    assert not result.ok
    assert any("holds 500 PTX statements" in r for r in result.reasons), result.reasons
    # the same source under the limit builds: the refusal is the count's
    short = PASTED.replace("HUNDRED HUNDRED HUNDRED HUNDRED HUNDRED", "HUNDRED")
    assert build(short, rule=rule).ok
