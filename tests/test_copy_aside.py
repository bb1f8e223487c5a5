"""What the judge copies after every measured sample (worker._watch_measured_calls): the
outputs alone by default, the whole set with KERNELSEEK_COPY_ASIDE=set; and an unknown value
refused by name."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from kernelseek_tui.evaluate import worker
from kernelseek_tui.task import load_task

NAMES = ("q", "k", "v", "out", "lse")


def _run_copies(monkeypatch) -> list[str]:
    monkeypatch.setattr(worker, "SignFlipper", lambda cp, bodies: lambda key: None)
    copied: list[str] = []

    def array(name: str) -> Any:
        def copy_from(source: Any, nbytes: int, stream: Any) -> None:
            copied.append(source.name)

        return SimpleNamespace(
            data=SimpleNamespace(name=name, copy_from_device_async=copy_from), nbytes=8
        )

    cp = SimpleNamespace(empty_like=lambda body: array("copy of " + body.data.name))
    ev = SimpleNamespace(cp=cp, task=load_task("kernels/flash_fwd"), stream="stream")
    sets = [{name: SimpleNamespace(body=array(name)) for name in NAMES} for _ in range(2)]
    watch = worker._watch_measured_calls(ev, sets, random.Random(0))
    kept = watch.copy_aside(1, True)
    watch.copy_aside(0, False)
    assert set(kept) == {name for name in NAMES if name in copied}
    return copied


def test_the_outputs_alone_are_copied_after_each_sample(monkeypatch) -> None:
    monkeypatch.delenv(worker.COPY_ASIDE_VARIABLE, raising=False)
    assert _run_copies(monkeypatch) == ["out", "lse", "out", "lse"]


def test_the_whole_set_is_copied_when_asked(monkeypatch) -> None:
    monkeypatch.setenv(worker.COPY_ASIDE_VARIABLE, "set")
    assert _run_copies(monkeypatch) == [*NAMES, *NAMES]


def test_an_unknown_copy_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setenv(worker.COPY_ASIDE_VARIABLE, "inputs")
    with pytest.raises(worker.FatalError, match="KERNELSEEK_COPY_ASIDE must be"):
        worker.copy_outputs_only()
