"""Replace or add values of a task.toml's [timing] table, in place, for timing experiments
(scripts/gpu_timing_variants.sh). The rest of the file is left as written.

    python3 benchmarks/timing_override.py COPY/task.toml "warmup_ms=300,flush_mb=256"
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path


def override(text: str, values: dict[str, str]) -> str:
    """``text`` with each key of ``values`` set in its [timing] table (added where absent);
    raises ValueError without a [timing] table or where the result is not valid TOML."""
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "[timing]")
    except StopIteration:
        raise ValueError("no [timing] table") from None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    missing = dict(values)
    for i in range(start + 1, end):
        match = re.match(r"\s*([A-Za-z_]+)\s*=", lines[i])
        if match and match.group(1) in missing:
            lines[i] = f"{match.group(1)} = {missing.pop(match.group(1))}\n"
    added = [f"{key} = {value}\n" for key, value in missing.items()]
    result = "".join(lines[: start + 1] + added + lines[start + 1 :])
    tomllib.loads(result)  # a value that is not TOML fails here, not in the judge
    return result


def parse(variant: str) -> dict[str, str]:
    pairs = [part.split("=", 1) for part in variant.split(",") if part.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"expected key=value pairs, got {variant!r}")
    return {key.strip(): value.strip() for key, value in pairs}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        path.write_text(override(path.read_text(), parse(argv[1])))
    except (ValueError, tomllib.TOMLDecodeError) as error:
        print(f"{path}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
