"""Query results as text: a readable fixed-width table, and streaming CSV / JSON / Parquet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import IO, Any

import pyarrow as pa

ELLIPSIS = "…"


@dataclass(slots=True)
class Head:
    """The first rows of a result, and how many rows it had in all."""

    table: pa.Table
    total_rows: int


def take_head(reader: pa.RecordBatchReader, max_rows: int) -> Head:
    """Read a whole result but keep only its first ``max_rows`` rows (counting the rest)."""
    kept: list[pa.RecordBatch] = []
    have = 0
    total = 0
    for batch in reader:
        total += batch.num_rows
        if have < max_rows:
            piece = batch.slice(0, max_rows - have)
            kept.append(piece)
            have += piece.num_rows
    return Head(pa.Table.from_batches(kept, schema=reader.schema), total)


def format_cell(value: Any) -> str:
    """One value as table text: empty for null, compact floats, timestamps to the millisecond."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + f".{value.microsecond // 1000:03d}" if value.microsecond else text
    if isinstance(value, date | Decimal):
        return str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, default=str, separators=(",", ":"))
    if isinstance(value, bytes):
        return value.hex()
    return " ".join(str(value).split())  # newlines and tabs would break the grid


def format_table(head: Head, *, max_width: int = 40) -> str:
    """A fixed-width table with a header rule, numbers right-aligned, cells capped at
    ``max_width`` characters, and a "Showing N of M rows" line when rows were left out."""
    table = head.table
    names = table.column_names
    if not names:
        return "OK"
    numeric = [
        pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
        for f in table.schema
    ]
    # By position, not by name: a join's result may name two columns alike (a.seq, b.seq).
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [[_cap(format_cell(v), max_width) for v in row] for row in zip(*columns, strict=True)]
    headers = [_cap(n, max_width) for n in names]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(w) if right else cell.ljust(w)
            for cell, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    shown = table.num_rows
    if head.total_rows > shown:
        out.append(f"Showing {shown:,} of {head.total_rows:,} rows")
    else:
        out.append(f"({head.total_rows:,} row{'s' if head.total_rows != 1 else ''})")
    return "\n".join(out)


def _cap(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + ELLIPSIS


def write_json(reader: pa.RecordBatchReader, out: IO[str]) -> int:
    """Write the result as one JSON array of row objects (timestamps in ISO 8601)."""
    count = 0
    out.write("[")
    for row in _rows(reader):
        out.write(",\n" if count else "\n")
        out.write(json.dumps(row, default=_json_default, ensure_ascii=False))
        count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def _rows(reader: pa.RecordBatchReader) -> Iterator[dict[str, Any]]:
    for batch in reader:
        yield from batch.to_pylist()


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
