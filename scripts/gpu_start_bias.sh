#!/usr/bin/env bash
# The speedup the judge gives a kernel over itself: the task copied with sm90.cu as its starting
# kernel, judged against the same code (one comment added, so the starting kernel is timed, not
# taken as the candidate). Any speedup away from 1.0 is the method's own bias: the starting kernel
# timed alone (`start_beside_peers = false`, the judge before 2026-12-06) or in turn with the
# peers (the default since), on the quick and bench sets. Run on the GPU box:
#
#   OUT=$OUT scripts/gpu_start_bias.sh            # ~3 min on a warm H100
#   SETS=quick OUT=$OUT scripts/gpu_start_bias.sh # the quick set only (~80 s)
#
# Writes $OUT/start-bias-{alone,beside}-{quick,bench}.json (kernelseek eval --json) and prints
# per set the geomean speedup, the worst shape, and the per-shape speedups of the bench set.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
WORK=$(mktemp -d /tmp/kernelseek-start-bias.XXXXXX)
for mode in alone beside; do
    cp -r "$ROOT/kernels/flash_fwd" "$WORK/$mode"
    sed -i 's/^source = "baseline.cu"/source = "sm90.cu"/' "$WORK/$mode/task.toml"
    if [ "$mode" = alone ]; then
        sed -i 's/^\[timing\]$/[timing]\nstart_beside_peers = false/' "$WORK/$mode/task.toml"
    fi
    { cat "$WORK/$mode/sm90.cu"; echo "// the same kernel, judged against itself"; } \
        > "$WORK/$mode/sm90_same.cu"
done
grep -q '^source = "sm90.cu"' "$WORK/beside/task.toml" || { echo "task copy failed"; exit 1; }
grep -q '^start_beside_peers = false' "$WORK/alone/task.toml" || { echo "alone copy failed"; exit 1; }
for set_name in ${SETS:-quick bench}; do
    for mode in alone beside; do
        began=$(date +%s)
        timeout 240 "$PY" -m kernelseek_tui eval "$WORK/$mode" --source "$WORK/$mode/sm90_same.cu" \
            --set "$set_name" --json > "$OUT/start-bias-$mode-$set_name.json" 2> "$OUT/start-bias-$mode-$set_name.err"
        echo "$set_name, starting kernel $mode: exit $? after $(( $(date +%s) - began )) s"
        # an empty error file says nothing: not kept
        [ -s "$OUT/start-bias-$mode-$set_name.err" ] || rm -f "$OUT/start-bias-$mode-$set_name.err"
    done
done
"$PY" - "$OUT" <<'PYTHON'
import json, math, sys
from pathlib import Path
out = Path(sys.argv[1])
for set_name in ("quick", "bench"):
    for mode in ("alone", "beside"):
        path = out / f"start-bias-{mode}-{set_name}.json"
        if not path.exists():
            continue
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            print(f"{set_name} {mode}: no result ({error})")
            continue
        timed = [s for s in result["scenarios"] if s.get("speedup")]
        if not timed:
            print(f"{set_name} {mode}: {result['verdict']}, no speedups")
            continue
        geo = math.exp(sum(math.log(s["speedup"]) for s in timed) / len(timed))
        worst = max(timed, key=lambda s: abs(math.log(s["speedup"])))
        within = sum(abs(s["speedup"] - 1) <= 0.03 for s in timed)
        print(
            f"{set_name} {mode}: {result['verdict']}, geomean speedup over itself {geo:.3f}, "
            f"{within}/{len(timed)} within 3%, worst {worst['name']} {worst['speedup']:.3f}"
        )
        print("   " + " ".join(f"{s['speedup']:.3f}" for s in timed))
PYTHON
