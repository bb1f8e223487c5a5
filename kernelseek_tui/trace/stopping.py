"""Stopping a running query: on Ctrl-C, when its screen is left, when the app quits, and after a
timeout.

DuckDB runs a query in C++ with the interpreter's lock released, and Python only acts on
Ctrl-C between bytecodes of the main thread: a query run in the main thread ignores Ctrl-C
until it ends, and a query in a worker thread outlives the screen (and keeps a quitting app's
process alive). DuckDB's own answer is ``interrupt()`` on the connection from another thread,
which makes the running query fail at once; everything here is about calling it.

An interrupt that arrives before DuckDB has begun the query (between our ``with`` and its
execution) is lost: DuckDB clears the flag as each query starts (seen with duckdb 2.0.1: an
interrupt on an idle connection, then a 45 s query ran to its end). So a stop is not one call
but a loop: once stopped, the query is interrupted again every ``_REPEAT_S`` until its ``with``
block ends. A lost stop once left a runaway query burning both cores of a CI machine for the
rest of the test run, and then held the process at exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from kernelseek_tui.errors import KernelseekError

if TYPE_CHECKING:
    from kernelseek_tui.trace.store import TraceStore

T = TypeVar("T")
_POLL_S = 0.1  # how often the waiting thread looks up (Ctrl-C arrives between two looks)
_REPEAT_S = 0.05  # how often a stopped query is interrupted again until it has ended


class QueryStopped(KernelseekError):
    """A query stopped before it finished: by its timeout, or by whoever ran it."""


class QueryDeadline:
    """Within ``with``: interrupts ``store``'s query after ``timeout_s`` (None or 0: never) or
    when ``stop(why)`` is called from any thread; ``stopped`` then says why."""

    def __init__(self, store: TraceStore, timeout_s: float | None) -> None:
        self.store = store
        self.timeout_s = timeout_s
        self.stopped: str | None = None
        self._lock = threading.Lock()
        self._active = False
        self._ended = threading.Event()  # the ``with`` block has ended: stop interrupting
        self._timer: threading.Timer | None = None

    def __enter__(self) -> QueryDeadline:
        with self._lock:
            self._active = True
        if self.timeout_s:
            reason = f"it ran longer than {self.timeout_s:g} s"
            self._timer = threading.Timer(self.timeout_s, self.stop, args=(reason,))
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._active = False
        self._ended.set()

    def stop(self, why: str) -> None:
        """Interrupt the query now and keep interrupting it until its block ends (the first
        reason given is the one kept)."""
        with self._lock:
            if not self._active:
                return  # it has finished: nothing of ours runs on the connection
            if self.stopped is not None:
                return  # already stopping: the loop below runs
            self.stopped = why
            self.store.interrupt()
        repeater = threading.Thread(target=self._keep_interrupting, name="kernelseek-stop")
        repeater.daemon = True
        repeater.start()

    def _keep_interrupting(self) -> None:
        # Under the lock, so that no interrupt lands after __exit__ on a later query.
        while not self._ended.wait(_REPEAT_S):
            with self._lock:
                if not self._active:
                    return
                self.store.interrupt()


def run_stoppable(store: TraceStore, work: Callable[[], T], *, timeout_s: float | None) -> T:
    """Run ``work`` (DuckDB calls on ``store``) in a helper thread while the calling thread
    waits, so that Ctrl-C reaches Python: it interrupts the query and is raised again here.
    Past ``timeout_s`` the query is interrupted and :class:`QueryStopped` says so."""
    outcome: dict[str, object] = {}
    # An Event, not Thread.join: a KeyboardInterrupt landing inside join() can leave the
    # thread marked finished while it still runs (CPython gh-90882), and we must know it ended.
    done = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the waiting thread, raised there
            outcome["error"] = error
        finally:
            done.set()

    with QueryDeadline(store, timeout_s) as deadline:
        helper = threading.Thread(target=target, name="kernelseek-query", daemon=True)
        helper.start()
        try:
            while not done.wait(_POLL_S):
                pass
        except KeyboardInterrupt:
            deadline.stop("interrupted")
            done.wait(5.0)  # daemon: a query that ignores the interrupt cannot hold the exit
            raise
    if deadline.stopped is not None:
        raise QueryStopped(f"query stopped: {deadline.stopped}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
