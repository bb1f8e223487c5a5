#!/usr/bin/env bash
# On the GPU box (2026-12-04, evening): fa_bench with --in-turn (every entry timed by the
# judge's own interleaved method beside do_bench and FA3's graph), the judge on the bench set
# (candidate and peers now timed in turn), and the per-shape comparison of the two.
#   OUT=/some/dir scripts/gpu_in_turn.sh CANDIDATE.cu [OTHER.cu ...]
# The first source is the one the judge runs and the comparison reads.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-in-turn-out}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source scripts/gpu_env.sh || { echo "wheel install failed"; exit 1; }
first=$1
sources=()
for src in "$@"; do sources+=(--source "$src"); done
name=$(basename "$first" .cu)
date -u
timeout 330 python3 benchmarks/fa_bench.py "${sources[@]}" --in-turn --graph-peers \
  --json "$OUT/fa_bench.json" > "$OUT/fa_bench.txt" 2>&1; echo "fa_bench: exit $?"
tail -$(( $# * 2 + 1 )) "$OUT/fa_bench.txt"
date -u
timeout 200 python3 -m kernelseek_tui eval kernels/flash_fwd --source "$first" --set bench \
  --json > "$OUT/eval.json" 2> "$OUT/eval.err"; echo "eval bench: exit $?"
python3 benchmarks/judge_vs_dobench.py "$OUT/eval.json" "$OUT/fa_bench.json" \
  --candidate "$name" --against turn > "$OUT/compare.txt"; echo "compare: exit $?"
tail -12 "$OUT/compare.txt"
date -u
