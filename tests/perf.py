"""Wall-clock asserts, kept out of the default run.

A test that times something is marked ``perf`` and left out by pytest's ``addopts`` (a loaded
CI machine fails a time limit, not the code); ``./scripts/test -m perf`` runs them on a quiet
one. A test whose steps also check behaviour runs twice through ``TIMED``: untimed always,
timed only with ``-m perf``.
"""

from __future__ import annotations

import pytest

TIMED = [False, pytest.param(True, marks=pytest.mark.perf, id="timed")]
