#!/usr/bin/env bash
# The first device call after the judge changed in ways never run on a GPU (2026-12-07
# afternoon: the seccomp filter on the kernels' processes, the copy of the outputs alone, the
# kept-work samples; run at 12:48. Since 13:30: every capability dropped and a longer list of
# refused calls, the kept-work floor of 48 samples, the figure held to the every-input samples:
# not yet run), then the bench set against fa_bench (the judge of today, FIRST_CALL_HANDOVERS
# for more):
#
#   OUT=$OUT scripts/gpu_first_call.sh
#
# First a quick evaluation of sm90.cu, isolated: if it does not pass, the rest runs with
# KERNELSEEK_CONFINEMENT=landlock (Landlock without the seccomp filter), so that one call still
# says whether the filter is what broke it. Prints what it measured; decides nothing else.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
date -u
timeout 150 python3 -m kernelseek_tui eval kernels/flash_fwd --source kernels/flash_fwd/sm90.cu \
    --set quick --no-compare --json > "$OUT/quick.json" 2> "$OUT/quick.err"
echo "quick, isolated, confined as by default: exit $?"
python3 benchmarks/judge_summary.py "$OUT/quick.json"
python3 -c "import json, sys; print('confinement:', json.load(open(sys.argv[1])).get('confinement'))" \
    "$OUT/quick.json" 2> /dev/null
if ! python3 -c "import json, sys; sys.exit(json.load(open(sys.argv[1]))['verdict'] != 'pass')" \
    "$OUT/quick.json" 2> /dev/null; then
    tail -5 "$OUT/quick.err"
    echo "the quick set did not pass confined by default: the rest with Landlock alone"
    export KERNELSEEK_CONFINEMENT=landlock
fi
# FIRST_CALL_HANDOVERS: the judges of the bench set (gpu_isolation_check.sh's HANDOVERS);
# "fenced fenced:set" adds the copy of the whole set after every sample (this morning's judge).
judges=${FIRST_CALL_HANDOVERS:-fenced}
HANDOVERS=$judges FA_BENCH_TIMEOUT=${FA_BENCH_TIMEOUT:-230} scripts/gpu_isolation_check.sh bench
for judged in $judges; do
    echo "judge $judged:"
    python3 benchmarks/judge_summary.py "$OUT/isolated-$judged.json"
done
