#!/usr/bin/env bash
# What isolation must show before it becomes the judge's default (docs/RELIABILITY.md, the end
# of "Kernels in a process of their own"), run on the GPU box in two device calls:
#
#   OUT=$OUT scripts/gpu_isolation_check.sh loop    # ~4 min: the quick loop and the objective
#   OUT=$OUT scripts/gpu_isolation_check.sh bench   # ~6 min: 36 bench shapes against fa_bench
#
# loop: benchmarks/eval_bench.py with every kernel in a process of its own: three quick runs, each
# after the first finding its worker started ahead (target: 5 s warm), then the full objective
# twice, fresh and then warm (target: 45 s). bench: the judge's bench set isolated, fa_bench's do_bench and in-turn figures
# in the same call, and benchmarks/judge_vs_dobench.py against the in-turn ones (target: every
# shape within 3%). Each prints what it measured; nothing is decided here.
# CLOCKS=1 samples the GPU's clocks, power and temperature every 20 ms (nvidia-smi) through the
# whole call and marks each phase, then prints them per phase (benchmarks/clock_phases.py).
# FA_BENCH_ARGS adds fa_bench options to the bench part (e.g. "--aa-peers --dobench-turn 4"),
# FA_BENCH_TIMEOUT its limit in seconds (default 300). HANDOVERS names the hand-overs the bench
# part judges with, one isolated run each against the one fa_bench run (default "fenced", the
# judge's default; "fenced counters" to compare the two; "fenced fenced:set" to compare the
# judge's copy of the outputs after each sample with its copy of the whole set).
set -uo pipefail
part=${1:-}
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
source_file=kernels/flash_fwd/sm90.cu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
# mark <phase> start|end: what benchmarks/clock_phases.py splits the samples by.
mark() { if [ "${CLOCKS:-0}" = 1 ]; then echo "$1 $2 $(date +%s.%N)" >> "$OUT/phases.txt"; fi; }
if [ "${CLOCKS:-0}" = 1 ]; then
    : > "$OUT/phases.txt"
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
        --format=csv,noheader,nounits -lms 20 > "$OUT/clocks.csv" &
    sampler=$!
fi
case "$part" in
loop)
    mark quick start
    timeout 150 python3 benchmarks/eval_bench.py --isolation process --warm --pause 10 \
        --quick-runs 3 --skip-full --source "$source_file" --out "$OUT/quick"
    echo "quick loop: exit $?"
    mark quick end
    date -u
    # Two full objectives: the first with a fresh worker (and the starting kernel's bench times
    # not yet cached on this GPU), the second after a pause, finding the worker the first left.
    mark full start
    timeout 200 python3 benchmarks/eval_bench.py --isolation process --quick-runs 0 \
        --warm --pause 10 --full-runs 2 --source "$source_file" --out "$OUT/full" \
        > "$OUT/full.txt" 2>&1
    echo "full objective: exit $?"
    mark full end
    head -1 "$OUT/full.txt"
    grep -A1 "^full evaluation" "$OUT/full.txt"
    ;;
bench)
    # Each judge run: a hand-over, with ":set" for the judge's copy of the whole set after
    # every sample (KERNELSEEK_COPY_ASIDE=set) rather than its outputs alone.
    handovers=${HANDOVERS:-fenced}
    for handover in $handovers; do
        copy=outputs
        case "$handover" in *:set) copy=set ;; esac
        mark "judge-$handover" start
        KERNELSEEK_HANDOVER=${handover%:set} KERNELSEEK_COPY_ASIDE=$copy timeout 150 \
            python3 -m kernelseek_tui eval kernels/flash_fwd \
            --source "$source_file" --set bench --isolation process --json \
            > "$OUT/isolated-$handover.json" 2> "$OUT/isolated-$handover.err"
        echo "eval --set bench --isolation process, KERNELSEEK_HANDOVER=${handover%:set}," \
            "KERNELSEEK_COPY_ASIDE=$copy: exit $?"
        mark "judge-$handover" end
        date -u
    done
    mark fa_bench start
    # shellcheck disable=SC2086
    timeout "${FA_BENCH_TIMEOUT:-300}" python3 benchmarks/fa_bench.py --source "$source_file" \
        --in-turn ${FA_BENCH_ARGS:-} --json "$OUT/fa_bench.json" > "$OUT/fa_bench.txt" 2>&1
    echo "fa_bench --in-turn: exit $?"
    mark fa_bench end
    grep -E "geomean|A/A|in turn" "$OUT/fa_bench.txt" | tail -12
    for handover in $handovers; do
        echo "judged with KERNELSEEK_HANDOVER=$handover against fa_bench in turn:"
        python3 benchmarks/judge_vs_dobench.py "$OUT/isolated-$handover.json" \
            "$OUT/fa_bench.json" --candidate sm90 --against turn | tail -12
    done
    ;;
*)
    echo "usage: OUT=DIR $0 loop|bench" >&2
    exit 2
    ;;
esac
if [ "${CLOCKS:-0}" = 1 ]; then
    kill "$sampler" 2> /dev/null
    wait "$sampler" 2> /dev/null
    python3 benchmarks/clock_phases.py "$OUT/clocks.csv" "$OUT/phases.txt"
fi
date -u
