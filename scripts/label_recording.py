#!/usr/bin/env python3
"""Write what a packed recording of the climb is into its session.json (`recorded`), which the
demo's header shows and the report's caveat builds on (the report adds the replay's own caveat
beside it). Called by scripts/gpu_history_session.sh when it packs the session.

    python3 scripts/label_recording.py SESSION_JSON "v1 v2-v4 ... v34" "NVIDIA H100 80GB HBM3" DAY

A session judged by a stand-in evaluator (its config names one) is labelled `stand-in`, never
`measured`; an empty GPU name says no GPU was named.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def label(meta: dict, versions: list[str], gpu: str, day: str) -> str:
    stand_in = (meta.get("config") or {}).get("evaluator")
    if stand_in:
        how = f"by a stand-in evaluator ({stand_in}), not measured"
    elif gpu:
        how = f"on the full objective with FA3 and cuDNN, on one {gpu}"
    else:
        how = "with no GPU named"
    span = f"{versions[0]} to {versions[-1]}" if versions else "none found"
    return (
        f"{'stand-in' if stand_in else 'measured'}: a replay of this project's own climb of "
        f"kernels/flash_fwd/sm90.cu from baseline.cu ({len(versions)} committed versions, {span}, "
        f"each judged again {how}), {day}, by scripts/gpu_history_session.sh; not an agent at work"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, versions, gpu, day = Path(argv[0]), argv[1].split(), argv[2].strip(), argv[3]
    meta = json.loads(path.read_text())
    meta["recorded"] = label(meta, versions, gpu, day)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"labelled {path.parent.name}: {meta['recorded']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
