"""Candidates that try to get past the dependency rule without a GPU (tests/adversarial/*.cu):
includes the text check cannot see, load-time code, raw system calls, threads and the
environment, GPU code registered by hand, assembly in host code and assembler directives that
read files. Each must fail the build with a reason naming what it did; the two kernels of the
task must still build, and so must inline PTX in device code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.build import build, splice_lines, static_check
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
ADVERSARIAL = Path(__file__).parent / "adversarial"
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

EXPECTED = {
    "computed_include.cu": "dlfcn.h' (after preprocessing)",
    "spliced_include.cu": "dlfcn.h' (after preprocessing)",
    "include_next.cu": "dlfcn.h' (after preprocessing)",
    "host_only_include.cu": "dlfcn.h' (after preprocessing)",
    "constructor.cu": "load-time constructor",
    "static_initialiser.cu": "load-time constructor",
    "raw_syscall.cu": "raw system-call instruction",
    "hidden_syscall.cu": "raw system-call instruction, as bytes inside other code (.text+",
    "destructor.cu": "unload-time destructor",
    "init_section.cu": "has code in the .init section",
    "indirect_function.cu": "defines GNU indirect function(s) work",
    "writable_code.cu": "writable and executable LOAD segment",
    "executable_stack.cu": "asks for an executable stack",
    "exit_handler.cu": "registers 1 function(s) to run at exit beyond nvcc's own",
    "host_callback.cu": "calls forbidden symbol 'cudaLaunchHostFunc'",
    "device_limit.cu": "calls forbidden symbol 'cudaDeviceSetLimit'",
    "thread_exit_destructor.cu": "registers 1 function(s) to run at exit beyond nvcc's own",
    "thread.cu": "calls 'pthread_create', outside the task's allowed_symbols",
    "environment.cu": "calls 'getenv', outside the task's allowed_symbols",
    "hand_registered_fat_binary.cu": "references '__cudaRegisterFatBinary' from 'ks_launch'",
    "borrowed_registration_name.cu": "references '__cudaRegisterFatBinary' 2 times",
    "assembler_incbin.cu": "holds the assembler directive '.incbin'",
    "composed_directive.cu": "holds the assembler directive '.irp'",
    "section_name_directive.cu": "holds the assembler directive '.incbin'",
    "spliced_word.cu": "line 5: forbidden dependency 'thrust'",
    "pasted_include.cu": "thrust/detail/mpl/math.h' (after preprocessing)",
    "host_reads_inputs.cu": "calls forbidden symbol 'cudaMemcpyAsync'",
    "runtime_log_callback.cu": "calls forbidden symbol 'cudaLogsRegisterCallback'",
    "per_thread_host_callback.cu": "calls forbidden symbol 'cudaLaunchHostFunc_ptsz'",
    "user_object_destructor.cu": "calls forbidden symbol 'cudaUserObjectCreate'",
    "managed_variable.cu": "calls forbidden symbol '__cudaRegisterManagedVar'",
}
# Those with an asm statement in host code: refused for it whatever it holds, besides what it
# does (the object's rules still see what it does, and say so).
HOST_ASSEMBLY = [
    "assembler_incbin.cu",
    "composed_directive.cu",
    "hidden_syscall.cu",
    "init_section.cu",
    "executable_stack.cu",
]
# Inline PTX in device code, a device variable and a kernel: what honest kernels register and
# write in assembly, none of it refused.
DEVICE_PTX = r"""#include <cuda_runtime.h>
#include <stdint.h>
__device__ int counter;
__global__ void touch(float* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm volatile("membar.gl;" ::: "memory");
  out[threadIdx.x] = (float)lane + (float)counter;
}
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  touch<<<1, 32, 0, s>>>((float*)t[0]);
  return (int)cudaGetLastError();
}
"""


@pytest.fixture(scope="module")
def task():
    return load_task(ROOT / "kernels" / "flash_fwd")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))


def test_every_adversarial_candidate_has_an_expectation() -> None:
    assert sorted(p.name for p in ADVERSARIAL.glob("*.cu")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_build_refuses_it_with_a_named_reason(task, name: str) -> None:
    result = build((ADVERSARIAL / name).read_text(), rule=task.dependency_rule)
    assert not result.ok
    assert any(EXPECTED[name] in reason for reason in result.reasons), result.reasons


@pytest.mark.parametrize(
    "name",
    [
        "computed_include.cu",
        "spliced_include.cu",
        "include_next.cu",
        "host_only_include.cu",
        "pasted_include.cu",
    ],
)
def test_the_text_check_alone_would_have_let_it_through(task, name: str) -> None:
    assert static_check((ADVERSARIAL / name).read_text(), task.dependency_rule) == []


@pytest.mark.parametrize("name", HOST_ASSEMBLY)
def test_an_asm_statement_in_host_code_is_refused_whatever_it_holds(task, name: str) -> None:
    result = build((ADVERSARIAL / name).read_text(), rule=task.dependency_rule)
    assert not result.ok
    assert any("has assembly of its own in host code" in r for r in result.reasons), result.reasons


@pytest.mark.parametrize("flags", [(), ("-Xcompiler", "-O0"), ("-G",)])
def test_inline_ptx_in_device_code_and_nvccs_registration_pass(task, flags) -> None:
    """At -O0 gcc keeps nvcc's registration callback a function of its own; at -O3 it inlines
    it into the constructor: both are nvcc's registration code."""
    result = build(DEVICE_PTX, rule=task.dependency_rule, extra_flags=flags)
    assert result.ok, result.reasons


@pytest.mark.parametrize("splice", ["\\\n", "\\  \t\n", "\\\r\n"])
def test_a_forbidden_word_split_by_a_line_splice_is_found_on_its_line(task, splice: str) -> None:
    # GCC joins a backslash and the end of its line with blanks between them too.
    source = f"#include <cuda_runtime.h>\n// thr{splice}ust in a comment\nint thr{splice}ust;\n"
    reasons = static_check(source, task.dependency_rule)
    assert reasons == ["line 4: forbidden dependency 'thrust'"], reasons


@pytest.mark.parametrize(
    ("line", "word"),
    [
        ('asm volatile("call.uni _ZN7cutlass4gemm6kernelEv;");', "cutlass"),
        ('asm volatile("call.uni _ZN3c106detail5checkEv;");', "c10"),
        ("extern int _ZN4cute6layoutE;", "cute"),
    ],
)
def test_a_forbidden_word_inside_a_mangled_name_is_found(task, line: str, word: str) -> None:
    # Library code compiled elsewhere and called from inline assembly names its functions
    # mangled: the length of each part stands right before it, where the word check saw a
    # digit and looked no further.
    reasons = static_check(f"#include <cuda_runtime.h>\n{line}\n", task.dependency_rule)
    assert reasons == [f"line 2: forbidden dependency {word!r}"], reasons


def test_a_comment_marker_inside_a_string_hides_nothing(task) -> None:
    # In a C string "\\n" is two characters, not a line's end: stripped from "//" on, the rest
    # of the line (the mangled name) was never read.
    source = 'asm volatile("// note\\n\\tcall.uni _ZN7cutlass4gemm6kernelEv;");\n'
    assert static_check(source, task.dependency_rule) == ["line 1: forbidden dependency 'cutlass'"]


@pytest.mark.parametrize(
    "line",
    [
        "int n = 1'000'000; // it's a cutlass-free comment",
        "char quote = '\"'; // cutlass",
        "wchar_t w = L'a'; /* cutlass's */",
        'const char* s = "a \\" b"; // cutlass',
    ],
)
def test_comments_beside_literals_are_still_comments(task, line: str) -> None:
    assert static_check(line + "\n", task.dependency_rule) == []


def test_a_hex_constant_or_a_name_ending_in_a_word_is_no_mangled_name(task) -> None:
    source = "unsigned mask = 0x3c10;\nint my7cutlass;\nint _Z9notcutlass;\n"
    assert static_check(source, task.dependency_rule) == []


def test_splicing_keeps_the_count_of_lines() -> None:
    assert splice_lines("a\\\nb\\\nc\nd") == "abc\n\n\nd"
    assert splice_lines("a\\\nb\\") == "ab\n"


def test_the_baseline_passes_every_rule(task) -> None:
    result = build(task.source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert result.ok, result.reasons


def test_a_cached_build_is_not_reused_under_a_stricter_rule(task) -> None:
    """The cache trusts what it holds without checking again, so its key carries the rule:
    a candidate built for a task that allows getenv is checked afresh for one that does not."""
    import dataclasses

    source = (ADVERSARIAL / "environment.cu").read_text()
    rule = task.dependency_rule
    lenient = dataclasses.replace(rule, allowed_symbols=(*rule.allowed_symbols, "getenv"))
    assert build(source, rule=lenient).ok
    strict = build(source, rule=rule)
    assert not strict.ok and not strict.cache_hit
    assert any("'getenv'" in reason for reason in strict.reasons), strict.reasons


DEVICE_HELPER = r"""#include <cuda_runtime.h>
#include <stdint.h>
STORAGE float twice(float x) { return 2.0f * x; }
__global__ void double_it(float* out) { out[threadIdx.x] = twice(out[threadIdx.x]); }
extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s) {
  double_it<<<1, 32, 0, s>>>((float*)t[3]);
  return (int)cudaGetLastError();
}
"""


def test_a_device_function_that_is_not_static_is_refused_with_what_to_do(task) -> None:
    # nvcc's host copy of it calls exit, which the allow-list does not hold (a review found an
    # honest helper refused this way, 2026-12-07): the reason says what to change.
    plain = build(DEVICE_HELPER.replace("STORAGE", "__device__"), rule=task.dependency_rule)
    assert not plain.ok
    assert any("'exit'" in r and "declare device functions static" in r for r in plain.reasons)
    fixed = build(DEVICE_HELPER.replace("STORAGE", "static __device__"), rule=task.dependency_rule)
    assert fixed.ok, fixed.reasons
