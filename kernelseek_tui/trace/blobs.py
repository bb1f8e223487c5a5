"""Large payloads kept whole in a content-addressed side store, ``<session>/blobs/``.

A row whose ``text``, ``tool_input`` or ``attrs`` is longer than the inline limit keeps a short
stand-in in its column and a reference in ``attrs``::

    attrs = {...the original attrs keys, when small..., "_blobs": {"text": "<sha256>",
             "tool_input": "<sha256>" | absent, "attrs": "<sha256>" | null}}

``text`` keeps its first ``PREVIEW_CHARS`` characters (so that SQL over the views still sees
the start of a long tool output); ``tool_input`` becomes ``{"_blob": "<sha256>"}`` so that it
stays valid JSON. The original ``attrs`` text goes to a blob too, so that resolving a row gives
back exactly what was appended. ``resolve_table`` (used by the reader) puts the payloads back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from kernelseek_tui.trace.durable import fsync_dir
from kernelseek_tui.trace.schema import to_json_text

log = logging.getLogger("kernelseek_tui.trace")

BLOB_KEY: Final = "_blobs"
BLOB_COLUMNS: Final = ("text", "tool_input", "attrs")
PREVIEW_CHARS: Final = 2000
DEFAULT_INLINE_LIMIT: Final = 64 * 1024


class BlobStore:
    """Content-addressed files under ``blobs/<first two hex digits>/<sha256>``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, payload: str) -> str:
        """Store ``payload`` durably (tmp, fsync, rename) and return its SHA-256 hex digest."""
        data = payload.encode("utf-8", "replace")
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{digest}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        fsync_dir(target.parent)
        return digest

    def get(self, digest: str) -> str:
        return self.path(digest).read_text(encoding="utf-8")


def externalize(row: dict[str, Any], store: BlobStore, limit: int) -> dict[str, Any]:
    """The row with any payload longer than ``limit`` characters moved into the blob store."""
    text, tool_input, attrs = row.get("text"), row.get("tool_input"), row.get("attrs")
    # The common case, checked without building anything: nothing is large.
    if (
        (text is None or len(text) <= limit)
        and (tool_input is None or len(tool_input) <= limit)
        and (attrs is None or len(attrs) <= limit)
    ):
        return row
    big = [name for name in BLOB_COLUMNS if len(row.get(name) or "") > limit]
    out = dict(row)
    refs: dict[str, str | None] = {}
    for name in ("text", "tool_input"):
        if name in big:
            refs[name] = store.put(row[name])
    if "text" in refs:
        out["text"] = row["text"][:PREVIEW_CHARS]
    if "tool_input" in refs:
        out["tool_input"] = to_json_text({"_blob": refs["tool_input"]})
    original_attrs = row.get("attrs")
    refs["attrs"] = store.put(original_attrs) if original_attrs is not None else None
    visible: dict[str, Any] = {}
    if original_attrs is not None and "attrs" not in big:
        try:
            parsed = json.loads(original_attrs)
            if isinstance(parsed, dict):
                visible = parsed
        except ValueError:
            pass
    visible[BLOB_KEY] = refs
    out["attrs"] = to_json_text(visible)
    return out


def resolve_table(table: pa.Table, store: BlobStore) -> pa.Table:
    """Put the blob-stored payloads of every row that has them back into its columns."""
    if table.num_rows == 0 or "attrs" not in table.column_names:
        return table
    attrs = table.column("attrs").combine_chunks()
    mask = pc.fill_null(pc.match_substring(attrs, f'"{BLOB_KEY}"'), False)
    indices = pc.indices_nonzero(mask).to_pylist()
    if not indices:
        return table
    replacements: dict[str, list[Any]] = {name: [] for name in BLOB_COLUMNS}
    current = {name: table.column(name).take(indices).to_pylist() for name in BLOB_COLUMNS}
    for position in range(len(indices)):
        values = {name: current[name][position] for name in BLOB_COLUMNS}
        for name, value in _resolved(values, store).items():
            replacements[name].append(value)
    for name in BLOB_COLUMNS:
        column_index = table.schema.get_field_index(name)
        column = table.column(name).combine_chunks()
        patched = pc.replace_with_mask(column, mask, pa.array(replacements[name], type=column.type))
        table = table.set_column(column_index, table.schema.field(name), patched)
    return table


def _resolved(values: dict[str, Any], store: BlobStore) -> dict[str, Any]:
    try:
        refs = json.loads(values["attrs"]).get(BLOB_KEY)
    except (ValueError, AttributeError):
        return values
    if not isinstance(refs, dict):
        return values
    out = dict(values)
    for name, digest in refs.items():
        if name not in BLOB_COLUMNS:
            continue
        if digest is None:
            out[name] = None
            continue
        try:
            out[name] = store.get(str(digest))
        except OSError as error:
            # Keep the stand-in: a short preview beats losing the row.
            log.warning("blob %s for column %s is missing: %s", digest, name, error)
    return out
