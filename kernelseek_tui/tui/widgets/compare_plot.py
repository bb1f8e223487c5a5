"""The compare screen's plot: best speedup over tool calls in the terminal (plotext), one line
per session, a colour per arm, each question a marker labelled with its id.

The points come from ``experiment.comparison`` (``curve_steps``, ``question_marks``), the same
as ``kernelseek compare``'s PNG; only the drawing is here.
"""

from __future__ import annotations

from typing import Final

from textual_plotext import PlotextPlot

from kernelseek_tui.experiment.comparison import Comparison, curve_steps, question_marks

# plotext's named colours, one per arm in the order the arms come (the first arm blue).
ARM_COLOURS: Final = ("blue", "orange", "green", "red", "magenta", "cyan")


def arm_colour(index: int) -> str:
    return ARM_COLOURS[index % len(ARM_COLOURS)]


class ComparePlot(PlotextPlot):
    """``show(comparison)`` draws it; ``show(None)`` leaves an empty frame with a hint."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.comparison: Comparison | None = None

    def show(self, comparison: Comparison | None) -> None:
        self.comparison = comparison
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("tool calls")
        plt.ylabel("best speedup")
        if comparison is None:
            plt.title("select sessions or an experiment (space)")
            self.refresh()
            return
        plt.title("best speedup over tool calls, a colour per arm (v: a question)")
        bests = [m.final_best for group in comparison.arms.values() for m in group]
        # A label one row or so above its marker, so that neither hides the line (in data
        # units: plotext places text by value, and the y range is 1.0 to the best).
        lift = 0.07 * max(max(bests, default=1.0) - 1.0, 0.1)
        for index, (arm, sessions) in enumerate(comparison.arms.items()):
            colour = arm_colour(index)
            for number, m in enumerate(sessions):
                xs, ys = curve_steps(m)
                corners_x, corners_y = _step_corners(xs, ys)
                plt.plot(corners_x, corners_y, color=colour, marker="braille",
                         label=arm if number == 0 else None)  # fmt: skip
                for label, x, y in question_marks(m):
                    plt.scatter([x], [y], color=colour, marker="v")
                    plt.text(label, x, y + lift, color=colour)
        self.refresh()


def _step_corners(xs: list[int], ys: list[float]) -> tuple[list[float], list[float]]:
    """A "post" step line as the corners of a polyline (plotext draws no steps): each value
    holds until the next x, then rises or falls there."""
    corners_x: list[float] = []
    corners_y: list[float] = []
    for index, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if index:
            corners_x.append(float(x))
            corners_y.append(ys[index - 1])
        corners_x.append(float(x))
        corners_y.append(y)
    return corners_x, corners_y
