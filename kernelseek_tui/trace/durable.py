"""Writing files so that a crash leaves either the old state or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

TMP_SUFFIX = ".tmp"


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink in ``path`` durable (a no-op where directories cannot be synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_parquet_atomic(table: pa.Table, path: Path, *, compression: str = "zstd") -> None:
    """Write ``table`` to ``path`` as ``<path>.tmp``, fsync, rename, fsync the directory."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        with open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression=compression)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a small text file atomically (tmp, fsync, rename)."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
