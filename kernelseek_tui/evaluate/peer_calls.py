"""A scenario's peers as callables that can be timed interleaved with the candidate.

Timed one after another (candidate, then each peer, then the candidate again), a peer and the
candidate met different clocks and temperatures: on the H200 the same kernel measured twice a
few hundred milliseconds apart read up to 6% apart on long shapes (docs/BENCHMARKS.md,
2026-12-04), so a per-shape "x FA3" carried that drift. Timed in turn, one sample of each per
round (timing.time_interleaved), each ratio compares samples that ran next to each other.

A peer that fails while being timed must not cost the candidate its timing: its callable
catches the error, remembers the first one and does nothing from then on; the peer is then
reported absent with that error, and its samples are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelseek_tui.evaluate.comparators import PeerRunner


@dataclass(slots=True)
class PeerCall:
    """One peer's runners, one per input set, and the first error any of them raised."""

    name: str
    runners: list[Callable[[], dict[str, Any]]]
    peers: PeerRunner
    error: str | None = None

    def __call__(self, set_index: int) -> None:
        if self.error is not None:
            return
        try:
            with self.peers.stream_context():
                self.runners[set_index]()
        except Exception as error:  # the peer's failure, reported as its absence
            self.error = f"{self.name} failed while timed ({type(error).__name__}: {error})"

    def run_once(self, set_index: int = 0) -> dict[str, Any]:
        """One call whose outputs the caller keeps (the peer's check); raises what it raises."""
        with self.peers.stream_context():
            return self.runners[set_index]()


def prepare_peer_calls(
    peers: PeerRunner,
    bodies_per_set: Sequence[dict[str, tuple[Any, str]]],
    fields: dict[str, int],
    floats: dict[str, float],
) -> tuple[list[PeerCall], dict[str, str]]:
    """Every peer of ``peers`` ready on every input set, and for those that are not, why
    (the peer's own reason: not importable, an unsupported shape)."""
    ready: list[PeerCall] = []
    absent: dict[str, str] = {}
    for name in peers.names:
        runners: list[Callable[[], dict[str, Any]]] = []
        for bodies in bodies_per_set:
            runner = peers.prepare(name, dict(bodies), fields, floats)
            if isinstance(runner, str):
                absent[name] = runner
                break
            runners.append(runner)
        else:
            ready.append(PeerCall(name=name, runners=runners, peers=peers))
    return ready, absent
