"""The best-speedup sparkline over tool calls, with a ``?`` under each question asked."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from kernelseek_tui.browse.timeline import Timeline


class SpeedupPlot(Widget):
    """Three lines: a label with the best speedup, the sparkline, the question markers.

    Drawn at whatever width the pane gives it, so a resize redraws the columns.
    """

    DEFAULT_CSS = """
    SpeedupPlot {
        height: 3;
        width: 1fr;
    }
    """

    def __init__(
        self,
        timeline: Timeline | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._timeline = timeline

    @property
    def timeline(self) -> Timeline | None:
        return self._timeline

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Show this timeline (None: nothing evaluated to plot)."""
        self._timeline = timeline
        self.refresh()

    def render(self) -> Text:
        timeline = self._timeline
        if timeline is None or not timeline.points:
            return Text("best speedup: no verified evaluation yet", style="dim")
        width = max(1, self.size.width)
        asked = len(timeline.questions)
        label = Text.assemble(
            ("best ", "bold"),
            (f"{timeline.best_speedup:.2f}x", "bold green"),
            (f" over {timeline.total_tool_calls} tool calls", "dim"),
            (f", {asked} question{'s' if asked != 1 else ''} (?)" if asked else "", "dim"),
        )
        label.truncate(width, overflow="ellipsis")  # a cut count must not read as whole
        text = Text("\n").join(
            [
                label,
                Text(timeline.sparkline(width), style="green"),
                Text(timeline.markers_line(width), style="bold magenta"),
            ]
        )
        return text
