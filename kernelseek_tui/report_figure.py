"""The report's figure: best speedup and best vs FA3 over tool calls and over time, each
question a marker labelled with its id, each commit a point, failed evaluations shown.

Drawn off-screen (Agg) to PNG bytes, or to SVG text in which each question's marker carries its
text as a ``<title>`` (a browser shows it on hover), so the HTML page can inline it.
"""

from __future__ import annotations

import html
import io
from typing import Any

from kernelseek_tui.experiment.metrics import SessionMetrics

QUESTION_COLOUR = "tab:orange"


def _panel(ax: Any, m: SessionMetrics, *, over_time: bool) -> list[Any]:
    """One panel; returns the question markers (in ``m.questions`` order)."""

    def x_of(calls: int, seconds: float) -> float:
        return seconds / 60 if over_time else calls

    xs = [0.0] + [x_of(p.tool_calls, p.seconds) for p in m.curve] + [x_of(m.tool_calls, m.seconds)]
    ys = [1.0] + [p.best for p in m.curve] + [m.final_best]
    ax.step(xs, ys, where="post", color="tab:blue", label="best speedup")
    passed = [(x_of(p.tool_calls, p.seconds), p.speedup) for p in m.curve if p.passed]
    if passed:
        ax.scatter(*zip(*passed, strict=True), s=12, color="tab:blue", alpha=0.4,
                   label="passing evals")  # fmt: skip
    failed = [(x_of(p.tool_calls, p.seconds), p.best) for p in m.curve if not p.passed]
    if failed:
        ax.scatter(*zip(*failed, strict=True), s=30, marker="x", color="tab:red",
                   label="failed evals")  # fmt: skip
    commit_points = []
    for point in m.curve:
        if point.tool_calls in m.commits:
            commit_points.append((x_of(point.tool_calls, point.seconds), point.best))
    if commit_points:
        ax.scatter(*zip(*commit_points, strict=True), s=36, facecolors="none",
                   edgecolors="tab:green", linewidths=1.5, label="commits")  # fmt: skip
    fa3 = [(x_of(p.tool_calls, p.seconds), p.best_vs_fa3) for p in m.curve if p.best_vs_fa3]
    if fa3:
        twin = ax.twinx()
        twin.step(*zip(*fa3, strict=True), where="post", color="tab:purple", linestyle="--",
                  alpha=0.8, label="best vs FA3")  # fmt: skip
        twin.set_ylabel("best vs FA3 (1.0 = as fast)", color="tab:purple")
    markers = []
    for q in m.questions:
        x = x_of(q.tool_calls, q.seconds)
        y = m.best_at_calls(q.tool_calls)
        (marker,) = ax.plot([x], [y], marker="v", color=QUESTION_COLOUR, markersize=8,
                            linestyle="none")  # fmt: skip
        markers.append(marker)
        ax.annotate(q.question_id or q.source or "?", (x, y), textcoords="offset points",
                    xytext=(3, 6), fontsize=7, color=QUESTION_COLOUR, rotation=35)  # fmt: skip
    ax.set_xlabel("minutes" if over_time else "tool calls")
    ax.set_ylabel("speedup vs the starting kernel")
    ax.grid(alpha=0.3)
    return markers


def draw(m: SessionMetrics, title: str, fmt: str) -> bytes:
    """The figure as ``png`` bytes or ``svg`` bytes (question text on hover)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (calls_ax, time_ax) = plt.subplots(1, 2, figsize=(13, 4.8), dpi=110)
    markers = _panel(calls_ax, m, over_time=False)
    markers += _panel(time_ax, m, over_time=True)
    calls_ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(title)
    texts = [q.text for q in m.questions] * 2
    for index, marker in enumerate(markers):
        marker.set_gid(f"ks-question-{index}")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    plt.close(fig)
    data = buffer.getvalue()
    if fmt != "svg":
        return data
    svg = data.decode("utf-8")
    for index, text in enumerate(texts):
        group = f'<g id="ks-question-{index}">'
        svg = svg.replace(group, f"{group}<title>{html.escape(text)}</title>", 1)
    return svg.encode("utf-8")
