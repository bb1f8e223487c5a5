"""The write-ahead log: one compact JSON object per line, only the columns that are set.

The WAL is the durable record of a running session: the writer fsyncs it per batch before
``flush()`` returns. Lines are decoded in bulk with Arrow's JSON reader (C++, no per-line Python);
when a line does not parse (a torn write, a stray byte, a NaN) the slow path decodes line by
line, skips the bad ones with a warning, and keeps the rest.
"""

from __future__ import annotations

import io
import json
import logging
import operator
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.json as pa_json

from kernelseek_tui.trace.schema import COLUMN_NAMES, EVENT_SCHEMA, Event

log = logging.getLogger("kernelseek_tui.trace")

# The WAL carries ts as integer microseconds; everything else has its Arrow type as is.
WAL_PARSE_SCHEMA: Final = pa.schema(
    [
        pa.field(f.name, pa.int64()) if f.name == "ts" else f.with_nullable(True)
        for f in EVENT_SCHEMA
    ]
)
_BLOCK_SIZE: Final = 4 << 20


# One getter and one encoder for every event: building them per call cost a third of the
# append path.
_GET_COLUMNS: Final = operator.attrgetter(*COLUMN_NAMES)
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def event_to_wal_dict(event: Event) -> dict[str, Any]:
    """The event as the WAL stores it: only the columns that are not None."""
    return {
        name: value
        for name, value in zip(COLUMN_NAMES, _GET_COLUMNS(event), strict=True)
        if value is not None
    }


def encode_line(row: dict[str, Any]) -> bytes:
    """One WAL line (with its newline) for a row dict of set columns."""
    text = _ENCODER.encode(row)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate cannot live in Parquet (Arrow strings are UTF-8); replace it here so
        # that the WAL and the Parquet files agree on what was stored.
        return text.encode("utf-8", "replace") + b"\n"


def complete_part(data: bytes) -> tuple[bytes, bytes]:
    """Split raw WAL bytes into the complete lines and the unterminated tail after them."""
    cut = data.rfind(b"\n") + 1
    return data[:cut], data[cut:]


def rows_to_table(rows: list[dict[str, Any]], *, origin: str = "WAL") -> pa.Table:
    """Row dicts (WAL form: ts in microseconds) as a table in the canonical event schema.

    A row whose values do not fit the column types is skipped with a warning.
    """
    try:
        return _to_event_schema(pa.Table.from_pylist(rows, schema=WAL_PARSE_SCHEMA))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        pass
    tables = []
    for row in rows:
        try:
            tables.append(pa.Table.from_pylist([row], schema=WAL_PARSE_SCHEMA))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
            log.warning("skipping event seq=%s of %s: %s", row.get("seq"), origin, error)
    if not tables:
        return EVENT_SCHEMA.empty_table()
    return _to_event_schema(pa.concat_tables(tables))


def decode_lines(data: bytes, *, origin: str = "WAL") -> pa.Table:
    """Decode complete WAL lines into a table in the canonical schema, skipping bad lines."""
    if not data:
        return EVENT_SCHEMA.empty_table()
    try:
        table = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(block_size=_BLOCK_SIZE),
            parse_options=pa_json.ParseOptions(
                explicit_schema=WAL_PARSE_SCHEMA, unexpected_field_behavior="ignore"
            ),
        )
        return _to_event_schema(table)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return rows_to_table(_decode_slowly(data, origin), origin=origin)


def _decode_slowly(data: bytes, origin: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    known = set(COLUMN_NAMES)
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or "seq" not in row or "kind" not in row:
                raise ValueError("not an event object")
            rows.append({k: v for k, v in row.items() if k in known})
        except ValueError as error:
            log.warning("skipping unreadable line %d of %s: %s", number, origin, error)
    return rows


def _to_event_schema(table: pa.Table) -> pa.Table:
    arrays = [
        table.column(f.name).cast(f.type) if f.name == "ts" else table.column(f.name)
        for f in EVENT_SCHEMA
    ]
    return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)


@dataclass(slots=True)
class WalChunk:
    """What one read of the WAL found: the events in complete lines, and where they end."""

    table: pa.Table
    start: int
    end: int  # byte offset just past the last complete line read
    torn_tail: int  # bytes after ``end`` that do not (yet) end in a newline
    missing: bool = False  # there was no WAL file


def read_wal(path: Path, offset: int = 0) -> WalChunk:
    """Read the complete lines of the WAL from byte ``offset`` (0 where it is past the end)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if offset > size:
                offset = 0
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return WalChunk(EVENT_SCHEMA.empty_table(), offset, offset, 0, missing=True)
    lines, tail = complete_part(data)
    table = decode_lines(lines, origin=str(path))
    return WalChunk(table, offset, offset + len(lines), len(tail))
