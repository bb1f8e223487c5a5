#!/usr/bin/env python3
"""Build flash_fwd candidates in parallel into the judge's build cache, so that the GPU steps
that follow (fa_smoke, fa_bench, the judge) find every build there instead of compiling one
version at a time (about 10-20 s each for sm90.cu).

    python3 scripts/prebuild.py v28.cu v30c.cu ...     # from the repository root

Prints one line per source (ok, or the build's reasons) and exits 1 if any failed.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelseek_tui.evaluate.build import build  # noqa: E402
from kernelseek_tui.task import load_task  # noqa: E402


def main(sources: list[str]) -> int:
    task = load_task(ROOT / "kernels" / "flash_fwd")
    began = time.perf_counter()

    def one(path: str) -> tuple[str, bool, list[str]]:
        source = Path(path).read_text()
        built = build(source, rule=task.dependency_rule, extra_flags=task.nvcc_flags)
        return path, built.ok, list(built.reasons)

    failed = 0
    with ThreadPoolExecutor(max_workers=8) as pool:
        for path, ok, reasons in pool.map(one, sources):
            print(f"{path}: {'ok' if ok else 'FAILED ' + '; '.join(reasons)}", flush=True)
            failed += not ok
    print(f"prebuild: {len(sources)} sources in {time.perf_counter() - began:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
