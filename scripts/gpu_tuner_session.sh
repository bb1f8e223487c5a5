#!/usr/bin/env bash
# A real `tuner` session on kernels/flash_fwd, for the GPU box: a fresh git repository holding a
# copy of the task, the tuner searching the knobs with the `quick` set as its objective and a
# budget of 8 evaluations, then a summary of what happened and the evidence to bring back.
#
# Run from anywhere, with the GPU box's Python set up (e.g. `source scripts/gpu_env.sh`):
#   OUT=/some/dir scripts/gpu_tuner_session.sh
# Settings (environment): OUT (results; default ./gpu-tuner-out), BUDGET (tool calls = evaluations,
# default 8), SET (objective override, default quick; `objective`: the task's own), DEVICE (GPU
# index), NO_COMPARE=1 (skip the FA3/cuDNN peers), PY (default python3), KS_RUN_ARGS (more
# `kernelseek run` arguments: `--source sm90.cu` tunes the Hopper kernel's knobs), DEFAULTS
# ("NAME=VALUE ...": knob defaults changed in the copied task.toml, so that the tuner starts
# from a slower point and finds a new best early, after which each objective evaluation is
# timed beside it: paired timing, a session's default).
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
for assignment in ${DEFAULTS:-}; do
    "$PY" "$ROOT/scripts/set_knob_default.py" "$REPO/kernels/flash_fwd/task.toml" "$assignment"
done
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=kernelseek -c user.email=kernelseek@localhost commit -qm "flash_fwd"

echo "== kernelseek tuner session $SESSION: objective '$SET', budget $BUDGET evaluations"
echo "   repo $REPO, traces $TRACES, python $("$PY" -c 'import sys; print(sys.version.split()[0])')"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null || true
args=(run "$REPO/kernels/flash_fwd" --agent tuner --budget-calls "$BUDGET"
      --traces "$TRACES" --session-id "$SESSION" --eval-timeout 600)
# SET=objective: the task's own objective (every set it names), e.g. for a tuner pass over a
# fast kernel's knobs, where a knob that breaks a scenario must be caught.
[ "$SET" = objective ] || args+=(--set "$SET")
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
"$PY" "$ROOT/scripts/session_summary.py" "$TRACES" "$SESSION" "$REPO" "$BRANCH"
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
