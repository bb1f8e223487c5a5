#!/usr/bin/env bash
# The speedup the judge gives a kernel over itself: the task copied with sm90.cu as its starting
# kernel, judged against the same code (one comment added, so the starting kernel is timed, not
# taken as the candidate). Any speedup away from 1.0 is the method's own bias (or the hand-overs'
# uncertainty, on the few-microsecond scenarios). Run on the GPU box:
#
#   OUT=$OUT scripts/gpu_start_bias.sh            # ~2 min on a warm H100
#   SETS=quick OUT=$OUT scripts/gpu_start_bias.sh # the quick set only
#   SETS=bench TAG=alone EVAL_ARGS=--no-compare OUT=$OUT scripts/gpu_start_bias.sh
#       # more arguments for `eval` (here: no peers timed in turn), results named with TAG
#
# Writes $OUT/start-bias-{quick,bench}.json (kernelseek eval --json) and prints per set the
# geomean speedup, how many scenarios are within 3%, the worst, and every scenario's speedup.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
WORK=$(mktemp -d /tmp/kernelseek-start-bias.XXXXXX)
cp -r "$ROOT/kernels/flash_fwd" "$WORK/task"
sed -i 's/^source = "baseline.cu"/source = "sm90.cu"/' "$WORK/task/task.toml"
grep -q '^source = "sm90.cu"' "$WORK/task/task.toml" || { echo "task copy failed"; exit 1; }
{ cat "$WORK/task/sm90.cu"; echo "// the same kernel, judged against itself"; } \
    > "$WORK/task/sm90_same.cu"
for set_name in ${SETS:-quick bench}; do
    began=$(date +%s)
    timeout 240 "$PY" -m kernelseek_tui eval "$WORK/task" --source "$WORK/task/sm90_same.cu" \
        --set "$set_name" ${EVAL_ARGS:-} --json > "$OUT/start-bias-$set_name${TAG:+-$TAG}.json" \
        2> "$OUT/start-bias-$set_name${TAG:+-$TAG}.err"
    echo "$set_name${TAG:+ ($TAG: ${EVAL_ARGS:-})}: exit $? after $(( $(date +%s) - began )) s"
    # an empty error file says nothing: not kept
    [ -s "$OUT/start-bias-$set_name${TAG:+-$TAG}.err" ] || rm -f "$OUT/start-bias-$set_name${TAG:+-$TAG}.err"
done
"$PY" - "$OUT" "${TAG:-}" ${SETS:-quick bench} <<'PYTHON'
import json, math, sys
from pathlib import Path
out, tag = Path(sys.argv[1]), sys.argv[2]
for set_name in sys.argv[3:]:
    try:
        result = json.loads((out / f"start-bias-{set_name}{'-' + tag if tag else ''}.json").read_text())
    except (OSError, ValueError) as error:
        print(f"{set_name}: no result ({error})")
        continue
    timed = [s for s in result["scenarios"] if s.get("speedup")]
    if not timed:
        print(f"{set_name}: {result['verdict']}, no speedups")
        continue
    geo = math.exp(sum(math.log(s["speedup"]) for s in timed) / len(timed))
    worst = max(timed, key=lambda s: abs(math.log(s["speedup"])))
    within = sum(abs(s["speedup"] - 1) <= 0.03 for s in timed)
    print(
        f"{set_name}: {result['verdict']}, geomean speedup over itself {geo:.3f} (noise "
        f"{result['summary'].get('noise') or 0:.3f}), {within}/{len(timed)} within 3%, worst "
        f"{worst['name']} {worst['speedup']:.3f}; hand-overs {result.get('handovers_us')}"
    )
    print("   " + " ".join(f"{s['speedup']:.3f}" for s in timed))
    summary = result["summary"]
    if summary.get("paired_speedup"):
        print(f"   paired (timed in turn, same run): {summary['paired_speedup']:.3f} "
              f"+- {summary.get('paired_spread') or 0:.3f}")
PYTHON
