"""User keymaps: binding ids -> keys, from ``~/.config/kernelseek/keymap.toml``.

Every binding of the app and its panes has an id (``pane.action``); a user file such as

    [keymap]
    "transcript.search" = "ctrl+f"
    "app.query" = "f5,colon"

rebinds them through Textual's ``App.set_keymap``. ``KERNELSEEK_KEYMAP`` names another file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from kernelseek_tui.errors import KernelseekError


def keymap_path() -> Path:
    explicit = os.environ.get("KERNELSEEK_KEYMAP")
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kernelseek" / "keymap.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The user's overrides (empty when there is no file); a bad file is a clear error."""
    path = path or keymap_path()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise KernelseekError(f"cannot read keymap {path}: {error}") from None
    table = data.get("keymap", {})
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise KernelseekError(f"{path}: [keymap] must map binding ids to key strings")
    return dict(table)
