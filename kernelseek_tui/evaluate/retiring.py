"""Workers that have sent all their results and are exiting, reaped off the evaluation's path.

A worker that has said "done" still spends about half a second leaving (its CUDA context torn
down; measured on H100 and H200, `benchmarks/eval_bench.py`'s "where the time went"), and none
of that changes its results. So the evaluation returns at "done" and a reaper thread waits for
the exit, killing the worker's process group if it overstays. The next evaluation on the same
GPU waits for that reaper before it asks a worker for anything: no two workers' GPU work
overlaps in an evaluation, as before.
"""

from __future__ import annotations

import atexit
import subprocess
import threading

from kernelseek_tui.evaluate.spare import kill_worker

# How long a worker that has sent its results may take to exit before its group is killed.
EXIT_LIMIT_S = 20.0


class RetiringWorkers:
    """The exiting workers, by the GPU they ran on (CUDA_VISIBLE_DEVICES as they saw it)."""

    def __init__(self, *, exit_limit_s: float = EXIT_LIMIT_S) -> None:
        self.exit_limit_s = exit_limit_s
        self._reapers: dict[str | None, list[threading.Thread]] = {}
        self._lock = threading.Lock()
        # The reapers are daemon threads: a program that ends right after its last evaluation
        # (`kernelseek eval`) waits for them, so a worker stuck in its exit is still killed
        # (after at most exit_limit_s) rather than left behind holding the GPU.
        atexit.register(self.wait_all)

    def retire(self, device: str | None, process: subprocess.Popen[bytes]) -> None:
        """Reap ``process`` in the background."""

        def reap() -> None:
            try:
                process.wait(timeout=self.exit_limit_s)
            except subprocess.TimeoutExpired:
                kill_worker(process)
                process.wait()

        reaper = threading.Thread(target=reap, daemon=True, name="kernelseek-reaper")
        with self._lock:
            self._reapers.setdefault(device, []).append(reaper)
        reaper.start()

    def wait(self, device: str | None) -> None:
        """Return once every worker retired from ``device`` is gone."""
        with self._lock:
            reapers = self._reapers.pop(device, [])
        for reaper in reapers:
            reaper.join()

    def wait_all(self) -> None:
        """``wait`` for every GPU: all retired workers gone (a caller about to inspect the
        spares they start, or to exit)."""
        with self._lock:
            devices = list(self._reapers)
        for device in devices:
            self.wait(device)

    def pending(self, device: str | None) -> int:
        """How many reapers for ``device`` have not finished (for tests and display)."""
        with self._lock:
            return sum(r.is_alive() for r in self._reapers.get(device, []))
