"""The trace's event schema: one flat Arrow table, one row per event, ordered by ``seq``.

Typed columns hold what gets queried; ``attrs`` holds everything else as JSON. Columns are only
ever added, never retyped: a change of meaning bumps ``SCHEMA_VERSION``, which every Parquet
file carries in its key-value metadata.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pyarrow as pa

SCHEMA_VERSION: Final = 1
SCHEMA_VERSION_KEY: Final = b"kernelseek.schema_version"

EVENT_KINDS: Final = (
    "message",
    "thinking",
    "tool_call",
    "tool_result",
    "eval",
    "question",
    "decision",
    "commit",
    "compaction",
    "error",
    "control",
)
ROLES: Final = ("assistant", "user", "harness", "human")
SOURCES: Final = ("agent", "human", "repertoire", "importer", "harness")

_TS = pa.timestamp("us", tz="UTC")

# Order matters only for display; readers select columns by name.
ARROW_FIELDS: Final = (
    pa.field("session_id", pa.string(), nullable=False),
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("event_id", pa.string(), nullable=False),
    pa.field("parent_event_id", pa.string()),
    pa.field("turn", pa.int32()),
    pa.field("ts", _TS, nullable=False),
    pa.field("duration_ms", pa.float64()),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("role", pa.string()),
    pa.field("source", pa.string()),
    pa.field("model", pa.string()),
    pa.field("response_id", pa.string()),
    pa.field("stop_reason", pa.string()),
    pa.field("input_tokens", pa.int64()),
    pa.field("output_tokens", pa.int64()),
    pa.field("cache_creation_input_tokens", pa.int64()),
    pa.field("cache_read_input_tokens", pa.int64()),
    pa.field("cost_usd", pa.float64()),
    pa.field("tool_name", pa.string()),
    pa.field("tool_call_id", pa.string()),
    pa.field("tool_input", pa.string()),
    pa.field("text", pa.string()),
    pa.field("is_error", pa.bool_()),
    pa.field("eval_id", pa.string()),
    pa.field("candidate_sha", pa.string()),
    pa.field("verdict", pa.string()),
    pa.field("scenarios_passed", pa.int32()),
    pa.field("scenarios_total", pa.int32()),
    pa.field("speedup", pa.float64()),
    pa.field("best_speedup", pa.float64()),
    pa.field("vs_fa3", pa.float64()),
    pa.field("question_id", pa.string()),
    pa.field("question_text", pa.string()),
    pa.field("trigger", pa.string()),
    pa.field("git_sha", pa.string()),
    pa.field("branch", pa.string()),
    pa.field("attrs", pa.string()),
)

EVENT_SCHEMA: Final = pa.schema(
    list(ARROW_FIELDS), metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()}
)
COLUMN_NAMES: Final = tuple(f.name for f in ARROW_FIELDS)


def now_us() -> int:
    """The current UTC time in microseconds since the epoch, the unit of ``ts``."""
    return int(datetime.now(UTC).timestamp() * 1_000_000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def datetime_to_us(value: datetime) -> int:
    """Exact microseconds since the epoch (a naive datetime is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - _EPOCH) // timedelta(microseconds=1)


def new_event_id() -> str:
    return uuid.uuid4().hex


@dataclass(slots=True)
class Event:
    """One row of the trace. ``tool_input`` and ``attrs`` are JSON text when set."""

    session_id: str
    seq: int
    kind: str
    event_id: str = field(default_factory=new_event_id)
    ts: int = field(default_factory=now_us)
    parent_event_id: str | None = None
    turn: int | None = None
    duration_ms: float | None = None
    role: str | None = None
    source: str | None = None
    model: str | None = None
    response_id: str | None = None
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cost_usd: float | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None
    text: str | None = None
    is_error: bool | None = None
    eval_id: str | None = None
    candidate_sha: str | None = None
    verdict: str | None = None
    scenarios_passed: int | None = None
    scenarios_total: int | None = None
    speedup: float | None = None
    best_speedup: float | None = None
    vs_fa3: float | None = None
    question_id: str | None = None
    question_text: str | None = None
    trigger: str | None = None
    git_sha: str | None = None
    branch: str | None = None
    attrs: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}; expected one of {EVENT_KINDS}")

    def to_row(self) -> dict[str, Any]:
        """The event as a dict keyed by column name (``ts`` stays integer microseconds)."""
        return {name: getattr(self, name) for name in COLUMN_NAMES}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Event:
        """Build an event from a row dict; ``ts`` may be microseconds or a datetime."""
        values: dict[str, Any] = {k: row.get(k) for k in COLUMN_NAMES if k in row}
        ts = values.get("ts")
        if isinstance(ts, datetime):
            values["ts"] = datetime_to_us(ts)
        return cls(**values)

    def attrs_dict(self) -> dict[str, Any]:
        """``attrs`` as a dict (empty when unset or unreadable; see :func:`parse_attrs`)."""
        return parse_attrs(self.attrs)

    def tool_input_dict(self) -> dict[str, Any]:
        return json.loads(self.tool_input) if self.tool_input else {}


EVENT_FIELD_NAMES: Final = frozenset(f.name for f in dataclasses.fields(Event))
assert set(COLUMN_NAMES) == EVENT_FIELD_NAMES, "Event and the Arrow schema must agree"


def events_to_table(events: list[Event]) -> pa.Table:
    """Events as an Arrow table in the canonical schema (with its version metadata)."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMN_NAMES}
    for event in events:
        for name in COLUMN_NAMES:
            columns[name].append(getattr(event, name))
    return pa.Table.from_pydict(columns, schema=EVENT_SCHEMA)


def parse_attrs(text: object) -> dict[str, Any]:
    """The ``attrs`` column read tolerantly: a dict, or an empty one when the value is unset,
    not JSON or not an object. A reader shows what it can of a damaged or foreign trace (an
    importer's, an older version's) rather than fail on one row."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def to_json_text(value: Any) -> str:
    """Compact, key-sorted JSON for the ``tool_input`` and ``attrs`` columns."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
