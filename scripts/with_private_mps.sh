#!/usr/bin/env bash
# Run a command as a client of an MPS server of its own, then stop that server.
#
#   scripts/with_private_mps.sh python3 benchmarks/sandbox_handover.py --out "$OUT/mps"
#
# Why: a kernel judged in a process of its own (isolation = "process") and the judge are two
# processes on one GPU; without MPS each has its own context, which the GPU time-slices, and
# every hand-over between them may cost a context switch. Under MPS the clients share the
# server's context. This starts a private control daemon (its pipe and log directories under a
# fresh temporary directory, so no other user's MPS is touched), runs the command with those
# directories in its environment (the judge keeps them for the kernels' processes), and quits
# the daemon when the command ends, however it ends. The card's settings (compute mode, clocks,
# power) are not changed. MPS_CONTROL names another control program (for the tests).
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
control=${MPS_CONTROL:-nvidia-cuda-mps-control}
if ! command -v "$control" >/dev/null 2>&1; then
    echo "$0: $control not found (it comes with the NVIDIA driver)" >&2
    exit 2
fi
root=$(mktemp -d /tmp/kernelseek-mps.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY="$root/pipe"
export CUDA_MPS_LOG_DIRECTORY="$root/log"
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
stop() {
    echo quit | "$control" >/dev/null 2>&1 || true
    rm -rf "$root"
}
trap stop EXIT
"$control" -d
echo "$0: MPS control daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)" >&2
status=0
"$@" || status=$?
exit "$status"
