"""Change one knob's default in a task.toml, in place, and in the sources it lists: for scripts
that start a session from another point of the knob space (scripts/gpu_tuner_session.sh,
DEFAULTS).

    python3 scripts/set_knob_default.py TASK_TOML NAME=VALUE

The value must be one of the knob's own; the file is checked by loading the task afterwards.
Each source the knob names (its ``sources``) gets the value in its own ``#ifndef NAME`` ...
``#define NAME value`` too, so the starting kernel, built with no knobs, is the same slower
point the tuner starts from (the judge's speedups and a session's pairing both measure from it).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelseek_tui.errors import KernelseekError  # noqa: E402
from kernelseek_tui.task import load_task  # noqa: E402


def set_default(text: str, name: str, value: int) -> str:
    """``text`` with the ``default`` of the ``[[knob]]`` named ``name`` set to ``value``."""
    pattern = re.compile(
        r'(\[\[knob\]\]\s*\nname = "' + re.escape(name) + r'"\n(?:(?!\[\[).*\n)*?default = )-?\d+'
    )
    changed, count = pattern.subn(lambda m: m.group(1) + str(value), text)
    if count != 1:
        raise SystemExit(f"no knob {name!r} with a default found")
    return changed


def set_source_default(text: str, name: str, value: int) -> str:
    """``text`` (a kernel source) with the ``#define NAME value`` under ``#ifndef NAME`` set."""
    pattern = re.compile(
        r"(#ifndef "
        + re.escape(name)
        + r"\n(?:(?!#endif).*\n)*?#define "
        + re.escape(name)
        + r" )-?\d+"
    )
    changed, count = pattern.subn(lambda m: m.group(1) + str(value), text)
    if count != 1:
        raise SystemExit(f"no #ifndef {name} ... #define {name} found in the source")
    return changed


def main() -> int:
    if len(sys.argv) != 3 or "=" not in sys.argv[2]:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(sys.argv[1])
    name, _, value = sys.argv[2].partition("=")
    original = path.read_text()
    path.write_text(set_default(original, name, int(value)))
    try:
        load_task(path.parent)  # the task's own checks: a default among the knob's values
    except KernelseekError as error:
        path.write_text(original)
        raise SystemExit(f"not changed: {error}") from None
    knobs = tomllib.loads(path.read_text()).get("knob", [])
    if [k.get("default") for k in knobs if k.get("name") == name] != [int(value)]:
        path.write_text(original)
        raise SystemExit(f"not changed: {name}'s default does not read {value} after the edit")
    sources = next(k.get("sources", []) for k in knobs if k.get("name") == name)
    for source in sources:
        file = path.parent / source
        file.write_text(set_source_default(file.read_text(), name, int(value)))
        print(f"{file}: #define {name} {value}")
    print(f"{path}: {name} defaults to {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
