"""Shared test set-up: GPU tests skip where no GPU is visible; the `env` of CLI subprocesses."""

from __future__ import annotations

import faulthandler
import functools
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# After the last test, how long the interpreter may take to exit before the watchdog ends it.
EXIT_GRACE_S = 120.0


@functools.cache
def gpu_visible() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, no device: all mean "no GPU here"
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_visible():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible (cupy cannot see a device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_spare_outlives_its_test() -> Iterator[None]:
    """Kill the spare workers a test's loop of evaluations left ready (each test's stand-in
    worker is its own script, so no later test could use them anyway)."""
    yield
    api = sys.modules.get("kernelseek_tui.evaluate.api")
    if api is not None:
        api.SPARES.close()


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `kernelseek` subprocess: this checkout importable, no API key, no
    traces root from the caller's shell, and the counter the stand-in evaluators write to."""
    values = {
        k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "KERNELSEEK_TRACES")
    }
    values.update(PYTHONPATH=str(ROOT), KS_TEST_COUNTER=str(tmp_path / "count"), KS_TEST_DELAY="0")
    return values


def pytest_unconfigure(config: pytest.Config) -> None:
    """Never let a thread a test left running hold the process at exit. A runaway DuckDB
    query in a Textual worker thread once did (its thread pool is joined at exit): CI ran out of
    time after the suite's summary. If the interpreter has not exited ``EXIT_GRACE_S`` after the
    last hook, print every thread's stack and exit with a failure."""

    def watch() -> None:
        time.sleep(EXIT_GRACE_S)
        others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
        print(
            f"\ntests: the process had not exited {EXIT_GRACE_S:g} s after the last test; "
            f"still running: {', '.join(others)}. Stacks:",
            file=sys.stderr,
            flush=True,
        )
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(3)

    threading.Thread(target=watch, name="tests-exit-watchdog", daemon=True).start()
