"""The trace's warnings (a skipped file, a torn WAL line) as one line each on stderr."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOGGER_NAME = "kernelseek_tui.trace"


@contextmanager
def warnings_to_stderr(prefix: str) -> Iterator[None]:
    """While active, print each trace warning to stderr as ``<prefix>: warning: <message>``."""
    logger = logging.getLogger(LOGGER_NAME)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(f"{prefix}: warning: %(message)s"))
    logger.addHandler(handler)
    # Our handler prints them; Python's last-resort handler must not print them again.
    previous = logger.propagate
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = previous
