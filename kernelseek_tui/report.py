"""A session report: the figure of ``report_figure`` as a PNG, and the page a user shares
(``report_page``: one self-contained HTML file). Reads the trace, ``session.json`` and the
stored evaluation results only; matplotlib draws off-screen (Agg), so it works over SSH and CI.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.trace.reader import read_session

_COLUMNS = [
    "seq",
    "ts",
    "kind",
    "tool_name",
    "verdict",
    "speedup",
    "best_speedup",
    "vs_fa3",
    "scenarios_passed",
    "scenarios_total",
    "question_id",
    "question_text",
    "trigger",
    "source",
    "git_sha",
]


@dataclass(slots=True)
class SessionSeries:
    """What the report plots: per passing eval, the tool calls so far and the best speedup."""

    eval_calls: list[int]
    eval_best: list[float]
    eval_speedup: list[float | None]
    question_calls: list[int]
    question_labels: list[str]
    rows: list[dict[str, object]]


def session_series(table: pa.Table) -> SessionSeries:
    series = SessionSeries([], [], [], [], [], [])
    calls = 0
    best = 1.0
    for row in table.select([c for c in _COLUMNS if c in table.column_names]).to_pylist():
        kind = row["kind"]
        if kind == "tool_call":
            calls += 1
        elif kind == "eval":
            speedup = row.get("speedup")
            if row.get("verdict") == "pass" and speedup is not None and math.isfinite(speedup):
                best = max(best, speedup)
            series.eval_calls.append(calls)
            series.eval_best.append(best)
            series.eval_speedup.append(speedup if row.get("verdict") == "pass" else None)
            series.rows.append({**row, "tool_calls": calls})
        elif kind == "question":
            series.question_calls.append(calls)
            series.question_labels.append(row.get("question_id") or row.get("source") or "?")
            series.rows.append({**row, "tool_calls": calls})
    return series


def write_report(session_dir: Path, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<out>/<session>.png`` and ``<out>/<session>.html`` (self-contained: the figure
    inlined as SVG, nothing fetched); returns both paths."""
    from kernelseek_tui.experiment.metrics import COLUMNS as METRIC_COLUMNS
    from kernelseek_tui.experiment.metrics import session_metrics
    from kernelseek_tui.report_figure import draw
    from kernelseek_tui.report_page import page_html, session_facts

    if not session_dir.is_dir():
        raise KernelseekError(f"{session_dir} is not a session directory")
    columns = list(dict.fromkeys([*_COLUMNS, *METRIC_COLUMNS, *_TOKEN_COLUMNS]))
    table = read_session(session_dir, columns=columns)
    if table.num_rows == 0:
        raise KernelseekError(f"session {session_dir.name} has no events")
    series = session_series(table)
    rows = table.to_pylist()
    facts = session_facts(session_dir, rows)
    metrics = session_metrics(rows, session_id=session_dir.name, arm="", model=facts.model)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{session_dir.name}.png"
    page = out_dir / f"{session_dir.name}.html"
    title = report_title(session_dir.name, facts.caveat)
    png.write_bytes(draw(metrics, title, "png"))
    svg = draw(metrics, title, "svg").decode("utf-8")
    page.write_text(page_html(session_dir, series, metrics, facts, svg, table.num_rows))
    return png, page


def report_title(session: str, caveat: str | None) -> str:
    """The figure's title: the session, and its caveat under it, because the PNG is shared on
    its own, without the page's caveat box (a scripted session's made-up speeds must not pass
    for measurements)."""
    if not caveat:
        return f"session {session}"
    lines = textwrap.wrap(f"caveat: {caveat}", width=140)
    return "\n".join([f"session {session}", *lines])


_TOKEN_COLUMNS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "model", "attrs"]
