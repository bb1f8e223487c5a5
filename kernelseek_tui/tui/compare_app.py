"""The compare screen as an app of its own (`kernelseek compare --tui`): no session to open
first, the experiments and sessions named picked as it starts; leaving the screen quits."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from kernelseek_tui.tui.screens.compare import CompareScreen


class CompareApp(App[None]):
    TITLE = "kernelseek compare"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit", id="compare_app.quit")]

    def __init__(self, traces_root: Path, *, preselect: list[str] | None = None) -> None:
        super().__init__()
        self.traces_root = Path(traces_root)
        self.preselect = preselect or []
        self.animation_level = "none"

    def on_mount(self) -> None:
        screen = CompareScreen(self.traces_root, preselect=self.preselect)
        self.push_screen(screen, callback=lambda _: self.exit())
