#!/usr/bin/env bash
# Parallel evaluation on a two-GPU box, in one call: the pool benchmark, then the same `tuner`
# session (kernels/flash_fwd, objective --set quick, the same budget) on one GPU and on two,
# then a parallel bisect over the two-GPU session's branch. Prints the wall time per evaluated
# point of each session, the GPU of every evaluation, and the bisect's rounds.
#
# Run from anywhere, with the GPU box's Python set up (e.g. `source scripts/gpu_env.sh`):
#   OUT=/some/dir scripts/gpu_parallel_session.sh
# Settings (environment): OUT (results; default ./gpu-parallel-out), BUDGET (evaluations per
# session, default 7: the defaults, then three batches of two), POINTS (pool benchmark points,
# default 4), SET (default quick), NO_COMPARE (default 1: skip the FA3/cuDNN peers, which only
# add the same time to both sessions), PY (default python3), SKIP_POOL_BENCH=1, KS_EXTRA_ARGS
# (more arguments for both `kernelseek run` and `kernelseek bisect`, e.g. a stand-in evaluator
# for a dry run of this script on a machine without GPUs).
# Writes to $OUT (flat): summary.txt (everything printed), pool_bench.txt, run-gpus1.log,
# run-gpus2.log, bisect.log, bisect.json, session-gpus1.tar.gz, session-gpus2.tar.gz.
# Needs: 2 visible GPUs, python3 with pyarrow, numpy, cupy, git, nvcc.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
OUT=${OUT:-$PWD/gpu-parallel-out}
BUDGET=${BUDGET:-7}
POINTS=${POINTS:-4}
SET=${SET:-quick}
NO_COMPARE=${NO_COMPARE:-1}
mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset ANTHROPIC_API_KEY

WORK=$(mktemp -d /tmp/kernelseek-gpu-parallel.XXXXXX)
REPO=$WORK/repo
TRACES=$WORK/traces
STAMP=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$REPO/kernels"
cp -r "$ROOT/kernels/flash_fwd" "$REPO/kernels/flash_fwd"
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=kernelseek -c user.email=kernelseek@localhost commit -qm "flash_fwd"
extra=()
[ "$NO_COMPARE" = 1 ] && extra=(--no-compare)
# shellcheck disable=SC2206
[ -n "${KS_EXTRA_ARGS:-}" ] && extra+=(${KS_EXTRA_ARGS})
phase() { echo; echo "== [$(date -u +%H:%M:%S)] $*"; }

phase "GPUs"
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader 2>/dev/null || true
"$PY" -c 'from kernelseek_tui.evaluate.pool import visible_devices as v; print("visible:", v())'

# Every knob point built once, and the starting kernel timed once on each GPU, before anything
# is measured; the pool benchmark and each session then get their own copy of that cache.
# Neither session profits from the other's work, and neither pays for builds or for timing the
# starting kernel: what is compared is the evaluations themselves.
phase "warm-up (untimed): every knob point built, the starting kernel timed on each GPU"
"$PY" - "$REPO/kernels/flash_fwd" "$WORK/warm" "$SET" <<'PY'
import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

os.environ["KERNELSEEK_CACHE"] = sys.argv[2]
from kernelseek_tui.evaluate.build import build
from kernelseek_tui.evaluate.pool import EvalPool, visible_devices
from kernelseek_tui.task import load_task

task = load_task(sys.argv[1])
names = [k.name for k in task.knobs]
points = [None] + [dict(zip(names, v)) for v in itertools.product(*(k.values for k in task.knobs))]
text = task.source.read_text()


def one(point):
    return point, build(text, rule=task.dependency_rule, extra_flags=task.nvcc_flags,
                        defines=point, timeout_s=task.build_timeout_s)


with ThreadPoolExecutor(max_workers=min(9, os.cpu_count() or 1)) as pool:
    for point, built in pool.map(one, points):
        print(f"  build {point or 'starting kernel'}: {'ok' if built.ok else built.reasons[:1]} "
              f"({built.seconds:.1f} s)")
# The defaults with explicit knobs are not "the starting kernel itself", so each GPU times the
# starting kernel and caches its times under that GPU's UUID.
devices = visible_devices()
job = {"sets": [sys.argv[3]], "knobs": task.default_knobs(), "compare": False}
with EvalPool(devices) as pool:
    for result in pool.map([(task, task.source, job) for _ in devices]):
        print(f"  GPU {result.device.get('index')} ({result.device.get('uuid')}): "
              f"{result.verdict} in {result.duration_s} s; {result.summary.baseline_timing}"
              + (f"; {result.reasons[0]}" if result.reasons else ""))
PY

if [ "${SKIP_POOL_BENCH:-0}" != 1 ]; then
  phase "pool benchmark: $POINTS knob points on one GPU, then on every GPU"
  mkdir -p "$WORK/cache-pool"
  cp -r "$WORK/warm/." "$WORK/cache-pool/"
  KERNELSEEK_CACHE=$WORK/cache-pool "$PY" "$ROOT/benchmarks/pool_bench.py" \
    --task "$REPO/kernels/flash_fwd" --set "$SET" --points "$POINTS" | tee "$OUT/pool_bench.txt"
fi

session() {  # session GPUS: one tuner session; its command's wall time (ms) in $WORK/wall-ms-GPUS
  local gpus=$1 id=par-gpus$1-$STAMP
  mkdir -p "$WORK/cache-gpus$gpus"
  cp -r "$WORK/warm/." "$WORK/cache-gpus$gpus/"
  phase "tuner session on $gpus GPU(s): $id, budget $BUDGET evaluations"
  local began ended rc=0
  began=$(date +%s%N)
  KERNELSEEK_CACHE=$WORK/cache-gpus$gpus "$PY" -m kernelseek_tui run "$REPO/kernels/flash_fwd" \
    --agent tuner --set "$SET" --budget-calls "$BUDGET" --gpus "$gpus" \
    ${extra[@]+"${extra[@]}"} --traces "$TRACES" --session-id "$id" --eval-timeout 600 \
    --quiet > "$OUT/run-gpus$gpus.log" 2>&1 || rc=$?
  ended=$(date +%s%N)
  cat "$OUT/run-gpus$gpus.log"
  echo "$(( (ended - began) / 1000000 ))" > "$WORK/wall-ms-$gpus"
  echo "exit status $rc; command wall time $(( (ended - began) / 1000000 )) ms"
  tar -C "$TRACES" -czf "$OUT/session-gpus$gpus.tar.gz" "$id"
}
session 1
session 2

phase "per session: wall time per evaluated point, and the GPU of every evaluation"
"$PY" - "$TRACES" "$STAMP" "$WORK" <<'PY'
import sys
from pathlib import Path

from kernelseek_tui.trace.reader import read_session, table_to_events

traces, stamp, work = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
per_point = {}
for gpus in (1, 2):
    events = table_to_events(read_session(traces / f"par-gpus{gpus}-{stamp}"))
    calls = {e.event_id: e for e in events if e.kind == "tool_call"}
    evals = [e for e in events if e.kind == "eval"]
    spans = [e for e in events if e.kind in ("tool_call", "tool_result")]
    span_s = (spans[-1].ts - spans[0].ts) / 1e6 if spans else float("nan")
    command_s = float((work / f"wall-ms-{gpus}").read_text()) / 1000
    per_point[gpus] = span_s / max(1, len(evals))
    print(f"--gpus {gpus}: {len(evals)} evaluations; first call to last result {span_s:.1f} s, "
          f"{per_point[gpus]:.1f} s per point; whole command {command_s:.1f} s, "
          f"{command_s / max(1, len(evals)):.1f} s per point")
    print("  seq  batch  knobs                           verdict  speedup  GPU index  uuid  "
          "name  eval s  baseline")
    for e in evals:
        a = e.attrs_dict()
        d = a.get("device") or {}
        batch = a.get("batch")
        where = f"{batch[:6]}" if batch else "-"
        knobs = calls[e.parent_event_id].tool_input_dict().get("knobs")
        speed = "n/a" if e.speedup is None else f"{e.speedup:.3f}x"
        secs = "?" if e.duration_ms is None else f"{e.duration_ms / 1000:.1f}"
        print(f"  {e.seq:>3}  {where:6} {str(knobs):32} {e.verdict:7}  {speed:7}  "
              f"{d.get('index', a.get('slot_device'))!s:>9}  {d.get('uuid')}  {d.get('name')}  "
              f"{secs}  {(a.get('summary') or {}).get('baseline_timing')}")
        for reason in (a.get("reasons") or [])[:2]:
            print(f"         {reason}")
    by_gpu = {}
    for e in evals:
        a = e.attrs_dict()
        index = (a.get("device") or {}).get("index", a.get("slot_device"))
        by_gpu.setdefault(index, []).append(e.speedup)
    for index, speeds in sorted(by_gpu.items(), key=lambda kv: str(kv[0])):
        shown = ", ".join("n/a" if s is None else f"{s:.3f}" for s in speeds)
        print(f"  GPU {index}: {len(speeds)} evaluations, speedups (each vs the starting kernel "
              f"timed on GPU {index}): {shown}")
    for e in events:
        if e.kind == "commit":
            print(f"  commit {e.git_sha[:10]} {e.text}")
        elif e.kind == "error":
            print(f"  error [{e.seq}]: {(e.text or '').strip().splitlines()[-1][:300]}")
if per_point.get(1):
    print(f"wall time per point, 2 GPUs against 1: {per_point[2] / per_point[1]:.2f}")
PY

ID2=par-gpus2-$STAMP
phase "parallel bisect over $ID2: from its start to its tip, two candidates a round"
git -C "$REPO" log --first-parent --format='%h %s' "kernelseek/$ID2"
echo "(the branch holds only improvements, so the tip is the only bad end: this shows the"
echo " evaluations running two at a time; a round tests two only when the branch has at"
echo " least 3 candidates, the tip being the bad end)"
set +e
# The session's own cache: its builds and its baseline times on each GPU.
KERNELSEEK_CACHE=$WORK/cache-gpus2 "$PY" -m kernelseek_tui bisect "$ID2" --traces "$TRACES" \
  --gpus 2 ${extra[@]+"${extra[@]}"} --json > "$OUT/bisect.json" 2> "$OUT/bisect.log"
rc=$?
set -e
cat "$OUT/bisect.log" "$OUT/bisect.json"
echo "bisect exit status $rc"

phase "wrote $OUT"
ls -1 "$OUT"
