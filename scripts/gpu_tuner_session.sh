#!/usr/bin/env bash
# A real `tuner` session on kernels/flash_fwd, for the GPU box: a fresh git repository holding a
# copy of the task, the tuner searching the knobs with the `quick` set as its objective and a
# budget of 8 evaluations, then a summary of what happened and the evidence to bring back.
#
# Run from anywhere, with the GPU box's Python set up (e.g. `source scripts/gpu_env.sh`):
#   OUT=/some/dir scripts/gpu_tuner_session.sh
# Settings (environment): OUT (results; default ./gpu-tuner-out), BUDGET (tool calls = evaluations,
# default 8), SET (objective override, default quick), DEVICE (GPU index), NO_COMPARE=1 (skip the
# FA3/cuDNN peers), PY (default python3), KS_RUN_ARGS (more `kernelseek run` arguments).
# Writes to $OUT (flat, 3 files): summary.txt (everything printed), session-dir.tar.gz (the trace
# directory), session.bundle (the session branch and its notes: `git clone session.bundle`).
# Needs: python3 with pyarrow, numpy, cupy (torch for the peers), git, nvcc. No textual, duckdb or
# anthropic: the engine and the tuner import none of them.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
OUT=${OUT:-$PWD/gpu-tuner-out}
BUDGET=${BUDGET:-8}
SET=${SET:-quick}
mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset ANTHROPIC_API_KEY

WORK=$(mktemp -d /tmp/kernelseek-gpu-tuner.XXXXXX)
REPO=$WORK/repo
TRACES=$WORK/traces
SESSION=gpu-tuner-$(date -u +%Y%m%d-%H%M%S)
BRANCH=kernelseek/$SESSION
mkdir -p "$REPO/kernels"
cp -r "$ROOT/kernels/flash_fwd" "$REPO/kernels/flash_fwd"
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=kernelseek -c user.email=kernelseek@localhost commit -qm "flash_fwd"

echo "== kernelseek tuner session $SESSION: objective '$SET', budget $BUDGET evaluations"
echo "   repo $REPO, traces $TRACES, python $("$PY" -c 'import sys; print(sys.version.split()[0])')"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null || true
args=(run "$REPO/kernels/flash_fwd" --agent tuner --set "$SET" --budget-calls "$BUDGET"
      --traces "$TRACES" --session-id "$SESSION" --eval-timeout 600)
[ -n "${DEVICE:-}" ] && args+=(--device "$DEVICE")
[ "${NO_COMPARE:-0}" = 1 ] && args+=(--no-compare)
# shellcheck disable=SC2206
[ -n "${KS_RUN_ARGS:-}" ] && args+=(${KS_RUN_ARGS})
started=$(date +%s)
set +e
"$PY" -m kernelseek_tui "${args[@]}"
rc=$?
set -e
echo "== engine exit status $rc after $(( $(date +%s) - started )) s"

echo
echo "== trace summary"
"$PY" - "$TRACES/$SESSION" <<'PY'
import collections
import json
import sys
from pathlib import Path

from kernelseek_tui.trace.reader import read_session, table_to_events

events = table_to_events(read_session(Path(sys.argv[1])))
seqs = [e.seq for e in events]
print(f"{len(events)} events; seq 0..{seqs[-1]}; contiguous: {seqs == list(range(len(seqs)))}")
for kind, count in sorted(collections.Counter(e.kind for e in events).items()):
    print(f"  {kind:12s} {count}")
calls = {e.event_id: e for e in events if e.kind == "tool_call"}
results = {e.tool_call_id: e for e in events if e.kind == "tool_result"}
print("evaluations: knobs -> verdict passed/total, speedup, vs fa3, seconds (tool call)")
for e in events:
    if e.kind != "eval":
        continue
    call = calls.get(e.parent_event_id)
    knobs = call.tool_input_dict().get("knobs") if call else None
    result = results.get(call.tool_call_id) if call else None
    seconds = f"{result.duration_ms / 1000:.1f}" if result and result.duration_ms else "?"
    speed = "n/a" if e.speedup is None else f"{e.speedup:.3f}x"
    fa3 = "n/a" if e.vs_fa3 is None else f"{e.vs_fa3:.3f}x"
    print(f"  [{e.seq}] {json.dumps(knobs)} -> {e.verdict} {e.scenarios_passed}/"
          f"{e.scenarios_total}, speedup {speed}, vs fa3 {fa3}, {seconds} s")
    attrs = e.attrs_dict()
    for reason in attrs.get("reasons", [])[:3]:
        print(f"        {reason}")
    peers = (attrs.get("summary") or {}).get("absent_peers") or {}
    if peers:
        print(f"        peers absent: {peers}")
for e in events:
    if e.kind == "commit":
        print(f"  commit {e.git_sha[:10]} {e.text}")
    elif e.kind == "error":
        print(f"  error [{e.seq}]: {(e.text or '').strip().splitlines()[-1][:300]}")
print("end:", events[-1].text)
PY

echo
echo "== git log $BRANCH (first parent, with trailers)"
git -C "$REPO" log --first-parent --format='%h %s%n%(trailers:only,unfold)' "$BRANCH"
echo "== notes (evaluation summaries) under refs/notes/kernelseek"
"$PY" - "$REPO" "$BRANCH" <<'PY'
import json
import subprocess
import sys

repo, branch = sys.argv[1], sys.argv[2]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)


for sha in git("rev-list", "--first-parent", branch).stdout.split():
    note = git("notes", "--ref=refs/notes/kernelseek", "show", sha)
    if note.returncode != 0:
        continue
    data = json.loads(note.stdout)
    s = data["summary"]
    print(f"{sha[:10]} {data['verdict']} {s['passed']}/{s['total']} speedup "
          f"{s['geomean_speedup']} peers {s.get('vs_peers')} baseline {s.get('baseline_timing')} "
          f"device {data.get('device', {}).get('name')}")
PY
echo "== knobs.json at the tip of $BRANCH"
git -C "$REPO" show "$BRANCH:kernels/flash_fwd/knobs.json" 2>/dev/null || echo "(none: no improvement was committed)"
echo "== kernelseek ls"
"$PY" -m kernelseek_tui ls --traces "$TRACES"

refs=("$BRANCH")
git -C "$REPO" show-ref --verify --quiet refs/notes/kernelseek && refs+=(refs/notes/kernelseek)
git -C "$REPO" bundle create -q "$OUT/session.bundle" "${refs[@]}" 2>/dev/null \
  || git -C "$REPO" bundle create "$OUT/session.bundle" "${refs[@]}"
tar -C "$TRACES" -czf "$OUT/session-dir.tar.gz" "$SESSION"
echo "== wrote $OUT: summary.txt session-dir.tar.gz session.bundle"
exit "$rc"
