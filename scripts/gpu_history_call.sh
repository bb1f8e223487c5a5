#!/usr/bin/env bash
# One device call that tells apart the two explanations left for the judge's 4-5% over
# do_bench and for sm90.cu reading 1.026x over itself (kernels/flash_fwd/NOTES.md, 2026-12-07
# 15:04 entry: the work between samples, or the history of the seconds before a timed run):
#
#   OUT=$OUT scripts/gpu_history_call.sh 2>&1 | tee $OUT/log
#
# 1. sm90.cu against itself, quick and bench, with the starting kernel timed under the
#    candidate's work between samples (`1e90cdc`). Predicted: bench 1.00 +- 0.01 if that work
#    made the 1.026; 1.02-1.03 if the history did.
# 2. fa_bench in turn, plain and with the GPU idle 2 s before each shape
#    (gpu_power_suspects.sh turn). Predicted: the paused run 3-5% faster on the 2k-8k shapes
#    if the history explains the judge's offset; within 1-2% if not.
# 3. The slow held-out draws with CuPy's kernel cache counted before and after.
# Prints what it measured; decides nothing.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
date -u
SETS="quick bench" timeout 200 scripts/gpu_start_bias.sh
date -u
timeout 330 scripts/gpu_power_suspects.sh turn slow
date -u
# 4. What the real MPS daemon answers to the judge's share queries (PrivateMps.share_settings;
#    predicted: "default 100", then "default 100; server <pid> 100" once a client came, and
#    no change), so that the guard of f780864 is known to read it.
timeout 60 python3 - <<'PYTHON'
import os
import subprocess

from kernelseek_tui.evaluate.private_mps import PrivateMps

mps = PrivateMps()
environment = mps.start()
print("MPS shares, fresh:", mps.share_settings())
subprocess.run(
    ["python3", "-c", "import cupy; cupy.zeros(1); cupy.cuda.Device().synchronize()"],
    env={**os.environ, **environment},
    check=False,
    timeout=40,
)
print("after a client:", mps.share_settings(), "| changed:", mps.settings_changed())
mps.stop()
PYTHON
