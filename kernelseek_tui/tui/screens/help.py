"""`?`: every binding of the app and of the focused pane, with its id for keymap files."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "close", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; height: 90%; border: round $accent; background: $surface;
    }
    """

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.rows = rows  # (where, keys, description, id)

    def compose(self) -> ComposeResult:
        table = Table(
            title="Bindings (remap by id in ~/.config/kernelseek/keymap.toml)", expand=True
        )
        table.add_column("where", no_wrap=True)
        table.add_column("keys", no_wrap=True)
        table.add_column("what", overflow="ellipsis", no_wrap=True)
        table.add_column("id", no_wrap=True, min_width=24)  # what a keymap file names
        for row in self.rows:
            table.add_row(*row)
        with VerticalScroll():
            yield Static(table)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
