"""How one event reads in full (the transcript's detail view), without Textual.

Readable, not a dump: the title says what and when once; numbers carry their units
(``1.235x``, ``412 ms``, ``$0.0123``); attrs are ``key: value`` lines, with JSON kept for what
is nested; an evaluation gets its per-scenario table from its full result.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

from kernelseek_tui.browse.benchmark import fmt, rows_of
from kernelseek_tui.evaluate.result import EvalResult

# Columns shown in their own sections (or in the title) rather than as field lines.
SECTIONS: Final = frozenset({"text", "tool_input", "attrs", "ts", "kind", "seq"})
_RATIOS: Final = frozenset({"speedup", "best_speedup", "vs_fa3"})
_INLINE_JSON: Final = 80  # nested attrs shorter than this stay on their key's line


def detail_title(row: dict[str, Any]) -> str:
    """``eval · seq 8 · 2026-12-02 17:15:41 UTC``."""
    ts = row.get("ts")
    when = ""
    if isinstance(ts, int):
        when = " · " + time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts / 1_000_000)) + " UTC"
    return f"{row.get('kind')} · seq {row.get('seq')}{when}"


def field_lines(row: dict[str, Any]) -> str:
    """The event's set columns, one ``name: value`` line each, numbers with their units."""
    shown = {k: v for k, v in row.items() if k not in SECTIONS and v is not None and v != ""}
    width = max((len(k) for k in shown), default=0)
    return "\n".join(f"{name:>{width}}: {format_field(name, v)}" for name, v in shown.items())


def format_field(name: str, value: Any) -> str:
    """A column's value as a person reads it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if name in _RATIOS:
        return f"{value:.3f}x"
    if name == "cost_usd":
        return f"${value:.4f}"
    if name == "duration_ms":
        return f"{value:,.0f} ms"
    if isinstance(value, float):
        return f"{value:.6g}"
    return f"{value:,}" if name.endswith("tokens") else str(value)


def attrs_lines(attrs: dict[str, Any]) -> str:
    """``key: value`` lines; a nested value short enough stays on its line as JSON; unset and
    empty values are left out (noise in a detail meant to be read)."""
    lines = []
    for key, value in attrs.items():
        if value is None or value == {} or value == []:
            continue
        if isinstance(value, dict | list):
            compact = json.dumps(value, ensure_ascii=False, default=str)
            if len(compact) <= _INLINE_JSON:
                lines.append(f"{key}: {compact}")
            else:
                pretty = json.dumps(value, indent=2, ensure_ascii=False, default=str)
                lines.append(f"{key}:\n" + "\n".join("  " + line for line in pretty.splitlines()))
        elif isinstance(value, float):
            lines.append(f"{key}: {format_field(key, value)}")
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def scenario_table(result: EvalResult) -> str:
    """The evaluation's scenarios as an aligned text table (the benchmark pane's numbers)."""
    header = ("scenario", "pass", "speedup", "vs FA3", "TFLOP/s", "ms", "max err")
    rows = [
        (
            row.scenario,
            {True: "✓", False: "✗ FAIL", None: "-"}[row.passed],
            fmt(row.speedup, ".3f"),
            fmt(row.ratio_fa3, ".2f"),
            fmt(row.tflops, ".1f"),
            fmt(row.ms, ".3f"),
            fmt(row.max_error, ".2e"),
        )
        for row in rows_of(result)
    ]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(width) if i < 2 else cell.rjust(width)  # names left, numbers right
            for i, (cell, width) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)
