"""Spare workers: a worker process started before its evaluation is asked for.

A worker spends seconds readying its GPU (CuPy, the CUDA context, torch and the peers'
libraries) before it can judge anything, and none of that depends on the candidate
(``worker.prepare_standby``). Where evaluations come one after another (a session, the tuner, a
pool), the next evaluation's worker can be started as soon as one ends and wait, ready, for its
request. The rule stays the same: each worker serves exactly one evaluation, so a candidate's
library is only ever loaded into a process that has judged nothing. A spare is handed out at
most once (``take`` removes it), and one that died or waited too long is killed, never used.

Spares run in their own process group, as every worker does, and are killed at interpreter
exit; a parent killed outright closes their stdin, and a worker whose stdin closes without a
request exits, as does one that waited past its ``--standby-limit``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# A spare waits at most this long for an evaluation; then it is replaced by a fresh one (its
# idle CUDA context holds GPU memory, and what it loaded ahead may have changed on disk).
DEFAULT_MAX_AGE_S = 600.0
# How much longer than that a spare waits on its own before it exits (``--standby-limit``): a
# spare is handed out only younger than the cache's limit, and must not leave while its request
# is on the way.
STANDBY_GRACE_S = 60.0


@dataclass(frozen=True, slots=True)
class SpareKey:
    """What a spare must match to serve an evaluation: the GPU it readied, the task whose
    comparators it loaded, and the exact command (which says what it loaded ahead)."""

    visible_devices: str | None  # CUDA_VISIBLE_DEVICES as the worker was given it
    task_dir: str
    command: tuple[str, ...]
    # The MPS server whose client it is (its CUDA_MPS_PIPE_DIRECTORY), None for none.
    mps_pipe: str | None = None


def start_worker(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start a worker process: the one way, for a fresh worker and a spare alike."""
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group: a kill takes any children too
    )


def kill_worker(process: subprocess.Popen[bytes]) -> None:
    """Kill a worker's whole process group (it may have exited on its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@dataclass(slots=True)
class _Spare:
    process: subprocess.Popen[bytes]
    started: float  # on the cache's clock


class SpareWorkers:
    """At most one ready, never-used worker per ``SpareKey``."""

    def __init__(
        self,
        *,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._spares: dict[SpareKey, _Spare] = {}
        self._lock = threading.Lock()
        self._exiting = False
        atexit.register(self._at_exit)

    def take(self, key: SpareKey) -> subprocess.Popen[bytes] | None:
        """The spare for ``key``, now the caller's alone; None when there is no live one young
        enough (a dead or stale one is discarded on the way)."""
        with self._lock:
            spare = self._spares.pop(key, None)
        if spare is None:
            return None
        if not self._usable(spare):
            _discard(spare.process)
            return None
        return spare.process

    def prestart(self, key: SpareKey, start: Callable[[], subprocess.Popen[bytes]]) -> None:
        """Make sure a usable spare for ``key`` exists, starting one with ``start`` if not."""
        with self._lock:
            if self._exiting:
                return
            current = self._spares.get(key)
            if current is not None and self._usable(current):
                return
            stale = self._spares.pop(key, None)
            self._spares[key] = _Spare(start(), self._clock())
        if stale is not None:
            _discard(stale.process)

    def drop(self, key: SpareKey) -> None:
        """Kill the spare for ``key``, if any (say, a client of an MPS server restarted since)."""
        with self._lock:
            spare = self._spares.pop(key, None)
        if spare is not None:
            _discard(spare.process)

    def processes(self) -> list[subprocess.Popen[bytes]]:
        """The spares held now (to inspect, never to use: ``take`` hands one out)."""
        with self._lock:
            return [spare.process for spare in self._spares.values()]

    def close(self) -> None:
        """Kill every spare held; the cache stays usable."""
        with self._lock:
            spares = list(self._spares.values())
            self._spares.clear()
        for spare in spares:
            _discard(spare.process)

    def _usable(self, spare: _Spare) -> bool:
        alive = spare.process.poll() is None
        return alive and self._clock() - spare.started <= self.max_age_s

    def _at_exit(self) -> None:
        with self._lock:
            self._exiting = True  # a thread still running at exit starts no new one
        self.close()


def _discard(process: subprocess.Popen[bytes]) -> None:
    """Kill a spare that will not be used, reap it, and close its pipes."""
    if process.poll() is None:  # a reaped one's group id may belong to someone else by now
        kill_worker(process)
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
