"""Shared test set-up: GPU tests skip where no GPU is visible."""

from __future__ import annotations

import functools

import pytest


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
