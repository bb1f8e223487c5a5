"""User keymaps: binding ids -> keys, from ``~/.config/kernelseek/keymap.toml``.

Every binding of the app and its panes has an id (``pane.action``); a user file such as

    [keymap]
    "transcript.search" = "ctrl+f"
    "app.sql" = "colon,ctrl+e"

rebinds them through Textual's ``App.set_keymap``. ``KERNELSEEK_KEYMAP`` names another file.
An id no binding has is reported and left out (``split_keymap``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from pathlib import Path

from textual.binding import Binding
from textual.keys import format_key

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


def binding_ids(owners: Iterable[type]) -> set[str]:
    """The ids of every ``Binding`` the given classes (apps, screens, widgets) declare."""
    return {
        binding.id
        for owner in owners
        for binding in getattr(owner, "BINDINGS", [])
        if isinstance(binding, Binding) and binding.id
    }


def split_keymap(keymap: dict[str, str], known: set[str]) -> tuple[dict[str, str], list[str]]:
    """The entries that name a known binding id, and one line for each that does not (a typo
    would otherwise be ignored without a word, and the key stay where it was)."""
    good = {k: v for k, v in keymap.items() if k in known}
    problems = [
        f"keymap: no binding has the id {k!r} (ignored; ? lists the ids)"
        for k in keymap
        if k not in known
    ]
    return good, problems


def display_keys(keys: str) -> str:
    """Keys as a person types them: ``question_mark`` is ``?``, ``f5,colon`` is ``f5 :``."""
    shown = []
    for key in keys.split(","):
        *modifiers, last = key.strip().split("+")
        shown.append("+".join([*modifiers, format_key(last)]))
    return " ".join(shown)
