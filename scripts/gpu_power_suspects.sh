#!/usr/bin/env bash
# The two suspects behind the judge's 4-6% over do_bench on the H100 (kernels/flash_fwd/NOTES.md,
# "For the next device calls (written 2026-12-07, 10:30)"), in one device call:
#
#   OUT=$OUT scripts/gpu_power_suspects.sh [flips] [turn] [slow]
#
# flips: fa_bench --pre-call-flips on sm90.cu alone: do_bench's loop written out (@loop) against
#        the same loop with the judge's work between calls (@judgeqc: the copy of the whole set
#        aside and the flip of q; @judgeqo: the copy of the outputs alone and the flip;
#        @judgeq, @jflush: parts of it).
# turn:  fa_bench --in-turn twice, plain and with the GPU idle 2 s before each shape: what the
#        load history does to each entry's figure.
#        TURN_ONLY=d256 keeps fa_bench's shapes with those tags (fa_bench --only).
# slow:  the two slow held-out draws of 2026-12-07 09:32, each twice, through `eval`.
# Each part writes its JSON and full output under $OUT and prints the ratios
# (benchmarks/fa_bench_ratios.py); nothing is decided here.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
source_file=kernels/flash_fwd/sm90.cu
stem=$(basename "$source_file" .cu)
parts=${*:-flips turn slow}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader
for part in $parts; do
    date -u
    case "$part" in
    flips)
        timeout 260 python3 benchmarks/fa_bench.py --source "$source_file" --no-peers \
            --pre-call-flips --json "$OUT/flips.json" > "$OUT/flips.txt" 2>&1
        echo "flips: exit $?"
        grep -E "^# pre-call|^geomean" "$OUT/flips.txt"
        python3 benchmarks/fa_bench_ratios.py "$OUT/flips.json:$stem@judgeqc" \
            "$OUT/flips.json:$stem@loop" \
            --pair "$OUT/flips.json:$stem@judgeqo" "$OUT/flips.json:$stem@loop" \
            --pair "$OUT/flips.json:$stem@judgeq" "$OUT/flips.json:$stem@loop" \
            --pair "$OUT/flips.json:$stem@jflush" "$OUT/flips.json:$stem@loop" \
            --pair "$OUT/flips.json:$stem@loop" "$OUT/flips.json:$stem"
        ;;
    turn)
        for pause in 0 2; do
            timeout 200 python3 benchmarks/fa_bench.py --source "$source_file" --in-turn \
                ${TURN_ONLY:+--only "$TURN_ONLY"} --pause-s "$pause" --json "$OUT/turn-pause$pause.json" \
                > "$OUT/turn-pause$pause.txt" 2>&1
            echo "in turn, pause $pause s: exit $?"
            grep -E "^geomean|in turn: geomean" "$OUT/turn-pause$pause.txt"
        done
        for column in "$stem@turn" fa3@turn cudnn@turn "$stem" fa3 cudnn; do
            python3 benchmarks/fa_bench_ratios.py "$OUT/turn-pause2.json:$column" \
                "$OUT/turn-pause0.json:$column"
        done
        ;;
    slow)
        # CuPy's on-disk kernel cache before and after: how many kernels the first use of
        # these shapes compiled (a suspect for the seconds, 2026-12-07: one per layout class).
        cache=${CUPY_CACHE_DIR:-$HOME/.cupy/kernel_cache}
        before=$(find "$cache" -type f 2> /dev/null | wc -l)
        timeout 150 python3 -m kernelseek_tui eval kernels/flash_fwd --source "$source_file" \
            --scenarios benchmarks/slow_heldout.toml --no-compare --json \
            > "$OUT/slow.json" 2> "$OUT/slow.err"
        echo "slow held-out draws: exit $?"
        echo "CuPy kernel cache ($cache): $before files before, $(find "$cache" -type f \
            2> /dev/null | wc -l) after"
        python3 -c "
import json, sys
for s in json.load(open(sys.argv[1]))['scenarios']:
    print(s['name'], s.get('status') or s.get('passed'), s.get('phase_s'),
          'compiled', s.get('compiles'))
" "$OUT/slow.json"
        ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
    esac
done
date -u
