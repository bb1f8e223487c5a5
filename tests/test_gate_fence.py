"""The gate with the judge's fence before it ("fenced"): every sample's gate is preceded by the
work that holds the stream until the GPU is free, and a fence that let go fails the samples'
scenario. On a stand-in CuPy: what is enqueued, in what order (the GPU side is gpu_fence's)."""

from __future__ import annotations

from types import SimpleNamespace

from kernelseek_tui.evaluate.gate import StreamGate
from kernelseek_tui.evaluate.worker import Evaluation
from tests.gate_support import FakeStream, fake_cp


def test_each_gate_is_preceded_by_the_fence_when_given_one() -> None:
    launched: list[object] = []
    gate = StreamGate(fake_cp(launched), FakeStream(), clear_gpu=lambda: launched.append("fence"))
    gate.hold()
    gate.release()
    gate.hold()
    names = [item for item in launched if isinstance(item, str)]
    assert names == ["fence", "ks_gate", "fence", "ks_gate"]
    plain: list[object] = []
    StreamGate(fake_cp(plain), FakeStream()).hold()
    assert [item for item in plain if isinstance(item, str)] == ["ks_gate"]


def test_a_fence_that_let_go_means_a_sample_did_not_start_on_a_free_gpu() -> None:
    class Fence:
        def __init__(self, let_go: bool) -> None:
            self.let_go = let_go

        def timed_out(self, stream) -> bool:
            return self.let_go

    def started_free(fence) -> bool:
        ev = SimpleNamespace(sample_fence=fence, stream="stream")
        return Evaluation.samples_started_on_a_free_gpu(ev)  # type: ignore[arg-type]

    assert started_free(None) is True  # no fence: nothing to tell
    assert started_free(Fence(False)) is True
    assert started_free(Fence(True)) is False
