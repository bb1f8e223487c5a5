"""Candidates that try to get past the dependency rule without a GPU (tests/adversarial/*.cu):
includes the text check cannot see, load-time code, raw system calls, threads and the
environment. Each must fail the build with a reason naming what it did; the two kernels of the
task must still build."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.build import build, static_check
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
}


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
    "name", ["computed_include.cu", "spliced_include.cu", "include_next.cu", "host_only_include.cu"]
)
def test_the_text_check_alone_would_have_let_it_through(task, name: str) -> None:
    assert static_check((ADVERSARIAL / name).read_text(), task.dependency_rule) == []


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
