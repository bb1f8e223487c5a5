#!/usr/bin/env bash
# On the GPU box: build a flash_fwd candidate, read its SASS, judge it with `kernelseek eval`,
# time it against FA3 and cuDNN with benchmarks/fa_bench.py. One call does all of it.
#   OUT=/some/dir scripts/gpu_kernel_check.sh [SOURCE] [EVAL_SETS]
# SOURCE defaults to kernels/flash_fwd/sm90.cu; EVAL_SETS is a space-separated list of
# `--set` names, or "objective" for the task's whole objective (the default), or "none".
# BENCH=0 skips fa_bench; BENCH_ARGS adds arguments to it (e.g. "--only d128").
# Needs the carried wheels in .whl (scripts/fetch_gpu_wheels). Writes logs and JSON to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
SOURCE=${1:-kernels/flash_fwd/sm90.cu}
SETS=${2:-objective}
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source scripts/gpu_env.sh || { echo "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 - "$SOURCE" <<'PY' 2>&1 | tee "$OUT/build.txt"
import subprocess, sys
from pathlib import Path
from kernelseek_tui.evaluate.build import build
from kernelseek_tui.task import load_task
task = load_task(Path("kernels/flash_fwd"))
built = build(Path(sys.argv[1]).read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
print("build:", built.ok, built.reasons, built.library)
if built.ok:
    sass = subprocess.run(["cuobjdump", "--dump-sass", str(built.library)], capture_output=True, text=True).stdout
    counts = {k: sass.count(k) for k in ("HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "MUFU.EX2", "LDL", "STL", "BAR.SYNC")}
    print("SASS counts:", counts)
PY
if ! timeout 120 python3 benchmarks/fa_smoke.py "$SOURCE" 2>&1 | tee "$OUT/smoke.txt"; then
  echo "smoke test failed or hung: stopping before the judge"
  exit 1
fi
if [ "$SETS" != none ]; then
  set_args=()
  [ "$SETS" != objective ] && for s in $SETS; do set_args+=(--set "$s"); done
  started=$(date +%s)
  timeout 420 python3 -m kernelseek_tui eval kernels/flash_fwd --source "$SOURCE" \
    "${set_args[@]}" --json > "$OUT/eval.json" 2> "$OUT/eval.err"
  echo "eval exit $? after $(( $(date +%s) - started )) s"
  python3 benchmarks/judge_summary.py "$OUT/eval.json"
  tail -5 "$OUT/eval.err"
fi
if [ "${BENCH:-1}" = 1 ]; then
  # shellcheck disable=SC2086
  timeout 300 python3 benchmarks/fa_bench.py --source "$SOURCE" --json "$OUT/fa_bench.json" ${BENCH_ARGS:-} \
    2>&1 | tee "$OUT/fa_bench.txt"
fi
