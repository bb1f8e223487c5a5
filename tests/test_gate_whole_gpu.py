"""The judge's gate holds the whole GPU while a kernel's process runs its ``ks_launch``
(evaluate/gate.py): the call is asked for only once every block of the gate is resident, and a
gate that let go by its limit stops the timed run and fails the scenario with a named reason.
On a stand-in CuPy (tests/gate_support.py); the GPU side ran on no GPU here."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from kernelseek_tui.evaluate import gate as gate_module
from kernelseek_tui.evaluate.gate import GateLetGo, StreamGate
from kernelseek_tui.evaluate.worker import GATE_KEPT_WAITING, Evaluation
from tests.gate_support import SMS, FakeStream, fake_cp, holds_at_once


def test_the_gate_fills_every_sm_with_two_blocks_of_1024_threads() -> None:
    launched: list[object] = []
    StreamGate(fake_cp(launched), FakeStream()).hold()
    assert launched == ["ks_gate", ((2 * SMS,), (1024,))]


def test_hold_returns_only_once_the_gpu_says_the_gate_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The GPU says so from another thread, 50 ms on (the sample ahead of the gate still
    # running): hold waits for it, and the gate did not time out.
    def holds_later(host: np.ndarray, ticket: int) -> None:
        threading.Timer(0.05, holds_at_once, (host, ticket)).start()

    gate = StreamGate(fake_cp([], gpu=holds_later), FakeStream())
    began = time.perf_counter()
    gate.hold()
    assert time.perf_counter() - began >= 0.05
    assert gate.timed_out() is False
    # A GPU that never says so: the host gives up at its backstop, and the gate counts as let go.
    monkeypatch.setattr(gate_module, "_HOST_BACKSTOP_S", 0.05)
    never = StreamGate(fake_cp([], gpu=lambda host, ticket: None), FakeStream())
    never.hold()
    assert never.timed_out() is True
    # Each ask covers the gates since the one before.
    assert never.timed_out() is False


def test_a_gate_that_let_go_before_it_held_ends_the_wait_at_once() -> None:
    # Its blocks never all resident within the limit (the GPU's side says so): no backstop wait.
    def let_go(host: np.ndarray, ticket: int) -> None:
        host[2] = 1

    gate = StreamGate(fake_cp([], gpu=let_go), FakeStream())
    began = time.perf_counter()
    gate.hold()
    assert time.perf_counter() - began < 1.0
    assert gate.timed_out() is True


def test_a_gate_that_held_at_once_does_not_wait_and_did_not_time_out() -> None:
    gate = StreamGate(fake_cp([]), FakeStream(), timeout_ms=10_000.0)
    began = time.perf_counter()
    for _ in range(3):
        gate.hold()
        gate.release()
    assert time.perf_counter() - began < 1.0
    assert gate.timed_out() is False


def test_the_gate_reports_how_long_each_hold_lasted_until_its_release() -> None:
    # The host's time from a gate holding to its release is the GPU's idle per sample; the
    # worker reports its median beside the figures (ScenarioResult.gate_hold_us).
    gate = StreamGate(fake_cp([]), FakeStream())
    for pause_s in (0.002, 0.02):
        gate.hold()
        time.sleep(pause_s)
        gate.release()
    gate.release()  # a release with no hold before it adds nothing
    holds = gate.take_holds_us()
    assert len(holds) == 2
    assert 2_000 <= holds[0] < 20_000 <= holds[1] < 1_000_000
    assert gate.take_holds_us() == []  # each take starts afresh


def test_after_a_gate_let_go_the_next_hold_stops_the_timed_run() -> None:
    # The GPU's side: the gate held, then let go by its limit (the call kept it waiting).
    def held_then_let_go(host: np.ndarray, ticket: int) -> None:
        host[1] = ticket
        host[2] = 1

    launched: list[object] = []
    gate = StreamGate(fake_cp(launched, gpu=held_then_let_go), FakeStream())
    gate.hold()
    gate.release()
    with pytest.raises(GateLetGo):
        gate.hold()
    assert launched.count("ks_gate") == 1  # no second gate was launched
    assert gate.timed_out() is True
    gate.hold()  # asked and cleared: the next run starts afresh


def test_a_gate_that_let_go_fails_the_scenario_with_the_named_reason() -> None:
    class Gate:
        def __init__(self, let_go: bool) -> None:
            self.let_go = let_go

        def timed_out(self) -> bool:
            return self.let_go

    def held(gate) -> bool:
        ev = SimpleNamespace(gate=gate)
        return Evaluation.gates_held_within_their_limit(ev)  # type: ignore[arg-type]

    assert held(None) is True  # in-process: no gate
    assert held(Gate(False)) is True
    assert held(Gate(True)) is False
    assert "kept the judge's gate waiting" in GATE_KEPT_WAITING
    assert "never been timed" in GATE_KEPT_WAITING
