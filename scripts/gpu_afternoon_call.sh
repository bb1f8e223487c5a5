#!/usr/bin/env bash
# The changes of 2026-12-07 afternoon and evening not yet run on a GPU, in one device call
# ordered by what each tells (kernels/flash_fwd/NOTES.md, "For the next device calls"):
#
#   OUT=$OUT scripts/gpu_afternoon_call.sh 2>&1 | tee $OUT/log
#
# 1. scripts/gpu_first_call.sh: the quick set confined by the filter and the capability drop
#    (falls back to Landlock alone if it fails), then the bench set against fa_bench.
# 2. tests/test_perturb_gpu.py: both flip kernels bit for bit (the scalar one's text rewritten).
# 3. tests/test_kept_work_gpu.py: the keeper named; the decoy keeper no faster than honest.
# 4. gpu_power_suspects.sh flips with the vector flip kernel (KERNELSEEK_FLIP=vector).
# Each step has its own limit; prints what it measured and decides nothing.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
FA_BENCH_TIMEOUT=${FA_BENCH_TIMEOUT:-200} timeout 330 scripts/gpu_first_call.sh
source scripts/gpu_env.sh || exit 1
date -u
timeout 60 python3 -m pytest -q -m gpu tests/test_perturb_gpu.py 2>&1 | tail -4
date -u
timeout 150 python3 -m pytest -q -s -m gpu tests/test_kept_work_gpu.py > "$OUT/kept.txt" 2>&1
echo "kept-work GPU tests: exit $?"
grep -E "^(honest|keeper|decoy)|passed|failed|Error" "$OUT/kept.txt" | tail -40
KERNELSEEK_FLIP=vector timeout 200 scripts/gpu_power_suspects.sh flips
date -u
