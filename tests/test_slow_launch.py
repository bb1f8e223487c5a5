"""A candidate's calls must return about as fast as an honest ``ks_launch`` enqueues: work done
inside ``ks_launch`` runs while the judge's gate holds the GPU, before the sample's start
event, and is never timed (evaluate/gate.py). The judge times each call's round trip to the
kernel's process and fails a timed run whose median is over the limit. On the CPU, with
stand-ins for the host and the stream counters."""

from __future__ import annotations

import time
from types import SimpleNamespace

from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel
from kernelseek_tui.evaluate.worker import ROUND_TRIP_LIMIT_MS, Evaluation


def counted_kernel(reply_after_s: float) -> SandboxedKernel:
    """A SandboxedKernel on the counters' hand-over whose host replies after ``reply_after_s``."""

    def ask(*words: object) -> str:
        time.sleep(reply_after_s)
        return "0"

    kernel = object.__new__(SandboxedKernel)
    kernel.handover = "counters"
    kernel._host = SimpleNamespace(ask=ask)
    kernel._counters = SimpleNamespace(write=lambda *a: None, wait=lambda *a: None)
    kernel._stream = SimpleNamespace(ptr=1)
    kernel._go_counter, kernel._done_counter, kernel._count = 0, 8, 0
    kernel._fence = None
    kernel._round_trips = []
    return kernel


def test_each_call_s_round_trip_is_kept_until_taken() -> None:
    kernel = counted_kernel(reply_after_s=0.004)
    for _ in range(3):
        kernel._call(0)
    median_ms = kernel.take_round_trips()
    assert median_ms is not None and median_ms >= 4.0
    assert kernel.take_round_trips() is None  # taken: the next run's are its own


def evaluation_with(candidate_ms: float | None, others_ms: float | None = 9.0):
    taken: list[str] = []

    class Kernel:
        def __init__(self, name: str, ms: float | None) -> None:
            self.name, self.ms = name, ms

        def take_round_trips(self) -> float | None:
            taken.append(self.name)
            return self.ms

    candidate = Kernel("candidate", candidate_ms)
    ev = SimpleNamespace(candidate=candidate, sandboxes=[Kernel("baseline", others_ms), candidate])
    return ev, taken


def test_a_candidate_whose_calls_return_slowly_fails_with_the_named_reason() -> None:
    ev, taken = evaluation_with(candidate_ms=5.0)
    reason = Evaluation.slow_launch_reason(ev)  # type: ignore[arg-type]
    assert reason is not None
    assert "5.00 ms a call" in reason and "never timed" in reason
    assert sorted(taken) == ["baseline", "candidate"]  # every kernel's dropped


def test_calls_that_return_within_the_limit_or_none_pass() -> None:
    for ms in (0.03, ROUND_TRIP_LIMIT_MS, None):
        ev, _ = evaluation_with(candidate_ms=ms)
        assert Evaluation.slow_launch_reason(ev) is None  # type: ignore[arg-type]
    # Another kernel's slow calls (the starting kernel's) are not the candidate's.
    ev, _ = evaluation_with(candidate_ms=0.03, others_ms=50.0)
    assert Evaluation.slow_launch_reason(ev) is None  # type: ignore[arg-type]
