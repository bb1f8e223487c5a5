#!/usr/bin/env bash
# The demo's real session, recorded on the GPU box: this project's own climb of the Hopper kernel
# replayed from its git history. A clone of the history (a bundle made here: the GPU box gets
# the working tree without .git), then `kernelseek run --agent replay --replay-history sm90.cu`
# on its kernels/flash_fwd: a session that starts from baseline.cu, writes each `sm90 vN:` commit
# of sm90.cu into the session's kernel and judges it on the whole objective with FA3 and cuDNN,
# oldest first, and asks each question kernels/flash_fwd/NOTES.md records as drawn where it was
# drawn. Every evaluation in it is real; it replays recorded work, it is not a model at work.
#
# Here:   git bundle create .history.bundle HEAD          (ignored by git: carry it)
# There:  source scripts/gpu_env.sh; OUT=/some/dir scripts/gpu_history_session.sh
#
# A device call may last 10 minutes and the replay takes longer, so the session is sent SIGTERM
# after STOP_AFTER_S seconds (default 450) and stops after the evaluation under way. Call the
# script again and it resumes the session it keeps under .gpu-history/ (ignored by git),
# skipping every step already taken. Each call writes $OUT: summary.txt (everything printed),
# recorded.tar.gz (the session as the demo ships it: `<id>/`, its trace directory, and
# `<id>.bundle`, its branch and notes; unpack it into kernelseek_tui/shipped/demo/) and
# state.tar.gz (.gpu-history itself). Lent machines are taken back between calls, so bring the
# state home and send it with the next call: here `tar -xzf state.tar.gz` in the repository
# root, then carry .history.bundle AND .gpu-history (a carried path absent here is removed
# there, so carry .gpu-history only once it is here). Its trace and repository hold absolute
# paths; on a machine whose checkout lies elsewhere, the old path is linked to this one.
# Settings (environment): OUT (default ./gpu-history-out), STOP_AFTER_S, BUNDLE (default
# .history.bundle), DEVICE (GPU index), PY (default python3), KS_RUN_ARGS (more `run` arguments,
# on the first call only).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
OUT=${OUT:-$PWD/gpu-history-out}
STOP_AFTER_S=${STOP_AFTER_S:-450}
BUNDLE=${BUNDLE:-$ROOT/.history.bundle}
WORK=$ROOT/.gpu-history
REPO=$WORK/repo
TRACES=$WORK/traces
mkdir -p "$OUT" "$WORK"
exec > >(tee "$OUT/summary.txt") 2>&1

# A state brought from another machine: its absolute paths lead to where that checkout was.
if [ -f "$WORK/root" ] && [ "$(cat "$WORK/root")" != "$ROOT" ]; then
  old_root=$(cat "$WORK/root")
  if [ ! -e "$old_root" ]; then
    mkdir -p "$(dirname "$old_root")" && ln -s "$ROOT" "$old_root"
    echo "== state from $old_root: linked to $ROOT"
  else
    echo "== state from $old_root, which exists here and is not this checkout: starting over"
    rm -rf "$REPO" "$TRACES" "$WORK/session-id" "$WORK/base" "$WORK/root"
  fi
fi
# The checkout the session began in: its paths stay the ones in the trace, machine after machine.
[ -f "$WORK/root" ] || echo "$ROOT" > "$WORK/root"
# One session, one kind of GPU: its speedups are compared with each other.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "${DEVICE:-0}" 2>/dev/null || true)
if [ -f "$WORK/gpu" ] && [ "$(cat "$WORK/gpu")" != "$gpu" ]; then
  echo "== this session was recorded on a $(cat "$WORK/gpu"); this machine has a ${gpu:-no GPU}: not resumed here"
  exit 4
fi
echo "$gpu" > "$WORK/gpu"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset ANTHROPIC_API_KEY

if [ ! -d "$REPO/.git" ]; then
  [ -f "$BUNDLE" ] || { echo "no history bundle at $BUNDLE (make it with: git bundle create .history.bundle HEAD)"; exit 2; }
  git -c advice.detachedHead=false clone -q "$BUNDLE" "$REPO"
  git -C "$REPO" rev-parse HEAD > "$WORK/base"
  git -C "$REPO" config user.name kernelseek
  git -C "$REPO" config user.email kernelseek@localhost
  echo "climb-$(date -u +%Y%m%d-%H%M%S)" > "$WORK/session-id"
fi
SESSION=$(cat "$WORK/session-id")
BRANCH=kernelseek/$SESSION
echo "== history $(git -C "$REPO" log -1 --format='%h %cs %s' | cut -c1-100)"
echo "== versions: $(git -C "$REPO" log --reverse --format=%s -- kernels/flash_fwd/sm90.cu \
  | grep -oE '^sm90 v[0-9]+(-v[0-9]+)?' | cut -d' ' -f2 | tr '\n' ' ')"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null || true

if [ -d "$TRACES/$SESSION" ]; then
  echo "== resuming session $SESSION"
  args=(run --resume "$SESSION" --traces "$TRACES")
else
  echo "== session $SESSION: the climb from baseline.cu, replayed"
  args=(run "$REPO/kernels/flash_fwd" --agent replay --replay-history sm90.cu
        --traces "$TRACES" --session-id "$SESSION" --eval-timeout 600)
  [ -n "${DEVICE:-}" ] && args+=(--device "$DEVICE")
  # shellcheck disable=SC2206  # KS_RUN_ARGS: more arguments, word-split on purpose
  [ -n "${KS_RUN_ARGS:-}" ] && args+=(${KS_RUN_ARGS})
fi
started=$(date +%s)
set +e
# SIGTERM asks the session to stop at its next checkpoint; KILL only if it does not.
timeout -s TERM -k 240 "$STOP_AFTER_S" "$PY" -m kernelseek_tui "${args[@]}"
rc=$?
set -e
echo "== engine exit status $rc after $(( $(date +%s) - started )) s" \
  "$([ "$rc" = 124 ] && echo '(stopped for this call: run the script again to resume)')"

echo
"$PY" "$ROOT/scripts/session_summary.py" "$TRACES" "$SESSION" "$REPO" "$(cat "$WORK/base")..$BRANCH"

# Packed as the app's recorded sessions are (browse/unpack.py's pack_session: the trace
# directory and a bundle of the branch and its notes), ready for kernelseek_tui/shipped/demo.
rm -rf "$WORK/packed"
mkdir -p "$WORK/packed"
"$PY" -c 'import sys; from pathlib import Path
from kernelseek_tui.browse.unpack import pack_session
pack_session(Path(sys.argv[1]), Path(sys.argv[2]))' "$TRACES/$SESSION" "$WORK/packed"
# What the demo's header and the report say the recording is.
"$PY" "$ROOT/scripts/label_recording.py" "$WORK/packed/$SESSION"
tar -C "$WORK/packed" -czf "$OUT/recorded.tar.gz" .
# The whole state, for the next call on whatever machine it gets (see the header).
tar -C "$ROOT" -czf "$OUT/state.tar.gz" --exclude=.gpu-history/packed .gpu-history
echo "== wrote $OUT: summary.txt state.tar.gz recorded.tar.gz ($SESSION/ and $SESSION.bundle, as the demo ships them)"
exit "$rc"
