#!/usr/bin/env bash
# On the GPU box: Nsight Compute on flash_fwd kernels, one launch each, with the counters that
# say how busy every SM is (SM active cycles avg/min/max, warps active), the tensor and
# exponential pipes, issue, and per-instruction stall sampling; then a summary per kernel
# (scripts/ncu_stalls.py: where the warps wait, by reason and by instruction).
#   OUT=/some/dir scripts/gpu_ncu.sh NAME=SOURCE@SHAPE ...
#   e.g. scripts/gpu_ncu.sh v14=kernels/flash_fwd/sm90.cu@d128,s2048,c1 fa3=fa3@d128,s2048,c1
# SOURCE "fa3" profiles FA3 itself (fa_bench with peers, FA3's kernel picked by name). Times
# under ncu are about 2x do_bench's (caches flushed, one launch alone): compare ratios.
# NCU_BUDGET_S: stop starting new profiles after this many seconds (default 500).
# NCU_SECTIONS: more sections, space-separated (e.g. "MemoryWorkloadAnalysis_Tables SchedulerStats").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-ncu-out}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source scripts/gpu_env.sh || { echo "wheel install failed"; exit 1; }
start=$(date +%s)
extra=()
for section in ${NCU_SECTIONS:-}; do extra+=(--section "$section"); done
metrics=sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,gpu__time_duration.sum
metrics+=,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size
metrics+=,sm__warps_active.avg.per_cycle_active
for job in "$@"; do
  name=${job%%=*}; rest=${job#*=}; src=${rest%@*}; shape=${rest##*@}
  left=$(( ${NCU_BUDGET_S:-500} - ($(date +%s) - start) ))
  [ $left -gt 30 ] || { echo "no time left for $name"; break; }
  if [ "$src" = fa3 ]; then
    kernel="regex:FlashAttn|device_kernel"; args=(--source kernels/flash_fwd/sm90.cu)
  else
    kernel="regex:flash_fwd_sm90"; args=(--source "$src" --no-peers)
  fi
  timeout "$left" ncu --clock-control none --kernel-name-base demangled -k "$kernel" \
    --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section SourceCounters "${extra[@]}" --metrics "$metrics" -o "$OUT/$name" \
    python3 benchmarks/fa_bench.py "${args[@]}" --only "$shape" --warmup 1 --rep 1 \
    > "$OUT/$name.log" 2>&1
  echo "ncu $name ($src, $shape): exit $? at +$(( $(date +%s) - start )) s"
  ncu --import "$OUT/$name.ncu-rep" --page details > "$OUT/$name.txt" 2>&1
  ncu --import "$OUT/$name.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/${name}_sass.csv" 2>/dev/null
  python3 scripts/ncu_stalls.py "$OUT/$name.txt" "$OUT/${name}_sass.csv" | tee "$OUT/$name.summary"
done
