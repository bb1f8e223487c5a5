"""The judge's own CuPy kernels (evaluate/compile_watch.py): CuPy's accelerators turned off
unless the user chose them, and the kernels a scenario compiled counted as the files CuPy's
cache gained. On stand-ins: CuPy itself is not needed."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from kernelseek_tui.evaluate import compile_watch


def _stand_in_cupy(cache: Path | None) -> tuple[types.SimpleNamespace, dict[str, list[int]]]:
    """A CuPy with the accelerator setters (recording what they were given) and a compiler
    that names ``cache`` as its cache folder."""
    given: dict[str, list[int]] = {}
    accelerator = types.SimpleNamespace(
        **{
            f"set_{kind}_accelerators": (lambda names, kind=kind: given.__setitem__(kind, names))
            for kind in ("elementwise", "reduction", "routine")
        }
    )
    compiler = types.SimpleNamespace(get_cache_dir=lambda: str(cache))
    cp = types.SimpleNamespace(
        _core=types.SimpleNamespace(_accelerator=accelerator),
        cuda=types.SimpleNamespace(compiler=compiler),
    )
    return cp, given


def test_the_accelerators_are_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compile_watch.ACCELERATORS_VARIABLE, raising=False)
    cp, given = _stand_in_cupy(None)
    assert compile_watch.accelerators_off(cp)
    assert given == {"elementwise": [], "reduction": [], "routine": []}


def test_the_users_choice_of_accelerators_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compile_watch.ACCELERATORS_VARIABLE, "cub")
    cp, given = _stand_in_cupy(None)
    assert not compile_watch.accelerators_off(cp)
    assert given == {}


def test_a_cupy_without_accelerators_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compile_watch.ACCELERATORS_VARIABLE, raising=False)
    assert not compile_watch.accelerators_off(types.SimpleNamespace())


def test_the_files_a_cache_gained_are_counted(tmp_path: Path) -> None:
    cp, _ = _stand_in_cupy(tmp_path / "kernel_cache")
    watch = compile_watch.CompileWatch(compile_watch.cache_folder(cp))
    before = watch.mark()  # the folder is not made yet: CuPy makes it at its first compile
    assert before == 0
    (tmp_path / "kernel_cache").mkdir()
    for name in ("a_2.cubin", "b_2.cubin", "c_2.cubin"):
        (tmp_path / "kernel_cache" / name).write_bytes(b"x")
    (tmp_path / "kernel_cache" / "a folder").mkdir()  # not a kernel
    assert watch.since(before) == 3
    later = watch.mark()
    assert watch.since(later) == 0
    (tmp_path / "kernel_cache" / "c_2.cubin").unlink()  # a cache cleared meanwhile
    assert watch.since(later) == 0


def test_without_a_cache_folder_nothing_is_counted() -> None:
    watch = compile_watch.CompileWatch(compile_watch.cache_folder(types.SimpleNamespace()))
    assert watch.folder is None
    assert watch.since(watch.mark()) == 0
