"""The report's figure: best speedup (above) and best vs FA3 (below, on its own scale) over
tool calls and over time, each question a marker labelled with its id, each commit a point,
failed evaluations shown.

Drawn off-screen (Agg) to PNG bytes, or to SVG text in which each question's marker carries its
text as a ``<title>`` (a browser shows it on hover), so the HTML page can inline it.
"""

from __future__ import annotations

import html
import io
from typing import Any

from kernelseek_tui.experiment.metrics import SessionMetrics

QUESTION_COLOUR = "tab:orange"
FA3_COLOUR = "tab:purple"


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a session's duration reads best in, and its length in seconds: a 40-second
    scripted session in minutes would be all zeros after the point."""
    if seconds < 120:
        return "seconds", 1.0
    if seconds < 7200:
        return "minutes", 60.0
    return "hours", 3600.0


def _x_of(m: SessionMetrics, over_time: bool) -> Any:
    unit = time_unit(m.seconds)[1]

    def x_of(calls: int, seconds: float) -> float:
        return seconds / unit if over_time else calls

    return x_of


def _speedup_panel(ax: Any, m: SessionMetrics, *, over_time: bool) -> list[Any]:
    """The best speedup over the starting kernel; returns the question markers (in
    ``m.questions`` order)."""
    x_of = _x_of(m, over_time)
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
    markers = []
    for q in m.questions:
        x = x_of(q.tool_calls, q.seconds)
        y = m.best_at_calls(q.tool_calls)
        (marker,) = ax.plot([x], [y], marker="v", color=QUESTION_COLOUR, markersize=8,
                            linestyle="none")  # fmt: skip
        markers.append(marker)
        ax.annotate(q.question_id or q.source or "?", (x, y), textcoords="offset points",
                    xytext=(3, 6), fontsize=7, color=QUESTION_COLOUR, rotation=35)  # fmt: skip
    ax.set_ylabel("best speedup vs the starting kernel")
    ax.grid(alpha=0.3)
    return markers


def _fa3_panel(ax: Any, m: SessionMetrics, *, over_time: bool) -> None:
    """The best vs FA3 on its own scale, under the speedup panel. On a shared right-hand axis
    it would lie on the speedup line (both are the same kernel's timings, scaled), hiding it;
    here each is readable, and the questions are faint lines to line the two up by."""
    x_of = _x_of(m, over_time)
    fa3 = [(x_of(p.tool_calls, p.seconds), p.best_vs_fa3) for p in m.curve if p.best_vs_fa3]
    for q in m.questions:
        ax.axvline(x_of(q.tool_calls, q.seconds), color=QUESTION_COLOUR, alpha=0.3, linewidth=1)
    if fa3:
        xs, ys = (list(v) for v in zip(*fa3, strict=True))
        xs.append(x_of(m.tool_calls, m.seconds))
        ys.append(ys[-1])
        ax.step(xs, ys, where="post", color=FA3_COLOUR, label="best vs FA3")
        ax.scatter(xs[:-1], ys[:-1], s=10, color=FA3_COLOUR, alpha=0.5)
        low, high = min(ys), max(ys)
        pad = max((high - low) * 0.15, high * 0.05, 1e-3)
        ax.set_ylim(max(0.0, low - pad), high + pad)
        if low - pad <= 1.0 <= high + pad:
            ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)  # as fast as FA3
    else:
        ax.text(0.5, 0.5, "no FA3 timing in this session", transform=ax.transAxes,
                ha="center", va="center", color="grey")  # fmt: skip
        ax.set_yticks([])
    ax.set_ylabel("best vs FA3\n(1.0 = as fast)", color=FA3_COLOUR)
    ax.set_xlabel(time_unit(m.seconds)[0] if over_time else "tool calls")
    ax.grid(alpha=0.3)


def figure(m: SessionMetrics, title: str) -> Any:
    """The matplotlib figure: two rows sharing each column's x (tool calls, time), the speedup
    above and vs FA3 below on its own scale. Its question markers have gids
    ``ks-question-<i>``, the calls panel's first. The caller closes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((calls_ax, time_ax), (calls_fa3, time_fa3)) = plt.subplots(
        2, 2, figsize=(13, 7.2), dpi=110, sharex="col", gridspec_kw={"height_ratios": [3, 2]}
    )
    markers = _speedup_panel(calls_ax, m, over_time=False)
    markers += _speedup_panel(time_ax, m, over_time=True)
    _fa3_panel(calls_fa3, m, over_time=False)
    _fa3_panel(time_fa3, m, over_time=True)
    # A climb rises to the right, so its lower right is where the legend hides nothing.
    calls_ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    for index, marker in enumerate(markers):
        marker.set_gid(f"ks-question-{index}")
    fig.tight_layout()
    return fig


def draw(m: SessionMetrics, title: str, fmt: str) -> bytes:
    """The figure as ``png`` bytes or ``svg`` bytes (question text on hover)."""
    import matplotlib.pyplot as plt

    fig = figure(m, title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    plt.close(fig)
    data = buffer.getvalue()
    if fmt != "svg":
        return data
    svg = data.decode("utf-8")
    for index, text in enumerate([q.text for q in m.questions] * 2):
        group = f'<g id="ks-question-{index}">'
        svg = svg.replace(group, f"{group}<title>{html.escape(text)}</title>", 1)
    return svg.encode("utf-8")
