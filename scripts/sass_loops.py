#!/usr/bin/env python3
"""What the compiler made of a kernel's loops: for each function of a cubin (or an object or
library with device code), every loop whose body holds a wgmma (HGMMA), with its length and the
instruction mix that matters for the Hopper kernel's schedule: wgmmas, multiplies, exponentials,
moves into uniform registers (R2UR) and uniform-datapath instructions, and the order of the
wgmmas against the multiplies (`M` multiply, `H` wgmma, `A` warpgroup arrive, `W` wgmma wait).

    python3 scripts/sass_loops.py kernel.cubin [--order]

Needs `cuobjdump` on PATH (CUDA toolkit, or the nvidia-cuda-cuobjdump wheel).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")
BRANCH = re.compile(r"\bBRA\s+(?:`\(\S+\)\s*)?0x([0-9a-f]+)")


def opcode(text: str) -> str:
    parts = text.split()
    word = parts[1] if parts[0].startswith("@") else parts[0]
    return word.split(".")[0]


def loops(body: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(start, end) addresses of backward branches whose span holds an HGMMA."""
    found = []
    for address, text in body:
        match = BRANCH.search(text)
        if not match:
            continue
        target = int(match.group(1), 16)
        if target < address and any(
            "HGMMA" in t for a, t in body if target <= a <= address
        ):
            found.append((target, address))
    # Out-of-line retry stubs of barrier waits branch back into a loop and look like loops
    # that enclose it; keep the innermost spans only.
    return [
        span
        for span in found
        if not any(o != span and span[0] <= o[0] and o[1] <= span[1] for o in found)
    ]


def order(texts: list[str]) -> str:
    marks = {"FMUL": "M", "HGMMA": "H", "WARPGROUP": "A"}
    out = []
    for text in texts:
        op = opcode(text)
        if op == "WARPGROUP" and "DEPBAR" in text:
            out.append("W")
        elif op in marks:
            out.append(marks[op])
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--order", action="store_true", help="print the M/H/A/W order too")
    args = parser.parse_args()
    try:
        sass = subprocess.run(
            ["cuobjdump", "--dump-sass", args.binary], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"cuobjdump failed: {error}", file=sys.stderr)
        return 1
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        name = chunk.split("\n", 1)[0].strip()
        body = [(int(a, 16), t) for a, t in INSTRUCTION.findall(chunk)]
        print(name)
        for start, end in loops(body):
            texts = [t for a, t in body if start <= a <= end]
            ops = Counter(opcode(t) for t in texts)
            uniform = sum(n for op, n in ops.items() if op.startswith("U"))
            print(
                f"  loop 0x{start:x}-0x{end:x}: {len(texts)} instructions, HGMMA {ops['HGMMA']}, "
                f"FMUL {ops['FMUL']}, MUFU {ops['MUFU']}, R2UR {ops['R2UR']}, uniform {uniform}"
            )
            if args.order:
                print(f"    {order(texts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
