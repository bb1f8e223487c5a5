#!/usr/bin/env python3
"""Write what a packed recording of the climb is into its session.json (`recorded`), which the
demo's header shows and the report's caveat builds on (the report adds the replay's own caveat
beside it). Called by scripts/gpu_history_session.sh when it packs the session.

    python3 scripts/label_recording.py SESSION_DIR

Everything it says is read from the session itself: the versions from its replayed evaluations,
the GPU from what the judge recorded of each, the day from session.json. A session judged by a
stand-in evaluator (its config names one) is labelled `stand-in`, never `measured`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.schema import parse_attrs


def replayed(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The versions the session judged, in order, and the GPUs its evaluations ran on."""
    versions: list[str] = []
    gpus: list[str] = []
    for row in rows:
        attrs = parse_attrs(row.get("attrs"))
        if row["kind"] == "tool_call" and row.get("tool_name") == "evaluate":
            if attrs.get("replayed_version"):
                versions.append(str(attrs["replayed_version"]))
        elif row["kind"] == "eval":
            name = (attrs.get("device") or {}).get("name")
            if name and name not in gpus:
                gpus.append(str(name))
    return versions, gpus


def label(meta: dict[str, Any], versions: list[str], gpus: list[str]) -> str:
    stand_in = (meta.get("config") or {}).get("evaluator")
    if stand_in:
        how = f"by a stand-in evaluator ({stand_in}), not measured"
    elif gpus:
        cards = f"one {gpus[0]}" if len(gpus) == 1 else " and ".join(gpus)
        how = f"on the full objective with FA3 and cuDNN, on {cards}"
    else:
        how = "with no GPU named"
    span = f"{versions[0]} to {versions[-1]}" if versions else "none found"
    day = str(meta.get("created") or "")[:10] or "an unknown day"
    return (
        f"{'stand-in' if stand_in else 'measured'}: a replay of this project's own climb of "
        f"kernels/flash_fwd/sm90.cu from baseline.cu ({len(versions)} committed versions, {span}, "
        f"each judged again {how}), {day}, by scripts/gpu_history_session.sh; not an agent at work"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    session_dir = Path(argv[0])
    meta_path = session_dir / "session.json"
    meta = json.loads(meta_path.read_text())
    versions, gpus = replayed(read_session(session_dir).to_pylist())
    meta["recorded"] = label(meta, versions, gpus)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"labelled {session_dir.name}: {meta['recorded']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
