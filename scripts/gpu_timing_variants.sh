#!/usr/bin/env bash
# Which [timing] setting brings the judge's own figures to do_bench's, on the GPU box:
#
#   OUT=$OUT scripts/gpu_timing_variants.sh "default" "warmup_ms=300" "flush_mb=256" ...
#
# Each argument is a variant: "default", or comma-separated key=value pairs of flash_fwd's
# [timing] table. For each, a copy of kernels/flash_fwd with those values replaced (or added)
# judges sm90.cu on the bench set in a process of its own (NO_COMPARE=1: the candidate alone,
# the default; 0: with the peers), writing $OUT/variant-N.json. Then fa_bench times the same
# source with do_bench and in turn, in the same call, and benchmarks/judge_vs_dobench.py
# compares every variant with it. Prints what it measured; decides nothing.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
[ $# -gt 0 ] || { echo "usage: OUT=DIR $0 VARIANT..." >&2; exit 2; }
source scripts/gpu_env.sh || exit 1
source_file=kernels/flash_fwd/sm90.cu
compare=--no-compare
[ "${NO_COMPARE:-1}" = 0 ] && compare=
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
n=0
for variant in "$@"; do
    n=$((n + 1))
    task=$(mktemp -d)/flash_fwd
    cp -r kernels/flash_fwd "$task"
    if [ "$variant" != default ]; then
        python3 benchmarks/timing_override.py "$task/task.toml" "$variant" || exit 1
    fi
    date -u
    # shellcheck disable=SC2086
    timeout 200 python3 -m kernelseek_tui eval "$task" --source "$source_file" --set bench \
        --isolation process --json $compare > "$OUT/variant-$n.json" 2> "$OUT/variant-$n.err"
    echo "variant $n ($variant): exit $?"
    # The reasons in the output itself: a call returns only a few files, so a failure must
    # say why here (one scenario of a variant failed on 2026-12-07 and its file was left out).
    python3 benchmarks/judge_summary.py "$OUT/variant-$n.json" \
        || tail -5 "$OUT/variant-$n.err"
done
timeout "${FA_BENCH_TIMEOUT:-300}" python3 benchmarks/fa_bench.py --source "$source_file" \
    --in-turn --json "$OUT/fa_bench.json" > "$OUT/fa_bench.txt" 2>&1
echo "fa_bench --in-turn: exit $?"
n=0
for variant in "$@"; do
    n=$((n + 1))
    echo "variant $n ($variant) against fa_bench:"
    python3 benchmarks/judge_vs_dobench.py "$OUT/variant-$n.json" "$OUT/fa_bench.json" \
        --candidate sm90 --against turn | grep -E "within|geomean"
done
