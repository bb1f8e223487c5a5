#!/usr/bin/env bash
# On the GPU box: several versions of a flash_fwd kernel in one call. Each passes the smoke
# shapes first (a hang or a wrong result drops it before any timing), then all that passed are
# timed together against FA3 and cuDNN (benchmarks/fa_bench.py: do_bench, L2 flushed per call,
# interleaved shape by shape), then the judge runs its objective on JUDGE (default: the last).
#   OUT=/some/dir scripts/gpu_compare_versions.sh v1.cu v5.cu ...
# Versions come from git history, e.g. `git show aef20c5:kernels/flash_fwd/sm90.cu > v1.cu`
# (kernels/flash_fwd/NOTES.md names the commit of each version). Needs the carried wheels in
# .whl (scripts/fetch_gpu_wheels). JUDGE_SETS: `--set` names for the judge (default: the
# objective); JUDGE=none skips it. FA_BENCH_ARGS: extra fa_bench arguments (e.g. --graph-peers).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-compare-out}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source scripts/gpu_env.sh || { echo "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
# Every version built at once into the judge's cache (a failed build still gets its smoke line).
python3 scripts/prebuild.py "$@" || true
passed=()
for src in "$@"; do
  if timeout 120 python3 benchmarks/fa_smoke.py "$src" > "$OUT/smoke.tmp" 2>&1; then
    passed+=(--source "$src")
  fi
  cat "$OUT/smoke.tmp" >> "$OUT/smoke.txt"
  echo "smoke $src: $(tail -1 "$OUT/smoke.tmp")"
done
rm -f "$OUT/smoke.tmp"
[ ${#passed[@]} -gt 0 ] || { echo "no version passed the smoke shapes"; exit 1; }
# shellcheck disable=SC2086  # FA_BENCH_ARGS: extra fa_bench arguments, word-split on purpose
timeout 400 python3 benchmarks/fa_bench.py "${passed[@]}" --json "$OUT/fa_bench.json" \
  ${FA_BENCH_ARGS:-} > "$OUT/fa_bench.txt" 2>&1
tail -$(( ${#passed[@]} / 2 + 1 )) "$OUT/fa_bench.txt"
judge=${JUDGE:-${!#}}
if [ "$judge" != none ]; then
  set_args=()
  for s in ${JUDGE_SETS:-}; do set_args+=(--set "$s"); done
  timeout 300 python3 -m kernelseek_tui eval kernels/flash_fwd --source "$judge" "${set_args[@]}" \
    --json > "$OUT/eval.json" 2> "$OUT/eval.err"
  echo "judge on $judge: exit $?"
  python3 benchmarks/judge_summary.py "$OUT/eval.json"
fi
