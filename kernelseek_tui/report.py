"""A session report: best speedup over tool calls with question markers (PNG), and an HTML page
with that plot, the evaluations and the questions. Reads the trace only; matplotlib draws
off-screen (Agg), so it works over SSH and in CI.
"""

from __future__ import annotations

import html
import math
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


def plot_png(series: SessionSeries, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    if series.eval_calls:
        ax.step(series.eval_calls, series.eval_best, where="post", label="best speedup")
        points = [
            (c, s)
            for c, s in zip(series.eval_calls, series.eval_speedup, strict=True)
            if s is not None
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.scatter(xs, ys, s=10, alpha=0.5, label="passing evals")
    for calls in series.question_calls:
        ax.axvline(calls, color="tab:orange", alpha=0.35, linewidth=1)
    if series.question_calls:
        ax.plot([], [], color="tab:orange", alpha=0.6, label="questions")
    ax.set_xlabel("tool calls")
    ax.set_ylabel("speedup vs the starting kernel")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(session_dir: Path, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<out>/<session>.png`` and ``<out>/<session>.html``; returns both paths."""
    if not session_dir.is_dir():
        raise KernelseekError(f"{session_dir} is not a session directory")
    table = read_session(session_dir, columns=_COLUMNS)
    if table.num_rows == 0:
        raise KernelseekError(f"session {session_dir.name} has no events")
    series = session_series(table)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{session_dir.name}.png"
    page = out_dir / f"{session_dir.name}.html"
    plot_png(series, png, f"session {session_dir.name}")
    page.write_text(_html(session_dir.name, series, png.name, table.num_rows))
    return png, page


def _html(session: str, series: SessionSeries, png: str, n_events: int) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return html.escape("" if value is None else str(value))

    rows = []
    for row in series.rows:
        if row["kind"] == "eval":
            detail = (
                f"{cell(row.get('verdict'))} {cell(row.get('scenarios_passed'))}/"
                f"{cell(row.get('scenarios_total'))}, speedup {cell(row.get('speedup'))}, "
                f"vs FA3 {cell(row.get('vs_fa3'))}"
            )
        else:
            detail = (
                f"<b>{cell(row.get('question_text'))}</b> "
                f"({cell(row.get('trigger'))}, {cell(row.get('source'))})"
            )
        rows.append(
            f"<tr><td>{row['seq']}</td><td>{row['tool_calls']}</td>"
            f"<td>{row['kind']}</td><td>{detail}</td></tr>"
        )
    best = max(series.eval_best, default=1.0)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>KernelSeek session {html.escape(session)}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}
td{{padding:2px 8px;border-bottom:1px solid #ddd}}</style></head><body>
<h1>Session {html.escape(session)}</h1>
<p>{n_events} events, {len(series.eval_calls)} evaluations, {len(series.question_calls)}
questions; best verified speedup {best:.3f}x.</p>
<img src="{html.escape(png)}" alt="best speedup over tool calls">
<table><tr><th>seq</th><th>tool calls</th><th>kind</th><th>what</th></tr>
{"".join(rows)}
</table></body></html>
"""
