"""A worker waiting for its request runs the task's optional ``warm_up()`` on the evaluation's
stream, so that the peers' first calls (libraries, kernels, handles: seconds) are not paid in
the first timed scenario; a warm-up that fails is left for the peers' first real call.
On the CPU, with a stand-in torch (the real one is the `gpu` extra's)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.comparators import PeerRunner


class StandInTorch(types.ModuleType):
    """What PeerRunner uses of torch: an external stream, a stream context, a synchronize."""

    def __init__(self, log: list[str]) -> None:
        super().__init__("torch")
        runner_log = log

        class Stream:
            def __init__(self, ptr: int) -> None:
                self.ptr = ptr

            def synchronize(self) -> None:
                runner_log.append("synchronize")

        class StreamContext:
            def __init__(self, stream: Stream) -> None:
                self.stream = stream

            def __enter__(self) -> None:
                runner_log.append(f"enter stream {self.stream.ptr}")
                cuda.current = self.stream

            def __exit__(self, *exc: object) -> None:
                runner_log.append("leave stream")

        cuda = types.SimpleNamespace(
            ExternalStream=Stream,
            stream=StreamContext,
            init=lambda: None,
            current=None,
        )
        cuda.current_stream = lambda: cuda.current
        self.cuda = cuda


MODULE = """
import sys
LOG = sys.modules["test_peer_warm_up_log"]
def prepare(name, tensors, fields, floats):
    return "not used here"
"""


def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> tuple[PeerRunner, list]:
    log: list[str] = []
    monkeypatch.delitem(sys.modules, "kernelseek_task_comparators", raising=False)
    monkeypatch.setitem(sys.modules, "torch", StandInTorch(log))
    monkeypatch.setitem(sys.modules, "test_peer_warm_up_log", log)  # type: ignore[arg-type]
    path = tmp_path / "comparators.py"
    path.write_text(MODULE + body)
    peers = PeerRunner(path, ("fa3",), stream_ptr=1234)
    assert peers.absent_reason is None
    return peers, log


def test_the_warm_up_runs_once_on_the_evaluation_s_stream_and_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "def warm_up():\n    LOG.append('warm up')\n"
    peers, log = runner(tmp_path, monkeypatch, body)
    peers.warm_up()
    assert log == ["enter stream 1234", "warm up", "synchronize", "leave stream"]


def test_a_failing_warm_up_is_left_for_the_first_real_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "def warm_up():\n    LOG.append('warm up')\n    raise RuntimeError('no GPU')\n"
    peers, log = runner(tmp_path, monkeypatch, body)
    peers.warm_up()  # does not raise
    assert log == ["enter stream 1234", "warm up", "leave stream"]
    assert peers.absent_reason is None  # the peers are not declared absent for it


def test_a_module_without_a_warm_up_needs_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peers, log = runner(tmp_path, monkeypatch, "")
    peers.warm_up()
    assert log == []
