"""scripts/ncu_step_phases.py cuts a step at its landmarks and counts each phase's samples, on a
made-up ncu source CSV of a ten-instruction step (the real ones come from the device)."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

from tests.test_session_support import ROOT

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "stall_wait", "stall_barrier", "stall_wait (Not Issued)"]  # fmt: skip
STEP = [  # offset, source, samples, executed, wait, barrier
    (0x00, "LDC R1, c[0x0][0x28]", 5, 1, 0, 0),  # before the step's range: not counted in it
    (0x10, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR14], R17", 3, 10, 0, 0),
    (0x20, "BAR.SYNC.DEFER_BLOCKING R6, 0x100", 1, 10, 0, 1),
    (0x30, "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR16], RZ, !UPT", 7, 10, 2, 0),
    (0x40, "HGMMA.64x128x16.F32.BF16 R24, R152, gdesc[UR16].tnspB, R24", 11, 10, 0, 0),
    (0x50, "BAR.ARV R8, 0x100", 0, 10, 0, 0),
    (0x60, "WARPGROUP.DEPBAR.LE gsb0, 0x1", 13, 10, 0, 13),
    (0x70, "MUFU.EX2 R151, R151", 17, 20, 15, 0),
    (0x80, "WARPGROUP.DEPBAR.LE gsb0, 0x0", 2, 10, 0, 2),
    (0x90, "F2FP.BF16.F32.PACK_AB R1, R2, R3", 19, 10, 4, 0),
]


def test_each_phase_gets_its_instructions_samples(tmp_path: Path) -> None:
    path = tmp_path / "k_sass.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Kernel Name", "k"])
        writer.writerow(HEADER)
        base = 0x7F0000001000
        for offset, text, samples, executed, wait, barrier in STEP:
            writer.writerow([hex(base + offset), text, samples, executed, wait, barrier, 0])
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts/ncu_step_phases.py"), str(path), "10", "90"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [re.match(r"  (.+?) +(\d+) \(", line) for line in run.stdout.splitlines()[1:9]]
    samples_of = {row.group(1): int(row.group(2)) for row in rows if row}
    assert run.stdout.splitlines()[0] == "kernel 78 samples; step 73 (93.6%)"
    expected = {"before the turn": 3, "turn": 1, "S issue": 7, "P V issue": 11,
                "hand-over": 0, "wait for S": 13, "softmax before the P V wait": 17,
                "wait for P V": 2}  # fmt: skip
    assert samples_of == expected
    assert "after the P V wait" in run.stdout  # the F2FP
    softmax = run.stdout.split("after the wait for S:")[1]
    assert softmax.startswith(" 38 samples")  # 17 + 2 + 19: the wait for S itself is apart
    assert "reasons: wait 19, barrier 2" in softmax
