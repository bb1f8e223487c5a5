"""The count of CuPy's compiles for the judge's own work (evaluate/compile_watch.py), on a
stand-in compiler module: CuPy itself is not needed."""

from __future__ import annotations

import types

import pytest

from kernelseek_tui.evaluate import compile_watch


@pytest.fixture
def compiler(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A stand-in for ``cupy.cuda.compiler`` whose compiles return the source's length, and a
    process with no watch installed yet."""
    monkeypatch.setattr(compile_watch, "_installed", None)

    def compile_using_nvrtc(source: str, options: tuple[str, ...] = (), *args: object) -> int:
        return len(source) + len(options)

    return types.SimpleNamespace(compile_using_nvrtc=compile_using_nvrtc)


def test_each_compile_is_counted_named_and_passed_through(
    compiler: types.SimpleNamespace,
) -> None:
    watch = compile_watch.install(compiler)
    mark = watch.mark()
    plain = 'extern "C" __global__ void cupy_add(float* x) {}'
    cub = "#include <cub/block/block_reduce.cuh>\n__global__ void cupy_cub_max(float* x) {}"
    assert compiler.compile_using_nvrtc(plain, ("-a",)) == len(plain) + 1
    assert compiler.compile_using_nvrtc(cub) == len(cub)
    compiled = watch.since(mark)
    assert compiled.count == 2
    assert compiled.names == ["cupy_add", "cupy_cub_max (cub)"]
    assert compiled.seconds >= 0
    # A later reading counts only what came after it.
    later = watch.mark()
    assert watch.since(later).count == 0


def test_a_failing_compile_is_counted_and_its_error_kept(
    compiler: types.SimpleNamespace,
) -> None:
    def failing(source: str, *args: object) -> None:
        raise RuntimeError("nvrtc: error")

    compiler.compile_using_nvrtc = failing
    watch = compile_watch.install(compiler)
    with pytest.raises(RuntimeError, match="nvrtc"):
        compiler.compile_using_nvrtc("__global__ void k() {}")
    assert watch.since((0, 0.0)).names == ["k"]


def test_installed_once_per_process(compiler: types.SimpleNamespace) -> None:
    first = compile_watch.install(compiler)
    wrapped = compiler.compile_using_nvrtc
    assert compile_watch.install(compiler) is first
    assert compiler.compile_using_nvrtc is wrapped  # not wrapped twice: each compile counts once
    compiler.compile_using_nvrtc("__global__ void k() {}")
    assert first.since((0, 0.0)).count == 1


def test_only_the_first_names_are_kept(compiler: types.SimpleNamespace) -> None:
    watch = compile_watch.install(compiler)
    for i in range(compile_watch.NAMES_KEPT + 3):
        compiler.compile_using_nvrtc(f"__global__ void k{i}() {{}}")
    compiled = watch.since((0, 0.0))
    assert compiled.count == compile_watch.NAMES_KEPT + 3
    assert len(compiled.names) == compile_watch.NAMES_KEPT


def test_without_a_compiler_nothing_is_counted_or_kept() -> None:
    watch = compile_watch.install(None)
    assert watch.since(watch.mark()).count == 0
    assert compile_watch._installed is None or compile_watch._installed is not watch
